//! Writes that belong together are one transaction, on both backends: a refresh whose new
//! token cannot be stored leaves the presented one usable; two refreshes with one token give
//! one new pair; a password change whose tokens cannot be stored keeps the old password.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::test;
use crudforge::users::{self, UserBlueprint};
use crudforge::{with_conn, Api, Database};
use crudforge_tests::{backend_tests, Backend, TestDb};
use diesel_async::SimpleAsyncConnection;
use serde_json::{json, Value};

const COST: u32 = 4;

async fn setup(t: &TestDb) -> (Api, Database) {
    let cfg = t.config().with(|c| c.auth.bcrypt_cost = COST);
    let db = t.open(&cfg).await;
    users::create_user(&db, "alice@example.com", "alice-pass", true, COST)
        .await
        .unwrap();
    let api = Api::new(cfg, db.clone())
        .unwrap()
        .mount(UserBlueprint::default())
        .unwrap();
    (api, db)
}

/// Makes every insert into `tokens` fail (`on`) or work again.
async fn break_token_inserts(db: &Database, on: bool) {
    let sql = match (db.backend(), on) {
        (Backend::Sqlite, true) => {
            "CREATE TRIGGER fail_tokens BEFORE INSERT ON tokens BEGIN SELECT RAISE(ABORT, 'refused'); END;"
        }
        (Backend::Sqlite, false) => "DROP TRIGGER fail_tokens;",
        (Backend::Postgres, true) => {
            "CREATE FUNCTION fail_tokens() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$ LANGUAGE plpgsql;
             CREATE TRIGGER fail_tokens BEFORE INSERT ON tokens FOR EACH ROW EXECUTE FUNCTION fail_tokens();"
        }
        (Backend::Postgres, false) => {
            "DROP TRIGGER fail_tokens ON tokens; DROP FUNCTION fail_tokens();"
        }
    };
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(sql).await).unwrap();
}

async fn send<S, B>(app: &S, req: test::TestRequest) -> (StatusCode, Value)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let resp = test::call_service(app, req.to_request()).await;
    let status = resp.status();
    let bytes = test::read_body(resp).await;
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn login(password: &str) -> test::TestRequest {
    test::TestRequest::post()
        .uri("/api/users/login/")
        .set_json(json!({"email": "alice@example.com", "password": password}))
}

fn refresh(token: &Value) -> test::TestRequest {
    test::TestRequest::post()
        .uri("/api/users/refresh/")
        .set_json(json!({ "refresh_token": token }))
}

backend_tests! {
    async fn a_failed_rotation_keeps_the_refresh_token(t) {
        let (api, db) = setup(&t).await;
        let app = test::init_service(api.app()).await;
        let (s, tokens) = send(&app, login("alice-pass")).await;
        assert_eq!(s, 200);
        break_token_inserts(&db, true).await;
        let (s, _) = send(&app, refresh(&tokens["refresh_token"])).await;
        assert!(s.is_server_error(), "storing the new token failed: {s}");
        break_token_inserts(&db, false).await;
        let (s, b) = send(&app, refresh(&tokens["refresh_token"])).await;
        assert_eq!(s, 200, "the revocation was rolled back with the failed issue: {b}");
        let (s, _) = send(&app, refresh(&tokens["refresh_token"])).await;
        assert_eq!(s, 401, "and a successful rotation used it up");
    }

    async fn two_refreshes_with_one_token_give_one_pair(t) {
        let (api, _db) = setup(&t).await;
        let app = test::init_service(api.app()).await;
        let (_, tokens) = send(&app, login("alice-pass")).await;
        let (a, b) = futures_util::future::join(
            send(&app, refresh(&tokens["refresh_token"])),
            send(&app, refresh(&tokens["refresh_token"])),
        )
        .await;
        let mut codes = [a.0.as_u16(), b.0.as_u16()];
        codes.sort_unstable();
        assert_eq!(codes, [200, 401], "{a:?} {b:?}");
    }

    async fn a_failed_password_change_changes_nothing(t) {
        let (api, db) = setup(&t).await;
        let app = test::init_service(api.app()).await;
        let (_, tokens) = send(&app, login("alice-pass")).await;
        let access = tokens["access_token"].as_str().unwrap().to_owned();
        break_token_inserts(&db, true).await;
        let (s, _) = send(&app, test::TestRequest::post().uri("/api/users/me/password/")
            .insert_header(("authorization", format!("Bearer {access}")))
            .set_json(json!({"current_password": "alice-pass", "new_password": "other-pass-1"}))).await;
        assert!(s.is_server_error(), "{s}");
        break_token_inserts(&db, false).await;
        let (s, _) = send(&app, login("alice-pass")).await;
        assert_eq!(s, 200, "the old password still works");
        let (s, _) = send(&app, refresh(&tokens["refresh_token"])).await;
        assert_eq!(s, 200, "and the old session was not ended");
    }
}

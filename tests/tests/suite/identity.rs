//! E-mail identity and the password policy on both backends: addresses normalized once in
//! Rust (storage, uniqueness, lookup, the migration step that reports collisions), the minimum
//! password length wherever a password is set, and the rehash at the current cost on login.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::test;
use chrono::{DateTime, Utc};
use crudforge::sql_types::Portable;
use crudforge::users::schema::users as u;
use crudforge::users::{self, Role, UserBlueprint, UserModel};
use crudforge::{with_conn, Api, Config, Database, Resource};
use crudforge_tests::{backend_tests, Backend};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::{json, Value};
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    #[sql_name = "users"]
    members (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        email -> Text,
        password -> Nullable<Text>,
        is_enabled -> Bool,
    }
}

/// An application's own user model with open registration.
#[derive(Debug, Queryable, Selectable, Resource)]
#[diesel(table_name = members)]
#[resource(rules = crudforge::users::UserRules)]
pub struct Member {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(email)]
    pub email: String,
    #[resource(password)]
    pub password: Option<String>,
    #[resource(default = true)]
    pub is_enabled: bool,
}

impl UserModel for Member {
    const PUBLIC_REGISTRATION: bool = true;
}

const COST: u32 = 4;

fn mount_api(cfg: Config, db: &Database) -> Api {
    Api::new(cfg, db.clone())
        .unwrap()
        .mount(UserBlueprint::default())
        .unwrap()
        .mount(UserBlueprint::<Member>::new("/api/members/").name("members"))
        .unwrap()
}

async fn send<S, B>(app: &S, req: test::TestRequest) -> (StatusCode, Value)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let resp = test::call_service(app, req.to_request()).await;
    let status = resp.status();
    let bytes = test::read_body(resp).await;
    if bytes.is_empty() {
        return (status, Value::Null);
    }
    (status, serde_json::from_slice(&bytes).unwrap())
}

fn login(email: &str, password: &str) -> test::TestRequest {
    test::TestRequest::post()
        .uri("/api/users/login/")
        .set_json(json!({"email": email, "password": password}))
}

fn as_user(req: test::TestRequest, api: &Api, id: Uuid) -> test::TestRequest {
    let token = api.state().tokens.access(id).unwrap();
    req.insert_header(("authorization", format!("Bearer {token}")))
}

/// The subject of an access token, through `me/`.
async fn me<S, B>(app: &S, tokens: &Value) -> Uuid
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let access = tokens["access_token"].as_str().unwrap();
    let (status, me) = send(
        app,
        test::TestRequest::get()
            .uri("/api/users/me/")
            .insert_header(("authorization", format!("Bearer {access}"))),
    )
    .await;
    assert_eq!(status, 200, "{me}");
    me["id"].as_str().unwrap().parse().unwrap()
}

async fn stored(db: &Database, id: Uuid) -> (String, Option<String>) {
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result::<(String, Option<String>)>(
            u::table
                .filter(u::id.eq(Portable(id)))
                .select((u::email, u::password)),
            c,
        )
        .await
    })
    .unwrap()
}

/// A user row written as an older version (or another program) did: the address as given.
async fn insert_raw(db: &Database, email: &str, password: &str, age_secs: i64) -> Uuid {
    let id = Uuid::new_v4();
    let hash = crudforge::auth::hash_password(password.to_owned(), COST)
        .await
        .unwrap();
    let at = Utc::now() - chrono::Duration::seconds(age_secs);
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::insert_into(u::table).values((
                u::id.eq(Portable(id)),
                u::created_at.eq(Portable(at)),
                u::updated_at.eq(Portable(at)),
                u::email.eq(email.to_owned()),
                u::password.eq(Some(hash.clone())),
                u::is_enabled.eq(true),
            )),
            c,
        )
        .await
    })
    .unwrap();
    id
}

backend_tests! {
    async fn an_address_in_any_case_or_composition_is_one_account(t) {
        let cfg = t.config().with(|c| c.auth.bcrypt_cost = COST);
        let db = t.open(&cfg).await;
        let admin = users::create_user(&db, "Admin@Example.com", "admin-pass", true, COST).await.unwrap();
        users::grant_role(&db, admin, Role::Admin.as_str(), None).await.unwrap();
        assert_eq!(stored(&db, admin).await.0, "admin@example.com", "create_user stores it normalized");
        let api = mount_api(cfg, &db);
        let app = test::init_service(api.app()).await;

        // Created through the generated create of the user model: stored normalized.
        let (status, jorg) = send(&app, as_user(test::TestRequest::post().uri("/api/users/").set_json(json!({"email": "JÖRG@example.com", "password": "jörg-password"})), &api, admin)).await;
        assert_eq!(status, 201, "{jorg}");
        assert_eq!(jorg["email"], "jörg@example.com");
        let jorg: Uuid = jorg["id"].as_str().unwrap().parse().unwrap();
        // Every spelling logs in to it: lowercase, as created, decomposed Ö in other cases.
        for email in ["jörg@example.com", "JÖRG@example.com", "Jo\u{308}rg@EXAMPLE.com"] {
            let (status, tokens) = send(&app, login(email, "jörg-password")).await;
            assert_eq!(status, 200, "{email}: {tokens}");
            assert_eq!(me(&app, &tokens).await, jorg);
        }
        // A second account under any spelling of it is a conflict, whichever path creates it.
        for email in ["jörg@example.com", "JO\u{308}RG@example.com"] {
            let (status, v) = send(&app, as_user(test::TestRequest::post().uri("/api/users/").set_json(json!({"email": email, "password": "other-password"})), &api, admin)).await;
            assert_eq!(status, 409, "{email}: {v}");
            let (status, v) = send(&app, test::TestRequest::post().uri("/api/members/").set_json(json!({"email": email, "password": "other-password"}))).await;
            assert_eq!(status, 409, "{email} through registration: {v}");
            let e = users::create_user(&db, email, "other-password", true, COST).await.unwrap_err();
            assert_eq!(e.problem().status, 409, "{email} through create_user");
        }
        // An application's user model registers normalized too; its PATCH normalizes.
        let (status, m) = send(&app, test::TestRequest::post().uri("/api/members/").set_json(json!({"email": "MÄRTA@Example.org", "password": "märta-password"}))).await;
        assert_eq!(status, 201, "{m}");
        assert_eq!(m["email"], "märta@example.org");
        let (status, v) = send(&app, as_user(test::TestRequest::patch().uri(&format!("/api/users/{jorg}")).set_json(json!({"email": "ÜBER@Example.COM"})), &api, admin)).await;
        assert_eq!((status.as_u16(), v["email"].as_str()), (200, Some("über@example.com")), "{v}");
        assert_eq!(stored(&db, jorg).await.0, "über@example.com");
        assert_eq!(send(&app, login("Über@example.com", "jörg-password")).await.0, 200);
        assert_eq!(send(&app, login("jörg@example.com", "jörg-password")).await.0, 401);
        // A PATCH onto another account's address, in another case, is a conflict.
        let (status, v) = send(&app, as_user(test::TestRequest::patch().uri(&format!("/api/users/{jorg}")).set_json(json!({"email": "MÄRTA@example.org"})), &api, admin)).await;
        assert_eq!(status, 409, "{v}");
        // Normalizing does not make a malformed address acceptable.
        let (status, v) = send(&app, as_user(test::TestRequest::post().uri("/api/users/").set_json(json!({"email": " SPACE@example.com", "password": "space-password"})), &api, admin)).await;
        assert_eq!((status.as_u16(), v["field"].as_str()), (422, Some("email")), "{v}");
    }

    async fn stored_addresses_are_normalized_and_collisions_reported(t) {
        let cfg = t.config().with(|c| c.auth.bcrypt_cost = COST);
        let db = t.open(&cfg).await;
        // Rows from before the normalization. `JÖRG` (decomposed Ö) and `jörg` are one address
        // once normalized; `lower()` keeps them apart on both backends, so both could exist.
        let older = insert_raw(&db, "JO\u{308}RG@example.com", "older-password", 300).await;
        let newer = insert_raw(&db, "jörg@example.com", "newer-password", 200).await;
        let asa = insert_raw(&db, "ÅSA@Example.com", "åsa-password", 100).await;
        let plain = insert_raw(&db, "Plain@Example.com", "plain-password", 50).await;
        let done = insert_raw(&db, "done@example.com", "done-password", 10).await;

        // The migration's Rust step runs when the migration is applied: undo it and apply it
        // again, as on a database upgraded from the previous version.
        let down = match db.backend() {
            Backend::Sqlite => include_str!("../../../crates/crudforge/migrations/sqlite/20261125000200_crudforge_email_identity/down.sql"),
            Backend::Postgres => include_str!("../../../crates/crudforge/migrations/postgres/20261125000200_crudforge_email_identity/down.sql"),
        };
        let mut conn = db.get().await.unwrap();
        with_conn!(conn, |c| c.batch_execute(down).await).unwrap();
        with_conn!(conn, |c| c.batch_execute("DELETE FROM __diesel_schema_migrations WHERE version = '20261125000200'").await).unwrap();
        drop(conn);
        let applied = db.run_migrations(None).await.unwrap();
        assert_eq!(applied, ["20261125000200"]);

        assert_eq!(stored(&db, asa).await.0, "åsa@example.com");
        assert_eq!(stored(&db, plain).await.0, "plain@example.com");
        assert_eq!(stored(&db, done).await.0, "done@example.com");
        // The colliding pair is left as it was, not merged.
        assert_eq!(stored(&db, older).await.0, "JO\u{308}RG@example.com");
        assert_eq!(stored(&db, newer).await.0, "jörg@example.com");

        // The step again reports the collision (oldest first) and rewrites nothing else.
        let report = users::normalize_stored_emails(&db).await.unwrap();
        assert_eq!(report.normalized, 0);
        assert_eq!(report.collisions, vec![vec![older, newer]]);

        let api = mount_api(cfg, &db);
        let app = test::init_service(api.app()).await;
        let (status, tokens) = send(&app, login("ÅSA@example.com", "åsa-password")).await;
        assert_eq!(status, 200, "{tokens}");
        assert_eq!(me(&app, &tokens).await, asa);
        // The address reaches the row already normalized, and only it.
        let (status, tokens) = send(&app, login("JÖRG@example.com", "newer-password")).await;
        assert_eq!(status, 200, "{tokens}");
        assert_eq!(me(&app, &tokens).await, newer);
        assert_eq!(send(&app, login("JÖRG@example.com", "older-password")).await.0, 401);

        // Once an administrator resolves it, the next run normalizes what is left.
        let mut conn = db.get().await.unwrap();
        with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::execute(
                diesel::update(u::table.filter(u::id.eq(Portable(older)))).set(u::email.eq("Jörg.Older@example.com")),
                c,
            )
            .await
        })
        .unwrap();
        drop(conn);
        let report = users::normalize_stored_emails(&db).await.unwrap();
        assert_eq!((report.normalized, report.collisions.len()), (1, 0));
        assert_eq!(stored(&db, older).await.0, "jörg.older@example.com");
    }

    async fn short_passwords_are_refused_wherever_a_password_is_set(t) {
        let cfg = t.config().with(|c| c.auth.bcrypt_cost = COST);
        let db = t.open(&cfg).await;
        let admin = users::create_user(&db, "admin@example.com", "admin-pass", true, COST).await.unwrap();
        users::grant_role(&db, admin, Role::Admin.as_str(), None).await.unwrap();
        let alice = users::create_user(&db, "alice@example.com", "alice-pass", true, COST).await.unwrap();
        let api = mount_api(cfg.clone(), &db);
        let app = test::init_service(api.app()).await;

        // User creation: the generated create, registration, and the library.
        let (status, v) = send(&app, as_user(test::TestRequest::post().uri("/api/users/").set_json(json!({"email": "x@example.com", "password": "x"})), &api, admin)).await;
        assert_eq!((status.as_u16(), v["field"].as_str()), (422, Some("password")), "{v}");
        assert!(v["detail"].as_str().unwrap().contains("at least 8 characters"), "{v}");
        let (status, v) = send(&app, test::TestRequest::post().uri("/api/members/").set_json(json!({"email": "x@example.com", "password": "seven77"}))).await;
        assert_eq!((status.as_u16(), v["field"].as_str()), (422, Some("password")), "{v}");
        let e = users::create_user(&db, "x@example.com", "x", true, cfg.password_policy()).await.unwrap_err();
        assert_eq!(e.problem().status, 422);
        assert!(users::find_by_email(&db, "x@example.com").await.unwrap().is_none(), "nothing was created");
        // Eight characters count, not bytes: eight emoji are 32 bytes, and enough.
        let (status, v) = send(&app, test::TestRequest::post().uri("/api/members/").set_json(json!({"email": "emoji@example.com", "password": "😀".repeat(8)}))).await;
        assert_eq!(status, 201, "{v}");

        // An administrator's PATCH, the library's set_password.
        let alice_uri = format!("/api/users/{alice}");
        let (status, v) = send(&app, as_user(test::TestRequest::patch().uri(&alice_uri).set_json(json!({"password": "x"})), &api, admin)).await;
        assert_eq!((status.as_u16(), v["field"].as_str()), (422, Some("password")), "{v}");
        assert_eq!(users::set_password(&db, alice, "x", cfg.password_policy()).await.unwrap_err().problem().status, 422);

        // The user's own password change: refused, and nothing changes (the session goes on).
        let (status, tokens) = send(&app, login("alice@example.com", "alice-pass")).await;
        assert_eq!(status, 200);
        let (status, v) = send(&app, as_user(test::TestRequest::post().uri("/api/users/me/password/").set_json(json!({"current_password": "alice-pass", "new_password": "x"})), &api, alice)).await;
        assert_eq!((status.as_u16(), v["field"].as_str()), (422, Some("new_password")), "{v}");
        assert_eq!(me(&app, &tokens).await, alice, "the session goes on");
        assert_eq!(send(&app, login("alice@example.com", "alice-pass")).await.0, 200, "the password is unchanged");

        // PASSWORD_MIN_LENGTH raises the bar.
        let strict = cfg.with(|c| c.auth.password_min_length = 12);
        let api = mount_api(strict, &db);
        let app = test::init_service(api.app()).await;
        let (status, v) = send(&app, test::TestRequest::post().uri("/api/members/").set_json(json!({"email": "s@example.com", "password": "elevenchars"}))).await;
        assert_eq!((status.as_u16(), v["field"].as_str()), (422, Some("password")), "{v}");
        let (status, v) = send(&app, test::TestRequest::post().uri("/api/members/").set_json(json!({"email": "s@example.com", "password": "twelve chars"}))).await;
        assert_eq!(status, 201, "{v}");
    }

    async fn login_rehashes_at_the_current_cost_and_keeps_sessions(t) {
        let db = t.open(&t.config()).await;
        let ada = users::create_user(&db, "ada@example.com", "ada-password", true, 4).await.unwrap();
        assert!(stored(&db, ada).await.1.unwrap().starts_with("$2b$04$"));
        // BCRYPT_COST was raised to 5; the user has a session from before.
        let cfg = t.config().with(|c| c.auth.bcrypt_cost = 5);
        let api = mount_api(cfg, &db);
        let app = test::init_service(api.app()).await;
        let before = users::issue_tokens(api.state(), ada).await.unwrap();
        let refresh = |token: &str| test::TestRequest::post().uri("/api/users/refresh/").set_json(json!({"refresh_token": token}));

        let (status, tokens) = send(&app, login("ada@example.com", "ada-password")).await;
        assert_eq!(status, 200, "{tokens}");
        let hash = stored(&db, ada).await.1.unwrap();
        assert!(hash.starts_with("$2b$05$"), "rehashed at the current cost: {hash}");
        // The existing session continues: its access and refresh tokens still work.
        assert_eq!(me(&app, &serde_json::to_value(&before).unwrap()).await, ada);
        let (status, v) = send(&app, refresh(&before.refresh_token)).await;
        assert_eq!(status, 200, "the refresh token from before the rehash: {v}");
        // The same password still logs in, and a login at the current cost writes nothing.
        let (status, again) = send(&app, login("ada@example.com", "ada-password")).await;
        assert_eq!(status, 200);
        assert_eq!(stored(&db, ada).await.1.unwrap(), hash);
        // A real password change still ends every session.
        users::set_password(&db, ada, "ada-password-2", 5).await.unwrap();
        let (status, _) = send(&app, refresh(again["refresh_token"].as_str().unwrap())).await;
        assert_eq!(status, 401, "a password change ends the sessions");
        assert_eq!(send(&app, login("ada@example.com", "ada-password")).await.0, 401);
    }
}

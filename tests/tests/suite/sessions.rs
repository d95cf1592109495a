//! Sessions under races and misuse, on both backends: a refresh racing a password change or a
//! logout everywhere, the reuse of a rotated refresh token (its family ends), tokens of
//! other kinds checked against the user's credential version (`users::claims_current_in`),
//! and an export in progress cut short when its user is disabled or its roles change.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::test;
use crudforge::auth::TokenKind;
use crudforge::db::TxMode;
use crudforge::users::{self, Token, UserBlueprint};
use crudforge::{Api, Database, Resource};
use crudforge_tests::{backend_tests, TestDb};
use serde_json::{json, Value};
use std::cell::Cell;
use uuid::Uuid;

const COST: u32 = 4;
const EMAIL: &str = "victim@example.com";
/// Trials of each race.
const TRIALS: usize = 50;
/// The most refreshes the attacker makes in one trial (it stops when the victim is done).
const ATTACKER_ROUNDS: usize = 40;

struct World {
    api: Api,
    db: Database,
    user: Uuid,
}

async fn world(t: &TestDb) -> World {
    let cfg = t.config().with(|c| {
        c.auth.bcrypt_cost = COST;
        // The trials refuse many refresh tokens on purpose; throttling is tested elsewhere.
        c.auth.login_max_failures_per_account_and_address = 0;
        c.auth.login_max_failures_per_account = 0;
        c.auth.login_max_failures_per_address = 0;
    });
    let db = t.open(&cfg).await;
    let user = users::create_user(&db, EMAIL, &password(0), true, COST)
        .await
        .unwrap();
    let api = Api::new(cfg, db.clone())
        .unwrap()
        .mount(UserBlueprint::default())
        .unwrap()
        .mount(Token::blueprint("/api/tokens/"))
        .unwrap();
    World { api, db, user }
}

/// An export read a chunk at a time, as a slow client reads it.
struct Download {
    body: actix_web::body::BoxBody,
    /// The NDJSON lines received.
    lines: usize,
}

impl Download {
    /// Starts `uri`'s export as `token`'s caller, expecting 200.
    async fn start<S, B>(app: &S, uri: &str, token: &str) -> Download
    where
        S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
        B: MessageBody + 'static,
    {
        let req = test::TestRequest::get()
            .uri(uri)
            .insert_header(("authorization", format!("Bearer {token}")));
        let resp = test::call_service(app, req.to_request()).await;
        assert_eq!(resp.status(), StatusCode::OK);
        Download {
            body: resp.map_into_boxed_body().into_body(),
            lines: 0,
        }
    }

    /// The next chunk: `Some(true)` when one came, `Some(false)` when the transfer was cut
    /// short by an error, `None` at its end.
    async fn next(&mut self) -> Option<bool> {
        let chunk =
            std::future::poll_fn(|cx| std::pin::Pin::new(&mut self.body).poll_next(cx)).await?;
        Some(match chunk {
            Ok(bytes) => {
                self.lines += bytes.iter().filter(|b| **b == b'\n').count();
                true
            }
            Err(_) => false,
        })
    }

    /// Reads on to the end: whether the transfer completed (rather than being cut short).
    async fn finish(&mut self) -> bool {
        while let Some(ok) = self.next().await {
            if !ok {
                return false;
            }
        }
        true
    }
}

/// The victim's password in trial `n`.
fn password(n: usize) -> String {
    format!("victim-password-{n}")
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
    let v = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&bytes)));
    (status, v)
}

fn login(password: &str) -> test::TestRequest {
    test::TestRequest::post()
        .uri("/api/users/login/")
        .set_json(json!({"email": EMAIL, "password": password}))
}

fn refresh(token: &str) -> test::TestRequest {
    test::TestRequest::post()
        .uri("/api/users/refresh/")
        .set_json(json!({"refresh_token": token}))
}

fn me(access: &str) -> test::TestRequest {
    test::TestRequest::get()
        .uri("/api/users/me/")
        .insert_header(("authorization", format!("Bearer {access}")))
}

fn pair(v: &Value) -> (String, String) {
    (
        v["access_token"].as_str().unwrap().to_owned(),
        v["refresh_token"].as_str().unwrap().to_owned(),
    )
}

/// What the victim does while the attacker refreshes.
#[derive(Debug, Clone, Copy)]
enum Revocation {
    /// `POST me/password/`.
    PasswordChange,
    /// `POST logout/` with `all: true`.
    LogoutEverywhere,
}

/// Runs [`TRIALS`] trials: the victim logs in, an attacker holding a copy of its refresh token
/// refreshes in a loop (always with the newest token it got) while the victim ends its
/// sessions. Returns how many trials left the attacker with a working refresh or access token
/// once both were done.
async fn surviving_sessions(w: &World, revocation: Revocation) -> usize {
    let app = test::init_service(w.api.app()).await;
    let mut survived = 0;
    for trial in 0..TRIALS {
        let current = match revocation {
            Revocation::PasswordChange => password(trial),
            Revocation::LogoutEverywhere => password(0),
        };
        let (status, v) = send(&app, login(&current)).await;
        assert_eq!(status, 200, "{v}");
        let (victim_access, stolen) = pair(&v);
        // The victim acts after the attacker's first few refreshes (varied by trial), so that
        // its call overlaps the loop at different points.
        let head_start = trial % 4;
        let rounds = Cell::new(0usize);
        let victim_done = Cell::new(false);
        let attacker_done = Cell::new(false);
        let attacker = async {
            let (mut access, mut token) = (String::new(), stolen.clone());
            for _ in 0..ATTACKER_ROUNDS {
                if victim_done.get() {
                    break;
                }
                let (status, v) = send(&app, refresh(&token)).await;
                if status != 200 {
                    assert_eq!(status, 401, "{v}");
                    break;
                }
                (access, token) = pair(&v);
                rounds.set(rounds.get() + 1);
            }
            attacker_done.set(true);
            (access, token)
        };
        let victim = async {
            while rounds.get() < head_start && !attacker_done.get() {
                tokio::task::yield_now().await;
            }
            let req = match revocation {
                Revocation::PasswordChange => test::TestRequest::post()
                    .uri("/api/users/me/password/")
                    .set_json(
                        json!({"current_password": current, "new_password": password(trial + 1)}),
                    ),
                Revocation::LogoutEverywhere => test::TestRequest::post()
                    .uri("/api/users/logout/")
                    .set_json(json!({"all": true})),
            };
            let req = req.insert_header(("authorization", format!("Bearer {victim_access}")));
            let (status, v) = send(&app, req).await;
            victim_done.set(true);
            assert!(
                status.is_success(),
                "the victim's call failed: {status} {v}"
            );
        };
        let ((access, token), _) = futures_util::future::join(attacker, victim).await;
        // The attacker got at least `head_start` refreshes in, so it holds an access token.
        assert!(!access.is_empty() || head_start == 0);
        let refresh_works = send(&app, refresh(&token)).await.0 == 200;
        let access_works = !access.is_empty() && send(&app, me(&access)).await.0 == 200;
        if refresh_works || access_works {
            survived += 1;
        }
    }
    survived
}

backend_tests! {
    async fn a_refresh_loop_does_not_outlive_a_password_change(t) {
        let w = world(&t).await;
        let survived = surviving_sessions(&w, Revocation::PasswordChange).await;
        assert_eq!(survived, 0, "{survived} of {TRIALS} attacker sessions survived the password change");
    }

    async fn a_refresh_loop_does_not_outlive_a_logout_everywhere(t) {
        let w = world(&t).await;
        let survived = surviving_sessions(&w, Revocation::LogoutEverywhere).await;
        assert_eq!(survived, 0, "{survived} of {TRIALS} attacker sessions survived the logout everywhere");
    }

    async fn reusing_a_rotated_refresh_token_ends_its_family(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let (_, v) = send(&app, login(&password(0))).await;
        let (_, a) = pair(&v);
        // Another session of the same user: another family, untouched below.
        let (_, v) = send(&app, login(&password(0))).await;
        let (other_access, other) = pair(&v);
        let (status, v) = send(&app, refresh(&a)).await;
        assert_eq!(status, 200, "{v}");
        let (b_access, b) = pair(&v);
        let (status, v) = send(&app, refresh(&b)).await;
        assert_eq!(status, 200, "{v}");
        let (c_access, c) = pair(&v);
        // A, rotated twice over, is presented again: 401, and the newest token of its family
        // (C) is revoked with it.
        let (status, v) = send(&app, refresh(&a)).await;
        assert_eq!(status, 401, "{v}");
        assert_eq!(v["type"], "/errors/unauthorized_error");
        let (status, v) = send(&app, refresh(&c)).await;
        assert_eq!(status, 401, "the family ended: {v}");
        assert_eq!(send(&app, refresh(&b)).await.0, 401);
        // Access tokens are not revoked with the family: they live until they expire (900 s).
        assert_eq!(send(&app, me(&b_access)).await.0, 200);
        assert_eq!(send(&app, me(&c_access)).await.0, 200);
        // The other session goes on.
        let (status, v) = send(&app, refresh(&other)).await;
        assert_eq!(status, 200, "{v}");
        // The Token model still lists the records: the family's three revoked, the other
        // session's first one revoked by its rotation and its newest one usable.
        let (status, list) = send(&app, me(&other_access).uri("/api/tokens/")).await;
        assert_eq!(status, 200, "{list}");
        let records = list["data"].as_array().unwrap();
        assert_eq!(records.len(), 5, "{list}");
        assert!(records.iter().all(|r| r["kind"] == "refresh"), "{list}");
        let usable = records.iter().filter(|r| r["revoked"] == false).count();
        assert_eq!(usable, 1, "{list}");
    }

    async fn a_double_submitted_refresh_ends_the_session(t) {
        // The legitimate race (docs/auth.md): a client that sends the same refresh token twice
        // at once gets one new pair and one 401, and the 401 is a reuse that ends the family,
        // the pair just issued included. Clients refresh one request at a time.
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let (_, v) = send(&app, login(&password(0))).await;
        let (_, a) = pair(&v);
        let ((s1, v1), (s2, v2)) = futures_util::future::join(
            send(&app, refresh(&a)),
            send(&app, refresh(&a)),
        )
        .await;
        let mut statuses = [s1.as_u16(), s2.as_u16()];
        statuses.sort_unstable();
        assert_eq!(statuses, [200, 401], "{v1} {v2}");
        let winner = if s1 == 200 { v1 } else { v2 };
        let (_, b) = pair(&winner);
        assert_eq!(send(&app, refresh(&b)).await.0, 401, "revoked with its family");
    }

    async fn an_export_in_progress_ends_with_its_session_or_its_rights(t) {
        // One row a chunk: each read of the client is one query of the server.
        let cfg = t.config().with(|c| {
            c.auth.bcrypt_cost = COST;
            c.http.export_chunk_rows = 1;
        });
        let db = t.open(&cfg).await;
        crudforge_tests::parts::create_table(&db).await;
        let admin = users::create_user(&db, "admin@example.com", "some-pass", true, COST).await.unwrap();
        users::grant_role(&db, admin, "ADMIN", None).await.unwrap();
        let alice = users::create_user(&db, "alice@example.com", "some-pass", true, COST).await.unwrap();
        let api = Api::new(cfg, db.clone())
            .unwrap()
            .mount(crudforge_tests::parts::Part::blueprint("/api/parts/").export())
            .unwrap();
        let app = test::init_service(api.app()).await;
        let token = |who: Uuid| api.state().tokens.access(who).unwrap();
        for (who, n) in [(admin, 0), (alice, 0), (admin, 1), (alice, 1), (alice, 2)] {
            let body = json!({"name": format!("part {n}"), "qty": 1, "stocked": true});
            let req = test::TestRequest::post().uri("/api/parts/").set_json(body)
                .insert_header(("authorization", format!("Bearer {}", token(who))));
            let (status, v) = send(&app, req).await;
            assert_eq!(status, StatusCode::CREATED, "{v}");
        }
        let uri = "/api/parts/export/?format=ndjson";
        // A slow client whose session holds reads every row, however long it takes.
        let mut whole = Download::start(&app, uri, &token(alice)).await;
        assert_eq!(whole.next().await, Some(true));
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        assert!(whole.finish().await);
        assert_eq!(whole.lines, 3);
        // The administrator's export (the staff note among its members): ADMIN is revoked
        // after its first chunk, which moves no credential version. The next chunk read a
        // second later finds the roles changed: the transfer is cut short.
        let mut admins = Download::start(&app, uri, &token(admin)).await;
        assert_eq!(admins.next().await, Some(true));
        assert_eq!(admins.lines, 1);
        let mut conn = db.get().await.unwrap();
        let revoke = match db.backend() {
            crudforge_tests::Backend::Sqlite => format!("DELETE FROM user_roles WHERE user_id = '{admin}';"),
            crudforge_tests::Backend::Postgres => format!("DELETE FROM user_roles WHERE user_id = '{admin}'::uuid;"),
        };
        crudforge::with_conn!(conn, |c| diesel_async::SimpleAsyncConnection::batch_execute(c, &revoke).await).unwrap();
        drop(conn);
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        assert!(!admins.finish().await, "cut short after the revocation");
        assert_eq!(admins.lines, 1);
        // Alice's, with her account disabled after its first chunk: cut short too.
        let mut hers = Download::start(&app, uri, &token(alice)).await;
        assert_eq!(hers.next().await, Some(true));
        users::set_enabled(&db, alice, false).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        assert!(!hers.finish().await, "cut short once disabled");
        assert_eq!(hers.lines, 1);
    }

    async fn claims_are_current_until_the_credentials_change(t) {
        let w = world(&t).await;
        let tokens = &w.api.state().tokens;
        let current = |claims: crudforge::auth::Claims| {
            let db = w.db.clone();
            async move {
                let mut conn = db.get().await.unwrap();
                conn.begin(TxMode::Write).await.unwrap();
                let outcome = users::claims_current_in(&mut conn, &claims).await;
                conn.finish(outcome).await.unwrap()
            }
        };
        let issue = |version: i64| {
            tokens
                .issue_versioned(w.user, TokenKind::Recovery, 600, version)
                .unwrap()
                .1
        };
        // Issued at the current version (0): current.
        let first = issue(users::token_version(&w.db, w.user).await.unwrap());
        assert!(current(first.clone()).await);
        // A password change raises the version: the token is not current any more.
        users::set_password(&w.db, w.user, "another-password", COST).await.unwrap();
        assert!(!current(first.clone()).await);
        let second = issue(users::token_version(&w.db, w.user).await.unwrap());
        assert!(current(second.clone()).await);
        // Nor after a logout everywhere.
        users::end_sessions(&w.db, w.user).await.unwrap();
        assert!(!current(second).await);
        // Nor after a disable, and enabling again does not bring it back.
        let third = issue(users::token_version(&w.db, w.user).await.unwrap());
        assert!(current(third.clone()).await);
        users::set_enabled(&w.db, w.user, false).await.unwrap();
        let fourth = issue(users::token_version(&w.db, w.user).await.unwrap());
        assert!(!current(fourth.clone()).await, "a disabled user's token");
        users::set_enabled(&w.db, w.user, true).await.unwrap();
        assert!(!current(third).await);
        // A token asked for while the account was disabled does not come back to life when it
        // is enabled again: enabling starts a new credential version too.
        assert!(!current(fourth).await, "a token issued while disabled, after enabling again");
        let fifth = issue(users::token_version(&w.db, w.user).await.unwrap());
        assert!(current(fifth.clone()).await);
        // An unknown user's token is not current.
        let stranger = tokens.issue(Uuid::new_v4(), TokenKind::Recovery, 600).unwrap().1;
        assert!(!current(stranger).await);
        // Outside a transaction the check would lock nothing: refused as a programming error.
        let mut conn = w.db.get().await.unwrap();
        let e = users::claims_current_in(&mut conn, &fifth).await.unwrap_err();
        assert_eq!(e.problem().status, 500);
    }
}

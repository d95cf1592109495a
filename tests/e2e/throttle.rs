//! Throttling in the reference application over real HTTP: `token_login`,
//! `send_recovery_token` and `reset_password` count failures per account from a client
//! address, per address and per account, and answer 429 problem+json with `Retry-After`. The server trusts 127.0.0.1 as a proxy, so
//! each request names its client in `X-Forwarded-For`.
//!
//! Runs against SQLite, and again against PostgreSQL when `CRUDFORGE_TEST_POSTGRES_URL` is set.

use crate::harness::{request, Reply, Server};
use serde_json::{json, Value};

const PASSWORD: &str = "correct horse";

/// A server on a fresh database with small limits: 3 failures per account from one address,
/// 5 per address, 8 per account, in a window long enough not to end during the scenario.
struct Throttled {
    server: Server,
    name: &'static str,
    _dir: tempfile::TempDir,
    _pg: Option<crudforge_tests::TestDb>,
}

fn servers() -> Vec<Throttled> {
    let env = vec![
        ("BCRYPT_COST", "4".to_owned()),
        ("JWT_SECRET_KEY", crudforge_tests::TEST_SECRET.to_owned()),
        ("DEBUG", "true".to_owned()),
        ("LOGIN_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS", "3".to_owned()),
        ("LOGIN_MAX_FAILURES_PER_ACCOUNT", "8".to_owned()),
        ("LOGIN_MAX_FAILURES_PER_ADDRESS", "5".to_owned()),
        ("LOGIN_FAILURE_WINDOW", "600".to_owned()),
        ("TRUSTED_PROXIES", "127.0.0.1".to_owned()),
    ];
    let mut backends: Vec<(&'static str, Option<crudforge_tests::TestDb>)> = vec![("sqlite", None)];
    if crudforge_tests::postgres_url().is_some() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let db = rt
            .block_on(crudforge_tests::TestDb::postgres())
            .expect("CRUDFORGE_TEST_POSTGRES_URL is set");
        backends.push(("postgres", Some(db)));
    }
    backends
        .into_iter()
        .map(|(name, pg)| {
            let dir = tempfile::tempdir().unwrap();
            let mut env = env.clone();
            if let Some(db) = &pg {
                env.push(("ORM_DATABASE_URI", db.uri.clone()));
            }
            for (email, first) in [
                ("ann@example.com", "Ann"),
                ("ada@example.com", "Ada"),
                ("bea@example.com", "Bea"),
            ] {
                let out = crate::harness::create_user(
                    dir.path(),
                    &env,
                    email,
                    PASSWORD,
                    &["--first-name", first],
                );
                assert!(out.status.success(), "[{name}] create-user {email}");
            }
            let out = crate::harness::create_token(
                dir.path(),
                &env,
                "ann@example.com",
                "ann-key-0123456789abcdefghijklmnopq",
                &[],
            );
            assert!(out.status.success(), "[{name}] create-token");
            eprintln!("== backend {name}");
            Throttled {
                server: Server::start(dir.path(), &env),
                name,
                _dir: dir,
                _pg: pg,
            }
        })
        .collect()
}

impl Throttled {
    /// POSTs `body` to `path` as the client `client` (through the trusted local proxy).
    fn post(&self, path: &str, client: &str, body: &Value) -> Reply {
        let bytes = serde_json::to_vec(body).unwrap();
        request(
            &self.server.addr,
            "POST",
            path,
            &[
                ("Content-Type", "application/json"),
                ("X-Forwarded-For", client),
            ],
            Some(&bytes),
        )
    }

    fn status(&self, r: &Reply, status: u16) {
        assert_eq!(r.status, status, "[{}] {}", self.name, r.text());
    }

    /// Checks a 429 problem with `Retry-After`; returns the body without the request's id.
    fn throttled(&self, r: &Reply, path: &str) -> Value {
        self.status(r, 429);
        assert_eq!(r.header("content-type"), Some("application/problem+json"));
        let wait: u64 = r
            .header("retry-after")
            .and_then(|v| v.parse().ok())
            .expect("Retry-After in seconds");
        assert!((1..=600).contains(&wait), "Retry-After {wait}");
        let v = r.json();
        assert_eq!(v["type"], "/errors/too_many_requests_error", "{v}");
        assert_eq!(v["title"], "Too Many Requests", "{v}");
        assert_eq!(v["status"], 429, "{v}");
        assert_eq!(v["instance"], path, "{v}");
        let mut v = v;
        let id = v.as_object_mut().unwrap().remove("request_id");
        assert_eq!(
            id.as_ref().and_then(Value::as_str),
            r.header("x-request-id"),
            "request_id"
        );
        v
    }
}

#[test]
fn token_login_is_throttled_per_address() {
    for app in servers() {
        let p = "/api/user/token_login";
        for i in 0..5 {
            let r = app.post(p, "203.0.113.1", &json!({"token": format!("guess-{i}")}));
            app.status(&r, 401);
        }
        // Even the right token is refused from that address now.
        app.throttled(
            &app.post(
                p,
                "203.0.113.1",
                &json!({"token": "ann-key-0123456789abcdefghijklmnopq"}),
            ),
            p,
        );
        // Other clients are not affected.
        app.status(
            &app.post(
                p,
                "203.0.113.2",
                &json!({"token": "ann-key-0123456789abcdefghijklmnopq"}),
            ),
            200,
        );
    }
}

#[test]
fn send_recovery_token_is_throttled_per_account_alike_for_unknown_emails() {
    for app in servers() {
        let p = "/api/user/send_recovery_token";
        let mut answers = Vec::new();
        for (k, email) in ["ada@example.com", "ghost@example.com"].iter().enumerate() {
            let client = format!("198.51.100.{k}");
            for _ in 0..3 {
                let r = app.post(p, &client, &json!({"email": email, "first_name": "Eve"}));
                app.status(&r, 401);
            }
            let r = app.post(p, &client, &json!({"email": email, "first_name": "Ada"}));
            answers.push(app.throttled(&r, p));
        }
        assert_eq!(
            answers[0], answers[1],
            "the same answer for unknown accounts"
        );
        // The account's counter from that address is shared with login...
        let login = json!({"email": "ada@example.com", "password": PASSWORD});
        let r = app.post("/api/user/login/", "198.51.100.0", &login);
        app.throttled(&r, "/api/user/login/");
        // ...and the owner, from another address, is not locked out.
        let r = app.post("/api/user/login/", "198.51.100.20", &login);
        app.status(&r, 200);
        // Another account is not affected.
        let r = app.post(
            p,
            "198.51.100.21",
            &json!({"email": "bea@example.com", "first_name": "bea"}),
        );
        app.status(&r, 200);
    }
}

#[test]
fn reset_password_is_throttled_per_address() {
    for app in servers() {
        let send = "/api/user/send_recovery_token";
        let p = "/api/user/reset_password";
        let r = app.post(
            send,
            "192.0.2.1",
            &json!({"email": "bea@example.com", "first_name": "Bea"}),
        );
        app.status(&r, 200);
        let token = r.json()["debug_recovery_token"]
            .as_str()
            .unwrap()
            .to_owned();
        for _ in 0..5 {
            let r = app.post(
                p,
                "192.0.2.2",
                &json!({"recovery_token": "garbage", "new_password": "x"}),
            );
            app.status(&r, 401);
        }
        let good = json!({"recovery_token": token, "new_password": "new secret"});
        app.throttled(&app.post(p, "192.0.2.2", &good), p);
        app.status(&app.post(p, "192.0.2.3", &good), 200);
    }
}

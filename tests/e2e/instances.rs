//! Two `reference-app` processes on one fresh PostgreSQL database, started at the same moment
//! (their migrations must not race), behave as one service: logins, refresh rotation,
//! disabling, unique e-mails, throttling and `If-Match` all hold across them.
//!
//! Skipped with a message when `CRUDFORGE_TEST_POSTGRES_URL` is unset (a failure when
//! `CRUDFORGE_REQUIRE_POSTGRES=1`).

use crate::harness::{request, Reply, Server};
use serde_json::{json, Value};
use std::process::Stdio;
use std::sync::Barrier;
use std::time::Duration;

const PASSWORD: &str = "correct horse";

fn send(
    server: &Server,
    method: &str,
    path: &str,
    token: Option<&str>,
    extra: &[(&str, &str)],
    body: Option<Value>,
) -> Reply {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers: Vec<(&str, &str)> = Vec::new();
    if let Some(a) = &auth {
        headers.push(("Authorization", a));
    }
    headers.extend_from_slice(extra);
    let bytes = body.map(|b| serde_json::to_vec(&b).unwrap());
    if bytes.is_some() {
        headers.push(("Content-Type", "application/json"));
    }
    request(&server.addr, method, path, &headers, bytes.as_deref())
}

fn login(server: &Server, email: &str, password: &str) -> Reply {
    send(
        server,
        "POST",
        "/api/user/login/",
        None,
        &[],
        Some(json!({"email": email, "password": password})),
    )
}

fn tokens(server: &Server, email: &str) -> Value {
    let r = login(server, email, PASSWORD);
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

/// Runs `a` and `b` on two threads released at the same moment; returns both answers.
fn at_once(a: impl FnOnce() -> Reply + Send, b: impl FnOnce() -> Reply + Send) -> (Reply, Reply) {
    let gate = Barrier::new(2);
    std::thread::scope(|s| {
        let ha = s.spawn(|| {
            gate.wait();
            a()
        });
        let hb = s.spawn(|| {
            gate.wait();
            b()
        });
        (ha.join().unwrap(), hb.join().unwrap())
    })
}

#[test]
fn readiness_is_503_while_migrations_wait_and_200_after() {
    use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};
    if crudforge_tests::postgres_url().is_none() {
        eprintln!("skipped: CRUDFORGE_TEST_POSTGRES_URL is not set");
        return;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let db = rt
        .block_on(crudforge_tests::TestDb::postgres())
        .expect("CRUDFORGE_TEST_POSTGRES_URL is set");
    // Hold the migration lock, as another instance migrating would.
    let key = crudforge::__bench::MIGRATION_LOCK_KEY;
    let mut holder = rt.block_on(AsyncPgConnection::establish(&db.uri)).unwrap();
    rt.block_on(holder.batch_execute(&format!("SELECT pg_advisory_lock({key})")))
        .unwrap();
    let env = vec![
        ("ORM_DATABASE_URI", db.uri.clone()),
        ("JWT_SECRET_KEY", crudforge_tests::TEST_SECRET.to_owned()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::spawn(dir.path(), &env, Stdio::inherit());
    // Every answer while the lock is held is 503; a connection the starting server refuses or
    // drops before answering is tried again (Server::get_starting), never counted as an answer.
    for _ in 0..3 {
        let ready = server.get_starting("/ready");
        assert_eq!(ready.status, 503, "{}", ready.text());
        assert_eq!(ready.json()["status"], "starting");
        std::thread::sleep(Duration::from_millis(100));
    }
    // /health keeps its contract: the database is reachable.
    assert_eq!(server.get_starting("/health").status, 200);
    rt.block_on(holder.batch_execute(&format!("SELECT pg_advisory_unlock({key})")))
        .unwrap();
    server.wait_ready();
    assert_eq!(server.get("/ready").json()["status"], "ready");
    drop(server);
    drop(holder);
    drop(db);
}

#[test]
fn two_instances_on_one_postgres_behave_as_one() {
    if crudforge_tests::postgres_url().is_none() {
        eprintln!("skipped: CRUDFORGE_TEST_POSTGRES_URL is not set");
        return;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let db = rt
        .block_on(crudforge_tests::TestDb::postgres())
        .expect("CRUDFORGE_TEST_POSTGRES_URL is set");
    let env = vec![
        ("ORM_DATABASE_URI", db.uri.clone()),
        ("BCRYPT_COST", "4".to_owned()),
        ("JWT_SECRET_KEY", crudforge_tests::TEST_SECRET.to_owned()),
        ("LOGIN_MAX_FAILURES_PER_ACCOUNT", "3".to_owned()),
        ("LOGIN_FAILURE_WINDOW", "600".to_owned()),
    ];
    let dir_a = tempfile::tempdir().unwrap();
    let dir_b = tempfile::tempdir().unwrap();

    // Both start on the empty database at once: one migrates, the other waits for the lock.
    let mut a = Server::spawn(dir_a.path(), &env, Stdio::inherit());
    let mut b = Server::spawn(dir_b.path(), &env, Stdio::inherit());
    a.wait_ready();
    b.wait_ready();

    let user = |email: &str, extra: &[&str]| -> String {
        let out = crate::harness::create_user(dir_a.path(), &env, email, PASSWORD, extra);
        assert!(out.status.success(), "create-user {email}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    user("admin@example.com", &["--admin"]);
    let bob = user("bob@example.com", &[]);
    user("cy@example.com", &[]);
    let admin = tokens(&a, "admin@example.com")["access_token"]
        .as_str()
        .unwrap()
        .to_owned();

    // A login on one works on the other.
    let bob_tokens = tokens(&a, "bob@example.com");
    let bob_access = bob_tokens["access_token"].as_str().unwrap().to_owned();
    let me = send(&b, "GET", "/api/user/me", Some(&bob_access), &[], None);
    assert_eq!(me.status, 200, "{}", me.text());
    assert_eq!(me.json()["email"], "bob@example.com");

    // A refresh token rotated on one is refused on the other.
    let refresh = bob_tokens["refresh_token"].as_str().unwrap();
    let body = json!({"refresh_token": refresh});
    let rotated = send(
        &a,
        "POST",
        "/api/user/refresh/",
        None,
        &[],
        Some(body.clone()),
    );
    assert_eq!(rotated.status, 200, "{}", rotated.text());
    let reused = send(&b, "POST", "/api/user/refresh/", None, &[], Some(body));
    assert_eq!(reused.status, 401, "{}", reused.text());

    // The same e-mail registered through both at once: one 201, one 409.
    let new_user = json!({"email": "dee@example.com", "password": PASSWORD});
    let (ra, rb) = at_once(
        || {
            send(
                &a,
                "POST",
                "/api/user/",
                Some(&admin),
                &[],
                Some(new_user.clone()),
            )
        },
        || {
            send(
                &b,
                "POST",
                "/api/user/",
                Some(&admin),
                &[],
                Some(new_user.clone()),
            )
        },
    );
    let mut statuses = [ra.status, rb.status];
    statuses.sort_unstable();
    assert_eq!(statuses, [201, 409], "{} / {}", ra.text(), rb.text());

    // Throttling counts attempts made through both.
    for server in [&a, &b, &a] {
        assert_eq!(login(server, "cy@example.com", "guess").status, 401);
    }
    let refused = login(&b, "cy@example.com", PASSWORD);
    assert_eq!(refused.status, 429, "{}", refused.text());
    assert_eq!(login(&a, "cy@example.com", PASSWORD).status, 429);

    // Concurrent PATCHes with the same If-Match through both: exactly one wins.
    let created = send(
        &a,
        "POST",
        "/api/critters/",
        Some(&admin),
        &[],
        Some(json!({"name": "Fluffy", "species": "cat"})),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    let tag = created.header("etag").expect("ETag").to_owned();
    let item = format!("/api/critters/{}", created.json()["id"].as_str().unwrap());
    for round in 0..3 {
        let current = send(&a, "GET", &item, Some(&admin), &[], None);
        let tag = if round == 0 {
            tag.clone()
        } else {
            current.header("etag").unwrap().to_owned()
        };
        let (ra, rb) = at_once(
            || {
                send(
                    &a,
                    "PATCH",
                    &item,
                    Some(&admin),
                    &[("If-Match", &tag)],
                    Some(json!({"cuteness_level": 2 * round + 1})),
                )
            },
            || {
                send(
                    &b,
                    "PATCH",
                    &item,
                    Some(&admin),
                    &[("If-Match", &tag)],
                    Some(json!({"cuteness_level": 2 * round + 2})),
                )
            },
        );
        let mut statuses = [ra.status, rb.status];
        statuses.sort_unstable();
        assert_eq!(
            statuses,
            [200, 412],
            "round {round}: {} / {}",
            ra.text(),
            rb.text()
        );
    }

    // A user disabled through one is refused by the other at once.
    let bob_path = format!("/api/user/{bob}");
    let disabled = send(
        &a,
        "PATCH",
        &bob_path,
        Some(&admin),
        &[],
        Some(json!({"is_enabled": false})),
    );
    assert_eq!(disabled.status, 200, "{}", disabled.text());
    let after = send(&b, "GET", "/api/user/me", Some(&bob_access), &[], None);
    assert_eq!(after.status, 401, "{}", after.text());
    assert_eq!(login(&b, "bob@example.com", PASSWORD).status, 401);

    drop(a);
    drop(b);
    drop(db);
}

//! `SQLITE_LOCKING=EXCLUSIVE` end to end: a server started with it serves as usual, no other
//! process can use its SQLite file while it runs (and the refusal says why), and once it has
//! stopped the file is an ordinary SQLite file again, with everything the server wrote.

use crate::harness::{request, Reply, Server};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const PASSWORD: &str = "correct horse";

fn call(server: &Server, method: &str, path: &str, token: &str, body: Option<Value>) -> Reply {
    let auth = format!("Bearer {token}");
    let body = body.map(|b| b.to_string());
    let mut headers = vec![("Authorization", auth.as_str())];
    if body.is_some() {
        headers.push(("Content-Type", "application/json"));
    }
    request(
        &server.addr,
        method,
        path,
        &headers,
        body.as_deref().map(str::as_bytes),
    )
}

fn login(server: &Server, email: &str) -> String {
    let body = json!({"email": email, "password": PASSWORD}).to_string();
    let r = request(
        &server.addr,
        "POST",
        "/api/user/login/",
        &[("Content-Type", "application/json")],
        Some(body.as_bytes()),
    );
    assert_eq!(r.status, 200, "login: {}", r.text());
    r.json()["access_token"].as_str().unwrap().to_owned()
}

fn create_user(dir: &std::path::Path, env: &[(&str, String)], email: &str) -> std::process::Output {
    crate::harness::create_user(dir, env, email, PASSWORD, &[])
}

#[test]
fn an_exclusive_server_owns_its_file_until_it_stops() {
    let dir = tempfile::tempdir().unwrap();
    let shared = vec![
        ("BCRYPT_COST", "4".to_owned()),
        ("JWT_SECRET_KEY", crudforge_tests::TEST_SECRET.to_owned()),
    ];
    let mut exclusive = shared.clone();
    exclusive.push(("SQLITE_LOCKING", "EXCLUSIVE".to_owned()));
    let out = create_user(dir.path(), &shared, "first@example.com");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut server = Server::start(dir.path(), &exclusive);
    let token = login(&server, "first@example.com");
    let created = call(
        &server,
        "POST",
        "/api/critters/",
        &token,
        Some(json!({"name": "Tom", "species": "cat", "cuteness_level": 3})),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    let id = created.json()["id"].as_str().unwrap().to_owned();
    let item = format!("/api/critters/{id}");
    let patched = call(
        &server,
        "PATCH",
        &item,
        &token,
        Some(json!({"cuteness_level": 9})),
    );
    assert_eq!(patched.status, 200, "{}", patched.text());
    let list = call(&server, "GET", "/api/critters/?species=cat", &token, None);
    assert_eq!(list.status, 200, "{}", list.text());
    assert_eq!(list.json()["pagination"]["total"], 1);
    // The WAL index lives in the server's memory: there is no `-shm` file.
    let data = dir.path().join("data");
    assert!(data.join("crudforge.db").exists());
    assert!(data.join("crudforge.db-wal").exists());
    assert!(!data.join("crudforge.db-shm").exists());

    // Another process cannot use the file while the server runs, and says why.
    let out = create_user(dir.path(), &shared, "late@example.com");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a second process used the file");
    assert!(stderr.contains("database is locked"), "{stderr}");
    assert!(stderr.contains("SQLITE_LOCKING=EXCLUSIVE"), "{stderr}");
    // And a second exclusive server on the same file does not get ready.
    let out = create_user(dir.path(), &exclusive, "late@example.com");
    assert!(
        !out.status.success(),
        "a second exclusive process used the file"
    );

    // The server still serves after those attempts.
    let got = call(&server, "GET", &item, &token, None);
    assert_eq!(got.status, 200, "{}", got.text());

    server.terminate();
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.try_wait().is_none() {
        assert!(Instant::now() < deadline, "the server did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }

    // Afterwards the file opens as usual, with everything the exclusive server wrote.
    let out = create_user(dir.path(), &shared, "late@example.com");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let server = Server::start(dir.path(), &shared);
    let token = login(&server, "late@example.com");
    let got = call(&server, "GET", &item, &token, None);
    assert_eq!(got.status, 200, "{}", got.text());
    assert_eq!(got.json()["cuteness_level"], 9);
    assert_eq!(got.json()["name"], "Tom");
}

//! The minimal application as its users meet it: its command line creates two users, its
//! server (started on a free port, with a private data folder) signs them in, keeps a note
//! for its author, lists it, and refuses it to anonymous callers and changes by another user.
//! Also checks that `docs/getting-started.md` shows `src/main.rs` as it is.
#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary, run in `dir` with a configuration of its own (SQLite in `dir`).
fn minimal(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_minimal"));
    cmd.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CRUDFORGE_DATA_DIR", dir)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null());
    cmd
}

/// `minimal create-user --email <email>`, the password from `CRUDFORGE_PASSWORD`; the new
/// user's id.
fn create_user(dir: &Path, email: &str, password: &str) -> String {
    let out: Output = minimal(dir)
        .env("CRUDFORGE_PASSWORD", password)
        .args(["create-user", "--email", email])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "create-user failed: {stderr}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The server; stopped when dropped.
struct Server(Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One HTTP/1.1 request: the status and the JSON body (`null` when empty).
fn request(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    try_request(addr, method, path, token, body).unwrap()
}

/// [`request`], or the error of a server that does not listen (yet).
fn try_request(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> std::io::Result<(u16, Value)> {
    let mut stream = TcpStream::connect(addr)?;
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{auth}\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let bad = || std::io::Error::other(format!("not an HTTP answer: {answer:?}"));
    let (head, body) = answer.split_once("\r\n\r\n").ok_or_else(bad)?;
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok());
    let body = serde_json::from_str(body).unwrap_or(Value::Null);
    Ok((status.ok_or_else(bad)?, body))
}

#[test]
fn serve_sign_in_create_list() {
    let dir = tempfile::tempdir().unwrap();
    let ann = create_user(dir.path(), "ann@example.com", "ann-secret-1");
    create_user(dir.path(), "bob@example.com", "bob-secret-1");

    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let child = minimal(dir.path())
        .args(["serve", "--bind", &addr])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut server = Server(child, addr.clone());
    let deadline = Instant::now() + Duration::from_secs(60);
    while !try_request(&addr, "GET", "/ready", None, None).is_ok_and(|(s, _)| s == 200) {
        assert!(server.0.try_wait().unwrap().is_none(), "the server exited");
        assert!(Instant::now() < deadline, "the server did not get ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    let addr = server.1.clone();
    let sign_in = |email: &str, password: &str| {
        let body = json!({"email": email, "password": password});
        let (status, tokens) = request(&addr, "POST", "/api/users/login/", None, Some(body));
        assert_eq!(status, 200, "{tokens}");
        tokens["access_token"].as_str().unwrap().to_owned()
    };
    let ann_token = sign_in("ann@example.com", "ann-secret-1");
    let bob_token = sign_in("bob@example.com", "bob-secret-1");

    let (status, note) = request(
        &addr,
        "POST",
        "/api/notes/",
        Some(&ann_token),
        Some(json!({"title": "Buy milk"})),
    );
    assert_eq!(status, 201, "{note}");
    assert_eq!(note["title"], "Buy milk");
    assert_eq!(note["author_id"], ann, "the server sets the author");
    assert_eq!(note["body"], Value::Null);

    let (status, list) = request(&addr, "GET", "/api/notes/", Some(&bob_token), None);
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list["data"][0]["id"], note["id"]);

    let path = format!("/api/notes/{}", note["id"].as_str().unwrap());
    let change = Some(json!({"title": "Buy beer"}));
    let (status, refused) = request(&addr, "PATCH", &path, Some(&bob_token), change.clone());
    assert_eq!(status, 403, "only the author changes a note: {refused}");
    assert_eq!(refused["type"], "/errors/forbidden_error");
    let (status, _) = request(&addr, "DELETE", &path, Some(&bob_token), None);
    assert_eq!(status, 403);
    let (status, _) = request(&addr, "GET", "/api/notes/", None, None);
    assert_eq!(status, 401, "anonymous callers read nothing");
    let (status, changed) = request(&addr, "PATCH", &path, Some(&ann_token), change);
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["title"], "Buy beer");
}

#[test]
fn the_guide_shows_this_application() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let main = std::fs::read_to_string(root.join("src/main.rs")).unwrap();
    assert!(main.lines().count() < 60, "one file under 60 lines");
    let guide = std::fs::read_to_string(root.join("../../docs/getting-started.md")).unwrap();
    assert!(
        guide.contains(&format!("```rust,no_run\n{main}```")),
        "docs/getting-started.md shows examples/minimal/src/main.rs whole and unchanged"
    );
}

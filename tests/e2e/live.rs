//! Live updates end to end, on the reference application's `/api/critters/events/`: the
//! critters that the command line's `seed-critters` writes reach a stream open on the running
//! server (SQLite, and PostgreSQL when configured), and a headless Chromium page follows the
//! feed with `EventSource` and a single-use ticket, across origins under the API's CORS
//! setting.

use crate::harness::{chromium, cli, create_user, request, Server};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const PASSWORD: &str = "correct horse";

/// One database to run against, with a working directory and configuration of its own.
struct Setup {
    name: &'static str,
    dir: tempfile::TempDir,
    env: Vec<(&'static str, String)>,
    /// Keeps the PostgreSQL database alive.
    _pg: Option<crudforge_tests::TestDb>,
}

/// SQLite always; PostgreSQL too when configured.
fn setups(extra: &[(&'static str, String)]) -> Vec<Setup> {
    let mut env = vec![
        ("BCRYPT_COST", "4".to_owned()),
        ("JWT_SECRET_KEY", crudforge_tests::TEST_SECRET.to_owned()),
    ];
    env.extend(extra.iter().cloned());
    let mut out = vec![Setup {
        name: "sqlite",
        dir: tempfile::tempdir().unwrap(),
        env: env.clone(),
        _pg: None,
    }];
    if let Some(db) = crate::harness::postgres_db() {
        env.push(("ORM_DATABASE_URI", db.uri.clone()));
        out.push(Setup {
            name: "postgres",
            dir: tempfile::tempdir().unwrap(),
            env,
            _pg: Some(db),
        });
    }
    out
}

/// Creates a user with the command line, starts the server and logs the user in: the
/// server and an access token.
fn start(s: &Setup, email: &str) -> (Server, String) {
    let out = create_user(s.dir.path(), &s.env, email, PASSWORD, &[]);
    assert!(
        out.status.success(),
        "[{}] create-user: {}",
        s.name,
        String::from_utf8_lossy(&out.stderr)
    );
    let server = Server::start(s.dir.path(), &s.env);
    let body = serde_json::to_vec(&json!({"email": email, "password": PASSWORD})).unwrap();
    let r = request(
        &server.addr,
        "POST",
        "/api/user/login/",
        &[("Content-Type", "application/json")],
        Some(&body),
    );
    assert_eq!(r.status, 200, "[{}] login: {}", s.name, r.text());
    let token = r.json()["access_token"].as_str().unwrap().to_owned();
    (server, token)
}

/// An open event stream over HTTP/1.1 (chunked), read as it arrives.
struct Sse {
    conn: TcpStream,
    /// Bytes received and not yet de-chunked.
    raw: Vec<u8>,
    /// The de-chunked body not yet parsed into events.
    text: String,
}

impl Sse {
    /// `GET path` with the bearer `token`; expects 200 and `text/event-stream`.
    fn open(addr: &str, path: &str, token: &str) -> Sse {
        let mut conn = TcpStream::connect(addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let head = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
        );
        conn.write_all(head.as_bytes()).unwrap();
        let mut raw = Vec::new();
        let end = loop {
            if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            let mut buf = [0u8; 4096];
            let n = conn.read(&mut buf).unwrap();
            assert!(n > 0, "the connection closed before the headers");
            raw.extend_from_slice(&buf[..n]);
        };
        let head = String::from_utf8_lossy(&raw[..end]).to_lowercase();
        assert!(head.starts_with("http/1.1 200"), "{head}");
        assert!(head.contains("content-type: text/event-stream"), "{head}");
        assert!(head.contains("transfer-encoding: chunked"), "{head}");
        let raw = raw[end + 4..].to_vec();
        Sse {
            conn,
            raw,
            text: String::new(),
        }
    }

    /// Moves the complete chunks of `raw` into `text`.
    fn dechunk(&mut self) {
        while let Some(eol) = self.raw.windows(2).position(|w| w == b"\r\n") {
            let size = std::str::from_utf8(&self.raw[..eol])
                .ok()
                .and_then(|s| {
                    usize::from_str_radix(s.split(';').next().unwrap_or("").trim(), 16).ok()
                })
                .expect("a chunk size");
            if self.raw.len() < eol + 2 + size + 2 {
                return;
            }
            let chunk = self.raw[eol + 2..eol + 2 + size].to_vec();
            self.text.push_str(std::str::from_utf8(&chunk).unwrap());
            self.raw.drain(..eol + 2 + size + 2);
        }
    }

    /// The next event (heartbeat comments skipped): its name and data. Fails when none comes
    /// within 30 s.
    fn next(&mut self) -> (String, Value) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            assert!(Instant::now() < deadline, "no event within 30 s");
            self.dechunk();
            while let Some(i) = self.text.find("\n\n") {
                let block: String = self.text.drain(..i + 2).collect();
                let mut event = None;
                let mut data = Value::Null;
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event: ") {
                        event = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data = serde_json::from_str(v).unwrap();
                    }
                }
                if let Some(event) = event {
                    return (event, data);
                }
            }
            let mut buf = [0u8; 8192];
            match self.conn.read(&mut buf) {
                Ok(0) => panic!("the stream ended"),
                Ok(n) => self.raw.extend_from_slice(&buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => panic!("reading the stream: {e}"),
            }
        }
    }
}

#[test]
fn critters_seeded_by_the_command_line_reach_an_open_stream() {
    for s in setups(&[]) {
        let (server, token) = start(&s, "keeper@example.com");
        let mut stream = Sse::open(&server.addr, "/api/critters/events/?species=otter", &token);
        assert_eq!(stream.next().0, "ready", "[{}]", s.name);
        // Sixteen critters, two of them otters (the third and the eleventh), written by another
        // process in one transaction.
        let out = cli(s.dir.path(), &s.env, &["seed-critters", "--count", "16"]);
        assert!(
            out.status.success(),
            "[{}] seed-critters: {}",
            s.name,
            String::from_utf8_lossy(&out.stderr)
        );
        let ids: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(ids.len(), 16);
        for i in [2, 10] {
            let (event, data) = stream.next();
            assert_eq!(event, "created", "[{}] {data}", s.name);
            assert_eq!(data["id"], ids[i].as_str(), "[{}] {data}", s.name);
            assert_eq!(data["species"], "otter", "[{}] {data}", s.name);
            // The row as the subscriber's GET shows it.
            let got = request(
                &server.addr,
                "GET",
                &format!("/api/critters/{}", ids[i]),
                &[("Authorization", &format!("Bearer {token}"))],
                None,
            );
            assert_eq!(got.json(), data, "[{}]", s.name);
        }
    }
}

/// A page server on its own origin: `/` is the page; `/hold` (an image of the page) is
/// answered only once the page has asked for `/done` (or after 30 s), so that the page's
/// `load` event, and with it Chromium's `--dump-dom`, waits until the page's script has
/// written its results.
struct PageServer {
    addr: String,
}

impl PageServer {
    fn start(page: Arc<Mutex<String>>) -> PageServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let done = Arc::new((Mutex::new(false), Condvar::new()));
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let page = Arc::clone(&page);
                let done = Arc::clone(&done);
                std::thread::spawn(move || serve_page(conn, &page, &done));
            }
        });
        PageServer { addr }
    }

    fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }
}

fn serve_page(mut conn: TcpStream, page: &Mutex<String>, done: &(Mutex<bool>, Condvar)) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let line = String::from_utf8_lossy(&head);
    let path = line.split(' ').nth(1).unwrap_or("/").to_owned();
    let (status, kind, body) = match path.as_str() {
        "/" => (
            "200 OK",
            "text/html; charset=utf-8",
            page.lock().unwrap().clone(),
        ),
        "/done" => {
            *done.0.lock().unwrap() = true;
            done.1.notify_all();
            ("204 No Content", "text/plain", String::new())
        }
        "/hold" => {
            let (lock, cv) = done;
            let guard = lock.lock().unwrap();
            let _ = cv
                .wait_timeout_while(guard, Duration::from_secs(30), |d| !*d)
                .unwrap();
            ("404 Not Found", "text/plain", String::new())
        }
        _ => ("404 Not Found", "text/plain", String::new()),
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(reply.as_bytes());
}

/// The page: obtains a ticket with the bearer token, follows the critters' feed with
/// `EventSource`, creates a critter once the stream is ready, writes the event it receives
/// into the page, then tries the same ticket again. `docs/realtime.md`'s browser client is
/// this script's core.
fn page(api: &str, token: &str) -> String {
    format!(
        r#"<!doctype html>
<html><head><meta charset="utf-8"><title>feed</title></head>
<body><ul id="out"></ul><img src="/hold" alt="">
<script>
const api = {api};
const token = {token};
const out = document.getElementById("out");
const log = (text) => {{
  const li = document.createElement("li");
  li.textContent = text;
  out.appendChild(li);
}};
const finish = () => fetch("/done");
setTimeout(() => {{ log("timed out"); finish(); }}, 20000);
(async () => {{
  const res = await fetch(`${{api}}/api/critters/events/ticket`, {{
    method: "POST",
    headers: {{ Authorization: `Bearer ${{token}}` }},
  }});
  const {{ ticket }} = await res.json();
  log(`ticket ${{res.status}}`);
  const url = `${{api}}/api/critters/events/?ticket=${{encodeURIComponent(ticket)}}`;
  const source = new EventSource(url);
  source.addEventListener("ready", async () => {{
    log("ready");
    const made = await fetch(`${{api}}/api/critters/`, {{
      method: "POST",
      headers: {{ Authorization: `Bearer ${{token}}`, "Content-Type": "application/json" }},
      body: JSON.stringify({{ name: "Browser Otter", species: "otter" }}),
    }});
    log(`create ${{made.status}}`);
  }});
  for (const kind of ["created", "updated", "deleted", "restored"]) {{
    source.addEventListener(kind, (e) => {{
      const row = JSON.parse(e.data);
      log(`event ${{kind}} ${{row.name}} ${{e.lastEventId ? "with id" : "without id"}}`);
      source.close();
      // The same ticket again: refused (401), so EventSource fails and closes.
      const again = new EventSource(url);
      again.addEventListener("ready", () => {{ log("reuse accepted"); again.close(); finish(); }});
      again.onerror = () => {{
        log(again.readyState === EventSource.CLOSED ? "reuse refused" : "reuse error");
        again.close();
        finish();
      }};
    }});
  }}
  source.onerror = () => log(`stream error ${{source.readyState}}`);
}})().catch((e) => {{ log(`failed ${{e}}`); finish(); }});
</script></body></html>"#,
        api = serde_json::to_string(api).unwrap(),
        token = serde_json::to_string(token).unwrap(),
    )
}

/// Loads `url` in headless Chromium and returns the DOM once the page has loaded (see
/// [`PageServer`]); the browser is killed after 60 s.
fn dump_dom(browser: &Path, url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run chromium");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    reader.join().unwrap()
}

#[test]
fn a_browser_follows_the_feed_with_event_source_and_a_ticket() {
    let Some(browser) = chromium() else {
        return;
    };
    let page_text = Arc::new(Mutex::new(String::new()));
    let pages = PageServer::start(Arc::clone(&page_text));
    // The page's origin is another port: the API lets it in with CORS.
    let s = setups(&[("CORS_ALLOWED_ORIGINS", pages.origin())])
        .into_iter()
        .next()
        .unwrap();
    let (server, token) = start(&s, "viewer@example.com");
    *page_text.lock().unwrap() = page(&server.base, &token);
    let dom = dump_dom(&browser, &format!("{}/", pages.origin()));
    let shown: Vec<&str> = dom
        .split("<li>")
        .skip(1)
        .filter_map(|l| l.split("</li>").next())
        .collect();
    // The creation's answer and its event may arrive in either order.
    assert_eq!(shown.len(), 5, "{dom}");
    assert_eq!(shown[..2], ["ticket 200", "ready"], "{dom}");
    let mut middle = shown[2..4].to_vec();
    middle.sort_unstable();
    assert_eq!(
        middle,
        ["create 201", "event created Browser Otter with id"],
        "{dom}"
    );
    assert_eq!(shown[4], "reuse refused", "{dom}");
}

//! Live updates end to end, on the reference application's `/api/critters/events/`: the
//! critters that the command line's `seed-critters` writes reach a stream open on the running
//! server (SQLite, and PostgreSQL when configured), and a headless Chromium page follows the
//! feed with `EventSource` and a single-use ticket, across origins under the API's CORS
//! setting, and resumes it with a new ticket and `last_event_id` when a proxy drops its
//! connection.

use crate::harness::{chromium, cli, create_user, request, Server};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
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
/// written its results. `/cut` runs the hook set with [`PageServer::on_cut`] (404 without
/// one).
struct PageServer {
    addr: String,
    cut: Arc<Mutex<Option<CutHook>>>,
}

/// What the page server runs on `/cut`, before it answers: `true` for 204, `false` for 500.
type CutHook = Box<dyn Fn() -> bool + Send>;

impl PageServer {
    fn start(page: Arc<Mutex<String>>) -> PageServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let done = Arc::new((Mutex::new(false), Condvar::new()));
        let cut: Arc<Mutex<Option<CutHook>>> = Arc::new(Mutex::new(None));
        let hook = Arc::clone(&cut);
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let page = Arc::clone(&page);
                let done = Arc::clone(&done);
                let hook = Arc::clone(&hook);
                std::thread::spawn(move || serve_page(conn, &page, &done, &hook));
            }
        });
        PageServer { addr, cut }
    }

    fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Sets what `/cut` runs (the page server starts first: its origin goes into the API's
    /// configuration).
    fn on_cut(&self, hook: impl Fn() -> bool + Send + 'static) {
        *self.cut.lock().unwrap() = Some(Box::new(hook));
    }
}

fn serve_page(
    mut conn: TcpStream,
    page: &Mutex<String>,
    done: &(Mutex<bool>, Condvar),
    cut: &Mutex<Option<CutHook>>,
) {
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
        "/cut" => match cut.lock().unwrap().as_ref() {
            Some(hook) if hook() => ("204 No Content", "text/plain", String::new()),
            Some(_) => ("500 Internal Server Error", "text/plain", String::new()),
            None => ("404 Not Found", "text/plain", String::new()),
        },
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

/// A TCP proxy in front of the server, on a port of its own: copies bytes both ways, and
/// can sever every connection it carries, as a network that drops them would.
struct Proxy {
    addr: String,
    /// Both ends of every connection accepted since the last sever (closed ones too).
    conns: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    /// Listens on a free port and forwards each connection to `target`.
    fn start(target: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let conns: Arc<Mutex<Vec<TcpStream>>> = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&conns);
        let target = target.to_owned();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(upstream) = TcpStream::connect(&target) else {
                    continue;
                };
                let (Ok(c1), Ok(c2), Ok(u1), Ok(u2)) = (
                    client.try_clone(),
                    client.try_clone(),
                    upstream.try_clone(),
                    upstream.try_clone(),
                ) else {
                    continue;
                };
                kept.lock().unwrap().extend([c1, u1]);
                std::thread::spawn(move || pipe(client, upstream));
                std::thread::spawn(move || pipe(u2, c2));
            }
        });
        Proxy { addr, conns }
    }

    fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Shuts down both ends of every connection it carries now, both ways.
    fn sever(&self) {
        for conn in self.conns.lock().unwrap().drain(..) {
            let _ = conn.shutdown(Shutdown::Both);
        }
    }
}

/// Copies `from` into `to` until either ends, then passes the end on.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}

/// The page for a resume: obtains a ticket, follows the critters' feed with `EventSource`,
/// creates "Before Drop" once the stream is ready and, on its `created` event, remembers the
/// event's id and asks the page server for `/cut` (the connections are severed and "While
/// Away" is created meanwhile). On the stream's error it closes it, waits for `/cut`'s answer,
/// and follows again with a new ticket and `last_event_id`, writing what the new stream sends
/// until "While Away" comes. `docs/realtime.md`'s browser client does the same.
fn resume_page(api: &str, token: &str) -> String {
    format!(
        r#"<!doctype html>
<html><head><meta charset="utf-8"><title>resume</title></head>
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
let finished = false;
const finish = () => {{
  if (!finished) {{ finished = true; fetch("/done"); }}
}};
setTimeout(() => {{ log("timed out"); finish(); }}, 20000);
// A new single-use ticket: the stream's URL with it.
const ticketed = async () => {{
  const res = await fetch(`${{api}}/api/critters/events/ticket`, {{
    method: "POST",
    headers: {{ Authorization: `Bearer ${{token}}` }},
  }});
  log(`ticket ${{res.status}}`);
  const {{ ticket }} = await res.json();
  return `${{api}}/api/critters/events/?ticket=${{encodeURIComponent(ticket)}}`;
}};
// Follows again from `lastId`, once `/cut` has answered ("While Away" then exists).
const resume = async (lastId, cut) => {{
  await cut;
  const url = `${{await ticketed()}}&last_event_id=${{encodeURIComponent(lastId)}}`;
  const again = new EventSource(url);
  again.addEventListener("reset", (e) => log(`reset ${{e.data}}`));
  again.addEventListener("ready", (e) => {{
    log(`resumed ready ${{e.lastEventId === lastId ? "same" : `other ${{e.lastEventId}}`}}`);
  }});
  for (const kind of ["created", "updated", "deleted", "restored"]) {{
    again.addEventListener(kind, (e) => {{
      const row = JSON.parse(e.data);
      log(`event ${{kind}} ${{row.name}}`);
      if (kind === "created" && row.name === "While Away") {{
        again.close();
        finish();
      }}
    }});
  }}
  again.addEventListener("end", (e) => log(`end ${{e.data}}`));
  again.onerror = () => {{
    log(`resumed stream error ${{again.readyState}}`);
    again.close();
    finish();
  }};
}};
(async () => {{
  const source = new EventSource(await ticketed());
  let made = null;
  let cut = null;
  source.addEventListener("ready", () => {{
    log("ready");
    if (made) return;
    made = fetch(`${{api}}/api/critters/`, {{
      method: "POST",
      headers: {{ Authorization: `Bearer ${{token}}`, "Content-Type": "application/json" }},
      body: JSON.stringify({{ name: "Before Drop", species: "otter" }}),
    }}).then((res) => log(`create ${{res.status}}`));
  }});
  let lastId = null;
  for (const kind of ["created", "updated", "deleted", "restored"]) {{
    source.addEventListener(kind, (e) => {{
      const row = JSON.parse(e.data);
      log(`event ${{kind}} ${{row.name}} ${{e.lastEventId ? `id ${{e.lastEventId}}` : "without id"}}`);
      if (cut || kind !== "created" || row.name !== "Before Drop") return;
      lastId = e.lastEventId;
      // Once the creation has answered too: the cut would otherwise sever its answer.
      cut = made.then(() => fetch("/cut")).then((res) => log(`cut ${{res.status}}`));
    }});
  }}
  source.addEventListener("end", (e) => log(`end ${{e.data}}`));
  // EventSource's own retry would reuse the ticket (refused): close, and follow again.
  source.onerror = () => {{
    source.close();
    if (!cut) {{
      log(`stream error ${{source.readyState}}`);
      finish();
      return;
    }}
    log("dropped");
    resume(lastId, cut).catch((e) => {{ log(`failed ${{e}}`); finish(); }});
  }};
}})().catch((e) => {{ log(`failed ${{e}}`); finish(); }});
</script></body></html>"#,
        api = serde_json::to_string(api).unwrap(),
        token = serde_json::to_string(token).unwrap(),
    )
}

#[test]
fn a_browser_resumes_the_feed_through_a_dropped_connection() {
    let Some(browser) = chromium() else {
        return;
    };
    let page_text = Arc::new(Mutex::new(String::new()));
    let pages = PageServer::start(Arc::clone(&page_text));
    let s = setups(&[("CORS_ALLOWED_ORIGINS", pages.origin())])
        .into_iter()
        .next()
        .unwrap();
    let (server, token) = start(&s, "resumer@example.com");
    // The page reaches the API through the proxy only.
    let proxy = Arc::new(Proxy::start(&server.addr));
    {
        let proxy = Arc::clone(&proxy);
        let addr = server.addr.clone();
        let bearer = format!("Bearer {token}");
        pages.on_cut(move || {
            proxy.sever();
            // Written while the page has no stream open, straight to the server.
            let body =
                serde_json::to_vec(&json!({"name": "While Away", "species": "otter"})).unwrap();
            let r = request(
                &addr,
                "POST",
                "/api/critters/",
                &[
                    ("Authorization", bearer.as_str()),
                    ("Content-Type", "application/json"),
                ],
                Some(&body),
            );
            if r.status != 201 {
                eprintln!("creating While Away: {} {}", r.status, r.text());
            }
            r.status == 201
        });
    }
    *page_text.lock().unwrap() = resume_page(&proxy.origin(), &token);
    let dom = dump_dom(&browser, &format!("{}/", pages.origin()));
    let mut shown: Vec<&str> = dom
        .split("<li>")
        .skip(1)
        .filter_map(|l| l.split("</li>").next())
        .collect();
    assert!(
        !shown.iter().any(|l| l.starts_with("reset")),
        "a reset on resume: {shown:?}"
    );
    assert_eq!(shown.len(), 9, "{shown:?}");
    // The id the page resumed from: that of "Before Drop"'s event.
    let id = shown
        .iter()
        .find_map(|l| l.strip_prefix("event created Before Drop id "))
        .unwrap_or_else(|| panic!("no id for Before Drop: {shown:?}"))
        .to_owned();
    assert!(!id.is_empty(), "{shown:?}");
    // The creation's answer and its event may arrive in either order, and so may the cut's
    // answer and the stream's error.
    shown[2..4].sort_unstable();
    shown[4..6].sort_unstable();
    let before = format!("event created Before Drop id {id}");
    assert_eq!(
        shown,
        [
            "ticket 200",
            "ready",
            "create 201",
            before.as_str(),
            "cut 204",
            "dropped",
            "ticket 200",
            "resumed ready same",
            "event created While Away",
        ],
        "{dom}"
    );
}

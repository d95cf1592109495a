//! Starting the reference binary, a small HTTP/1.1 client, and a headless browser.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Configuration keys cleared before every start, so the caller's environment cannot leak in.
const CONFIG_KEYS: &[&str] = &[
    "API_TITLE",
    "API_VERSION",
    "OPENAPI_VERSION",
    "ORM_DATABASE_URI",
    "SECRET_KEY",
    "JWT_SECRET_KEY",
    "JWT_ACCESS_TOKEN_EXPIRES",
    "JWT_REFRESH_TOKEN_EXPIRES",
    "HEALTH_ENDPOINT_ENABLED",
    "HEALTH_ENDPOINT_PATH",
    "ORM_PERFORMANCE_MONITORING",
    "ORM_SLOW_QUERY_THRESHOLD",
    "DEBUG",
    "CRUDFORGE_DATA_DIR",
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "MAX_BODY_SIZE",
    "LOGIN_MAX_FAILURES_PER_ACCOUNT",
    "LOGIN_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS",
    "LOGIN_MAX_FAILURES_PER_ADDRESS",
    "LOGIN_FAILURE_WINDOW",
    "TRUSTED_PROXIES",
    "BIND",
    "RECOVERY_ALLOW_NO_FIRST_NAME",
    "RECOVERY_SINGLE_USE",
    "RECOVERY_UNIFORM_ANSWER",
    "CRUDFORGE_PASSWORD",
    "CRUDFORGE_TOKEN",
    "METRICS_ENABLED",
    "METRICS_PATH",
    "METRICS_TOKEN",
    "CORS_ALLOWED_ORIGINS",
    "LOG_FORMAT",
    "READINESS_PATH",
    "SHUTDOWN_TIMEOUT",
    "SQLITE_SYNCHRONOUS",
    "SQLITE_LOCKING",
    "SCHEMA_CHECK",
    // Sign-in providers: without AUTH_PROVIDERS, no AUTH_PROVIDER_<NAME>_* key is read.
    "AUTH_PROVIDERS",
    "AUTH_RETURN_ORIGINS",
];

pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_reference-app"))
}

/// A command for the binary, run in `cwd`, with a clean configuration plus `env`.
pub fn command(cwd: &Path, env: &[(&str, String)]) -> Command {
    let mut cmd = Command::new(binary());
    cmd.current_dir(cwd);
    for k in CONFIG_KEYS {
        cmd.env_remove(k);
    }
    cmd.env("RUST_LOG", "warn");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Runs a CLI command to completion.
pub fn cli(cwd: &Path, env: &[(&str, String)], args: &[&str]) -> Output {
    command(cwd, env)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run reference-app")
}

/// `create-user --email <email> <extra>` with the password in `CRUDFORGE_PASSWORD` (the
/// command line refuses `--password`: every local user sees a process's arguments).
pub fn create_user(
    cwd: &Path,
    env: &[(&str, String)],
    email: &str,
    password: &str,
    extra: &[&str],
) -> Output {
    let mut args = vec!["create-user", "--email", email];
    args.extend_from_slice(extra);
    command(cwd, env)
        .env("CRUDFORGE_PASSWORD", password)
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .expect("run reference-app")
}

/// `create-token --email <email> <extra>` with the value in `CRUDFORGE_TOKEN` (the command
/// line refuses `--token`, as it refuses `--password`).
pub fn create_token(
    cwd: &Path,
    env: &[(&str, String)],
    email: &str,
    token: &str,
    extra: &[&str],
) -> Output {
    let mut args = vec!["create-token", "--email", email];
    args.extend_from_slice(extra);
    command(cwd, env)
        .env("CRUDFORGE_TOKEN", token)
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .expect("run reference-app")
}

/// A running server; killed when dropped.
pub struct Server {
    child: Child,
    pub base: String,
    pub addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port free on `127.0.0.1` now (for [`Server::start_on`]).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

impl Server {
    /// Starts `reference-app serve` in `cwd` and waits until it is ready (it listens at once
    /// and answers `/ready` with 200 once its migrations have run).
    pub fn start(cwd: &Path, env: &[(&str, String)]) -> Server {
        let mut server = Server::spawn(cwd, env, Stdio::inherit());
        server.wait_ready();
        server
    }

    /// Starts `reference-app serve` in `cwd` on `port` (see [`free_port`]) and waits until it
    /// is ready: for settings that name the server's own address (`http://127.0.0.1:<port>`).
    pub fn start_on(cwd: &Path, env: &[(&str, String)], port: u16) -> Server {
        let mut server = Server::spawn_on(cwd, env, Stdio::inherit(), port);
        server.wait_ready();
        server
    }

    /// Starts `reference-app serve` in `cwd` with its stderr going to `stderr`, without
    /// waiting.
    pub fn spawn(cwd: &Path, env: &[(&str, String)], stderr: Stdio) -> Server {
        Server::spawn_on(cwd, env, stderr, free_port())
    }

    /// [`Server::spawn`] on `port`.
    fn spawn_on(cwd: &Path, env: &[(&str, String)], stderr: Stdio, port: u16) -> Server {
        let addr = format!("127.0.0.1:{port}");
        let child = command(cwd, env)
            .args(["serve", "--bind", &addr])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("spawn reference-app");
        Server {
            child,
            base: format!("http://{addr}"),
            addr,
        }
    }

    /// Waits until the server answers `/ready` with 200.
    pub fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.try_wait() {
                panic!("reference-app exited early: {status}");
            }
            // A connection refused or reset (the server is still starting) is tried again.
            let ready = try_request(&self.addr, "GET", "/ready", &[], None);
            if ready.is_ok_and(|r| r.status == 200) {
                return;
            }
            assert!(Instant::now() < deadline, "reference-app did not get ready");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `GET path` while the server starts: until it answers, a connection refused (not
    /// listening yet), reset, aborted or closed without an answer is tried again every 20 ms,
    /// for up to 30 s. The first answer is returned whatever its status; the process exiting
    /// or any other error fails the test.
    pub fn get_starting(&mut self, path: &str) -> Reply {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.try_wait() {
                panic!("reference-app exited early: {status}");
            }
            match try_request(&self.addr, "GET", path, &[], None) {
                Ok(reply) => return reply,
                Err(e) if starting_up(&e) => {
                    assert!(
                        Instant::now() < deadline,
                        "reference-app did not answer GET {path}: {e}"
                    );
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("GET {path}: {e}"),
            }
        }
    }

    /// Whether the process has exited, and how.
    pub fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().expect("try_wait")
    }

    /// Sends SIGTERM, as an orchestrator stopping the instance does.
    pub fn terminate(&self) {
        let pid = self.child.id().to_string();
        let ok = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill");
        assert!(ok.success(), "kill -TERM {pid}");
    }

    pub fn get(&self, path: &str) -> Reply {
        request(&self.addr, "GET", path, &[], None)
    }
}

/// Whether a request failed the way one does while a server is still starting: nothing listens
/// yet, or the connection was dropped before an answer.
fn starting_up(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{
        BrokenPipe, ConnectionAborted, ConnectionRefused, ConnectionReset, UnexpectedEof,
    };
    matches!(
        e.kind(),
        ConnectionRefused | ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
    )
}

/// A parsed HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// One HTTP/1.1 request with `Connection: close`.
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Reply {
    try_request(addr, method, path, headers, body).expect("request")
}

/// [`request`], with connection errors returned instead of panicking.
pub fn try_request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> std::io::Result<Reply> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        head.push_str(&format!("Content-Length: {}\r\n", b.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    if let Some(b) = body {
        stream.write_all(b)?;
    }
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    if raw.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the connection closed without an answer",
        ));
    }
    Ok(parse(&raw))
}

fn parse(raw: &[u8]) -> Reply {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("end of headers");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    Reply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size_text = String::from_utf8_lossy(&data[..eol]).into_owned();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("0").trim(), 16)
            .unwrap_or(0);
        if size == 0 {
            return out;
        }
        let start = eol + 2;
        out.extend_from_slice(&data[start..start + size]);
        data = &data[start + size + 2..];
    }
}

/// A headless Chromium, if this machine has one. With `CRUDFORGE_REQUIRE_BROWSER=1` a missing
/// browser fails the test instead of skipping it.
pub fn chromium() -> Option<PathBuf> {
    let candidates = [
        std::env::var("CRUDFORGE_CHROMIUM").unwrap_or_default(),
        "/usr/bin/chromium".into(),
        "/usr/bin/chromium-browser".into(),
        "/usr/bin/google-chrome".into(),
    ];
    let found = candidates
        .iter()
        .filter(|c| !c.is_empty())
        .map(PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var("CRUDFORGE_REQUIRE_BROWSER").as_deref() != Ok("1"),
            "CRUDFORGE_REQUIRE_BROWSER=1 but no Chromium was found"
        );
        eprintln!("skipped: no headless Chromium on this machine");
    }
    found
}

/// Loads `url` in headless Chromium, lets its scripts run, and returns the rendered DOM.
/// Also writes a screenshot to `screenshot`.
pub fn render(browser: &Path, url: &str, screenshot: &Path) -> String {
    let profile = tempfile::tempdir().expect("profile dir");
    let common = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--virtual-time-budget=15000",
    ];
    let user_dir = format!("--user-data-dir={}", profile.path().display());
    let out = Command::new(browser)
        .args(common)
        .arg(&user_dir)
        .arg("--dump-dom")
        .arg(url)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("run chromium");
    let shot = format!("--screenshot={}", screenshot.display());
    let _ = Command::new(browser)
        .args(common)
        .arg(&user_dir)
        .arg("--window-size=1280,900")
        .arg(shot)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A PostgreSQL database of the test's own (dropped with it) when `CRUDFORGE_TEST_POSTGRES_URL`
/// is set, made on a runtime of its own: the end-to-end tests are synchronous.
pub fn postgres_db() -> Option<crudforge_tests::TestDb> {
    crudforge_tests::postgres_url()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    Some(
        rt.block_on(crudforge_tests::TestDb::postgres())
            .expect("CRUDFORGE_TEST_POSTGRES_URL is set"),
    )
}

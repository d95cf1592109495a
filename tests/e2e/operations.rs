//! Running the reference application in production, over real HTTP on SQLite: JSON log lines
//! with request and operation ids and no secrets, a Prometheus scrape, CORS on a preflight,
//! and a graceful stop on SIGTERM.

use crate::harness::{request, Server};
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::{Duration, Instant};

const PASSWORD: &str = "pass-w0rd-never-logged";
const METRICS_TOKEN: &str = "metrics-token-never-logged";
const ORIGIN: &str = "https://app.example.com";

fn post(
    server: &Server,
    path: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> crate::harness::Reply {
    let mut h = vec![("Content-Type", "application/json")];
    h.extend_from_slice(headers);
    request(
        &server.addr,
        "POST",
        path,
        &h,
        Some(&serde_json::to_vec(&body).unwrap()),
    )
}

/// Samples of a scrape by metric name, summed over labels that begin with `want`.
fn sample(text: &str, name: &str, want: &[(&str, &str)]) -> f64 {
    let parsed = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
        .expect("Prometheus text format");
    parsed
        .samples
        .iter()
        .filter(|s| {
            s.metric == name
                && want
                    .iter()
                    .all(|(k, v)| s.labels.get(k).is_some_and(|l| l.starts_with(v)))
        })
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => 0.0,
        })
        .sum()
}

#[test]
fn json_logs_metrics_cors_and_a_graceful_stop() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("stderr.log");
    let env = vec![
        ("BCRYPT_COST", "4".to_owned()),
        ("JWT_SECRET_KEY", crudforge_tests::TEST_SECRET.to_owned()),
        ("LOG_FORMAT", "json".to_owned()),
        ("RUST_LOG", "info".to_owned()),
        ("METRICS_ENABLED", "true".to_owned()),
        ("METRICS_TOKEN", METRICS_TOKEN.to_owned()),
        ("CORS_ALLOWED_ORIGINS", ORIGIN.to_owned()),
        ("SHUTDOWN_TIMEOUT", "5".to_owned()),
    ];
    let out = crate::harness::create_user(dir.path(), &env, "ann@example.com", PASSWORD, &[]);
    assert!(out.status.success(), "create-user");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut server = Server::spawn(dir.path(), &env, Stdio::from(log));
    server.wait_ready();

    // A login, a refresh and an authenticated call, each with a request id of ours.
    let login = post(
        &server,
        "/api/user/login/",
        &[("X-Request-Id", "e2e-login-1")],
        json!({"email": "ann@example.com", "password": PASSWORD}),
    );
    assert_eq!(login.status, 200, "{}", login.text());
    assert_eq!(login.header("x-request-id"), Some("e2e-login-1"));
    let tokens = login.json();
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let renewed = post(
        &server,
        "/api/user/refresh/",
        &[],
        json!({"refresh_token": refresh}),
    );
    assert_eq!(renewed.status, 200);
    let bearer = format!("Bearer {access}");
    let me = request(
        &server.addr,
        "GET",
        "/api/user/me",
        &[("Authorization", &bearer), ("X-Request-Id", "e2e-me-2")],
        None,
    );
    assert_eq!(me.status, 200);
    let wrong = post(
        &server,
        "/api/user/login/",
        &[("X-Request-Id", "bad id with spaces")],
        json!({"email": "ann@example.com", "password": "wrong-guess"}),
    );
    assert_eq!(wrong.status, 401);
    let generated = wrong.header("x-request-id").unwrap().to_owned();
    assert_eq!(wrong.json()["request_id"], generated.as_str());

    // A preflight from the configured origin.
    let pre = request(
        &server.addr,
        "OPTIONS",
        "/api/critters/",
        &[
            ("Origin", ORIGIN),
            ("Access-Control-Request-Method", "POST"),
            (
                "Access-Control-Request-Headers",
                "authorization, content-type, if-match",
            ),
        ],
        None,
    );
    assert!(pre.status < 300, "preflight {}", pre.status);
    assert_eq!(pre.header("access-control-allow-origin"), Some(ORIGIN));
    assert_eq!(pre.header("access-control-allow-credentials"), Some("true"));

    // Metrics: the token is needed; the counts moved.
    assert_eq!(server.get("/metrics").status, 401);
    let auth = format!("Bearer {METRICS_TOKEN}");
    let scrape = request(
        &server.addr,
        "GET",
        "/metrics",
        &[("Authorization", &auth)],
        None,
    );
    assert_eq!(scrape.status, 200);
    let text = scrape.text();
    let login_ok = [
        ("operation", "login"),
        ("method", "POST"),
        ("status", "2xx"),
    ];
    assert_eq!(
        sample(&text, "crudforge_http_requests_total", &login_ok),
        1.0,
        "{text}"
    );
    let login_bad = [("operation", "login"), ("status", "4xx")];
    assert_eq!(
        sample(&text, "crudforge_http_requests_total", &login_bad),
        1.0,
        "{text}"
    );
    assert!(sample(&text, "crudforge_login_failures_total", &[]) >= 1.0);
    assert!(sample(&text, "crudforge_db_queries_total", &[]) >= 1.0);
    assert_eq!(sample(&text, "crudforge_build_info", &[]), 1.0);

    // SIGTERM: readiness goes 503, the process exits cleanly within the timeout.
    server.terminate();
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(s) = server.try_wait() {
            break s;
        }
        assert!(Instant::now() < deadline, "did not stop after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "exit status {status}");

    // Every line is one JSON object; each request has a line with its ids, status and time.
    let logged = std::fs::read_to_string(&log_path).unwrap();
    let lines: Vec<Value> = logged
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let requests: Vec<&Value> = lines
        .iter()
        .filter(|l| l["target"] == "crudforge::access")
        .collect();
    let line_of = |id: &str| {
        requests
            .iter()
            .find(|l| l["request_id"] == id)
            .unwrap_or_else(|| panic!("no access line for {id}: {logged}"))
    };
    let l = line_of("e2e-login-1");
    assert_eq!(l["status"], 200);
    assert_eq!(l["method"], "POST");
    assert!(
        l["operation_id"].as_str().unwrap().starts_with("login"),
        "{l}"
    );
    assert!(l["duration_ms"].as_f64().unwrap() >= 0.0);
    assert_eq!(l["span"]["request_id"], "e2e-login-1");
    let l = line_of("e2e-me-2");
    assert_eq!(l["status"], 200);
    assert_eq!(l["operation_id"], "getCurrentUser", "{l}");
    assert_eq!(line_of(&generated)["status"], 401);
    assert!(lines.iter().any(|l| l["message"]
        .as_str()
        .is_some_and(|m| m.starts_with("shutting down"))));
    // No secret reaches the log.
    for secret in [
        PASSWORD,
        "wrong-guess",
        METRICS_TOKEN,
        crudforge_tests::TEST_SECRET,
        access.as_str(),
        refresh.as_str(),
    ] {
        assert!(!logged.contains(secret), "a secret is in the log");
    }
}

//! Running in production, on both backends: Prometheus metrics (off by default, token,
//! counts that move), request ids (kept, replaced, in problems), CORS (preflights, errors,
//! wildcard without credentials) and readiness (starting, ready, draining).
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::test;
use crudforge::config::Secret;
use crudforge::users::{self, UserBlueprint};
use crudforge::{Api, Config};
use crudforge_tests::{backend_tests, TestDb};
use serde_json::{json, Value};
use std::collections::BTreeMap;

const COST: u32 = 4;
const METRICS_TOKEN: &str = "scrape-token-0123456789";

async fn api(t: &TestDb, tune: impl FnOnce(Config) -> Config) -> Api {
    let cfg = tune(t.config().with(|c| {
        c.auth.bcrypt_cost = COST;
        c.auth.login_max_failures_per_account = 2;
    }));
    let db = t.open(&cfg).await;
    users::create_user(&db, "alice@example.com", "alice-pass", true, COST)
        .await
        .unwrap();
    Api::new(cfg, db)
        .unwrap()
        .mount(UserBlueprint::default())
        .unwrap()
}

struct Answer {
    status: StatusCode,
    headers: BTreeMap<String, String>,
    text: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }
}

async fn send<S, B>(app: &S, req: test::TestRequest) -> Answer
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let resp = test::call_service(app, req.to_request()).await;
    let status = resp.status();
    let headers = resp
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let bytes = test::read_body(resp).await;
    Answer {
        status,
        headers,
        text: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// The samples of a scrape: (metric name, labels) to value.
fn scrape(text: &str) -> Vec<(String, BTreeMap<String, String>, f64)> {
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let parsed = prometheus_parse::Scrape::parse(lines).expect("Prometheus text format");
    parsed
        .samples
        .into_iter()
        .map(|s| {
            let value = match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                prometheus_parse::Value::Histogram(h) => {
                    h.iter().map(|b| b.count).fold(0.0, f64::max)
                }
                prometheus_parse::Value::Summary(_) => 0.0,
            };
            let labels = s
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            (s.metric, labels, value)
        })
        .collect()
}

/// The value of `name` whose labels include `want`.
fn value(
    samples: &[(String, BTreeMap<String, String>, f64)],
    name: &str,
    want: &[(&str, &str)],
) -> f64 {
    samples
        .iter()
        .filter(|(n, labels, _)| {
            n == name
                && want
                    .iter()
                    .all(|(k, v)| labels.get(*k).map(String::as_str) == Some(v))
        })
        .map(|(_, _, v)| *v)
        .sum()
}

fn login(password: &str) -> test::TestRequest {
    test::TestRequest::post()
        .uri("/api/users/login/")
        .set_json(json!({"email": "alice@example.com", "password": password}))
}

fn metrics_request() -> test::TestRequest {
    test::TestRequest::get()
        .uri("/metrics")
        .insert_header(("Authorization", format!("Bearer {METRICS_TOKEN}")))
}

backend_tests! {
    async fn metrics_are_off_by_default(t) {
        let api = api(&t, |c| c).await;
        let app = test::init_service(api.app()).await;
        let a = send(&app, test::TestRequest::get().uri("/metrics")).await;
        assert_eq!(a.status, 404);
    }

    async fn metrics_want_the_token_and_count_what_happens(t) {
        let api = api(&t, |c| c.with(|c| {
            c.ops.metrics_enabled = true;
            c.ops.metrics_token = Some(Secret::new(METRICS_TOKEN));
        }))
        .await;
        let app = test::init_service(api.app()).await;
        let refused = send(&app, test::TestRequest::get().uri("/metrics")).await;
        assert_eq!(refused.status, 401);
        assert_eq!(refused.json()["status"], 401);
        let wrong = send(
            &app,
            test::TestRequest::get()
                .uri("/metrics")
                .insert_header(("Authorization", "Bearer nope")),
        )
        .await;
        assert_eq!(wrong.status, 401);

        let before = send(&app, metrics_request()).await;
        assert_eq!(before.status, 200);
        assert!(before.header("content-type").unwrap().starts_with("text/plain"));
        let before = scrape(&before.text);

        // One good login, two failures, then the account is throttled.
        assert_eq!(send(&app, login("alice-pass")).await.status, 200);
        assert_eq!(send(&app, login("guess")).await.status, 401);
        assert_eq!(send(&app, login("guess")).await.status, 401);
        assert_eq!(send(&app, login("guess")).await.status, 429);
        // Each answer is counted under the operation of the route that answered it.
        let unmatched = send(&app, test::TestRequest::get().uri("/nowhere/7")).await;
        assert_eq!(unmatched.status, 404);
        let put = send(&app, test::TestRequest::put().uri("/health")).await;
        assert!(put.status.is_client_error(), "{}", put.status);
        assert_eq!(send(&app, test::TestRequest::get().uri("/api/users/me/")).await.status, 401);
        let item = format!("/api/users/{}", uuid::Uuid::new_v4());
        assert_eq!(send(&app, test::TestRequest::get().uri(&item)).await.status, 401);

        let after = send(&app, metrics_request()).await;
        let after = scrape(&after.text);
        let moved = |name: &str, labels: &[(&str, &str)]| {
            value(&after, name, labels) - value(&before, name, labels)
        };
        let login_ok = [("operation", "loginUser"), ("method", "POST"), ("status", "2xx")];
        let login_bad = [("operation", "loginUser"), ("method", "POST"), ("status", "4xx")];
        assert!(moved("crudforge_http_requests_total", &login_ok) >= 1.0);
        assert!(moved("crudforge_http_requests_total", &login_bad) >= 3.0);
        assert!(moved("crudforge_http_request_duration_seconds_count", &login_bad) >= 3.0);
        let labels = |op, method| [("operation", op), ("method", method), ("status", "4xx")];
        assert!(moved("crudforge_http_requests_total", &labels("unmatched", "GET")) >= 1.0);
        assert!(moved("crudforge_http_requests_total", &labels("undocumented", "PUT")) >= 1.0);
        assert!(moved("crudforge_http_requests_total", &labels("getCurrentUser", "GET")) >= 1.0);
        // A route with a parameter is named from the route that answered it.
        assert!(moved("crudforge_http_requests_total", &labels("getUser", "GET")) >= 1.0);
        assert!(moved("crudforge_login_failures_total", &[]) >= 2.0);
        assert!(moved("crudforge_throttled_total", &[]) >= 1.0);
        assert!(moved("crudforge_db_queries_total", &[]) >= 4.0);
        assert!(moved("crudforge_db_query_duration_seconds_count", &[]) >= 4.0);
        assert!(value(&after, "crudforge_db_pool_connections", &[]) >= 1.0);
        assert!(after.iter().any(|(n, _, _)| n == "crudforge_db_pool_in_use"));
        assert!(after.iter().any(|(n, _, _)| n == "crudforge_db_pool_waiting"));
        assert_eq!(value(&after, "crudforge_build_info", &[("api_version", "1.0.0")]), 1.0);
        // Ids in paths never become labels.
        assert!(after.iter().all(|(_, labels, _)| labels
            .get("operation")
            .is_none_or(|op| !op.contains('/'))));
    }

    async fn request_ids_are_kept_when_safe_and_reach_problems(t) {
        let api = api(&t, |c| c).await;
        let app = test::init_service(api.app()).await;
        let kept = send(
            &app,
            test::TestRequest::get()
                .uri("/api/users/me/")
                .insert_header(("X-Request-Id", "trace-42.a_b")),
        )
        .await;
        assert_eq!(kept.status, 401);
        assert_eq!(kept.header("x-request-id"), Some("trace-42.a_b"));
        assert_eq!(kept.json()["request_id"], "trace-42.a_b");

        let long = "x".repeat(129);
        for bad in ["has space", "semi;colon", long.as_str()] {
            let a = send(
                &app,
                test::TestRequest::get()
                    .uri("/nowhere")
                    .insert_header(("X-Request-Id", bad)),
            )
            .await;
            assert_eq!(a.status, 404);
            let id = a.header("x-request-id").unwrap();
            assert!(uuid::Uuid::parse_str(id).is_ok(), "{bad:?} became {id}");
            assert_eq!(a.json()["request_id"], id);
        }
        let fresh = send(&app, test::TestRequest::get().uri("/health")).await;
        assert!(uuid::Uuid::parse_str(fresh.header("x-request-id").unwrap()).is_ok());
    }

    async fn cors_answers_preflights_and_marks_every_answer(t) {
        let origin = "https://app.example.com";
        let api = api(&t, |c| c.with(|c| c.http.cors_allowed_origins = vec![origin.to_owned()]))
        .await;
        let app = test::init_service(api.app()).await;
        let preflight = send(
            &app,
            test::TestRequest::default()
                .method(actix_web::http::Method::OPTIONS)
                .uri("/api/users/login/")
                .insert_header(("Origin", origin))
                .insert_header(("Access-Control-Request-Method", "POST"))
                .insert_header(("Access-Control-Request-Headers", "content-type, authorization")),
        )
        .await;
        assert!(preflight.status.is_success(), "{}", preflight.status);
        assert_eq!(preflight.header("access-control-allow-origin"), Some(origin));
        assert_eq!(preflight.header("access-control-allow-credentials"), Some("true"));
        assert!(preflight
            .header("access-control-allow-methods")
            .unwrap()
            .contains("POST"));

        // An error answer carries the headers too.
        let error = send(
            &app,
            login("guess").insert_header(("Origin", origin)),
        )
        .await;
        assert_eq!(error.status, 401);
        assert_eq!(error.header("access-control-allow-origin"), Some(origin));
        assert!(error
            .header("access-control-expose-headers")
            .unwrap()
            .contains("x-request-id"));

        // Another origin gets no CORS headers (the browser refuses), but is still served.
        let other = send(
            &app,
            test::TestRequest::get()
                .uri("/health")
                .insert_header(("Origin", "https://evil.example.com")),
        )
        .await;
        assert_eq!(other.status, 200);
        assert_eq!(other.header("access-control-allow-origin"), None);
    }

    async fn cors_is_off_by_default_and_a_wildcard_sends_no_credentials(t) {
        let api_off = api(&t, |c| c).await;
        let app = test::init_service(api_off.app()).await;
        let a = send(
            &app,
            test::TestRequest::get()
                .uri("/health")
                .insert_header(("Origin", "https://app.example.com")),
        )
        .await;
        assert!(a.headers.keys().all(|k| !k.starts_with("access-control-")));

        let cfg = t.config().with(|c| c.http.cors_allowed_origins = vec!["*".to_owned()]);
        let db = t.open(&cfg).await;
        let wild = Api::new(cfg, db).unwrap();
        let app = test::init_service(wild.app()).await;
        let a = send(
            &app,
            test::TestRequest::default()
                .method(actix_web::http::Method::OPTIONS)
                .uri("/health")
                .insert_header(("Origin", "https://anywhere.example"))
                .insert_header(("Access-Control-Request-Method", "GET")),
        )
        .await;
        assert_eq!(a.header("access-control-allow-origin"), Some("*"));
        assert_eq!(a.header("access-control-allow-credentials"), None);
    }

    async fn readiness_follows_start_and_shutdown_while_health_keeps_its_contract(t) {
        let api = api(&t, |c| c.with(|c| c.ops.readiness_path = "/readyz".to_owned())).await;
        let app = test::init_service(api.app()).await;
        let ready = send(&app, test::TestRequest::get().uri("/readyz")).await;
        assert_eq!(ready.status, 200);
        assert_eq!(ready.json(), json!({"status": "ready", "database": "connected"}));

        api.readiness().set_starting();
        let starting = send(&app, test::TestRequest::get().uri("/readyz")).await;
        assert_eq!(starting.status, 503);
        assert_eq!(starting.json()["status"], "starting");

        api.readiness().set_ready();
        assert_eq!(send(&app, test::TestRequest::get().uri("/readyz")).await.status, 200);

        api.readiness().begin_shutdown();
        api.readiness().set_ready();
        let draining = send(&app, test::TestRequest::get().uri("/readyz")).await;
        assert_eq!(draining.status, 503);
        assert_eq!(draining.json()["status"], "draining");
        // /health answers as before.
        let health = send(&app, test::TestRequest::get().uri("/health")).await;
        assert_eq!(health.status, 200);
        assert_eq!(health.json()["status"], "healthy");
        // The readiness route is described.
        let spec = send(&app, test::TestRequest::get().uri("/openapi.json")).await;
        assert_eq!(spec.json()["paths"]["/readyz"]["get"]["operationId"], "readiness");
    }
}

/// A PostgreSQL server nobody listens on: the pool connects lazily, so the API starts and
/// readiness reports the outage.
#[actix_web::test]
async fn readiness_is_503_while_the_database_is_unreachable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let cfg = Config::default().with(|c| {
        c.db.database_uri = Some(format!("postgres://nobody@127.0.0.1:{port}/none"));
        c.auth.jwt_secret_key = Some(Secret::new(crudforge_tests::TEST_SECRET));
    });
    let db = crudforge::Database::connect(&cfg).await.unwrap();
    let api = Api::new(cfg, db).unwrap();
    let app = test::init_service(api.app()).await;
    let ready = send(&app, test::TestRequest::get().uri("/ready")).await;
    assert_eq!(ready.status, 503);
    assert_eq!(
        ready.json(),
        json!({"status": "unavailable", "database": "disconnected"})
    );
    assert_eq!(ready.header("retry-after"), Some("5"));
    let health = send(&app, test::TestRequest::get().uri("/health")).await;
    assert_eq!(health.status, 503);
}

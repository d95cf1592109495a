//! Prometheus metrics: requests by operation id, the database pool and queries, login
//! failures and throttled answers, build info, and what optional surfaces register (the event
//! streams' gauges); served in the text format at `METRICS_PATH`.
//!
//! The metrics live in one registry per process ([`global`]), so the database and
//! authentication layers record into it without reaching up to the [`Api`](crate::Api).

use crate::error::Error;
use crate::operation::Pending;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{HttpRequest, HttpResponse};
use prometheus::core::Collector;
use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};
use std::sync::LazyLock;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// The metrics of this process.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    request_duration: HistogramVec,
    pool_size: IntGauge,
    pool_in_use: IntGauge,
    pool_waiting: IntGauge,
    queries: IntCounter,
    query_duration: Histogram,
    statements_cached: IntCounter,
    statements_uncached: IntCounter,
    login_failures: IntCounter,
    throttled: IntCounter,
    build_info: IntGaugeVec,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// The metrics of this process.
pub fn global() -> &'static Metrics {
    &METRICS
}

const REQUEST_LABELS: &[&str] = &["operation", "method", "status"];

impl Metrics {
    fn new() -> Metrics {
        let r = Registry::new();
        Metrics {
            requests: add(
                &r,
                IntCounterVec::new(
                    Opts::new(
                        "crudforge_http_requests_total",
                        "HTTP requests answered, by operation id, method and status class.",
                    ),
                    REQUEST_LABELS,
                ),
            ),
            request_duration: add(
                &r,
                HistogramVec::new(
                    HistogramOpts::new(
                        "crudforge_http_request_duration_seconds",
                        "Time to answer HTTP requests, by operation id, method and status class.",
                    ),
                    REQUEST_LABELS,
                ),
            ),
            pool_size: add(
                &r,
                IntGauge::new(
                    "crudforge_db_pool_connections",
                    "Open connections in the database pool.",
                ),
            ),
            pool_in_use: add(
                &r,
                IntGauge::new(
                    "crudforge_db_pool_in_use",
                    "Connections of the pool checked out now.",
                ),
            ),
            pool_waiting: add(
                &r,
                IntGauge::new(
                    "crudforge_db_pool_waiting",
                    "Requests waiting for a connection of the pool.",
                ),
            ),
            queries: add(
                &r,
                IntCounter::new("crudforge_db_queries_total", "Database queries run."),
            ),
            query_duration: add(
                &r,
                Histogram::with_opts(HistogramOpts::new(
                    "crudforge_db_query_duration_seconds",
                    "Time database queries took.",
                )),
            ),
            statements_cached: add(
                &r,
                IntCounter::new(
                    "crudforge_db_statements_cached_total",
                    "Statements prepared into a pooled connection's statement cache.",
                ),
            ),
            statements_uncached: add(
                &r,
                IntCounter::new(
                    "crudforge_db_uncached_statements_total",
                    "Per-request queries run as one-off statements because their shape is not \
                     admitted to the statement cache (too many shapes, or too many terms).",
                ),
            ),
            login_failures: add(
                &r,
                IntCounter::new(
                    "crudforge_login_failures_total",
                    "Failed credential checks (wrong password, unknown account, bad token).",
                ),
            ),
            throttled: add(
                &r,
                IntCounter::new(
                    "crudforge_throttled_total",
                    "Credential checks refused with 429 because of too many failures.",
                ),
            ),
            build_info: add(
                &r,
                IntGaugeVec::new(
                    Opts::new(
                        "crudforge_build_info",
                        "Always 1; the labels name the crudforge version and the API version.",
                    ),
                    &["version", "api_version"],
                ),
            ),
            registry: r,
        }
    }

    /// Registers a metric of an optional surface (the event streams') in the process's
    /// registry, beside the core's.
    #[allow(
        dead_code,
        reason = "a door of the seam: a build without optional surfaces leaves it unused"
    )]
    pub(crate) fn register<C: Collector + Clone + 'static>(
        &self,
        made: prometheus::Result<C>,
    ) -> C {
        add(&self.registry, made)
    }

    /// Counts an answered request.
    pub(crate) fn observe_request(
        &self,
        operation: &str,
        method: &Method,
        status: StatusCode,
        took: Duration,
    ) {
        let labels = [operation, method_label(method), status_class(status)];
        self.requests.with_label_values(&labels).inc();
        self.request_duration
            .with_label_values(&labels)
            .observe(took.as_secs_f64());
    }

    /// Counts a finished query.
    pub(crate) fn observe_query(&self, took: Duration) {
        self.queries.inc();
        self.query_duration.observe(took.as_secs_f64());
    }

    /// Counts a statement prepared into a connection's statement cache.
    pub(crate) fn statement_cached(&self) {
        self.statements_cached.inc();
    }

    /// Counts a per-request query run as a one-off statement (see
    /// `statement_cache`).
    pub(crate) fn statement_uncached(&self) {
        self.statements_uncached.inc();
    }

    /// Counts a failed credential check.
    pub(crate) fn login_failed(&self) {
        self.login_failures.inc();
    }

    /// Counts a credential check refused with 429.
    pub(crate) fn throttled(&self) {
        self.throttled.inc();
    }

    /// The registry, for applications that add metrics of their own.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Everything in the Prometheus text format, with the pool gauges set from `pool` (size,
    /// in use, waiting) and the build info labelled with `api_version`.
    pub(crate) fn render(&self, pool: (usize, usize, usize), api_version: &str) -> String {
        let (size, in_use, waiting) = pool;
        let gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.pool_size.set(gauge(size));
        self.pool_in_use.set(gauge(in_use));
        self.pool_waiting.set(gauge(waiting));
        self.build_info.reset();
        self.build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION"), api_version])
            .set(1);
        let mut out = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::error!(error = %e, "encoding metrics");
        }
        String::from_utf8(out).unwrap_or_default()
    }
}

/// Registers a metric just made in `registry` and hands it back. The names and help texts
/// are constants of this module, so neither step can fail at run time.
fn add<C: Collector + Clone + 'static>(registry: &Registry, made: prometheus::Result<C>) -> C {
    let metric = made.expect("valid metric");
    registry
        .register(Box::new(metric.clone()))
        .expect("unique metric");
    metric
}

/// The method as a label: one of the standard methods, or `OTHER`.
fn method_label(m: &Method) -> &'static str {
    match *m {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

/// `2xx`, `4xx`, ...
fn status_class(s: StatusCode) -> &'static str {
    match s.as_u16() / 100 {
        1 => "1xx",
        2 => "2xx",
        3 => "3xx",
        4 => "4xx",
        _ => "5xx",
    }
}

/// Counts and times every request by operation id, method and status class.
///
/// # Errors
///
/// The inner service's error (counted with its status).
pub(crate) async fn track(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let started = Instant::now();
    let pending = Pending::of(&req);
    let res = next.call(req).await;
    let operation = pending.answered(&res);
    let status = match &res {
        Ok(r) => r.status(),
        Err(e) => e.as_response_error().status_code(),
    };
    global().observe_request(&operation, pending.method(), status, started.elapsed());
    res.map(ServiceResponse::map_into_boxed_body)
}

/// Whether a request to the metrics route carries the configured bearer token (always, when
/// none is configured); compared in constant time.
pub(crate) fn authorized(req: &HttpRequest, token: Option<&crate::config::Secret>) -> bool {
    let Some(token) = token else {
        return true;
    };
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    bool::from(given.as_bytes().ct_eq(token.expose()))
}

/// The 401 of a metrics request without the token, with `WWW-Authenticate: Bearer`.
pub(crate) fn unauthorized() -> HttpResponse {
    let mut res = Error::Unauthorized("A valid metrics token is required.".into())
        .problem()
        .into_response();
    res.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    res
}

/// The body of the metrics route: the text format, with the pool gauges read now.
pub(crate) fn text(pool: (usize, usize, usize), api_version: &str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(global().render(pool, api_version))
}

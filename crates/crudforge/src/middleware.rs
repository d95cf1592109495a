//! The middlewares every [`Api`](crate::Api) wraps its routes in, one concern each.
//!
//! Outside these, [`request_id`](crate::request_id::request_id) gives each request its id and
//! span, [`cors`](crate::cors) answers browsers, and [`metrics`](crate::metrics::track) and
//! [`access_log`](crate::logging::access_log) observe every answer.
//! From the outside in: [`problems`] turns every error answer into problem+json,
//! [`query_timing`] measures the request's queries into `Server-Timing` when monitoring is on,
//! and [`own_task`] runs the rest of the request as a task of its own. Add a new cross-cutting
//! concern (metrics, request ids) as another function here and wrap it in
//! [`Api::app`](crate::Api::app).

use crate::db::monitor::QueryStats;
use crate::error::{Error, Problem, ProblemError, PROBLEM_CONTENT_TYPE};
use crate::request_id::RequestId;
use crate::state::ApiState;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage, HttpResponse};
use std::sync::Arc;
use tracing::Instrument;

/// Runs the request as a task of its own, so it finishes even when the connection's future is
/// dropped (a client that goes away): a write runs to its commit and its after-commit hooks
/// run, rather than stopping at whichever await the client left it.
///
/// # Errors
///
/// The inner service's error, or a 500 problem when the task itself failed.
pub(crate) async fn own_task(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    // The task keeps counting queries towards the request's statistics, if any.
    let stats = req.extensions().get::<Arc<QueryStats>>().cloned();
    // The task keeps the request's span (and so its request id) on its log lines.
    let span = tracing::Span::current();
    let task = match stats {
        Some(stats) => actix_web::rt::spawn(
            async move { QueryStats::scope(stats, next.call(req)).await }.instrument(span),
        ),
        None => actix_web::rt::spawn(next.call(req).instrument(span)),
    };
    let res = task
        .await
        .map_err(|e| actix_web::Error::from(Error::Internal(format!("request task: {e}"))))??;
    Ok(res.map_into_boxed_body())
}

/// Bounds the time a request may take, its body included (`REQUEST_TIMEOUT`): past it the
/// handler is dropped (an open transaction is rolled back with its connection) and the client
/// receives 408 problem+json.
///
/// # Errors
///
/// The inner service's error.
pub(crate) async fn request_timeout(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let limit = req
        .app_data::<web::Data<ApiState>>()
        .map(|s| std::time::Duration::from_secs(s.config.http.request_timeout));
    let Some(limit) = limit else {
        return Ok(next.call(req).await?.map_into_boxed_body());
    };
    match actix_web::rt::time::timeout(limit, next.call(req)).await {
        Ok(res) => Ok(res?.map_into_boxed_body()),
        Err(_) => Err(crate::error::Error::RequestTimeout(
            "The request took longer than the service allows (REQUEST_TIMEOUT).".into(),
        )
        .into()),
    }
}

/// The last segments of endpoints that check credentials (login, refresh, logout, password
/// change, token login, recovery, a provider's callback): answers there never carry
/// `Server-Timing`.
const CREDENTIAL_ENDPOINTS: &[&str] = &[
    "login",
    "callback",
    "refresh",
    "logout",
    "password",
    "token_login",
    "send_recovery_token",
    "reset_password",
];

/// Whether `path` (a route pattern, or a path as routed) names a credential-checking endpoint
/// (see `CREDENTIAL_ENDPOINTS`).
pub(crate) fn is_credential_path(path: &str) -> bool {
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .is_some_and(|last| CREDENTIAL_ENDPOINTS.contains(&last))
}

/// With query monitoring on, counts and times the request's queries and reports them in a
/// `Server-Timing` header (`db;dur=…;desc="N queries"`).
///
/// # Errors
///
/// The inner service's error.
pub(crate) async fn query_timing(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let monitoring = req
        .app_data::<web::Data<ApiState>>()
        .is_some_and(|s| s.db.monitoring());
    if !monitoring {
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    let stats = Arc::new(QueryStats::default());
    req.extensions_mut().insert(stats.clone());
    let mut res = QueryStats::scope(stats.clone(), next.call(req))
        .await?
        .map_into_boxed_body();
    // Authentication endpoints never carry it: a query count would tell a known e-mail (or a
    // stored token) from an unknown one. Judged by the route the request matched, known only
    // after routing: the raw path may spell the same route differently
    // (`send_recovery_toke%6e`).
    if is_credential_route(&res) {
        return Ok(res);
    }
    let value = format!(
        "db;dur={:.3};desc=\"{} queries\"",
        stats.total().as_secs_f64() * 1000.0,
        stats.count()
    );
    if let Ok(v) = HeaderValue::from_str(&value) {
        res.headers_mut()
            .insert(header::HeaderName::from_static("server-timing"), v);
    }
    Ok(res)
}

/// Whether the answered request was routed to a credential-checking endpoint: by the pattern
/// of the route it matched, or, when it matched none, by its path.
fn is_credential_route<B>(res: &ServiceResponse<B>) -> bool {
    let req = res.request();
    match req.match_pattern() {
        Some(pattern) => is_credential_path(&pattern),
        None => is_credential_path(req.path()),
    }
}

/// Turns every error response into problem+json with `instance` (and `debug` in debug mode).
///
/// # Errors
///
/// The inner service's error, which already renders as problem+json.
pub(crate) async fn problems(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let debug = req
        .app_data::<web::Data<ApiState>>()
        .is_some_and(|s| s.config.http.debug);
    // Handler and extractor errors arrive as responses; an `Err` here comes from another
    // middleware and already renders as problem+json through its `ResponseError`.
    let res = next.call(req).await?.map_into_boxed_body();
    let status = res.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return Ok(res);
    }
    let known = res.response().extensions().get::<Problem>().cloned();
    // A handler's own error body (JSON, such as the health report) stays; bare or plain-text
    // error responses from the framework become problems.
    let own_body = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| !ct.starts_with("text/plain") && !ct.starts_with(PROBLEM_CONTENT_TYPE));
    if known.is_none() && own_body {
        return Ok(res);
    }
    let mut problem = known.unwrap_or_else(|| Problem::from_status(status));
    // The path and the request id, read from the request the answer carries (only errors
    // need them).
    if problem.instance.is_empty() {
        problem.instance = res.request().path().to_owned();
    }
    if problem.request_id.is_none() {
        problem.request_id = res
            .request()
            .extensions()
            .get::<RequestId>()
            .map(|id| id.0.clone());
    }
    if debug && problem.debug.is_none() {
        // DEBUG mode: every problem says what went wrong and where (never SQL or secrets:
        // only the problem's own kind and message, the route and the method).
        let route = res
            .request()
            .match_pattern()
            .unwrap_or_else(|| "(no route)".to_owned());
        problem.debug = Some(format!(
            "kind: {}; message: {}; route: {}; operation: {} {}",
            problem.type_.trim_start_matches("/errors/"),
            problem.detail,
            route,
            res.request().method(),
            route
        ));
    }
    let body = problem.to_body(debug);
    let (req, old) = res.into_parts();
    let mut new = HttpResponse::build(status);
    for (name, value) in old.headers() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            new.append_header((name.clone(), value.clone()));
        }
    }
    new.insert_header((
        header::CONTENT_TYPE,
        HeaderValue::from_static(PROBLEM_CONTENT_TYPE),
    ));
    let mut new = new.body(body);
    new.extensions_mut().insert(problem);
    Ok(ServiceResponse::new(req, new))
}

impl From<Problem> for actix_web::Error {
    fn from(p: Problem) -> Self {
        ProblemError(p).into()
    }
}

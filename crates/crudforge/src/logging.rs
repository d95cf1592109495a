//! Logs: the subscriber (`LOG_FORMAT` text or JSON lines) and one line per request with its
//! id, operation id, status and duration.
//!
//! Lines go to stderr in batches, written by a thread of their own ([`writer`]); call
//! [`flush`] before the process exits.
//!
//! Uncoloured text lines come from [`text`], the default text format written with less work.
//!
//! No line carries a header, a body or a query string, so passwords and tokens never reach
//! the logs.

use crate::config::LogFormat;
use crate::operation::Pending;
use crate::request_id::RequestId;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::HttpMessage;
use std::io::IsTerminal;
use std::time::Instant;
use tracing_subscriber::EnvFilter;

pub mod text;
pub mod writer;

/// Installs the process's log subscriber on stderr: human-readable lines, or with
/// [`LogFormat::Json`] one JSON object per line (the event's fields at the top level, the
/// request span's fields, `request_id` among them, under `span`). `RUST_LOG` filters, as
/// `info` by default. Text lines are coloured only when stderr is a terminal, by
/// `tracing-subscriber`'s default formatter; otherwise [`text::Text`] and
/// [`text::TextFields`] write the same lines, byte for byte, with less work. Lines are
/// written in batches by a thread of their own (see [`writer`]); [`flush`] writes what waits.
///
/// # Errors
///
/// A subscriber is already installed.
pub fn init(format: LogFormat) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::stderr().is_terminal();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(writer::stderr());
    match format {
        LogFormat::Text if ansi => builder.try_init(),
        LogFormat::Text => builder
            .fmt_fields(text::TextFields)
            .event_format(text::Text)
            .try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    }
}

/// Writes out the log lines that wait to be written: call it before the process exits.
pub fn flush() {
    writer::stderr().flush();
}

/// Writes one `request` line (target `crudforge::access`) per answered request: request id,
/// operation id, method, status and duration in milliseconds.
///
/// # Errors
///
/// The inner service's error (logged with its status).
pub async fn access_log(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let started = Instant::now();
    let pending = Pending::of(&req);
    let request_id = req
        .extensions()
        .get::<RequestId>()
        .map(|id| id.0.clone())
        .unwrap_or_default();
    let res = next.call(req).await;
    let operation_id = pending.answered(&res);
    let status = match &res {
        Ok(r) => r.status(),
        Err(e) => e.as_response_error().status_code(),
    };
    tracing::info!(
        target: "crudforge::access",
        request_id = %request_id,
        operation_id = %operation_id,
        method = %pending.method(),
        status = status.as_u16(),
        duration_ms = started.elapsed().as_secs_f64() * 1000.0,
        "request"
    );
    res.map(ServiceResponse::map_into_boxed_body)
}

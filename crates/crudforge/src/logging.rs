//! Logs: the subscriber (`LOG_FORMAT` text or JSON lines) and one line per request with its
//! id, operation id, status and duration.
//!
//! Lines are formatted by `tracing-subscriber`'s own `fmt` formatter (their time written by
//! `timestamp::LogClock`, the same text as its clock's without `fmt`) and go to stderr in
//! batches, written by `tracing-appender`'s thread; call [`flush`] before the process exits.
//!
//! No line carries a header, a body or a query string, so passwords and tokens never reach
//! the logs.

use crate::config::LogFormat;
use crate::operation::Pending;
use crate::request_id::RequestId;
use crate::timestamp::LogClock;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::HttpMessage;
use std::io::IsTerminal;
use std::time::Instant;
use tracing::Dispatch;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

pub(crate) mod writer;

/// Installs the process's log subscriber on stderr: `tracing-subscriber`'s default text
/// lines (time in RFC 3339 UTC, level, the spans with their fields, target, the event's
/// fields), or with [`LogFormat::Json`] one JSON object per line (the event's fields at the
/// top level, the request span's fields, `request_id` among them, under `span`). `RUST_LOG`
/// filters, as `info` by default. Text lines are coloured only when stderr is a terminal.
/// Lines are written in batches by a thread of their own; [`flush`] writes
/// what waits and stops that thread.
///
/// # Errors
///
/// A subscriber is already installed.
pub fn init(format: LogFormat) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::stderr().is_terminal();
    tracing::dispatcher::set_global_default(subscriber(format, filter, ansi, writer::stderr()))?;
    Ok(())
}

/// The subscriber [`init`] installs, writing to `writer`, with colours when `ansi`.
fn subscriber<W>(format: LogFormat, filter: EnvFilter, ansi: bool, writer: W) -> Dispatch
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_timer(LogClock)
        .with_writer(writer);
    match format {
        LogFormat::Text => Dispatch::new(builder.finish()),
        LogFormat::Json => Dispatch::new(
            builder
                .json()
                .flatten_event(true)
                .with_current_span(true)
                .with_span_list(false)
                .finish(),
        ),
    }
}

/// Writes out the log lines that wait to be written and stops the thread that writes them:
/// call it before the process exits (lines logged after it are lost).
pub fn flush() {
    writer::flush();
}

/// Writes one `request` line (target `crudforge::access`) per answered request: request id,
/// operation id, method, status and duration in milliseconds.
///
/// # Errors
///
/// The inner service's error (logged with its status).
pub(crate) async fn access_log(
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

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};
    use std::io;
    use std::sync::{Arc, Mutex};

    /// A `MakeWriter` that keeps every line in a shared buffer.
    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Capture {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    const ID: &str = "7d5f0c9e-0000-4000-8000-000000000001";

    /// What a request's span and events write under the subscriber [`init`] installs (with
    /// `ansi` as given, since a test's stderr may or may not be a terminal).
    fn logged(format: LogFormat, ansi: bool) -> String {
        let out = Capture::default();
        let dispatch = subscriber(format, EnvFilter::new("info"), ansi, {
            let out = out.clone();
            move || out.clone()
        });
        tracing::dispatcher::with_default(&dispatch, || {
            // As `request_id::request_id` and `access_log` write them.
            let span = tracing::info_span!(
                "request",
                request_id = %ID,
                method = %"POST",
                path = %"/api/user/login/",
            );
            let _entered = span.enter();
            tracing::debug!("below the filter");
            tracing::warn!(reason = "bad \x1b[31m input", "refused \x1b[2J here");
            tracing::info!(
                target: "crudforge::access",
                request_id = %ID,
                operation_id = %"login",
                method = %"POST",
                status = 200u16,
                duration_ms = 0.25,
                "request"
            );
        });
        let text = out.0.lock().unwrap().clone();
        String::from_utf8(text).unwrap()
    }

    /// The line's leading timestamp: RFC 3339 in UTC with microseconds, close to now.
    fn assert_timestamp_now(word: &str) {
        assert!(word.ends_with('Z') && word.len() == 27, "{word}");
        let t = DateTime::parse_from_rfc3339(word).unwrap();
        let gap = (t.with_timezone(&Utc) - Utc::now()).num_seconds().abs();
        assert!(gap < 60, "{word}");
    }

    #[test]
    fn text_lines_carry_the_request_id_without_colour_codes() {
        let text = logged(LogFormat::Text, false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines.len(),
            2,
            "one line per event above the filter: {text}"
        );
        let span = format!("request{{request_id={ID} method=POST path=/api/user/login/}}:");
        for line in &lines {
            let (time, _) = line.split_once(' ').unwrap();
            assert_timestamp_now(time);
            assert!(line.contains(&span), "the request id on every line: {line}");
        }
        assert!(!text.contains('\x1b'), "no escape codes: {text:?}");
        // Control characters in what is logged come out as escapes.
        assert!(
            lines[0].ends_with(
                &format!("  WARN {span} crudforge::logging::tests: refused \\x1b[2J here reason=\"bad \\u{{1b}}[31m input\"")
            ),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].ends_with(&format!(
                "  INFO {span} crudforge::access: request request_id={ID} \
                 operation_id=login method=POST status=200 duration_ms=0.25"
            )),
            "{}",
            lines[1]
        );
    }

    #[test]
    fn text_lines_are_coloured_on_a_terminal() {
        let text = logged(LogFormat::Text, true);
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.contains("\x1b["), "colour codes: {text:?}");
        assert!(text.contains(ID), "{text}");
    }

    #[test]
    fn json_lines_carry_the_request_id_at_the_top_and_in_the_span() {
        let text = logged(LogFormat::Json, false);
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        for line in &lines {
            assert_timestamp_now(line["timestamp"].as_str().unwrap());
            assert_eq!(line["span"]["request_id"], ID, "{line}");
            assert_eq!(line["span"]["name"], "request", "{line}");
        }
        let access = &lines[1];
        assert_eq!(access["target"], "crudforge::access");
        assert_eq!(access["message"], "request");
        assert_eq!(access["request_id"], ID);
        assert_eq!(access["operation_id"], "login");
        assert_eq!(access["method"], "POST");
        assert_eq!(access["status"], 200);
        assert_eq!(access["duration_ms"], 0.25);
    }
}

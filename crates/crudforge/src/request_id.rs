//! Request ids: one per request, from the client's `X-Request-Id` when it is a safe token,
//! echoed in the answer, carried by a tracing span and added to problem bodies.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::HttpMessage;
use tracing::Instrument;

/// The header that carries a request's id, both ways.
pub(crate) const REQUEST_ID_HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// Longest client-given id that is kept.
pub(crate) const MAX_REQUEST_ID_LEN: usize = 128;

/// The id of a request, in its extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestId(pub String);

impl RequestId {
    /// The client's id when it is a safe token (1 to 128 letters, digits, `-`, `_`, `.`),
    /// otherwise a new UUID.
    pub(crate) fn from_client(given: Option<&str>) -> RequestId {
        match given {
            Some(id) if is_safe(id) => RequestId(id.to_owned()),
            _ => RequestId(fresh().to_string()),
        }
    }

    /// The id as text.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether a client-given id may be kept: nothing that could forge a log line or a header.
fn is_safe(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_REQUEST_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Gives the request its id, runs the rest inside a `request` span that carries it, and
/// echoes it in the `X-Request-Id` response header (errors included).
///
/// # Errors
///
/// The inner service's error.
pub(crate) async fn request_id(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let given = req
        .headers()
        .get(&REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok());
    let id = RequestId::from_client(given);
    req.extensions_mut().insert(id.clone());
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        method = %req.method(),
        path = %req.path(),
    );
    let header = HeaderValue::from_str(id.as_str()).ok();
    let mut res = next.call(req).instrument(span).await?.map_into_boxed_body();
    if let Some(v) = header {
        res.headers_mut().insert(REQUEST_ID_HEADER, v);
    }
    Ok(res)
}

/// A new id, shaped as a version-4 UUID: 60 random bits drawn once per thread, then a counter
/// of that thread. Ids never repeat within a thread, and the random part keeps threads and
/// processes apart. Nothing trusts a request id as a secret, so drawing fresh randomness for
/// each (a system call per request) buys nothing.
fn fresh() -> uuid::Uuid {
    thread_local! {
        static NEXT: std::cell::Cell<Option<(u64, u64)>> = const { std::cell::Cell::new(None) };
    }
    NEXT.with(|next| {
        let (prefix, count) = next.get().unwrap_or_else(|| {
            let mut seed = [0u8; 16];
            if getrandom::fill(&mut seed).is_err() {
                // No randomness to be had: one fully random UUID's worth from `uuid` instead.
                seed = *uuid::Uuid::new_v4().as_bytes();
            }
            let [a, b] = [&seed[..8], &seed[8..]].map(|half| {
                let mut word = [0u8; 8];
                word.copy_from_slice(half);
                u64::from_le_bytes(word)
            });
            (a, b)
        });
        next.set(Some((prefix, count.wrapping_add(1))));
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&prefix.to_be_bytes());
        bytes[8..].copy_from_slice(&count.to_be_bytes());
        // Version 4 and the RFC 9562 variant, over 6 of the 128 bits.
        uuid::Builder::from_random_bytes(bytes).into_uuid()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_ids_are_version_4_uuids_and_never_repeat() {
        let ids: std::collections::HashSet<uuid::Uuid> = (0..10_000).map(|_| fresh()).collect();
        assert_eq!(ids.len(), 10_000);
        assert!(ids.iter().all(|id| id.get_version_num() == 4));
        let other = std::thread::spawn(fresh).join().expect("thread");
        assert!(!ids.contains(&other), "another thread's ids differ");
    }

    #[test]
    fn keeps_safe_client_ids_and_replaces_others() {
        assert_eq!(RequestId::from_client(Some("abc-1_2.3")).0, "abc-1_2.3");
        let long = "a".repeat(MAX_REQUEST_ID_LEN);
        assert_eq!(RequestId::from_client(Some(&long)).0, long);
        for bad in [
            "",
            "a b",
            "a\nb",
            "x/y",
            "é",
            &"a".repeat(MAX_REQUEST_ID_LEN + 1),
        ] {
            let id = RequestId::from_client(Some(bad)).0;
            assert!(uuid::Uuid::parse_str(&id).is_ok(), "{bad:?} kept as {id}");
        }
        assert!(uuid::Uuid::parse_str(&RequestId::from_client(None).0).is_ok());
    }
}

//! CORS: the origins of `CORS_ALLOWED_ORIGINS` may call the API from a browser; preflights
//! are answered and every answer (errors included) carries the CORS headers.

use crate::config::Config;
use actix_cors::Cors;
use actix_web::http::header;

/// How long a browser may cache a preflight answer, in seconds.
pub(crate) const PREFLIGHT_MAX_AGE: usize = 3600;

/// The CORS middleware for `config`, or `None` when no origin is allowed (the default: no
/// CORS headers at all).
///
/// Listed origins may send credentials (cookies, `Authorization`); the wildcard `*` lets any
/// origin in but never with credentials, and answers `Access-Control-Allow-Origin: *`.
/// Requests from other origins are served as usual without CORS headers, so the browser
/// refuses them while non-browser clients keep working.
pub(crate) fn middleware(config: &Config) -> Option<Cors> {
    let origins = &config.http.cors_allowed_origins;
    if origins.is_empty() {
        return None;
    }
    let base = Cors::default()
        .allow_any_method()
        .allow_any_header()
        .expose_headers([
            header::ETAG,
            header::LOCATION,
            header::RETRY_AFTER,
            header::WWW_AUTHENTICATE,
            header::HeaderName::from_static("x-request-id"),
            header::HeaderName::from_static("server-timing"),
        ])
        .max_age(PREFLIGHT_MAX_AGE);
    let cors = if origins.iter().any(|o| o == "*") {
        base.allow_any_origin().send_wildcard()
    } else {
        origins
            .iter()
            .fold(base, |c, o| c.allowed_origin(o))
            .supports_credentials()
    };
    Some(cors)
}

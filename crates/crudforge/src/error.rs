//! RFC 7807 problem details: the one error type of the service and its mapping to HTTP.

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, ResponseError};
use serde::Serialize;
use std::borrow::Cow;
use std::fmt;

pub(crate) mod constraint;

/// Media type of every error body.
pub(crate) const PROBLEM_CONTENT_TYPE: &str = "application/problem+json";

/// Result type of fallible service operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An RFC 7807 problem-details body.
///
/// `type` is `/errors/<error_name_in_snake_case>`; `instance` is the request path (filled in by
/// the [`Api`](crate::Api)'s error middleware). The `debug` member is only sent when `DEBUG` is
/// true.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct Problem {
    /// `/errors/<error_name_in_snake_case>`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Short reason phrase.
    pub title: String,
    /// HTTP status code.
    pub status: u16,
    /// Human-readable explanation.
    pub detail: String,
    /// The request path.
    pub instance: String,
    /// The request field (body member or query/path parameter) at fault, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The database table whose constraint refused a write (409), when it is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// Internal detail, sent only in debug mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub debug: Option<String>,
    /// The id of the request (its `X-Request-Id`), set by the error middleware.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Every member at fault, when a 422 found several (or one, from the field validators), or
    /// the members of a composite unique constraint a 409 refused (`unique("a", "b")`).
    /// Absent otherwise, so not required in the schema (`default`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<Violation>,
    /// What a sign-in whose credentials were right still asks before it issues tokens (a
    /// second factor), and the ticket the client goes on with. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "challenge_schema")]
    pub challenge: Option<Challenge>,
}

/// The description of [`Problem::challenge`]: the [`Challenge`] component through `allOf`, so
/// that its description does not sit beside a `$ref` (which OpenAPI 3.0 ignores); never
/// null (left out when there is none).
fn challenge_schema(gen: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
    use schemars::schema::{Metadata, Schema, SchemaObject, SubschemaValidation};
    Schema::Object(SchemaObject {
        subschemas: Some(Box::new(SubschemaValidation {
            all_of: Some(vec![gen.subschema_for::<Challenge>()]),
            ..Default::default()
        })),
        metadata: Some(Box::new(Metadata {
            description: Some(
                "What a sign-in whose credentials were right still asks before it issues \
                 tokens (a second factor), and the ticket the client goes on with. Absent \
                 otherwise."
                    .to_owned(),
            ),
            ..Default::default()
        })),
        ..Default::default()
    })
}

/// The next step of a sign-in that is not complete: a [`Problem`]'s `challenge`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct Challenge {
    /// `second_factor`: give a second factor (`factors` says which kinds the account has);
    /// `second_factor_enrollment`: the account must enroll one before it may sign in.
    pub kind: String,
    /// The single-purpose ticket the next step sends back (`factor_ticket`); it signs
    /// nothing else in.
    pub ticket: String,
    /// The kinds of second factor the next step accepts (`totp`, `passkey`, `recovery_code`).
    pub factors: Vec<String>,
    /// Seconds until the ticket expires.
    pub expires_in: i64,
}

/// One fault in a problem's `errors`: a member the field validators refused (422), or an item
/// of a batch write and why it was refused.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct Violation {
    /// A JSON pointer (RFC 6901) to the part of the request body at fault: `/name`, or in a
    /// batch `/items/3/name` (a member of an item) or `/items/3` (the item as a whole).
    pub pointer: String,
    /// The member's name (`items` when the item as a whole is at fault).
    pub field: String,
    /// What is wrong with its value.
    pub detail: String,
}

impl Violation {
    /// A fault of the body member `field`.
    pub fn new(field: impl Into<String>, detail: impl Into<String>) -> Self {
        let field = field.into();
        Violation {
            pointer: format!("/{}", pointer_token(&field)),
            field,
            detail: detail.into(),
        }
    }
}

/// A member name as one JSON pointer reference token (`~` and `/` escaped, RFC 6901).
fn pointer_token(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// One refused item of a batch write: where it is in the request body and why.
#[derive(Debug)]
#[non_exhaustive]
pub struct ItemError {
    /// The item's position in the body's `items` (from 0).
    pub index: usize,
    /// A JSON pointer to the part of the body the error's members are relative to:
    /// `/items/3`, or `/items/3/changes` for the changes of a batch update.
    pub pointer: String,
    /// Why the item was refused.
    pub error: Error,
}

impl ItemError {
    /// Item `index` refused for `error`; the error's members are those of the item itself.
    pub(crate) fn new(index: usize, error: Error) -> Self {
        ItemError {
            index,
            pointer: format!("/items/{index}"),
            error,
        }
    }

    /// Item `index` refused for `error`, whose members are those of the item's member `part`
    /// (`changes`).
    pub(crate) fn within(index: usize, part: &str, error: Error) -> Self {
        ItemError {
            index,
            pointer: format!("/items/{index}/{}", pointer_token(part)),
            error,
        }
    }

    /// The entries of `errors` for this item: one per member the error names, or one for the
    /// item as a whole.
    fn violations(&self, problem: Problem) -> Vec<Violation> {
        if problem.errors.is_empty() {
            let (pointer, field) = match problem.field {
                Some(f) => (format!("{}/{}", self.pointer, pointer_token(&f)), f),
                None => (format!("/items/{}", self.index), "items".to_owned()),
            };
            return vec![Violation {
                pointer,
                field,
                detail: problem.detail,
            }];
        }
        problem
            .errors
            .into_iter()
            .map(|v| Violation {
                pointer: format!("{}{}", self.pointer, v.pointer),
                ..v
            })
            .collect()
    }
}

impl Problem {
    /// A problem for `status` with the given detail; its `type` is the status's problem type.
    pub(crate) fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Problem {
            type_: format!("/errors/{}", error_name_for(status)),
            title: status.canonical_reason().unwrap_or("Error").to_owned(),
            status: status.as_u16(),
            detail: detail.into(),
            instance: String::new(),
            field: None,
            table: None,
            debug: None,
            request_id: None,
            errors: Vec::new(),
            challenge: None,
        }
    }

    /// A generic problem for a bare status code (used for errors produced without a body).
    pub(crate) fn from_status(status: StatusCode) -> Self {
        let title = status.canonical_reason().unwrap_or("Error");
        let detail = match status {
            StatusCode::NOT_FOUND => "No resource exists at this path.".to_owned(),
            StatusCode::METHOD_NOT_ALLOWED => "This method is not allowed on this path.".to_owned(),
            StatusCode::PAYLOAD_TOO_LARGE => "The request body is too large.".to_owned(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "Unsupported content type.".to_owned(),
            s if s.is_server_error() => "The server could not complete the request.".to_owned(),
            _ => title.to_owned(),
        };
        Problem::new(status, detail)
    }

    /// The HTTP status.
    pub(crate) fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// Serializes the body; the `debug` member only when `debug` is true.
    pub(crate) fn to_body(&self, debug: bool) -> Vec<u8> {
        let mut shown = self.clone();
        if !debug {
            shown.debug = None;
        }
        serde_json::to_vec(&shown).unwrap_or_else(|_| b"{}".to_vec())
    }

    /// A complete `application/problem+json` response. The problem also rides in the response
    /// extensions so the error middleware can add `instance` and `debug`.
    pub(crate) fn into_response(self) -> HttpResponse {
        let mut res = HttpResponse::build(self.status_code())
            .insert_header((
                header::CONTENT_TYPE,
                HeaderValue::from_static(PROBLEM_CONTENT_TYPE),
            ))
            .body(self.to_body(false));
        res.extensions_mut().insert(self);
        res
    }
}

/// The `/errors/` name of a status code's problems, the one place problem types are named:
/// its reason phrase in snake case plus `_error` (`not_found_error`), except 422, whose
/// problems are `validation_error` (the contract's name), and 500, `internal_server_error`.
pub(crate) fn error_name_for(status: StatusCode) -> String {
    if status == StatusCode::INTERNAL_SERVER_ERROR {
        return "internal_server_error".to_owned();
    }
    if status == StatusCode::UNPROCESSABLE_ENTITY {
        return "validation_error".to_owned();
    }
    let reason = status.canonical_reason().unwrap_or("unknown");
    let mut name: String = reason
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    name.push_str("_error");
    name
}

/// Every failure a request can meet. Each maps to one status and one problem body.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// 400: the request is malformed (syntax, unknown parameter, bad parameter value).
    #[error("{detail}")]
    BadRequest {
        /// Explanation.
        detail: String,
        /// The parameter or member at fault.
        field: Option<String>,
    },
    /// 422: well-formed input that breaks a rule (missing field, wrong type, too long).
    #[error("{detail}")]
    Validation {
        /// Explanation.
        detail: String,
        /// The member at fault.
        field: Option<String>,
    },
    /// 422: the field validators found one or more members at fault; the problem lists them
    /// all in `errors`.
    #[error("{}", invalid_detail(.0))]
    Invalid(Vec<Violation>),
    /// A batch write refused one or more items and wrote nothing. The status is the first
    /// item's; the problem's `errors` point at each item (and member) at fault.
    #[error("{}", items_detail(.0))]
    Items(Vec<ItemError>),
    /// 401: no valid credentials.
    #[error("{0}")]
    Unauthorized(Cow<'static, str>),
    /// 403: authenticated but not allowed.
    #[error("{0}")]
    Forbidden(Cow<'static, str>),
    /// 401 (403 when `forbidden`): the credentials were right, but the sign-in needs one
    /// more step before it issues tokens (a second factor); the problem's `challenge` says
    /// which and carries the ticket to go on with.
    #[error("{detail}")]
    Incomplete {
        /// 403 rather than 401: the account must first enroll what is asked.
        forbidden: bool,
        /// Explanation.
        detail: Cow<'static, str>,
        /// The next step.
        challenge: Box<Challenge>,
    },
    /// 404: no such resource.
    #[error("{0}")]
    NotFound(Cow<'static, str>),
    /// 409: conflicts with existing data (unique value taken, row still referenced).
    #[error("{0}")]
    Conflict(Cow<'static, str>),
    /// 412: an `If-Match` precondition does not hold (the item changed since it was read).
    #[error("{0}")]
    PreconditionFailed(Cow<'static, str>),
    /// 428: the operation requires a conditional request (`If-Match`) and none was sent.
    #[error("{0}")]
    PreconditionRequired(Cow<'static, str>),
    /// 408: the request (its body included) took longer than `REQUEST_TIMEOUT`.
    #[error("{0}")]
    RequestTimeout(Cow<'static, str>),
    /// 413: body over the limit.
    #[error("{0}")]
    PayloadTooLarge(Cow<'static, str>),
    /// 415: unsupported content type.
    #[error("{0}")]
    UnsupportedMediaType(Cow<'static, str>),
    /// 429: too many failed credential checks; answered with a `Retry-After` header.
    #[error("{detail}")]
    TooManyRequests {
        /// Explanation.
        detail: Cow<'static, str>,
        /// Seconds until the client may try again.
        retry_after: u64,
    },
    /// 503: the database cannot be reached.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// 503: the service is too busy for this request now (the bcrypt queue is full); answered
    /// with a `Retry-After` header.
    #[error("{detail}")]
    Busy {
        /// Explanation.
        detail: Cow<'static, str>,
        /// Seconds until the client may try again.
        retry_after: u64,
    },
    /// A database error; classified by [`Error::problem`].
    #[error("database error: {0}")]
    Database(#[from] diesel::result::Error),
    /// 500: anything else. The text is logged and shown only in debug mode.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// A 400 naming the parameter (or member) at fault.
    pub fn bad_param(field: impl Into<String>, detail: impl fmt::Display) -> Self {
        let field = field.into();
        Error::BadRequest {
            detail: format!("Invalid `{field}`: {detail}"),
            field: Some(field),
        }
    }

    /// A 422 naming the member at fault.
    pub fn invalid_field(field: impl Into<String>, detail: impl fmt::Display) -> Self {
        let field = field.into();
        Error::Validation {
            detail: format!("Invalid value for `{field}`: {detail}"),
            field: Some(field),
        }
    }

    /// The problem body of this error.
    pub fn problem(&self) -> Problem {
        match self {
            Error::BadRequest { detail, field } => {
                let mut p = Problem::new(StatusCode::BAD_REQUEST, detail);
                p.field.clone_from(field);
                p
            }
            Error::Validation { detail, field } => {
                let mut p = Problem::new(StatusCode::UNPROCESSABLE_ENTITY, detail);
                p.field.clone_from(field);
                p
            }
            Error::Invalid(violations) => {
                let mut p =
                    Problem::new(StatusCode::UNPROCESSABLE_ENTITY, invalid_detail(violations));
                p.field = violations.first().map(|v| v.field.clone());
                p.errors.clone_from(violations);
                p
            }
            Error::Items(items) => items_problem(items),
            Error::Unauthorized(d) => Problem::new(StatusCode::UNAUTHORIZED, d.as_ref()),
            Error::Forbidden(d) => Problem::new(StatusCode::FORBIDDEN, d.as_ref()),
            Error::Incomplete {
                forbidden,
                detail,
                challenge,
            } => {
                let status = if *forbidden {
                    StatusCode::FORBIDDEN
                } else {
                    StatusCode::UNAUTHORIZED
                };
                let mut p = Problem::new(status, detail.as_ref());
                p.challenge = Some((**challenge).clone());
                p
            }
            Error::NotFound(d) => Problem::new(StatusCode::NOT_FOUND, d.as_ref()),
            Error::Conflict(d) => Problem::new(StatusCode::CONFLICT, d.as_ref()),
            Error::PreconditionFailed(d) => {
                Problem::new(StatusCode::PRECONDITION_FAILED, d.as_ref())
            }
            Error::PreconditionRequired(d) => {
                Problem::new(StatusCode::PRECONDITION_REQUIRED, d.as_ref())
            }
            Error::RequestTimeout(d) => Problem::new(StatusCode::REQUEST_TIMEOUT, d.as_ref()),
            Error::PayloadTooLarge(d) => Problem::new(StatusCode::PAYLOAD_TOO_LARGE, d.as_ref()),
            Error::UnsupportedMediaType(d) => {
                Problem::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, d.as_ref())
            }
            Error::TooManyRequests { detail, .. } => {
                Problem::new(StatusCode::TOO_MANY_REQUESTS, detail.as_ref())
            }
            Error::Busy { detail, .. } => {
                Problem::new(StatusCode::SERVICE_UNAVAILABLE, detail.as_ref())
            }
            Error::Unavailable(msg) => {
                let mut p = Problem::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "The database is unavailable; try again later.",
                );
                p.debug = Some(msg.clone());
                p
            }
            Error::Database(e) => database_problem(e),
            Error::Internal(msg) => {
                let mut p = Problem::from_status(StatusCode::INTERNAL_SERVER_ERROR);
                p.debug = Some(msg.clone());
                p
            }
        }
    }
}

/// The problem of a database error: a missing row is 404, a library trigger's refusal 422, a
/// statement stopped by `DB_STATEMENT_TIMEOUT` 503, a constraint failure 409, anything else
/// 500 (the database's message goes in `debug`, sent only in debug mode).
fn database_problem(e: &diesel::result::Error) -> Problem {
    use diesel::result::Error as D;
    match e {
        D::NotFound => Problem::new(
            StatusCode::NOT_FOUND,
            "The requested resource does not exist.",
        ),
        // A library trigger refused a change (`crudforge_refused:<field>:<why>`).
        D::DatabaseError(_, info) if info.message().contains("crudforge_refused:") => {
            let msg = info.message();
            let rest = msg.split_once("crudforge_refused:").map_or("", |(_, r)| r);
            let (field, why) = rest.split_once(':').unwrap_or(("", rest));
            let mut p = Problem::new(StatusCode::UNPROCESSABLE_ENTITY, why.trim().to_owned());
            p.field = (!field.is_empty()).then(|| field.to_owned());
            p
        }
        // A statement stopped at DB_STATEMENT_TIMEOUT: PostgreSQL cancels it (SQLSTATE
        // 57014), SQLite's progress handler interrupts it.
        D::DatabaseError(_, info) if crate::dialect::is_statement_timeout(info.message()) => {
            let mut p = Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "The query took longer than the service allows (DB_STATEMENT_TIMEOUT).",
            );
            p.debug = Some(info.message().to_owned());
            p
        }
        // Unique, foreign-key, check, not-null and exclusion constraints: 409.
        D::DatabaseError(kind, info) => match constraint::Failure::of(*kind, info.as_ref()) {
            Some(f) => f.problem(),
            None => internal(e),
        },
        e => internal(e),
    }
}

/// The 500 of any other database error.
fn internal(e: &diesel::result::Error) -> Problem {
    let mut p = Problem::from_status(StatusCode::INTERNAL_SERVER_ERROR);
    p.debug = Some(e.to_string());
    p
}

/// The `detail` of a problem with several members at fault: the one member's, or how many
/// and which.
fn invalid_detail(violations: &[Violation]) -> String {
    match violations {
        [] => "The request body is invalid.".to_owned(),
        [one] => format!("Invalid value for `{}`: {}", one.field, one.detail),
        many => {
            let names = many
                .iter()
                .map(|v| format!("`{}`", v.field))
                .collect::<Vec<_>>()
                .join(", ");
            format!("{} members are invalid: {names} (see `errors`)", many.len())
        }
    }
}

/// The `detail` of a refused batch: the one item's reason, or how many and which.
fn items_detail(items: &[ItemError]) -> String {
    match items {
        [] => "The batch was refused; nothing was written.".to_owned(),
        // The inner problem's detail, never the error's own text (a database message).
        [one] => format!(
            "Item {} was refused; nothing was written: {}",
            one.index,
            one.error.problem().detail
        ),
        many => {
            let which = many
                .iter()
                .map(|i| i.index.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            format!(
                "{} items were refused (items {which}); nothing was written. See `errors`.",
                many.len()
            )
        }
    }
}

/// The problem of a refused batch: the first item's status (a server error is answered as
/// itself), one `errors` entry per member or item at fault.
fn items_problem(items: &[ItemError]) -> Problem {
    let Some(first) = items.first() else {
        return Problem::new(StatusCode::UNPROCESSABLE_ENTITY, items_detail(items));
    };
    let head = first.error.problem();
    if head.status_code().is_server_error() {
        return head;
    }
    let mut p = Problem::new(head.status_code(), items_detail(items));
    p.field = Some("items".to_owned());
    p.table.clone_from(&head.table);
    for item in items {
        p.errors.extend(item.violations(item.error.problem()));
    }
    p
}

impl ResponseError for Error {
    fn status_code(&self) -> StatusCode {
        self.problem().status_code()
    }

    fn error_response(&self) -> HttpResponse {
        let problem = self.problem();
        if problem.status_code().is_server_error() {
            tracing::error!(error = %self, "request failed");
        }
        let mut res = problem.into_response();
        if let Error::TooManyRequests { retry_after, .. } | Error::Busy { retry_after, .. } = self {
            res.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from((*retry_after).max(1)),
            );
        }
        res
    }
}

/// Maps actix-web's JSON body errors (syntax, type, size, content type) to problems.
pub(crate) fn json_error(
    err: actix_web::error::JsonPayloadError,
    _req: &HttpRequest,
) -> actix_web::Error {
    use actix_web::error::JsonPayloadError as J;
    let e = match &err {
        J::OverflowKnownLength { .. } | J::Overflow { .. } => {
            Error::PayloadTooLarge("The request body is larger than the service accepts.".into())
        }
        J::ContentType => Error::UnsupportedMediaType(
            "The request body must be JSON (Content-Type: application/json).".into(),
        ),
        J::Deserialize(de) => serde_error(de),
        other => Error::BadRequest {
            detail: format!("The request body could not be read: {other}"),
            field: None,
        },
    };
    e.into()
}

/// Classifies a serde_json error: syntax problems are 400, shape problems 422 naming the
/// member when serde says which.
pub(crate) fn serde_error(de: &serde_json::Error) -> Error {
    use serde_json::error::Category;
    match de.classify() {
        Category::Syntax | Category::Eof | Category::Io => Error::BadRequest {
            detail: format!("The request body is not valid JSON: {de}"),
            field: None,
        },
        Category::Data => {
            let msg = de.to_string();
            let field = backticked_field(&msg);
            Error::Validation {
                detail: format!("The request body does not match the expected shape: {msg}"),
                field,
            }
        }
    }
}

/// Extracts a member name from serde messages such as "missing field `name`".
fn backticked_field(msg: &str) -> Option<String> {
    for marker in ["missing field `", "unknown field `", "duplicate field `"] {
        if let Some(start) = msg.find(marker) {
            let rest = &msg[start + marker.len()..];
            return rest.find('`').map(|end| rest[..end].to_owned());
        }
    }
    None
}

/// Maps actix-web's query-string errors to a 400 problem.
pub(crate) fn query_error(
    err: actix_web::error::QueryPayloadError,
    _req: &HttpRequest,
) -> actix_web::Error {
    let msg = err.to_string();
    let field = backticked_field(&msg);
    Error::BadRequest {
        detail: format!("Invalid query string: {msg}"),
        field,
    }
    .into()
}

/// Maps actix-web's path-parameter errors to a 404 problem: a path that does not parse names
/// no resource.
pub(crate) fn path_error(err: actix_web::error::PathError, _req: &HttpRequest) -> actix_web::Error {
    let mut p = Problem::new(StatusCode::NOT_FOUND, "No resource exists at this path.");
    p.debug = Some(err.to_string());
    ProblemError(p).into()
}

/// Maps actix-web's URL-encoded form errors to problems.
pub(crate) fn form_error(
    err: actix_web::error::UrlencodedError,
    _req: &HttpRequest,
) -> actix_web::Error {
    use actix_web::error::UrlencodedError as U;
    match err {
        U::Overflow { .. } => Error::PayloadTooLarge("The request body is too large.".into()),
        U::ContentType => Error::UnsupportedMediaType("Unsupported content type.".into()),
        other => Error::BadRequest {
            detail: format!("Invalid form body: {other}"),
            field: None,
        },
    }
    .into()
}

/// A ready problem used as an actix-web error.
#[derive(Debug)]
pub(crate) struct ProblemError(pub Problem);

impl fmt::Display for ProblemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.0.title, self.0.detail)
    }
}

impl ResponseError for ProblemError {
    fn status_code(&self) -> StatusCode {
        self.0.status_code()
    }

    fn error_response(&self) -> HttpResponse {
        self.0.clone().into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_snake_case_with_error_suffix() {
        assert_eq!(error_name_for(StatusCode::NOT_FOUND), "not_found_error");
        assert_eq!(
            error_name_for(StatusCode::METHOD_NOT_ALLOWED),
            "method_not_allowed_error"
        );
        assert_eq!(
            error_name_for(StatusCode::INTERNAL_SERVER_ERROR),
            "internal_server_error"
        );
        // A 422 is named the same whichever path makes it.
        assert_eq!(
            error_name_for(StatusCode::UNPROCESSABLE_ENTITY),
            "validation_error"
        );
        assert_eq!(
            Problem::from_status(StatusCode::UNPROCESSABLE_ENTITY).type_,
            Error::invalid_field("x", "y").problem().type_
        );
    }

    #[test]
    fn not_found_matches_the_contract() {
        let p = Error::NotFound("gone".into()).problem();
        assert_eq!(p.type_, "/errors/not_found_error");
        assert_eq!(p.title, "Not Found");
        assert_eq!(p.status, 404);
    }

    #[test]
    fn too_many_requests_carries_retry_after() {
        let e = Error::TooManyRequests {
            detail: "slow down".into(),
            retry_after: 42,
        };
        let p = e.problem();
        assert_eq!(p.type_, "/errors/too_many_requests_error");
        assert_eq!(p.title, "Too Many Requests");
        assert_eq!(p.status, 429);
        let res = e.error_response();
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(res.headers().get(header::RETRY_AFTER).unwrap(), "42");
    }

    #[test]
    fn debug_member_only_in_debug_mode() {
        let p = Error::Internal("secret SQL".into()).problem();
        let plain = String::from_utf8(p.to_body(false)).unwrap();
        assert!(!plain.contains("secret SQL"));
        let dbg = String::from_utf8(p.to_body(true)).unwrap();
        assert!(dbg.contains("secret SQL"));
    }

    #[test]
    fn serde_messages_name_the_field() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct T {
            name: String,
        }
        let e = serde_json::from_str::<T>("{}").unwrap_err();
        match serde_error(&e) {
            Error::Validation { field, .. } => assert_eq!(field.as_deref(), Some("name")),
            other => panic!("{other:?}"),
        }
        let e = serde_json::from_str::<T>("{").unwrap_err();
        assert!(matches!(serde_error(&e), Error::BadRequest { .. }));
    }
}

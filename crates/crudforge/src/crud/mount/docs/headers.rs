//! What conditional requests and idempotency keys add to the description of the generated
//! operations: the `If-Match`, `If-None-Match` and `Idempotency-Key` request headers (with
//! their syntax), the `ETag`, `Location` and `Idempotent-Replayed` response headers and the
//! answers they add.

use crate::crud::options::Operation;
use crate::openapi::{parameter, problem_response, response_header, ApiDoc};
use actix_web::http::StatusCode;
use apistos::paths::ParameterIn;
use apistos::reference_or::ReferenceOr;
use schemars::schema::Schema;
use std::collections::BTreeMap;

/// Conditional requests and idempotency keys: the `If-Match`, `If-None-Match` and
/// `Idempotency-Key` request headers, the `ETag` response header and the answers they add
/// (304, 409, 412, 422, 428).
pub(crate) fn document_writes(
    doc: &mut ApiDoc,
    op: Operation,
    require_if_match: bool,
    params: &mut Vec<ReferenceOr<apistos::paths::Parameter>>,
    responses: &mut BTreeMap<String, ReferenceOr<apistos::paths::Response>>,
) {
    success_headers(doc, op, responses);
    match op {
        Operation::Get => {
            params.push(header_param(
                "If-None-Match",
                false,
                "`*` or entity tags (weak comparison): 304 when one is the item's current tag.",
                ENTITY_TAGS_HEADER_PATTERN,
                None,
            ));
            responses.insert(
                "304".to_owned(),
                ReferenceOr::Object(apistos::paths::Response {
                    description: "Not Modified: the item still has the given tag; no body."
                        .to_owned(),
                    ..Default::default()
                }),
            );
        }
        Operation::Patch | Operation::Delete | Operation::Restore => {
            if_match(doc, require_if_match, params, responses);
        }
        Operation::Index | Operation::Post => {}
    }
    if matches!(op, Operation::Post | Operation::Patch | Operation::Restore) {
        params.push(idempotency_key_param("The request"));
        responses.extend([
            problem_response(doc, StatusCode::CONFLICT),
            problem_response(doc, StatusCode::UNPROCESSABLE_ENTITY),
        ]);
    }
}

/// The headers of an operation's success answer: `ETag`, `Location` of a create and
/// `Idempotent-Replayed` of a write.
fn success_headers(
    doc: &mut ApiDoc,
    op: Operation,
    responses: &mut BTreeMap<String, ReferenceOr<apistos::paths::Response>>,
) {
    let text = doc.generator().subschema_for::<String>();
    let success = match op {
        Operation::Get | Operation::Patch | Operation::Restore => "200",
        Operation::Post => "201",
        Operation::Index | Operation::Delete => "",
    };
    if let Some(ReferenceOr::Object(r)) = responses.get_mut(success) {
        r.headers.insert(
            "ETag".to_owned(),
            response_header(
                "Strong entity tag of the item; changes whenever the item changes.",
                true,
                text.clone(),
            ),
        );
        if op == Operation::Post {
            r.headers.insert(
                "Location".to_owned(),
                response_header("Path of the new item.", true, text.clone()),
            );
        }
        if matches!(op, Operation::Post | Operation::Patch | Operation::Restore) {
            replayed_header(doc, r);
        }
    }
}

/// `If-Match` of a write by key, and the answers it adds: 412, 400 (malformed) and, when the
/// header is required, 428.
fn if_match(
    doc: &mut ApiDoc,
    require_if_match: bool,
    params: &mut Vec<ReferenceOr<apistos::paths::Parameter>>,
    responses: &mut BTreeMap<String, ReferenceOr<apistos::paths::Response>>,
) {
    params.push(header_param(
        "If-Match",
        require_if_match,
        "`*` or entity tags (strong comparison; weak tags never match): the write happens only if one is the item's current tag, otherwise 412.",
        ENTITY_TAGS_HEADER_PATTERN,
        None,
    ));
    // A malformed If-Match is 400 (PATCH documents 400 for its body already).
    responses.extend([
        problem_response(doc, StatusCode::PRECONDITION_FAILED),
        problem_response(doc, StatusCode::BAD_REQUEST),
    ]);
    if require_if_match {
        responses.extend([problem_response(doc, StatusCode::PRECONDITION_REQUIRED)]);
    }
}

/// A string header parameter: its syntax, and the longest value accepted when the server
/// bounds it. The entity-tag headers have no bound: their pattern alone says what is refused
/// (a length bound beside it leads API fuzzers to send values of that length that the
/// pattern does not match, as valid ones).
fn header_param(
    name: &str,
    required: bool,
    description: &str,
    pattern: &str,
    max_length: Option<u32>,
) -> ReferenceOr<apistos::paths::Parameter> {
    use schemars::schema::{InstanceType, SchemaObject, StringValidation};
    // The value's syntax, so that clients (and API fuzzers) know an empty or malformed one
    // is refused (400).
    let s = Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        string: Some(Box::new(StringValidation {
            max_length,
            min_length: max_length.map(|_| 1),
            pattern: Some(pattern.to_owned()),
        })),
        ..Default::default()
    });
    parameter(
        name,
        ParameterIn::Header,
        required,
        Some(description.to_owned()),
        s,
    )
}

/// The syntax of a batch item's `if_match`: `*`, or entity tags (optionally weak) separated
/// by commas.
pub(crate) const ENTITY_TAGS_PATTERN: &str =
    r#"^(\*|(W/)?"[\x21\x23-\x7e]*"( *, *(W/)?"[\x21\x23-\x7e]*")*)$"#;

/// The syntax of the `If-Match` and `If-None-Match` headers (RFC 9110): the same, or nothing
/// (an empty list, which matches no state).
const ENTITY_TAGS_HEADER_PATTERN: &str =
    r#"^(\*|((W/)?"[\x21\x23-\x7e]*"( *, *(W/)?"[\x21\x23-\x7e]*")*)?)$"#;

/// The syntax of `Idempotency-Key`: visible ASCII characters.
const IDEMPOTENCY_KEY_PATTERN: &str = r"^[\x21-\x7e]+$";

/// The `Idempotency-Key` request header of a write; `what` is what a key makes happen once
/// ("The request", "The whole batch").
pub(crate) fn idempotency_key_param(what: &str) -> ReferenceOr<apistos::paths::Parameter> {
    header_param(
        "Idempotency-Key",
        false,
        &format!("Up to 255 characters chosen by the client. {what} is processed once per caller and key: a retry with the same body receives the stored answer (header `Idempotent-Replayed: true`); another body with the same key is 422; a retry while the first is in progress is 409. Keys expire after IDEMPOTENCY_KEY_TTL seconds."),
        IDEMPOTENCY_KEY_PATTERN,
        Some(255),
    )
}

/// The `Idempotent-Replayed` header of a write's success answer.
pub(crate) fn replayed_header(doc: &mut ApiDoc, r: &mut apistos::paths::Response) {
    let flag = doc.generator().subschema_for::<bool>();
    r.headers.insert(
        "Idempotent-Replayed".to_owned(),
        response_header(
            "`true` when this is the stored answer to an earlier request with the same `Idempotency-Key` (nothing was written again); absent otherwise.",
            false,
            flag,
        ),
    );
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::ENTITY_TAGS_HEADER_PATTERN;
    use crate::crud::conditional::{if_match, if_none_match};
    use actix_web::http::header::{self, HeaderMap, HeaderValue};
    use proptest::prelude::*;

    proptest! {
        /// Every value the description's pattern admits is one the server accepts, so a
        /// client (or a fuzzer) that keeps to the description is never refused.
        #[test]
        fn every_value_the_pattern_admits_is_accepted(
            // The generator takes no anchors; the pattern is anchored at both ends.
            value in proptest::string::string_regex(
                ENTITY_TAGS_HEADER_PATTERN.trim_start_matches('^').trim_end_matches('$')
            ).unwrap()
        ) {
            let Ok(v) = HeaderValue::from_str(&value) else {
                // Not a header value at all; the pattern admits only visible ASCII.
                return Err(TestCaseError::fail(format!("{value:?}")));
            };
            for (name, parse) in [
                (header::IF_MATCH, if_match as fn(&HeaderMap) -> _),
                (header::IF_NONE_MATCH, if_none_match),
            ] {
                let mut h = HeaderMap::new();
                h.insert(name.clone(), v.clone());
                prop_assert!(parse(&h).is_ok(), "{name}: {value:?}");
            }
        }
    }
}

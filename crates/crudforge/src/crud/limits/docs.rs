//! A limit in the description: a sentence of the operation's text, its `x-rate-limit`
//! extension, the 429 answer, and the `RateLimit` / `RateLimit-Policy` headers of its answers.

use super::{At, Limited, Limits};
use crate::crud::options::Operation;
use crate::openapi::{problem_response, response_header, ApiDoc};
use actix_web::http::StatusCode;
use apistos::reference_or::ReferenceOr;
use std::collections::BTreeMap;

/// Adds the limit on `on` (if any) to an operation's description, extensions and answers.
pub(crate) fn document(
    doc: &mut ApiDoc,
    limits: &Limits,
    on: Limited,
    description: &mut Option<String>,
    extensions: &mut apistos::IndexMap<String, serde_json::Value>,
    responses: &mut BTreeMap<String, ReferenceOr<apistos::paths::Response>>,
) {
    let Some(limit) = limits.get(on) else {
        return;
    };
    let cost = match (limit.cost, on) {
        (Some(n), _) => format!("each request costs {n}"),
        (None, Limited::Operation(op)) => match (At::Op(op).fixed_cost(), op) {
            (None, _) => "a page costs one unit per `DEFAULT_PAGE_SIZE` items it asks \
                          (`page_size`; a page of the default size costs one)"
                .to_owned(),
            (Some(n), Operation::Post | Operation::Patch | Operation::Delete) => format!(
                "a request costs {n}, a batch write {}",
                At::Batch(op).fixed_cost().unwrap_or(n)
            ),
            (Some(n), _) => format!("a request costs {n}"),
        },
        (None, Limited::Door(door)) => {
            format!(
                "a request costs {}",
                At::Door(door).fixed_cost().unwrap_or(1)
            )
        }
    };
    let sentence = format!(
        "Limit: {} units per {} s, {}; {cost}. Past it: 429 with `Retry-After`; every answer \
         says the policy (`RateLimit-Policy`) and what is left (`RateLimit`).",
        limit.max,
        limit.window,
        limit.key.words()
    );
    let text = description.get_or_insert_with(String::new);
    if !text.is_empty() {
        text.push(' ');
    }
    text.push_str(&sentence);
    extensions.insert(
        "x-rate-limit".to_owned(),
        serde_json::json!({
            "policy": on.name(),
            "limit": limit.max,
            "window": limit.window,
            "key": match limit.key {
                super::LimitKey::Caller => "caller",
                super::LimitKey::Address => "address",
            },
            "cost": limit.cost,
        }),
    );
    let (k, v) = problem_response(doc, StatusCode::TOO_MANY_REQUESTS);
    responses.entry(k).or_insert(v);
    let text_schema = doc.generator().subschema_for::<String>();
    for response in responses.values_mut() {
        let ReferenceOr::Object(response) = response else {
            continue;
        };
        response.headers.insert(
            "RateLimit-Policy".to_owned(),
            response_header(
                "The limit: `\"<policy>\";q=<units>;w=<seconds>`.",
                true,
                text_schema.clone(),
            ),
        );
        response.headers.insert(
            "RateLimit".to_owned(),
            response_header(
                "What is left of the limit: `\"<policy>\";r=<units left>;t=<seconds until \
                 the window ends>`.",
                true,
                text_schema.clone(),
            ),
        );
    }
}

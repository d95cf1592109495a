//! What a history adds to the OpenAPI description (the `history` feature):
//! `GET <item>/history/`, its paging parameters and the `HistoryPage` schema.

use super::read::{self, HistoryPage, DEFAULT_LIMIT, MAX_LIMIT};
use crate::crud::mount::docs::callers;
use crate::crud::mount::docs::schema::item_params;
use crate::crud::options::Operation;
use crate::crud::shared::Mounted;
use crate::crud::Resource;
use crate::openapi::{json_response, parameter, problem_response, ApiDoc};
use crate::perms::Door;
use actix_web::http::StatusCode;
use apistos::paths::{Operation as OpDoc, OperationType, ParameterIn, Responses};
use std::collections::BTreeMap;

/// Adds the history operation of a blueprint that keeps one.
pub(super) fn document<R: Resource>(doc: &mut ApiDoc, m: &Mounted<R>) {
    let Some(get) = m.shared.ops.get(&Operation::Get) else {
        return;
    };
    let mut params = item_params(doc, m);
    let int = doc.generator().subschema_for::<i64>();
    let text = doc.generator().subschema_for::<String>();
    params.push(parameter(
        "limit",
        ParameterIn::Query,
        false,
        Some(format!(
            "Entries per page, 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT})."
        )),
        int,
    ));
    params.push(parameter(
        "cursor",
        ParameterIn::Query,
        false,
        Some("The `next_cursor` of the page before, for older entries.".into()),
        text,
    ));
    let page = doc.schema::<HistoryPage>();
    let mut responses = BTreeMap::from([(
        "200".to_owned(),
        json_response(
            "The item's entries, newest first, without the members the caller may not read.",
            page,
        ),
    )]);
    for status in [StatusCode::BAD_REQUEST, StatusCode::NOT_FOUND] {
        let (code, r) = problem_response(doc, status);
        responses.insert(code, r);
    }
    let (extensions, who, security) =
        callers::callers_at(doc, Operation::Get, get, m, Door::History, &mut responses);
    let about = "Who changed the item, when, in which request, and which members changed from what to what, under the item's read rules and each member's read rule (see docs/history.md).";
    doc.add_operation(
        &format!("{}/{}", m.item_path, read::SEGMENT),
        OperationType::Get,
        OpDoc {
            tags: vec![R::NAME.to_owned()],
            summary: Some(format!(
                "List the history of {} item",
                crate::crud::mount::docs::words::article(&crate::crud::mount::docs::words::words(
                    R::NAME
                ))
            )),
            description: Some(match who {
                Some(who) => format!("{about}\n\n{who}"),
                None => about.to_owned(),
            }),
            operation_id: Some(format!("list{}History", R::NAME)),
            parameters: params,
            responses: Responses {
                responses,
                ..Default::default()
            },
            security,
            extensions,
            ..Default::default()
        },
    );
}

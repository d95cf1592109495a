//! What soft delete adds to the OpenAPI description: the restore operation and the
//! `include_deleted` parameter of the reads.

use super::schema::item_params;
use super::words::words;
use super::OpParts;
use crate::crud::shared::Mounted;
use crate::crud::Resource;
use crate::openapi::{json_response, parameter, problem_response, ApiDoc};
use actix_web::http::StatusCode;
use apistos::paths::{OperationType, Parameter, ParameterIn, Response};
use apistos::reference_or::ReferenceOr;
use schemars::schema::Schema;
use std::collections::BTreeMap;

/// `POST` of an item's restore path (soft-delete resources): no body, the restored item.
pub(crate) fn restore_parts<R: Resource>(
    doc: &mut ApiDoc,
    m: &Mounted<R>,
    response: ReferenceOr<Schema>,
) -> OpParts {
    let params = item_params(doc, m);
    let mut responses = BTreeMap::new();
    responses.insert(
        "200".to_owned(),
        json_response("The restored item", response),
    );
    // Described by `describe_refusals` once every part has added its answers.
    responses.extend([
        problem_response(doc, StatusCode::NOT_FOUND),
        problem_response(doc, StatusCode::CONFLICT),
    ]);
    OpParts {
        path: crate::crud::route::restore_path(&m.item_path),
        method: OperationType::Post,
        summary: format!("Restore a deleted {}", words(R::NAME)),
        params,
        body: None,
        responses,
    }
}

/// Says in the restore's 404 and 409 answers who gets them: a restore that matches nothing is
/// 404 for everyone but administrators, so that it does not reveal deleted items.
pub(crate) fn describe_refusals(responses: &mut BTreeMap<String, ReferenceOr<Response>>) {
    let mut describe = |status: StatusCode, text: &str| {
        if let Some(ReferenceOr::Object(r)) = responses.get_mut(status.as_str()) {
            text.clone_into(&mut r.description);
        }
    };
    describe(
        StatusCode::NOT_FOUND,
        "No deleted item at this path that the caller may restore. Callers other than \
         administrators get this answer to every restore that matches nothing (an item that \
         is not deleted, one they may not write, none at all), so that a restore does not \
         reveal deleted items.",
    );
    describe(
        StatusCode::CONFLICT,
        "For administrators, the item is not deleted. For anyone: restoring it would conflict \
         with live items (a unique key, a hook's refusal), its key matches several items, or a \
         request with the same Idempotency-Key is still being processed.",
    );
}

/// The `include_deleted` query parameter of the reads of a soft-delete resource.
pub(crate) fn include_deleted_param(doc: &mut ApiDoc) -> ReferenceOr<Parameter> {
    let flag = doc.generator().subschema_for::<bool>();
    parameter(
        crate::crud::soft_delete::INCLUDE_DELETED,
        ParameterIn::Query,
        false,
        Some("`true`: deleted items too (administrators only: 401 anonymous, 403 others). Deleted items have a `deleted_at` time; `deleted_at__isnull=false` keeps only them.".into()),
        flag,
    )
}

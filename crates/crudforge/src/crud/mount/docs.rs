//! What each generated operation and custom route adds to the OpenAPI description.
//!
//! This file puts one operation together ([`OpParts`] and what every operation shares); the
//! files beside it hold the parts: `list` (INDEX: its parameters and page), `item` (`GET` and
//! `DELETE` of an item), `write` (`POST`, `PATCH` and their bodies), `headers` (conditional
//! requests and idempotency keys), `callers` (who may call, security), `custom` (custom
//! routes), `batch`, `aggregate` (`GET <prefix>aggregate/` and its answer), `soft_delete` and `rules` (read rules, named filters), on the shared `schema` and `words`
//! helpers; what optional surfaces add
//! comes from their blueprint parts (`Part::document`, `Part::extensions`).

mod aggregate;
mod batch;
pub(crate) mod callers;
pub(crate) mod custom;
pub(crate) mod headers;
mod item;
pub(crate) mod list;
mod rules;
pub(crate) mod schema;
mod soft_delete;
pub(crate) mod words;
mod write;

use crate::crud::options::{OpOptions, Operation};
use crate::crud::shared::Mounted;
use crate::crud::Resource;
use crate::openapi::{parameter, ApiDoc};
use apistos::paths::{
    Operation as OpDoc, OperationType, Parameter, ParameterIn, RequestBody, Responses,
};
use apistos::reference_or::ReferenceOr;
use schemars::schema::Schema;
use std::collections::BTreeMap;

/// Adds a mounted blueprint's operations and custom routes to the description.
pub(crate) fn document<R: Resource>(doc: &mut ApiDoc, m: &Mounted<R>) {
    for (op, options) in &m.shared.ops {
        document_op::<R>(doc, *op, options, m);
    }
    batch::document(doc, m);
    aggregate::document(doc, m);
    custom::document(doc, m);
    for part in m.shared.parts.iter() {
        part.document(m, doc);
    }
}

/// What one generated operation puts in the description, before the parts every operation
/// shares (conditional requests, callers, security).
pub(crate) struct OpParts {
    pub(crate) path: String,
    pub(crate) method: OperationType,
    pub(crate) summary: String,
    pub(crate) params: Vec<ReferenceOr<Parameter>>,
    pub(crate) body: Option<ReferenceOr<RequestBody>>,
    pub(crate) responses: BTreeMap<String, ReferenceOr<apistos::paths::Response>>,
}

/// Adds one generated operation: its own parts, then what every operation shares.
fn document_op<R: Resource>(doc: &mut ApiDoc, op: Operation, o: &OpOptions<R>, m: &Mounted<R>) {
    let response = response_schema(doc, o);
    let mut parts = match op {
        Operation::Index => list::index_parts(doc, o, m, response),
        Operation::Get => item::get_parts(doc, o, m, response),
        Operation::Post => write::post_parts(doc, o, m, response),
        Operation::Patch => write::patch_parts(doc, o, m, response),
        Operation::Delete => item::delete_parts(doc, m),
        Operation::Restore => soft_delete::restore_parts(doc, m, response),
    };
    if R::SOFT_DELETE && matches!(op, Operation::Index | Operation::Get) {
        parts.params.push(soft_delete::include_deleted_param(doc));
    }
    headers::document_writes(
        doc,
        op,
        m.shared.require_if_match,
        &mut parts.params,
        &mut parts.responses,
    );
    for (_, name, text) in m.flags.iter().filter(|(on, _, _)| *on == op) {
        let flag = doc.generator().subschema_for::<bool>();
        parts.params.push(parameter(
            name,
            ParameterIn::Query,
            false,
            Some((*text).to_owned()),
            flag,
        ));
    }
    let (mut extensions, description, security) =
        callers::callers(doc, op, o, m, &mut parts.responses);
    for part in m.shared.parts.iter() {
        part.extensions(op, &mut extensions);
    }
    if op == Operation::Restore {
        soft_delete::describe_refusals(&mut parts.responses);
    }
    let op_doc = OpDoc {
        tags: vec![R::NAME.to_owned()],
        summary: Some(parts.summary),
        description,
        operation_id: Some(op.operation_id(R::NAME)),
        parameters: parts.params,
        request_body: parts.body,
        responses: Responses {
            responses: parts.responses,
            ..Default::default()
        },
        security,
        extensions,
        ..Default::default()
    };
    doc.add_operation(&parts.path, parts.method, op_doc);
}

/// The schema of an operation's answer item: its presenter's, its substituted schema, or the
/// generated response.
pub(crate) fn response_schema<R: Resource>(
    doc: &mut ApiDoc,
    o: &OpOptions<R>,
) -> ReferenceOr<Schema> {
    match (o.presenter, o.response) {
        (Some((schema, _)), _) | (None, Some((schema, _))) => schema(doc),
        (None, None) => {
            let schema = doc.schema::<R::Response>();
            rules::mark_readers::<R>(doc, &schema);
            schema
        }
    }
}

//! What the batch form of POST, PATCH and DELETE adds to the OpenAPI description.

use super::callers::callers;
use super::headers::{idempotency_key_param, replayed_header, ENTITY_TAGS_PATTERN};
use super::response_schema;
use super::schema::{field_schema, path_params};
use super::words::{plural, words};
use super::write::{create_input, update_input};
use crate::crud::options::Operation;
use crate::crud::shared::Mounted;
use crate::crud::write::batch::{DELETE_PATH, PATH};
use crate::crud::Resource;
use crate::openapi::{json_body, json_response, problem_response, ApiDoc};
use actix_web::http::StatusCode;
use apistos::paths::{Operation as OpDoc, OperationType, Responses};
use apistos::reference_or::ReferenceOr;
use schemars::schema::{
    ArrayValidation, InstanceType, ObjectValidation, Schema, SchemaObject, SingleOrVec,
    StringValidation,
};
use std::collections::BTreeMap;

/// Adds the mounted batch operations of a blueprint.
pub(crate) fn document<R: Resource>(doc: &mut ApiDoc, m: &Mounted<R>) {
    for op in &m.batch {
        if let Some(o) = m.shared.ops.get(op) {
            document_op(doc, *op, o, m);
        }
    }
}

/// Adds the batch form of one operation.
fn document_op<R: Resource>(
    doc: &mut ApiDoc,
    op: Operation,
    o: &crate::crud::options::OpOptions<R>,
    m: &Mounted<R>,
) {
    let plural = plural(&words(R::NAME));
    let mut responses = BTreeMap::new();
    let Some(form) = form(doc, op, o, m, &mut responses) else {
        return;
    };
    if let Some(ReferenceOr::Object(r)) = responses.get_mut(&form.success) {
        replayed_header(doc, r);
    }
    for status in error_statuses(op, m.shared.require_if_match) {
        let (k, v) = problem_response(doc, status);
        responses.insert(k, v);
    }
    let mut params = path_params(doc, &m.shared.parents, None);
    params.push(idempotency_key_param("The whole batch"));
    let (extensions, who, security) = callers(doc, op, o, m, &mut responses);
    let about = about(op);
    let description = match who {
        Some(who) => format!("{about}\n\n{who}"),
        None => about,
    };
    let op_doc = OpDoc {
        tags: vec![R::NAME.to_owned()],
        summary: Some(format!("{} several {plural} at once", form.verb)),
        description: Some(description),
        operation_id: Some(format!("batch{}", capitalized(&op.operation_id(R::NAME)))),
        parameters: params,
        request_body: Some(json_body(items_body(form.item))),
        responses: Responses {
            responses,
            ..Default::default()
        },
        security,
        extensions,
        ..Default::default()
    };
    doc.add_operation(&format!("{}{}", m.prefix, form.path), form.method, op_doc);
}

/// What the batch form of an operation is: where it is mounted, how it is named and what each
/// of its items holds.
struct Form {
    /// Its path under the prefix.
    path: &'static str,
    method: OperationType,
    /// The verb of its summary.
    verb: &'static str,
    /// The schema of one item of the body.
    item: ReferenceOr<Schema>,
    /// The status of its success answer.
    success: String,
}

/// The batch form of `op` with its success answer put in `responses`; `None` for the
/// operations without a batch form.
fn form<R: Resource>(
    doc: &mut ApiDoc,
    op: Operation,
    o: &crate::crud::options::OpOptions<R>,
    m: &Mounted<R>,
    responses: &mut BTreeMap<String, ReferenceOr<apistos::paths::Response>>,
) -> Option<Form> {
    Some(match op {
        Operation::Post => {
            let answer = answer_schema(response_schema(doc, o));
            let (k, v) = (
                "201".to_owned(),
                json_response("Created: every item, in the order sent", answer),
            );
            responses.insert(k.clone(), v);
            Form {
                path: PATH,
                method: OperationType::Post,
                verb: "Create",
                item: create_input(doc, o, m),
                success: k,
            }
        }
        Operation::Patch => {
            let answer = answer_schema(response_schema(doc, o));
            let (k, v) = (
                "200".to_owned(),
                json_response("The updated items, in the order sent", answer),
            );
            responses.insert(k.clone(), v);
            let changes = update_input(doc, o, m);
            let item = addressed_item(doc, m, Some(changes));
            Form {
                path: PATH,
                method: OperationType::Patch,
                verb: "Update",
                item,
                success: k,
            }
        }
        Operation::Delete => {
            responses.insert(
                "204".to_owned(),
                ReferenceOr::Object(apistos::paths::Response {
                    description: "Deleted: every item".to_owned(),
                    ..Default::default()
                }),
            );
            let item = addressed_item(doc, m, None);
            Form {
                path: DELETE_PATH,
                method: OperationType::Post,
                verb: "Delete",
                item,
                success: "204".to_owned(),
            }
        }
        Operation::Index | Operation::Get | Operation::Restore => return None,
    })
}

/// The refusals of a batch: a conflict or an invalid item, and for writes by key a missing
/// item and the `If-Match` answers.
fn error_statuses(op: Operation, require_if_match: bool) -> Vec<StatusCode> {
    let mut statuses = vec![StatusCode::CONFLICT, StatusCode::UNPROCESSABLE_ENTITY];
    if op != Operation::Post {
        statuses.extend([StatusCode::NOT_FOUND, StatusCode::PRECONDITION_FAILED]);
        if require_if_match {
            statuses.push(StatusCode::PRECONDITION_REQUIRED);
        }
    }
    statuses
}

/// What a batch of `op` does, before who may call it.
fn about(op: Operation) -> String {
    format!(
        "Up to BATCH_MAX_ITEMS items in one request and one transaction: all are written or none. Each item goes through what a single {} goes through (rules, validators, hooks{}). A refusal answers one problem whose `errors` hold a JSON pointer to each item (and member) at fault, such as `/items/3/name`.",
        match op {
            Operation::Post => "create",
            Operation::Patch => "update",
            _ => "delete",
        },
        if op == Operation::Post {
            ""
        } else {
            ", the item's `if_match` as `If-Match`"
        },
    )
}

/// `createCritter` → `CreateCritter`.
fn capitalized(id: &str) -> String {
    let mut chars = id.chars();
    match chars.next() {
        Some(c) => c.to_ascii_uppercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

/// An object schema with `properties`, of which `required` are required.
fn object(properties: Vec<(&str, Schema)>, required: &[&str]) -> Schema {
    let mut v = ObjectValidation::default();
    for (name, schema) in properties {
        v.properties.insert(name.to_owned(), schema);
    }
    v.required = required.iter().map(|r| (*r).to_owned()).collect();
    Schema::Object(SchemaObject {
        instance_type: Some(SingleOrVec::Single(Box::new(InstanceType::Object))),
        object: Some(Box::new(v)),
        ..Default::default()
    })
}

/// An array schema of `item`s, at least `min` of them.
fn array(item: Schema, min: Option<u32>) -> Schema {
    Schema::Object(SchemaObject {
        instance_type: Some(SingleOrVec::Single(Box::new(InstanceType::Array))),
        array: Some(Box::new(ArrayValidation {
            items: Some(SingleOrVec::Single(Box::new(item))),
            min_items: min,
            ..Default::default()
        })),
        ..Default::default()
    })
}

fn plain(schema: ReferenceOr<Schema>) -> Schema {
    match schema {
        ReferenceOr::Object(s) => s,
        ReferenceOr::Reference { _ref } => Schema::new_ref(_ref),
    }
}

/// `{"items": [item, ...]}`.
fn items_body(item: ReferenceOr<Schema>) -> ReferenceOr<Schema> {
    ReferenceOr::Object(object(
        vec![("items", array(plain(item), Some(1)))],
        &["items"],
    ))
}

/// `{"data": [item, ...], "etags": [tag, ...]}`.
fn answer_schema(item: ReferenceOr<Schema>) -> ReferenceOr<Schema> {
    let tag = Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        ..Default::default()
    });
    let mut etags = array(tag, None);
    if let Schema::Object(o) = &mut etags {
        o.metadata().description =
            Some("Each item's entity tag, in the order of `data`, for a later `if_match`.".into());
    }
    ReferenceOr::Object(object(
        vec![("data", array(plain(item), None)), ("etags", etags)],
        &["data", "etags"],
    ))
}

/// An update (with `changes`) or delete item: the key, `if_match`, and the changes.
fn addressed_item<R: Resource>(
    doc: &mut ApiDoc,
    m: &Mounted<R>,
    changes: Option<ReferenceOr<Schema>>,
) -> ReferenceOr<Schema> {
    let key = m.shared.res_id;
    let if_match = Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        string: Some(Box::new(StringValidation {
            max_length: Some(1024),
            min_length: Some(1),
            pattern: Some(ENTITY_TAGS_PATTERN.to_owned()),
        })),
        metadata: Some(Box::new(schemars::schema::Metadata {
            description: Some(
                "As the `If-Match` header of a single write: `*` or entity tags; the item is written only if one is its current tag, otherwise the batch is refused (412)."
                    .to_owned(),
            ),
            ..Default::default()
        })),
        ..Default::default()
    });
    let mut properties = vec![(key.name, field_schema(doc, key)), ("if_match", if_match)];
    let mut required = vec![key.name];
    if let Some(changes) = changes {
        properties.push(("changes", plain(changes)));
        required.push("changes");
    }
    ReferenceOr::Object(object(properties, &required))
}

//! What the writes with a body add to the description: `POST` of a new item and `PATCH` of one,
//! and their bodies (without the members the path gives or the server sets, and the update's
//! without the create-only ones; administrators' members marked).

use super::schema::{item_params, path_params};
use super::words::{article, words};
use super::OpParts;
use crate::crud::options::{OpOptions, Operation};
use crate::crud::shared::Mounted;
use crate::crud::Resource;
use crate::openapi::{json_body, json_response, problem_response, ApiDoc};
use actix_web::http::StatusCode;
use apistos::paths::OperationType;
use apistos::reference_or::ReferenceOr;
use schemars::schema::Schema;
use std::collections::BTreeMap;

/// `POST` of a new item: the body without the members the path gives.
pub(crate) fn post_parts<R: Resource>(
    doc: &mut ApiDoc,
    o: &OpOptions<R>,
    m: &Mounted<R>,
    response: ReferenceOr<Schema>,
) -> OpParts {
    let params = path_params(doc, &m.shared.parents, None);
    let input = create_input(doc, o, m);
    let mut body = json_body(input.clone());
    for part in m.shared.parts.iter() {
        part.write_body(Operation::Post, &mut body, &input);
    }
    let mut responses = BTreeMap::new();
    responses.insert("201".to_owned(), json_response("Created", response));
    // 400/413/415/422 (body) are added by `ApiDoc::add_operation`.
    responses.extend([problem_response(doc, StatusCode::CONFLICT)]);
    OpParts {
        path: m.prefix.clone(),
        method: OperationType::Post,
        summary: format!("Create {}", article(&words(R::NAME))),
        params,
        body: Some(body),
        responses,
    }
}

/// `PATCH` of one item.
pub(crate) fn patch_parts<R: Resource>(
    doc: &mut ApiDoc,
    o: &OpOptions<R>,
    m: &Mounted<R>,
    response: ReferenceOr<Schema>,
) -> OpParts {
    let params = item_params(doc, m);
    let input = update_input(doc, o, m);
    let mut body = json_body(input.clone());
    for part in m.shared.parts.iter() {
        part.write_body(Operation::Patch, &mut body, &input);
    }
    let mut responses = BTreeMap::new();
    responses.insert(
        "200".to_owned(),
        json_response("The updated item", response),
    );
    // 400/413/415/422 (body) and 404 (path) are added by `ApiDoc::add_operation`.
    responses.extend([problem_response(doc, StatusCode::CONFLICT)]);
    OpParts {
        path: m.item_path.clone(),
        method: OperationType::Patch,
        summary: format!("Update {}", article(&words(R::NAME))),
        params,
        body: Some(body),
        responses,
    }
}

/// The body of a create: the input schema without the members the path gives nor those the
/// server sets, administrators' members marked.
pub(crate) fn create_input<R: Resource>(
    doc: &mut ApiDoc,
    o: &OpOptions<R>,
    m: &Mounted<R>,
) -> ReferenceOr<Schema> {
    let input = match o.input {
        Some((schema, _)) => schema(doc),
        None => doc.schema::<R::Create>(),
    };
    // Marked on the component, before it may be copied without the members below.
    doc.mark_admin_only(&input, m.shared.rules.admin_fields());
    doc.mark_passwords(
        &input,
        <R::Create as crate::crud::Validate>::PASSWORD_MEMBERS,
    );
    // Parent fields come from the path; the body may not carry them.
    let mut absent: Vec<&str> = m.shared.parents.iter().map(|(f, _)| f.name).collect();
    absent.extend(unsent::<R>(m, Operation::Post));
    doc.without_properties(input, &absent)
}

/// The body of an update without the members the server sets or that only a create sends,
/// administrators' members marked.
pub(crate) fn update_input<R: Resource>(
    doc: &mut ApiDoc,
    o: &OpOptions<R>,
    m: &Mounted<R>,
) -> ReferenceOr<Schema> {
    let input = match o.input {
        Some((schema, _)) => schema(doc),
        None => doc.schema::<R::Update>(),
    };
    let rules = &m.shared.rules;
    let admin: Vec<&str> = rules
        .admin_fields()
        .iter()
        .chain(rules.admin_update_fields())
        .copied()
        .collect();
    doc.mark_admin_only(&input, &admin);
    doc.mark_passwords(
        &input,
        <R::Update as crate::crud::Validate>::PASSWORD_MEMBERS,
    );
    let absent = unsent::<R>(m, Operation::Patch);
    doc.without_properties(input, &absent)
}

/// The members a body of `op` never carries for a client: those the model's server sets
/// (`set = ...`), on update the create-only ones, and those the blueprint's rules fill
/// ([`Rules::server_fields`](crate::perms::Rules::server_fields): a client sending one gets
/// 422, so the description leaves it out, and out of `required`). The model's own are absent
/// from its generated bodies already; they matter for a substituted input schema.
fn unsent<R: Resource>(m: &Mounted<R>, op: Operation) -> Vec<&'static str> {
    let update = op == Operation::Patch;
    let model = R::FIELDS
        .iter()
        .filter(|f| f.server_set || (update && f.create_only))
        .map(|f| f.name);
    model
        .chain(m.shared.rules.server_fields().iter().copied())
        .collect()
}

//! What a blueprint's custom routes add to the description: each documented route's
//! operation, from its `RouteDoc` (summary, body, success answer, errors, callers) and the
//! parameters of its path.

use super::callers::security;
use super::schema::path_params;
use crate::crud::route::{normalize_prefix, CustomRoute};
use crate::crud::shared::Mounted;
use crate::crud::Resource;
use crate::openapi::{json_body, json_response, parameter, problem_response, ApiDoc};
use actix_web::http::StatusCode;
use apistos::paths::{Operation as OpDoc, ParameterIn, Responses};
use apistos::reference_or::ReferenceOr;

/// Adds a mounted blueprint's documented custom routes to the description.
pub(crate) fn document<R: Resource>(doc: &mut ApiDoc, m: &Mounted<R>) {
    for c in m.custom.iter().filter(|c| !c.doc.undocumented) {
        let parameters = path_params(doc, &m.shared.parents, None);
        let parents: Vec<&str> = m.shared.parents.iter().map(|(_, q)| q.as_str()).collect();
        add(doc, &m.prefix, R::NAME, c, parameters, &parents);
    }
}

/// Adds routes under `prefix` that are not a blueprint's (a surface's routes beside a user
/// blueprint's), tagged `tag` unless they name their own.
#[allow(
    dead_code,
    reason = "a door of the seam: a build without the mail feature leaves it unused"
)]
pub(crate) fn document_routes(doc: &mut ApiDoc, prefix: &str, tag: &str, routes: &[CustomRoute]) {
    for c in routes.iter().filter(|c| !c.doc.undocumented) {
        add(doc, prefix, tag, c, Vec::new(), &[]);
    }
}

/// Adds one route's operation: `parameters` are those of the prefix, named `known`.
fn add(
    doc: &mut ApiDoc,
    prefix: &str,
    tag: &str,
    c: &CustomRoute,
    mut parameters: Vec<ReferenceOr<apistos::paths::Parameter>>,
    known: &[&str],
) {
    let mut responses = responses(doc, c);
    let path = format!("{prefix}{}", c.path);
    let mut extensions = apistos::IndexMap::new();
    if c.doc.public {
        extensions.insert("x-public".to_owned(), serde_json::Value::Bool(true));
    }
    // Parameters of the route's own path (`{user_id}/settings/`) must be declared too.
    let (_, own) = normalize_prefix(&c.path);
    for p in own {
        if !known.contains(&p.as_str()) {
            let s = doc.generator().subschema_for::<String>();
            parameters.push(parameter(&p, ParameterIn::Path, true, None, s));
        }
    }
    if c.doc.etag {
        super::headers::document_writes(
            doc,
            crate::crud::Operation::Get,
            false,
            &mut parameters,
            &mut responses.responses,
        );
    }
    let body = c.doc.body.map(|f| {
        let schema = f(doc);
        doc.mark_passwords(&schema, &c.doc.passwords);
        json_body(schema)
    });
    let op = OpDoc {
        tags: vec![c.doc.tag.clone().unwrap_or_else(|| tag.to_owned())],
        summary: c.doc.summary.clone(),
        description: Some(description(c)),
        operation_id: c.doc.operation_id.clone(),
        parameters,
        request_body: body,
        responses,
        security: security(c.doc.public),
        extensions,
        ..Default::default()
    };
    doc.add_operation(&path, c.method, op);
}

/// A custom route's answers: its success (status, schema, plain text too) and the error
/// statuses it documents.
fn responses(doc: &mut ApiDoc, c: &CustomRoute) -> Responses {
    let mut responses = Responses::default();
    let status = c
        .doc
        .status
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::OK);
    let reason = status.canonical_reason().unwrap_or("OK");
    let mut ok = match c.doc.response {
        Some(f) => json_response(reason, f(doc)),
        None => ReferenceOr::Object(apistos::paths::Response {
            description: reason.to_owned(),
            ..Default::default()
        }),
    };
    if let (true, ReferenceOr::Object(r)) = (c.doc.text, &mut ok) {
        let text = doc.schema::<String>();
        r.content.insert(
            "text/plain".to_owned(),
            apistos::paths::MediaType {
                schema: Some(text),
                ..Default::default()
            },
        );
    }
    responses.responses.insert(status.as_u16().to_string(), ok);
    for status in &c.doc.errors {
        if let Ok(s) = StatusCode::from_u16(*status) {
            let (k, v) = problem_response(doc, s);
            responses.responses.insert(k, v);
        }
    }
    responses
}

/// A custom route's description: its own text, then who may call it.
fn description(c: &CustomRoute) -> String {
    let who = match (&c.doc.callers, c.doc.public) {
        (Some(who), _) => format!("Who may call: {}.", who.trim_end_matches('.')),
        (None, true) => "Who may call: anyone, without a token.".to_owned(),
        (None, false) => "Who may call: any signed-in user.".to_owned(),
    };
    match &c.doc.description {
        Some(d) => format!("{d}\n\n{who}"),
        None => who,
    }
}

//! What the reads and deletes of one item add to the description: `GET` (with `fields` and
//! `expand`) and `DELETE` of an item path.

use super::schema::{fields_parameter, item_params};
use super::words::{article, words};
use super::OpParts;
use crate::crud::options::OpOptions;
use crate::crud::shared::Mounted;
use crate::crud::Resource;
use crate::openapi::{json_response, problem_response, ApiDoc};
use actix_web::http::StatusCode;
use apistos::paths::OperationType;
use apistos::reference_or::ReferenceOr;
use schemars::schema::Schema;
use std::collections::BTreeMap;

/// `GET` of one item.
pub(crate) fn get_parts<R: Resource>(
    doc: &mut ApiDoc,
    o: &OpOptions<R>,
    m: &Mounted<R>,
    response: ReferenceOr<Schema>,
) -> OpParts {
    let mut params = item_params(doc, m);
    params.push(fields_parameter::<R>(o));
    let response = doc.partial(response);
    crate::crud::relations::docs::describe::<R>(doc, &mut params, &response);
    let mut responses = BTreeMap::new();
    responses.extend([problem_response(doc, StatusCode::BAD_REQUEST)]);
    responses.insert("200".to_owned(), json_response("The item", response));
    responses.extend([problem_response(doc, StatusCode::NOT_FOUND)]);
    OpParts {
        path: m.item_path.clone(),
        method: OperationType::Get,
        summary: format!("Get one {}", words(R::NAME)),
        params,
        body: None,
        responses,
    }
}

/// `DELETE` of one item.
pub(crate) fn delete_parts<R: Resource>(doc: &mut ApiDoc, m: &Mounted<R>) -> OpParts {
    let params = item_params(doc, m);
    let mut responses = BTreeMap::new();
    responses.insert(
        "204".to_owned(),
        ReferenceOr::Object(apistos::paths::Response {
            description: "Deleted".to_owned(),
            ..Default::default()
        }),
    );
    responses.extend([
        problem_response(doc, StatusCode::NOT_FOUND),
        problem_response(doc, StatusCode::CONFLICT),
    ]);
    OpParts {
        path: m.item_path.clone(),
        method: OperationType::Delete,
        summary: format!("Delete {}", article(&words(R::NAME))),
        params,
        body: None,
        responses,
    }
}

//! What an export and an import add to the OpenAPI description (feature `export`):
//! `GET <prefix>export/` (the list's filters without paging, `format`; a CSV or NDJSON body) and
//! `POST <prefix>import/` (a CSV or NDJSON body, `mode`, `chunk_size`, `Idempotency-Key`; the
//! count created, or a chunked import's report).

use crate::crud::mount::docs::callers::callers_at;
use crate::crud::mount::docs::headers::idempotency_key_param;
use crate::crud::mount::docs::schema::{binary, integer_schema, path_params};
use crate::crud::mount::docs::words::{plural, words};
use crate::crud::mount::docs::{list, response_schema, OpParts};
use crate::crud::options::Operation;
use crate::crud::shared::Mounted;
use crate::crud::Resource;
use crate::error::Violation;
use crate::export::{CSV, EXPORT_PATH, IMPORT_PATH, NDJSON};
use crate::openapi::{json_response, parameter, problem_response, ApiDoc};
use crate::perms::Door;
use actix_web::http::StatusCode;
use apistos::paths::{
    MediaType, Operation as OpDoc, OperationType, ParameterIn, RequestBody, Response, Responses,
};
use apistos::reference_or::ReferenceOr;
use schemars::schema::{InstanceType, Schema, SchemaObject};
use std::collections::BTreeMap;

/// The answer of an import written all at once.
#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct ImportCreated {
    /// The number of rows created.
    created: u64,
}

/// Lines of an imported file written together.
#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct ImportChunk {
    /// The line of its first row (a CSV file's header is line 1).
    first_line: u64,
    /// The line of its last row.
    last_line: u64,
    /// Its rows.
    rows: u64,
}

/// The answer of a chunked import.
#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct ImportReport {
    /// The number of rows created.
    created: u64,
    /// The chunks committed.
    committed: Vec<ImportChunk>,
    /// The chunks refused: nothing of them was written.
    failed: Vec<ImportChunk>,
    /// Each refused row's members at fault; `pointer` is `/lines/<line>/<member>`.
    errors: Vec<Violation>,
}

/// The list parameters an export does not take.
const NOT_FOR_EXPORTS: [&str; 5] = ["page", "page_size", "cursor", "count", "expand"];

/// A string schema, with `values` as its enum when given.
fn string(values: &[&str]) -> Schema {
    Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        enum_values: (!values.is_empty())
            .then(|| values.iter().map(|v| serde_json::Value::from(*v)).collect()),
        ..Default::default()
    })
}

/// A CSV and an NDJSON body, both files (binary strings: generators hand them over as bytes).
fn files() -> BTreeMap<String, MediaType> {
    let text = || MediaType {
        schema: Some(ReferenceOr::Object(binary(
            "The file: CSV or NDJSON, as its type says.".to_owned(),
        ))),
        ..Default::default()
    };
    BTreeMap::from([(CSV.to_owned(), text()), (NDJSON.to_owned(), text())])
}

/// Adds the export and the import, when the blueprint offers them.
pub(super) fn document<R: Resource>(
    doc: &mut ApiDoc,
    m: &Mounted<R>,
    exports: bool,
    imports: bool,
) {
    if exports {
        export(doc, m);
    }
    if imports {
        import(doc, m);
    }
}

fn export<R: Resource>(doc: &mut ApiDoc, m: &Mounted<R>) {
    let Some(index) = m.shared.ops.get(&Operation::Index) else {
        return;
    };
    let item = response_schema(doc, index);
    let OpParts { mut params, .. } = list::index_parts(doc, index, m, item);
    params.retain(|p| match p {
        ReferenceOr::Object(p) => !NOT_FOR_EXPORTS.contains(&p.name.as_str()),
        ReferenceOr::Reference { .. } => true,
    });
    params.push(parameter(
        "format",
        ParameterIn::Query,
        false,
        Some("`csv` or `ndjson`; when absent, the first of `text/csv` and `application/x-ndjson` that `Accept` names, else CSV.".into()),
        string(&["csv", "ndjson"]),
    ));
    let mut responses = BTreeMap::from([(
        "200".to_owned(),
        ReferenceOr::Object(Response {
            description: "Every item the caller may list, streamed as an attachment. CSV: a header row of member names, then one row per item (text as it is, a text starting with `=`, `+`, `-`, `@`, a tab or a carriage return prefixed with `'`; numbers; `true`/`false`; an empty cell for null; JSON text for JSON members). NDJSON: one item per line, as the list renders it. An error after the first bytes cuts the transfer short.".to_owned(),
            content: files(),
            ..Default::default()
        }),
    )]);
    responses.extend([problem_response(doc, StatusCode::BAD_REQUEST)]);
    let (extensions, who, security) = callers_at(
        doc,
        Operation::Index,
        index,
        m,
        Door::Export,
        &mut responses,
    );
    let about = "The list, whole, as CSV or NDJSON, with its filters, `filter`, `scope`, `sort` and `fields` (no paging); the members the caller may not read are never written (see docs/data.md).";
    doc.add_operation(
        &format!("{}{EXPORT_PATH}", m.prefix),
        OperationType::Get,
        OpDoc {
            tags: vec![R::NAME.to_owned()],
            summary: Some(format!("Export {}", plural(&words(R::NAME)))),
            description: Some(match who {
                Some(who) => format!("{about}\n\n{who}"),
                None => about.to_owned(),
            }),
            operation_id: Some(format!("export{}", R::NAME)),
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

fn import<R: Resource>(doc: &mut ApiDoc, m: &Mounted<R>) {
    let Some(post) = m.shared.ops.get(&Operation::Post) else {
        return;
    };
    let mut params = path_params(doc, &m.shared.parents, None);
    params.push(parameter(
        "mode",
        ParameterIn::Query,
        false,
        Some("`all` (the default): every row or none, in one transaction. `chunked`: each chunk of `chunk_size` rows commits on its own.".into()),
        string(&["all", "chunked"]),
    ));
    params.push(parameter(
        "chunk_size",
        ParameterIn::Query,
        false,
        Some("Rows per chunk with `mode=chunked` (default 1000).".into()),
        integer_schema(1, u32::MAX),
    ));
    params.push(idempotency_key_param(
        "The whole import (all or nothing; refused with `mode=chunked`)",
    ));
    let created = doc.schema::<ImportCreated>();
    let report = doc.schema::<ImportReport>();
    let mut responses = BTreeMap::from([
        (
            "201".to_owned(),
            json_response("Created: every row (all or nothing)", created),
        ),
        (
            "200".to_owned(),
            json_response(
                "A chunked import's report: the chunks committed and the rows refused",
                report,
            ),
        ),
    ]);
    for status in [
        StatusCode::BAD_REQUEST,
        StatusCode::PAYLOAD_TOO_LARGE,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        StatusCode::UNPROCESSABLE_ENTITY,
    ] {
        responses.extend([problem_response(doc, status)]);
    }
    let (extensions, who, security) =
        callers_at(doc, Operation::Post, post, m, Door::Import, &mut responses);
    let about = "Creates the rows of a CSV file (a header row of member names; an empty cell leaves the member out) or an NDJSON file (one JSON object per line) as the batch create creates its items. A refused row is reported by its line (`pointer` `/lines/<line>/<member>`); a malformed file is 422 naming the line (see docs/data.md).";
    doc.add_operation(
        &format!("{}{IMPORT_PATH}", m.prefix),
        OperationType::Post,
        OpDoc {
            tags: vec![R::NAME.to_owned()],
            summary: Some(format!("Import {}", plural(&words(R::NAME)))),
            description: Some(match who {
                Some(who) => format!("{about}\n\n{who}"),
                None => about.to_owned(),
            }),
            operation_id: Some(format!("import{}", R::NAME)),
            parameters: params,
            request_body: Some(ReferenceOr::Object(RequestBody {
                content: files(),
                required: Some(true),
                ..Default::default()
            })),
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

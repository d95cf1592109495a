//! What file members add to the OpenAPI description (the `files` feature): a
//! `multipart/form-data` form of the create and update bodies (the other members as the JSON
//! part `data`, one binary part per file member), the download `GET <item>/files/{file_id}`
//! (the stored type, whole or a range, `304`, `416`) and `POST <item>/files/{file_id}/link`.

use crate::crud::mount::docs::callers;
use crate::crud::mount::docs::schema::{binary, item_params};
use crate::crud::options::Operation;
use crate::crud::shared::Mounted;
use crate::crud::Resource;
use crate::openapi::{json_response, parameter, problem_response, ApiDoc};
use crate::perms::Door;
use actix_web::http::StatusCode;
use apistos::paths::{
    Encoding, MediaType, Operation as OpDoc, OperationType, ParameterIn, RequestBody, Response,
    Responses,
};
use apistos::reference_or::ReferenceOr;
use schemars::schema::{InstanceType, Metadata, ObjectValidation, Schema, SchemaObject};
use std::collections::BTreeMap;

/// A signed download link.
#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct FileLink {
    /// The download URL with its `link` parameter: valid without a header, for the caller
    /// alone, until `expires_at`.
    url: String,
    /// When the link stops working (RFC 3339).
    expires_at: String,
}

/// Adds the `multipart/form-data` form to a create's or update's body: `data` holds `input`
/// (the JSON body), each file member is a binary part.
pub(crate) fn with_uploads<R: Resource>(
    body: &mut ReferenceOr<RequestBody>,
    input: ReferenceOr<Schema>,
) {
    let ReferenceOr::Object(body) = body else {
        return;
    };
    let input = match input {
        ReferenceOr::Object(s) => s,
        ReferenceOr::Reference { _ref } => Schema::new_ref(_ref),
    };
    let mut properties = BTreeMap::from([("data".to_owned(), input)]);
    let mut encoding = BTreeMap::from([(
        "data".to_owned(),
        Encoding {
            content_type: Some("application/json".to_owned()),
            ..Default::default()
        },
    )]);
    for f in R::FIELDS {
        let Some(rule) = f.file else { continue };
        let types = rule.types.join(", ");
        let part = match rule.max_count {
            None => binary(format!(
                "The file of `{}`: {types}, recognized from its content; at most {} bytes. Replaces the member's file; send `\"{}\": null` in `data` to remove it.",
                f.name, rule.max_size, f.name
            )),
            Some(most) => Schema::Object(SchemaObject {
                instance_type: Some(InstanceType::Array.into()),
                metadata: Some(Box::new(Metadata {
                    description: Some(format!(
                        "Files for the list `{}` (one part each, at most {most} in the list): {types}, recognized from their content; at most {} bytes each. On update they are added after the files the list keeps; send `\"{}\"` in `data` as the ids of the files to keep (in their order), or null to remove them all.",
                        f.name, rule.max_size, f.name
                    )),
                    ..Default::default()
                })),
                array: Some(Box::new(schemars::schema::ArrayValidation {
                    items: Some(binary(format!("One file of `{}`.", f.name)).into()),
                    max_items: Some(most),
                    ..Default::default()
                })),
                ..Default::default()
            }),
        };
        properties.insert(f.name.to_owned(), part);
        encoding.insert(
            f.name.to_owned(),
            Encoding {
                content_type: Some(types),
                ..Default::default()
            },
        );
    }
    let schema = Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::Object.into()),
        metadata: Some(Box::new(Metadata {
            description: Some(
                "The members as the JSON part `data`, and one part per file member.".to_owned(),
            ),
            ..Default::default()
        })),
        object: Some(Box::new(ObjectValidation {
            properties,
            ..Default::default()
        })),
        ..Default::default()
    });
    body.content.insert(
        "multipart/form-data".to_owned(),
        MediaType {
            schema: Some(ReferenceOr::Object(schema)),
            encoding,
            ..Default::default()
        },
    );
}

/// The query parameter that carries a signed link's token.
const LINK_PARAM: &str = "link";

/// The name of the signed links' security scheme.
const LINK_SCHEME: &str = "signedLink";

/// What a signed link is, as the description says it.
const LINK_WORDS: &str = "A signed link's token (`POST .../link`): the download without `Authorization`, for the user it was made for.";

/// Adds the download and link operations of a resource with file members and a `GET`.
pub(crate) fn document<R: Resource>(doc: &mut ApiDoc, m: &Mounted<R>) {
    let Some(get) = m.shared.ops.get(&Operation::Get) else {
        return;
    };
    let types: Vec<&str> = R::FIELDS
        .iter()
        .filter_map(|f| f.file)
        .flat_map(|r| r.types.iter().copied())
        .collect();
    if types.is_empty() {
        return;
    }
    let path = format!(
        "{}/{}/{{{}}}",
        m.item_path,
        crate::files::handlers::SEGMENT,
        crate::files::handlers::FILE_PARAM
    );
    let mut params = item_params(doc, m);
    let uuid = doc.generator().subschema_for::<uuid::Uuid>();
    params.push(parameter(
        crate::files::handlers::FILE_PARAM,
        ParameterIn::Path,
        true,
        Some("The file's `id`, as the item's file member gives it.".into()),
        uuid,
    ));
    let mut download_params = params.clone();
    let text = doc.generator().subschema_for::<String>();
    let mut boxes: Vec<String> = R::FIELDS
        .iter()
        .filter_map(|f| f.file)
        .flat_map(|r| r.thumbs.iter().map(|(w, h)| format!("{w}x{h}")))
        .collect();
    boxes.sort();
    boxes.dedup();
    if !boxes.is_empty() {
        let schema = Schema::Object(SchemaObject {
            instance_type: Some(InstanceType::String.into()),
            enum_values: Some(
                boxes
                    .iter()
                    .map(|b| serde_json::Value::from(b.as_str()))
                    .collect(),
            ),
            ..Default::default()
        });
        download_params.push(parameter(
            "thumb",
            ParameterIn::Query,
            false,
            Some("A thumbnail of an image instead of the file: one of the boxes its member declares (400 otherwise), made on the first request and kept; PNG, or JPEG for a JPEG.".into()),
            schema,
        ));
    }
    for header in ["Range", "If-None-Match", "If-Range"] {
        download_params.push(parameter(
            header,
            ParameterIn::Header,
            false,
            Some(match header {
                "Range" => {
                    "One byte range (`bytes=0-1023`, `bytes=-500`): answered with 206.".into()
                }
                "If-None-Match" => "The file's `ETag`: 304 when it has not changed.".into(),
                _ => "The file's `ETag`: the range only while it is unchanged.".into(),
            }),
            text.clone(),
        ));
    }
    let content: BTreeMap<String, MediaType> = types
        .iter()
        .map(|t| {
            (
                (*t).to_owned(),
                MediaType {
                    schema: Some(ReferenceOr::Object(binary("The file's bytes.".to_owned()))),
                    ..Default::default()
                },
            )
        })
        .collect();
    let file_response = |description: &str| {
        ReferenceOr::Object(Response {
            description: description.to_owned(),
            content: content.clone(),
            ..Default::default()
        })
    };
    let mut responses = BTreeMap::from([
        (
            "200".to_owned(),
            file_response("The file, with its stored type, `X-Content-Type-Options: nosniff`, a sandboxing `Content-Security-Policy`, `Content-Disposition` (inline for raster images, attachment otherwise) and `ETag`."),
        ),
        ("206".to_owned(), file_response("The range asked for, with `Content-Range`.")),
        (
            "304".to_owned(),
            ReferenceOr::Object(Response {
                description: "Not modified (`If-None-Match`).".to_owned(),
                ..Default::default()
            }),
        ),
        (
            "416".to_owned(),
            ReferenceOr::Object(Response {
                description: "The range is outside the file (`Content-Range: bytes */<size>`).".to_owned(),
                ..Default::default()
            }),
        ),
    ]);
    for status in [StatusCode::UNAUTHORIZED, StatusCode::FORBIDDEN] {
        let (code, r) = problem_response(doc, status);
        responses.insert(code, r);
    }
    let (extensions, who, security) =
        callers::callers_at(doc, Operation::Get, get, m, Door::Download, &mut responses);
    // Where the download needs a credential, a signed link is a second one (a scheme of its
    // own, so that a client knows it takes either); where it needs none, an optional parameter.
    let download_security = match security {
        Some(ways) if !ways.is_empty() => {
            doc.add_security_scheme(
                LINK_SCHEME,
                apistos::security::SecurityScheme {
                    _type: apistos::security::SecurityType::ApiKey(apistos::security::ApiKey {
                        name: LINK_PARAM.to_owned(),
                        _in: apistos::security::ApiKeyIn::Query,
                    }),
                    description: Some(LINK_WORDS.to_owned()),
                    extensions: Default::default(),
                },
            );
            let mut either = ways;
            either.push(apistos::security::SecurityRequirement {
                requirements: BTreeMap::from([(LINK_SCHEME.to_owned(), Vec::new())]),
            });
            Some(either)
        }
        none => {
            download_params.push(parameter(
                LINK_PARAM,
                ParameterIn::Query,
                false,
                Some(LINK_WORDS.into()),
                text,
            ));
            none
        }
    };
    let about = "The file under the item's read rules and its member's read rule, as a `GET` of the item would show it (see docs/files.md).";
    doc.add_operation(
        &path,
        OperationType::Get,
        OpDoc {
            tags: vec![R::NAME.to_owned()],
            summary: Some(format!(
                "Download a file of {} item",
                crate::crud::mount::docs::words::article(&crate::crud::mount::docs::words::words(
                    R::NAME
                ))
            )),
            description: Some(match who {
                Some(who) => format!("{about}\n\n{who}"),
                None => about.to_owned(),
            }),
            operation_id: Some(format!("download{}File", R::NAME)),
            parameters: download_params,
            responses: Responses {
                responses,
                ..Default::default()
            },
            security: download_security,
            extensions,
            ..Default::default()
        },
    );
    let link = doc.schema::<FileLink>();
    let mut responses = BTreeMap::from([(
        "200".to_owned(),
        json_response("A signed link to the file, for the caller alone.", link),
    )]);
    let (code, r) = problem_response(doc, StatusCode::UNAUTHORIZED);
    responses.insert(code, r);
    doc.add_operation(
        &format!("{path}/link"),
        OperationType::Post,
        OpDoc {
            tags: vec![R::NAME.to_owned()],
            summary: Some(format!("Get a signed link to a file of {} item", crate::crud::mount::docs::words::article(&crate::crud::mount::docs::words::words(R::NAME)))),
            description: Some("A URL that downloads the file without `Authorization` (an `<img src>`), for the caller alone, valid `FILES_LINK_SECONDS`.".into()),
            operation_id: Some(format!("link{}File", R::NAME)),
            parameters: params,
            responses: Responses {
                responses,
                ..Default::default()
            },
            security: callers::security(false),
            ..Default::default()
        },
    );
}

//! The OpenAPI description (apistos models, schemars schemas) and the self-hosted docs page.

use crate::error::{Problem, PROBLEM_CONTENT_TYPE};
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use apistos::components::Components;
use apistos::info::Info;
use apistos::paths::{
    MediaType, Operation, OperationType, Parameter, ParameterDefinition, ParameterIn, PathItem,
    RequestBody, Response,
};
use apistos::reference_or::ReferenceOr;
use apistos::OpenApi;
use schemars::gen::{SchemaGenerator, SchemaSettings};
use schemars::schema::Schema;
use schemars::JsonSchema;
use std::collections::BTreeMap;

/// Path of the JSON description.
pub const OPENAPI_PATH: &str = "/openapi.json";
/// Path of the interactive docs page.
pub const DOCS_PATH: &str = "/docs";
/// Name of the bearer-token security scheme.
pub const BEARER_SCHEME: &str = "bearerAuth";

/// The OpenAPI description under construction: paths, operations and component schemas.
pub struct ApiDoc {
    spec: OpenApi,
    gen: SchemaGenerator,
    max_page_size: u32,
    filter_max_length: u32,
}

impl std::fmt::Debug for ApiDoc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiDoc")
            .field("paths", &self.spec.paths.paths.len())
            .finish()
    }
}

impl ApiDoc {
    /// An empty description with the given title and version label.
    pub fn new(title: &str, version: &str) -> Self {
        ApiDoc {
            spec: OpenApi {
                info: Info {
                    title: title.to_owned(),
                    version: version.to_owned(),
                    ..Default::default()
                },
                ..Default::default()
            },
            gen: SchemaSettings::openapi3().into_generator(),
            max_page_size: crate::Config::default().list.max_page_size,
            filter_max_length: crate::Config::default().list.filter_max_length,
        }
    }

    /// Sets the largest `page_size` list operations document (the configured `MAX_PAGE_SIZE`).
    #[must_use]
    pub fn with_max_page_size(mut self, max: u32) -> Self {
        self.max_page_size = max;
        self
    }

    /// Sets the longest `filter` expression list operations document (`FILTER_MAX_LENGTH`).
    #[must_use]
    pub fn with_filter_max_length(mut self, max: u32) -> Self {
        self.filter_max_length = max;
        self
    }

    /// The longest `filter` expression list operations document.
    pub fn filter_max_length(&self) -> u32 {
        self.filter_max_length
    }

    /// The largest `page_size` list operations document.
    pub fn max_page_size(&self) -> u32 {
        self.max_page_size
    }

    /// A reference to `T`'s schema, adding it (and what it uses) to the components.
    pub fn schema<T: JsonSchema>(&mut self) -> ReferenceOr<Schema> {
        ReferenceOr::Object(self.gen.subschema_for::<T>())
    }

    /// `schema` without the named properties (as an inline schema when it had to change):
    /// the body of a nested POST, whose parent fields come from the path.
    pub fn without_properties(
        &mut self,
        schema: ReferenceOr<Schema>,
        names: &[&str],
    ) -> ReferenceOr<Schema> {
        let ReferenceOr::Object(Schema::Object(obj)) = &schema else {
            return schema;
        };
        let resolved = match obj.reference.as_deref() {
            Some(r) => {
                let name = r.rsplit('/').next().unwrap_or(r);
                match self.gen.definitions().get(name) {
                    Some(Schema::Object(o)) => o.clone(),
                    _ => return schema,
                }
            }
            None => obj.clone(),
        };
        let Some(validation) = resolved.object.as_deref() else {
            return schema;
        };
        if !names.iter().any(|n| validation.properties.contains_key(*n)) {
            return schema;
        }
        let mut out = resolved;
        if let Some(v) = out.object.as_deref_mut() {
            for n in names {
                v.properties.remove(*n);
                v.required.remove(*n);
            }
        }
        ReferenceOr::Object(Schema::Object(out))
    }

    /// The schema generator, for callers that build schemas by hand.
    pub fn generator(&mut self) -> &mut SchemaGenerator {
        &mut self.gen
    }

    /// Adds an operation. `path` uses OpenAPI's `{param}` form. Operation ids must be unique
    /// in a description: when a resource is mounted twice, the second `listCritter` becomes
    /// `listCritter_2`.
    ///
    /// An operation that takes a JSON body also gets the problem responses every such body can
    /// cause (400 malformed JSON, 413 too large, 415 not JSON, 422 wrong shape), and one with
    /// path parameters gets 404, unless it documents them itself.
    pub fn add_operation(&mut self, path: &str, method: OperationType, mut op: Operation) {
        // A path value that does not parse, or names nothing, is 404.
        let path_errors: &[StatusCode] = if path.contains('{') {
            &[StatusCode::NOT_FOUND]
        } else {
            &[]
        };
        let body_errors: &[StatusCode] = if op.request_body.is_some() {
            &[
                StatusCode::BAD_REQUEST,
                StatusCode::PAYLOAD_TOO_LARGE,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                StatusCode::UNPROCESSABLE_ENTITY,
            ]
        } else {
            &[]
        };
        for status in path_errors.iter().chain(body_errors) {
            if !op.responses.responses.contains_key(status.as_str()) {
                let (k, v) = problem_response(self, *status);
                op.responses.responses.insert(k, v);
            }
        }
        if let Some(id) = op.operation_id.clone() {
            let mut n = 1;
            let mut candidate = id.clone();
            while self.has_operation_id(&candidate) {
                n += 1;
                candidate = format!("{id}_{n}");
            }
            op.operation_id = Some(candidate);
        }
        let item: &mut PathItem = self.spec.paths.paths.entry(path.to_owned()).or_default();
        item.operations.insert(method, op);
    }

    /// Whether an operation with this id exists.
    pub fn has_operation_id(&self, id: &str) -> bool {
        self.spec.paths.paths.values().any(|item| {
            item.operations
                .values()
                .any(|op| op.operation_id.as_deref() == Some(id))
        })
    }

    /// Finishes the description.
    pub fn finish(mut self) -> OpenApi {
        let defs = self.gen.take_definitions();
        let components = self.spec.components.get_or_insert_with(Components::default);
        for (name, schema) in defs {
            components.schemas.insert(name, ReferenceOr::Object(schema));
        }
        components.security_schemes.insert(
            BEARER_SCHEME.to_owned(),
            ReferenceOr::Object(apistos::security::SecurityScheme {
                _type: apistos::security::SecurityType::Http(apistos::security::Http {
                    scheme: "bearer".to_owned(),
                    bearer_format: Some("JWT".to_owned()),
                }),
                description: Some("An access token from the login endpoint.".to_owned()),
                extensions: Default::default(),
            }),
        );
        self.spec
    }
}

/// A JSON response with `T`'s schema.
pub fn json_response(description: &str, schema: ReferenceOr<Schema>) -> ReferenceOr<Response> {
    ReferenceOr::Object(Response {
        description: description.to_owned(),
        content: BTreeMap::from([(
            "application/json".to_owned(),
            MediaType {
                schema: Some(schema),
                ..Default::default()
            },
        )]),
        ..Default::default()
    })
}

/// A problem+json error response.
pub fn problem_response(doc: &mut ApiDoc, status: StatusCode) -> (String, ReferenceOr<Response>) {
    let schema = doc.schema::<Problem>();
    (
        status.as_u16().to_string(),
        ReferenceOr::Object(Response {
            description: status.canonical_reason().unwrap_or("Error").to_owned(),
            content: BTreeMap::from([(
                PROBLEM_CONTENT_TYPE.to_owned(),
                MediaType {
                    schema: Some(schema),
                    ..Default::default()
                },
            )]),
            ..Default::default()
        }),
    )
}

/// A JSON request body.
pub fn json_body(schema: ReferenceOr<Schema>) -> ReferenceOr<RequestBody> {
    ReferenceOr::Object(RequestBody {
        content: BTreeMap::from([(
            "application/json".to_owned(),
            MediaType {
                schema: Some(schema),
                ..Default::default()
            },
        )]),
        required: Some(true),
        ..Default::default()
    })
}

/// A parameter with a schema.
pub fn parameter(
    name: &str,
    location: ParameterIn,
    required: bool,
    description: Option<String>,
    schema: Schema,
) -> ReferenceOr<Parameter> {
    ReferenceOr::Object(Parameter {
        name: name.to_owned(),
        _in: location,
        required: Some(required),
        description,
        definition: Some(ParameterDefinition::Schema(Box::new(ReferenceOr::Object(
            schema,
        )))),
        ..Default::default()
    })
}

/// Minimal HTML escaping for text placed in the docs page.
/// The pattern of every free-text string: no NUL character, which PostgreSQL cannot store
/// and which the service refuses on both backends (docs/errors.md).
pub const NO_NUL_PATTERN: &str = "^[^\\u0000]*$";

/// Adds [`NO_NUL_PATTERN`] to every string schema of a description that has no format, enum
/// or pattern of its own, so that the description states what the service accepts.
pub fn forbid_nul_in_text(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            let free_text = m.get("type").and_then(|t| t.as_str()) == Some("string")
                && !m.contains_key("format")
                && !m.contains_key("enum")
                && !m.contains_key("pattern");
            if free_text {
                m.insert("pattern".into(), NO_NUL_PATTERN.into());
            }
            m.values_mut().for_each(forbid_nul_in_text);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(forbid_nul_in_text),
        _ => {}
    }
}

fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Registers `/openapi.json` and the docs page (`/docs`, assets under `/docs/`), all served
/// by the service itself: the page needs no internet access.
pub(crate) fn register(cfg: &mut web::ServiceConfig, title: &str, spec_json: std::sync::Arc<str>) {
    let json = spec_json.clone();
    cfg.service(web::resource(OPENAPI_PATH).route(web::get().to(move || {
        let json = json.clone();
        async move {
            HttpResponse::Ok()
                .content_type("application/json")
                .body(json.to_string())
        }
    })));
    cfg.service(web::resource(DOCS_PATH).route(web::get().to(|| async {
        HttpResponse::PermanentRedirect()
            .insert_header(("Location", "/docs/"))
            .finish()
    })));
    cfg.service(swagger_ui_dist::generate_scope(
        swagger_ui_dist::ApiDefinition {
            uri_prefix: DOCS_PATH.to_owned(),
            api_definition: swagger_ui_dist::OpenApiSource::InlineWithName {
                definition: spec_json.to_string(),
                uri: format!("{DOCS_PATH}/openapi.json"),
            },
            title: Some(escape_html(title)),
        },
    ));
}

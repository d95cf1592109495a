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
pub(crate) const OPENAPI_PATH: &str = "/openapi.json";
/// Path of the interactive docs page.
pub(crate) const DOCS_PATH: &str = "/docs";
/// Name of the bearer-token security scheme.
pub(crate) const BEARER_SCHEME: &str = "bearerAuth";

/// The OpenAPI description under construction: paths, operations and component schemas.
pub struct ApiDoc {
    spec: OpenApi,
    gen: SchemaGenerator,
    max_page_size: u32,
    filter_max_length: u32,
    password_min_length: usize,
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
    pub(crate) fn new(title: &str, version: &str) -> Self {
        ApiDoc {
            spec: OpenApi {
                info: Info {
                    title: title.to_owned(),
                    version: version.to_owned(),
                    ..Default::default()
                },
                // The service itself: clients are pointed at the host that serves this
                // description.
                servers: vec![apistos::server::Server {
                    url: "/".to_owned(),
                    description: Some("The server that serves this description".to_owned()),
                    ..Default::default()
                }],
                ..Default::default()
            },
            gen: SchemaSettings::openapi3().into_generator(),
            max_page_size: crate::Config::default().list.max_page_size,
            filter_max_length: crate::Config::default().list.filter_max_length,
            password_min_length: crate::Config::default().auth.password_min_length,
        }
    }

    /// Sets the shortest password the description states (`minLength` of password members:
    /// the configured `PASSWORD_MIN_LENGTH`).
    #[must_use]
    pub(crate) fn with_password_min_length(mut self, min: usize) -> Self {
        self.password_min_length = min;
        self
    }

    /// Sets `minLength` of the string members `names` of `schema` (a component, or an inline
    /// schema) to the shortest password accepted: those members are passwords.
    pub(crate) fn mark_passwords(&mut self, schema: &ReferenceOr<Schema>, names: &[&str]) {
        let min = u32::try_from(self.password_min_length).unwrap_or(u32::MAX);
        let ReferenceOr::Object(Schema::Object(obj)) = schema else {
            return;
        };
        let def = match obj.reference.as_deref() {
            Some(r) => {
                let name = r.rsplit('/').next().unwrap_or(r);
                match self.gen.definitions_mut().get_mut(name) {
                    Some(Schema::Object(def)) => def,
                    _ => return,
                }
            }
            None => return,
        };
        let Some(object) = def.object.as_deref_mut() else {
            return;
        };
        for n in names {
            if let Some(Schema::Object(member)) = object.properties.get_mut(*n) {
                member.string().min_length = Some(min);
            }
        }
    }

    /// Sets the largest `page_size` list operations document (the configured `MAX_PAGE_SIZE`).
    #[must_use]
    pub(crate) fn with_max_page_size(mut self, max: u32) -> Self {
        self.max_page_size = max;
        self
    }

    /// Sets the longest `filter` expression list operations document (`FILTER_MAX_LENGTH`).
    #[must_use]
    pub(crate) fn with_filter_max_length(mut self, max: u32) -> Self {
        self.filter_max_length = max;
        self
    }

    /// The longest `filter` expression list operations document.
    pub(crate) fn filter_max_length(&self) -> u32 {
        self.filter_max_length
    }

    /// The largest `page_size` list operations document.
    pub(crate) fn max_page_size(&self) -> u32 {
        self.max_page_size
    }

    /// A reference to `T`'s schema, adding it (and what it uses) to the components.
    pub fn schema<T: JsonSchema>(&mut self) -> ReferenceOr<Schema> {
        ReferenceOr::Object(self.gen.subschema_for::<T>())
    }

    /// `schema` without the named properties (as an inline schema when it had to change):
    /// the body of a nested POST, whose parent fields come from the path.
    pub(crate) fn without_properties(
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

    /// The answer schema of an operation that takes `fields` (INDEX, GET): `schema` with no
    /// required member, since each member is absent unless asked for. A component `Foo`
    /// becomes the component `PartialFoo` (added once); an inline schema is changed in place.
    pub(crate) fn partial(&mut self, schema: ReferenceOr<Schema>) -> ReferenceOr<Schema> {
        let ReferenceOr::Object(Schema::Object(obj)) = &schema else {
            return schema;
        };
        let note = "Members left out by the request's `fields` are absent.";
        let strip = |mut o: schemars::schema::SchemaObject| {
            if let Some(v) = o.object.as_deref_mut() {
                v.required.clear();
            }
            let m = o.metadata();
            m.description = Some(match m.description.take() {
                Some(d) => format!("{} {note}", d.trim_end()),
                None => note.to_owned(),
            });
            o
        };
        let Some(r) = obj.reference.as_deref() else {
            return ReferenceOr::Object(Schema::Object(strip(obj.clone())));
        };
        let name = r.rsplit('/').next().unwrap_or(r);
        let partial = format!("Partial{name}");
        if !self.gen.definitions().contains_key(&partial) {
            let Some(Schema::Object(o)) = self.gen.definitions().get(name).cloned() else {
                return schema;
            };
            let mut o = strip(o);
            if let Some(m) = o.metadata.as_deref_mut() {
                m.title = None;
            }
            self.gen
                .definitions_mut()
                .insert(partial.clone(), Schema::Object(o));
        }
        let prefix = &r[..r.len() - name.len()];
        ReferenceOr::Object(Schema::new_ref(format!("{prefix}{partial}")))
    }

    /// Marks the members `names` of the component `schema` refers to as administrators'
    /// only: `x-admin-only: true` and a sentence in their description.
    pub(crate) fn mark_admin_only(&mut self, schema: &ReferenceOr<Schema>, names: &[&str]) {
        let ReferenceOr::Object(Schema::Object(obj)) = schema else {
            return;
        };
        let Some(r) = obj.reference.as_deref() else {
            return;
        };
        let name = r.rsplit('/').next().unwrap_or(r);
        let Some(Schema::Object(def)) = self.gen.definitions_mut().get_mut(name) else {
            return;
        };
        let Some(object) = def.object.as_deref_mut() else {
            return;
        };
        for n in names {
            let Some(Schema::Object(member)) = object.properties.get_mut(*n) else {
                continue;
            };
            if member.extensions.contains_key("x-admin-only") {
                continue;
            }
            member
                .extensions
                .insert("x-admin-only".to_owned(), serde_json::Value::Bool(true));
            let m = member.metadata();
            let note = "Only administrators may send it (others get 403).";
            m.description = Some(match m.description.take() {
                Some(d) => format!("{} {note}", d.trim_end()),
                None => note.to_owned(),
            });
        }
    }

    /// The schema generator, for callers that build schemas by hand.
    pub(crate) fn generator(&mut self) -> &mut SchemaGenerator {
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
        // Every other failure (500, 503, a 405 from routing, ...) is a problem too.
        if op.responses.default.is_none() {
            let (_, mut v) = problem_response(self, StatusCode::INTERNAL_SERVER_ERROR);
            if let ReferenceOr::Object(r) = &mut v {
                r.description = "Any other error, as a problem".to_owned();
            }
            op.responses.default = Some(v);
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

    /// The operation documented for `method` at `path`, to amend it.
    pub(crate) fn operation_mut(
        &mut self,
        path: &str,
        method: OperationType,
    ) -> Option<&mut Operation> {
        self.spec
            .paths
            .paths
            .get_mut(path)?
            .operations
            .get_mut(&method)
    }

    /// Whether an operation with this id exists.
    pub(crate) fn has_operation_id(&self, id: &str) -> bool {
        self.spec.paths.paths.values().any(|item| {
            item.operations
                .values()
                .any(|op| op.operation_id.as_deref() == Some(id))
        })
    }

    /// Declares a way to authenticate besides the bearer token (`components.securitySchemes`),
    /// for a surface whose operations take a credential of their own.
    #[allow(
        dead_code,
        reason = "a door of the seam: a build without optional surfaces leaves it unused"
    )]
    pub(crate) fn add_security_scheme(
        &mut self,
        name: &str,
        scheme: apistos::security::SecurityScheme,
    ) {
        self.spec
            .components
            .get_or_insert_with(Components::default)
            .security_schemes
            .insert(name.to_owned(), ReferenceOr::Object(scheme));
    }

    /// Finishes the description.
    pub(crate) fn finish(mut self) -> OpenApi {
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

/// A response header with a schema.
pub(crate) fn response_header(
    description: &str,
    required: bool,
    schema: Schema,
) -> ReferenceOr<apistos::paths::Header> {
    ReferenceOr::Object(apistos::paths::Header {
        description: Some(description.to_owned()),
        required: Some(required),
        definition: Some(ParameterDefinition::Schema(Box::new(ReferenceOr::Object(
            schema,
        )))),
        ..Default::default()
    })
}

/// A problem+json error response; 429 and 503 declare their `Retry-After` header.
pub fn problem_response(doc: &mut ApiDoc, status: StatusCode) -> (String, ReferenceOr<Response>) {
    let schema = doc.schema::<Problem>();
    let mut headers = BTreeMap::new();
    if matches!(
        status,
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
    ) {
        let seconds = doc.generator().subschema_for::<u32>();
        let required = status == StatusCode::TOO_MANY_REQUESTS;
        headers.insert(
            "Retry-After".to_owned(),
            response_header("Seconds to wait before trying again.", required, seconds),
        );
    }
    (
        status.as_u16().to_string(),
        ReferenceOr::Object(Response {
            description: status.canonical_reason().unwrap_or("Error").to_owned(),
            headers,
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

/// The pattern of every free-text string: no NUL character, which PostgreSQL cannot store
/// and which the service refuses on both backends (docs/errors.md).
pub(crate) const NO_NUL_PATTERN: &str = "^[^\\u0000]*$";

/// Adds [`NO_NUL_PATTERN`] to every string schema of a description that has no format, enum
/// or pattern of its own, so that the description states what the service accepts.
pub(crate) fn forbid_nul_in_text(v: &mut serde_json::Value) {
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

/// Final touches on the JSON description that generated clients need:
///
/// - no `default` in a component schema or a request body: a request member's default is
///   what the server fills in when it is absent (so it is stated in the member's description
///   instead), and client generators read `default` as "always present" and make the member
///   required; an absent member of an update body means "unchanged", never the default;
/// - no `nullable` on a schema without a `type`: such a schema already admits `null`.
pub(crate) fn polish_for_clients(spec: &mut serde_json::Value) {
    drop_unused_schemas(spec);
    if let Some(schemas) = spec
        .pointer_mut("/components/schemas")
        .and_then(|v| v.as_object_mut())
    {
        schemas.values_mut().for_each(drop_defaults);
    }
    if let Some(paths) = spec.get_mut("paths").and_then(|v| v.as_object_mut()) {
        for item in paths.values_mut() {
            let Some(ops) = item.as_object_mut() else {
                continue;
            };
            for op in ops.values_mut() {
                if let Some(body) = op.get_mut("requestBody") {
                    drop_defaults(body);
                }
            }
        }
    }
    untyped_nullable(spec);
    plain_descriptions(spec);
}

/// Rust intra-doc links in doc comments that became descriptions (``[`Api`](crate::Api)``,
/// ``[`Api`]``) lose their brackets and target: a client reader has no Rust paths.
fn plain_descriptions(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if k == "description" || k == "summary" {
                    if let serde_json::Value::String(t) = x {
                        *t = strip_rust_links(t);
                    }
                } else {
                    plain_descriptions(x);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(plain_descriptions),
        _ => {}
    }
}

/// `[text](target)` becomes `text` when the target is a Rust path (no URL, no anchor), and
/// `` [`name`] `` not followed by a link target becomes `` `name` ``.
pub(crate) fn strip_rust_links(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find(']') else {
            out.push_str(&rest[open..]);
            return out;
        };
        let label = &after[..close];
        let tail = &after[close + 1..];
        let target = tail
            .strip_prefix('(')
            .and_then(|t| t.find(')').map(|end| (&t[..end], &t[end + 1..])));
        match target {
            Some((target, next)) if is_rust_path(target) => {
                out.push_str(label);
                rest = next;
            }
            Some(_) => {
                out.push('[');
                rest = after;
            }
            None if label.starts_with('`') && label.ends_with('`') && label.len() > 1 => {
                out.push_str(label);
                rest = tail;
            }
            None => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether a link target is a Rust path (`crate::Api`, `Self::new`, `super::x`) rather than a
/// URL, a path or an anchor.
fn is_rust_path(target: &str) -> bool {
    !target.is_empty()
        && !target.contains("://")
        && !target.starts_with(['#', '/', '.'])
        && !target.contains(' ')
        && !target.ends_with(".md")
        && !target.contains(".md#")
}

/// Removes the component schemas that nothing refers to (such as the generated POST body of
/// a nested resource, whose documented body leaves out the parent's member): a client
/// generator would make a type of each.
fn drop_unused_schemas(spec: &mut serde_json::Value) {
    fn refs(v: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(serde_json::Value::String(r)) = m.get("$ref") {
                    if let Some(name) = r.strip_prefix("#/components/schemas/") {
                        out.insert(name.to_owned());
                    }
                }
                m.values().for_each(|x| refs(x, out));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
            _ => {}
        }
    }
    let mut used = std::collections::BTreeSet::new();
    if let Some(paths) = spec.get("paths") {
        refs(paths, &mut used);
    }
    let Some(schemas) = spec
        .pointer_mut("/components/schemas")
        .and_then(|v| v.as_object_mut())
    else {
        return;
    };
    // What the used schemas refer to is used too, until nothing new turns up.
    let mut seen = 0;
    while used.len() != seen {
        seen = used.len();
        let mut more = std::collections::BTreeSet::new();
        for name in &used {
            if let Some(s) = schemas.get(name) {
                refs(s, &mut more);
            }
        }
        used.extend(more);
    }
    schemas.retain(|name, _| used.contains(name));
}

/// Removes every `default` below `v`, stating a non-null one in the schema's description.
fn drop_defaults(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            if is_schema(m) {
                if let Some(d) = m.remove("default") {
                    if !d.is_null() {
                        let said = match m.get("description").and_then(|x| x.as_str()) {
                            Some(t) => format!("{} Default: `{d}`.", t.trim_end()),
                            None => format!("Default: `{d}`."),
                        };
                        m.insert("description".into(), said.into());
                    }
                }
            }
            m.values_mut().for_each(drop_defaults);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(drop_defaults),
        _ => {}
    }
}

/// Whether a JSON object is a schema rather than a map of named members (a member may be
/// called `type` or `default`).
fn is_schema(m: &serde_json::Map<String, serde_json::Value>) -> bool {
    m.get("type").is_some_and(|t| t.is_string())
        || m.get("$ref").is_some_and(|t| t.is_string())
        || m.get("nullable").is_some_and(|t| t.is_boolean())
        || ["allOf", "anyOf", "oneOf"]
            .iter()
            .any(|k| m.get(*k).is_some_and(|x| x.is_array()))
}

/// Drops `nullable` from schemas with neither a `type` nor a composition: they admit `null`
/// already, and OpenAPI gives `nullable` a meaning only next to `type`.
fn untyped_nullable(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            let typed = m.get("type").is_some_and(|t| t.is_string())
                || m.get("$ref").is_some_and(|t| t.is_string())
                || ["allOf", "anyOf", "oneOf"]
                    .iter()
                    .any(|k| m.get(*k).is_some_and(|x| x.is_array()));
            if !typed && m.get("nullable") == Some(&serde_json::Value::Bool(true)) {
                m.remove("nullable");
            }
            m.values_mut().for_each(untyped_nullable);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(untyped_nullable),
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

#[cfg(test)]
mod tests {
    use super::strip_rust_links;

    #[test]
    fn rust_links_become_plain_code() {
        assert_eq!(strip_rust_links("see [`Api`](crate::Api)."), "see `Api`.");
        assert_eq!(strip_rust_links("the [`Rules`] trait"), "the `Rules` trait");
        assert_eq!(
            strip_rust_links("[RFC 9110](https://www.rfc-editor.org/rfc/rfc9110)"),
            "[RFC 9110](https://www.rfc-editor.org/rfc/rfc9110)"
        );
        assert_eq!(strip_rust_links("a [b] c [d"), "a [b] c [d");
    }
}

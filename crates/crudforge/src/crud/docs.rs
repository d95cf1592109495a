//! What each generated operation and custom route adds to the OpenAPI description.

mod batch;
mod rules;
mod soft_delete;

use super::options::{OpOptions, Operation};
use super::route::normalize_prefix;
use super::shared::Mounted;
use super::{FieldInfo, Kind, Page, Resource};
use crate::condition::{operators_for, Value};
use crate::openapi::{
    json_body, json_response, parameter, problem_response, response_header, ApiDoc,
};
use actix_web::http::StatusCode;
use apistos::paths::{
    Operation as OpDoc, OperationType, Parameter, ParameterIn, RequestBody, Responses,
};
use apistos::reference_or::ReferenceOr;
use apistos::security::SecurityRequirement;
use schemars::schema::Schema;
use std::collections::BTreeMap;

/// Adds a mounted blueprint's operations and custom routes to the description.
pub(super) fn document<R: Resource>(doc: &mut ApiDoc, m: &Mounted<R>) {
    for (op, options) in &m.shared.ops {
        document_op::<R>(doc, *op, options, m);
    }
    batch::document(doc, m);
    for c in m.custom.iter().filter(|c| !c.doc.undocumented) {
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
        let path = format!("{}{}", m.prefix, c.path);
        let mut extensions = apistos::IndexMap::new();
        if c.doc.public {
            extensions.insert("x-public".to_owned(), serde_json::Value::Bool(true));
        }
        let mut parameters = path_params(doc, &m.shared.parents, None);
        // Parameters of the route's own path (`{user_id}/settings/`) must be declared too.
        let (_, own) = normalize_prefix(&c.path);
        for p in own {
            if !m.shared.parents.iter().any(|(_, q)| *q == p) {
                let s = doc.generator().subschema_for::<String>();
                parameters.push(parameter(&p, ParameterIn::Path, true, None, s));
            }
        }
        let who = match (&c.doc.callers, c.doc.public) {
            (Some(who), _) => format!("Who may call: {}.", who.trim_end_matches('.')),
            (None, true) => "Who may call: anyone, without a token.".to_owned(),
            (None, false) => "Who may call: any signed-in user.".to_owned(),
        };
        let description = match &c.doc.description {
            Some(d) => format!("{d}\n\n{who}"),
            None => who,
        };
        let op = OpDoc {
            tags: vec![c.doc.tag.clone().unwrap_or_else(|| R::NAME.to_owned())],
            summary: c.doc.summary.clone(),
            description: Some(description),
            operation_id: c.doc.operation_id.clone(),
            parameters,
            request_body: c.doc.body.map(|f| json_body(f(doc))),
            responses,
            security: security(c.doc.public),
            extensions,
            ..Default::default()
        };
        doc.add_operation(&path, c.method, op);
    }
}

/// A query parameter holding a non-empty comma-separated list of `item` values.
fn list_parameter(
    name: &str,
    description: String,
    item: Schema,
) -> ReferenceOr<apistos::paths::Parameter> {
    use schemars::schema::{ArrayValidation, InstanceType, SchemaObject, SingleOrVec};
    let schema = Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::Array.into()),
        array: Some(Box::new(ArrayValidation {
            items: Some(SingleOrVec::Single(Box::new(item))),
            min_items: Some(1),
            ..Default::default()
        })),
        ..Default::default()
    });
    let mut p = parameter(name, ParameterIn::Query, false, Some(description), schema);
    if let ReferenceOr::Object(p) = &mut p {
        p.style = Some(apistos::paths::ParameterStyle::Form);
        p.explode = Some(false);
    }
    p
}

/// `filter`, `cursor`, `count` and `fields` of an INDEX.
fn list_params<R: Resource>(
    doc: &mut ApiDoc,
    o: &OpOptions<R>,
    params: &mut Vec<ReferenceOr<apistos::paths::Parameter>>,
) {
    use schemars::schema::{InstanceType, SchemaObject, StringValidation};
    let string = |max: Option<u32>| {
        Schema::Object(SchemaObject {
            instance_type: Some(InstanceType::String.into()),
            string: max.map(|m| {
                Box::new(StringValidation {
                    max_length: Some(m),
                    // An empty value is refused (400): say so.
                    min_length: Some(1),
                    ..Default::default()
                })
            }),
            ..Default::default()
        })
    };
    let filterable = R::FIELDS
        .iter()
        .filter(|f| f.filterable)
        .map(|f| f.name)
        .collect::<Vec<_>>()
        .join(", ");
    params.push(parameter(
        "filter",
        ParameterIn::Query,
        false,
        Some(format!(
            "A SQL-like condition, ANDed with the other filters: `field = value` (also `!=`, \
             `>`, `>=`, `<`, `<=`), `field like 'pat%'`, `field ilike 'pat%'`, \
             `field in ('a', 'b')`, `field is null`, `field is not null`, combined with `and`, \
             `or`, `not` and parentheses. Strings, dates and date-times in single quotes (a \
             quote doubled inside), numbers, `true`, `false`. Example: \
             `(species = 'cat' or species = 'dog') and cuteness_level >= 5`. Filterable \
             fields: {filterable}."
        )),
        string(Some(doc.filter_max_length())),
    ));
    params.push(parameter(
        "cursor",
        ParameterIn::Query,
        false,
        Some(
            "The `pagination.next_cursor` of the previous page: returns the page after it, \
             with the same `sort`. Cannot be combined with `page`."
                .into(),
        ),
        string(None),
    ));
    let count = Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        enum_values: Some(
            super::CountMode::NAMES
                .iter()
                .map(|n| serde_json::Value::from(*n))
                .collect(),
        ),
        ..Default::default()
    });
    params.push(parameter(
        "count",
        ParameterIn::Query,
        false,
        Some(
            "How `total` is counted: `exact` (default), `none` (no count; `total` and \
             `total_pages` are null) or `estimated` (the query planner's estimate on \
             PostgreSQL, exact on SQLite)."
                .into(),
        ),
        count,
    ));
    params.push(fields_parameter::<R>(o));
}

/// `fields`: the members each returned item keeps, among those the operation's answer has.
fn fields_parameter<R: Resource>(o: &OpOptions<R>) -> ReferenceOr<apistos::paths::Parameter> {
    use schemars::schema::{InstanceType, SchemaObject};
    let item = Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        enum_values: Some(
            super::sparse::selectable(R::FIELDS, o.members)
                .into_iter()
                .map(serde_json::Value::from)
                .collect(),
        ),
        ..Default::default()
    });
    list_parameter(
        "fields",
        "Members each item keeps (default: all); the others are absent from the answer. \
         Comma-separated, or the parameter repeated."
            .to_owned(),
        item,
    )
}

/// `sort`: a string whose pattern lists the sortable fields.
fn sort_schema<R: Resource>() -> Schema {
    use schemars::schema::{InstanceType, SchemaObject, StringValidation};
    let keys = R::FIELDS
        .iter()
        .filter(|f| f.comparable())
        .map(|f| f.name)
        .collect::<Vec<_>>()
        .join("|");
    Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        string: Some(Box::new(StringValidation {
            pattern: Some(format!("^([+-]?({keys})(,[+-]?({keys}))*)?$")),
            ..Default::default()
        })),
        ..Default::default()
    })
}

/// An integer schema with bounds.
fn integer_schema(min: u32, max: u32) -> Schema {
    use schemars::schema::{InstanceType, NumberValidation, SchemaObject};
    let format = if i32::try_from(max).is_ok() {
        "int32"
    } else {
        "int64"
    };
    Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::Integer.into()),
        format: Some(format.to_owned()),
        number: Some(Box::new(NumberValidation {
            minimum: Some(f64::from(min)),
            maximum: Some(f64::from(max)),
            ..Default::default()
        })),
        ..Default::default()
    })
}

/// The schema of a filter value of field `f`: its kind's, with the range of narrow integers.
fn field_schema(doc: &mut ApiDoc, f: &FieldInfo) -> Schema {
    let mut s = kind_schema(doc, f.kind);
    if let (Some((min, max)), Schema::Object(o)) = (f.int_range, &mut s) {
        o.format = Some("int32".to_owned());
        let n = o.number();
        n.minimum = Some(min as f64);
        n.maximum = Some(max as f64);
    }
    s
}

fn kind_schema(doc: &mut ApiDoc, kind: Kind) -> Schema {
    let g = doc.generator();
    match kind {
        Kind::Text | Kind::Other => g.subschema_for::<String>(),
        Kind::Integer => g.subschema_for::<i64>(),
        Kind::Float => g.subschema_for::<f64>(),
        Kind::Bool => g.subschema_for::<bool>(),
        Kind::Uuid => g.subschema_for::<uuid::Uuid>(),
        Kind::DateTime => g.subschema_for::<chrono::DateTime<chrono::Utc>>(),
        Kind::Date => g.subschema_for::<chrono::NaiveDate>(),
        Kind::Json => g.subschema_for::<serde_json::Value>(),
    }
}

fn path_params(
    doc: &mut ApiDoc,
    parents: &[(&'static FieldInfo, String)],
    item: Option<(&'static FieldInfo, &str)>,
) -> Vec<ReferenceOr<apistos::paths::Parameter>> {
    let mut out = Vec::new();
    for (f, p) in parents {
        let s = kind_schema(doc, f.kind);
        out.push(parameter(
            p,
            ParameterIn::Path,
            true,
            Some(format!("Parent `{}`", f.name)),
            s,
        ));
    }
    if let Some((f, p)) = item {
        let s = kind_schema(doc, f.kind);
        out.push(parameter(
            p,
            ParameterIn::Path,
            true,
            Some(format!("The item's `{}`", f.name)),
            s,
        ));
    }
    out
}

/// What one generated operation puts in the description, before the parts every operation
/// shares (conditional requests, callers, security).
struct OpParts {
    path: String,
    method: OperationType,
    summary: String,
    params: Vec<ReferenceOr<Parameter>>,
    body: Option<ReferenceOr<RequestBody>>,
    responses: BTreeMap<String, ReferenceOr<apistos::paths::Response>>,
}

fn document_op<R: Resource>(doc: &mut ApiDoc, op: Operation, o: &OpOptions<R>, m: &Mounted<R>) {
    let response = response_schema(doc, o);
    let mut parts = match op {
        Operation::Index => index_parts(doc, o, m, response),
        Operation::Get => get_parts(doc, o, m, response),
        Operation::Post => post_parts(doc, o, m, response),
        Operation::Patch => patch_parts(doc, o, m, response),
        Operation::Delete => delete_parts(doc, m),
        Operation::Restore => soft_delete::restore_parts(doc, m, response),
    };
    if R::SOFT_DELETE && matches!(op, Operation::Index | Operation::Get) {
        parts.params.push(soft_delete::include_deleted_param(doc));
    }
    document_writes(
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
    let (extensions, description, security) = callers(doc, op, o, m, &mut parts.responses);
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

/// `GET` of a list: the path's parents, the list parameters, one filter parameter per
/// operator of each filterable field, and the page.
fn index_parts<R: Resource>(
    doc: &mut ApiDoc,
    o: &OpOptions<R>,
    m: &Mounted<R>,
    response: ReferenceOr<Schema>,
) -> OpParts {
    let mut params = path_params(doc, &m.shared.parents, None);
    let max = doc.max_page_size();
    params.push(parameter(
        "page",
        ParameterIn::Query,
        false,
        Some("Page number, from 1 (default 1).".into()),
        integer_schema(1, u32::MAX),
    ));
    params.push(parameter(
        "page_size",
        ParameterIn::Query,
        false,
        Some(format!(
            "Items per page, 1 to {max} (the default is set by configuration)."
        )),
        integer_schema(1, max),
    ));
    params.push(parameter(
        "sort",
        ParameterIn::Query,
        false,
        Some(
            "Comma-separated fields; `-field` sorts descending. Default: created_at, then id."
                .into(),
        ),
        sort_schema::<R>(),
    ));
    list_params::<R>(doc, o, &mut params);
    params.extend(rules::scope_param::<R>());
    filter_params::<R>(doc, &mut params);
    let mut responses = BTreeMap::new();
    let response = doc.partial(response);
    super::relations::docs::describe::<R>(doc, &mut params, &response);
    let page = page_schema(doc, response);
    responses.insert("200".to_owned(), json_response("One page of items", page));
    responses.extend([problem_response(doc, StatusCode::BAD_REQUEST)]);
    OpParts {
        path: m.prefix.clone(),
        method: OperationType::Get,
        summary: format!("List {}", plural(&words(R::NAME))),
        params,
        body: None,
        responses,
    }
}

/// One query parameter per operator of each filterable, readable field.
fn filter_params<R: Resource>(doc: &mut ApiDoc, params: &mut Vec<ReferenceOr<Parameter>>) {
    for f in R::FIELDS.iter().filter(|f| f.filterable && !f.write_only) {
        for o in operators_for(f.kind, f.nullable) {
            let name = if o.suffix.is_empty() {
                f.name.to_owned()
            } else {
                format!("{}__{}", f.name, o.suffix)
            };
            let description = format!("`{}` {}", f.name, o.description);
            params.push(match o.value {
                // Comma-separated values: OpenAPI's form style without explode.
                Value::List => list_parameter(&name, description, field_schema(doc, f)),
                Value::Pattern => {
                    let s = doc.generator().subschema_for::<String>();
                    parameter(&name, ParameterIn::Query, false, Some(description), s)
                }
                Value::Flag => {
                    let s = doc.generator().subschema_for::<bool>();
                    parameter(&name, ParameterIn::Query, false, Some(description), s)
                }
                // On a date-time field, a bound is a date (the whole day, UTC) or a
                // date-time: a string of either form.
                Value::DayStart | Value::DayEnd if f.kind == Kind::DateTime => {
                    let (edge, day) = if o.value == Value::DayStart {
                        ("on or after", "from the start of that day")
                    } else {
                        ("on or before", "to the end of that day")
                    };
                    let text = format!(
                        "`{}` is {edge}: a date-time (RFC 3339), or a date (YYYY-MM-DD, {day}, UTC)",
                        f.name
                    );
                    let s = doc.generator().subschema_for::<String>();
                    parameter(&name, ParameterIn::Query, false, Some(text), s)
                }
                Value::Field | Value::DayStart | Value::DayEnd => {
                    let s = field_schema(doc, f);
                    parameter(&name, ParameterIn::Query, false, Some(description), s)
                }
            });
        }
    }
}

/// The path parameters of an item path (parents, then the key).
fn item_params<R: Resource>(doc: &mut ApiDoc, m: &Mounted<R>) -> Vec<ReferenceOr<Parameter>> {
    let shared = &m.shared;
    path_params(
        doc,
        &shared.parents,
        Some((shared.res_id, &shared.res_id_param)),
    )
}

/// `GET` of one item.
fn get_parts<R: Resource>(
    doc: &mut ApiDoc,
    o: &OpOptions<R>,
    m: &Mounted<R>,
    response: ReferenceOr<Schema>,
) -> OpParts {
    let mut params = item_params(doc, m);
    params.push(fields_parameter::<R>(o));
    let response = doc.partial(response);
    super::relations::docs::describe::<R>(doc, &mut params, &response);
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

/// `POST` of a new item: the body without the members the path gives.
fn post_parts<R: Resource>(
    doc: &mut ApiDoc,
    o: &OpOptions<R>,
    m: &Mounted<R>,
    response: ReferenceOr<Schema>,
) -> OpParts {
    let params = path_params(doc, &m.shared.parents, None);
    let input = create_input(doc, o, m);
    let mut responses = BTreeMap::new();
    responses.insert("201".to_owned(), json_response("Created", response));
    // 400/413/415/422 (body) are added by `ApiDoc::add_operation`.
    responses.extend([problem_response(doc, StatusCode::CONFLICT)]);
    OpParts {
        path: m.prefix.clone(),
        method: OperationType::Post,
        summary: format!("Create {}", article(&words(R::NAME))),
        params,
        body: Some(json_body(input)),
        responses,
    }
}

/// The body of a create: the input schema without the members the path gives, administrators'
/// members marked.
fn create_input<R: Resource>(
    doc: &mut ApiDoc,
    o: &OpOptions<R>,
    m: &Mounted<R>,
) -> ReferenceOr<Schema> {
    let input = match o.input {
        Some((schema, _)) => schema(doc),
        None => doc.schema::<R::Create>(),
    };
    // Parent fields come from the path; the body may not carry them.
    let parents: Vec<&str> = m.shared.parents.iter().map(|(f, _)| f.name).collect();
    let input = doc.without_properties(input, &parents);
    doc.mark_admin_only(&input, m.shared.rules.admin_fields());
    input
}

/// The body of an update, administrators' members marked.
fn update_input<R: Resource>(
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
    input
}

/// The schema of an operation's answer item: its presenter's, its substituted schema, or the
/// generated response.
fn response_schema<R: Resource>(doc: &mut ApiDoc, o: &OpOptions<R>) -> ReferenceOr<Schema> {
    match (o.presenter, o.response) {
        (Some((schema, _)), _) | (None, Some((schema, _))) => schema(doc),
        (None, None) => {
            let schema = doc.schema::<R::Response>();
            rules::mark_readers::<R>(doc, &schema);
            schema
        }
    }
}

/// `PATCH` of one item.
fn patch_parts<R: Resource>(
    doc: &mut ApiDoc,
    o: &OpOptions<R>,
    m: &Mounted<R>,
    response: ReferenceOr<Schema>,
) -> OpParts {
    let params = item_params(doc, m);
    let input = update_input(doc, o, m);
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
        body: Some(json_body(input)),
        responses,
    }
}

/// `DELETE` of one item.
fn delete_parts<R: Resource>(doc: &mut ApiDoc, m: &Mounted<R>) -> OpParts {
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

/// Who may call the operation, as the description tells it: the `x-admin-only` and
/// `x-public` marks, the 401/403/409 answers that follow from the rules, and the security
/// requirement (optional when the rules let anonymous callers in).
fn callers<R: Resource>(
    doc: &mut ApiDoc,
    op: Operation,
    o: &OpOptions<R>,
    m: &Mounted<R>,
    responses: &mut BTreeMap<String, ReferenceOr<apistos::paths::Response>>,
) -> (
    apistos::IndexMap<String, serde_json::Value>,
    Option<String>,
    Option<Vec<SecurityRequirement>>,
) {
    let shared = &m.shared;
    let mut extensions = apistos::IndexMap::new();
    let description = Some(who_may_call(op, o, shared.rules.as_ref()));
    if o.admin_only {
        responses.extend([
            problem_response(doc, StatusCode::UNAUTHORIZED),
            problem_response(doc, StatusCode::FORBIDDEN),
        ]);
        extensions.insert("x-admin-only".to_owned(), serde_json::Value::Bool(true));
    }
    // Rules that let anonymous callers in (a public-read resource, `Open`) make the token
    // optional rather than required.
    let anonymous_ok = !o.admin_only
        && match op {
            Operation::Index | Operation::Get => lets_in(shared.rules.read(None)),
            Operation::Patch | Operation::Delete | Operation::Restore => {
                lets_in(shared.rules.write(None))
            }
            Operation::Post => shared
                .rules
                .create(None, &mut serde_json::Map::new())
                .is_ok(),
        };
    if o.public {
        extensions.insert("x-public".to_owned(), serde_json::Value::Bool(true));
    } else {
        // Rules, privilege checks and hooks may refuse any signed-in caller (403).
        for status in [StatusCode::UNAUTHORIZED, StatusCode::FORBIDDEN] {
            if !responses.contains_key(status.as_str()) {
                let (k, v) = problem_response(doc, status);
                responses.insert(k, v);
            }
        }
    }
    // A write by key refuses a key that matches several rows, and hooks may refuse a write
    // that conflicts with other rows (409).
    if matches!(
        op,
        Operation::Patch | Operation::Delete | Operation::Restore
    ) && !responses.contains_key("409")
    {
        let (k, v) = problem_response(doc, StatusCode::CONFLICT);
        responses.insert(k, v);
    }
    let security = if anonymous_ok && !o.public {
        optional_security()
    } else {
        security(o.public)
    };
    (extensions, description, security)
}

/// Who may call a generated operation, in words: read from the operation's options and from
/// the very rule objects that decide each request, asked about an anonymous caller, a
/// signed-in user without roles and an administrator of one domain (global administrators
/// pass every rule). Members only administrators may send are named too.
fn who_may_call<R: 'static>(
    op: Operation,
    o: &OpOptions<R>,
    rules: &dyn crate::perms::Rules<R>,
) -> String {
    use crate::auth::{CurrentUser, RoleGrant};
    use crate::perms::Access;
    let user = CurrentUser {
        id: uuid::Uuid::new_v4(),
        email: String::new(),
        is_enabled: true,
        roles: Vec::new(),
    };
    let domain = uuid::Uuid::new_v4();
    // The same caller, with an ADMIN role scoped to one domain.
    let domain_admin = CurrentUser {
        roles: vec![RoleGrant {
            role: "ADMIN".to_owned(),
            domain_id: Some(domain),
        }],
        ..user.clone()
    };
    let probes = Probes {
        caller: user.id,
        domain,
    };
    let who = if o.public {
        "anyone, without a token".to_owned()
    } else if o.admin_only {
        "administrators only".to_owned()
    } else {
        let access = |caller: Option<&CurrentUser>| match op {
            Operation::Index | Operation::Get => rules.read(caller),
            Operation::Patch | Operation::Delete | Operation::Restore => rules.write(caller),
            Operation::Post => {
                // A domain's administrator creates in their domain.
                let mut body = serde_json::Map::new();
                body.insert("domain_id".to_owned(), domain.to_string().into());
                match rules.create(caller, &mut body) {
                    Err(crate::error::Error::Unauthorized(_)) => Access::Unauthenticated,
                    Err(crate::error::Error::Forbidden(_)) => Access::Forbidden,
                    // Allowed, or refused only for what the probe's body lacks.
                    _ => Access::All,
                }
            }
        };
        let rows = |c: &crate::condition::Condition| describe_rows(c, &probes);
        let mut who = match (access(None), access(Some(&user))) {
            (Access::All, _) => "anyone, signed in or not".to_owned(),
            (Access::Rows(c), _) => format!(
                "anyone, signed in or not, on the items where {}; administrators on every item",
                rows(&c)
            ),
            (_, Access::All) => "any signed-in user".to_owned(),
            (_, Access::Rows(c)) => format!(
                "signed-in users on the items where {}; administrators on every item",
                rows(&c)
            ),
            (_, Access::Forbidden | Access::Unauthenticated) => "administrators only".to_owned(),
        };
        // What a domain's administrator may do beyond a plain user.
        if access(Some(&user)) != access(Some(&domain_admin)) {
            match access(Some(&domain_admin)) {
                Access::All => who.push_str("; also a domain's administrators, in their domain"),
                Access::Rows(c) => who.push_str(&format!(
                    "; a domain's administrators on the items where {}",
                    rows(&c)
                )),
                Access::Forbidden | Access::Unauthenticated => {}
            }
        }
        who
    };
    let mut text = format!("Who may call: {who}.");
    let mut admin_members: Vec<&str> = Vec::new();
    if matches!(op, Operation::Post | Operation::Patch) {
        admin_members.extend(rules.admin_fields());
    }
    if op == Operation::Patch {
        admin_members.extend(rules.admin_update_fields());
    }
    if !admin_members.is_empty() && !o.admin_only {
        let names: Vec<String> = admin_members.iter().map(|n| format!("`{n}`")).collect();
        text.push_str(&format!(
            " Only administrators may send {} (others get 403).",
            names.join(", ")
        ));
    }
    text
}

/// The ids the probe callers of [`who_may_call`] carry, read back as words.
struct Probes {
    caller: uuid::Uuid,
    domain: uuid::Uuid,
}

/// A rule's row condition in words, with the probes' ids read as "the caller's id" and "a
/// domain they administer".
fn describe_rows(c: &crate::condition::Condition, probes: &Probes) -> String {
    use crate::condition::{Arg, Condition};
    let join = |parts: &[Condition], word: &str| {
        parts
            .iter()
            .map(|p| describe_rows(p, probes))
            .collect::<Vec<_>>()
            .join(word)
    };
    match c {
        Condition::All(parts) if parts.is_empty() => "every item".to_owned(),
        Condition::Any(parts) if parts.is_empty() => "no item".to_owned(),
        Condition::All(parts) | Condition::Any(parts) if parts.len() == 1 => {
            parts.iter().map(|p| describe_rows(p, probes)).collect()
        }
        Condition::All(parts) => join(parts, " and "),
        Condition::Any(parts) => format!("({})", join(parts, " or ")),
        Condition::Not(inner) => format!("not ({})", describe_rows(inner, probes)),
        Condition::Related(r) => format!("a `{}` the caller may read", r.name),
        Condition::Is(cond) => {
            let value = match &cond.arg {
                Arg::Uuid(u) if *u == probes.caller => "the caller's id".to_owned(),
                Arg::Uuid(u) if *u == probes.domain => "a domain they administer".to_owned(),
                Arg::Text(t) => format!("'{t}'"),
                Arg::Int(n) => n.to_string(),
                Arg::Float(n) => n.to_string(),
                Arg::Bool(b) => b.to_string(),
                Arg::Uuid(u) => u.to_string(),
                Arg::DateTime(t) => t.to_rfc3339(),
                Arg::Date(d) => d.to_string(),
                Arg::List(items) => format!("one of {} values", items.len()),
            };
            let verb = crate::condition::OPERATORS
                .iter()
                .find(|o| o.op == cond.op)
                .map_or("is", |o| o.description);
            let verb = if verb == "equals" { "is" } else { verb };
            format!("`{}` {verb} {value}", cond.field)
        }
    }
}

fn lets_in(access: crate::perms::Access) -> bool {
    matches!(
        access,
        crate::perms::Access::All | crate::perms::Access::Rows(_)
    )
}

/// Either no credentials or the bearer token: for operations whose rules admit anonymous
/// callers but treat a token, when one is sent, as who is calling.
fn optional_security() -> Option<Vec<apistos::security::SecurityRequirement>> {
    let mut both = security(false).unwrap_or_default();
    both.insert(0, apistos::security::SecurityRequirement::default());
    Some(both)
}

/// The security requirement of an operation: none for public ones, the bearer token otherwise.
fn security(public: bool) -> Option<Vec<apistos::security::SecurityRequirement>> {
    if public {
        Some(Vec::new())
    } else {
        Some(vec![apistos::security::SecurityRequirement {
            requirements: BTreeMap::from([(crate::openapi::BEARER_SCHEME.to_owned(), Vec::new())]),
        }])
    }
}

/// The envelope schema around an item schema.
fn page_schema(doc: &mut ApiDoc, item: ReferenceOr<Schema>) -> ReferenceOr<Schema> {
    use schemars::schema::{
        ArrayValidation, InstanceType, ObjectValidation, SchemaObject, SingleOrVec,
    };
    let ReferenceOr::Object(item) = item else {
        return doc.schema::<Page<serde_json::Value>>();
    };
    let pagination = doc.generator().subschema_for::<super::Pagination>();
    // Every member is always sent (null when not counted, or on the last page).
    if let Some(Schema::Object(o)) = doc.generator().definitions_mut().get_mut("Pagination") {
        if let Some(v) = o.object.as_deref_mut() {
            v.required = v.properties.keys().cloned().collect();
        }
    }
    let data = Schema::Object(SchemaObject {
        instance_type: Some(SingleOrVec::Single(Box::new(InstanceType::Array))),
        array: Some(Box::new(ArrayValidation {
            items: Some(SingleOrVec::Single(Box::new(item))),
            ..Default::default()
        })),
        ..Default::default()
    });
    let mut object = ObjectValidation::default();
    object.properties.insert("data".to_owned(), data);
    object
        .properties
        .insert("pagination".to_owned(), pagination);
    object.required.insert("data".to_owned());
    object.required.insert("pagination".to_owned());
    ReferenceOr::Object(Schema::Object(SchemaObject {
        instance_type: Some(SingleOrVec::Single(Box::new(InstanceType::Object))),
        object: Some(Box::new(object)),
        ..Default::default()
    }))
}

/// A string header parameter.
fn header_param(
    name: &str,
    required: bool,
    description: &str,
    pattern: &str,
    max_length: u32,
) -> ReferenceOr<apistos::paths::Parameter> {
    use schemars::schema::{InstanceType, SchemaObject, StringValidation};
    // The value's syntax, so that clients (and API fuzzers) know an empty or malformed one
    // is refused (400).
    let s = Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        string: Some(Box::new(StringValidation {
            max_length: Some(max_length),
            min_length: Some(1),
            pattern: Some(pattern.to_owned()),
        })),
        ..Default::default()
    });
    parameter(
        name,
        ParameterIn::Header,
        required,
        Some(description.to_owned()),
        s,
    )
}

/// The syntax of `If-Match` and `If-None-Match` (RFC 9110): `*`, or entity tags (optionally
/// weak) separated by commas.
const ENTITY_TAGS_PATTERN: &str =
    r#"^(\*|(W/)?"[\x21\x23-\x7e]*"( *, *(W/)?"[\x21\x23-\x7e]*")*)$"#;

/// The syntax of `Idempotency-Key`: visible ASCII characters.
const IDEMPOTENCY_KEY_PATTERN: &str = r"^[\x21-\x7e]+$";

/// Conditional requests and idempotency keys: the `If-Match`, `If-None-Match` and
/// `Idempotency-Key` request headers, the `ETag` response header and the answers they add
/// (304, 409, 412, 422, 428).
fn document_writes(
    doc: &mut ApiDoc,
    op: Operation,
    require_if_match: bool,
    params: &mut Vec<ReferenceOr<apistos::paths::Parameter>>,
    responses: &mut BTreeMap<String, ReferenceOr<apistos::paths::Response>>,
) {
    let text = doc.generator().subschema_for::<String>();
    let success = match op {
        Operation::Get | Operation::Patch | Operation::Restore => "200",
        Operation::Post => "201",
        Operation::Index | Operation::Delete => "",
    };
    if let Some(ReferenceOr::Object(r)) = responses.get_mut(success) {
        r.headers.insert(
            "ETag".to_owned(),
            response_header(
                "Strong entity tag of the item; changes whenever the item changes.",
                true,
                text.clone(),
            ),
        );
        if op == Operation::Post {
            r.headers.insert(
                "Location".to_owned(),
                response_header("Path of the new item.", true, text.clone()),
            );
        }
        if matches!(op, Operation::Post | Operation::Patch | Operation::Restore) {
            replayed_header(doc, r);
        }
    }
    match op {
        Operation::Get => {
            params.push(header_param(
                "If-None-Match",
                false,
                "`*` or entity tags (weak comparison): 304 when one is the item's current tag.",
                ENTITY_TAGS_PATTERN,
                1024,
            ));
            responses.insert(
                "304".to_owned(),
                ReferenceOr::Object(apistos::paths::Response {
                    description: "Not Modified: the item still has the given tag; no body."
                        .to_owned(),
                    ..Default::default()
                }),
            );
        }
        Operation::Patch | Operation::Delete | Operation::Restore => {
            params.push(header_param(
                "If-Match",
                require_if_match,
                "`*` or entity tags (strong comparison; weak tags never match): the write happens only if one is the item's current tag, otherwise 412.",
                ENTITY_TAGS_PATTERN,
                1024,
            ));
            // A malformed If-Match is 400 (PATCH documents 400 for its body already).
            responses.extend([
                problem_response(doc, StatusCode::PRECONDITION_FAILED),
                problem_response(doc, StatusCode::BAD_REQUEST),
            ]);
            if require_if_match {
                responses.extend([problem_response(doc, StatusCode::PRECONDITION_REQUIRED)]);
            }
        }
        Operation::Index | Operation::Post => {}
    }
    if matches!(op, Operation::Post | Operation::Patch | Operation::Restore) {
        params.push(idempotency_key_param("The request"));
        responses.extend([
            problem_response(doc, StatusCode::CONFLICT),
            problem_response(doc, StatusCode::UNPROCESSABLE_ENTITY),
        ]);
    }
}

/// The `Idempotency-Key` request header of a write; `what` is what a key makes happen once
/// ("The request", "The whole batch").
fn idempotency_key_param(what: &str) -> ReferenceOr<apistos::paths::Parameter> {
    header_param(
        "Idempotency-Key",
        false,
        &format!("Up to 255 characters chosen by the client. {what} is processed once per caller and key: a retry with the same body receives the stored answer (header `Idempotent-Replayed: true`); another body with the same key is 422; a retry while the first is in progress is 409. Keys expire after IDEMPOTENCY_KEY_TTL seconds."),
        IDEMPOTENCY_KEY_PATTERN,
        255,
    )
}

/// The `Idempotent-Replayed` header of a write's success answer.
fn replayed_header(doc: &mut ApiDoc, r: &mut apistos::paths::Response) {
    let flag = doc.generator().subschema_for::<bool>();
    r.headers.insert(
        "Idempotent-Replayed".to_owned(),
        response_header(
            "`true` when this is the stored answer to an earlier request with the same `Idempotency-Key` (nothing was written again); absent otherwise.",
            false,
            flag,
        ),
    );
}

/// A resource name as words a person writes in a summary: `UserRole` → `user role`.
fn words(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_uppercase() && prev_lower {
            out.push(' ');
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        out.extend(c.to_lowercase());
    }
    out
}

/// A noun phrase with its indefinite article: `a user`, `an invite`.
fn article(noun: &str) -> String {
    // "a user", "a unit" (a consonant sound) but "an umbrella".
    let you_sound = ["use", "usu", "uni", "uti", "ura", "ure"]
        .iter()
        .any(|p| noun.starts_with(p));
    if noun.starts_with(['a', 'e', 'i', 'o']) || (noun.starts_with('u') && !you_sound) {
        format!("an {noun}")
    } else {
        format!("a {noun}")
    }
}

/// The plural of a noun phrase (its last word): `user role` → `user roles`, `entry` →
/// `entries`, `box` → `boxes`.
fn plural(noun: &str) -> String {
    let consonant_y =
        noun.ends_with('y') && !noun[..noun.len() - 1].ends_with(['a', 'e', 'i', 'o', 'u']);
    if consonant_y {
        format!("{}ies", &noun[..noun.len() - 1])
    } else if noun.ends_with(['s', 'x', 'z']) || noun.ends_with("ch") || noun.ends_with("sh") {
        format!("{noun}es")
    } else {
        format!("{noun}s")
    }
}

#[cfg(test)]
mod who_tests {
    use super::{who_may_call, OpOptions, Operation};
    use crate::perms::{AdminOnly, DefaultRules, Open, OwnerRules, PublicReadAdminWrite, Rules};

    fn who(op: Operation, o: &OpOptions<()>, rules: &dyn Rules<()>) -> String {
        who_may_call(op, o, rules)
    }

    #[test]
    fn the_words_come_from_the_rules_and_options() {
        let plain = OpOptions::<()>::default();
        let said = |op, rules: &dyn Rules<()>| who(op, &plain, rules);
        assert_eq!(
            said(Operation::Get, &DefaultRules),
            "Who may call: any signed-in user."
        );
        assert_eq!(
            said(Operation::Index, &Open),
            "Who may call: anyone, signed in or not."
        );
        assert_eq!(
            said(Operation::Index, &PublicReadAdminWrite),
            "Who may call: anyone, signed in or not."
        );
        assert_eq!(
            said(Operation::Patch, &PublicReadAdminWrite),
            "Who may call: administrators only."
        );
        assert_eq!(
            said(Operation::Post, &AdminOnly),
            "Who may call: administrators only."
        );
        assert_eq!(
            said(Operation::Delete, &OwnerRules::new("owner_id")),
            "Who may call: signed-in users on the items where `owner_id` is the caller's id; \
             administrators on every item."
        );
        // Options come before the rules.
        let admin = OpOptions::<()> {
            admin_only: true,
            ..Default::default()
        };
        assert_eq!(
            who(Operation::Get, &admin, &Open),
            "Who may call: administrators only."
        );
        let public = OpOptions::<()> {
            public: true,
            ..Default::default()
        };
        assert_eq!(
            who(Operation::Post, &public, &AdminOnly),
            "Who may call: anyone, without a token."
        );
    }

    #[test]
    fn members_only_administrators_may_send_are_named() {
        struct Guarded;
        impl Rules<()> for Guarded {
            fn admin_fields(&self) -> &[&'static str] {
                &["is_enabled"]
            }
            fn admin_update_fields(&self) -> &[&'static str] {
                &["password"]
            }
        }
        let plain = OpOptions::<()>::default();
        let post = who(Operation::Post, &plain, &Guarded);
        assert!(
            post.ends_with("Only administrators may send `is_enabled` (others get 403)."),
            "{post}"
        );
        let patch = who(Operation::Patch, &plain, &Guarded);
        assert!(
            patch.ends_with(
                "Only administrators may send `is_enabled`, `password` (others get 403)."
            ),
            "{patch}"
        );
        assert!(!who(Operation::Get, &plain, &Guarded).contains("Only administrators"));
    }
}

#[cfg(test)]
mod summary_tests {
    use super::{plural, words};

    #[test]
    fn summaries_read_as_written_by_a_person() {
        assert_eq!(plural(&words("User")), "users");
        assert_eq!(plural(&words("UserRole")), "user roles");
        assert_eq!(plural(&words("Entry")), "entries");
        assert_eq!(plural(&words("Key")), "keys");
        assert_eq!(plural(&words("Box")), "boxes");
        assert_eq!(words("Critter"), "critter");
        assert_eq!(super::article("invite"), "an invite");
        assert_eq!(super::article("user role"), "a user role");
    }
}

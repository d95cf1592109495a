//! What the list operation (INDEX) adds to the description: its query parameters (`page`,
//! `page_size`, `sort`, `filter`, `cursor`, `count`, `fields`, `scope`, one per operator of
//! each filterable field) and the page envelope of its answer.

use super::rules;
use super::schema::{field_schema, fields_parameter, integer_schema, list_parameter, path_params};
use super::words::{plural, words};
use super::OpParts;
use crate::condition::{operators_for, Value};
use crate::crud::options::OpOptions;
use crate::crud::shared::Mounted;
use crate::crud::{Kind, Page, Resource};
use crate::openapi::{json_response, parameter, problem_response, ApiDoc};
use actix_web::http::StatusCode;
use apistos::paths::{OperationType, Parameter, ParameterIn};
use apistos::reference_or::ReferenceOr;
use schemars::schema::Schema;
use std::collections::BTreeMap;

/// `GET` of a list: the path's parents, the list parameters, one filter parameter per
/// operator of each filterable field, and the page.
pub(crate) fn index_parts<R: Resource>(
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
    crate::crud::relations::docs::describe::<R>(doc, &mut params, &response);
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
pub(crate) fn filter_params<R: Resource>(
    doc: &mut ApiDoc,
    params: &mut Vec<ReferenceOr<Parameter>>,
) {
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

/// `filter`, `cursor`, `count` and `fields` of an INDEX.
fn list_params<R: Resource>(
    doc: &mut ApiDoc,
    o: &OpOptions<R>,
    params: &mut Vec<ReferenceOr<apistos::paths::Parameter>>,
) {
    params.push(filter_param::<R>(doc));
    params.push(parameter(
        "cursor",
        ParameterIn::Query,
        false,
        Some(
            "The `pagination.next_cursor` of the previous page: returns the page after it, \
             with the same `sort`. Cannot be combined with `page`."
                .into(),
        ),
        string_schema(None),
    ));
    params.push(count_param());
    params.push(fields_parameter::<R>(o));
    params.extend(search_param::<R>());
}

/// `q`, the full-text search of a searchable resource.
pub(crate) fn search_param<R: Resource>() -> Option<ReferenceOr<apistos::paths::Parameter>> {
    use crate::crud::query::search::{MAX_CHARS, MAX_WORDS, PARAM};
    if R::SEARCH.is_empty() || R::FIELDS.iter().any(|f| f.name == PARAM) {
        return None;
    }
    let members = R::SEARCH
        .iter()
        .map(|m| format!("`{m}`"))
        .collect::<Vec<_>>()
        .join(", ");
    Some(parameter(
        PARAM,
        ParameterIn::Query,
        false,
        Some(format!(
            "Full-text search in {members} (those you may read): the items holding every              word, compared without case; a word is letters and digits, and a trailing `*`              matches every word that starts with it (`pan*`). At most {MAX_WORDS} words.              A list without `sort` comes best match first (a match in an earlier member              weighs more), its `next_cursor` continuing the ranking."
        )),
        string_schema(Some(MAX_CHARS as u32)),
    ))
}

/// A string schema; with `max`, a non-empty string of at most `max` characters.
fn string_schema(max: Option<u32>) -> Schema {
    use schemars::schema::{InstanceType, SchemaObject, StringValidation};
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
}

/// `filter`: the SQL-like condition, naming the filterable fields.
pub(crate) fn filter_param<R: Resource>(
    doc: &mut ApiDoc,
) -> ReferenceOr<apistos::paths::Parameter> {
    let filterable = R::FIELDS
        .iter()
        .filter(|f| f.filterable)
        .map(|f| f.name)
        .collect::<Vec<_>>()
        .join(", ");
    parameter(
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
        string_schema(Some(doc.filter_max_length())),
    )
}

/// `count`: how `total` is counted, one of the count modes.
fn count_param() -> ReferenceOr<apistos::paths::Parameter> {
    use schemars::schema::{InstanceType, SchemaObject};
    let count = Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        enum_values: Some(
            crate::crud::CountMode::NAMES
                .iter()
                .map(|n| serde_json::Value::from(*n))
                .collect(),
        ),
        ..Default::default()
    });
    parameter(
        "count",
        ParameterIn::Query,
        false,
        Some(
            "How `total` is counted: `exact` (default), `none` (no count; `total` and \
             `total_pages` are null) or `estimated` (the query planner's estimate on \
             PostgreSQL for a caller who reads every row and member and filters on no \
             relation; exact for other callers, whose estimate would draw on rows they may \
             not read, such as deleted or other owners' rows, and on SQLite)."
                .into(),
        ),
        count,
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

/// The envelope schema around an item schema.
fn page_schema(doc: &mut ApiDoc, item: ReferenceOr<Schema>) -> ReferenceOr<Schema> {
    use schemars::schema::{
        ArrayValidation, InstanceType, ObjectValidation, SchemaObject, SingleOrVec,
    };
    let ReferenceOr::Object(item) = item else {
        return doc.schema::<Page<serde_json::Value>>();
    };
    let pagination = doc.generator().subschema_for::<crate::crud::Pagination>();
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

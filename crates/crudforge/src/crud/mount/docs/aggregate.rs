//! What aggregates (`GET <prefix>aggregate/`) add to the description: the operation
//! `aggregate<Name>` with its parameters (`group_by` and each metric listing the members the
//! resource allows, `sort`, `page`, `page_size`, and the list's filters) and the resource's
//! own answer schema, `<Name>Aggregate`, whose groups type each member.

use super::callers::callers_at;
use super::list::{filter_param, filter_params};
use super::rules::scope_param;
use super::schema::{integer_schema, kind_schema, list_parameter, path_params};
use super::soft_delete::include_deleted_param;
use super::words::{plural, words};
use crate::crud::aggregate::{AggregateUse, Metric, Trunc, PATH};
use crate::crud::options::Operation;
use crate::crud::shared::Mounted;
use crate::crud::{Kind, Resource};
use crate::openapi::{json_response, parameter, problem_response, ApiDoc};
use crate::perms::Door;
use actix_web::http::StatusCode;
use apistos::paths::{Operation as OpDoc, OperationType, ParameterIn, Responses};
use apistos::reference_or::ReferenceOr;
use schemars::schema::{
    ArrayValidation, InstanceType, ObjectValidation, Schema, SchemaObject, SingleOrVec,
};
use std::collections::BTreeMap;

/// Adds the aggregate operation of a blueprint that offers it.
pub(crate) fn document<R: Resource>(doc: &mut ApiDoc, m: &Mounted<R>) {
    if !m.aggregates {
        return;
    }
    let Some(o) = m.shared.ops.get(&Operation::Index) else {
        return;
    };
    let mut params = path_params(doc, &m.shared.parents, None);
    params.push(list_parameter(
        "group_by",
        "Members the groups are keyed by, in order; a timestamp also truncated in UTC with \
         `:hour`, `:day`, `:week` (from Monday) or `:month`. Without it, one group of every \
         matching row. Comma-separated, or the parameter repeated."
            .to_owned(),
        enum_schema(group_keys::<R>()),
    ));
    for metric in Metric::ALL {
        let members = members::<R>(metric.flag());
        if members.is_empty() {
            continue;
        }
        params.push(list_parameter(
            metric.param(),
            format!(
                "Members whose {} each group answers, as `{}_<member>`. Comma-separated, or \
                 the parameter repeated.",
                what(metric),
                metric.param()
            ),
            enum_schema(members),
        ));
    }
    params.push(parameter(
        "sort",
        ParameterIn::Query,
        false,
        Some(
            "Comma-separated keys of the answer: a grouped member, `count` or a metric the \
             request asks for (`sum_<member>`); `-key` sorts descending. The groups' own \
             order (ascending, nulls last) follows."
                .into(),
        ),
        doc.generator().subschema_for::<String>(),
    ));
    params.push(parameter(
        "page",
        ParameterIn::Query,
        false,
        Some("Page of groups, from 1 (default 1).".into()),
        integer_schema(1, u32::MAX),
    ));
    params.push(parameter(
        "page_size",
        ParameterIn::Query,
        false,
        Some(
            "Groups per page, 1 to `AGGREGATE_MAX_GROUPS` (configuration, default 1000); \
             default 100 or that cap if lower."
                .into(),
        ),
        integer_schema(1, u32::MAX),
    ));
    params.push(filter_param::<R>(doc));
    params.extend(super::list::search_param::<R>());
    params.extend(scope_param::<R>());
    if R::SOFT_DELETE {
        params.push(include_deleted_param(doc));
    }
    filter_params::<R>(doc, &mut params);
    let mut responses = BTreeMap::new();
    let answer = answer_schema::<R>(doc);
    responses.insert(
        "200".to_owned(),
        json_response("One page of groups", answer),
    );
    responses.extend([
        problem_response(doc, StatusCode::BAD_REQUEST),
        problem_response(doc, StatusCode::SERVICE_UNAVAILABLE),
    ]);
    let (extensions, who, security) =
        callers_at(doc, Operation::Index, o, m, Door::Aggregate, &mut responses);
    let about = "Groups the items the caller may list (after every filter, named filter and \
                 the caller's read scope) and answers `count` and the metrics asked for per \
                 group. A member the caller may not read on every row cannot be grouped, \
                 aggregated or filtered (400, as an unknown member). A query running past \
                 `AGGREGATE_TIMEOUT` is stopped (503)."
        .to_owned();
    let op_doc = OpDoc {
        tags: vec![R::NAME.to_owned()],
        summary: Some(format!("Aggregate {}", plural(&words(R::NAME)))),
        description: Some(match who {
            Some(who) => format!("{about}\n\n{who}"),
            None => about,
        }),
        operation_id: Some(format!("aggregate{}", R::NAME)),
        parameters: params,
        responses: Responses {
            responses,
            ..Default::default()
        },
        security,
        extensions,
        ..Default::default()
    };
    doc.add_operation(&format!("{}{PATH}", m.prefix), OperationType::Get, op_doc);
}

/// What a metric computes, for descriptions.
fn what(m: Metric) -> &'static str {
    match m {
        Metric::CountDistinct => "number of distinct values",
        Metric::Sum => "sum",
        Metric::Avg => "average",
        Metric::Min => "smallest value",
        Metric::Max => "largest value",
    }
}

/// The members of `R` aggregates may use with `flag`.
fn members<R: Resource>(flag: u8) -> Vec<String> {
    R::AGGREGATES
        .iter()
        .filter(|(_, _, u)| u.has(flag))
        .map(|(n, _, _)| (*n).to_owned())
        .collect()
}

/// The values of `group_by`: each groupable member, and each timestamp's truncations.
fn group_keys<R: Resource>() -> Vec<String> {
    let mut out = Vec::new();
    for name in members::<R>(AggregateUse::GROUP_BY) {
        let timestamp = R::field(&name).is_some_and(|f| f.kind == Kind::DateTime);
        if timestamp {
            out.extend(Trunc::NAMES.iter().map(|t| format!("{name}:{t}")));
        }
        out.push(name);
    }
    out
}

/// A string schema of the values `values`.
fn enum_schema(values: Vec<String>) -> Schema {
    Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        enum_values: Some(values.into_iter().map(serde_json::Value::from).collect()),
        ..Default::default()
    })
}

/// `schema`, also null.
fn nullable(schema: Schema) -> Schema {
    let Schema::Object(mut o) = schema else {
        return schema;
    };
    o.extensions
        .insert("nullable".to_owned(), serde_json::Value::Bool(true));
    Schema::Object(o)
}

/// An object schema of `properties`, of which `required` are always present.
fn object(properties: Vec<(String, Schema)>, required: &[&str], description: &str) -> Schema {
    let mut v = ObjectValidation::default();
    for (name, schema) in properties {
        v.properties.insert(name, schema);
    }
    v.required = required.iter().map(|r| (*r).to_owned()).collect();
    let mut o = SchemaObject {
        instance_type: Some(SingleOrVec::Single(Box::new(InstanceType::Object))),
        object: Some(Box::new(v)),
        ..Default::default()
    };
    o.metadata().description = Some(description.to_owned());
    Schema::Object(o)
}

/// The component `<Name>Aggregate` (and `<Name>AggregateGroup`), added once: a page of
/// groups, each with the grouped members typed as in the resource, `count`, and the metrics.
fn answer_schema<R: Resource>(doc: &mut ApiDoc) -> ReferenceOr<Schema> {
    let prefix = doc.generator().settings().definitions_path.clone();
    let name = format!("{}Aggregate", R::NAME);
    let group_name = format!("{name}Group");
    if !doc.generator().definitions().contains_key(&name) {
        let mut props = Vec::new();
        for m in members::<R>(AggregateUse::GROUP_BY) {
            if let Some(f) = R::field(&m) {
                let s = kind_schema(doc, f.kind);
                props.push((m, nullable(s)));
            }
        }
        let count = doc.generator().subschema_for::<i64>();
        props.push(("count".to_owned(), count));
        for metric in Metric::ALL {
            for m in members::<R>(metric.flag()) {
                let Some(f) = R::field(&m) else { continue };
                let s = match metric {
                    Metric::CountDistinct => doc.generator().subschema_for::<i64>(),
                    Metric::Sum if f.kind == Kind::Integer => {
                        doc.generator().subschema_for::<i64>()
                    }
                    Metric::Sum | Metric::Avg => doc.generator().subschema_for::<f64>(),
                    Metric::Min | Metric::Max => kind_schema(doc, f.kind),
                };
                props.push((format!("{}_{m}", metric.param()), nullable(s)));
            }
        }
        let group = object(
            props,
            &["count"],
            "One group: the grouped members (absent unless grouped by; a truncated timestamp \
             is the start of its hour, day, ISO week or month, UTC), the number of its items \
             and the metrics asked for (absent unless asked for; null when no item has a \
             value).",
        );
        let groups = Schema::Object(SchemaObject {
            instance_type: Some(SingleOrVec::Single(Box::new(InstanceType::Array))),
            array: Some(Box::new(ArrayValidation {
                items: Some(SingleOrVec::Single(Box::new(Schema::new_ref(format!(
                    "{prefix}{group_name}"
                ))))),
                ..Default::default()
            })),
            ..Default::default()
        });
        let page = doc.generator().subschema_for::<u32>();
        let flag = doc.generator().subschema_for::<bool>();
        let answer = object(
            vec![
                ("groups".to_owned(), groups),
                ("page".to_owned(), page.clone()),
                ("page_size".to_owned(), page),
                ("has_more".to_owned(), flag),
            ],
            &["groups", "page", "page_size", "has_more"],
            "A page of groups; `has_more` tells whether another page follows.",
        );
        let defs = doc.generator().definitions_mut();
        defs.insert(group_name, group);
        defs.insert(name.clone(), answer);
    }
    ReferenceOr::Object(Schema::new_ref(format!("{prefix}{name}")))
}

//! The schemas and parameters the description's parts share: a value of each field kind, path
//! parameters (parents, the item's key), bounded integers, comma-separated list parameters and
//! the `fields` parameter of the reads.

use crate::crud::options::OpOptions;
use crate::crud::shared::Mounted;
use crate::crud::{FieldInfo, Kind, Resource};
use crate::openapi::{parameter, ApiDoc};
use apistos::paths::{Parameter, ParameterIn};
use apistos::reference_or::ReferenceOr;
use schemars::schema::{InstanceType, Schema, SchemaObject};

/// A query parameter holding a non-empty comma-separated list of `item` values.
pub(crate) fn list_parameter(
    name: &str,
    description: String,
    item: Schema,
) -> ReferenceOr<apistos::paths::Parameter> {
    use schemars::schema::{ArrayValidation, SingleOrVec};
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

/// `fields`: the members each returned item keeps, among those the operation's answer has.
pub(crate) fn fields_parameter<R: Resource>(
    o: &OpOptions<R>,
) -> ReferenceOr<apistos::paths::Parameter> {
    let item = Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        enum_values: Some(
            crate::crud::query::sparse::selectable(R::FIELDS, o.members)
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

/// An integer schema with bounds.
pub(crate) fn integer_schema(min: u32, max: u32) -> Schema {
    use schemars::schema::NumberValidation;
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
pub(crate) fn field_schema(doc: &mut ApiDoc, f: &FieldInfo) -> Schema {
    let mut s = kind_schema(doc, f.kind);
    if let (Some((min, max)), Schema::Object(o)) = (f.int_range, &mut s) {
        o.format = Some("int32".to_owned());
        let n = o.number();
        n.minimum = Some(min as f64);
        n.maximum = Some(max as f64);
    }
    s
}

/// The schema of a value of `kind`.
pub(crate) fn kind_schema(doc: &mut ApiDoc, kind: Kind) -> Schema {
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

/// The path parameters of a path: one per parent, then the item's key when `item` names it.
pub(crate) fn path_params(
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

/// The path parameters of an item path (parents, then the key).
pub(crate) fn item_params<R: Resource>(
    doc: &mut ApiDoc,
    m: &Mounted<R>,
) -> Vec<ReferenceOr<Parameter>> {
    let shared = &m.shared;
    path_params(
        doc,
        &shared.parents,
        Some((shared.res_id, &shared.res_id_param)),
    )
}

/// The schema of a file's bytes (a binary string), described.
#[allow(
    dead_code,
    reason = "a door of the seam: a build without optional surfaces leaves it unused"
)]
pub(crate) fn binary(description: String) -> Schema {
    Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        format: Some("binary".to_owned()),
        metadata: Some(Box::new(schemars::schema::Metadata {
            description: Some(description),
            ..Default::default()
        })),
        ..Default::default()
    })
}

//! What read rules and named filters add to the OpenAPI description: who reads each
//! rule-protected member of the response (in its description and `x-crudforge-read`; never
//! required) and the `scope` parameter of a list, whose items are the resource's named filters.

use super::schema::list_parameter;
use crate::crud::list::named_filters::PARAM;
use crate::crud::Resource;
use crate::openapi::ApiDoc;
use apistos::paths::Parameter;
use apistos::reference_or::ReferenceOr;
use schemars::schema::{InstanceType, Schema, SchemaObject};

/// The extension naming who reads a member: `admin`, `owner:<field>` or `rule`.
const EXTENSION: &str = "x-crudforge-read";

/// `scope` of an INDEX, when the resource declares named filters.
pub(crate) fn scope_param<R: Resource>() -> Option<ReferenceOr<Parameter>> {
    if R::SCOPES.is_empty() {
        return None;
    }
    let item = Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        enum_values: Some(
            R::SCOPES
                .iter()
                .map(|(n, _)| serde_json::Value::from(*n))
                .collect(),
        ),
        ..Default::default()
    });
    let declared = R::SCOPES
        .iter()
        .map(|(n, e)| format!("`{n}`: `{e}`"))
        .collect::<Vec<_>>()
        .join("; ");
    Some(list_parameter(
        PARAM,
        format!(
            "Named filters, ANDed with each other, the other filters and the rules \
             (`now` and `today` are the server's clock at the request): {declared}. \
             Comma-separated, or the parameter repeated."
        ),
        item,
    ))
}

/// Documents who reads each rule-protected member of the component `schema` refers to (the
/// generated response of `R`): a sentence in its description, [`EXTENSION`], and no longer
/// required, since it is absent for the other callers.
pub(crate) fn mark_readers<R: Resource>(doc: &mut ApiDoc, schema: &ReferenceOr<Schema>) {
    if R::READ_RULES.is_empty() {
        return;
    }
    let ReferenceOr::Object(Schema::Object(obj)) = schema else {
        return;
    };
    let Some(r) = obj.reference.as_deref() else {
        return;
    };
    let name = r.rsplit('/').next().unwrap_or(r);
    let Some(Schema::Object(def)) = doc.generator().definitions_mut().get_mut(name) else {
        return;
    };
    let Some(object) = def.object.as_deref_mut() else {
        return;
    };
    for (member, readers) in R::READ_RULES {
        object.required.remove(*member);
        let Some(Schema::Object(m)) = object.properties.get_mut(*member) else {
            continue;
        };
        if m.extensions.contains_key(EXTENSION) {
            continue;
        }
        m.extensions.insert(
            EXTENSION.to_owned(),
            serde_json::Value::String(readers.extension()),
        );
        let note = format!(
            "Readable by {}; absent for other callers, who cannot filter or sort by it either.",
            readers.describe()
        );
        let meta = m.metadata();
        meta.description = Some(match meta.description.take() {
            Some(d) => format!("{} {note}", d.trim_end()),
            None => note,
        });
    }
}

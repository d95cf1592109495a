//! The OpenAPI description of relations on a resource's `GET` and INDEX: the `expand`
//! parameter, the embedded members (optional, typed by the related resource's response
//! schema), and `fields` and `sort` values that name related fields.

use super::{Relation, RelationKind, HAS_MANY_EXPAND_MAX, MAX_EXPANSIONS, MAX_RELATION_JOINS};
use crate::crud::Resource;
use crate::openapi::{parameter, ApiDoc};
use apistos::paths::{Parameter, ParameterDefinition, ParameterIn};
use apistos::reference_or::ReferenceOr;
use schemars::schema::{ArrayValidation, InstanceType, Schema, SchemaObject, SingleOrVec};

/// Adds what relations change to an operation's parameters `params` and its answer schema
/// `answer` (the partial response component of a `GET` or an INDEX item).
pub(crate) fn describe<R: Resource>(
    doc: &mut ApiDoc,
    params: &mut Vec<ReferenceOr<Parameter>>,
    answer: &ReferenceOr<Schema>,
) {
    if R::RELATIONS.is_empty() {
        return;
    }
    params.push(expand_param::<R>());
    extend_fields::<R>(params);
    extend_sort::<R>(params);
    embed_members::<R>(doc, answer);
}

/// One relation as the description names it: `habitat (one Habitat)`.
fn described(r: &Relation) -> String {
    let t = (r.target)();
    match r.kind {
        RelationKind::BelongsTo => format!("`{}` (one {}, by `{}`)", r.name, t.name, r.local),
        RelationKind::HasMany => format!(
            "`{}` (a list of {}, by their `{}`; at most {HAS_MANY_EXPAND_MAX})",
            r.name, t.name, r.remote
        ),
    }
}

fn expand_param<R: Resource>() -> ReferenceOr<Parameter> {
    let rels: Vec<String> = R::RELATIONS.iter().map(described).collect();
    let schema = Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        string: Some(Box::new(schemars::schema::StringValidation {
            pattern: Some(expand_pattern(R::RELATIONS)),
            ..Default::default()
        })),
        ..Default::default()
    });
    parameter(
        "expand",
        ParameterIn::Query,
        false,
        Some(format!(
            "Related items to embed, comma-separated: {}. `rel.sub` also embeds a relation \
             of the related items (one level). Each embedded item is what the related \
             resource's own GET shows the caller: an item the caller may not read embeds as \
             null (or is left out of a list). At most {MAX_EXPANSIONS} relations; an unknown \
             or unreadable one is a 400 naming it, and so is one through a key the caller \
             may not read (a key read by its owner only links the caller's own rows). \
             Filters and `sort` may also name related fields (`rel.field=value`, \
             `rel.field__op=value`, `rel.field` in `filter`), \
             through at most {MAX_RELATION_JOINS} relations per request, among the related \
             items the caller may read.",
            rels.join(", ")
        )),
        schema,
    )
}

/// The syntax of `expand` over `relations`: a comma-separated list (spaces and empty items
/// allowed, as the parser skips them) of relation names and `rel.sub` pairs, so that the
/// description admits no name the server does not know.
fn expand_pattern(relations: &[Relation]) -> String {
    let mut items: Vec<String> = Vec::new();
    for r in relations {
        items.push(regex::escape(r.name));
        for n in (r.target)().relations {
            items.push(regex::escape(&format!("{}.{}", r.name, n.name)));
        }
    }
    let item = format!("({})", items.join("|"));
    format!("^ *{item}?( *, *{item}?)* *$")
}

/// The schema of a parameter named `name` among `params`.
fn param_schema<'a>(
    params: &'a mut [ReferenceOr<Parameter>],
    name: &str,
) -> Option<&'a mut SchemaObject> {
    params.iter_mut().find_map(|p| match p {
        ReferenceOr::Object(p) if p.name == name => match p.definition.as_mut()? {
            ParameterDefinition::Schema(s) => match &mut **s {
                ReferenceOr::Object(Schema::Object(o)) => Some(o),
                _ => None,
            },
            ParameterDefinition::Content(_) => None,
        },
        _ => None,
    })
}

/// `fields` may name a relation (its whole embedded member) and its members.
fn extend_fields<R: Resource>(params: &mut [ReferenceOr<Parameter>]) {
    let Some(o) = param_schema(params, "fields") else {
        return;
    };
    let Some(ArrayValidation {
        items: Some(SingleOrVec::Single(item)),
        ..
    }) = o.array.as_deref_mut()
    else {
        return;
    };
    let Schema::Object(item) = &mut **item else {
        return;
    };
    let Some(values) = item.enum_values.as_mut() else {
        return;
    };
    for r in R::RELATIONS {
        values.push(r.name.into());
        for f in (r.target)().fields.iter().filter(|f| !f.write_only) {
            values.push(format!("{}.{}", r.name, f.name).into());
        }
    }
}

/// `sort` may name the fields of a belongs-to relation.
fn extend_sort<R: Resource>(params: &mut [ReferenceOr<Parameter>]) {
    let Some(o) = param_schema(params, "sort") else {
        return;
    };
    let Some(pattern) = o.string.as_deref_mut().and_then(|s| s.pattern.as_mut()) else {
        return;
    };
    let related: Vec<String> = R::RELATIONS
        .iter()
        .filter(|r| r.kind == RelationKind::BelongsTo)
        .flat_map(|r| {
            (r.target)()
                .fields
                .iter()
                .filter(|f| f.comparable())
                .map(move |f| format!("{}\\.{}", r.name, f.name))
        })
        .collect();
    if related.is_empty() {
        return;
    }
    // `^([+-]?(a|b)(,[+-]?(a|b))*)?$`: each `(a|b)` gains the related keys.
    let extra = format!("|{}", related.join("|"));
    *pattern = pattern
        .replace(")(,", &format!("{extra})(,"))
        .replace("))*", &format!("{extra}))*"));
}

/// The embedded members, optional, in the answer's component.
fn embed_members<R: Resource>(doc: &mut ApiDoc, answer: &ReferenceOr<Schema>) {
    let members: Vec<(&str, Schema)> = R::RELATIONS
        .iter()
        .map(|r| {
            let target = (r.target)();
            let ReferenceOr::Object(item) = (target.schema)(doc) else {
                return (r.name, Schema::Bool(true));
            };
            let schema = match r.kind {
                RelationKind::BelongsTo => Schema::Object(SchemaObject {
                    subschemas: Some(Box::new(schemars::schema::SubschemaValidation {
                        all_of: Some(vec![item]),
                        ..Default::default()
                    })),
                    metadata: Some(Box::new(schemars::schema::Metadata {
                        description: Some(format!(
                            "With `expand={}`: the {} this item's `{}` names, as its own GET \
                             shows it; null when there is none or the caller may not read it.",
                            r.name, target.name, r.local
                        )),
                        ..Default::default()
                    })),
                    ..Default::default()
                }),
                RelationKind::HasMany => Schema::Object(SchemaObject {
                    instance_type: Some(InstanceType::Array.into()),
                    array: Some(Box::new(ArrayValidation {
                        items: Some(SingleOrVec::Single(Box::new(item))),
                        max_items: Some(HAS_MANY_EXPAND_MAX),
                        ..Default::default()
                    })),
                    metadata: Some(Box::new(schemars::schema::Metadata {
                        description: Some(format!(
                            "With `expand={}`: the first {HAS_MANY_EXPAND_MAX} {} items whose \
                             `{}` is this item's (by creation), among those the caller may read.",
                            r.name, target.name, r.remote
                        )),
                        ..Default::default()
                    })),
                    ..Default::default()
                }),
            };
            (r.name, schema)
        })
        .collect();
    let ReferenceOr::Object(Schema::Object(obj)) = answer else {
        return;
    };
    let Some(reference) = obj.reference.as_deref() else {
        return;
    };
    let name = reference.rsplit('/').next().unwrap_or(reference);
    let Some(Schema::Object(def)) = doc.generator().definitions_mut().get_mut(name) else {
        return;
    };
    let Some(object) = def.object.as_deref_mut() else {
        return;
    };
    for (n, s) in members {
        object.properties.entry(n.to_owned()).or_insert(s);
    }
}

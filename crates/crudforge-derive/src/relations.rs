//! Declared relations: checking `belongs_to(Target)` on a foreign-key field and
//! `has_many(name = Target, key = "field")` on the struct (`attr/relations.rs` reads them), and
//! writing their `RELATIONS` entries and the type checks that hold the keys to the related
//! resources' ids.

use crate::ast::{Field, Kind, Model};
use crate::attr::BelongsTo;
use crate::ctxt::Ctxt;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Path};

/// The name of the belongs-to relation on field `f`: `name = "..."`, or the field's name
/// without `_id`.
fn belongs_to_name(f: &Field, b: &BelongsTo) -> Option<String> {
    match &b.name {
        Some(n) => Some(n.value()),
        None => f.name().strip_suffix("_id").map(str::to_owned),
    }
}

/// The names of the model's relations, as rules and clients write them.
pub(crate) fn names(m: &Model) -> Vec<String> {
    let belongs = m
        .fields
        .iter()
        .filter_map(|f| belongs_to_name(f, f.attrs.belongs_to.as_ref()?));
    belongs
        .chain(m.attrs.has_many.iter().map(|h| h.name.to_string()))
        .collect()
}

/// Checks the model's relations: keys of the right kind, names that clash with nothing.
pub(crate) fn check(cx: &Ctxt, m: &Model) {
    let mut names: Vec<String> = Vec::new();
    let mut claim = |cx: &Ctxt, name: String, span: Span| {
        if m.fields.iter().any(|f| f.name() == name) {
            cx.error_at(
                span,
                format!("the relation `{name}` has the name of a field\nhelp: name it otherwise with `name = \"...\"`"),
            );
        } else if names.contains(&name) {
            cx.error_at(
                span,
                format!("two relations are named `{name}`\nhelp: give each relation its own name"),
            );
        }
        names.push(name);
    };
    for f in &m.fields {
        let Some(b) = &f.attrs.belongs_to else {
            continue;
        };
        if f.kind != Some(Kind::Uuid) {
            cx.error(
                &f.ty,
                format!(
                    "a `belongs_to` field holds the related resource's id, a `uuid::Uuid`\nhelp: write `{}: Option<uuid::Uuid>` (or `uuid::Uuid` when every row has one)",
                    f.ident
                ),
            );
        }
        for (flag, what) in [(f.attrs.skip, "skip"), (f.attrs.write_only, "write_only")] {
            if let Some(span) = flag {
                cx.error_at(
                    span,
                    format!("a `belongs_to` field cannot be `{what}`: relations read its value\nhelp: remove `{what}`"),
                );
            }
        }
        if let Some((false, span)) = f.attrs.filter {
            cx.error_at(
                span,
                "a `belongs_to` field is filtered by its relation\nhelp: remove `filter = false`",
            );
        }
        match belongs_to_name(f, b) {
            Some(name) => claim(cx, name, b.span),
            None => cx.error_at(
                b.span,
                format!(
                    "cannot name the relation of `{}`: its name does not end in `_id`\nhelp: write `belongs_to({}, name = \"...\")`",
                    f.ident,
                    quote::ToTokens::to_token_stream(&b.target)
                ),
            ),
        }
    }
    for h in &m.attrs.has_many {
        claim(cx, h.name.to_string(), h.name.span());
    }
}

/// The entries of `RELATIONS`.
pub(crate) fn relations_const(m: &Model, k: &Path) -> TokenStream {
    let id = m.id_field().map_or_else(|| "id".to_owned(), Field::name);
    let belongs = m.fields.iter().filter_map(|f| {
        let b = f.attrs.belongs_to.as_ref()?;
        let name = belongs_to_name(f, b)?;
        let (target, local) = (&b.target, f.name());
        Some(quote! {
            #k::__private::Relation {
                name: #name,
                kind: #k::__private::RelationKind::BelongsTo,
                local: #local,
                remote: <#target as #k::crud::Resource>::ID_FIELD,
                target: #k::__private::Target::of::<#target>,
            }
        })
    });
    let many = m.attrs.has_many.iter().map(|h| {
        let (name, target, key) = (h.name.to_string(), &h.target, &h.key);
        quote! {
            #k::__private::Relation {
                name: #name,
                kind: #k::__private::RelationKind::HasMany,
                local: #id,
                remote: #key,
                target: #k::__private::Target::of::<#target>,
            }
        }
    });
    quote! {
        const RELATIONS: &'static [#k::__private::Relation] = &[#(#belongs,)* #(#many,)*];
    }
}

/// The type checks of the relations, placed at the attributes: each target is a resource, and
/// each has-many key is a field of the target that holds an id.
pub(crate) fn type_checks(m: &Model, p: &TokenStream) -> TokenStream {
    let belongs = m.fields.iter().filter_map(|f| {
        let b = f.attrs.belongs_to.as_ref()?;
        let target = &b.target;
        Some(quote_spanned! {target.span()=> #p::relation_target::<#target>(); })
    });
    let many = m.attrs.has_many.iter().map(|h| {
        let target = &h.target;
        let key = Ident::new(&h.key.value(), h.key.span());
        quote_spanned! {h.key.span()=>
            #p::relation_target::<#target>();
            let _ = |__row: &#target| #p::foreign_key(&__row.#key);
        }
    });
    quote! {
        fn __crudforge_relation_checks() {
            #(#belongs)*
            #(#many)*
        }
    }
}

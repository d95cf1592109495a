//! Declared relations: reading `belongs_to(Target)` on a foreign-key field and
//! `has_many(name = Target, key = "field")` on the struct, checking them, and writing their
//! `RELATIONS` entries and the type checks that hold the keys to the related resources' ids.

use crate::ast::{Field, Kind, Model};
use crate::ctxt::Ctxt;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Ident, LitStr, Path};

const BELONGS_TO_HELP: &str =
    "help: write `belongs_to(Habitat)` or `belongs_to(Habitat, name = \"home\")` on the foreign-key field";
const HAS_MANY_HELP: &str =
    "help: write `has_many(critters = Critter, key = \"habitat_id\")` on the struct";

/// `belongs_to(Target)` or `belongs_to(Target, name = "rel")` on a field.
pub(crate) struct BelongsTo {
    pub(crate) target: Path,
    pub(crate) name: Option<LitStr>,
    pub(crate) span: Span,
}

/// `has_many(name = Target, key = "field")` on the struct.
pub(crate) struct HasMany {
    pub(crate) name: Ident,
    pub(crate) target: Path,
    pub(crate) key: LitStr,
}

/// Reads the parentheses of `belongs_to(...)`, the key `meta` is at.
pub(crate) fn belongs_to(meta: &ParseNestedMeta<'_>) -> syn::Result<BelongsTo> {
    let span = meta.path.span();
    let bad = |at: Span| {
        syn::Error::new(
            at,
            format!("expected the related resource\n{BELONGS_TO_HELP}"),
        )
    };
    if !meta.input.peek(syn::token::Paren) {
        return Err(bad(span));
    }
    let content;
    syn::parenthesized!(content in meta.input);
    let target: Path = content.parse().map_err(|e| bad(e.span()))?;
    let mut name = None;
    if content.peek(syn::Token![,]) {
        let _: syn::Token![,] = content.parse()?;
        if !content.is_empty() {
            let key: Ident = content.parse()?;
            if key != "name" {
                return Err(syn::Error::new(
                    key.span(),
                    format!("unknown key `{key}` in `belongs_to`\n{BELONGS_TO_HELP}"),
                ));
            }
            let _: syn::Token![=] = content.parse()?;
            let lit: LitStr = content.parse()?;
            name = Some(lit);
        }
    }
    if !content.is_empty() {
        return Err(syn::Error::new(
            content.span(),
            format!("unexpected tokens\n{BELONGS_TO_HELP}"),
        ));
    }
    Ok(BelongsTo { target, name, span })
}

/// Reads the parentheses of `has_many(...)`, the key `meta` is at.
pub(crate) fn has_many(meta: &ParseNestedMeta<'_>) -> syn::Result<HasMany> {
    let bad = |at: Span, what: &str| syn::Error::new(at, format!("{what}\n{HAS_MANY_HELP}"));
    if !meta.input.peek(syn::token::Paren) {
        return Err(bad(
            meta.path.span(),
            "expected the relation in parentheses",
        ));
    }
    let content;
    syn::parenthesized!(content in meta.input);
    let name: Ident = content
        .parse()
        .map_err(|e| bad(e.span(), "expected the relation's name"))?;
    let _: syn::Token![=] = content
        .parse()
        .map_err(|e| bad(e.span(), "expected `=` and the related resource"))?;
    let target: Path = content
        .parse()
        .map_err(|e| bad(e.span(), "expected the related resource"))?;
    let _: syn::Token![,] = content.parse().map_err(|e| {
        bad(
            e.span(),
            "expected `, key = \"...\"`: the related resource's foreign key",
        )
    })?;
    let key_name: Ident = content
        .parse()
        .map_err(|e| bad(e.span(), "expected `key = \"...\"`"))?;
    if key_name != "key" {
        return Err(bad(
            key_name.span(),
            &format!("unknown key `{key_name}` in `has_many`"),
        ));
    }
    let _: syn::Token![=] = content.parse()?;
    let key: LitStr = content
        .parse()
        .map_err(|e| bad(e.span(), "expected the foreign key's name in quotes"))?;
    if syn::parse_str::<Ident>(&key.value()).is_err() {
        return Err(bad(key.span(), "expected a field name"));
    }
    if content.peek(syn::Token![,]) {
        let _: syn::Token![,] = content.parse()?;
    }
    if !content.is_empty() {
        return Err(bad(content.span(), "unexpected tokens"));
    }
    Ok(HasMany { name, target, key })
}

/// The name of the belongs-to relation on field `f`: `name = "..."`, or the field's name
/// without `_id`.
fn belongs_to_name(f: &Field, b: &BelongsTo) -> Option<String> {
    match &b.name {
        Some(n) => Some(n.value()),
        None => f.name().strip_suffix("_id").map(str::to_owned),
    }
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

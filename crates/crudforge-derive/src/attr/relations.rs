//! Reading the relation keys: `belongs_to(Target)` or `belongs_to(Target, name = "rel")` on a
//! foreign-key field, and `has_many(name = Target, key = "field")` on the struct
//! (repeatable). `crate::relations` checks them and writes what they generate.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Ident, LitStr, Path};

/// How `belongs_to` is written, for the help of every error about one.
const BELONGS_TO_HELP: &str =
    "help: write `belongs_to(Habitat)` or `belongs_to(Habitat, name = \"home\")` on the foreign-key field";
/// How `has_many` is written, for the help of every error about one.
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
pub(super) fn belongs_to(meta: &ParseNestedMeta<'_>) -> syn::Result<BelongsTo> {
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
pub(super) fn has_many(meta: &ParseNestedMeta<'_>) -> syn::Result<HasMany> {
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

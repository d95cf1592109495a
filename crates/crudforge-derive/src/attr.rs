//! Parsing of `#[resource(...)]` (and the `#[diesel(table_name = ...)]` it reads).

use crate::ctxt::Ctxt;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, LitInt, LitStr, Path};

/// Keys accepted on the struct.
pub(crate) const STRUCT_KEYS: &[&str] = &["table", "name", "rules", "crate"];
/// Keys accepted on a field.
pub(crate) const FIELD_KEYS: &[&str] = &[
    "id",
    "read_only",
    "write_only",
    "skip",
    "filter",
    "max_len",
    "email",
    "default",
    "password",
];

/// Struct-level options.
#[derive(Default)]
pub(crate) struct StructAttrs {
    /// `table = critters` or `#[diesel(table_name = critters)]`.
    pub(crate) table: Option<Path>,
    /// `name = "Critter"`.
    pub(crate) name: Option<LitStr>,
    /// `crate = "::crudforge"`.
    pub(crate) krate: Option<Path>,
    /// `rules = OwnerRules::USER_ID`: the resource's default permission rules.
    pub(crate) rules: Option<Expr>,
}

/// A flag and the token that set it (for error spans).
pub(crate) type Flag = Option<proc_macro2::Span>;

/// Field-level options.
#[derive(Default)]
pub(crate) struct FieldAttrs {
    pub(crate) id: Flag,
    pub(crate) read_only: Flag,
    pub(crate) write_only: Flag,
    pub(crate) skip: Flag,
    /// `filter = false` (span of the key) or `filter = true`.
    pub(crate) filter: Option<(bool, proc_macro2::Span)>,
    pub(crate) max_len: Option<(usize, proc_macro2::Span)>,
    pub(crate) email: Flag,
    pub(crate) default: Option<Expr>,
    /// `password`: plaintext in bodies, stored as a bcrypt hash, never returned.
    pub(crate) password: Flag,
}

/// Reports an unknown key, suggesting the closest valid one, and skips its value
/// (`key = value` or `key(...)`) so the keys after it are still read.
fn unknown_key(
    cx: &Ctxt,
    meta: &syn::meta::ParseNestedMeta<'_>,
    allowed: &[&str],
) -> syn::Result<()> {
    let path = &meta.path;
    let name = path
        .get_ident()
        .map_or_else(|| quote::quote!(#path).to_string(), ToString::to_string);
    let guess = allowed
        .iter()
        .filter(|k| edit_distance(k, &name) <= 2)
        .min_by_key(|k| edit_distance(k, &name))
        .map_or_else(String::new, |k| format!("did you mean `{k}`? "));
    cx.error(
        path,
        format!(
            "unknown resource attribute `{name}`\nhelp: {guess}valid keys here are: {}",
            allowed.join(", ")
        ),
    );
    if meta.input.peek(syn::Token![=]) {
        let _: Expr = meta.value()?.parse()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        let _: proc_macro2::TokenStream = content.parse()?;
    }
    Ok(())
}

/// Levenshtein distance, for "did you mean" hints.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

fn duplicate(cx: &Ctxt, path: &Path) {
    let name = path
        .get_ident()
        .map_or_else(String::new, ToString::to_string);
    cx.error(
        path,
        format!("duplicate resource attribute `{name}`\nhelp: give `{name}` once; remove this one"),
    );
}

/// Reads the struct's attributes.
pub(crate) fn struct_attrs(cx: &Ctxt, attrs: &[Attribute]) -> StructAttrs {
    let mut out = StructAttrs::default();
    // `table` may also come from `#[diesel(table_name)]`, so duplicates of `table` itself are
    // tracked across all `#[resource]` attributes here.
    let mut seen_table = false;
    for attr in attrs {
        if attr.path().is_ident("diesel") {
            // Only `table_name` matters here; Diesel checks the rest.
            let _ = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("table_name") {
                    let p: Path = meta.value()?.parse()?;
                    if out.table.is_none() {
                        out.table = Some(p);
                    }
                } else if meta.input.peek(syn::Token![=]) {
                    let _: Expr = meta.value()?.parse()?;
                } else if meta.input.peek(syn::token::Paren) {
                    let content;
                    syn::parenthesized!(content in meta.input);
                    let _: proc_macro2::TokenStream = content.parse()?;
                }
                Ok(())
            });
            continue;
        }
        if !attr.path().is_ident("resource") {
            continue;
        }
        let r = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("table") {
                if seen_table {
                    duplicate(cx, &meta.path);
                }
                seen_table = true;
                out.table = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("name") {
                if out.name.is_some() {
                    duplicate(cx, &meta.path);
                }
                out.name = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("rules") {
                if out.rules.is_some() {
                    duplicate(cx, &meta.path);
                }
                out.rules = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("crate") {
                if out.krate.is_some() {
                    duplicate(cx, &meta.path);
                }
                let s: LitStr = meta.value()?.parse()?;
                out.krate = Some(s.parse()?);
            } else {
                unknown_key(cx, &meta, STRUCT_KEYS)?;
            }
            Ok(())
        });
        if let Err(e) = r {
            cx.syn_error(e);
        }
    }
    out
}

fn set_flag(cx: &Ctxt, slot: &mut Flag, path: &Path) {
    if slot.is_some() {
        duplicate(cx, path);
    }
    *slot = Some(path.span());
}

/// Reads a field's attributes.
pub(crate) fn field_attrs(cx: &Ctxt, attrs: &[Attribute]) -> FieldAttrs {
    let mut out = FieldAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("resource")) {
        let r = attr.parse_nested_meta(|meta| {
            let p = &meta.path;
            if p.is_ident("id") {
                set_flag(cx, &mut out.id, p);
            } else if p.is_ident("read_only") {
                set_flag(cx, &mut out.read_only, p);
            } else if p.is_ident("write_only") {
                set_flag(cx, &mut out.write_only, p);
            } else if p.is_ident("skip") {
                set_flag(cx, &mut out.skip, p);
            } else if p.is_ident("password") {
                set_flag(cx, &mut out.password, p);
            } else if p.is_ident("email") {
                set_flag(cx, &mut out.email, p);
            } else if p.is_ident("filter") {
                if out.filter.is_some() {
                    duplicate(cx, p);
                }
                let b: syn::LitBool = meta
                    .value()
                    .and_then(|v| v.parse())
                    .map_err(|_| meta.error("expected `filter = false` or `filter = true`"))?;
                out.filter = Some((b.value, p.span()));
            } else if p.is_ident("max_len") {
                if out.max_len.is_some() {
                    duplicate(cx, p);
                }
                let n: LitInt = meta
                    .value()
                    .and_then(|v| v.parse())
                    .map_err(|_| meta.error("expected a length: `max_len = 100`"))?;
                let n: usize = n.base10_parse()?;
                if n == 0 {
                    cx.error(p, "`max_len` must be at least 1");
                }
                out.max_len = Some((n, p.span()));
            } else if p.is_ident("default") {
                if out.default.is_some() {
                    duplicate(cx, p);
                }
                out.default = Some(
                    meta.value()
                        .and_then(|v| v.parse())
                        .map_err(|_| meta.error("expected a value: `default = 10`"))?,
                );
            } else {
                unknown_key(cx, &meta, FIELD_KEYS)?;
            }
            Ok(())
        });
        if let Err(e) = r {
            cx.syn_error(e);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{edit_distance, struct_attrs};
    use crate::ctxt::Ctxt;

    #[test]
    fn typos_are_close() {
        assert_eq!(edit_distance("tabel", "table"), 2);
        assert_eq!(edit_distance("max_length", "max_len"), 3);
        assert_eq!(edit_distance("", "id"), 2);
    }

    #[test]
    fn a_table_given_twice_is_reported_across_attributes() {
        let input: syn::DeriveInput = syn::parse_quote! {
            #[resource(table = critters)]
            #[resource(table = animals, crate = "::a", crate = "::b")]
            struct Critter {}
        };
        let cx = Ctxt::default();
        let _ = struct_attrs(&cx, &input.attrs);
        let err = cx
            .check()
            .expect_err("duplicates")
            .to_compile_error()
            .to_string();
        assert!(
            err.contains("duplicate resource attribute `table`"),
            "{err}"
        );
        assert!(
            err.contains("duplicate resource attribute `crate`"),
            "{err}"
        );
    }
}

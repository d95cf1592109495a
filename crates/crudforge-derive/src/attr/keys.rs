//! The machinery every key reader shares: the value of one key while attributes are read
//! ([`Attr`], [`BoolAttr`] for flags), which reports a key given twice, and the report of an
//! unknown key with its "did you mean" hint.

use crate::ctxt::Ctxt;
use crate::symbol::Symbol;
use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Expr, Path};

use super::Flag;

/// The value of one key while attributes are read, with the span of the key that gave it.
pub(super) struct Attr<'c, T> {
    cx: &'c Ctxt,
    name: Symbol,
    value: Option<(T, Span)>,
}

impl<'c, T> Attr<'c, T> {
    /// A key not given yet.
    pub(super) fn none(cx: &'c Ctxt, name: Symbol) -> Self {
        Attr {
            cx,
            name,
            value: None,
        }
    }

    /// Reports `key` if this key already has a value.
    fn report_repeat(&self, key: &Path) {
        if self.value.is_some() {
            let name = self.name;
            self.cx.error(
                key,
                format!(
                    "duplicate resource attribute `{name}`\nhelp: give `{name}` once; remove this one"
                ),
            );
        }
    }

    /// Stores `value`, given by `key`. A repeated key is reported at its second occurrence and
    /// its value replaces the earlier one, so later rules point at the last occurrence (the
    /// expansion fails anyway).
    pub(super) fn set(&mut self, key: &Path, value: T) {
        self.report_repeat(key);
        self.value = Some((value, key.span()));
    }

    /// Reads the value of the key `meta` is at with `read`, then stores it as [`Attr::set`]
    /// does. A repeat is reported before its value is read, so a malformed repeat shows both
    /// mistakes.
    pub(super) fn set_with(
        &mut self,
        meta: &ParseNestedMeta<'_>,
        read: impl FnOnce(&ParseNestedMeta<'_>) -> syn::Result<T>,
    ) -> syn::Result<()> {
        self.report_repeat(&meta.path);
        let value = read(meta)?;
        self.value = Some((value, meta.path.span()));
        Ok(())
    }

    /// The value, if the key was given.
    pub(super) fn get(self) -> Option<T> {
        self.value.map(|(value, _)| value)
    }

    /// The value and the span of its key, if the key was given.
    pub(super) fn get_with_span(self) -> Option<(T, Span)> {
        self.value
    }
}

/// A flag key, such as `read_only`: given or not.
pub(super) struct BoolAttr<'c>(Attr<'c, ()>);

impl<'c> BoolAttr<'c> {
    /// A flag not given yet.
    pub(super) fn none(cx: &'c Ctxt, name: Symbol) -> Self {
        BoolAttr(Attr::none(cx, name))
    }

    /// Records the flag, given by `key`; a repeat is reported.
    pub(super) fn set_true(&mut self, key: &Path) {
        self.0.set(key, ());
    }

    /// The span of the key that set the flag, if it was given.
    pub(super) fn get(self) -> Flag {
        self.0.get_with_span().map(|((), span)| span)
    }
}

/// Skips the value of the key `meta` is at (`key = value` or `key(...)`; nothing for a bare
/// `key`), so the keys after it are still read.
pub(super) fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        let _: Expr = meta.value()?.parse()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        let _: proc_macro2::TokenStream = content.parse()?;
    }
    Ok(())
}

/// Reports an unknown key, suggesting the closest valid one, and skips its value so the keys
/// after it are still read.
pub(super) fn unknown_key(
    cx: &Ctxt,
    meta: &ParseNestedMeta<'_>,
    allowed: &[Symbol],
) -> syn::Result<()> {
    let path = &meta.path;
    let name = path
        .get_ident()
        .map_or_else(|| quote::quote!(#path).to_string(), ToString::to_string);
    let guess = allowed
        .iter()
        .map(|k| k.as_str())
        .filter(|k| edit_distance(k, &name) <= 2)
        .min_by_key(|k| edit_distance(k, &name))
        .map_or_else(String::new, |k| format!("did you mean `{k}`? "));
    let valid = allowed
        .iter()
        .map(|k| k.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    cx.error(
        path,
        format!("unknown resource attribute `{name}`\nhelp: {guess}valid keys here are: {valid}"),
    );
    skip_value(meta)
}

/// Levenshtein distance, for "did you mean" hints.
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
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

#[cfg(test)]
mod tests {
    use super::edit_distance;

    #[test]
    fn typos_are_close() {
        assert_eq!(edit_distance("tabel", "table"), 2);
        assert_eq!(edit_distance("max_length", "max_len"), 3);
        assert_eq!(edit_distance("", "id"), 2);
    }
}

//! Reading `file(max_size = "5 MiB", types = ["image/png", "image/jpeg"])` on a field: the
//! member holds one uploaded file, at most `max_size` bytes, of one of the listed media types;
//! with `max_count = N`, a list of at most `N` such files.

use crudforge_core::files::{media_type, parse_box, parse_size, MEDIA_TYPES, THUMBNAIL_SOURCES};
use syn::meta::ParseNestedMeta;
use syn::{ExprArray, LitStr};

/// How `file(...)` is written, for the help of every error about one.
const FILE_HELP: &str =
    "help: write `file(max_size = \"5 MiB\", types = [\"image/png\", \"image/jpeg\"])`";

/// A field's `file(...)`: its largest size in bytes and its accepted media types.
pub(crate) struct FileAttr {
    pub(crate) max_size: u64,
    pub(crate) types: Vec<String>,
    /// `thumbs = ["WxH", ..]`: the thumbnails' boxes.
    pub(crate) thumbs: Vec<(u32, u32)>,
    /// `max_count = N`: the member is a list of at most `N` files.
    pub(crate) max_count: Option<(u32, proc_macro2::Span)>,
}

/// The largest `max_count` a list member may declare.
const MAX_COUNT: u32 = 100;

/// Reads `file(max_size = "...", types = [...])`; both keys are required.
pub(crate) fn file(meta: &ParseNestedMeta<'_>) -> syn::Result<FileAttr> {
    let mut max_size = None;
    let mut types = None;
    let mut thumbs: Option<(Vec<(u32, u32)>, proc_macro2::Span)> = None;
    let mut max_count = None;
    meta.parse_nested_meta(|inner| {
        if inner.path.is_ident("max_size") {
            let lit: LitStr = inner
                .value()?
                .parse()
                .map_err(|_| inner.error(format!("expected a size in quotes: `max_size = \"5 MiB\"`\n{FILE_HELP}")))?;
            let bytes = parse_size(&lit.value()).map_err(|why| {
                syn::Error::new(
                    lit.span(),
                    format!("`max_size`: {why}\nhelp: write a size such as \"800 KiB\" or \"5 MiB\""),
                )
            })?;
            max_size = Some(bytes);
        } else if inner.path.is_ident("types") {
            let list: ExprArray = inner.value()?.parse().map_err(|_| {
                inner.error(format!("expected a list of media types\n{FILE_HELP}"))
            })?;
            let mut names = Vec::new();
            for e in &list.elems {
                let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) = e else {
                    return Err(syn::Error::new_spanned(e, format!("expected a media type in quotes\n{FILE_HELP}")));
                };
                let Some(known) = media_type(&s.value()) else {
                    let known: Vec<&str> = MEDIA_TYPES.iter().map(|m| m.name).collect();
                    return Err(syn::Error::new(
                        s.span(),
                        format!(
                            "`{}` is not a media type the server can recognize from a file's content\nhelp: use one of {}",
                            s.value(),
                            known.join(", ")
                        ),
                    ));
                };
                names.push(known.name.to_owned());
            }
            if names.is_empty() {
                return Err(syn::Error::new_spanned(&list, format!("a file member accepts at least one media type\n{FILE_HELP}")));
            }
            types = Some(names);
        } else if inner.path.is_ident("thumbs") {
            let list: ExprArray = inner.value()?.parse().map_err(|_| {
                inner.error("expected a list of boxes: `thumbs = [\"128x128\", \"640x480\"]`")
            })?;
            let mut boxes = Vec::new();
            for e in &list.elems {
                let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) = e else {
                    return Err(syn::Error::new_spanned(e, "expected a box in quotes, such as \"128x128\""));
                };
                boxes.push(parse_box(&s.value()).map_err(|why| syn::Error::new(s.span(), format!("`thumbs`: {why}\nhelp: write boxes such as [\"128x128\", \"640x480\"]")))?);
            }
            thumbs = Some((boxes, syn::spanned::Spanned::span(&list)));
        } else if inner.path.is_ident("max_count") {
            let lit: syn::LitInt = inner.value()?.parse().map_err(|_| {
                inner.error("expected a number of files: `max_count = 5`")
            })?;
            let n: u32 = lit.base10_parse().ok().filter(|n| (1..=MAX_COUNT).contains(n)).ok_or_else(|| {
                syn::Error::new(lit.span(), format!("`max_count` is a number of files from 1 to {MAX_COUNT}\nhelp: write a bound such as `max_count = 5`"))
            })?;
            max_count = Some((n, lit.span()));
        } else {
            return Err(inner.error(format!("unknown key in `file(...)`: expected `max_size`, `types`, `thumbs` or `max_count`\n{FILE_HELP}")));
        }
        Ok(())
    })?;
    if let (Some((_, span)), Some(types)) = (&thumbs, &types) {
        if let Some(t) = types
            .iter()
            .find(|t| !THUMBNAIL_SOURCES.contains(&t.as_str()))
        {
            return Err(syn::Error::new(
                *span,
                format!(
                    "`thumbs` needs images a thumbnail can be made from, but `{t}` is accepted\nhelp: accept only {} with `thumbs`",
                    THUMBNAIL_SOURCES.join(", ")
                ),
            ));
        }
    }
    let thumbs = thumbs.map(|(t, _)| t).unwrap_or_default();
    match (max_size, types) {
        (Some(max_size), Some(types)) => Ok(FileAttr {
            max_size,
            types,
            thumbs,
            max_count,
        }),
        (None, _) => Err(meta.error(format!("`file(...)` needs `max_size`\n{FILE_HELP}"))),
        (_, None) => Err(meta.error(format!("`file(...)` needs `types`\n{FILE_HELP}"))),
    }
}

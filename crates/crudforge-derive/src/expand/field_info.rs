//! One entry of a resource's `FIELDS` metadata, which the `Resource` impl lists and a
//! model-first model's column descriptions carry.

use super::{is_filterable, is_writable, Gen};
use crate::ast::{Field, Kind};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// One entry of `FIELDS`: the field's name, kind and what clients may do with it.
pub(super) fn field_info(g: &Gen<'_>, f: &Field) -> TokenStream {
    let k = g.k;
    let fname = f.name();
    let kind = format_ident!("{}", f.kind.unwrap_or(Kind::Other).name());
    let mut e = quote!(#k::field::FieldInfo::new(#fname, #k::field::Kind::#kind));
    if f.nullable {
        e = quote!(#e.nullable());
    }
    if f.kind == Some(Kind::Integer) {
        let inner = &f.inner;
        let narrow = matches!(inner, syn::Type::Path(tp) if tp.path.segments.last().is_some_and(|s| s.ident == "i16" || s.ident == "i32"));
        if narrow {
            e = quote!(#e.int_range(<#inner>::MIN as i64, <#inner>::MAX as i64));
        }
    }
    let hidden = f.attrs.write_only.is_some() || f.attrs.password.is_some();
    if !is_filterable(f) && !hidden {
        e = quote!(#e.not_filterable());
    }
    if !is_writable(f) {
        e = quote!(#e.read_only());
    }
    if hidden {
        e = quote!(#e.write_only());
    }
    if f.attrs.set.is_some() {
        e = quote!(#e.server_set());
    }
    if f.attrs.create_only.is_some() {
        e = quote!(#e.create_only());
    }
    if let Some((file, _)) = &f.attrs.file {
        let max = file.max_size;
        let types = &file.types;
        let thumbs = file.thumbs.iter().map(|(w, h)| quote!((#w, #h)));
        let count = match file.max_count {
            Some((n, _)) => quote!(::core::option::Option::Some(#n)),
            None => quote!(::core::option::Option::None),
        };
        e = quote!(#e.file(#k::field::FileRule { max_size: #max, types: &[#(#types),*], thumbs: &[#(#thumbs),*], max_count: #count }));
    }
    if f.attrs.unique.is_some() || f.name() == g.id.name() {
        e = quote!(#e.unique());
    }
    e
}

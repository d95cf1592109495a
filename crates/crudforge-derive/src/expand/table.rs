//! A model-first resource's table (`#[resource(model_first)]`): the Diesel `table!` declared
//! beside the struct, and `Resource::MODEL`, the runtime's description of the table (column
//! types, constraints, foreign keys, indexes, composite unique constraints) from which
//! migrations are written.

use super::field_info::field_info;
use super::Gen;
use crate::ast::Field;
use crate::model_first::{column_sql, literal_default, reference};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// Emits `table!` for a model-first model, at the struct's level (nothing otherwise).
pub(super) fn table_macro(g: &Gen<'_>) -> Option<TokenStream> {
    g.m.attrs.model_first?;
    let p = &g.p;
    let k = g.k;
    let table = g.m.attrs.table.as_ref()?;
    let id = &g.id.ident;
    let columns = g.m.fields.iter().filter_map(|f| {
        let sql = column_sql(f)?;
        let name = format_ident!("{}", sql.diesel);
        let mut ty = if sql.portable {
            quote!(#k::sql_types::#name)
        } else {
            quote!(#p::diesel::sql_types::#name)
        };
        if f.nullable {
            ty = quote!(#p::diesel::sql_types::Nullable<#ty>);
        }
        let col = &f.ident;
        let doc = format!("The `{col}` column.");
        Some(quote!(#[doc = #doc] #col -> #ty,))
    });
    let doc = format!(
        "The `{}` table, declared by the model-first resource `{}`.",
        quote!(#table),
        g.m.ident
    );
    Some(quote! {
        #p::diesel::table! {
            #[doc = #doc]
            #table (#id) {
                #(#columns)*
            }
        }
    })
}

/// Emits `const MODEL` of the `Resource` impl for a model-first model.
pub(super) fn model_const(g: &Gen<'_>) -> Option<TokenStream> {
    g.m.attrs.model_first?;
    // The model's description is public API (`Resource::MODEL`), at `crudforge::migrations`.
    let k = g.k;
    let p = &quote!(#k::migrations);
    let table = g.m.attrs.table.as_ref()?.segments.last()?.ident.to_string();
    let columns = g.m.fields.iter().filter_map(|f| column(g, f));
    let indexes = g.m.attrs.indexes.iter().map(|i| {
        let cols = i.columns.iter().map(syn::LitStr::value);
        quote!(&[#(#cols),*])
    });
    let uniques = g.m.attrs.uniques.iter().map(|u| {
        let cols = u.columns.iter().map(syn::LitStr::value);
        quote!(&[#(#cols),*])
    });
    Some(quote! {
        const MODEL: ::core::option::Option<&'static #p::ModelTable> =
            ::core::option::Option::Some(&#p::ModelTable::new(
                #table,
                &[#(#columns),*],
                &[#(#indexes),*],
            ).uniques(&[#(#uniques),*]));
    })
}

/// One `ModelColumn`: the field's metadata, type and constraints.
fn column(g: &Gen<'_>, f: &Field) -> Option<TokenStream> {
    // The model's description is public API (`Resource::MODEL`), at `crudforge::migrations`.
    let k = g.k;
    let p = &quote!(#k::migrations);
    let sql = column_sql(f)?;
    let ty = format_ident!("{}", sql.column);
    let info = field_info(g, f);
    let mut e = quote!(#p::ModelColumn::new(#info, #p::ColumnType::#ty));
    if f.ident == g.id.ident {
        e = quote!(#e.primary_key());
    }
    let float = matches!(sql.column, "Real" | "Double");
    if let Some(default) = f.attrs.default.as_ref().and_then(literal_default) {
        let (kind, lit, negative) = default;
        let value = value(p, kind, &lit, negative, float);
        e = quote!(#e.default_value(#value));
    }
    let min_len = f.attrs.min_len.as_ref().map(|(n, _)| *n as u64);
    let max_len = f.attrs.max_len.as_ref().map(|(n, _)| *n as u64);
    if min_len.is_some() || max_len.is_some() {
        let (a, b) = (
            opt(min_len.map(|n| quote!(#n))),
            opt(max_len.map(|n| quote!(#n))),
        );
        e = quote!(#e.length(#a, #b));
    }
    let bound = |n: &crate::attr::Number| match (n.integer, float) {
        (Some(i), false) => quote!(#p::SqlValue::Int(#i)),
        _ => {
            let v = n.value;
            quote!(#p::SqlValue::Float(#v))
        }
    };
    let (min, max) = (
        f.attrs.min.as_ref().map(|(n, _)| bound(n)),
        f.attrs.max.as_ref().map(|(n, _)| bound(n)),
    );
    if min.is_some() || max.is_some() {
        let (a, b) = (opt(min), opt(max));
        e = quote!(#e.range(#a, #b));
    }
    if let Some((values, _)) = &f.attrs.one_of {
        let values = values.iter().filter_map(|lit| match lit {
            syn::Lit::Str(s) => Some(quote!(#p::SqlValue::Text(#s))),
            syn::Lit::Int(i) => {
                let n: i64 = i.base10_parse().ok()?;
                Some(quote!(#p::SqlValue::Int(#n)))
            }
            _ => None,
        });
        e = quote!(#e.one_of(&[#(#values),*]));
    }
    if let Some(r) = reference(f) {
        let (table, col) = (&r.table, &r.column);
        let on_delete = format_ident!("{}", r.on_delete);
        e = quote!(#e.references(#p::ForeignKey::new(#table, #col, #p::OnDelete::#on_delete)));
    }
    Some(e)
}

/// `Some(x)` / `None` as tokens.
fn opt(v: Option<TokenStream>) -> TokenStream {
    match v {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    }
}

/// A literal default as a `SqlValue`; an integer literal in a float column is a float.
fn value(p: &TokenStream, kind: &str, lit: &syn::Lit, negative: bool, float: bool) -> TokenStream {
    let sign = if negative { quote!(-) } else { quote!() };
    match (kind, lit) {
        ("Int", syn::Lit::Int(i)) if float => {
            let v: f64 = i.base10_parse().unwrap_or(0.0);
            quote!(#p::SqlValue::Float(#sign #v))
        }
        ("Int", syn::Lit::Int(i)) => {
            let digits = syn::LitInt::new(&format!("{}i64", i.base10_digits()), i.span());
            quote!(#p::SqlValue::Int(#sign #digits))
        }
        ("Float", syn::Lit::Float(x)) => {
            let digits = syn::LitFloat::new(&format!("{}f64", x.base10_digits()), x.span());
            quote!(#p::SqlValue::Float(#sign #digits))
        }
        ("Bool", syn::Lit::Bool(b)) => quote!(#p::SqlValue::Bool(#b)),
        (_, syn::Lit::Str(s)) => quote!(#p::SqlValue::Text(#s)),
        _ => quote!(#p::SqlValue::Text("")),
    }
}

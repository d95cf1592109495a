//! The `Validate` impls of the POST and PATCH bodies: the field checks (`max_len`, `min`,
//! `pattern`, `validate = ..`, …) and
//! the members the runtime rewrites (passwords to hash, e-mail addresses to normalize).

use super::Gen;
use crate::ast::{Field, Kind};
use crate::attr::Number;
use proc_macro2::{Ident, TokenStream};
use quote::{quote, ToTokens as _};

/// Emits `impl Validate for #body`, whose members are `fields`. `opt_depth` is how many
/// `Option`s the body wraps around each member: 0 for the POST body, 1 for the PATCH body.
pub(super) fn validate_impl(
    g: &Gen<'_>,
    body: &Ident,
    fields: &[&Field],
    opt_depth: usize,
) -> TokenStream {
    let k = g.k;
    let checks = checks(g, fields, opt_depth);
    let passwords = members_of(fields, opt_depth, |f| f.attrs.password.is_some());
    let emails = members_of(fields, opt_depth, |f| f.attrs.email.is_some());
    let password_names = fields
        .iter()
        .filter(|f| f.attrs.password.is_some())
        .map(|f| f.name());
    quote! {
        #[automatically_derived]
        impl #k::crud::Validate for #body {
            const PASSWORD_MEMBERS: &'static [&'static str] = &[#(#password_names),*];
            fn validate(&self) -> ::core::result::Result<(), #k::Error> {
                #[allow(unused_mut)]
                let mut __invalid = #k::__private::validators::Invalid::default();
                #(#checks)*
                __invalid.finish()
            }
            fn passwords_mut(&mut self) -> ::std::vec::Vec<(&'static str, &mut ::std::string::String)> {
                #[allow(unused_mut)]
                let mut __out = ::std::vec::Vec::new();
                #(#passwords)*
                __out
            }
            fn emails_mut(&mut self) -> ::std::vec::Vec<(&'static str, &mut ::std::string::String)> {
                #[allow(unused_mut)]
                let mut __out = ::std::vec::Vec::new();
                #(#emails)*
                __out
            }
        }
    }
}

/// The body of `validate`: for each writable field with checks, the checks on its value when
/// present, each adding what it finds to `__invalid`, so one answer names every member at fault.
fn checks(g: &Gen<'_>, fields: &[&Field], opt_depth: usize) -> Vec<TokenStream> {
    fields
        .iter()
        .filter_map(|f| {
            let fi = &f.ident;
            let body = field_checks(g, f);
            if body.is_empty() {
                return None;
            }
            let depth = opt_depth + usize::from(f.nullable);
            Some(match depth {
                0 => quote! { { let __v = &self.#fi; #(#body)* } },
                1 => quote! { if let ::core::option::Option::Some(__v) = &self.#fi { #(#body)* } },
                _ => quote! { if let ::core::option::Option::Some(::core::option::Option::Some(__v)) = &self.#fi { #(#body)* } },
            })
        })
        .collect()
}

/// The checks of one field's value `__v` (a reference to the field's type without `Option`).
fn field_checks(g: &Gen<'_>, f: &Field) -> Vec<TokenStream> {
    let k = g.k;
    let p = quote!(#k::__private::validators);
    let fname = f.name();
    let a = &f.attrs;
    let mut body = Vec::new();
    let mut add = |check: TokenStream| body.push(quote!(__invalid.check(#fname, #check);));
    if let Some((min, _)) = a.min_len {
        add(quote!(#p::min_len(__v, #min)));
    }
    if let Some((max, _)) = a.max_len {
        add(quote!(#p::max_len(__v, #max)));
    }
    if a.email.is_some() {
        add(quote!(#p::email(__v)));
    }
    if let Some((pattern, _)) = &a.pattern {
        // What the description's readers take the pattern to mean (checked by the derive, so
        // this falls back only on a pattern already reported).
        let ecma = crate::valid::ecma_pattern(&pattern.value()).unwrap_or_else(|_| pattern.value());
        add(quote!({
            static __PATTERN: #p::Pattern = #p::Pattern::new(#pattern, #ecma);
            __PATTERN.check(__v)
        }));
    }
    let float = f.kind == Some(Kind::Float);
    for (bound, check) in [(&a.min, quote!(at_least)), (&a.max, quote!(at_most))] {
        if let Some((n, _)) = bound {
            let lit = number_literal(n, float);
            if float {
                add(quote!(#p::#check(f64::from(*__v), #lit)));
            } else {
                add(quote!(#p::#check(i64::from(*__v), #lit)));
            }
        }
    }
    if let Some((values, _)) = &a.one_of {
        if f.kind == Some(Kind::Text) {
            add(quote!(#p::one_of(__v.as_str(), &[#(#values),*])));
        } else {
            add(quote!(#p::one_of(i64::from(*__v), &[#(#values),*])));
        }
    }
    if let Some((path, _)) = &a.validate {
        body.push(quote!(__invalid.custom(#fname, #path(__v));));
    }
    body
}

/// A bound as a literal of the type it is compared at: `-5` for an integer field (exact, as
/// written), `-5.0` for a float one.
pub(super) fn number_literal(n: &Number, float: bool) -> TokenStream {
    match n.integer {
        Some(i) if !float => proc_macro2::Literal::i64_unsuffixed(i).into_token_stream(),
        _ => proc_macro2::Literal::f64_unsuffixed(n.value).into_token_stream(),
    }
}

/// The members of one kind (passwords, e-mail addresses) present in a body, pushed as mutable
/// strings onto `__out`.
fn members_of(
    fields: &[&Field],
    opt_depth: usize,
    of_kind: fn(&Field) -> bool,
) -> Vec<TokenStream> {
    fields
        .iter()
        .filter(|f| of_kind(f))
        .map(|f| {
            let fi = &f.ident;
            let fname = f.name();
            match opt_depth + usize::from(f.nullable) {
                0 => quote! { __out.push((#fname, &mut self.#fi)); },
                1 => quote! { if let ::core::option::Option::Some(__v) = &mut self.#fi { __out.push((#fname, __v)); } },
                _ => quote! { if let ::core::option::Option::Some(::core::option::Option::Some(__v)) = &mut self.#fi { __out.push((#fname, __v)); } },
            }
        })
        .collect()
}

//! The `Validate` impls of the POST and PATCH bodies: the field checks (`max_len`, `email`) and
//! the members the runtime rewrites (passwords to hash, e-mail addresses to normalize).

use super::Gen;
use crate::ast::Field;
use proc_macro2::{Ident, TokenStream};
use quote::quote;

/// Emits `impl Validate for #body`. `opt_depth` is how many `Option`s the body wraps around
/// each member: 0 for the POST body, 1 for the PATCH body.
pub(super) fn validate_impl(g: &Gen<'_>, body: &Ident, opt_depth: usize) -> TokenStream {
    let k = g.k;
    let checks = checks(g, opt_depth);
    let passwords = members_of(g, opt_depth, |f| f.attrs.password.is_some());
    let emails = members_of(g, opt_depth, |f| f.attrs.email.is_some());
    quote! {
        #[automatically_derived]
        impl #k::crud::Validate for #body {
            fn validate(&self) -> ::core::result::Result<(), #k::Error> {
                #(#checks)*
                ::core::result::Result::Ok(())
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
/// present.
fn checks(g: &Gen<'_>, opt_depth: usize) -> Vec<TokenStream> {
    let k = g.k;
    g.writable
        .iter()
        .filter_map(|f| {
            let fi = &f.ident;
            let fname = f.name();
            let mut body = Vec::new();
            if let Some((max, _)) = f.attrs.max_len {
                body.push(quote!(#k::__private::check_max_len(#fname, __v, #max)?;));
            }
            if f.attrs.email.is_some() {
                body.push(quote!(#k::__private::check_email(#fname, __v)?;));
            }
            if body.is_empty() {
                return None;
            }
            let depth = opt_depth + usize::from(f.nullable);
            Some(match depth {
                0 => quote! { { let __v: &str = &self.#fi; #(#body)* } },
                1 => quote! { if let ::core::option::Option::Some(__v) = &self.#fi { let __v: &str = __v; #(#body)* } },
                _ => quote! { if let ::core::option::Option::Some(::core::option::Option::Some(__v)) = &self.#fi { let __v: &str = __v; #(#body)* } },
            })
        })
        .collect()
}

/// The members of one kind (passwords, e-mail addresses) present in a body, pushed as mutable
/// strings onto `__out`.
fn members_of(g: &Gen<'_>, opt_depth: usize, of_kind: fn(&Field) -> bool) -> Vec<TokenStream> {
    g.writable
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

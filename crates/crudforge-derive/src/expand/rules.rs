//! Emits the `Resource` constants of read rules and named filters: `READ_RULES` (each
//! rule-protected member with its `Readers`) and `SCOPES` (each named filter's expression).

use super::Gen;
use crate::attr::ReadAttr;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

/// `READ_RULES` and `SCOPES`, when the model declares any.
pub(super) fn consts(g: &Gen<'_>) -> TokenStream {
    let k = g.k;
    let rules: Vec<TokenStream> =
        g.m.fields
            .iter()
            .filter_map(|f| {
                let (read, _) = f.attrs.read.as_ref()?;
                let name = f.name();
                let readers = match read {
                    ReadAttr::Admins => quote!(#k::__private::Readers::Admins),
                    ReadAttr::Owner(owner) => {
                        let owner = owner.to_string();
                        quote!(#k::__private::Readers::Owner(#owner))
                    }
                    // A function of another signature fails here, on the path the user wrote.
                    ReadAttr::Rule(path) => quote_spanned! {path.span()=>
                        #k::__private::Readers::Rule(#path)
                    },
                };
                Some(quote!((#name, #readers)))
            })
            .collect();
    let scopes: Vec<TokenStream> =
        g.m.attrs
            .scopes
            .iter()
            .map(|s| {
                let (name, expr) = (s.name.to_string(), &s.expr);
                quote!((#name, #expr))
            })
            .collect();
    let mut out = TokenStream::new();
    if !rules.is_empty() {
        out.extend(quote! {
            const READ_RULES: &'static [(&'static str, #k::__private::Readers)] = &[#(#rules),*];
        });
    }
    if !scopes.is_empty() {
        out.extend(quote! {
            const SCOPES: &'static [(&'static str, &'static str)] = &[#(#scopes),*];
        });
    }
    out
}

//! The members the server fills on create (`set = me`, `set = now`, `set = path::to::function`):
//! `Generated::set_by_server`, which puts their values into a POST body before it is decoded.

use super::Gen;
use crate::attr::SetAttr;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

/// Emits `set_by_server` when some member has `set = ...`: each such member's value, as JSON,
/// put into the body under its name.
pub(super) fn server_set_fn(g: &Gen<'_>) -> Option<TokenStream> {
    let (k, p) = (g.k, &g.p);
    let fills: Vec<TokenStream> =
        g.m.fields
            .iter()
            .filter_map(|f| {
                let (set, _) = f.attrs.set.as_ref()?;
                let name = f.name();
                let value = match set {
                    SetAttr::Me => {
                        let nullable = f.nullable;
                        quote!(#p::set_me(ctx, #nullable)?)
                    }
                    SetAttr::Now => quote!(#p::set_now()),
                    SetAttr::Function(path) => {
                        let ty = &f.ty;
                        // Spanned at the path, so a function of the wrong shape is reported there.
                        let call = quote_spanned! {path.span()=>
                            let __f: fn(&#k::crud::HookCtx) -> _ = #path;
                            let __v: #ty = ::core::convert::Into::into(__f(ctx));
                        };
                        quote!({ #call #p::set_value(#name, &__v)? })
                    }
                };
                Some(quote! {
                    body.insert(::std::string::String::from(#name), #value);
                })
            })
            .collect();
    if fills.is_empty() {
        return None;
    }
    Some(quote! {
        fn set_by_server(
            ctx: &#k::crud::HookCtx,
            body: &mut #p::serde_json::Map<::std::string::String, #p::serde_json::Value>,
        ) -> ::core::result::Result<(), #k::Error> {
            #(#fills)*
            ::core::result::Result::Ok(())
        }
    })
}

//! Code generation: input and output schemas, validation, and the `Resource` impl with its
//! typed queries, instantiated once per backend.

use crate::ast::{Field, Kind, Model};
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

mod backend;
use backend::{backend, BackendKind};

/// Names of the generated types.
pub(crate) struct Names {
    pub(crate) filter: Ident,
    pub(crate) create: Ident,
    pub(crate) update: Ident,
    pub(crate) response: Ident,
}

pub(crate) fn names(ident: &Ident) -> Names {
    Names {
        filter: format_ident!("{}Filter", ident),
        create: format_ident!("{}Create", ident),
        update: format_ident!("{}Update", ident),
        response: format_ident!("{}Response", ident),
    }
}

/// Items emitted next to the errors when the input is invalid, so code naming them does not
/// fail a second time.
pub(crate) fn fallback(ident: &Ident, vis: &syn::Visibility) -> TokenStream {
    let n = names(ident);
    let (c, u, r, f) = (&n.create, &n.update, &n.response, &n.filter);
    quote! {
        #vis struct #f {}
        #vis struct #c {}
        #vis struct #u {}
        #vis struct #r {}
    }
}

/// Schema keywords for a writable field's checks (`maxLength`, `format: email`, `minLength`
/// of passwords), so the description says what the server enforces.
fn schema_rules(f: &Field) -> TokenStream {
    let mut rules = Vec::new();
    if let Some((max, _)) = f.attrs.max_len {
        rules.push(quote!(#[schemars(length(max = #max))]));
    }
    if f.attrs.email.is_some() {
        rules.push(quote!(#[schemars(email)]));
    }
    if f.attrs.password.is_some() {
        rules.push(quote!(#[schemars(length(min = 1))]));
    }
    quote!(#(#rules)*)
}

fn is_writable(f: &Field) -> bool {
    f.attrs.skip.is_none()
        && f.attrs.read_only.is_none()
        && f.ident != "id"
        && f.attrs.id.is_none()
        && !f.is_base()
}

fn is_returned(f: &Field) -> bool {
    f.attrs.skip.is_none() && f.attrs.write_only.is_none() && f.attrs.password.is_none()
}

fn is_filterable(f: &Field) -> bool {
    f.attrs.skip.is_none()
        && f.attrs.write_only.is_none()
        && f.attrs.password.is_none()
        && f.kind.is_some_and(|k| k != Kind::Json)
        && !matches!(f.attrs.filter, Some((false, _)))
}

pub(crate) fn expand(m: &Model) -> TokenStream {
    let k = &m.krate;
    let p = quote!(#k::__private);
    let ident = &m.ident;
    let vis = &m.vis;
    let n = names(ident);
    let (create, update, response) = (&n.create, &n.update, &n.response);
    let filter = &n.filter;
    let name = m.name();
    let id = m.id_field().expect("checked in valid");
    let id_name = id.name();
    let serde_crate = format!("{}::__private::serde", quote!(#k));
    let schemars_crate = format!("{}::__private::schemars", quote!(#k));

    let writable: Vec<&Field> = m.fields.iter().filter(|f| is_writable(f)).collect();
    let returned: Vec<&Field> = m.fields.iter().filter(|f| is_returned(f)).collect();
    let filterable: Vec<&Field> = m.fields.iter().filter(|f| is_filterable(f)).collect();

    // ---- create schema ----
    let create_fields = writable.iter().map(|f| {
        let fi = &f.ident;
        let ty = &f.ty;
        let docs = &f.docs;
        let default = match (&f.attrs.default, f.nullable) {
            (Some(_), _) => {
                let fname = format!("{create}::__crudforge_default_{fi}");
                quote!(#[serde(default = #fname)])
            }
            (None, true) => quote!(#[serde(default)]),
            (None, false) => quote!(),
        };
        let rules = schema_rules(f);
        quote! { #(#docs)* #default #rules pub #fi: #ty, }
    });
    let create_defaults = writable.iter().filter_map(|f| {
        let d = f.attrs.default.as_ref()?;
        let fi = format_ident!("__crudforge_default_{}", f.ident);
        let ty = &f.ty;
        Some(quote_spanned! {d.span()=>
            #[doc(hidden)]
            fn #fi() -> #ty { ::core::convert::Into::into(#d) }
        })
    });

    // ---- update schema ----
    let update_fields = writable.iter().map(|f| {
        let fi = &f.ident;
        let ty = &f.ty;
        let docs = &f.docs;
        let rules = schema_rules(f);
        if f.nullable {
            let with = quote!(#ty).to_string();
            let de = format!("{}::__private::double_option", quote!(#k));
            quote! {
                #(#docs)*
                #[serde(default, deserialize_with = #de)]
                #[schemars(with = #with)]
                #rules
                pub #fi: ::core::option::Option<#ty>,
            }
        } else {
            let with = quote!(#ty).to_string();
            let de = format!("{}::__private::present", quote!(#k));
            // No `default: null` in the schema: the member may be omitted, never null.
            quote! {
                #(#docs)*
                #[serde(default, deserialize_with = #de, skip_serializing_if = "Option::is_none")]
                #[schemars(with = #with)]
                #rules
                pub #fi: ::core::option::Option<#ty>,
            }
        }
    });

    // ---- validation ----
    let checks = |opt_depth: usize| {
        writable
            .iter()
            .filter_map(move |f| {
                let fi = &f.ident;
                let fname = f.name();
                let mut body = Vec::new();
                if let Some((max, _)) = f.attrs.max_len {
                    body.push(quote!(#k::crud::check_max_len(#fname, __v, #max)?;));
                }
                if f.attrs.email.is_some() {
                    body.push(quote!(#k::crud::check_email(#fname, __v)?;));
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
            .collect::<Vec<_>>()
    };
    let create_checks = checks(0);
    let update_checks = checks(1);
    // The members of one kind (passwords, e-mail addresses) present in a body, as mutable
    // strings.
    let members_of = |opt_depth: usize, of_kind: fn(&Field) -> bool| {
        writable
            .iter()
            .filter(move |f| of_kind(f))
            .map(move |f| {
                let fi = &f.ident;
                let fname = f.name();
                match opt_depth + usize::from(f.nullable) {
                    0 => quote! { __out.push((#fname, &mut self.#fi)); },
                    1 => quote! { if let ::core::option::Option::Some(__v) = &mut self.#fi { __out.push((#fname, __v)); } },
                    _ => quote! { if let ::core::option::Option::Some(::core::option::Option::Some(__v)) = &mut self.#fi { __out.push((#fname, __v)); } },
                }
            })
            .collect::<Vec<_>>()
    };
    let passwords = |opt_depth: usize| members_of(opt_depth, |f| f.attrs.password.is_some());
    let emails = |opt_depth: usize| members_of(opt_depth, |f| f.attrs.email.is_some());
    let create_emails = emails(0);
    let update_emails = emails(1);
    let create_passwords = passwords(0);
    let update_passwords = passwords(1);
    let rules_fn = m.attrs.rules.as_ref().map(|r| {
        quote! {
            fn default_rules() -> ::std::sync::Arc<dyn #k::perms::Rules<Self>> {
                ::std::sync::Arc::new(#r)
            }
        }
    });

    // ---- response schema ----
    let response_fields = returned.iter().map(|f| {
        let fi = &f.ident;
        let ty = &f.ty;
        let docs = &f.docs;
        // Timestamps are written without `fmt` (same text as chrono's).
        let with = (f.kind == Some(Kind::DateTime)).then(|| {
            let with = if f.nullable {
                "serialize_opt"
            } else {
                "serialize"
            };
            let with = format!("{}::timestamp::{with}", quote!(#k));
            quote!(#[serde(serialize_with = #with)])
        });
        quote! { #(#docs)* #with pub #fi: #ty, }
    });
    let response_from = returned.iter().map(|f| {
        let fi = &f.ident;
        quote!(#fi: m.#fi,)
    });

    // ---- field metadata ----
    let field_infos = m.fields.iter().filter(|f| f.attrs.skip.is_none()).map(|f| {
        let fname = f.name();
        let kind = format_ident!("{}", f.kind.unwrap_or(Kind::Other).name());
        let mut e = quote!(#k::crud::FieldInfo::new(#fname, #k::crud::Kind::#kind));
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
        if f.attrs.unique.is_some() || f.name() == id_name {
            e = quote!(#e.unique());
        }
        e
    });

    // ---- URL keys ----
    let key_arms = filterable.iter().filter_map(|f| {
        let kind = f.kind?;
        if !matches!(kind, Kind::Text | Kind::Integer | Kind::Uuid) {
            return None;
        }
        let fi = &f.ident;
        let fname = f.name();
        Some(if f.nullable {
            quote!(#fname => self.#fi.as_ref().map(::std::string::ToString::to_string),)
        } else {
            quote!(#fname => ::core::option::Option::Some(::std::string::ToString::to_string(&self.#fi)),)
        })
    });

    // ---- Sort values, for cursors ----
    let sort_value_arms = filterable.iter().filter_map(|f| {
        let kind = f.kind?;
        if matches!(kind, Kind::Json | Kind::Other) {
            return None;
        }
        let fi = &f.ident;
        let fname = f.name();
        Some(if f.nullable {
            quote!(#fname => ::core::option::Option::Some(self.#fi.as_ref().map(#p::to_arg)),)
        } else {
            quote!(#fname => ::core::option::Option::Some(::core::option::Option::Some(#p::to_arg(&self.#fi))),)
        })
    });

    // ---- table and declared indexes ----
    let table_name = m
        .attrs
        .table
        .as_ref()
        .and_then(|t| t.segments.last())
        .map(|s| s.ident.to_string())
        .unwrap_or_default();
    let indexes = m.attrs.indexes.iter().map(|i| {
        let cols = i.columns.iter().map(syn::LitStr::value);
        quote!(&[#(#cols),*])
    });

    let sqlite = backend(m, &filterable, &writable, BackendKind::Sqlite);
    let pg = backend(m, &filterable, &writable, BackendKind::Postgres);

    // Type checks at the user's field, with the runtime's explanations.
    let stored_checks = m.fields.iter().filter(|f| f.attrs.skip.is_none()).map(|f| {
        let ty = &f.ty;
        quote_spanned! {f.ty.span()=> __crudforge_assert_stored::<#ty>(); }
    });
    let filter_checks = filterable.iter().map(|f| {
        let ty = &f.inner;
        // The same path as in the backends' filters, so rustc reports one error, not two.
        quote_spanned! {f.inner.span()=> let _ = #p::arg::<#ty>; }
    });

    let select_arms = quote! {
        match conn {
            #k::db::Conn::Sqlite(__o) => { let c: &mut #k::db::SqliteConn = &mut **__o; sqlite::select(c, conds, sort, page).await }
            #k::db::Conn::Postgres(__o) => { let c: &mut #k::db::PgConn = &mut **__o; pg::select(c, conds, sort, page).await }
        }
    };
    let dispatch = |f: TokenStream, args: TokenStream| {
        quote! {
            match conn {
                #k::db::Conn::Sqlite(__o) => { let c: &mut #k::db::SqliteConn = &mut **__o; sqlite::#f(c, #args).await }
                #k::db::Conn::Postgres(__o) => { let c: &mut #k::db::PgConn = &mut **__o; pg::#f(c, #args).await }
            }
        }
    };
    let count_arms = dispatch(quote!(count), quote!(conds));
    let estimate_arms = dispatch(quote!(estimate_count), quote!(conds));
    let insert_arms = dispatch(quote!(insert), quote!(input));
    let update_arms = dispatch(quote!(update), quote!(conds, input));
    let delete_arms = dispatch(quote!(delete), quote!(conds));

    quote! {
        #[doc = concat!("POST body of [`", stringify!(#ident), "`] (generated by `#[derive(Resource)]`).")]
        #[derive(#p::serde::Deserialize, #p::schemars::JsonSchema)]
        #[serde(crate = #serde_crate, deny_unknown_fields)]
        #[schemars(crate = #schemars_crate)]
        #vis struct #create {
            #(#create_fields)*
        }

        #[doc = concat!("List parameters (filters, `sort`, `page`, `page_size`) of [`", stringify!(#ident), "`], as an extractor (generated by `#[derive(Resource)]`).")]
        #vis type #filter = #k::crud::Filter<#ident>;

        impl #create {
            #(#create_defaults)*
        }

        #[doc = concat!("PATCH body of [`", stringify!(#ident), "`]: absent members are left unchanged (generated by `#[derive(Resource)]`).")]
        #[derive(#p::serde::Deserialize, #p::schemars::JsonSchema)]
        #[serde(crate = #serde_crate, deny_unknown_fields)]
        #[schemars(crate = #schemars_crate)]
        #vis struct #update {
            #(#update_fields)*
        }

        #[doc = concat!("Response body of [`", stringify!(#ident), "`] (generated by `#[derive(Resource)]`).")]
        #[derive(#p::serde::Serialize, #p::schemars::JsonSchema)]
        #[serde(crate = #serde_crate, rename = #name)]
        #[schemars(crate = #schemars_crate)]
        #vis struct #response {
            #(#response_fields)*
        }

        #[automatically_derived]
        impl ::core::convert::From<#ident> for #response {
            fn from(m: #ident) -> Self {
                #response { #(#response_from)* }
            }
        }

        #[automatically_derived]
        impl #k::crud::Validate for #create {
            fn validate(&self) -> ::core::result::Result<(), #k::Error> {
                #(#create_checks)*
                ::core::result::Result::Ok(())
            }
            fn passwords_mut(&mut self) -> ::std::vec::Vec<(&'static str, &mut ::std::string::String)> {
                #[allow(unused_mut)]
                let mut __out = ::std::vec::Vec::new();
                #(#create_passwords)*
                __out
            }
            fn emails_mut(&mut self) -> ::std::vec::Vec<(&'static str, &mut ::std::string::String)> {
                #[allow(unused_mut)]
                let mut __out = ::std::vec::Vec::new();
                #(#create_emails)*
                __out
            }
        }

        #[automatically_derived]
        impl #k::crud::Validate for #update {
            fn validate(&self) -> ::core::result::Result<(), #k::Error> {
                #(#update_checks)*
                ::core::result::Result::Ok(())
            }
            fn passwords_mut(&mut self) -> ::std::vec::Vec<(&'static str, &mut ::std::string::String)> {
                #[allow(unused_mut)]
                let mut __out = ::std::vec::Vec::new();
                #(#update_passwords)*
                __out
            }
            fn emails_mut(&mut self) -> ::std::vec::Vec<(&'static str, &mut ::std::string::String)> {
                #[allow(unused_mut)]
                let mut __out = ::std::vec::Vec::new();
                #(#update_emails)*
                __out
            }
        }

        #[allow(non_snake_case, unused_imports, clippy::all)]
        const _: () = {
            fn __crudforge_assert_stored<T: #k::crud::IntoBind>() {}
            fn __crudforge_checks() {
                #(#stored_checks)*
                #(#filter_checks)*
            }

            #sqlite
            #pg

            #[automatically_derived]
            impl #k::crud::Resource for #ident {
                type Create = #create;
                type Update = #update;
                type Response = #response;

                const NAME: &'static str = #name;
                const FIELDS: &'static [#k::crud::FieldInfo] = &[#(#field_infos),*];
                const ID_FIELD: &'static str = #id_name;
                const TABLE: &'static str = #table_name;
                const INDEXES: &'static [&'static [&'static str]] = &[#(#indexes),*];

                #rules_fn

                fn key_of(&self, field: &str) -> ::core::option::Option<::std::string::String> {
                    match field {
                        #(#key_arms)*
                        _ => ::core::option::Option::None,
                    }
                }

                async fn select(
                    conn: &mut #k::db::Conn,
                    conds: &(impl #k::crud::Conditions + ?::core::marker::Sized),
                    sort: &[#k::crud::Sort],
                    page: ::core::option::Option<(i64, i64)>,
                ) -> ::core::result::Result<::std::vec::Vec<Self>, #k::Error> {
                    let conds = #k::crud::Conditions::node(conds);
                    #select_arms
                }

                async fn count(conn: &mut #k::db::Conn, conds: &(impl #k::crud::Conditions + ?::core::marker::Sized)) -> ::core::result::Result<i64, #k::Error> {
                    let conds = #k::crud::Conditions::node(conds);
                    #count_arms
                }

                async fn estimate_count(conn: &mut #k::db::Conn, conds: &(impl #k::crud::Conditions + ?::core::marker::Sized)) -> ::core::result::Result<i64, #k::Error> {
                    let conds = #k::crud::Conditions::node(conds);
                    #estimate_arms
                }

                fn sort_value(&self, field: &str) -> ::core::option::Option<::core::option::Option<#k::crud::Arg>> {
                    match field {
                        #(#sort_value_arms)*
                        _ => ::core::option::Option::None,
                    }
                }

                async fn insert(conn: &mut #k::db::Conn, input: #create) -> ::core::result::Result<Self, #k::Error> {
                    #insert_arms
                }

                async fn update(
                    conn: &mut #k::db::Conn,
                    conds: &(impl #k::crud::Conditions + ?::core::marker::Sized),
                    input: #update,
                ) -> ::core::result::Result<::core::option::Option<Self>, #k::Error> {
                    let conds = #k::crud::Conditions::node(conds);
                    #update_arms
                }

                async fn delete(conn: &mut #k::db::Conn, conds: &(impl #k::crud::Conditions + ?::core::marker::Sized)) -> ::core::result::Result<bool, #k::Error> {
                    let conds = #k::crud::Conditions::node(conds);
                    #delete_arms
                }
            }

            #p::inventory::submit! {
                #p::Registration {
                    name: #name,
                    make: #p::make::<#ident>,
                }
            }
        };
    }
}

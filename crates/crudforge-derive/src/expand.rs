//! Code generation: input and output schemas, validation, and the `Resource` impl with its
//! typed queries, instantiated once per backend.

use crate::ast::{Field, Kind, Model};
use crudforge_core::Op;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

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
    let passwords = |opt_depth: usize| {
        writable
            .iter()
            .filter(|f| f.attrs.password.is_some())
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
        quote! { #(#docs)* pub #fi: #ty, }
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

#[derive(Clone, Copy, PartialEq, Eq)]
enum BackendKind {
    Sqlite,
    Postgres,
}

fn backend(m: &Model, filterable: &[&Field], writable: &[&Field], b: BackendKind) -> TokenStream {
    let k = &m.krate;
    let p = quote!(#k::__private);
    let ident = &m.ident;
    let table = m.attrs.table.as_ref().expect("checked in valid");
    let create = names(ident).create;
    let update = names(ident).update;
    let (module, db, conn) = match b {
        BackendKind::Sqlite => (
            quote!(sqlite),
            quote!(#p::diesel::sqlite::Sqlite),
            quote!(#k::db::SqliteConn),
        ),
        BackendKind::Postgres => (
            quote!(pg),
            quote!(#p::diesel::pg::Pg),
            quote!(#k::db::PgConn),
        ),
    };
    // How a query runs: on SQLite through the connection's synchronous interface (rows decoded
    // straight from the statement), on PostgreSQL through diesel-async.
    let (run_load, run_first, run_one) = match b {
        BackendKind::Sqlite => (
            quote!(#k::db::sqlite_direct::load(c, q).await),
            quote!(#k::db::sqlite_direct::first(c, q).await),
            quote!(#k::db::sqlite_direct::one(c, q).await),
        ),
        BackendKind::Postgres => (
            quote!(#p::diesel_async::RunQueryDsl::load(q, c).await),
            quote!(#p::diesel::OptionalExtension::optional(#p::diesel_async::RunQueryDsl::get_result(q, c).await)),
            quote!(#p::diesel_async::RunQueryDsl::get_result(q, c).await),
        ),
    };
    let id_ident = &m.id_field().expect("checked").ident;
    let id_name = m.id_field().expect("checked").name();
    let boxed = quote! {
        ::std::boxed::Box<dyn #p::diesel::BoxableExpression<#table::table, #db, SqlType = #p::diesel::sql_types::Nullable<#p::diesel::sql_types::Bool>>>
    };

    // The operators of each field come from the runtime's table (`crudforge_core`); here
    // only the SQL of each comparison is written.
    let cond_arms = filterable.iter().map(|f| {
        let fi = &f.ident;
        let fname = f.name();
        let ty = &f.inner;
        let kind = f.kind.unwrap_or(Kind::Other);
        let col = quote!(#table::#fi);
        let value = quote!(#p::bind(#p::arg::<#ty>(c)?));
        let pattern = quote!(#p::arg::<::std::string::String>(c)?);
        let mut ops = crudforge_core::ops_for(kind, f.nullable);
        // Cursors compare sort keys with `>`, `<`, `>=`, `<=` (the keyset condition), also on kinds
        // whose filters do not offer them (text, booleans, UUIDs); the parsers never produce
        // these comparisons from client input where the operator table refuses them.
        if matches!(kind, Kind::Text | Kind::Bool | Kind::Uuid) {
            for op in [Op::Gt, Op::Lt, Op::Gte, Op::Lte] {
                if !ops.contains(&op) {
                    ops.push(op);
                }
            }
        }
        let arms = ops.into_iter().map(|op| {
            let sql = match op {
                Op::Eq => quote!(#col.eq(#value).nullable()),
                Op::Ne => quote!(#col.ne(#value).nullable()),
                Op::In => quote!(#col.eq_any(#p::args::<#ty>(c)?).nullable()),
                Op::Gt => quote!(#col.gt(#value).nullable()),
                Op::Lt => quote!(#col.lt(#value).nullable()),
                Op::Gte => quote!(#col.ge(#value).nullable()),
                Op::Lte => quote!(#col.le(#value).nullable()),
                Op::Like => quote!(#col.like(#pattern).escape('\\').nullable()),
                Op::ILike => match (b, f.nullable) {
                    (BackendKind::Postgres, _) => quote!(#p::diesel::PgTextExpressionMethods::ilike(#col, #pattern).escape('\\').nullable()),
                    (BackendKind::Sqlite, false) => quote!(#p::unicode_lower(#col).like(#p::unicode_lower(#pattern)).escape('\\').nullable()),
                    (BackendKind::Sqlite, true) => quote!(#p::unicode_lower_nullable(#col).like(#p::unicode_lower_nullable(#pattern)).escape('\\').nullable()),
                },
                Op::IsNull => quote! {
                    if #p::arg::<bool>(c)? {
                        return ::core::result::Result::Ok(::std::boxed::Box::new(#col.is_null().nullable()));
                    } else {
                        #col.is_not_null().nullable()
                    }
                },
            };
            let variant = format_ident!("{}", format!("{op:?}"));
            quote!(#k::crud::Op::#variant => ::std::boxed::Box::new(#sql),)
        });
        quote! {
            #fname => match c.op {
                #(#arms)*
                #[allow(unreachable_patterns)]
                _ => return ::core::result::Result::Err(#p::unsupported(c)),
            },
        }
    });

    let sort_arms = filterable.iter().map(|f| {
        let fi = &f.ident;
        let fname = f.name();
        if f.nullable && b == BackendKind::Sqlite {
            // SQLite puts NULL first in ascending order; PostgreSQL puts it last. Sorting on
            // `IS NULL` first gives SQLite PostgreSQL's order, so both backends agree.
            quote! {
                (#fname, false) => q.then_order_by(#table::#fi.is_null().asc()).then_order_by(#table::#fi.asc()),
                (#fname, true) => q.then_order_by(#table::#fi.is_null().desc()).then_order_by(#table::#fi.desc()),
            }
        } else {
            quote! {
                (#fname, false) => q.then_order_by(#table::#fi.asc()),
                (#fname, true) => q.then_order_by(#table::#fi.desc()),
            }
        }
    });

    let estimate = match b {
        BackendKind::Sqlite => quote! {
            pub(super) async fn estimate_count(c: &mut #conn, conds: #p::Node<'_>) -> ::core::result::Result<i64, #k::Error> {
                count(c, conds).await
            }
        },
        // The planner's row estimate of the filtered select, through `EXPLAIN` of the same
        // boxed query: values stay bound parameters.
        BackendKind::Postgres => quote! {
            pub(super) async fn estimate_count(c: &mut #conn, conds: #p::Node<'_>) -> ::core::result::Result<i64, #k::Error> {
                let mut q = #table::table.select(#table::#id_ident).into_boxed::<#db>();
                if let ::core::option::Option::Some(w) = condition(conds)? {
                    q = q.filter(w);
                }
                let plan: ::std::string::String = #p::diesel_async::RunQueryDsl::get_result(#p::Explain(q), c).await?;
                #p::plan_rows(&plan)
            }
        },
    };

    let insert_values = writable.iter().map(|f| {
        let fi = &f.ident;
        quote!(#table::#fi.eq(#p::bind(input.#fi)),)
    });
    let update_values = writable.iter().map(|f| {
        let fi = &f.ident;
        quote!(input.#fi.map(|__v| #table::#fi.eq(#p::bind(__v))),)
    });

    quote! {
        mod #module {
            use super::*;
            use #p::diesel::prelude::*;
            use #p::diesel::ExpressionMethods as _;

            type Boxed = #boxed;

            fn cond(c: &#k::crud::Cond) -> ::core::result::Result<Boxed, #k::Error> {
                ::core::result::Result::Ok(match c.field {
                    #(#cond_arms)*
                    _ => return ::core::result::Result::Err(#p::unsupported(c)),
                })
            }

            struct Sql;

            impl #p::Builder for Sql {
                type Expr = Boxed;
                fn leaf(&self, c: &#k::crud::Cond) -> ::core::result::Result<Boxed, #k::Error> {
                    cond(c)
                }
                fn and(&self, a: Boxed, b: Boxed) -> Boxed {
                    ::std::boxed::Box::new(a.and(b))
                }
                fn or(&self, a: Boxed, b: Boxed) -> Boxed {
                    ::std::boxed::Box::new(a.or(b))
                }
                fn not(&self, a: Boxed) -> Boxed {
                    ::std::boxed::Box::new(#p::diesel::dsl::not(a))
                }
                fn never(&self) -> Boxed {
                    ::std::boxed::Box::new(#p::diesel::dsl::sql::<#p::diesel::sql_types::Nullable<#p::diesel::sql_types::Bool>>("1 = 0"))
                }
            }

            fn condition(conds: #p::Node<'_>) -> ::core::result::Result<::core::option::Option<Boxed>, #k::Error> {
                #p::Builder::build(&Sql, conds)
            }

            fn everything() -> #k::Error {
                #k::Error::Internal("refusing to change rows without a condition".into())
            }

            pub(super) async fn select(
                c: &mut #conn,
                conds: #p::Node<'_>,
                sort: &[#k::crud::Sort],
                page: ::core::option::Option<(i64, i64)>,
            ) -> ::core::result::Result<::std::vec::Vec<#ident>, #k::Error> {
                // Lookup by primary key alone: a static query, so the connection's
                // prepared-statement cache serves it (boxed queries are prepared every time).
                if let #p::Node::All([only]) = conds {
                    if sort.is_empty()
                        && only.op == #k::crud::Op::Eq
                        && only.field == #id_name
                        && page.is_none_or(|(limit, offset)| limit >= 1 && offset == 0)
                    {
                        let key = #p::arg::<#p::uuid::Uuid>(only)?;
                        let q = #table::table
                            .filter(#table::#id_ident.eq(#p::bind(key)))
                            .select(<#ident as #p::diesel::SelectableHelper<#db>>::as_select());
                        let row: ::core::option::Option<#ident> = #run_first?;
                        return ::core::result::Result::Ok(row.into_iter().collect());
                    }
                }
                let mut q = #table::table
                    .select(<#ident as #p::diesel::SelectableHelper<#db>>::as_select())
                    .into_boxed::<#db>();
                if let ::core::option::Option::Some(w) = condition(conds)? {
                    q = q.filter(w);
                }
                for s in sort {
                    q = match (s.field, s.desc) {
                        #(#sort_arms)*
                        _ => return ::core::result::Result::Err(#k::Error::bad_param("sort", ::std::format!("cannot sort by `{}`", s.field))),
                    };
                }
                if sort.is_empty() {
                    q = q.then_order_by(#table::created_at.asc());
                }
                q = q.then_order_by(#table::#id_ident.asc());
                if let ::core::option::Option::Some((limit, offset)) = page {
                    q = q.limit(limit).offset(offset);
                }
                let rows: ::std::vec::Vec<#ident> = #run_load?;
                ::core::result::Result::Ok(rows)
            }

            pub(super) async fn count(c: &mut #conn, conds: #p::Node<'_>) -> ::core::result::Result<i64, #k::Error> {
                let mut q = #table::table.select(#p::diesel::dsl::count_star()).into_boxed::<#db>();
                if let ::core::option::Option::Some(w) = condition(conds)? {
                    q = q.filter(w);
                }
                let n: i64 = #run_one?;
                ::core::result::Result::Ok(n)
            }

            #estimate

            pub(super) async fn insert(c: &mut #conn, input: #create) -> ::core::result::Result<#ident, #k::Error> {
                let now = #k::crud::now();
                let q = #p::diesel::insert_into(#table::table)
                    .values((
                        #table::#id_ident.eq(#p::bind(#p::uuid::Uuid::new_v4())),
                        #table::created_at.eq(#p::bind(now)),
                        #table::updated_at.eq(#p::bind(now)),
                        #(#insert_values)*
                    ))
                    .returning(<#ident as #p::diesel::SelectableHelper<#db>>::as_returning());
                let row: #ident = #run_one?;
                ::core::result::Result::Ok(row)
            }

            pub(super) async fn update(
                c: &mut #conn,
                conds: #p::Node<'_>,
                input: #update,
            ) -> ::core::result::Result<::core::option::Option<#ident>, #k::Error> {
                let ::core::option::Option::Some(w) = condition(conds)? else {
                    return ::core::result::Result::Err(everything());
                };
                let now = #k::crud::now();
                let q = #p::diesel::update(#table::table.filter(w))
                    .set((
                        #(#update_values)*
                        #table::updated_at.eq(#p::bind(now)),
                    ))
                    .returning(<#ident as #p::diesel::SelectableHelper<#db>>::as_returning());
                let row: ::core::option::Option<#ident> = #run_first?;
                ::core::result::Result::Ok(row)
            }

            pub(super) async fn delete(c: &mut #conn, conds: #p::Node<'_>) -> ::core::result::Result<bool, #k::Error> {
                let ::core::option::Option::Some(w) = condition(conds)? else {
                    return ::core::result::Result::Err(everything());
                };
                let n = #p::diesel_async::RunQueryDsl::execute(#p::diesel::delete(#table::table.filter(w)), c).await?;
                ::core::result::Result::Ok(n > 0)
            }
        }
    }
}

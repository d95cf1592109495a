//! The `Resource` impl of a model (its names, `FIELDS` metadata, keys, sort values and the
//! query methods that hand each call to the connection's backend), the type checks placed at
//! the user's fields, and the model's entry in the registry of resources.

use super::backend::{dispatch, BackendKind};
use super::field_info::field_info;
use super::Gen;
use crate::ast::Kind;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

/// Emits the functions that check the field types at the user's fields, with the runtime's
/// explanations: each stored type is bindable, each filterable type an argument.
pub(super) fn type_checks(g: &Gen<'_>) -> TokenStream {
    let (k, p) = (g.k, &g.p);
    let stored_checks =
        g.m.fields
            .iter()
            .filter(|f| f.attrs.skip.is_none())
            .map(|f| {
                let ty = &f.ty;
                quote_spanned! {f.ty.span()=> __crudforge_assert_stored::<#ty>(); }
            });
    let filter_checks = g.filterable.iter().map(|f| {
        let ty = &f.inner;
        // The same path as in the backends' filters, so rustc reports one error, not two.
        quote_spanned! {f.inner.span()=> let _ = #p::arg::<#ty>; }
    });
    let relation_checks = crate::relations::type_checks(g.m, p);
    quote! {
        #relation_checks
        fn __crudforge_assert_stored<T: #k::crud::IntoBind>() {}
        fn __crudforge_checks() {
            #(#stored_checks)*
            #(#filter_checks)*
        }
    }
}

/// Emits `impl Resource for Model` and the hidden `impl Generated for Model` (what only the
/// runtime reads), one item per function below.
pub(super) fn resource_impl(g: &Gen<'_>) -> TokenStream {
    let (k, ident, p) = (g.k, &g.m.ident, &g.p);
    let associated = associated_items(g);
    let sql_table = sql_table(g);
    let rules_fn = rules_fn(g);
    let key_of = key_of(g);
    let read_rules = super::rules::consts(g);
    let select = select_method(g);
    let count = count_method(g);
    let estimate_count = estimate_count_method(g);
    let sort_value = sort_value(g);
    let insert = insert_method(g);
    let insert_many = insert_many_method(g);
    let copy_create = super::copyable(g).then(|| {
        let create = &g.n.create;
        quote! {
            fn __copy_create(input: &#create) -> ::core::option::Option<#create> {
                ::core::option::Option::Some(::core::clone::Clone::clone(input))
            }
        }
    });
    let update = update_method(g);
    let delete = delete_method(g);
    let soft_delete = soft_delete_methods(g);
    let model = super::table::model_const(g);
    let relations = crate::relations::relations_const(g.m, k);
    let aggregates = crate::aggregates::aggregates_const(g.m, k, p);
    let server_set = super::members::server_set_fn(g);
    let where_sqlite = super::backend::gated(
        g,
        BackendKind::Sqlite,
        quote! {
            fn where_sqlite(cond: &#k::condition::Condition) -> #p::WhereSql<#p::diesel::sqlite::Sqlite> {
                ::core::result::Result::Ok(sqlite::condition(#p::Node::Tree(cond))?.map(|e| {
                    ::std::boxed::Box::new(e) as ::std::boxed::Box<dyn #p::diesel::query_builder::QueryFragment<#p::diesel::sqlite::Sqlite> + ::core::marker::Send>
                }))
            }
        },
    );
    let where_pg = super::backend::gated(
        g,
        BackendKind::Postgres,
        quote! {
            fn where_pg(cond: &#k::condition::Condition) -> #p::WhereSql<#p::diesel::pg::Pg> {
                ::core::result::Result::Ok(pg::condition(#p::Node::Tree(cond))?.map(|e| {
                    ::std::boxed::Box::new(e) as ::std::boxed::Box<dyn #p::diesel::query_builder::QueryFragment<#p::diesel::pg::Pg> + ::core::marker::Send>
                }))
            }
        },
    );
    let wheres = quote! {
        #where_sqlite
        #where_pg
    };
    quote! {
        #[automatically_derived]
        impl #p::Generated for #ident {
            #read_rules
            #relations
            #aggregates
            #server_set
            #wheres
        }

        #[automatically_derived]
        impl #k::crud::Resource for #ident {
            #associated
            #sql_table
            #rules_fn
            #key_of
            #select
            #count
            #estimate_count
            #sort_value
            #insert
            #insert_many
            #copy_create
            #update
            #delete
            #soft_delete
            #model
        }
    }
}

/// Emits the associated types and constants: the body types, `NAME`, `FIELDS`, `ID_FIELD`,
/// `TABLE`, `INDEXES` and `UNIQUES`.
fn associated_items(g: &Gen<'_>) -> TokenStream {
    let k = g.k;
    let (create, update, response) = (&g.n.create, &g.n.update, &g.n.response);
    let (name, id_name) = (&g.name, g.id.name());
    let field_infos = g.m.fields.iter().filter(|f| f.attrs.skip.is_none());
    let field_infos = field_infos.map(|f| field_info(g, f));
    let table_name =
        g.m.attrs
            .table
            .as_ref()
            .and_then(|t| t.segments.last())
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
    let indexes = g.m.attrs.indexes.iter().map(|i| {
        let cols = i.columns.iter().map(syn::LitStr::value);
        quote!(&[#(#cols),*])
    });
    let uniques = g.m.attrs.uniques.iter().map(|u| {
        let cols = u.columns.iter().map(syn::LitStr::value);
        quote!(&[#(#cols),*])
    });
    let search = g.m.attrs.search.iter().map(syn::LitStr::value);
    quote! {
        const UNIQUES: &'static [&'static [&'static str]] = &[#(#uniques),*];
        const SEARCH: &'static [&'static str] = &[#(#search),*];
        type Create = #create;
        type Update = #update;
        type Response = #response;

        const NAME: &'static str = #name;
        const FIELDS: &'static [#k::field::FieldInfo] = &[#(#field_infos),*];
        const ID_FIELD: &'static str = #id_name;
        const TABLE: &'static str = #table_name;
        const INDEXES: &'static [&'static [&'static str]] = &[#(#indexes),*];
    }
}

/// Emits `sql_table`: the table's SQL name as Diesel's `table!` declares it (its
/// `#[sql_name]`, when the Rust name differs).
fn sql_table(g: &Gen<'_>) -> Option<TokenStream> {
    let (k, p) = (g.k, &g.p);
    let table = g.m.attrs.table.as_ref()?;
    Some(quote! {
        fn sql_table() -> &'static str {
            #p::sql_table_name(
                <#table::table as #p::diesel::internal::table_macro::StaticQueryFragment>::STATIC_COMPONENT,
                <Self as #k::crud::Resource>::TABLE,
            )
        }
    })
}

/// Emits `default_rules`, when the model names its permission rules (`rules = expr`).
fn rules_fn(g: &Gen<'_>) -> Option<TokenStream> {
    let k = g.k;
    let exprs = crate::rule_exprs::default_rules(g.m, k);
    g.m.attrs
        .rules
        .as_ref()
        .map(|r| quote!(#r))
        .or(exprs)
        .map(|r| {
            quote! {
                fn default_rules() -> ::std::sync::Arc<dyn #k::perms::Rules<Self>> {
                    ::std::sync::Arc::new(#r)
                }
            }
        })
}

/// Emits `key_of`: a row's value of a field that can key a URL (text, integer, UUID).
fn key_of(g: &Gen<'_>) -> TokenStream {
    let arms = g.filterable.iter().filter_map(|f| {
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
    quote! {
        fn key_of(&self, field: &str) -> ::core::option::Option<::std::string::String> {
            match field {
                #(#arms)*
                _ => ::core::option::Option::None,
            }
        }
    }
}

/// Emits `sort_value`: a row's value of a sort key, for cursors.
fn sort_value(g: &Gen<'_>) -> TokenStream {
    let (k, p) = (g.k, &g.p);
    let arms = g.filterable.iter().filter_map(|f| {
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
    quote! {
        fn sort_value(&self, field: &str) -> ::core::option::Option<::core::option::Option<#k::condition::Arg>> {
            match field {
                #(#arms)*
                _ => ::core::option::Option::None,
            }
        }
    }
}

/// Emits `select`, handed to the backend's `select`.
fn select_method(g: &Gen<'_>) -> TokenStream {
    let k = g.k;
    let arms = dispatch(g, quote!(select), quote!(conds, sort, page));
    quote! {
        async fn select(
            conn: &mut #k::db::Conn,
            conds: &(impl #k::condition::Conditions + ?::core::marker::Sized),
            sort: &[#k::condition::Sort],
            page: ::core::option::Option<#k::crud::Window>,
        ) -> ::core::result::Result<::std::vec::Vec<Self>, #k::Error> {
            let conds = #k::condition::Conditions::node(conds);
            #arms
        }
    }
}

/// Emits `count`, handed to the backend's `count`.
fn count_method(g: &Gen<'_>) -> TokenStream {
    let k = g.k;
    let arms = dispatch(g, quote!(count), quote!(conds));
    quote! {
        async fn count(conn: &mut #k::db::Conn, conds: &(impl #k::condition::Conditions + ?::core::marker::Sized)) -> ::core::result::Result<i64, #k::Error> {
            let conds = #k::condition::Conditions::node(conds);
            #arms
        }
    }
}

/// Emits `estimate_count`, handed to the backend's `estimate_count`.
fn estimate_count_method(g: &Gen<'_>) -> TokenStream {
    let k = g.k;
    let arms = dispatch(g, quote!(estimate_count), quote!(conds));
    quote! {
        async fn estimate_count(conn: &mut #k::db::Conn, conds: &(impl #k::condition::Conditions + ?::core::marker::Sized)) -> ::core::result::Result<i64, #k::Error> {
            let conds = #k::condition::Conditions::node(conds);
            #arms
        }
    }
}

/// Emits `insert`, handed to the backend's `insert`.
fn insert_method(g: &Gen<'_>) -> TokenStream {
    let (k, create) = (g.k, &g.n.create);
    let arms = dispatch(g, quote!(insert), quote!(input));
    quote! {
        async fn insert(conn: &mut #k::db::Conn, input: #create) -> ::core::result::Result<Self, #k::Error> {
            #arms
        }
    }
}

/// Emits `insert_many`, handed to the backend's `insert_many`.
fn insert_many_method(g: &Gen<'_>) -> TokenStream {
    let (k, create) = (g.k, &g.n.create);
    let arms = dispatch(g, quote!(insert_many), quote!(inputs));
    quote! {
        async fn insert_many(
            conn: &mut #k::db::Conn,
            inputs: ::std::vec::Vec<#create>,
        ) -> ::core::result::Result<::std::vec::Vec<Self>, #k::Error> {
            #arms
        }
    }
}

/// Emits `update`, handed to the backend's `update`.
fn update_method(g: &Gen<'_>) -> TokenStream {
    let (k, update) = (g.k, &g.n.update);
    let arms = dispatch(g, quote!(update), quote!(conds, input));
    quote! {
        async fn update(
            conn: &mut #k::db::Conn,
            conds: &(impl #k::condition::Conditions + ?::core::marker::Sized),
            input: #update,
        ) -> ::core::result::Result<::core::option::Option<Self>, #k::Error> {
            let conds = #k::condition::Conditions::node(conds);
            #arms
        }
    }
}

/// Emits `delete`, handed to the backend's `delete`.
fn delete_method(g: &Gen<'_>) -> TokenStream {
    let k = g.k;
    let arms = dispatch(g, quote!(delete), quote!(conds));
    quote! {
        async fn delete(conn: &mut #k::db::Conn, conds: &(impl #k::condition::Conditions + ?::core::marker::Sized)) -> ::core::result::Result<bool, #k::Error> {
            let conds = #k::condition::Conditions::node(conds);
            #arms
        }
    }
}

/// Emits, for a `soft_delete` model, `SOFT_DELETE`, `restore` and `purge`, each handed to the
/// backend's function.
fn soft_delete_methods(g: &Gen<'_>) -> TokenStream {
    if g.m.attrs.soft_delete.is_none() {
        return TokenStream::new();
    }
    let (k, p) = (g.k, &g.p);
    let restore = dispatch(g, quote!(restore), quote!(conds));
    let purge = dispatch(g, quote!(purge), quote!(before));
    quote! {
        const SOFT_DELETE: bool = true;

        async fn restore(
            conn: &mut #k::db::Conn,
            conds: &(impl #k::condition::Conditions + ?::core::marker::Sized),
        ) -> ::core::result::Result<::core::option::Option<Self>, #k::Error> {
            let conds = #k::condition::Conditions::node(conds);
            #restore
        }

        async fn purge(
            conn: &mut #k::db::Conn,
            before: #p::chrono::DateTime<#p::chrono::Utc>,
        ) -> ::core::result::Result<u64, #k::Error> {
            #purge
        }
    }
}

/// Emits the model's entry in the registry of resources by name.
pub(super) fn registration(g: &Gen<'_>) -> TokenStream {
    let (p, ident, name) = (&g.p, &g.m.ident, &g.name);
    quote! {
        #p::inventory::submit! {
            #p::Registration {
                name: #name,
                make: #p::make::<#ident>,
            }
        }
    }
}

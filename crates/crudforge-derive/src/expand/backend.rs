//! The per-backend module of a resource's SQL, generated once for SQLite and once for
//! PostgreSQL: conditions, sorts, select, count, the row estimate, insert, update and delete.

use super::names;
use crate::ast::{Field, Kind, Model};
use crudforge_core::Op;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The backend a module is generated for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum BackendKind {
    Sqlite,
    Postgres,
}

/// The module `sqlite` or `pg` of a resource: its SQL for backend `b`.
pub(super) fn backend(
    m: &Model,
    filterable: &[&Field],
    writable: &[&Field],
    b: BackendKind,
) -> TokenStream {
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
    let writable_idents: Vec<_> = writable.iter().map(|f| &f.ident).collect();
    let table_name = quote!(::core::stringify!(#table));
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
                // Written per request: cached only if its shape is admitted (see
                // `crudforge::db::statement_cache`).
                let keep = #p::Shape::new(#table_name, "select")
                    .conditions(conds)
                    .sort(sort)
                    .part(page.is_some())
                    .admit();
                let q = #p::Cached::new(q, keep);
                let rows: ::std::vec::Vec<#ident> = #run_load?;
                ::core::result::Result::Ok(rows)
            }

            pub(super) async fn count(c: &mut #conn, conds: #p::Node<'_>) -> ::core::result::Result<i64, #k::Error> {
                let mut q = #table::table.select(#p::diesel::dsl::count_star()).into_boxed::<#db>();
                if let ::core::option::Option::Some(w) = condition(conds)? {
                    q = q.filter(w);
                }
                let keep = #p::Shape::new(#table_name, "count").conditions(conds).admit();
                let q = #p::Cached::new(q, keep);
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
                // Written by `db::update` so the statement cache can keep it: one statement per
                // set of members present, cached if that shape is admitted.
                let keep = #p::Shape::new(#table_name, "update")
                    .conditions(conds)
                    #(.part(input.#writable_idents.is_some()))*
                    .admit();
                let q = #p::Update::new(
                    #table::table,
                    #p::diesel::AsChangeset::as_changeset((
                        #(#update_values)*
                        #table::updated_at.eq(#p::bind(now)),
                    )),
                    w,
                    <#ident as #p::diesel::SelectableHelper<#db>>::as_returning(),
                );
                let q = #p::Cached::new(q, keep);
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

//! The per-backend module of a resource's SQL, generated once for SQLite and once for
//! PostgreSQL: conditions, sorts, select, count, the row estimate, insert, update and delete.
//!
//! Every difference between SQLite and PostgreSQL in the generated code is written in this
//! module, and nowhere else in the derive: the connection and Diesel backend types and how a
//! query runs ([`dialect`]), case-insensitive matching ([`op_sql`]), where NULL sorts
//! ([`sort_arm`]), the row estimate ([`estimate_count_fn`]), and the `match` that hands a
//! `Resource` method to the module of the connection's backend ([`dispatch`]).

use super::Gen;
use crate::ast::{Field, Kind};
use crudforge_core::Op;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The backend a module is generated for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum BackendKind {
    Sqlite,
    Postgres,
}

/// What differs between the backends' modules: names and types, and how a query runs.
struct Dialect {
    b: BackendKind,
    /// The module's name, `sqlite` or `pg`.
    module: TokenStream,
    /// Diesel's backend type.
    db: TokenStream,
    /// The runtime's connection type.
    conn: TokenStream,
    /// Runs `q` on `c` for every row.
    run_load: TokenStream,
    /// Runs `q` on `c` for at most one row.
    run_first: TokenStream,
    /// Runs `q` on `c` for exactly one row.
    run_one: TokenStream,
}

/// The dialect of backend `b`. How a query runs: on SQLite through the connection's
/// synchronous interface (rows decoded straight from the statement), on PostgreSQL through
/// diesel-async.
fn dialect(g: &Gen<'_>, b: BackendKind) -> Dialect {
    let (k, p) = (g.k, &g.p);
    match b {
        BackendKind::Sqlite => Dialect {
            b,
            module: quote!(sqlite),
            db: quote!(#p::diesel::sqlite::Sqlite),
            conn: quote!(#k::db::SqliteConn),
            run_load: quote!(#k::__private::sqlite_load(c, q).await),
            run_first: quote!(#k::__private::sqlite_first(c, q).await),
            run_one: quote!(#k::__private::sqlite_one(c, q).await),
        },
        BackendKind::Postgres => Dialect {
            b,
            module: quote!(pg),
            db: quote!(#p::diesel::pg::Pg),
            conn: quote!(#k::db::PgConn),
            run_load: quote!(#p::diesel_async::RunQueryDsl::load(q, c).await),
            run_first: quote!(#p::diesel::OptionalExtension::optional(#p::diesel_async::RunQueryDsl::get_result(q, c).await)),
            run_one: quote!(#p::diesel_async::RunQueryDsl::get_result(q, c).await),
        },
    }
}

/// The body of a `Resource` query method: hands `f(c, args)` to the module of the
/// connection's backend. The runtime's `by_backend!` keeps the arms of the backends its
/// features compile in (a `#[cfg]` here would test the features of the model's crate).
pub(super) fn dispatch(g: &Gen<'_>, f: TokenStream, args: TokenStream) -> TokenStream {
    let p = &g.p;
    quote! {
        #p::by_backend!(*conn, |c| sqlite => sqlite::#f(c, #args).await, postgres => pg::#f(c, #args).await)
    }
}

/// `items`, kept by the runtime only when backend `b`'s feature is on (`if_sqlite!`,
/// `if_postgres!`).
pub(super) fn gated(g: &Gen<'_>, b: BackendKind, items: TokenStream) -> TokenStream {
    let p = &g.p;
    match b {
        BackendKind::Sqlite => quote!(#p::if_sqlite! { #items }),
        BackendKind::Postgres => quote!(#p::if_postgres! { #items }),
    }
}

/// The model's Diesel table (`critters`).
fn table<'a>(g: &Gen<'a>) -> &'a syn::Path {
    g.m.attrs.table.as_ref().expect("checked in valid")
}

/// Emits the module `sqlite` or `pg` of a resource: its SQL for backend `b`.
pub(super) fn backend(g: &Gen<'_>, b: BackendKind) -> TokenStream {
    let p = &g.p;
    let d = dialect(g, b);
    let (module, db, table) = (&d.module, &d.db, table(g));
    let items = [
        cond_fn(g, &d),
        condition_builder(g, &d),
        everything_fn(g),
        select_fn(g, &d),
        count_fn(g, &d),
        estimate_count_fn(g, &d),
        insert_fn(g, &d),
        insert_many_fn(g, &d),
        update_fn(g, &d),
        delete_fn(g, &d),
        restore_fn(g, &d),
        purge_fn(g, &d),
    ];
    gated(
        g,
        b,
        quote! {
            mod #module {
                use super::*;
                use #p::diesel::prelude::*;
                use #p::diesel::ExpressionMethods as _;

                type Boxed = ::std::boxed::Box<dyn #p::diesel::BoxableExpression<#table::table, #db, SqlType = #p::diesel::sql_types::Nullable<#p::diesel::sql_types::Bool>>>;

                #(#items)*
            }
        },
    )
}

/// Emits `cond`: one condition of a filter as a boxed SQL expression.
fn cond_fn(g: &Gen<'_>, d: &Dialect) -> TokenStream {
    let (k, p) = (g.k, &g.p);
    let arms = g.filterable.iter().map(|f| cond_arm(g, d, f));
    quote! {
        fn cond(c: &#k::condition::Cond) -> ::core::result::Result<Boxed, #k::Error> {
            ::core::result::Result::Ok(match c.field {
                #(#arms)*
                _ => return ::core::result::Result::Err(#p::unsupported(c)),
            })
        }
    }
}

/// The operators field `f` is compared with. They come from the runtime's table
/// (`crudforge_core`); cursors compare sort keys with `>`, `<`, `>=`, `<=` (the keyset
/// condition), also on kinds whose filters do not offer them (text, booleans, UUIDs); the
/// parsers never produce these comparisons from client input where the operator table refuses
/// them.
fn field_ops(f: &Field) -> Vec<Op> {
    let kind = f.kind.unwrap_or(Kind::Other);
    let mut ops = crudforge_core::ops_for(kind, f.nullable);
    if matches!(kind, Kind::Text | Kind::Bool | Kind::Uuid) {
        for op in [Op::Gt, Op::Lt, Op::Gte, Op::Lte] {
            if !ops.contains(&op) {
                ops.push(op);
            }
        }
    }
    ops
}

/// The arm of `cond` for field `f`: one arm per operator.
fn cond_arm(g: &Gen<'_>, d: &Dialect, f: &Field) -> TokenStream {
    let (k, p) = (g.k, &g.p);
    let fname = f.name();
    let arms = field_ops(f).into_iter().map(|op| {
        let sql = op_sql(g, d, f, op);
        let variant = format_ident!("{}", format!("{op:?}"));
        quote!(#k::condition::Op::#variant => ::std::boxed::Box::new(#sql),)
    });
    quote! {
        #fname => match c.op {
            #(#arms)*
            #[allow(unreachable_patterns)]
            _ => return ::core::result::Result::Err(#p::unsupported(c)),
        },
    }
}

/// The SQL of one comparison of field `f` with the condition's value.
fn op_sql(g: &Gen<'_>, d: &Dialect, f: &Field, op: Op) -> TokenStream {
    let p = &g.p;
    let (fi, ty, table) = (&f.ident, &f.inner, table(g));
    let col = quote!(#table::#fi);
    let value = quote!(#p::bind(#p::arg::<#ty>(c)?));
    let pattern = quote!(#p::arg::<::std::string::String>(c)?);
    match op {
        Op::Eq => quote!(#col.eq(#value).nullable()),
        Op::Ne => quote!(#col.ne(#value).nullable()),
        Op::In => quote!(#col.eq_any(#p::args::<#ty>(c)?).nullable()),
        Op::Gt => quote!(#col.gt(#value).nullable()),
        Op::Lt => quote!(#col.lt(#value).nullable()),
        Op::Gte => quote!(#col.ge(#value).nullable()),
        Op::Lte => quote!(#col.le(#value).nullable()),
        Op::Like => quote!(#col.like(#pattern).escape('\\').nullable()),
        Op::ILike => match (d.b, f.nullable) {
            (BackendKind::Postgres, _) => {
                quote!(#p::diesel::PgTextExpressionMethods::ilike(#col, #pattern).escape('\\').nullable())
            }
            (BackendKind::Sqlite, false) => {
                quote!(#p::unicode_lower(#col).like(#p::unicode_lower(#pattern)).escape('\\').nullable())
            }
            (BackendKind::Sqlite, true) => {
                quote!(#p::unicode_lower_nullable(#col).like(#p::unicode_lower_nullable(#pattern)).escape('\\').nullable())
            }
        },
        Op::IsNull => quote! {
            if #p::arg::<bool>(c)? {
                return ::core::result::Result::Ok(::std::boxed::Box::new(#col.is_null().nullable()));
            } else {
                #col.is_not_null().nullable()
            }
        },
    }
}

/// Emits the builder that combines `cond`'s expressions into a filter's (`Sql`), and
/// `condition`, which builds a filter's whole expression.
fn condition_builder(g: &Gen<'_>, d: &Dialect) -> TokenStream {
    let (k, p, ident, db) = (g.k, &g.p, &g.m.ident, &d.db);
    quote! {
        struct Sql;

        impl #p::Builder for Sql {
            type Expr = Boxed;
            fn leaf(&self, c: &#k::condition::Cond) -> ::core::result::Result<Boxed, #k::Error> {
                if c.field == #p::SEARCH_FIELD {
                    return ::core::result::Result::Ok(::std::boxed::Box::new(
                        #p::search_filter::<#db>(c, <#ident as #k::crud::Resource>::sql_table())?,
                    ));
                }
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
            fn related(&self, r: &#p::Related) -> ::core::result::Result<::core::option::Option<Boxed>, #k::Error> {
                ::core::result::Result::Ok(
                    #p::related_sql(r, <#ident as #k::crud::Resource>::sql_table())?
                        .map(|e| ::std::boxed::Box::new(e) as Boxed),
                )
            }
        }

        pub(super) fn condition(conds: #p::Node<'_>) -> ::core::result::Result<::core::option::Option<Boxed>, #k::Error> {
            #p::Builder::build(&Sql, conds)
        }
    }
}

/// Emits `everything`: the error of an update or delete without a condition.
fn everything_fn(g: &Gen<'_>) -> TokenStream {
    let k = g.k;
    quote! {
        fn everything() -> #k::Error {
            #k::Error::Internal("refusing to change rows without a condition".into())
        }
    }
}

/// Emits `select`: the rows matching a filter, sorted and paged.
fn select_fn(g: &Gen<'_>, d: &Dialect) -> TokenStream {
    let (k, p, ident, table) = (g.k, &g.p, &g.m.ident, table(g));
    let (conn, db, run_load) = (&d.conn, &d.db, &d.run_load);
    let id_ident = &g.id.ident;
    let by_key = select_by_key(g, d);
    let sort_arms = g.filterable.iter().map(|f| sort_arm(g, d, f));
    // PostgreSQL matches an index's order to the `ORDER BY` only past equalities, and
    // `deleted_at IS NULL` is not one: without `deleted_at` first in the order, an index on
    // `(deleted_at, created_at, id)` cannot give live rows in order and every page sorts
    // them all. The column is NULL in every such row, so the order is the same.
    let live_order = (d.b == BackendKind::Postgres && soft(g)).then(|| {
        quote! {
            if conds.pins_null("deleted_at") {
                q = q.then_order_by(#table::deleted_at.asc());
            }
        }
    });
    quote! {
        pub(super) async fn select(
            c: &mut #conn,
            conds: #p::Node<'_>,
            sort: &[#k::condition::Sort],
            page: ::core::option::Option<#k::crud::Window>,
        ) -> ::core::result::Result<::std::vec::Vec<#ident>, #k::Error> {
            #by_key
            let mut q = #table::table
                .select(<#ident as #p::diesel::SelectableHelper<#db>>::as_select())
                .into_boxed::<#db>();
            if let ::core::option::Option::Some(w) = condition(conds)? {
                q = q.filter(w);
            }
            #live_order
            for s in sort {
                q = match (s.field, s.desc) {
                    #(#sort_arms)*
                    (#p::SEARCH_RANK, _) => q.then_order_by(
                        #p::search_rank::<#db>(conds, <#ident as #k::crud::Resource>::sql_table())?.asc(),
                    ),
                    _ => {
                        // A related field (`habitat.name`), through the relation's scope.
                        let (null, value) = #p::related_order::<#db>(conds, s, <#ident as #k::crud::Resource>::sql_table())?;
                        if s.desc {
                            q.then_order_by(null.desc()).then_order_by(value.desc())
                        } else {
                            q.then_order_by(null.asc()).then_order_by(value.asc())
                        }
                    }
                };
            }
            if sort.is_empty() {
                q = q.then_order_by(#table::created_at.asc());
            }
            q = q.then_order_by(#table::#id_ident.asc());
            if let ::core::option::Option::Some(window) = page {
                q = q.limit(window.limit).offset(window.offset);
            }
            // Written per request: cached only if its shape is admitted (see
            // `crudforge::db::statement_cache`).
            let keep = #p::Shape::new(::core::stringify!(#table), "select")
                .conditions(conds)
                .sort(sort)
                .part(page.is_some())
                .admit();
            let q = #p::Cached::new(q, keep);
            let rows: ::std::vec::Vec<#ident> = #run_load?;
            ::core::result::Result::Ok(rows)
        }
    }
}

/// The start of `select`: a lookup by primary key alone returns through a static query, so
/// the connection's prepared-statement cache serves it (boxed queries are prepared every time).
fn select_by_key(g: &Gen<'_>, d: &Dialect) -> TokenStream {
    let (k, p, ident, table) = (g.k, &g.p, &g.m.ident, table(g));
    let (db, run_first) = (&d.db, &d.run_first);
    let (id_ident, id_name) = (&g.id.ident, g.id.name());
    // A soft-delete model's reads add `deleted_at IS NULL`: the key and that alone are static
    // too.
    let live = if soft(g) {
        quote! {
            if let #p::Node::All([only, live]) = conds {
                if sort.is_empty()
                    && only.op == #k::condition::Op::Eq
                    && only.field == #id_name
                    && live.field == "deleted_at"
                    && live.op == #k::condition::Op::IsNull
                    && live.arg == #k::condition::Arg::Bool(true)
                    && page.is_none_or(|w| w.limit >= 1 && w.offset == 0)
                {
                    let key = #p::arg::<#p::uuid::Uuid>(only)?;
                    let q = #table::table
                        .filter(#table::#id_ident.eq(#p::bind(key)))
                        .filter(#table::deleted_at.is_null())
                        .select(<#ident as #p::diesel::SelectableHelper<#db>>::as_select());
                    let row: ::core::option::Option<#ident> = #run_first?;
                    return ::core::result::Result::Ok(row.into_iter().collect());
                }
            }
        }
    } else {
        quote! {}
    };
    quote! {
        if let #p::Node::All([only]) = conds {
            if sort.is_empty()
                && only.op == #k::condition::Op::Eq
                && only.field == #id_name
                && page.is_none_or(|w| w.limit >= 1 && w.offset == 0)
            {
                let key = #p::arg::<#p::uuid::Uuid>(only)?;
                let q = #table::table
                    .filter(#table::#id_ident.eq(#p::bind(key)))
                    .select(<#ident as #p::diesel::SelectableHelper<#db>>::as_select());
                let row: ::core::option::Option<#ident> = #run_first?;
                return ::core::result::Result::Ok(row.into_iter().collect());
            }
        }
        #live
    }
}

/// The arms of `select`'s sort for field `f`, ascending and descending.
fn sort_arm(g: &Gen<'_>, d: &Dialect, f: &Field) -> TokenStream {
    let (fi, fname, table) = (&f.ident, f.name(), table(g));
    if f.nullable && d.b == BackendKind::Sqlite {
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
}

/// Emits `count`: the number of rows matching a filter.
fn count_fn(g: &Gen<'_>, d: &Dialect) -> TokenStream {
    let (k, p, table) = (g.k, &g.p, table(g));
    let (conn, db, run_one) = (&d.conn, &d.db, &d.run_one);
    quote! {
        pub(super) async fn count(c: &mut #conn, conds: #p::Node<'_>) -> ::core::result::Result<i64, #k::Error> {
            let mut q = #table::table.select(#p::diesel::dsl::count_star()).into_boxed::<#db>();
            if let ::core::option::Option::Some(w) = condition(conds)? {
                q = q.filter(w);
            }
            let keep = #p::Shape::new(::core::stringify!(#table), "count").conditions(conds).admit();
            let q = #p::Cached::new(q, keep);
            let n: i64 = #run_one?;
            ::core::result::Result::Ok(n)
        }
    }
}

/// Emits `estimate_count`: on SQLite the exact count; on PostgreSQL the planner's row
/// estimate of the filtered select, through `EXPLAIN` of the same boxed query (values stay
/// bound parameters).
fn estimate_count_fn(g: &Gen<'_>, d: &Dialect) -> TokenStream {
    let (k, p, table) = (g.k, &g.p, table(g));
    let (conn, db) = (&d.conn, &d.db);
    let id_ident = &g.id.ident;
    match d.b {
        BackendKind::Sqlite => quote! {
            pub(super) async fn estimate_count(c: &mut #conn, conds: #p::Node<'_>) -> ::core::result::Result<i64, #k::Error> {
                count(c, conds).await
            }
        },
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
    }
}

/// The writable members of `input` as an insert's `column.eq(value)` pairs.
fn input_values(g: &Gen<'_>) -> Vec<TokenStream> {
    let (p, table) = (&g.p, table(g));
    g.writable
        .iter()
        .map(|f| {
            let fi = &f.ident;
            quote!(#table::#fi.eq(#p::bind(input.#fi)),)
        })
        .collect()
}

/// Emits `insert`: a new row with a fresh id and timestamps, returned.
fn insert_fn(g: &Gen<'_>, d: &Dialect) -> TokenStream {
    let (k, p, ident, table) = (g.k, &g.p, &g.m.ident, table(g));
    let (conn, db, run_one) = (&d.conn, &d.db, &d.run_one);
    let (create, id_ident) = (&g.n.create, &g.id.ident);
    let values = input_values(g);
    quote! {
        pub(super) async fn insert(c: &mut #conn, input: #create) -> ::core::result::Result<#ident, #k::Error> {
            let now = #k::__private::now();
            let q = #p::diesel::insert_into(#table::table)
                .values((
                    #table::#id_ident.eq(#p::bind(#p::uuid::Uuid::new_v4())),
                    #table::created_at.eq(#p::bind(now)),
                    #table::updated_at.eq(#p::bind(now)),
                    #(#values)*
                ))
                .returning(<#ident as #p::diesel::SelectableHelper<#db>>::as_returning());
            let row: #ident = #run_one?;
            ::core::result::Result::Ok(row)
        }
    }
}

/// Emits `insert_many`: new rows as `insert` makes them, written by multi-row `INSERT`s of at
/// most as many rows as keep the statement's bound values within what both backends take
/// (SQLite 32,766, PostgreSQL 65,535), and returned in the order of the inputs.
fn insert_many_fn(g: &Gen<'_>, d: &Dialect) -> TokenStream {
    let (k, p, ident, table) = (g.k, &g.p, &g.m.ident, table(g));
    let (conn, db, run_load) = (&d.conn, &d.db, &d.run_load);
    let (create, id_ident) = (&g.n.create, &g.id.ident);
    let values = input_values(g);
    // The id and both timestamps, then the writable members.
    let per_statement = (30_000 / (3 + g.writable.len())).min(1_000);
    quote! {
        pub(super) async fn insert_many(
            c: &mut #conn,
            inputs: ::std::vec::Vec<#create>,
        ) -> ::core::result::Result<::std::vec::Vec<#ident>, #k::Error> {
            // Each row its own time, in the order given (a list sorts by `created_at`).
            let mut last = ::core::option::Option::None;
            let mut rows = ::std::vec::Vec::with_capacity(inputs.len());
            let mut inputs = inputs.into_iter().peekable();
            while inputs.peek().is_some() {
                let mut ids = ::std::vec::Vec::with_capacity(#per_statement);
                let values: ::std::vec::Vec<_> = inputs
                    .by_ref()
                    .take(#per_statement)
                    .map(|input| {
                        let id = #p::uuid::Uuid::new_v4();
                        ids.push(id);
                        let now = #k::__private::now_after(last);
                        last = ::core::option::Option::Some(now);
                        (
                            #table::#id_ident.eq(#p::bind(id)),
                            #table::created_at.eq(#p::bind(now)),
                            #table::updated_at.eq(#p::bind(now)),
                            #(#values)*
                        )
                    })
                    .collect();
                let q = #p::diesel::insert_into(#table::table)
                    .values(values)
                    .returning(<#ident as #p::diesel::SelectableHelper<#db>>::as_returning());
                let got: ::std::vec::Vec<#ident> = #run_load?;
                rows.extend(#p::in_order_of(&ids, got, |r: &#ident| r.#id_ident)?);
            }
            ::core::result::Result::Ok(rows)
        }
    }
}

/// Emits `update`: the members present in a PATCH body written to the rows matching a filter,
/// and `updated_at`; the changed row returned.
fn update_fn(g: &Gen<'_>, d: &Dialect) -> TokenStream {
    let (k, p, ident, table) = (g.k, &g.p, &g.m.ident, table(g));
    let (conn, db, run_first) = (&d.conn, &d.db, &d.run_first);
    let update = &g.n.update;
    let writable_idents = g.updatable.iter().map(|f| &f.ident);
    let values = g.updatable.iter().map(|f| {
        let fi = &f.ident;
        quote!(input.#fi.map(|__v| #table::#fi.eq(#p::bind(__v))),)
    });
    quote! {
        pub(super) async fn update(
            c: &mut #conn,
            conds: #p::Node<'_>,
            input: #update,
        ) -> ::core::result::Result<::core::option::Option<#ident>, #k::Error> {
            let ::core::option::Option::Some(w) = condition(conds)? else {
                return ::core::result::Result::Err(everything());
            };
            let now = #k::__private::now();
            // Written by `db::update` so the statement cache can keep it: one statement per
            // set of members present, cached if that shape is admitted.
            let keep = #p::Shape::new(::core::stringify!(#table), "update")
                .conditions(conds)
                #(.part(input.#writable_idents.is_some()))*
                .admit();
            let q = #p::Update::new(
                #table::table,
                #p::diesel::AsChangeset::as_changeset((
                    #(#values)*
                    #table::updated_at.eq(#p::bind(now)),
                )),
                w,
                <#ident as #p::diesel::SelectableHelper<#db>>::as_returning(),
            );
            let q = #p::Cached::new(q, keep);
            let row: ::core::option::Option<#ident> = #run_first?;
            ::core::result::Result::Ok(row)
        }
    }
}

/// Emits `delete`: removes the rows matching a filter; whether any was. With `soft_delete`,
/// sets `deleted_at` (and `updated_at`) of the live rows matching it instead.
fn delete_fn(g: &Gen<'_>, d: &Dialect) -> TokenStream {
    let (k, p, table) = (g.k, &g.p, table(g));
    let conn = &d.conn;
    if soft(g) {
        return quote! {
            pub(super) async fn delete(c: &mut #conn, conds: #p::Node<'_>) -> ::core::result::Result<bool, #k::Error> {
                let ::core::option::Option::Some(w) = condition(conds)? else {
                    return ::core::result::Result::Err(everything());
                };
                let now = #k::__private::now();
                let q = #p::diesel::update(#table::table.filter(w).filter(#table::deleted_at.is_null()))
                    .set((
                        #table::deleted_at.eq(#p::bind(::core::option::Option::Some(now))),
                        #table::updated_at.eq(#p::bind(now)),
                    ));
                let n = #p::diesel_async::RunQueryDsl::execute(q, c).await?;
                ::core::result::Result::Ok(n > 0)
            }
        };
    }
    quote! {
        pub(super) async fn delete(c: &mut #conn, conds: #p::Node<'_>) -> ::core::result::Result<bool, #k::Error> {
            let ::core::option::Option::Some(w) = condition(conds)? else {
                return ::core::result::Result::Err(everything());
            };
            let n = #p::diesel_async::RunQueryDsl::execute(#p::diesel::delete(#table::table.filter(w)), c).await?;
            ::core::result::Result::Ok(n > 0)
        }
    }
}

/// Whether the model keeps deleted rows (`#[resource(soft_delete)]`).
fn soft(g: &Gen<'_>) -> bool {
    g.m.attrs.soft_delete.is_some()
}

/// Emits `restore` (for `soft_delete` models): clears `deleted_at` of the deleted row matching
/// a filter, and sets `updated_at`; the restored row returned.
fn restore_fn(g: &Gen<'_>, d: &Dialect) -> TokenStream {
    if !soft(g) {
        return TokenStream::new();
    }
    let (k, p, ident, table) = (g.k, &g.p, &g.m.ident, table(g));
    let (conn, db, run_first) = (&d.conn, &d.db, &d.run_first);
    quote! {
        pub(super) async fn restore(
            c: &mut #conn,
            conds: #p::Node<'_>,
        ) -> ::core::result::Result<::core::option::Option<#ident>, #k::Error> {
            let ::core::option::Option::Some(w) = condition(conds)? else {
                return ::core::result::Result::Err(everything());
            };
            let now = #k::__private::now();
            let q = #p::diesel::update(#table::table.filter(w).filter(#table::deleted_at.is_not_null()))
                .set((
                    #table::deleted_at.eq(#p::bind(::core::option::Option::None::<#p::chrono::DateTime<#p::chrono::Utc>>)),
                    #table::updated_at.eq(#p::bind(now)),
                ))
                .returning(<#ident as #p::diesel::SelectableHelper<#db>>::as_returning());
            let row: ::core::option::Option<#ident> = #run_first?;
            ::core::result::Result::Ok(row)
        }
    }
}

/// Emits `purge` (for `soft_delete` models): removes for good the rows deleted before a time.
fn purge_fn(g: &Gen<'_>, d: &Dialect) -> TokenStream {
    if !soft(g) {
        return TokenStream::new();
    }
    let (k, p, table) = (g.k, &g.p, table(g));
    let conn = &d.conn;
    quote! {
        pub(super) async fn purge(
            c: &mut #conn,
            before: #p::chrono::DateTime<#p::chrono::Utc>,
        ) -> ::core::result::Result<u64, #k::Error> {
            let q = #p::diesel::delete(#table::table.filter(#table::deleted_at.lt(#p::bind(before))));
            let n = #p::diesel_async::RunQueryDsl::execute(q, c).await?;
            ::core::result::Result::Ok(u64::try_from(n).unwrap_or(u64::MAX))
        }
    }
}

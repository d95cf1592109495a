//! Generated CRUD: the `Resource` trait the derive implements, field metadata, list queries,
//! blueprints with their endpoint options, handlers and the registry of resources.
//!
//! `#[derive(Resource)]` (see the crate root) implements [`Resource`] and generates the
//! create, update and response schemas; everything that does not depend on the model's types
//! lives here.

// The modules below import only from those above them (`import_cycles` holds them to it).

// The query string: the list parameters, the `filter` expression, relation names in dotted
// parameter names, `now` and `today`, sparse fields.
pub(crate) mod query;

// Entity tags and preconditions (`If-Match`, `If-None-Match`); one row by its conditions.
pub(crate) mod conditional;
pub(crate) mod rows;

// Rules: field-level read rules, and permission rules written as expressions.
pub(crate) mod rules;

// What a blueprint is made of and what its handlers share: the operations and their options,
// custom routes, lifecycle hooks, idempotency keys, the actix scope of its routes, the state of
// a mounted blueprint, what a handler reads from its request, how it answers, and which rows
// (live or deleted) an operation sees; and the seam's side for one resource (`shared::Part`).
pub(crate) mod hooks;
pub(crate) mod idempotency;
pub(crate) mod options;
// Limits per operation and door (`CrudBlueprint::limit`), counted around the handlers.
pub(crate) mod limits;
pub(crate) mod request;
pub(crate) mod route;
pub(crate) mod scope;
pub(crate) mod shared;
pub(crate) mod soft_delete;
pub(crate) mod view;

// Relations between resources: filters and sorts across them, `expand`, keys writes set.
pub(crate) mod relations;

// Full-text search: the condition `q` makes for a caller, its SQL and the ranking.
pub(crate) mod search;

// The handlers, one concern each: listing (INDEX), reading one item (GET), writing (POST,
// PATCH, DELETE, restore, batches, through one transaction wrapper); with `files`, uploads
// and downloads of file members.
pub(crate) mod list;
mod read;
// Aggregates over what a caller could list (`CrudBlueprint::aggregates`).
pub(crate) mod aggregate;
pub(crate) mod write;

// Mounting: the blueprint that registers the handlers, the registry of resources by name, the
// OpenAPI description of what is mounted.
pub(crate) mod mount;

pub(crate) use crate::condition::{Arg, Cond, Condition, Conditions, Sort};
pub(crate) use crate::field::{FieldInfo, Kind};
pub use conditional::entity_tag;
pub use hooks::HookCtx;
pub(crate) use list::limits::ListCaps;
pub use mount::blueprint::CrudBlueprint;
pub use mount::registry;
pub use options::{OpOptions, OpSetting, Operation, Present};
pub(crate) use query::ListLimits;
pub use query::{CountMode, ListQuery};
pub(crate) use relations::Relation;
pub use route::{CustomRoute, OperationType};
pub(crate) use rules::read::Readers;

use crate::db::indexes::IndexSpec;
use crate::db::Conn;
use crate::error::Error;
use chrono::{DateTime, NaiveDate, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::future::Future;

/// Body validation beyond types: lengths, formats. Generated for create and update schemas.
pub trait Validate {
    /// Checks the value.
    ///
    /// # Errors
    ///
    /// A 422 naming the field.
    fn validate(&self) -> Result<(), Error>;

    /// The `#[resource(password)]` members present in the body, so the handler can replace
    /// the plaintext with a bcrypt hash before anything is stored.
    fn passwords_mut(&mut self) -> Vec<(&'static str, &mut String)> {
        Vec::new()
    }

    /// The names of the `#[resource(password)]` members, whose `minLength` the description
    /// sets to `PASSWORD_MIN_LENGTH`.
    const PASSWORD_MEMBERS: &'static [&'static str] = &[];

    /// The `#[resource(email)]` members present in the body, so that a user blueprint can
    /// store addresses in their normalized form (see [`crate::auth::normalize_email`]).
    fn emails_mut(&mut self) -> Vec<(&'static str, &mut String)> {
        Vec::new()
    }
}

/// What `#[derive(Resource)]` writes for a resource besides [`Resource`]: the read rules,
/// named filters, aggregates and relations it declares, the SQL of conditions other
/// resources' queries embed, and the members the server sets on create. Generated code
/// implements it; the runtime reads it. Not part of the public API (its path is
/// `crudforge::__private::Generated`).
#[doc(hidden)]
pub trait Generated: Sized + 'static {
    /// The members only some callers read, each with who may (`#[resource(read = ...)]` on
    /// the field): hidden from every answer, `fields`, `sort`, filter and `ETag` of the
    /// others. Generated.
    const READ_RULES: &'static [(&'static str, Readers)] = &[];
    /// The named filters clients ask for with `scope=name` (`#[resource(scope(name =
    /// "expression"))]`): each name with its `filter` expression, checked when the blueprint
    /// is mounted and evaluated (with `now` and `today`) at each request. Generated.
    const SCOPES: &'static [(&'static str, &'static str)] = &[];

    /// The members aggregates may use (`GET <prefix>aggregate/`), each with its column and
    /// what it may be used for: decided from its type, or by `#[resource(aggregate(...))]`.
    /// Generated.
    const AGGREGATES: &'static [(&'static str, &'static str, aggregate::AggregateUse)] = &[];

    /// The relations the resource declares (`#[resource(belongs_to(...))]` on a foreign key,
    /// `#[resource(has_many(...))]` on the struct): what `expand`, filters such as
    /// `habitat.name=Savanna` and `sort=habitat.name` may cross. Generated.
    const RELATIONS: &'static [Relation] = &[];

    /// The SQL of `cond` on this resource's table, on SQLite: what a relation from another
    /// resource embeds in its subqueries. Generated.
    ///
    /// # Errors
    ///
    /// A comparison does not apply to its field.
    #[cfg(feature = "sqlite")]
    fn where_sqlite(
        cond: &crate::condition::Condition,
    ) -> relations::WhereSql<diesel::sqlite::Sqlite> {
        let _ = cond;
        Err(Error::Internal(
            "this resource cannot be the target of a relation".into(),
        ))
    }

    /// [`where_sqlite`](Self::where_sqlite) on PostgreSQL.
    ///
    /// # Errors
    ///
    /// A comparison does not apply to its field.
    #[cfg(feature = "postgres")]
    fn where_pg(cond: &crate::condition::Condition) -> relations::WhereSql<diesel::pg::Pg> {
        let _ = cond;
        Err(Error::Internal(
            "this resource cannot be the target of a relation".into(),
        ))
    }

    /// Puts into `body` the members the server fills on create (`#[resource(set = ...)]`), for
    /// the request `ctx` describes, before the rules, validators and hooks see it. Generated.
    ///
    /// # Errors
    ///
    /// 401 for `set = me` on a non-null member without a caller.
    fn set_by_server(
        ctx: &HookCtx,
        body: &mut serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), Error> {
        let _ = (ctx, body);
        Ok(())
    }
}

/// A model exposed through generated CRUD endpoints. Implemented by `#[derive(Resource)]`.
///
/// The database operations take a checked-out [`Conn`] and run typed Diesel code for its
/// backend. Every operation that addresses rows takes the conditions that select them (the key,
/// a parent scope, a permission scope, the caller's filters) as a `Condition` tree or as
/// comparisons combined with AND (`&[Cond]`), through [`Conditions`].
pub trait Resource: Generated {
    /// POST body.
    type Create: DeserializeOwned + schemars::JsonSchema + Validate;
    /// PATCH body: every field optional.
    type Update: DeserializeOwned + schemars::JsonSchema + Validate;
    /// Response body: the model without write-only fields.
    type Response: Serialize + schemars::JsonSchema + From<Self>;

    /// Model name, as in operation ids (`listCritter`).
    const NAME: &'static str;
    /// Stored fields, in declaration order.
    const FIELDS: &'static [FieldInfo];
    /// Name of the primary-key field.
    const ID_FIELD: &'static str;
    /// The last segment of the model's Diesel table path: the table's name in SQL, unless
    /// its `table!` gives another with `#[sql_name]` (see [`sql_table`](Self::sql_table)).
    const TABLE: &'static str;
    /// The indexes the resource's queries need, declared with `#[resource(index("a", "b"))]`:
    /// one column list each, in index order. [`Resource::indexes`] gives them with the table.
    const INDEXES: &'static [&'static [&'static str]] = &[];
    /// The searchable members, declared with `#[resource(search("name", "species"))]`, the
    /// one that weighs most first: what `q` looks in (see `docs/search.md`).
    const SEARCH: &'static [&'static str] = &[];
    /// The composite unique constraints, declared with `#[resource(unique("a", "b"))]`: one
    /// column list each. [`Resource::indexes`] gives each as a unique [`IndexSpec`].
    const UNIQUES: &'static [&'static [&'static str]] = &[];
    /// The table a model-first resource (`#[resource(model_first)]`) declares: its columns'
    /// types, constraints and foreign keys, from which migrations are written
    /// ([`crate::migrations::make_migrations`]). `None` for a resource over a hand-written
    /// `table!`.
    const MODEL: Option<&'static crate::db::ddl::ModelTable> = None;
    /// The table's name in SQL, as its Diesel `table!` declares it (`#[sql_name = "users"]`
    /// over `app_users`); the derive reads it from the declaration, and a table qualified by
    /// a schema keeps [`TABLE`](Self::TABLE). What the index and schema checks look up.
    fn sql_table() -> &'static str {
        Self::TABLE
    }

    /// The value of `field` as it appears in a URL (for `Location` headers).
    fn key_of(&self, field: &str) -> Option<String>;

    /// Rows matching `conds`, in `sort` order (default: `created_at`, then id); with `page`,
    /// only the rows of that window.
    fn select(
        conn: &mut Conn,
        conds: &(impl Conditions + ?Sized),
        sort: &[Sort],
        page: Option<Window>,
    ) -> impl Future<Output = Result<Vec<Self>, Error>>;

    /// Number of rows matching `conds`.
    fn count(
        conn: &mut Conn,
        conds: &(impl Conditions + ?Sized),
    ) -> impl Future<Output = Result<i64, Error>>;

    /// An estimate of the number of rows matching `conds` (`count=estimated`): the query
    /// planner's on PostgreSQL; by default (and on SQLite) the exact [`count`](Self::count).
    /// The planner's statistics cover every row of the table, so INDEX asks for it only when
    /// the caller reads every row and member and filters on no relation.
    fn estimate_count(
        conn: &mut Conn,
        conds: &(impl Conditions + ?Sized),
    ) -> impl Future<Output = Result<i64, Error>> {
        Self::count(conn, conds)
    }

    /// The value of the sortable `field` of this row, for cursors: `Some(None)` when it is
    /// null, `None` when the field has no value a cursor can hold (then a page sorted by it
    /// has no `next_cursor`).
    fn sort_value(&self, field: &str) -> Option<Option<Arg>> {
        let _ = field;
        None
    }

    /// Inserts a row: a new id, `created_at` and `updated_at` now.
    fn insert(conn: &mut Conn, input: Self::Create) -> impl Future<Output = Result<Self, Error>>;

    /// A copy of a POST body, when its members' types can be copied (the derive's: every
    /// member of a type it knows; not a field of the application's own type). A batch create
    /// writes its rows together only with copies, to write them again one at a time when the
    /// database refuses the statement, so that the error names the item at fault.
    #[doc(hidden)]
    fn __copy_create(input: &Self::Create) -> Option<Self::Create> {
        let _ = input;
        None
    }

    /// Inserts rows as [`insert`](Resource::insert) does, returned in the order of `inputs`.
    /// The derive writes them with multi-row `INSERT`s; this default, one at a time. Either
    /// way, on an error some rows may be written: call it inside a transaction.
    fn insert_many(
        conn: &mut Conn,
        inputs: Vec<Self::Create>,
    ) -> impl Future<Output = Result<Vec<Self>, Error>> {
        async move {
            let mut rows = Vec::with_capacity(inputs.len());
            for input in inputs {
                rows.push(Self::insert(conn, input).await?);
            }
            Ok(rows)
        }
    }

    /// Updates the row matching `conds` (and `updated_at`); `None` when no row matches.
    fn update(
        conn: &mut Conn,
        conds: &(impl Conditions + ?Sized),
        input: Self::Update,
    ) -> impl Future<Output = Result<Option<Self>, Error>>;

    /// Deletes the row matching `conds`; false when no row matches. A
    /// [`SOFT_DELETE`](Self::SOFT_DELETE) resource keeps the row: this sets its `deleted_at`
    /// (and `updated_at`) to now, and only if the row is live.
    fn delete(
        conn: &mut Conn,
        conds: &(impl Conditions + ?Sized),
    ) -> impl Future<Output = Result<bool, Error>>;

    /// Whether DELETE keeps rows (`#[resource(soft_delete)]`): a deleted row has a
    /// `deleted_at` time, and every generated read and write sees live rows only, unless it
    /// asks for deleted ones (see [resources.md](https://github.com/crudforge/crudforge/blob/main/docs/resources.md), "Soft delete").
    const SOFT_DELETE: bool = false;

    /// Clears `deleted_at` of the deleted row matching `conds` (and sets `updated_at`): the
    /// restored row, or `None` when no deleted row matches (always, for a resource without
    /// [`SOFT_DELETE`](Self::SOFT_DELETE)).
    fn restore(
        conn: &mut Conn,
        conds: &(impl Conditions + ?Sized),
    ) -> impl Future<Output = Result<Option<Self>, Error>> {
        let _ = (conn, conds);
        std::future::ready(Ok(None))
    }

    /// Removes for good the rows deleted before `before`; how many. Nothing for a resource
    /// without [`SOFT_DELETE`](Self::SOFT_DELETE).
    fn purge(conn: &mut Conn, before: DateTime<Utc>) -> impl Future<Output = Result<u64, Error>> {
        let _ = (conn, before);
        std::future::ready(Ok(0))
    }

    /// The resource's permission rules (set with `#[resource(rules = ...)]`; default
    /// [`DefaultRules`](crate::perms::DefaultRules)).
    fn default_rules() -> std::sync::Arc<dyn crate::perms::Rules<Self>> {
        std::sync::Arc::new(crate::perms::DefaultRules)
    }

    /// The blueprint of this resource at `prefix` (for example `/api/critters/`).
    fn blueprint(prefix: &str) -> CrudBlueprint<Self> {
        CrudBlueprint::new(prefix)
    }

    /// The metadata of `name`.
    fn field(name: &str) -> Option<&'static FieldInfo> {
        Self::FIELDS.iter().find(|f| f.name == name)
    }

    /// The declared [`INDEXES`](Self::INDEXES) on [`sql_table`](Self::sql_table), then the
    /// unique indexes of the [`UNIQUES`](Self::UNIQUES): each one's name and `CREATE INDEX`
    /// statement come from [`IndexSpec`]; an [`Api`](crate::Api) checks at start that the
    /// database has them.
    fn indexes() -> Vec<IndexSpec> {
        let table = Self::sql_table();
        Self::INDEXES
            .iter()
            .map(|columns| IndexSpec::new(table, columns))
            .chain(
                Self::UNIQUES
                    .iter()
                    .map(|columns| IndexSpec::new_unique(table, columns)),
            )
            .collect()
    }
}

/// Converts a field value into what Diesel binds for its column: UUIDs, timestamps and JSON go
/// through [`Portable`](crate::sql_types::Portable); other types bind as themselves.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be stored by a resource field",
    label = "no column binding for `{Self}`",
    note = "supported: String, i16, i32, i64, f32, f64, bool, uuid::Uuid, chrono::DateTime<Utc>, chrono::NaiveDate, serde_json::Value, and Option of each; for another type implement `crudforge::crud::IntoBind`"
)]
pub trait IntoBind {
    /// The bindable value.
    type Bind;
    /// The conversion.
    fn into_bind(self) -> Self::Bind;
}

macro_rules! bind_as_is {
    ($($t:ty),*) => {$(
        impl IntoBind for $t {
            type Bind = $t;
            fn into_bind(self) -> $t { self }
        }
        impl IntoBind for Option<$t> {
            type Bind = Option<$t>;
            fn into_bind(self) -> Option<$t> { self }
        }
    )*};
}
bind_as_is!(String, i16, i32, i64, f32, f64, bool, NaiveDate);

macro_rules! bind_portable {
    ($($t:ty),*) => {$(
        impl crate::crud::IntoBind for $t {
            type Bind = crate::sql_types::Portable<$t>;
            fn into_bind(self) -> Self::Bind { crate::sql_types::Portable(self) }
        }
        impl crate::crud::IntoBind for Option<$t> {
            type Bind = crate::sql_types::Portable<Option<$t>>;
            fn into_bind(self) -> Self::Bind { crate::sql_types::Portable(self) }
        }
    )*};
}
bind_portable!(uuid::Uuid, DateTime<Utc>, serde_json::Value);
#[allow(
    unused_imports,
    reason = "a door of the seam: a build without optional surfaces leaves it unused"
)]
pub(crate) use bind_portable;

/// The INDEX response envelope.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Page<T> {
    /// This page's items.
    pub data: Vec<T>,
    /// Where this page is.
    pub pagination: Pagination,
}

/// Which rows of a sorted selection [`Resource::select`] returns: at most `limit` rows, after
/// skipping `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The most rows returned.
    pub limit: i64,
    /// How many rows are skipped first.
    pub offset: i64,
}

impl Window {
    /// The first `limit` rows.
    pub fn first(limit: i64) -> Window {
        Window { limit, offset: 0 }
    }
}

/// Position of a page in a list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Pagination {
    /// 1-based page number.
    pub page: u32,
    /// Items per page.
    pub page_size: u32,
    /// Matching items in all pages; null with `count=none`.
    pub total: Option<i64>,
    /// Number of pages; null with `count=none`.
    pub total_pages: Option<i64>,
    /// Pass as `cursor` to get the next page; null on the last page.
    pub next_cursor: Option<String>,
}

impl Pagination {
    /// The position of `page` of `page_size` items among `total` (when counted), with the
    /// cursor of the next page.
    pub(crate) fn counted(
        page: u32,
        page_size: u32,
        total: Option<i64>,
        next_cursor: Option<String>,
    ) -> Self {
        let size = i64::from(page_size.max(1));
        Pagination {
            page,
            page_size,
            total,
            total_pages: total.map(|t| (t + size - 1) / size),
            next_cursor,
        }
    }
}

/// The parsed list parameters (filters, sort, page) of resource `R`, as an actix-web
/// extractor. `#[derive(Resource)]` names it `<Name>Filter`; use it in custom routes to accept
/// exactly the filters of the generated INDEX, judged as INDEX judges them for the request's
/// caller:
///
/// ```ignore
/// async fn count(filter: CritterFilter, db: web::Data<Database>) -> crudforge::Result<HttpResponse> {
///     let mut conn = db.get().await?;
///     let n = Critter::count(&mut conn, &filter.query.condition()).await?;
///     Ok(HttpResponse::Ok().json(n))
/// }
/// ```
///
/// Unknown parameters and malformed values are 400 problems naming the parameter. The
/// resource's read rules (`#[resource(read = ...)]`) apply to the caller of the request (from
/// `Authorization`, as [`crate::auth::current_user`] reads it; an invalid token is 401): a
/// member they may not read in `fields`, `sort` or a filter is 400, and a filter on an owner's
/// member matches the caller's own rows only. Named filters (`scope=`) are ANDed into
/// `query.filter`. Filters across relations (`rel.field`) and `expand` are refused like any
/// unknown parameter; `include_deleted` is left to the generated INDEX.
pub struct Filter<R> {
    /// Filters, sort keys and page.
    pub query: ListQuery,
    marker: std::marker::PhantomData<fn() -> R>,
}

impl<R> std::fmt::Debug for Filter<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Filter")
            .field("query", &self.query)
            .finish()
    }
}

impl<R: Resource> Filter<R> {
    /// The list parameters of `req`, parsed and judged as the generated INDEX does for the
    /// request's caller: the caps on filters, the read rules, the named filters, the search
    /// (`q`, in the members the caller reads; not ranked: a custom route orders its rows).
    async fn of_request(req: &actix_web::HttpRequest) -> Result<Self, Error> {
        let state = req.app_data::<actix_web::web::Data<crate::state::ApiState>>();
        let limits = state.map_or_else(
            || ListLimits::of(&crate::config::Config::default()),
            |s| ListLimits::of(&s.config),
        );
        let params = query::Params::of(req.query_string())?;
        let mut query = query::parse_list_query_rel(R::FIELDS, &[], &params, &limits)?;
        if let Some(s) = state {
            ListCaps::of(&s.config).check(&query)?;
        }
        if !R::READ_RULES.is_empty() || query.search.is_some() {
            let viewer = crate::auth::current_user(req).await?;
            rules::read::check_list::<R>(&mut query, viewer.as_ref())?;
            search::apply::<R>(&mut query, viewer.as_ref())?;
        }
        if let Some(named) = list::named_filters::requested::<R>(&params)? {
            query.filter = Some(match query.filter.take() {
                Some(f) => Condition::All(vec![f]).and(named),
                None => named,
            });
        }
        Ok(Filter {
            query,
            marker: std::marker::PhantomData,
        })
    }
}

impl<R: Resource> actix_web::FromRequest for Filter<R> {
    type Error = Error;
    type Future = futures_util::future::LocalBoxFuture<'static, Result<Self, Error>>;

    fn from_request(req: &actix_web::HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { Filter::of_request(&req).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::__private::{check_email, check_max_len};

    #[test]
    fn total_pages_rounds_up() {
        assert_eq!(
            Pagination::counted(1, 25, Some(0), None).total_pages,
            Some(0)
        );
        assert_eq!(
            Pagination::counted(1, 25, Some(25), None).total_pages,
            Some(1)
        );
        assert_eq!(
            Pagination::counted(1, 25, Some(26), None).total_pages,
            Some(2)
        );
        assert_eq!(
            Pagination::counted(1, 25, None, None).total_pages,
            None,
            "count=none"
        );
    }

    #[test]
    fn emails() {
        assert!(check_email("email", "a@b.io").is_ok());
        for bad in ["", "a", "a@b", "@b.io", "a b@c.io", "a@@b.io", "a@.io"] {
            assert!(check_email("email", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn max_len_counts_characters() {
        assert!(check_max_len("name", "ééé", 3).is_ok());
        assert!(check_max_len("name", "éééé", 3).is_err());
    }
}

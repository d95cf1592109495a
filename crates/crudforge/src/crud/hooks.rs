//! Lifecycle hooks of generated writes: typed async functions a blueprint runs before and after
//! create, update and delete, and after the transaction commits.
//!
//! | Hook | Runs | Sees | May |
//! |---|---|---|---|
//! | `before_create` | before the insert, outside the transaction | caller, parsed input | change the input, refuse with an [`Error`] |
//! | `before_update_input` | before the update, outside any transaction, without reading the row | caller, parsed input | change the input, refuse |
//! | `before_update` | in the transaction, after the current row is read | caller, parsed input, current row | change the input, refuse |
//! | `before_delete` | in the transaction, after the current row is read, before the delete | caller, the connection, the row | refuse (nothing is deleted) |
//! | `after_create`, `after_update`, `after_delete` | in the transaction, after the write | caller, the connection, the written (or deleted) row | write more rows; an error rolls everything back |
//! | `after_commit` | after a successful commit | caller, the written row | side effects; an error is logged, the answer stays a success |
//!
//! A restore (soft-delete resources) is an update of `deleted_at`: it runs the update hooks,
//! `before_update_input` and `before_update` with an empty input, and `after_update`, with
//! `HookCtx::operation` set to `Operation::Restore`.
//!
//! A refusal is any [`Error`]; the client receives its problem+json (for example
//! [`Error::invalid_field`] gives a 422 naming the member).

use crate::auth::CurrentUser;
use crate::crud::{Operation, Resource};
use crate::db::{Conn, Database};
use crate::error::Error;
use futures_util::future::LocalBoxFuture;
use std::sync::Arc;

/// What a hook knows about the request it runs for.
#[derive(Debug, Clone)]
pub struct HookCtx {
    /// The authenticated caller, if any (`None` for anonymous callers and public operations).
    pub user: Option<CurrentUser>,
    /// The operation being performed.
    pub operation: Operation,
    /// The database, for queries outside the write's transaction.
    pub db: Database,
    /// The request's raw query string (empty when none), for options such as `cascade=true`.
    pub query: String,
    /// The API's state, for the library's own hooks (a surface's writes beside an account's).
    pub(crate) state: Option<actix_web::web::Data<crate::state::ApiState>>,
    /// The resources the API mounts, which an API key's scope may name (the Token records'
    /// own hook checks a new key's scope against them).
    pub(crate) resources: Option<actix_web::web::Data<crate::auth::key_scope::Resources>>,
}

impl HookCtx {
    /// Whether the query string sets `name` to `true` (`?cascade=true`).
    pub fn flag(&self, name: &str) -> bool {
        self.query
            .split('&')
            .filter_map(|p| p.split_once('='))
            .any(|(k, v)| k == name && v == "true")
    }
}

type BeforeCreate<R> = Arc<
    dyn Fn(
            HookCtx,
            <R as Resource>::Create,
        ) -> LocalBoxFuture<'static, Result<<R as Resource>::Create, Error>>
        + Send
        + Sync,
>;
type BeforeUpdate<R> = Arc<
    dyn Fn(
            HookCtx,
            <R as Resource>::Update,
            Arc<R>,
        ) -> LocalBoxFuture<'static, Result<<R as Resource>::Update, Error>>
        + Send
        + Sync,
>;
type BeforeUpdateInput<R> = Arc<
    dyn Fn(
            HookCtx,
            <R as Resource>::Update,
        ) -> LocalBoxFuture<'static, Result<<R as Resource>::Update, Error>>
        + Send
        + Sync,
>;
type AfterWrite<R> = Arc<
    dyn for<'a> Fn(&'a mut Conn, &'a HookCtx, &'a R) -> LocalBoxFuture<'a, Result<(), Error>>
        + Send
        + Sync,
>;
type AfterCommit<R> =
    Arc<dyn Fn(HookCtx, Arc<R>) -> LocalBoxFuture<'static, Result<(), Error>> + Send + Sync>;

/// What a `POST` of the prefix answers, from the generated handler.
pub(crate) type PostAnswer<'a> = LocalBoxFuture<'a, Result<actix_web::HttpResponse, Error>>;

/// A wrapper around the `POST` handler of a blueprint: it gets the request and the generated
/// handler's answer, not yet begun, and answers itself (before the handler runs, instead of it,
/// or from its answer). The user blueprint's sign-up sets one (its throttle and uniform
/// answer).
pub(crate) type AroundPost =
    Arc<dyn for<'a> Fn(&'a actix_web::HttpRequest, PostAnswer<'a>) -> PostAnswer<'a> + Send + Sync>;

/// The hooks registered on a blueprint, run in registration order.
pub(crate) struct Hooks<R: Resource> {
    pub(crate) before_create: Vec<BeforeCreate<R>>,
    pub(crate) before_update_input: Vec<BeforeUpdateInput<R>>,
    pub(crate) before_update: Vec<BeforeUpdate<R>>,
    pub(crate) after_create: Vec<AfterWrite<R>>,
    pub(crate) after_update: Vec<AfterWrite<R>>,
    pub(crate) after_delete: Vec<AfterWrite<R>>,
    pub(crate) before_delete: Vec<AfterWrite<R>>,
    pub(crate) after_commit: Vec<AfterCommit<R>>,
    /// Whether a PATCH judged by `before_update` hooks must fail (412) rather than overwrite
    /// a row that a concurrent request changed after the hooks read it (set by guards whose
    /// verdict depends on the row as read, such as `guard_roles`).
    pub(crate) serialized_update: bool,
    /// The wrapper of the `POST` handler, if any.
    pub(crate) around_post: Option<AroundPost>,
    /// Whether the privilege checks of role rows are set up (by `guard_roles`, or left out on
    /// purpose with `unguarded_roles`); a blueprint of `UserRole` without them gets them when
    /// it is mounted (see `users::guards`).
    pub(crate) role_guard: Option<bool>,
}

impl<R: Resource> Default for Hooks<R> {
    fn default() -> Self {
        Hooks {
            before_create: Vec::new(),
            before_update_input: Vec::new(),
            before_update: Vec::new(),
            after_create: Vec::new(),
            after_update: Vec::new(),
            after_delete: Vec::new(),
            before_delete: Vec::new(),
            after_commit: Vec::new(),
            serialized_update: false,
            around_post: None,
            role_guard: None,
        }
    }
}

impl<R: Resource> Hooks<R> {
    /// Whether any hook needs the row before an update (which then reads it).
    pub(crate) fn reads_before_update(&self) -> bool {
        !self.before_update.is_empty()
    }

    /// The after-write hooks of `op`.
    fn after(&self, op: Operation) -> &[AfterWrite<R>] {
        match op {
            Operation::Post => &self.after_create,
            Operation::Patch | Operation::Restore => &self.after_update,
            Operation::Delete => &self.after_delete,
            Operation::Index | Operation::Get => &[],
        }
    }

    /// Runs the before-create hooks over `input`.
    pub(crate) async fn before_create(
        &self,
        ctx: &HookCtx,
        mut input: R::Create,
    ) -> Result<R::Create, Error> {
        for h in &self.before_create {
            input = h(ctx.clone(), input).await?;
        }
        Ok(input)
    }

    /// Runs the before-update-input hooks over `input`.
    pub(crate) async fn before_update_input(
        &self,
        ctx: &HookCtx,
        mut input: R::Update,
    ) -> Result<R::Update, Error> {
        for h in &self.before_update_input {
            input = h(ctx.clone(), input).await?;
        }
        Ok(input)
    }

    /// Runs the before-update hooks over `input`, with the current row.
    pub(crate) async fn before_update(
        &self,
        ctx: &HookCtx,
        mut input: R::Update,
        current: Arc<R>,
    ) -> Result<R::Update, Error> {
        for h in &self.before_update {
            input = h(ctx.clone(), input, current.clone()).await?;
        }
        Ok(input)
    }

    /// Runs the after-write hooks of `ctx.operation`, inside the transaction.
    pub(crate) async fn after_write(
        &self,
        conn: &mut Conn,
        ctx: &HookCtx,
        row: &R,
    ) -> Result<(), Error> {
        for h in self.after(ctx.operation) {
            h(conn, ctx, row).await?;
        }
        Ok(())
    }

    /// Runs the before-delete hooks, inside the transaction, before the row is deleted.
    pub(crate) async fn before_delete(
        &self,
        conn: &mut Conn,
        ctx: &HookCtx,
        row: &R,
    ) -> Result<(), Error> {
        for h in &self.before_delete {
            h(conn, ctx, row).await?;
        }
        Ok(())
    }

    /// Whether a write of `op` runs after-write hooks on its rows.
    pub(crate) fn runs_after(&self, op: Operation) -> bool {
        !self.after(op).is_empty()
    }

    /// Whether a write of `op` runs hooks inside or after its transaction (the write then runs
    /// in an explicit transaction; otherwise it is a single statement).
    pub(crate) fn wrap(&self, op: Operation) -> bool {
        !self.after(op).is_empty()
            || (op == Operation::Delete
                && (!self.before_delete.is_empty() || self.has_after_commit()))
            || (op == Operation::Patch && self.reads_before_update())
            || (op == Operation::Restore
                && (self.reads_before_update() || !self.before_update_input.is_empty()))
    }

    /// Whether after-commit hooks exist (the handler then keeps a copy of the row).
    pub(crate) fn has_after_commit(&self) -> bool {
        !self.after_commit.is_empty()
    }

    /// Runs the after-commit hooks; failures are logged, never returned.
    pub(crate) async fn after_commit(&self, ctx: &HookCtx, row: Arc<R>) {
        for h in &self.after_commit {
            if let Err(e) = h(ctx.clone(), row.clone()).await {
                tracing::error!(
                    resource = R::NAME,
                    operation = ?ctx.operation,
                    error = %e,
                    "an after-commit hook failed; the write stays committed"
                );
            }
        }
    }
}

//! The blueprint's methods that register lifecycle hooks (see [`crate::crud::hooks`] for when
//! each runs and what it sees).

use super::CrudBlueprint;
use crate::crud::hooks::HookCtx;
use crate::crud::Resource;
use crate::db::Conn;
use crate::error::Error;
use futures_util::future::LocalBoxFuture;
use std::future::Future;
use std::sync::Arc;

impl<R: Resource> CrudBlueprint<R> {
    /// Runs `hook` on the parsed body of every POST before it is inserted. It may change the
    /// input (normalize, fill in) and returns it, or refuses with an [`Error`], which the client
    /// receives as problem+json.
    ///
    /// ```ignore
    /// .before_create(|_ctx, mut input: CritterCreate| async move {
    ///     input.name = input.name.trim().to_owned();
    ///     Ok(input)
    /// })
    /// ```
    #[must_use]
    pub fn before_create<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(HookCtx, R::Create) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R::Create, Error>> + 'static,
    {
        self.hooks
            .before_create
            .push(Arc::new(move |ctx, input| Box::pin(hook(ctx, input))));
        self
    }

    /// Runs `hook` on the parsed body of every PATCH before the update, without the item: for
    /// tidying and checking input that needs nothing else. It returns the (possibly changed)
    /// input or refuses with an [`Error`]. Unlike [`before_update`](Self::before_update) it
    /// costs no read of the row and no transaction: a PATCH with only these hooks stays one
    /// `UPDATE … RETURNING` statement. Runs before the `before_update` hooks.
    ///
    /// ```ignore
    /// .before_update_input(|_ctx, mut input: CritterUpdate| async move {
    ///     input.name = input.name.map(|n| n.trim().to_owned());
    ///     Ok(input)
    /// })
    /// ```
    #[must_use]
    pub fn before_update_input<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(HookCtx, R::Update) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R::Update, Error>> + 'static,
    {
        self.hooks
            .before_update_input
            .push(Arc::new(move |ctx, input| Box::pin(hook(ctx, input))));
        self
    }

    /// Runs `hook` on the parsed body of every PATCH, inside the write's transaction, with the
    /// item as it is now (read for it: prefer
    /// [`before_update_input`](Self::before_update_input) when the item is not needed). It returns the (possibly changed) input or refuses with an [`Error`].
    #[must_use]
    pub fn before_update<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(HookCtx, R::Update, Arc<R>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R::Update, Error>> + 'static,
    {
        self.hooks
            .before_update
            .push(Arc::new(move |ctx, input, current| {
                Box::pin(hook(ctx, input, current))
            }));
        self
    }

    /// Runs `hook` after each insert, inside the same transaction, with the connection and the
    /// inserted row. An error rolls the insert back and reaches the client.
    ///
    /// ```ignore
    /// .after_create(|conn, ctx, row| Box::pin(async move { audit(conn, ctx, row).await }))
    /// ```
    #[must_use]
    pub fn after_create<F>(mut self, hook: F) -> Self
    where
        F: for<'a> Fn(&'a mut Conn, &'a HookCtx, &'a R) -> LocalBoxFuture<'a, Result<(), Error>>
            + Send
            + Sync
            + 'static,
    {
        self.hooks.after_create.push(Arc::new(hook));
        self
    }

    /// Runs `hook` after each update, inside the same transaction, with the updated row. An
    /// error rolls the update back.
    #[must_use]
    pub fn after_update<F>(mut self, hook: F) -> Self
    where
        F: for<'a> Fn(&'a mut Conn, &'a HookCtx, &'a R) -> LocalBoxFuture<'a, Result<(), Error>>
            + Send
            + Sync
            + 'static,
    {
        self.hooks.after_update.push(Arc::new(hook));
        self
    }

    /// Runs `hook` before each delete, inside the delete's transaction, with the connection and
    /// the row about to be deleted. An error refuses the delete (nothing is deleted) and
    /// reaches the client: for example a 409 while other rows still reference this one.
    #[must_use]
    pub fn before_delete<F>(mut self, hook: F) -> Self
    where
        F: for<'a> Fn(&'a mut Conn, &'a HookCtx, &'a R) -> LocalBoxFuture<'a, Result<(), Error>>
            + Send
            + Sync
            + 'static,
    {
        self.hooks.before_delete.push(Arc::new(hook));
        self
    }

    /// Runs `hook` after each delete, inside the same transaction, with the deleted row. An
    /// error rolls the delete back.
    #[must_use]
    pub fn after_delete<F>(mut self, hook: F) -> Self
    where
        F: for<'a> Fn(&'a mut Conn, &'a HookCtx, &'a R) -> LocalBoxFuture<'a, Result<(), Error>>
            + Send
            + Sync
            + 'static,
    {
        self.hooks.after_delete.push(Arc::new(hook));
        self
    }

    /// Runs `hook` once after each committed create, update or delete (`ctx.operation` says
    /// which), with the written (or deleted) row: for side effects such as sending mail. It
    /// never runs for a write that failed or was rolled back, nor for an idempotent replay. Its
    /// error is logged; the client still receives the successful answer.
    #[must_use]
    pub fn after_commit<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(HookCtx, Arc<R>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), Error>> + 'static,
    {
        self.hooks
            .after_commit
            .push(Arc::new(move |ctx, row| Box::pin(hook(ctx, row))));
        self
    }
}

//! How a create, update or delete ends: what its transaction produced, the commit (or the
//! replay of a lost idempotency claim, or the 412 of a lost conditional race), the after-commit
//! hooks, and the answer.

use super::blueprint::Shared;
use super::conditional;
use super::handlers::{custom_answer, reload, represent};
use super::hooks::HookCtx;
use super::idempotency::{self, Answer, IdemKey};
use super::options::Operation;
use super::Resource;
use crate::db::tx;
use crate::db::Conn;
use crate::error::Error;
use crate::state::ApiState;
use actix_web::HttpResponse;
use std::sync::Arc;

/// What a write's transaction produced.
pub(super) enum Written<R> {
    /// Answered inside the transaction; `committed` is the after-commit hooks' copy of the row.
    Answered {
        /// The whole answer.
        answer: Answer,
        /// The row for the after-commit hooks, when there are any.
        committed: Option<Arc<R>>,
    },
    /// To be answered after the after-commit hooks, from the row they saw (no second read).
    Deferred {
        /// Status and location; body and tag are made from `row`.
        answer: Answer,
        /// The row the write returned.
        row: Arc<R>,
    },
}

/// The outcome of a create or an update inside its transaction, for `item` as the write
/// returned it. `answer` carries the status and location. With after-commit hooks and no
/// idempotency key to store the answer under, the answer waits for the hooks
/// ([`Written::Deferred`]); otherwise it is made now and, with a key, stored.
///
/// # Errors
///
/// Database errors.
pub(super) async fn written<R: Resource>(
    shared: &Shared<R>,
    st: &ApiState,
    conn: &mut Conn,
    op: Operation,
    item: R,
    mut answer: Answer,
    key: Option<&IdemKey>,
) -> Result<Written<R>, Error> {
    let hooks_after = shared.hooks.has_after_commit();
    if hooks_after && key.is_none() {
        return Ok(Written::Deferred {
            answer,
            row: Arc::new(item),
        });
    }
    // A stored answer must be made in the transaction; the hooks then get a copy of the row.
    let committed = if hooks_after {
        Some(Arc::new(reload(conn, &item).await?))
    } else {
        None
    };
    let (etag, body) = represent(shared, op, conn, &st.db, item).await?;
    answer.body = body;
    answer.etag = Some(etag);
    if let Some(k) = key {
        idempotency::complete(conn, k, &answer).await?;
    }
    Ok(Written::Answered { answer, committed })
}

impl<R: Resource> Written<R> {
    /// Runs the after-commit hooks (if any), then gives the answer: the one made in the
    /// transaction, or one made now from the committed row the hooks saw (read again only
    /// when a hook kept it, or a custom presenter needs its own copy).
    ///
    /// # Errors
    ///
    /// Database errors while making a deferred answer.
    pub(super) async fn finish(
        self,
        shared: &Shared<R>,
        st: &ApiState,
        ctx: &HookCtx,
        op: Operation,
    ) -> Result<Answer, Error> {
        let (mut answer, row) = match self {
            Written::Answered { answer, committed } => {
                if let Some(row) = committed {
                    shared.hooks.after_commit(ctx, row).await;
                }
                return Ok(answer);
            }
            Written::Deferred { answer, row } => (answer, row),
        };
        shared.hooks.after_commit(ctx, row.clone()).await;
        let item = match Arc::try_unwrap(row) {
            Ok(item) => item,
            Err(row) => reload(&mut st.db.get().await?, row.as_ref()).await?,
        };
        let (etag, body) = if custom_answer(shared, op) {
            represent(shared, op, &mut st.db.get().await?, &st.db, item).await?
        } else {
            conditional::tag_and_body(item)?
        };
        answer.body = body;
        answer.etag = Some(etag);
        Ok(answer)
    }
}

/// Ends a write's transaction. A lost idempotency claim (another request stored the key
/// first) replays that request's answer; a lost race of two conditional writes is 412.
///
/// # Errors
///
/// The write's error, or the commit's.
pub(super) async fn end_write<R: Resource>(
    conn: &mut Conn,
    in_tx: bool,
    key: Option<&IdemKey>,
    outcome: Result<Written<R>, Error>,
    lost_claim: bool,
) -> Result<Result<Written<R>, HttpResponse>, Error> {
    let outcome = if in_tx {
        tx::finish(conn, outcome).await
    } else {
        outcome
    };
    match outcome {
        Ok(w) => Ok(Ok(w)),
        Err(_) if lost_claim => match key {
            Some(k) => idempotency::after_lost_claim(conn, k).await.map(Err),
            None => Err(Error::Internal(
                "lost an idempotency claim without a key".into(),
            )),
        },
        Err(e) if conditional::is_write_race(&e) => Err(Error::PreconditionFailed(
            "The item was changed by a concurrent request; nothing was written. Read it again and retry.".into(),
        )),
        Err(e) => Err(e),
    }
}

/// The error that abandons a transaction whose idempotency claim was lost.
pub(super) fn claim_lost() -> Error {
    Error::Conflict("idempotency key taken".into())
}

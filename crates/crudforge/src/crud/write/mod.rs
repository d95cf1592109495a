//! Writing: the one transaction wrapper that create, update and delete run through
//! ([`run`]): the idempotency claim, the transaction, the operation's own body, the
//! in-transaction hooks, the stored answer, the end of the transaction (commit, the replay of
//! a lost claim, the 412 of a lost race) and the after-commit hooks. The handlers are in
//! [`create`], [`update`], [`delete`] and [`restore`]; [`target`] holds what PATCH, DELETE
//! and restore share, [`after`] what the rules ask of the row an update leaves; [`batch`] runs creates, updates and deletes in one request and one
//! transaction. [`Plan::new`] decides whether a write runs in a transaction, and of which kind.

pub(crate) mod after;
pub(crate) mod batch;
pub(crate) mod create;
pub(crate) mod delete;
pub(crate) mod members;
pub(crate) mod restore;
pub(crate) mod target;
pub(crate) mod update;

use super::request::{arg_json, key_cond, Caller};
use super::shared::{Author, Shared, Touch, Touched};
use super::view::View;
use super::Resource;
use crate::crud::conditional;
use crate::crud::hooks::HookCtx;
use crate::crud::idempotency::{self, Answer, IdemKey};
use crate::crud::options::Operation;
use crate::crud::rows::reload;
use crate::db::tx::{self, TxMode};
use crate::db::Conn;
use crate::error::Error;
use crate::state::ApiState;
use actix_web::{HttpRequest, HttpResponse};
use std::sync::Arc;

/// What an `Idempotency-Key` asks of a write before it runs.
pub(crate) enum KeyCheck {
    /// The request carries no key.
    Absent,
    /// A key not seen before, claimed by this process while the request runs.
    Claimed {
        /// The key.
        key: IdemKey,
        /// This process's claim on it, released when the value is dropped.
        _claim: idempotency::Claim,
    },
    /// A retry of a request that has finished: its stored answer.
    Replay(HttpResponse),
}

impl KeyCheck {
    /// Reads the request's key: a retry gets the stored answer, a key in flight in this
    /// process is 409, a new key is claimed.
    ///
    /// # Errors
    ///
    /// A malformed key (400), a key reused with another request (422), a key in flight (409),
    /// database errors.
    pub(crate) async fn of<R: Resource>(
        shared: &Shared<R>,
        st: &ApiState,
        req: &HttpRequest,
        body: &[u8],
        who: &Caller,
    ) -> Result<KeyCheck, Error> {
        let Some(key) = IdemKey::from_request(req, body, who.user_id())? else {
            return Ok(KeyCheck::Absent);
        };
        let _claim = shared.in_flight.claim(&key)?;
        let mut conn = st.db.get().await?;
        if let Some(stored) = idempotency::lookup(&mut conn, &key).await? {
            return stored.replay(&key).map(KeyCheck::Replay);
        }
        Ok(KeyCheck::Claimed { key, _claim })
    }

    /// The claimed key, if any.
    pub(crate) fn key(&self) -> Option<&IdemKey> {
        match self {
            KeyCheck::Claimed { key, .. } => Some(key),
            KeyCheck::Absent | KeyCheck::Replay(_) => None,
        }
    }
}

/// How a write runs: its operation, whether it needs a transaction (a plain write stays one
/// statement) and of which kind, and the key its answer is stored under. Made by
/// [`Plan::new`], the one place that decides the transaction.
pub(crate) struct Plan<'k> {
    /// The operation.
    op: Operation,
    /// Whether the write runs in a transaction.
    in_tx: bool,
    /// The transaction's kind, when `in_tx`.
    mode: TxMode,
    /// The idempotency key, claimed in the transaction before the body runs.
    key: Option<&'k IdemKey>,
}

/// What a write does, besides its operation and key, that decides its transaction.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Needs {
    /// Many items in one request: a batch writes all of them or none.
    pub(crate) batch: bool,
    /// An `If-Match` (on any item): the row is read and judged before it is written.
    pub(crate) if_match: bool,
    /// A create rule, judged on the stored row (`relations::rules::check_created`).
    pub(crate) create_rule: bool,
    /// Rules judged on the row an update leaves ([`after::After`]).
    pub(crate) updated_rule: bool,
    /// Members a part took out of an update's body, written after the update in its
    /// transaction (a file list's edits).
    pub(crate) part_members: bool,
}

impl<'k> Plan<'k> {
    /// The plan of a write of `op` on `shared`'s resource, with the idempotency key `key`.
    ///
    /// It runs in a transaction when it is a batch, carries a key, an `If-Match`, a create
    /// rule, rules on the updated row or an edit of a list of files, has hooks of `op` that run inside it ([`Hooks::wrap`](crate::crud::hooks::Hooks::wrap)), or
    /// addresses its item by a key other than the id (counted first, so that it never writes
    /// several rows). The transaction is serialized when a precondition or an update hook
    /// judges the row as read (`If-Match`, `serialized_update` for PATCH and restore).
    pub(crate) fn new<R: Resource>(
        shared: &Shared<R>,
        op: Operation,
        key: Option<&'k IdemKey>,
        needs: Needs,
    ) -> Plan<'k> {
        let hooks = &shared.hooks;
        let updates = matches!(op, Operation::Patch | Operation::Restore);
        let addressed = updates || op == Operation::Delete;
        // A write of a resource with a feed records its events in its own transaction.
        let in_tx = needs.batch
            || records(shared)
            || key.is_some()
            || needs.if_match
            || needs.create_rule
            || needs.updated_rule
            || needs.part_members
            || hooks.wrap(op)
            || (addressed && target::by_other_key(shared));
        let serialized = needs.if_match || (updates && hooks.serialized_update);
        Plan {
            op,
            in_tx,
            mode: if serialized {
                TxMode::Serialized
            } else {
                TxMode::Write
            },
            key,
        }
    }
}

/// What the body of a write changed, for [`run`] to finish.
pub(crate) enum Change<R> {
    /// A created or updated row; the answer carries the status and location.
    Stored(R, Answer),
    /// The rows a batch wrote, each with its after-write hooks already run (the body runs
    /// them item by item, so each sees the batch as far as it went); the answer carries the
    /// status (204 for deletions: no body).
    Batch {
        /// The created or updated rows, in the order of the request's items.
        rows: Vec<R>,
        /// The keys of the deleted rows, in order (when the rows were read: when a part
        /// records writes).
        deleted: Vec<String>,
        /// The after-commit hooks' copies of deleted rows.
        committed: Vec<Arc<R>>,
        /// Status of the answer.
        answer: Answer,
    },
    /// A deletion: the row read before it (when a hook or `If-Match` needed it) and the
    /// after-commit hooks' copy of it.
    Deleted {
        /// The deleted row, for the after-delete hooks.
        row: Option<R>,
        /// The row for the after-commit hooks, when there are any.
        committed: Option<Arc<R>>,
    },
}

/// How a write ended.
pub(crate) enum Ended {
    /// The write's answer, after the commit and the after-commit hooks.
    Done(Answer),
    /// The stored answer of the request that claimed the same idempotency key first.
    Replay(HttpResponse),
}

impl Ended {
    /// The response: the answer, or the replayed one.
    pub(crate) fn into_response(self) -> HttpResponse {
        match self {
            Ended::Done(answer) => answer.to_response(false),
            Ended::Replay(res) => res,
        }
    }
}

/// Runs a write: on one connection, begins the transaction (when `plan.in_tx`), claims the
/// idempotency key, runs `body`, then the after-write hooks, makes (and with a key stores)
/// the answer, ends the transaction, names a SQLite constraint failure, and runs the
/// after-commit hooks once the connection is back in the pool.
///
/// # Errors
///
/// The body's, the hooks' and the database's errors; 412 when a conditional write lost a race.
pub(crate) async fn run<R: Resource>(
    shared: &Shared<R>,
    st: &ApiState,
    req: &HttpRequest,
    ctx: &HookCtx,
    plan: Plan<'_>,
    body: impl AsyncFnOnce(&mut Conn) -> Result<Change<R>, Error>,
) -> Result<Ended, Error> {
    let mut conn = st.db.get().await?;
    if plan.in_tx {
        tx::begin(&mut conn, plan.mode).await?;
    }
    let mut lost_claim = false;
    let outcome = match claim(&mut conn, st, plan.key).await {
        Ok(true) => match body(&mut conn).await {
            Ok(change) => {
                let touched = records(shared).then(|| touched(plan.op, &change));
                let settled = settle(shared, st, &mut conn, ctx, plan.op, change, plan.key).await;
                match (settled, touched) {
                    (Ok(w), Some(t)) => {
                        let by = Author {
                            user: ctx.user.as_ref().map(|u| u.id),
                            req: Some(req),
                        };
                        record(shared, &mut conn, &t, &by).await.map(|()| w)
                    }
                    (settled, _) => settled,
                }
            }
            Err(e) => Err(e),
        },
        Ok(false) => {
            lost_claim = true;
            Err(claim_lost())
        }
        Err(e) => Err(e),
    };
    let ended = end(&mut conn, plan.in_tx, plan.key, outcome, lost_claim).await;
    let written = match named_constraint(shared, req, &mut conn, plan.op, ended).await? {
        Ending::Written(w) => w,
        Ending::Replay(res) => return Ok(Ended::Replay(res)),
    };
    drop(conn);
    // Committed: the parts that recorded the write hear of it (a feed wakes its delivery).
    if records(shared) {
        for part in shared.parts.iter().filter(|p| p.records()) {
            part.committed(st);
        }
    }
    Ok(Ended::Done(written.finish(shared, st, ctx, plan.op).await?))
}

/// Whether a part of the blueprint records the rows its writes touch (a feed), so that
/// deletions read the keys of what they delete.
pub(crate) fn records<R: Resource>(shared: &Shared<R>) -> bool {
    shared.parts.record()
}

/// Records the rows a write touched, and who wrote them, through each part that records
/// writes, in its transaction.
async fn record<R: Resource>(
    shared: &Shared<R>,
    conn: &mut Conn,
    touched: &Touched,
    by: &Author<'_>,
) -> Result<(), Error> {
    for part in shared.parts.iter().filter(|p| p.records()) {
        part.record(conn, touched, by).await?;
    }
    Ok(())
}

/// The rows a write's change touched: each created, updated or restored row's key, and each
/// deleted row's.
fn touched<R: Resource>(op: Operation, change: &Change<R>) -> Touched {
    let written = match op {
        Operation::Post => Touch::Created,
        Operation::Restore => Touch::Restored,
        _ => Touch::Updated,
    };
    let key = |row: &R| row.key_of(R::ID_FIELD);
    match change {
        Change::Stored(row, _) => key(row).map(|k| (written, k)).into_iter().collect(),
        Change::Deleted { row, .. } => row
            .as_ref()
            .and_then(key)
            .map(|k| (Touch::Deleted, k))
            .into_iter()
            .collect(),
        Change::Batch { rows, deleted, .. } => rows
            .iter()
            .filter_map(|r| key(r).map(|k| (written, k)))
            .chain(deleted.iter().map(|k| (Touch::Deleted, k.clone())))
            .collect(),
    }
}

/// Claims `key` in the write's transaction: false when another request stored it first.
async fn claim(conn: &mut Conn, st: &ApiState, key: Option<&IdemKey>) -> Result<bool, Error> {
    match key {
        Some(k) => idempotency::claim(conn, k, st.config.http.idempotency_key_ttl).await,
        None => Ok(true),
    }
}

/// The error that abandons a transaction whose idempotency claim was lost.
fn claim_lost() -> Error {
    Error::Conflict("idempotency key taken".into())
}

/// After the body: the after-write hooks on the written (or deleted) row, then the answer.
async fn settle<R: Resource>(
    shared: &Shared<R>,
    st: &ApiState,
    conn: &mut Conn,
    ctx: &HookCtx,
    op: Operation,
    change: Change<R>,
    key: Option<&IdemKey>,
) -> Result<Written<R>, Error> {
    match change {
        Change::Stored(item, answer) => {
            shared.hooks.after_write(conn, ctx, &item).await?;
            written(shared, ctx, conn, op, item, answer, key).await
        }
        Change::Deleted { row, committed } => {
            if let Some(row) = &row {
                shared.hooks.after_write(conn, ctx, row).await?;
            }
            Ok(Written::Answered {
                answer: Answer::new(204, None),
                committed: committed.into_iter().collect(),
            })
        }
        Change::Batch {
            rows,
            mut committed,
            mut answer,
            ..
        } => {
            if shared.hooks.has_after_commit() {
                if key.is_none() && answer.status != 204 {
                    // As for one row: the hooks see the rows, then the answer is made from them.
                    let rows = rows.into_iter().map(Arc::new).collect();
                    return Ok(Written::DeferredBatch { answer, rows });
                }
                for row in &rows {
                    committed.push(Arc::new(reload(conn, row).await?));
                }
            }
            // A body made already (an import's count) is kept: the rows are not rendered.
            if answer.status != 204 && answer.body.is_empty() {
                let (etags, bodies) = View::new(shared, op, ctx.user.as_ref())
                    .represent_all(conn, &st.db, rows)
                    .await?;
                answer.body = batch_body(&bodies, &etags)?;
            }
            if let Some(k) = key {
                idempotency::complete(conn, k, &answer).await?;
            }
            Ok(Written::Answered { answer, committed })
        }
    }
}

/// The answer of a batch: `{"data": [items], "etags": [their tags]}`, in the items' order.
fn batch_body(bodies: &[Vec<u8>], etags: &[String]) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(
        bodies.iter().map(|b| b.len() + 1).sum::<usize>() + 48 * etags.len() + 24,
    );
    out.extend_from_slice(b"{\"data\":[");
    for (i, body) in bodies.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(body);
    }
    out.extend_from_slice(b"],\"etags\":");
    serde_json::to_writer(&mut out, etags)
        .map_err(|e| Error::Internal(format!("serializing a batch answer: {e}")))?;
    out.push(b'}');
    Ok(out)
}

/// What a write's transaction produced.
pub(crate) enum Written<R> {
    /// Answered inside the transaction; `committed` holds the after-commit hooks' copies of
    /// the rows (none when there are no such hooks).
    Answered {
        /// The whole answer.
        answer: Answer,
        /// The rows for the after-commit hooks.
        committed: Vec<Arc<R>>,
    },
    /// To be answered after the after-commit hooks, from the row they saw (no second read).
    Deferred {
        /// Status and location; body and tag are made from `row`.
        answer: Answer,
        /// The row the write returned.
        row: Arc<R>,
    },
    /// [`Written::Deferred`] for the rows of a batch.
    DeferredBatch {
        /// Status; the body is made from `rows`.
        answer: Answer,
        /// The rows the batch wrote, in the order of its items.
        rows: Vec<Arc<R>>,
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
async fn written<R: Resource>(
    shared: &Shared<R>,
    ctx: &HookCtx,
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
        vec![Arc::new(reload(conn, &item).await?)]
    } else {
        Vec::new()
    };
    // Rendered for the caller (the hooks' context: the API's database, the caller's account).
    let (etag, body) = View::new(shared, op, ctx.user.as_ref())
        .represent(conn, &ctx.db, item, None)
        .await?;
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
    async fn finish(
        self,
        shared: &Shared<R>,
        st: &ApiState,
        ctx: &HookCtx,
        op: Operation,
    ) -> Result<Answer, Error> {
        let (mut answer, row) = match self {
            Written::Answered { answer, committed } => {
                for row in committed {
                    shared.hooks.after_commit(ctx, row).await;
                }
                return Ok(answer);
            }
            Written::Deferred { answer, row } => (answer, row),
            Written::DeferredBatch { answer, rows } => {
                return finish_batch(shared, st, ctx, op, answer, rows).await;
            }
        };
        shared.hooks.after_commit(ctx, row.clone()).await;
        let item = match Arc::try_unwrap(row) {
            Ok(item) => item,
            Err(row) => reload(&mut st.db.get().await?, row.as_ref()).await?,
        };
        let view = View::new(shared, op, ctx.user.as_ref());
        let (etag, body) = if view.is_generated() {
            view.tagged(item)?
        } else {
            let conn = &mut st.db.get().await?;
            view.represent(conn, &st.db, item, None).await?
        };
        answer.body = body;
        answer.etag = Some(etag);
        Ok(answer)
    }
}

/// Runs the after-commit hooks on each row of a batch, then makes its answer from the rows the
/// hooks saw (a row is read again only when a hook kept it).
async fn finish_batch<R: Resource>(
    shared: &Shared<R>,
    st: &ApiState,
    ctx: &HookCtx,
    op: Operation,
    mut answer: Answer,
    rows: Vec<Arc<R>>,
) -> Result<Answer, Error> {
    for row in &rows {
        shared.hooks.after_commit(ctx, row.clone()).await;
    }
    if !answer.body.is_empty() {
        return Ok(answer);
    }
    let mut items = Vec::with_capacity(rows.len());
    let mut conn = None;
    for row in rows {
        items.push(match Arc::try_unwrap(row) {
            Ok(item) => item,
            Err(row) => {
                let conn = match &mut conn {
                    Some(c) => c,
                    None => conn.insert(st.db.get().await?),
                };
                reload(conn, row.as_ref()).await?
            }
        });
    }
    let view = View::new(shared, op, ctx.user.as_ref());
    let (etags, bodies) = if view.is_generated() {
        items
            .into_iter()
            .map(|item| view.tagged(item))
            .collect::<Result<_, _>>()?
    } else {
        let conn = match &mut conn {
            Some(c) => c,
            None => conn.insert(st.db.get().await?),
        };
        view.represent_all(conn, &st.db, items).await?
    };
    answer.body = batch_body(&bodies, &etags)?;
    Ok(answer)
}

/// How a write's transaction ended: with what it produced, or with the replay of the request
/// that stored the same idempotency key first.
enum Ending<R> {
    Written(Written<R>),
    Replay(HttpResponse),
}

/// Ends a write's transaction. A lost idempotency claim (another request stored the key
/// first) replays that request's answer; a lost race of two conditional writes is 412.
async fn end<R: Resource>(
    conn: &mut Conn,
    in_tx: bool,
    key: Option<&IdemKey>,
    outcome: Result<Written<R>, Error>,
    lost_claim: bool,
) -> Result<Ending<R>, Error> {
    let outcome = if in_tx {
        tx::finish(conn, outcome).await
    } else {
        outcome
    };
    match outcome {
        Ok(w) => Ok(Ending::Written(w)),
        Err(_) if lost_claim => match key {
            Some(k) => idempotency::after_lost_claim(conn, k).await.map(Ending::Replay),
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

/// A write's result, with a SQLite constraint failure completed with the table (and field)
/// the database did not name (see [`crate::error::constraint`]).
async fn named_constraint<R: Resource, T>(
    shared: &Shared<R>,
    req: &HttpRequest,
    conn: &mut Conn,
    op: Operation,
    ended: Result<T, Error>,
) -> Result<T, Error> {
    let e = match ended {
        Ok(t) => return Ok(t),
        Err(e) => e,
    };
    let key = (op != Operation::Post)
        .then(|| key_cond(shared, req).ok())
        .flatten()
        .and_then(|c| match arg_json(&c.arg) {
            serde_json::Value::String(s) => Some(s),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
        .map(|k| (shared.res_id.name, k));
    let write = crate::db::constraint::Write {
        table: R::sql_table(),
        delete: op == Operation::Delete,
        key,
    };
    // A batch's refused item: name the constraint of the one item that failed in the database.
    if let Error::Items(mut items) = e {
        if let [item] = items.as_mut_slice() {
            let inner = std::mem::replace(&mut item.error, Error::Internal(String::new()));
            item.error = crate::db::constraint::name_on_sqlite(conn, write, inner).await;
        }
        return Err(Error::Items(items));
    }
    Err(crate::db::constraint::name_on_sqlite(conn, write, e).await)
}

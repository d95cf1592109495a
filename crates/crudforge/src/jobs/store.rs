//! The jobs' statements: enqueue, claim with a lease, renew it, end a claim (done, retried,
//! failed), the schedules' ticks, and what the command line lists, retries and cancels.

use super::schema::{crudforge_jobs as jobs, crudforge_schedules as schedules};
use crate::db::{Conn, Database};
use crate::error::Error;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Text};

/// What a job row says of its progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Waiting until it is due, or for a worker.
    Queued,
    /// Claimed by a worker whose lease has not run out.
    Running,
    /// Its handler succeeded.
    Done,
    /// Its handler failed on the last attempt allowed, or it could not run at all.
    Failed,
    /// Cancelled before it ran (`jobs cancel`).
    Cancelled,
}

impl JobState {
    /// The stored word.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    /// The state a stored word names.
    pub fn parse(word: &str) -> Option<JobState> {
        [
            JobState::Queued,
            JobState::Running,
            JobState::Done,
            JobState::Failed,
            JobState::Cancelled,
        ]
        .into_iter()
        .find(|s| s.as_str() == word)
    }
}

/// A new job's row.
pub(crate) struct NewJob<'a> {
    pub(crate) kind: &'a str,
    pub(crate) payload: &'a str,
    pub(crate) max_attempts: u32,
    pub(crate) run_at: i64,
    pub(crate) schedule: Option<&'a str>,
}

/// Inserts `job` on `conn` (in the transaction it is in, if any); its number.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn insert(conn: &mut Conn, job: &NewJob<'_>) -> Result<i64, Error> {
    let now = now_micros();
    let attempts = i32::try_from(job.max_attempts).unwrap_or(i32::MAX);
    let id = crate::with_conn!(conn, |c| {
        let q = diesel::insert_into(jobs::table)
            .values((
                jobs::kind.eq(job.kind),
                jobs::payload.eq(job.payload),
                jobs::state.eq(JobState::Queued.as_str()),
                jobs::max_attempts.eq(attempts),
                jobs::run_at.eq(job.run_at),
                jobs::schedule.eq(job.schedule),
                jobs::created_at.eq(now),
            ))
            .returning(jobs::id);
        diesel_async::RunQueryDsl::get_result::<i64>(q, c).await
    })?;
    Ok(id)
}

/// A claimed job: what its worker needs to run it and to end its claim.
#[derive(Debug, Clone, QueryableByName)]
pub(crate) struct Claimed {
    #[diesel(sql_type = BigInt)]
    pub(crate) id: i64,
    #[diesel(sql_type = Text)]
    pub(crate) kind: String,
    #[diesel(sql_type = Text)]
    pub(crate) payload: String,
    /// This claim's number: the fence of its outcome.
    #[diesel(sql_type = Integer)]
    pub(crate) attempts: i32,
    #[diesel(sql_type = Integer)]
    pub(crate) max_attempts: i32,
}

/// Claims at most `n` jobs that are due (queued with `run_at` past) or whose lease ran out,
/// oldest first, each leased until `lease_until`. On PostgreSQL the rows are taken with `FOR
/// UPDATE SKIP LOCKED`, so instances claiming at once take different jobs; on SQLite the one
/// statement runs under the database's single writer.
///
/// The two kinds of due job are looked up apart, each through the index on `(state, run_at)`
/// in its order and limited to `n`, and the oldest `n` of both taken: one condition with `OR`
/// made both databases read and sort every due job at each claim, so a backlog's claims cost
/// its length each.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn claim(
    db: &Database,
    n: u32,
    now: i64,
    lease_until: i64,
) -> Result<Vec<Claimed>, Error> {
    let mut conn = db.get().await?;
    let claimed = crate::__by_backend!(conn,
        |c| sqlite => {
            let q = diesel::sql_query(
                "UPDATE crudforge_jobs SET state = 'running', attempts = attempts + 1, \
                 lease_until = ?1 WHERE id IN (SELECT id FROM ( \
                 SELECT * FROM (SELECT id, run_at FROM crudforge_jobs \
                 WHERE state = 'queued' AND run_at <= ?2 ORDER BY run_at, id LIMIT ?3) \
                 UNION ALL \
                 SELECT * FROM (SELECT id, run_at FROM crudforge_jobs \
                 WHERE state = 'running' AND lease_until < ?2 ORDER BY run_at, id LIMIT ?3) \
                 ) ORDER BY run_at, id LIMIT ?3) \
                 RETURNING id, kind, payload, attempts, max_attempts",
            )
            .bind::<BigInt, _>(lease_until)
            .bind::<BigInt, _>(now)
            .bind::<BigInt, _>(i64::from(n));
            diesel_async::RunQueryDsl::load::<Claimed>(q, c).await
        },
        postgres => {
            let q = diesel::sql_query(
                "WITH queued AS (SELECT id, run_at FROM crudforge_jobs \
                 WHERE state = 'queued' AND run_at <= $2 ORDER BY run_at, id LIMIT $3 \
                 FOR UPDATE SKIP LOCKED), \
                 lapsed AS (SELECT id, run_at FROM crudforge_jobs \
                 WHERE state = 'running' AND lease_until < $2 ORDER BY run_at, id LIMIT $3 \
                 FOR UPDATE SKIP LOCKED), \
                 due AS (SELECT id FROM (SELECT * FROM queued UNION ALL SELECT * FROM lapsed) d \
                 ORDER BY run_at, id LIMIT $3) \
                 UPDATE crudforge_jobs SET state = 'running', attempts = attempts + 1, \
                 lease_until = $1 WHERE id IN (SELECT id FROM due) \
                 RETURNING id, kind, payload, attempts, max_attempts",
            )
            .bind::<BigInt, _>(lease_until)
            .bind::<BigInt, _>(now)
            .bind::<BigInt, _>(i64::from(n));
            diesel_async::RunQueryDsl::load::<Claimed>(q, c).await
        }
    )?;
    Ok(claimed)
}

/// The row of `job` while this claim of it holds (its state running, its attempts this
/// claim's): a worker whose lease was taken over changes nothing.
macro_rules! held {
    ($job:expr) => {
        jobs::table
            .filter(jobs::id.eq($job.id))
            .filter(jobs::attempts.eq($job.attempts))
            .filter(jobs::state.eq(JobState::Running.as_str()))
    };
}

/// Moves the lease of a running claim to `lease_until`; whether the claim still holds.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn renew(db: &Database, job: &Claimed, lease_until: i64) -> Result<bool, Error> {
    let mut conn = db.get().await?;
    let n = crate::with_conn!(conn, |c| {
        let q = diesel::update(held!(job)).set(jobs::lease_until.eq(lease_until));
        diesel_async::RunQueryDsl::execute(q, c).await
    })?;
    Ok(n == 1)
}

/// How a claim ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The handler succeeded.
    Done,
    /// It failed and runs again at the given time.
    Retry { at: i64, error: String },
    /// It failed for good.
    Failed { error: String },
}

/// Ends a claim with `outcome`; whether the claim still held (a worker whose lease was taken
/// over records nothing).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn end(db: &Database, job: &Claimed, outcome: &Outcome) -> Result<bool, Error> {
    let now = now_micros();
    let mut conn = db.get().await?;
    let n = crate::with_conn!(conn, |c| {
        let target = held!(job);
        match outcome {
            Outcome::Done => {
                let q = diesel::update(target).set((
                    jobs::state.eq(JobState::Done.as_str()),
                    jobs::lease_until.eq(None::<i64>),
                    jobs::finished_at.eq(now),
                ));
                diesel_async::RunQueryDsl::execute(q, c).await
            }
            Outcome::Retry { at, error } => {
                let q = diesel::update(target).set((
                    jobs::state.eq(JobState::Queued.as_str()),
                    jobs::lease_until.eq(None::<i64>),
                    jobs::run_at.eq(*at),
                    jobs::last_error.eq(error.as_str()),
                ));
                diesel_async::RunQueryDsl::execute(q, c).await
            }
            Outcome::Failed { error } => {
                let q = diesel::update(target).set((
                    jobs::state.eq(JobState::Failed.as_str()),
                    jobs::lease_until.eq(None::<i64>),
                    jobs::last_error.eq(error.as_str()),
                    jobs::finished_at.eq(now),
                ));
                diesel_async::RunQueryDsl::execute(q, c).await
            }
        }
    })?;
    Ok(n == 1)
}

/// A job as the command line lists it.
#[derive(Debug, Clone, Queryable)]
pub struct JobRow {
    /// Its number.
    pub id: i64,
    /// Its handler's kind.
    pub kind: String,
    /// Its state's word (see [`JobState`]).
    pub state: String,
    /// Claims so far.
    pub attempts: i32,
    /// Claims allowed.
    pub max_attempts: i32,
    /// When it is (or was) due, microseconds since 1970.
    pub run_at: i64,
    /// The last failure's message.
    pub last_error: Option<String>,
    /// The schedule that made it.
    pub schedule: Option<String>,
}

/// The newest `limit` jobs, in `state` if given, newest first.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn list(
    db: &Database,
    state: Option<JobState>,
    limit: i64,
) -> Result<Vec<JobRow>, Error> {
    let rows = list_full(db, state, None, limit).await?;
    Ok(rows
        .into_iter()
        .map(|l| JobRow {
            id: l.id,
            kind: l.kind,
            state: l.state,
            attempts: l.attempts,
            max_attempts: l.max_attempts,
            run_at: l.run_at,
            last_error: l.last_error,
            schedule: l.schedule,
        })
        .collect())
}

/// A job as the administrators' HTTP API lists it: [`JobRow`] with its payload and times.
#[derive(Debug, Clone, Queryable)]
pub(crate) struct Listed {
    pub(crate) id: i64,
    pub(crate) kind: String,
    pub(crate) payload: String,
    pub(crate) state: String,
    pub(crate) attempts: i32,
    pub(crate) max_attempts: i32,
    pub(crate) run_at: i64,
    pub(crate) last_error: Option<String>,
    pub(crate) schedule: Option<String>,
    pub(crate) created_at: i64,
    pub(crate) finished_at: Option<i64>,
}

/// The newest `limit` jobs, in `state` and of `kind` if given, newest first, with their
/// payloads (the administrators' HTTP API).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn list_full(
    db: &Database,
    state: Option<JobState>,
    kind: Option<&str>,
    limit: i64,
) -> Result<Vec<Listed>, Error> {
    let mut conn = db.get().await?;
    let rows = crate::with_conn!(conn, |c| {
        let mut q = jobs::table
            .select((
                jobs::id,
                jobs::kind,
                jobs::payload,
                jobs::state,
                jobs::attempts,
                jobs::max_attempts,
                jobs::run_at,
                jobs::last_error,
                jobs::schedule,
                jobs::created_at,
                jobs::finished_at,
            ))
            .order(jobs::id.desc())
            .limit(limit)
            .into_boxed();
        if let Some(s) = state {
            q = q.filter(jobs::state.eq(s.as_str()));
        }
        if let Some(k) = kind {
            q = q.filter(jobs::kind.eq(k.to_owned()));
        }
        diesel_async::RunQueryDsl::load::<Listed>(q, c).await
    })?;
    Ok(rows)
}

/// The state word of job `id`, if there is one.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn state_of(db: &Database, id: i64) -> Result<Option<String>, Error> {
    let mut conn = db.get().await?;
    let state = crate::with_conn!(conn, |c| {
        let q = jobs::table.filter(jobs::id.eq(id)).select(jobs::state);
        diesel_async::RunQueryDsl::get_result::<String>(q, c)
            .await
            .optional()
    })?;
    Ok(state)
}

/// Every schedule's last tick, by name.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn ticks(db: &Database) -> Result<Vec<(String, i64)>, Error> {
    let mut conn = db.get().await?;
    let rows = crate::with_conn!(conn, |c| {
        let q = schedules::table.select((schedules::name, schedules::last_tick));
        diesel_async::RunQueryDsl::load::<(String, i64)>(q, c).await
    })?;
    Ok(rows)
}

/// Queues a failed or cancelled job again, due now, with its attempts counted afresh;
/// whether it was one.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn retry(db: &Database, id: i64) -> Result<bool, Error> {
    let now = now_micros();
    let mut conn = db.get().await?;
    let n = crate::with_conn!(conn, |c| {
        let q = diesel::update(
            jobs::table.filter(jobs::id.eq(id)).filter(
                jobs::state
                    .eq(JobState::Failed.as_str())
                    .or(jobs::state.eq(JobState::Cancelled.as_str())),
            ),
        )
        .set((
            jobs::state.eq(JobState::Queued.as_str()),
            jobs::attempts.eq(0),
            jobs::run_at.eq(now),
            jobs::finished_at.eq(None::<i64>),
        ));
        diesel_async::RunQueryDsl::execute(q, c).await
    })?;
    Ok(n == 1)
}

/// Cancels a queued job (one not yet claimed); whether it was one.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn cancel(db: &Database, id: i64) -> Result<bool, Error> {
    let now = now_micros();
    let mut conn = db.get().await?;
    let n = crate::with_conn!(conn, |c| {
        let q = diesel::update(
            jobs::table
                .filter(jobs::id.eq(id))
                .filter(jobs::state.eq(JobState::Queued.as_str())),
        )
        .set((
            jobs::state.eq(JobState::Cancelled.as_str()),
            jobs::finished_at.eq(now),
        ));
        diesel_async::RunQueryDsl::execute(q, c).await
    })?;
    Ok(n == 1)
}

/// Removes the jobs that ended (done, failed or cancelled) before `before`; how many.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn prune(db: &Database, before: i64) -> Result<u64, Error> {
    let mut conn = db.get().await?;
    let n = crate::with_conn!(conn, |c| {
        let q = diesel::delete(
            jobs::table
                .filter(jobs::finished_at.lt(before))
                .filter(jobs::state.ne(JobState::Queued.as_str()))
                .filter(jobs::state.ne(JobState::Running.as_str())),
        );
        diesel_async::RunQueryDsl::execute(q, c).await
    })?;
    Ok(n as u64)
}

/// The last tick of the schedule `name` taken by any instance, if it was ever seen.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn last_tick(db: &Database, name: &str) -> Result<Option<i64>, Error> {
    let mut conn = db.get().await?;
    let tick = crate::with_conn!(conn, |c| {
        let q = schedules::table
            .filter(schedules::name.eq(name))
            .select(schedules::last_tick);
        diesel_async::RunQueryDsl::get_result::<i64>(q, c)
            .await
            .optional()
    })?;
    Ok(tick)
}

/// Records a schedule seen for the first time, its last tick `tick` (an instance that
/// records it first wins; the others change nothing).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn first_seen(db: &Database, name: &str, tick: i64) -> Result<(), Error> {
    let mut conn = db.get().await?;
    crate::with_conn!(conn, |c| {
        let q = diesel::insert_into(schedules::table)
            .values((schedules::name.eq(name), schedules::last_tick.eq(tick)))
            .on_conflict_do_nothing();
        diesel_async::RunQueryDsl::execute(q, c).await
    })?;
    Ok(())
}

/// Takes the tick `tick` of schedule `name` whose last tick was `seen`, and enqueues its
/// job, in one transaction: the one instance whose update finds `seen` still there takes
/// it; the job's number, or `None` when another instance took the tick first.
///
/// # Errors
///
/// Database errors (nothing is taken).
pub(crate) async fn take_tick(
    db: &Database,
    name: &str,
    seen: i64,
    tick: i64,
    job: &NewJob<'_>,
) -> Result<Option<i64>, Error> {
    db.in_tx(async |conn| {
        let moved = crate::with_conn!(conn, |c| {
            let q = diesel::update(
                schedules::table
                    .filter(schedules::name.eq(name))
                    .filter(schedules::last_tick.eq(seen)),
            )
            .set(schedules::last_tick.eq(tick));
            diesel_async::RunQueryDsl::execute(q, c).await
        })?;
        if moved != 1 {
            return Ok(None);
        }
        insert(conn, job).await.map(Some)
    })
    .await
}

/// Now, in microseconds since 1970 (UTC): the jobs' clock.
pub(crate) fn now_micros() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

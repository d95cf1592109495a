//! Durable jobs (the `jobs` feature), one folder plugged into the core through the seam: work
//! to run later, kept in the application's own database and enqueued in the transaction of
//! the request that causes it; workers in every instance that claim due jobs with leases and
//! retry failures with backoff; schedules (cron expressions) whose ticks run once across
//! instances; and the server's own periodic work run as schedules. See
//! [jobs.md](https://github.com/crudforge/crudforge/blob/main/docs/jobs.md).
//!
//! | Module | Owns |
//! |---|---|
//! | `store` | the statements: enqueue, claim with a lease, renew, end a claim, schedules' ticks, list, retry, cancel, prune |
//! | `schedule` | when a schedule's ticks fall (cron in UTC, or every n seconds), the catch-up policy, the pass that takes a due tick |
//! | `worker` | one instance's workers: poll, claim, run with the lease renewed, backoff with jitter |
//! | `cli` | the command line's `jobs list`, `jobs retry`, `jobs cancel`, `jobs run`, `jobs run-schedule` |
//! | `http` | the administrators' HTTP API (`Api::jobs_api`): jobs listed, retried, cancelled; schedules listed and run now |
//! | `schema` | the jobs' tables, as Diesel sees them |
//!
//! This file holds what applications see: [`Job`] and [`enqueue`], [`JobCtx`], `Api::job`,
//! `Api::schedule`, `Api::run_due_jobs`, `Api::run_schedule`, `Api::schedules`,
//! `Api::jobs_api`, and the surface.

pub(crate) mod cli;
mod http;
mod schedule;
mod schema;
mod store;
mod worker;

#[allow(
    unused_imports,
    reason = "the mail flows' clock; a build without mail leaves it unused"
)]
pub(crate) use store::now_micros;
pub use store::{JobRow, JobState};
#[allow(
    unused_imports,
    reason = "mail keeps its turn to send with it; a build without mail leaves it unused"
)]
pub(crate) use worker::keep_until_ended;

use crate::api::{Api, Chore, Surface};
use crate::config::{Config, ConfigError};
use crate::db::{Conn, Database};
use crate::error::Error;
use crate::mount::MountError;
use crate::state::{ApiState, Extensions};
use futures_util::future::LocalBoxFuture;
use prometheus::{IntCounterVec, Opts};
use schedule::{Schedule, When};
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, LazyLock};
use worker::Refusal;

/// Attempts a job gets unless it asks for another number ([`Job::max_attempts`]).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;

/// The kinds of the jobs that run the server's own periodic work begin with this.
const CHORE_KIND: &str = "crudforge.";

/// A job to enqueue: a kind (the handler [`Api::job`] registered), a JSON payload, when it
/// is due and how many attempts it gets.
///
/// ```no_run
/// # async fn f(conn: &mut crudforge::db::Conn) -> crudforge::Result<()> {
/// use crudforge::jobs::Job;
/// // In an `after_create` hook: the job exists only if the write commits.
/// Job::new("welcome", &serde_json::json!({ "user": 42 }))?
///     .after(std::time::Duration::from_secs(60))
///     .enqueue(conn)
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Job {
    kind: String,
    payload: String,
    after: std::time::Duration,
    max_attempts: u32,
}

impl Job {
    /// A job of `kind` with `payload`, due now, with [`DEFAULT_MAX_ATTEMPTS`] attempts.
    ///
    /// # Errors
    ///
    /// The payload does not serialize to JSON (500).
    pub fn new(kind: &str, payload: &impl serde::Serialize) -> Result<Job, Error> {
        let payload = serde_json::to_string(payload)
            .map_err(|e| Error::Internal(format!("a job's payload: {e}")))?;
        Ok(Job {
            kind: kind.to_owned(),
            payload,
            after: std::time::Duration::ZERO,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
        })
    }

    /// Due `delay` after it is enqueued.
    #[must_use]
    pub fn after(mut self, delay: std::time::Duration) -> Job {
        self.after = delay;
        self
    }

    /// Fails for good after `n` attempts (at least one).
    #[must_use]
    pub fn max_attempts(mut self, n: u32) -> Job {
        self.max_attempts = n.max(1);
        self
    }

    /// Inserts the job on `conn`: in the transaction `conn` is in (a hook's), it exists only
    /// if that transaction commits. One `INSERT`. Its number.
    ///
    /// # Errors
    ///
    /// Database errors (the hook's write then rolls back with it).
    pub async fn enqueue(self, conn: &mut Conn) -> Result<i64, Error> {
        let delay = i64::try_from(self.after.as_micros()).unwrap_or(i64::MAX);
        store::insert(
            conn,
            &store::NewJob {
                kind: &self.kind,
                payload: &self.payload,
                max_attempts: self.max_attempts,
                run_at: store::now_micros().saturating_add(delay),
                schedule: None,
            },
        )
        .await
    }
}

/// Enqueues a job of `kind` with `payload`, due now (see [`Job`]); its number.
///
/// # Errors
///
/// The payload does not serialize, or a database error.
pub async fn enqueue(
    conn: &mut Conn,
    kind: &str,
    payload: &impl serde::Serialize,
) -> Result<i64, Error> {
    Job::new(kind, payload)?.enqueue(conn).await
}

/// What a job's handler knows of the job and the API it runs in.
#[derive(Clone)]
pub struct JobCtx {
    id: i64,
    attempt: u32,
    state: Arc<ApiState>,
}

impl std::fmt::Debug for JobCtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobCtx")
            .field("id", &self.id)
            .field("attempt", &self.attempt)
            .finish_non_exhaustive()
    }
}

impl JobCtx {
    /// The job's number.
    pub fn id(&self) -> i64 {
        self.id
    }

    /// This attempt's number, from 1: a handler that did part of its work on an earlier
    /// attempt sees more than 1 (jobs run at least once, and again after a failure or a lost
    /// worker, so a handler does what it can to be idempotent).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The API's state: configuration, database, tokens.
    pub fn state(&self) -> &ApiState {
        &self.state
    }

    /// The database.
    pub fn db(&self) -> &Database {
        &self.state.db
    }
}

/// A schedule of an API, as [`Api::schedules`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleInfo {
    /// Its name (the server's own begin with `crudforge.`).
    pub name: String,
    /// When its ticks fall: the cron expression (`0 3 * * *`), or `every N s`.
    pub when: String,
    /// The kind of the job each tick enqueues.
    pub kind: String,
    /// The last tick taken by any instance, microseconds since 1970 (UTC); `None` while no
    /// instance has seen the schedule.
    pub last_tick: Option<i64>,
}

/// The schedules `all` with their last ticks, as the database keeps them.
async fn list_schedules(db: &Database, all: &[Schedule]) -> Result<Vec<ScheduleInfo>, Error> {
    let ticks: HashMap<String, i64> = store::ticks(db).await?.into_iter().collect();
    Ok(all
        .iter()
        .map(|s| ScheduleInfo {
            name: s.name.clone(),
            when: s.when.describe(),
            kind: s.kind.clone(),
            last_tick: ticks.get(&s.name).copied(),
        })
        .collect())
}

/// Enqueues the job of the schedule `name` among `all` now; the job's number.
async fn run_schedule_in(db: &Database, all: &[Schedule], name: &str) -> Result<i64, Error> {
    let schedule = all
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| Error::NotFound(format!("No schedule is named {name:?}.").into()))?;
    schedule.run_now(db).await
}

/// How a registered handler is called: with the job's context and its payload's text.
type Handler =
    Arc<dyn Fn(JobCtx, &str) -> LocalBoxFuture<'static, Result<(), Refusal>> + Send + Sync>;

/// The handlers and schedules an application registered on its `Api`.
#[derive(Clone, Default)]
pub(crate) struct Registry {
    handlers: HashMap<String, Handler>,
    schedules: Vec<Schedule>,
}

impl Registry {
    /// The schedules of this API: the application's, and one per chore of the server's
    /// (`crudforge.<chore>`, every chore's interval).
    fn schedules(&self, api: &Api) -> Vec<Schedule> {
        let mut out = self.schedules.clone();
        out.extend(api.chores().into_iter().map(|c| {
            let name = format!("{CHORE_KIND}{}", c.name);
            Schedule {
                kind: name.clone(),
                name,
                when: When::Every(c.every.as_secs().max(1)),
                payload: "null".to_owned(),
                max_attempts: 1,
                run_when_new: true,
            }
        }));
        out
    }

    /// The work of the claimed `job`: its handler's, a surface's (a mail to send), a chore's,
    /// or a refusal.
    fn start<'a>(
        &'a self,
        api: &'a Api,
        job: &'a store::Claimed,
    ) -> LocalBoxFuture<'a, Result<(), Refusal>> {
        if let Some(handler) = self.handlers.get(&job.kind) {
            let ctx = JobCtx {
                id: job.id,
                attempt: u32::try_from(job.attempts).unwrap_or(1),
                state: api.state().clone(),
            };
            return handler(ctx, &job.payload);
        }
        let chore = job
            .kind
            .strip_prefix(CHORE_KIND)
            .and_then(|name| api.chores().into_iter().find(|c| c.name == name));
        if let Some(work) = crate::SURFACES
            .iter()
            .find_map(|s| s.job(api, &job.kind, &job.payload))
        {
            return Box::pin(async move { work.await.map_err(Refusal::from) });
        }
        match chore {
            Some(chore) => Box::pin(async move {
                let n = (chore.run)(api).await?;
                if n > 0 {
                    tracing::info!(target: "crudforge::jobs", chore = chore.name, rows = n, "removed old rows");
                }
                Ok(())
            }),
            None => {
                let error = format!("no handler for the kind {:?} is registered", job.kind);
                Box::pin(async move { Err(Refusal::Permanent(error)) })
            }
        }
    }
}

impl Api {
    /// Registers `handler` for the jobs of `kind`: a worker calls it with the job's context
    /// and its payload, read as a `T`. An `Err` is a failure: the job runs again after a
    /// backoff until its attempts are spent, then is kept as failed with the error. A payload
    /// that does not read as a `T` fails the job at once. Jobs run at least once: a worker
    /// that dies mid-job leaves it to run again when its lease runs out.
    ///
    /// ```no_run
    /// # fn f(api: crudforge::Api) -> crudforge::Api {
    /// #[derive(serde::Deserialize)]
    /// struct Welcome { user: i64 }
    /// api.job("welcome", |ctx, w: Welcome| async move {
    ///     tracing::info!(user = w.user, attempt = ctx.attempt(), "welcoming");
    ///     Ok(())
    /// })
    /// # }
    /// ```
    #[must_use]
    pub fn job<T, F, Fut>(mut self, kind: &str, handler: F) -> Self
    where
        T: serde::de::DeserializeOwned + 'static,
        F: Fn(JobCtx, T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), Error>> + 'static,
    {
        let handler = Arc::new(handler);
        let call: Handler = Arc::new(move |ctx, payload| {
            let value = serde_json::from_str::<T>(payload);
            let handler = Arc::clone(&handler);
            Box::pin(async move {
                let value = value.map_err(|e| {
                    Refusal::Permanent(worker::clip(&format!(
                        "the payload does not fit the handler: {e}"
                    )))
                })?;
                handler(ctx, value).await.map_err(Refusal::from)
            })
        });
        let mut registry = self.ext.get::<Registry>().cloned().unwrap_or_default();
        registry.handlers.insert(kind.to_owned(), call);
        self.ext.insert(registry);
        self
    }

    /// Adds the schedule `name`: at each tick of the cron expression `cron` (five fields,
    /// minute to day of week, or six with seconds first; in UTC), a job of `kind` with
    /// `payload` is enqueued, once across all instances. Ticks missed while no instance ran
    /// are run once, not once each; a new schedule starts at its next tick.
    ///
    /// # Errors
    ///
    /// The expression is malformed, or `name` is taken (by another schedule, or one of the
    /// server's own beginning with `crudforge.`).
    pub fn schedule(
        mut self,
        name: &str,
        cron: &str,
        kind: &str,
        payload: &impl serde::Serialize,
    ) -> Result<Self, MountError> {
        let when = When::cron(cron)
            .map_err(|e| MountError(format!("schedule {name:?}: the cron expression: {e}")))?;
        let payload = serde_json::to_string(payload)
            .map_err(|e| MountError(format!("schedule {name:?}: the payload: {e}")))?;
        let mut registry = self.ext.get::<Registry>().cloned().unwrap_or_default();
        if name.starts_with(CHORE_KIND) || registry.schedules.iter().any(|s| s.name == name) {
            return Err(MountError(format!("schedule {name:?}: the name is taken")));
        }
        registry.schedules.push(Schedule {
            name: name.to_owned(),
            when,
            kind: kind.to_owned(),
            payload,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            run_when_new: false,
        });
        self.ext.insert(registry);
        Ok(self)
    }

    /// Runs now, in this task, every job that is due and the schedules' due ticks (the
    /// server's own periodic work among them); how many jobs ran. A serving API runs them by
    /// itself; this is for commands, scripts and tests.
    ///
    /// # Errors
    ///
    /// Database errors while claiming (a job's own failure is recorded on it, not returned).
    pub async fn run_due_jobs(&self) -> Result<usize, Error> {
        worker::run_due(self, &self.registry()).await
    }

    /// Removes the jobs that ended more than `JOBS_KEEP_SECONDS` ago; how many. A serving API
    /// runs it hourly, as the schedule `crudforge.prune_jobs`.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn prune_jobs(&self) -> Result<u64, Error> {
        let keep = i64::try_from(self.config().ops.jobs_keep_seconds)
            .unwrap_or(i64::MAX / 1_000_000)
            .saturating_mul(1_000_000);
        store::prune(self.db(), store::now_micros().saturating_sub(keep)).await
    }

    /// The newest `limit` jobs, in `state` if given, newest first (what `jobs list` prints).
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn jobs(&self, state: Option<JobState>, limit: u32) -> Result<Vec<JobRow>, Error> {
        store::list(self.db(), state, i64::from(limit)).await
    }

    /// Enqueues the job of the schedule `name` now, as its ticks do (same kind, payload and
    /// attempts, the schedule's name on the row), without touching the schedule's own ticks:
    /// its next tick still comes when it falls. The job's number; a worker runs it like any
    /// other (or [`Api::run_due_jobs`]).
    ///
    /// # Errors
    ///
    /// 404 when no schedule of this API (the application's, or the server's own,
    /// `crudforge.<chore>`) is named `name`; database errors.
    pub async fn run_schedule(&self, name: &str) -> Result<i64, Error> {
        run_schedule_in(self.db(), &self.registry().schedules(self), name).await
    }

    /// Every schedule of this API (the application's, then the server's own): name, when its
    /// ticks fall, the kind of its job, and its last tick.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn schedules(&self) -> Result<Vec<ScheduleInfo>, Error> {
        list_schedules(self.db(), &self.registry().schedules(self)).await
    }

    /// Mounts the administrators' HTTP API for jobs at `path` (for example `"/api/jobs/"`):
    /// `GET {path}` lists the jobs (`state`, `kind` and `limit` in the query), `POST
    /// {path}{id}/retry/` and `POST {path}{id}/cancel/` retry or cancel one, `GET
    /// {path}schedules/` lists the schedules and `POST {path}schedules/{name}/run/` runs one
    /// now. Every route answers 401 without a token and 403 to a user who is not an
    /// administrator; the operations are in the description (tag `Jobs`), and the admin page
    /// shows its Jobs view when they are. See [jobs.md](https://github.com/crudforge/crudforge/blob/main/docs/jobs.md).
    #[must_use]
    pub fn jobs_api(mut self, path: &str) -> Self {
        self.ext
            .insert(http::Mounted(crate::crud::route::surface_prefix(path)));
        self.routes_changed();
        self
    }

    /// The jobs registered on this API (an empty registry when none).
    fn registry(&self) -> Registry {
        self.ext.get::<Registry>().cloned().unwrap_or_default()
    }
}

/// How often finished jobs are pruned.
const PRUNE_JOBS_EVERY: std::time::Duration = std::time::Duration::from_secs(60 * 60);

/// The jobs' side of the whole API: the workers and schedules in the background, the
/// server's chores among the schedules, the pruning of finished jobs.
pub(crate) struct Jobs;

impl Surface for Jobs {
    fn start(&self, _config: &Config, _ext: &mut Extensions) -> Result<(), ConfigError> {
        // The jobs' metrics are listed from the start, at zero.
        LazyLock::force(&METRICS);
        Ok(())
    }

    /// The workers and the schedules, until the API drains.
    fn upkeep<'a>(&self, api: &'a Api) -> Option<LocalBoxFuture<'a, ()>> {
        Some(Box::pin(async move {
            let registry = api.registry();
            worker::run(api, &registry).await;
        }))
    }

    /// The administrators' HTTP API, when the application mounted it ([`Api::jobs_api`]).
    fn register(&self, api: &Api, cfg: &mut actix_web::web::ServiceConfig) {
        if let Some(http::Mounted(prefix)) = api.ext.get::<http::Mounted>() {
            let schedules = Arc::new(api.registry().schedules(api));
            for route in http::routes(&schedules) {
                let path = format!("{prefix}{}", route.path);
                cfg.service(actix_web::web::resource(path).route((route.route)()));
            }
        }
    }

    fn document(&self, api: &Api, doc: &mut crate::openapi::ApiDoc) {
        if let Some(http::Mounted(prefix)) = api.ext.get::<http::Mounted>() {
            http::document(doc, prefix);
        }
    }

    fn chores(&self, _api: &Api, out: &mut Vec<Chore>) {
        out.push(Chore {
            name: "prune_jobs",
            every: PRUNE_JOBS_EVERY,
            run: |api| Box::pin(api.prune_jobs()),
        });
    }

    fn runs_chores(&self) -> bool {
        true
    }
}

/// The jobs' metrics.
struct Metrics {
    /// Claims ended, by outcome (`done`, `retried`, `failed`).
    ended: IntCounterVec,
}

impl Metrics {
    /// Counts a claim that ended with `outcome`.
    fn outcome(&self, outcome: &str) {
        self.ended.with_label_values(&[outcome]).inc();
    }
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    let m = crate::metrics::global();
    let ended = m.register(IntCounterVec::new(
        Opts::new(
            "crudforge_jobs_total",
            "Job attempts ended, by outcome (done, retried, failed).",
        ),
        &["outcome"],
    ));
    for outcome in ["done", "retried", "failed"] {
        let _ = ended.with_label_values(&[outcome]);
    }
    Metrics { ended }
});

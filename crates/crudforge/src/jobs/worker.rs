//! The workers of one instance: each poll takes the schedules' due ticks (at most once a
//! poll interval), claims as many due jobs as there are free workers, and runs them at once in
//! this task, renewing each lease while its handler runs; a claim ends done, retried after a
//! backoff with jitter, or failed.

use super::store::{self, Claimed, Outcome};
use super::{Registry, METRICS};
use crate::api::Api;
use crate::error::Error;
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::any::Any;
use std::cell::RefCell;
use std::time::Duration;

/// The longest wait between two attempts of a job.
const MAX_BACKOFF: Duration = Duration::from_secs(60 * 60);

/// The longest failure message kept on a job's row.
const MAX_ERROR_CHARS: usize = 2000;

/// Runs the schedules and this instance's workers until the API drains; the jobs running
/// then finish first.
pub(crate) async fn run(api: &Api, registry: &Registry) {
    let ops = &api.config().ops;
    let workers = ops.jobs_workers as usize;
    if workers == 0 {
        return;
    }
    let poll = Duration::from_secs(ops.jobs_poll_interval.max(1));
    let mut running = FuturesUnordered::new();
    // The schedules are looked at once a poll, not at every job's end.
    let mut ticks_taken: Option<std::time::Instant> = None;
    loop {
        let draining = api.draining();
        if draining && running.is_empty() {
            return;
        }
        if !draining {
            if ticks_taken.is_none_or(|at| at.elapsed() >= poll) {
                take_ticks(api, registry).await;
                ticks_taken = Some(std::time::Instant::now());
            }
            let free = workers.saturating_sub(running.len());
            if free > 0 {
                match claim(api, free).await {
                    Ok(claimed) => {
                        for job in claimed {
                            running.push(run_one(api, registry, job));
                        }
                    }
                    Err(e) => {
                        tracing::warn!(target: "crudforge::jobs", error = %e, "claiming jobs failed")
                    }
                }
            }
        }
        tokio::select! {
            Some(()) = running.next(), if !running.is_empty() => {}
            () = tokio::time::sleep(poll) => {}
        }
    }
}

/// Runs every job due now, as many at once as this instance has workers (at least one), and
/// the schedules' due ticks first; how many jobs ran. For the command line and tests: a
/// serving API runs them by itself.
pub(crate) async fn run_due(api: &Api, registry: &Registry) -> Result<usize, Error> {
    take_ticks(api, registry).await;
    let mut ran = 0;
    loop {
        let claimed = claim(api, api.config().ops.jobs_workers.max(1) as usize).await?;
        if claimed.is_empty() {
            return Ok(ran);
        }
        ran += claimed.len();
        let mut running: FuturesUnordered<_> = claimed
            .into_iter()
            .map(|job| run_one(api, registry, job))
            .collect();
        while running.next().await.is_some() {}
    }
}

/// Enqueues the due tick of every schedule this instance knows of (each one once across
/// instances).
async fn take_ticks(api: &Api, registry: &Registry) {
    let now = store::now_micros();
    for schedule in registry.schedules(api) {
        match schedule.pass(api.db(), now).await {
            Ok(Some(id)) => {
                tracing::debug!(target: "crudforge::jobs", schedule = %schedule.name, job = id, "schedule ticked");
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(target: "crudforge::jobs", schedule = %schedule.name, error = %e, "a schedule's tick failed");
            }
        }
    }
}

/// Claims at most `n` due jobs, leased for `JOBS_LEASE_SECONDS`.
async fn claim(api: &Api, n: usize) -> Result<Vec<Claimed>, Error> {
    let now = store::now_micros();
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    store::claim(api.db(), n, now, now.saturating_add(lease_micros(api))).await
}

/// The lease of a claim, in microseconds.
fn lease_micros(api: &Api) -> i64 {
    i64::try_from(api.config().ops.jobs_lease_seconds.max(1))
        .unwrap_or(i64::MAX / 1_000_000)
        .saturating_mul(1_000_000)
}

tokio::task_local! {
    /// What the running job's work keeps until its outcome is recorded ([`keep_until_ended`]).
    static KEPT: RefCell<Vec<Box<dyn Any>>>;
}

/// Keeps `guard` until the outcome of the job that calls this is recorded, so that whatever
/// it holds back (a mail's turn to be sent) covers the window in which a crash would run the
/// job again. Outside a job's work, `guard` is dropped at once.
#[allow(
    dead_code,
    reason = "for the surfaces' jobs: mail keeps its turn to send with it"
)]
pub(crate) fn keep_until_ended(guard: impl Any) {
    let _ = KEPT.try_with(|kept| kept.borrow_mut().push(Box::new(guard)));
}

/// Runs one claimed job and ends its claim; what its work kept is dropped after that.
async fn run_one(api: &Api, registry: &Registry, job: Claimed) {
    KEPT.scope(RefCell::new(Vec::new()), run_and_end(api, registry, job))
        .await;
}

/// Runs one claimed job and records its outcome.
async fn run_and_end(api: &Api, registry: &Registry, job: Claimed) {
    let outcome = if job.attempts > job.max_attempts {
        // Claimed again after its last attempt's lease ran out: that attempt's worker died.
        Outcome::Failed {
            error: "the last attempt's worker stopped before it ended".to_owned(),
        }
    } else {
        match leased(api, &job, registry.start(api, &job)).await {
            Ok(()) => Outcome::Done,
            Err(Refusal::Permanent(error)) => Outcome::Failed { error },
            Err(Refusal::Failed(error)) if job.attempts >= job.max_attempts => {
                Outcome::Failed { error }
            }
            Err(Refusal::Failed(error)) => Outcome::Retry {
                at: store::now_micros().saturating_add(backoff_micros(api, job.attempts)),
                error,
            },
        }
    };
    let label = match &outcome {
        Outcome::Done => "done",
        Outcome::Retry { .. } => "retried",
        Outcome::Failed { .. } => "failed",
    };
    if let Outcome::Retry { error, .. } | Outcome::Failed { error } = &outcome {
        tracing::warn!(target: "crudforge::jobs", job = job.id, kind = %job.kind, attempt = job.attempts, outcome = label, error = %error, "a job failed");
    }
    match store::end(api.db(), &job, &outcome).await {
        Ok(true) => METRICS.outcome(label),
        Ok(false) => {
            tracing::warn!(target: "crudforge::jobs", job = job.id, "a job's lease was taken over before it ended; its outcome is not recorded");
        }
        Err(e) => {
            tracing::warn!(target: "crudforge::jobs", job = job.id, error = %e, "recording a job's outcome failed; it runs again when its lease runs out");
        }
    }
}

/// Why a job did not succeed.
pub(crate) enum Refusal {
    /// It cannot succeed by running again (no handler of its kind, a payload its handler
    /// cannot read).
    Permanent(String),
    /// Its handler failed.
    Failed(String),
}

impl From<Error> for Refusal {
    fn from(e: Error) -> Refusal {
        Refusal::Failed(clip(&e.to_string()))
    }
}

/// Runs `work`, moving the job's lease on every third of it until it ends.
async fn leased(
    api: &Api,
    job: &Claimed,
    work: futures_util::future::LocalBoxFuture<'_, Result<(), Refusal>>,
) -> Result<(), Refusal> {
    let lease = lease_micros(api);
    let every = Duration::from_micros(u64::try_from(lease / 3).unwrap_or(1).max(1));
    let mut work = std::pin::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return done,
            () = tokio::time::sleep(every) => {
                let until = store::now_micros().saturating_add(lease);
                match store::renew(api.db(), job, until).await {
                    Ok(true) => {}
                    Ok(false) => tracing::warn!(target: "crudforge::jobs", job = job.id, "a running job's lease was taken over"),
                    Err(e) => tracing::warn!(target: "crudforge::jobs", job = job.id, error = %e, "renewing a job's lease failed"),
                }
            }
        }
    }
}

/// The wait before the attempt after `attempt`: `JOBS_RETRY_BASE` doubled per attempt made,
/// at most an hour, of which a random half is taken off (jitter), so that jobs failing
/// together do not come back together.
fn backoff_micros(api: &Api, attempt: i32) -> i64 {
    let base = Duration::from_secs(api.config().ops.jobs_retry_base.max(1));
    let doublings = u32::try_from(attempt.saturating_sub(1))
        .unwrap_or(0)
        .min(20);
    let full = base.saturating_mul(1 << doublings).min(MAX_BACKOFF);
    let mut b = [0u8; 2];
    let _ = getrandom::fill(&mut b);
    let jitter = f64::from(u16::from_le_bytes(b)) / f64::from(u16::MAX);
    let wait = full.mul_f64(1.0 - jitter / 2.0);
    i64::try_from(wait.as_micros()).unwrap_or(i64::MAX)
}

/// `message`, at most [`MAX_ERROR_CHARS`] characters.
pub(crate) fn clip(message: &str) -> String {
    message.chars().take(MAX_ERROR_CHARS).collect()
}

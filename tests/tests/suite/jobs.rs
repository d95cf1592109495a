//! Durable jobs on both backends: a job enqueued in a rolled-back transaction never runs and
//! a committed one runs once with its payload; a failure is retried after a backoff, then kept
//! as failed with its error; a payload the handler cannot read and a kind without a handler
//! fail at once; a job whose worker died (its lease ran out) runs again; two instances
//! claiming at once run every job exactly once; a schedule's tick, however far behind, is
//! taken once across instances; the CLI-facing listing shows states and errors.
#![allow(missing_docs, clippy::unwrap_used)]

use crudforge::db::{Database, TxMode};
use crudforge::jobs::{Job, JobCtx, JobState};
use crudforge::{with_conn, Api, Error};
use crudforge_tests::{backend_tests, TestDb};
use diesel_async::SimpleAsyncConnection;
use serde::Deserialize;
use serde_json::json;
use std::sync::{Arc, Mutex};

/// What a test's handlers saw: (job number, attempt, payload's `n`).
type Seen = Arc<Mutex<Vec<(i64, u32, i64)>>>;

#[derive(Debug, Deserialize)]
struct Count {
    n: i64,
}

/// An API over `t` with a `count` handler that records each run, and a `fail` handler that
/// always fails.
async fn api(t: &TestDb) -> (Api, Seen) {
    let config = t.config();
    let db = t.open(&config).await;
    api_on(&config, db)
}

fn api_on(config: &crudforge::Config, db: Database) -> (Api, Seen) {
    let seen: Seen = Arc::default();
    let record = Arc::clone(&seen);
    let api = Api::new(config.clone(), db)
        .unwrap()
        .job("count", move |ctx: JobCtx, c: Count| {
            let record = Arc::clone(&record);
            async move {
                record.lock().unwrap().push((ctx.id(), ctx.attempt(), c.n));
                Ok(())
            }
        })
        .job("fail", |_ctx: JobCtx, _: serde_json::Value| async {
            Err(Error::Internal("the mail server said no".into()))
        });
    (api, seen)
}

/// The application's jobs (not the server's own, `crudforge.*`), newest first.
async fn mine(api: &Api, state: Option<JobState>) -> Vec<crudforge::jobs::JobRow> {
    let all = api.jobs(state, 100).await.unwrap();
    all.into_iter()
        .filter(|j| !j.kind.starts_with("crudforge."))
        .collect()
}

async fn exec(db: &Database, sql: &str) {
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(sql).await).unwrap();
}

backend_tests! {
    async fn only_a_committed_job_runs_and_it_runs_once(t) {
        let (api, seen) = api(&t).await;
        let mut conn = api.db().get().await.unwrap();
        conn.begin(TxMode::Write).await.unwrap();
        Job::new("count", &json!({"n": 1})).unwrap().enqueue(&mut conn).await.unwrap();
        let rolled_back: Result<(), Error> = Err(Error::Conflict("the request failed".into()));
        assert!(conn.finish(rolled_back).await.is_err());
        conn.begin(TxMode::Write).await.unwrap();
        let id = crudforge::jobs::enqueue(&mut conn, "count", &json!({"n": 2})).await;
        let id = conn.finish(id).await.unwrap();
        drop(conn);
        api.run_due_jobs().await.unwrap();
        assert_eq!(*seen.lock().unwrap(), [(id, 1, 2)], "the rolled-back job never ran");
        api.run_due_jobs().await.unwrap();
        assert_eq!(seen.lock().unwrap().len(), 1, "a done job does not run again");
        let jobs = mine(&api, None).await;
        assert_eq!(jobs.len(), 1, "{jobs:?}");
        assert_eq!((jobs[0].id, jobs[0].state.as_str(), jobs[0].attempts), (id, "done", 1));
    }

    async fn a_job_due_later_waits(t) {
        let (api, seen) = api(&t).await;
        let mut conn = api.db().get().await.unwrap();
        Job::new("count", &json!({"n": 7})).unwrap().after(std::time::Duration::from_secs(3600)).enqueue(&mut conn).await.unwrap();
        drop(conn);
        api.run_due_jobs().await.unwrap();
        assert!(seen.lock().unwrap().is_empty());
        exec(api.db(), "UPDATE crudforge_jobs SET run_at = 0").await;
        api.run_due_jobs().await.unwrap();
        assert_eq!(seen.lock().unwrap()[0].2, 7);
    }

    async fn a_failure_is_retried_after_a_backoff_then_kept_with_its_error(t) {
        let (api, _) = api(&t).await;
        let mut conn = api.db().get().await.unwrap();
        let id = Job::new("fail", &json!({})).unwrap().max_attempts(2).enqueue(&mut conn).await.unwrap();
        drop(conn);
        let before = chrono::Utc::now().timestamp_micros();
        api.run_due_jobs().await.unwrap();
        let job = &mine(&api, None).await[0];
        assert_eq!((job.id, job.state.as_str(), job.attempts), (id, "queued", 1), "{job:?}");
        assert!(job.last_error.as_deref().unwrap().contains("the mail server said no"), "{job:?}");
        // JOBS_RETRY_BASE is 10 s: the second attempt is due 5 to 10 s later (jitter).
        let wait = job.run_at - before;
        assert!((4_000_000..=11_000_000).contains(&wait), "due {wait} µs later");
        api.run_due_jobs().await.unwrap();
        assert_eq!(mine(&api, None).await[0].attempts, 1, "not due yet");
        exec(api.db(), "UPDATE crudforge_jobs SET run_at = 0").await;
        api.run_due_jobs().await.unwrap();
        let job = &mine(&api, Some(JobState::Failed)).await[0];
        assert_eq!((job.id, job.attempts), (id, 2), "{job:?}");
        assert!(job.last_error.as_deref().unwrap().contains("the mail server said no"));
        exec(api.db(), "UPDATE crudforge_jobs SET run_at = 0").await;
        api.run_due_jobs().await.unwrap();
        let job = &mine(&api, None).await[0];
        assert_eq!((job.state.as_str(), job.attempts), ("failed", 2), "a failed job stays failed");
    }

    async fn a_payload_the_handler_cannot_read_or_an_unknown_kind_fails_at_once(t) {
        let (api, seen) = api(&t).await;
        let mut conn = api.db().get().await.unwrap();
        let bad = Job::new("count", &json!({"n": "seven"})).unwrap().enqueue(&mut conn).await.unwrap();
        let unknown = Job::new("nobody", &json!({})).unwrap().enqueue(&mut conn).await.unwrap();
        drop(conn);
        api.run_due_jobs().await.unwrap();
        assert!(seen.lock().unwrap().is_empty());
        let failed = mine(&api, Some(JobState::Failed)).await;
        assert_eq!(failed.len(), 2, "{failed:?}");
        let error = |id: i64| failed.iter().find(|j| j.id == id).unwrap().last_error.clone().unwrap();
        assert!(error(bad).contains("the payload does not fit the handler"), "{}", error(bad));
        assert!(error(unknown).contains("no handler for the kind \"nobody\""), "{}", error(unknown));
        assert!(failed.iter().all(|j| j.attempts == 1), "{failed:?}");
    }

    async fn a_job_whose_worker_died_runs_again_when_its_lease_runs_out(t) {
        let (api, seen) = api(&t).await;
        let mut conn = api.db().get().await.unwrap();
        let id = Job::new("count", &json!({"n": 3})).unwrap().enqueue(&mut conn).await.unwrap();
        drop(conn);
        // A worker claimed it (attempt 1) and died: its lease is still running, then runs out.
        let now = chrono::Utc::now().timestamp_micros();
        exec(api.db(), &format!("UPDATE crudforge_jobs SET state = 'running', attempts = 1, lease_until = {}", now + 60_000_000)).await;
        api.run_due_jobs().await.unwrap();
        assert!(seen.lock().unwrap().is_empty(), "a live lease is not taken");
        exec(api.db(), &format!("UPDATE crudforge_jobs SET lease_until = {}", now - 1)).await;
        api.run_due_jobs().await.unwrap();
        assert_eq!(*seen.lock().unwrap(), [(id, 2, 3)], "the second attempt ran");
        assert_eq!(mine(&api, Some(JobState::Done)).await.len(), 1);
    }

    async fn two_instances_claiming_at_once_run_every_job_exactly_once(t) {
        let config = t.config().with(|c| c.ops.jobs_workers = 3);
        let (one, seen_one) = api_on(&config, t.open(&config).await);
        let (two, seen_two) = api_on(&config, t.open(&config).await);
        let mut conn = one.db().get().await.unwrap();
        for n in 0..40 {
            Job::new("count", &json!({"n": n})).unwrap().enqueue(&mut conn).await.unwrap();
        }
        drop(conn);
        let (a, b) = futures_util::future::join(one.run_due_jobs(), two.run_due_jobs()).await;
        a.unwrap();
        b.unwrap();
        let mut ran: Vec<i64> = seen_one.lock().unwrap().iter().chain(seen_two.lock().unwrap().iter()).map(|s| s.2).collect();
        ran.sort_unstable();
        assert_eq!(ran, (0..40).collect::<Vec<_>>(), "each job once");
    }

    async fn a_schedule_tick_however_far_behind_is_taken_once_across_instances(t) {
        let config = t.config();
        let db = t.open(&config).await;
        let schedule = |db: Database| {
            let (api, seen) = api_on(&config, db);
            (api.schedule("every-second", "* * * * * *", "count", &json!({"n": 9})).unwrap(), seen)
        };
        let (one, seen_one) = schedule(db);
        let (two, seen_two) = schedule(t.open(&config).await);
        // First seen: the schedule starts at its next tick, nothing runs for the ticks before.
        one.run_due_jobs().await.unwrap();
        assert!(seen_one.lock().unwrap().is_empty());
        // The instances were down for a long time: thousands of ticks were missed.
        exec(one.db(), "UPDATE crudforge_schedules SET last_tick = 0 WHERE name = 'every-second'").await;
        let (a, b) = futures_util::future::join(one.run_due_jobs(), two.run_due_jobs()).await;
        a.unwrap();
        b.unwrap();
        let ran = seen_one.lock().unwrap().len() + seen_two.lock().unwrap().len();
        assert_eq!(ran, 1, "the missed ticks run once, on one instance");
        let job = &mine(&one, None).await[0];
        assert_eq!((job.kind.as_str(), job.schedule.as_deref()), ("count", Some("every-second")));
        // A malformed expression or a taken name is refused when the API is built.
        let (api, _) = api_on(&config, t.open(&config).await);
        let err = api.schedule("bad", "61 * * * *", "count", &json!({})).unwrap_err();
        assert!(err.to_string().contains("schedule \"bad\": the cron expression"), "{err}");
        let (api, _) = api_on(&config, t.open(&config).await);
        let err = api.schedule("crudforge.prune_jobs", "* * * * *", "count", &json!({})).unwrap_err();
        assert!(err.to_string().contains("the name is taken"), "{err}");
    }

    async fn the_servers_own_work_runs_as_schedules(t) {
        let (api, _) = api(&t).await;
        // The pruning of ended jobs runs at once on a new database, as a job of its own.
        exec(api.db(), "INSERT INTO crudforge_jobs (kind, payload, state, attempts, max_attempts, run_at, created_at, finished_at) \
             VALUES ('count', '{\"n\":1}', 'done', 1, 5, 0, 0, 0)").await;
        api.run_due_jobs().await.unwrap();
        assert!(mine(&api, None).await.is_empty(), "the old done job was pruned");
        let jobs = api.jobs(None, 10).await.unwrap();
        let prune: Vec<_> = jobs.iter().filter(|j| j.kind == "crudforge.prune_jobs").collect();
        assert_eq!(prune.len(), 1, "{jobs:?}");
        assert_eq!((prune[0].state.as_str(), prune[0].schedule.as_deref()), ("done", Some("crudforge.prune_jobs")));
    }
}

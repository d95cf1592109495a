//! Durable jobs on both backends: a job enqueued in a rolled-back transaction never runs and
//! a committed one runs once with its payload; a failure is retried after a backoff, then kept
//! as failed with its error; a payload the handler cannot read and a kind without a handler
//! fail at once; a job whose worker died (its lease ran out) runs again; two instances
//! claiming at once run every job exactly once; a schedule's tick, however far behind, is
//! taken once across instances; the CLI-facing listing shows states and errors; the
//! administrators' HTTP API lists, retries and cancels jobs and runs a schedule now, for
//! administrators only, and is in the description.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::db::{Database, TxMode};
use crudforge::jobs::{Job, JobCtx, JobState};
use crudforge::{with_conn, Api, Error};
use crudforge_tests::http::{auth, send, Req};
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

/// An API over `t` with the jobs' HTTP API at `/api/jobs/`, a schedule `nightly` (of `count`),
/// an administrator and a user who is not one.
async fn http_world(t: &TestDb) -> (Api, Seen, uuid::Uuid, uuid::Uuid) {
    let config = t.config();
    let db = t.open(&config).await;
    let admin = crudforge_tests::user(&db, "admin@example.com").await;
    crudforge::users::grant_role(&db, admin, "ADMIN", None)
        .await
        .unwrap();
    let alice = crudforge_tests::user(&db, "alice@example.com").await;
    let (api, seen) = api_on(&config, db);
    let api = api
        .schedule("nightly", "0 3 * * *", "count", &json!({"n": 42}))
        .unwrap()
        .jobs_api("/api/jobs/");
    (api, seen, admin, alice)
}

backend_tests! {
    async fn the_jobs_api_lists_retries_and_cancels_for_administrators(t) {
        let (api, _, admin, alice) = http_world(&t).await;
        let mut conn = api.db().get().await.unwrap();
        let failing = Job::new("fail", &json!({"why": "test"})).unwrap().max_attempts(1).enqueue(&mut conn).await.unwrap();
        let later = Job::new("count", &json!({"n": 5})).unwrap().after(std::time::Duration::from_secs(3600)).enqueue(&mut conn).await.unwrap();
        drop(conn);
        api.run_due_jobs().await.unwrap();
        let app = test::init_service(api.app()).await;
        let get = |uri: &str| Req::get().uri(uri);
        let post = |uri: &str| Req::post().uri(uri);

        // Everyone else: 401 without a token, 403 for a user who is not an administrator.
        for req in [get("/api/jobs/"), post(&format!("/api/jobs/{failing}/retry/")), post(&format!("/api/jobs/{later}/cancel/")), get("/api/jobs/schedules/"), post("/api/jobs/schedules/nightly/run/")] {
            let (status, body) = send(&app, req).await;
            assert_eq!(status, 401, "{body}");
        }
        for req in [get("/api/jobs/"), post(&format!("/api/jobs/{failing}/retry/")), post(&format!("/api/jobs/{later}/cancel/")), get("/api/jobs/schedules/"), post("/api/jobs/schedules/nightly/run/")] {
            let (status, body) = send(&app, auth(req, &api, alice)).await;
            assert_eq!(status, 403, "{body}");
        }

        // The listing: every job, newest first; the state filter; a bad state or limit is 422.
        let (status, body) = send(&app, auth(get("/api/jobs/?kind=fail"), &api, admin)).await;
        assert_eq!(status, 200, "{body}");
        let items = body["items"].as_array().unwrap();
        assert_eq!(items.len(), 1, "{body}");
        assert_eq!((items[0]["id"].as_i64(), items[0]["state"].as_str(), items[0]["attempts"].as_i64()), (Some(failing), Some("failed"), Some(1)));
        assert!(items[0]["last_error"].as_str().unwrap().contains("the mail server said no"), "{body}");
        assert_eq!(items[0]["payload"], json!({"why": "test"}));
        let (status, body) = send(&app, auth(get("/api/jobs/?state=queued"), &api, admin)).await;
        assert_eq!(status, 200, "{body}");
        let queued: Vec<i64> = body["items"].as_array().unwrap().iter().map(|j| j["id"].as_i64().unwrap()).collect();
        assert_eq!(queued, [later], "{body}");
        for bad in ["/api/jobs/?state=lost", "/api/jobs/?limit=501", "/api/jobs/?limit=0"] {
            let (status, body) = send(&app, auth(get(bad), &api, admin)).await;
            assert_eq!(status, 422, "{bad}: {body}");
        }

        // Retry of a failed job queues it; a queued job is not retried (409), an unknown one 404.
        let (status, body) = send(&app, auth(post(&format!("/api/jobs/{failing}/retry/")), &api, admin)).await;
        assert_eq!((status, body["state"].as_str()), (200, Some("queued")), "{body}");
        assert_eq!(mine(&api, Some(JobState::Queued)).await.len(), 2);
        let (status, body) = send(&app, auth(post(&format!("/api/jobs/{later}/retry/")), &api, admin)).await;
        assert_eq!(status, 409, "{body}");
        for unknown in ["/api/jobs/999999/retry/", "/api/jobs/999999/cancel/", "/api/jobs/nine/cancel/"] {
            let (status, body) = send(&app, auth(post(unknown), &api, admin)).await;
            assert_eq!(status, 404, "{unknown}: {body}");
        }

        // Cancel of a queued job cancels it; cancelling it again is 409.
        let (status, body) = send(&app, auth(post(&format!("/api/jobs/{later}/cancel/")), &api, admin)).await;
        assert_eq!((status, body["state"].as_str()), (200, Some("cancelled")), "{body}");
        let cancelled = mine(&api, Some(JobState::Cancelled)).await;
        assert_eq!(cancelled.iter().map(|j| j.id).collect::<Vec<_>>(), [later]);
        let (status, body) = send(&app, auth(post(&format!("/api/jobs/{later}/cancel/")), &api, admin)).await;
        assert_eq!(status, 409, "{body}");
    }

    async fn a_schedule_runs_now_over_http_and_from_the_api(t) {
        let (api, seen, admin, _) = http_world(&t).await;
        // The schedule is seen first: its last tick is recorded, nothing runs.
        api.run_due_jobs().await.unwrap();
        assert!(seen.lock().unwrap().is_empty());
        let before = api.schedules().await.unwrap();
        let nightly = before.iter().find(|s| s.name == "nightly").unwrap();
        assert_eq!((nightly.when.as_str(), nightly.kind.as_str()), ("0 3 * * *", "count"));
        assert!(nightly.last_tick.is_some());
        assert!(before.iter().any(|s| s.name == "crudforge.prune_jobs"), "{before:?}");

        let app = test::init_service(api.app()).await;
        let (status, body) = send(&app, auth(Req::get().uri("/api/jobs/schedules/"), &api, admin)).await;
        assert_eq!(status, 200, "{body}");
        let listed = body["items"].as_array().unwrap();
        let row = listed.iter().find(|s| s["name"] == "nightly").unwrap();
        assert_eq!((row["when"].as_str(), row["kind"].as_str()), (Some("0 3 * * *"), Some("count")), "{body}");

        let (status, body) = send(&app, auth(Req::post().uri("/api/jobs/schedules/nightly/run/"), &api, admin)).await;
        assert_eq!(status, 202, "{body}");
        let id = body["id"].as_i64().unwrap();
        let (status, body) = send(&app, auth(Req::post().uri("/api/jobs/schedules/nobody/run/"), &api, admin)).await;
        assert_eq!(status, 404, "{body}");
        assert!(body["detail"].as_str().unwrap_or_default().contains("nobody"), "{body}");

        // The worker runs it with the schedule's payload; the schedule's ticks are untouched.
        api.run_due_jobs().await.unwrap();
        assert_eq!(*seen.lock().unwrap(), [(id, 1, 42)]);
        let job = &mine(&api, Some(JobState::Done)).await[0];
        assert_eq!((job.id, job.schedule.as_deref()), (id, Some("nightly")));
        let after = api.schedules().await.unwrap();
        assert_eq!(after.iter().find(|s| s.name == "nightly").unwrap().last_tick, nightly.last_tick);

        // From the API itself too; an unknown name is a 404 that names it.
        let again = api.run_schedule("nightly").await.unwrap();
        assert!(again > id);
        let err = api.run_schedule("nobody").await.unwrap_err();
        assert!(matches!(err, Error::NotFound(_)) && err.to_string().contains("nobody"), "{err}");
    }

    async fn the_jobs_api_is_in_the_description(t) {
        let (api, _, _, _) = http_world(&t).await;
        let spec = serde_json::to_value(api.openapi()).unwrap();
        let op = |path: &str, method: &str| spec["paths"][path][method]["operationId"].as_str().map(str::to_owned);
        assert_eq!(op("/api/jobs/", "get").as_deref(), Some("listJobs"));
        assert_eq!(op("/api/jobs/{id}/retry/", "post").as_deref(), Some("retryJob"));
        assert_eq!(op("/api/jobs/{id}/cancel/", "post").as_deref(), Some("cancelJob"));
        assert_eq!(op("/api/jobs/schedules/", "get").as_deref(), Some("listSchedules"));
        assert_eq!(op("/api/jobs/schedules/{name}/run/", "post").as_deref(), Some("runSchedule"));
        let list = &spec["paths"]["/api/jobs/"]["get"];
        assert_eq!(list["tags"], json!(["Jobs"]));
        let params: Vec<&str> = list["parameters"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
        assert_eq!(params, ["state", "kind", "limit"]);
        for status in ["401", "403", "422"] {
            assert!(list["responses"].get(status).is_some(), "{status}: {list}");
        }
        // The whole description stays valid OpenAPI (skipped without the validator).
        if let Err(e) = crudforge_tests::tools::openapi_spec_validator(spec.to_string().as_bytes()) {
            panic!("the description with the jobs' API is not valid: {e}");
        }
        // Without `jobs_api`, nothing of it.
        let (plain, _) = api_on(&t.config(), t.open(&t.config()).await);
        let spec = serde_json::to_value(plain.openapi()).unwrap();
        assert!(spec["paths"].get("/api/jobs/").is_none());
    }

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

crudforge_tests::__if_sqlite! {
    /// What claiming and ending a job costs in instructions, for callgrind
    /// (docs/performance.md): enqueues `CRUDFORGE_BENCH_JOBS` (1000) empty jobs on SQLite and
    /// runs them with the default four workers, unless `CRUDFORGE_BENCH_RUN=0`. Runs with and
    /// without the jobs' run differ by their claims and ends (and one look at the schedules).
    mod claim_instructions {
        use super::*;

        #[actix_web::test]
        #[ignore = "a benchmark for callgrind: prints nothing, asserts only that the jobs ran"]
        async fn sqlite() {
            let n: usize = std::env::var("CRUDFORGE_BENCH_JOBS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(1000);
            let run = std::env::var("CRUDFORGE_BENCH_RUN").map_or(true, |v| v != "0");
            let t = TestDb::sqlite().await;
            let config = t.config();
            let db = t.open(&config).await;
            let api = Api::new(config, db)
                .unwrap()
                .job("nothing", |_ctx, _: serde_json::Value| async { Ok(()) });
            // The server's own schedules take their first ticks here, not in the measured run.
            api.run_due_jobs().await.unwrap();
            let mut conn = api.db().get().await.unwrap();
            for _ in 0..n {
                crudforge::jobs::enqueue(&mut conn, "nothing", &json!({}))
                    .await
                    .unwrap();
            }
            drop(conn);
            if run {
                assert_eq!(api.run_due_jobs().await.unwrap(), n);
            }
        }
    }
}

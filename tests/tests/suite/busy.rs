//! A full bcrypt queue: password checks answer 503, and none of them counts towards a lockout.
//!
//! The bcrypt threads are one pool per process, so a single test fills it, in a process of its
//! own ([`crudforge_tests::alone`]), and runs the SQLite and then the PostgreSQL half one after
//! the other.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::__bench::run_on_bcrypt_workers;
use crudforge::users::{self, UserBlueprint};
use crudforge::Api;
use crudforge_tests::TestDb;
use serde_json::json;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll};

const COST: u32 = 4;
const EMAIL: &str = "owner@example.com";
const PASSWORD: &str = "the owner's password";

/// Jobs that wait on the bcrypt threads until opened.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    fn wait(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

type Waiting = Pin<Box<dyn Future<Output = Result<(), crudforge::Error>>>>;

/// Submits blocked jobs until the queue refuses one, twice, the second time after the bcrypt
/// threads have had a moment to take a job each (a thread that takes a job frees a place in
/// the queue); returns the submitted (pending) jobs.
fn fill(gate: &Arc<Gate>) -> Vec<Waiting> {
    let mut jobs: Vec<Waiting> = Vec::new();
    let waker = futures_util::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut refused = 0;
    while refused < 2 {
        let g = Arc::clone(gate);
        let mut job: Waiting = Box::pin(run_on_bcrypt_workers(move || g.wait()));
        match job.as_mut().poll(&mut cx) {
            Poll::Pending => {
                jobs.push(job);
                refused = 0;
            }
            Poll::Ready(Err(e)) => {
                assert_eq!(e.problem().status, 503, "{e}");
                refused += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            Poll::Ready(Ok(())) => panic!("a blocked job finished"),
        }
        assert!(jobs.len() < 100_000, "the bcrypt queue has no bound");
    }
    jobs
}

async fn busy_logins_count_towards_no_lockout(t: TestDb) {
    let cfg = t.config().with(|c| {
        c.auth.bcrypt_cost = COST;
        // One failure from this address locks the account for it.
        c.auth.login_max_failures_per_account_and_address = 1;
    });
    let db = t.open(&cfg).await;
    users::create_user(&db, EMAIL, PASSWORD, true, COST)
        .await
        .unwrap();
    let api = Api::new(cfg, db)
        .unwrap()
        .mount(UserBlueprint::default())
        .unwrap();
    let app = test::init_service(api.app()).await;
    let login = |password: &str| {
        test::TestRequest::post()
            .uri("/api/users/login/")
            .peer_addr("192.0.2.7:40000".parse().unwrap())
            .set_json(json!({"email": EMAIL, "password": password}))
            .to_request()
    };

    let gate = Arc::new(Gate::default());
    let jobs = fill(&gate);
    for _ in 0..3 {
        let resp = test::call_service(&app, login(PASSWORD)).await;
        assert_eq!(resp.status(), 503);
        assert_eq!(
            resp.headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok()),
            Some("1")
        );
        let body: serde_json::Value = test::read_body_json(resp).await;
        assert_eq!(body["type"], "/errors/service_unavailable_error", "{body}");
    }
    gate.open();
    for job in jobs {
        job.await.unwrap();
    }
    // None of the three counted: the owner logs in from the same address.
    let resp = test::call_service(&app, login(PASSWORD)).await;
    assert_eq!(resp.status(), 200);
    // A real failure still counts, and the next check from here is refused.
    let resp = test::call_service(&app, login("a wrong password")).await;
    assert_eq!(resp.status(), 401);
    let resp = test::call_service(&app, login(PASSWORD)).await;
    assert_eq!(resp.status(), 429);
}

#[actix_web::test]
async fn a_full_bcrypt_queue_answers_503_and_locks_nobody_out() {
    if !crudforge_tests::alone() {
        return;
    }
    #[cfg(feature = "sqlite")]
    busy_logins_count_towards_no_lockout(TestDb::sqlite().await).await;
    #[cfg(feature = "postgres")]
    if let Some(t) = TestDb::postgres().await {
        busy_logins_count_towards_no_lockout(t).await;
    }
}

//! The threads that run bcrypt: a few of their own, below the request workers' CPU priority, so
//! that logins use whatever CPU is left and never hold up other requests.
//!
//! One bcrypt verification takes tens to hundreds of milliseconds of one core and runs on one
//! thread. On tokio's blocking pool it would compete with the request workers as an equal: a
//! burst of logins would then add a time slice of delay to every other request sharing the
//! core (a `/health` probe's p99 grew 5.7-fold). Here, a fixed set of threads (one less than
//! the cores, at least one) takes the work from a queue, and on Linux each lowers its own
//! scheduling priority (`nice` [`NICENESS`]) when it starts: under a full request load bcrypt
//! gets about a tenth of a core, and it gets every cycle the workers leave idle, so logins
//! proceed at bcrypt's own rate whenever the service is not busy with anything else. Priority
//! alone does not stop a running hash from keeping the core until the scheduler's next tick
//! (a worker that has just used its share waits for it), so the hash itself also offers the
//! core every 50 µs of work ([`super::yielding_bcrypt`]).
//!
//! Lowering a thread's priority takes one call into the C library, the only `unsafe` code of
//! this module; the threads are crudforge's own, so no other work ever runs at that priority.
//!
//! The queue is bounded ([`QUEUED_JOBS_PER_THREAD`] waiting jobs per thread): past it a request
//! gets 503 with `Retry-After` at once instead of waiting behind work it could not outlast. A
//! job whose caller has gone before a thread takes it (the request passed `REQUEST_TIMEOUT`,
//! or the caller's future was dropped otherwise) is skipped, not hashed.
#![allow(unsafe_code)]

use crate::error::Error;
use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::oneshot;

/// The `nice` value of bcrypt threads: a tenth of a request worker's CPU share when both want
/// to run, so logins still make progress under a full request load.
pub(crate) const NICENESS: i32 = 10;

/// How many jobs may wait per bcrypt thread, besides the one each is running. At cost 12 a
/// job takes about 0.27 s on an idle core, so the last of a full queue starts after about
/// 9 s, well within `REQUEST_TIMEOUT`'s default 30 s; more would only be hashed for clients
/// that have given up.
pub(crate) const QUEUED_JOBS_PER_THREAD: usize = 32;

/// Seconds a client is asked to wait (`Retry-After`) when the queue is full.
const RETRY_AFTER_SECS: u64 = 1;

type Job = Box<dyn FnOnce() + Send>;

/// Runs `f` on a bcrypt thread and returns its result. Jobs queue when every thread is busy,
/// up to `QUEUED_JOBS_PER_THREAD` per thread.
///
/// # Errors
///
/// 503 (`Error::Busy`, with `Retry-After`) when the queue is full; the threads could not be
/// started, or `f` panicked.
pub async fn run<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Error> {
    wait(pool()?.submit(f)?).await
}

/// The answer of a submitted job.
async fn wait<T>(answer: oneshot::Receiver<T>) -> Result<T, Error> {
    answer
        .await
        .map_err(|_| Error::Internal("a bcrypt job failed".into()))
}

/// The bcrypt threads, started on first use.
fn pool() -> Result<&'static Pool, Error> {
    static POOL: OnceLock<Result<Pool, String>> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = thread_count();
        Pool::start(threads, threads.saturating_mul(QUEUED_JOBS_PER_THREAD))
    })
    .as_ref()
    .map_err(|e| Error::Internal(format!("cannot start the bcrypt threads: {e}")))
}

/// Threads taking jobs from one bounded queue; they end when the pool is dropped.
struct Pool {
    queue: SyncSender<Job>,
}

impl Pool {
    /// Starts `threads` threads with room for `queued` waiting jobs.
    fn start(threads: usize, queued: usize) -> Result<Pool, String> {
        let (queue, rx) = sync_channel::<Job>(queued);
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads {
            let rx = Arc::clone(&rx);
            std::thread::Builder::new()
                .name(format!("crudforge-bcrypt-{i}"))
                .spawn(move || work(&rx))
                .map_err(|e| e.to_string())?;
        }
        Ok(Pool { queue })
    }

    /// Queues `f`; its answer arrives on the receiver. A job whose receiver has been dropped
    /// by the time a thread takes it is not run.
    ///
    /// # Errors
    ///
    /// 503 when the queue is full, 500 when the threads have stopped.
    fn submit<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<oneshot::Receiver<T>, Error> {
        let (done, answer) = oneshot::channel();
        let job: Job = Box::new(move || {
            // The caller has gone: nobody would read the answer.
            if done.is_closed() {
                return;
            }
            // A panic drops `done`, which the caller sees as an error; the thread lives on.
            if let Ok(value) = std::panic::catch_unwind(AssertUnwindSafe(f)) {
                let _ = done.send(value);
            }
        });
        match self.queue.try_send(job) {
            Ok(()) => Ok(answer),
            Err(TrySendError::Full(_)) => Err(Error::Busy {
                detail: "Too many password checks are waiting; try again shortly.".into(),
                retry_after: RETRY_AFTER_SECS,
            }),
            Err(TrySendError::Disconnected(_)) => {
                Err(Error::Internal("the bcrypt threads have stopped".into()))
            }
        }
    }
}

/// How many bcrypt threads run: one less than the cores (at least one), so one core always
/// stays for everything else even before priorities are counted.
fn thread_count() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    cores.saturating_sub(1).max(1)
}

/// A bcrypt thread's life: lower its priority, then run jobs until the queue closes.
fn work(rx: &Mutex<Receiver<Job>>) {
    if let Err(e) = lower_priority() {
        tracing::warn!(error = %e, "bcrypt thread keeps the normal CPU priority");
    }
    loop {
        let job = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(poisoned) => poisoned.into_inner().recv(),
        };
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

/// Sets the calling thread's `nice` value to [`NICENESS`] (on Linux a thread id names one
/// thread for `setpriority`).
#[cfg(target_os = "linux")]
fn lower_priority() -> std::io::Result<()> {
    // SAFETY: `gettid` takes no argument and cannot fail.
    let tid = unsafe { libc::gettid() };
    let Ok(who) = libc::id_t::try_from(tid) else {
        return Err(std::io::Error::other("negative thread id"));
    };
    // SAFETY: `setpriority` reads its three integer arguments only; with `PRIO_PROCESS` and a
    // thread id it changes that one thread's niceness and reports failure through its result.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, who, NICENESS) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Elsewhere bcrypt threads keep the normal priority.
#[cfg(not(target_os = "linux"))]
fn lower_priority() -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_jobs_on_its_own_lower_priority_threads() {
        let caller = current_niceness();
        let (name, nice) = run(|| {
            let name = std::thread::current().name().map(str::to_owned);
            (name, current_niceness())
        })
        .await
        .expect("job runs");
        assert!(name.is_some_and(|n| n.starts_with("crudforge-bcrypt-")));
        if cfg!(target_os = "linux") {
            // At least NICENESS: a process started at a lower priority keeps it.
            assert!(nice.is_some_and(|n| n >= NICENESS), "{nice:?}");
        }
        // The caller's own thread is untouched.
        assert_eq!(current_niceness(), caller);
    }

    #[tokio::test]
    async fn a_panicking_job_is_an_error_and_the_threads_live_on() {
        let failed = run(|| -> u32 { panic!("boom") }).await;
        assert!(failed.is_err());
        for _ in 0..thread_count() * 2 {
            assert_eq!(run(|| 7).await.expect("still running"), 7);
        }
    }

    /// A gate jobs wait at until it opens; `started` counts the jobs that reached it.
    #[derive(Default)]
    struct Gate {
        state: Mutex<(bool, usize)>,
        changed: std::sync::Condvar,
    }

    impl Gate {
        fn wait(&self) {
            let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
            s.1 += 1;
            self.changed.notify_all();
            while !s.0 {
                s = self.changed.wait(s).unwrap_or_else(|p| p.into_inner());
            }
        }
        fn wait_started(&self, n: usize) {
            let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
            while s.1 < n {
                s = self.changed.wait(s).unwrap_or_else(|p| p.into_inner());
            }
        }
        fn open(&self) {
            self.state.lock().unwrap_or_else(|p| p.into_inner()).0 = true;
            self.changed.notify_all();
        }
    }

    #[tokio::test]
    async fn a_full_queue_answers_503_with_retry_after() {
        use actix_web::ResponseError;
        let pool = Pool::start(1, 2).expect("pool starts");
        let gate = Arc::new(Gate::default());
        let blocked = |n: u32| {
            let gate = Arc::clone(&gate);
            move || {
                gate.wait();
                n
            }
        };
        // One job runs (held at the gate), two wait in the queue: the bound.
        let running = pool.submit(blocked(1)).expect("runs");
        gate.wait_started(1);
        let queued = [
            pool.submit(blocked(2)).expect("queued"),
            pool.submit(blocked(3)).expect("queued"),
        ];
        let refused = pool
            .submit(blocked(4))
            .map(|_| ())
            .expect_err("past the bound");
        assert!(matches!(refused, Error::Busy { .. }), "{refused:?}");
        let res = refused.error_response();
        assert_eq!(res.status(), 503);
        assert_eq!(
            res.headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok()),
            Some("1")
        );
        assert_eq!(refused.problem().type_, "/errors/service_unavailable_error");
        // Once the jobs proceed, the queue takes new ones again.
        gate.open();
        assert_eq!(wait(running).await.expect("answer"), 1);
        let [a, b] = queued;
        assert_eq!((wait(a).await.ok(), wait(b).await.ok()), (Some(2), Some(3)));
        assert_eq!(
            wait(pool.submit(|| 5).expect("room again")).await.ok(),
            Some(5)
        );
    }

    #[tokio::test]
    async fn a_job_whose_caller_has_gone_never_runs() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let pool = Pool::start(1, 4).expect("pool starts");
        let gate = Arc::new(Gate::default());
        let held = {
            let gate = Arc::clone(&gate);
            pool.submit(move || gate.wait()).expect("runs")
        };
        gate.wait_started(1);
        let ran = Arc::new(AtomicBool::new(false));
        let abandoned = {
            let ran = Arc::clone(&ran);
            pool.submit(move || ran.store(true, Ordering::SeqCst))
                .expect("queued")
        };
        // The caller goes away (its request was dropped) while the job waits.
        drop(abandoned);
        let after = pool.submit(|| 7).expect("queued");
        gate.open();
        wait(held).await.expect("answer");
        // One thread takes jobs in order: once the later job is answered, the abandoned one
        // has been taken, and skipped.
        assert_eq!(wait(after).await.ok(), Some(7));
        assert!(!ran.load(Ordering::SeqCst), "an abandoned job was hashed");
    }

    /// The calling thread's niceness, read from `/proc` (Linux only).
    fn current_niceness() -> Option<i32> {
        let tid = std::fs::read_link("/proc/thread-self").ok()?;
        let stat =
            std::fs::read_to_string(std::path::Path::new("/proc").join(tid).join("stat")).ok()?;
        // Field 19 (1-based) is the nice value; fields after the command's `)` start at 3.
        let rest = stat.rsplit_once(')')?.1;
        rest.split_whitespace().nth(16)?.parse().ok()
    }
}

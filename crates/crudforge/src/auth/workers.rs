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
#![allow(unsafe_code)]

use crate::error::Error;
use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

/// The `nice` value of bcrypt threads: a tenth of a request worker's CPU share when both want
/// to run, so logins still make progress under a full request load.
pub const NICENESS: i32 = 10;

type Job = Box<dyn FnOnce() + Send>;

/// Runs `f` on a bcrypt thread and returns its result. Jobs queue when every thread is busy.
///
/// # Errors
///
/// The threads could not be started, or `f` panicked.
pub async fn run<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Error> {
    let (done, answer) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        // A panic drops `done`, which the caller sees as an error; the thread lives on.
        if let Ok(value) = std::panic::catch_unwind(AssertUnwindSafe(f)) {
            let _ = done.send(value);
        }
    });
    queue()?
        .send(job)
        .map_err(|_| Error::Internal("the bcrypt threads have stopped".into()))?;
    answer
        .await
        .map_err(|_| Error::Internal("a bcrypt job failed".into()))
}

/// The queue of the bcrypt threads, started on first use.
fn queue() -> Result<&'static Sender<Job>, Error> {
    static QUEUE: OnceLock<Result<Sender<Job>, String>> = OnceLock::new();
    QUEUE
        .get_or_init(start)
        .as_ref()
        .map_err(|e| Error::Internal(format!("cannot start the bcrypt threads: {e}")))
}

/// How many bcrypt threads run: one less than the cores (at least one), so one core always
/// stays for everything else even before priorities are counted.
fn thread_count() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    cores.saturating_sub(1).max(1)
}

fn start() -> Result<Sender<Job>, String> {
    let (tx, rx) = channel::<Job>();
    let rx = Arc::new(Mutex::new(rx));
    for i in 0..thread_count() {
        let rx = Arc::clone(&rx);
        std::thread::Builder::new()
            .name(format!("crudforge-bcrypt-{i}"))
            .spawn(move || work(&rx))
            .map_err(|e| e.to_string())?;
    }
    Ok(tx)
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

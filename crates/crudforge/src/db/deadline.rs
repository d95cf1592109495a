//! A time bound on SQLite statements (`DB_STATEMENT_TIMEOUT`): a progress handler on every
//! connection interrupts a statement that runs past the deadline its caller set.
//!
//! Diesel gives no access to a connection's `sqlite3` handle, so the handler is installed
//! through an SQLite auto-extension, which SQLite calls with the handle of every connection the
//! process opens. The deadline itself lives in a thread-local, set around each statement on the
//! thread that runs it ([`with_deadline`], called by the pool's [`Runner`](super::runner::Runner)):
//! connections used elsewhere (migrations, the command line) have no deadline and are never
//! interrupted. An interrupted statement fails with SQLite's `interrupted` error, which
//! [`Error::problem`](crate::Error::problem) answers as 503.
//!
//! This module's `unsafe` code is two calls into SQLite's C interface, each with the
//! argument types its documentation states.
#![allow(unsafe_code)]

use libsqlite3_sys as ffi;
use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Virtual-machine instructions between two looks at the clock: a few microseconds of work,
/// so the check costs nothing measurable and a runaway statement stops within a millisecond.
const STEPS: c_int = 1000;

thread_local! {
    /// When the statement running on this thread must stop; `None`: never.
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The progress handler: non-zero asks SQLite to interrupt the running statement.
extern "C" fn past_deadline(_: *mut c_void) -> c_int {
    // `try_with`: never panic across the C boundary, even while the thread is being torn down.
    let at = DEADLINE.try_with(Cell::get).ok().flatten();
    c_int::from(at.is_some_and(|at| Instant::now() >= at))
}

/// The auto-extension's entry point, called by SQLite for each connection it opens.
extern "C" fn on_open(
    db: *mut ffi::sqlite3,
    _err: *mut *mut c_char,
    _api: *const ffi::sqlite3_api_routines,
) -> c_int {
    // SAFETY: SQLite passes the handle of the connection being opened, valid for the call;
    // the handler is a plain function that takes no user data (hence the null pointer).
    unsafe { ffi::sqlite3_progress_handler(db, STEPS, Some(past_deadline), std::ptr::null_mut()) };
    ffi::SQLITE_OK
}

/// Registers the progress handler for every SQLite connection opened from now on. Idempotent;
/// returns whether SQLite accepted the registration (the statement bound is off otherwise).
pub(crate) fn install() -> bool {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    super::sqlite_global::register(&REGISTERED, on_open, "the statement-timeout handler")
}

/// Runs `f` (one statement's work on a SQLite connection) with a deadline `limit` from now on
/// this thread; `None` runs it unbounded. The previous deadline is restored afterwards, also
/// when `f` panics.
pub(crate) fn with_deadline<R>(limit: Option<Duration>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Instant>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = DEADLINE.try_with(|d| d.set(self.0));
        }
    }
    let Some(limit) = limit else { return f() };
    let at = Instant::now().checked_add(limit);
    let _restore = Restore(DEADLINE.with(|d| d.replace(at)));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;
    use diesel::connection::SimpleConnection;
    use diesel::{Connection, SqliteConnection};

    /// A recursive query that would run for minutes.
    const ENDLESS: &str =
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n";

    #[test]
    fn a_statement_past_its_deadline_is_interrupted_and_the_connection_still_works() {
        assert!(install());
        let mut conn = SqliteConnection::establish(":memory:").expect("in-memory SQLite");
        let r = with_deadline(Some(Duration::from_millis(50)), || {
            conn.batch_execute(ENDLESS)
        });
        let err = r.expect_err("the endless query is interrupted");
        assert!(
            crate::dialect::is_statement_timeout(&err.to_string()),
            "{err}"
        );
        // Without a deadline nothing is interrupted, and the connection is usable again.
        conn.batch_execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
            .expect("the connection still works");
    }

    #[test]
    fn deadlines_nest_and_are_restored() {
        with_deadline(Some(Duration::from_secs(60)), || {
            let outer = DEADLINE.with(Cell::get);
            with_deadline(Some(Duration::from_secs(1)), || {
                assert_ne!(DEADLINE.with(Cell::get), outer);
            });
            assert_eq!(DEADLINE.with(Cell::get), outer);
        });
        assert_eq!(DEADLINE.with(Cell::get), None);
    }
}

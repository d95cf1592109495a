//! Process-wide SQLite settings, made before SQLite starts: connections without a mutex of
//! their own, and no memory statistics.
//!
//! SQLite's bundled build is "serialized": every call on a connection (each column of each
//! row read) takes the connection's mutex, and with memory statistics on, every allocation
//! takes a global one. A list page of 25 rows made some 1,200 such lock and unlock pairs. Rust
//! already guarantees what the connection mutex protects against: a Diesel connection is
//! `Send` but not `Sync`, so one thread at a time uses it. SQLite's multi-thread mode
//! (`SQLITE_CONFIG_MULTITHREAD`) drops that mutex and keeps everything shared between
//! connections locked. Memory statistics (`sqlite3_memory_used`) are read by nothing here.
//!
//! `sqlite3_config` works only before SQLite initializes, which the first connection or
//! auto-extension of the process does: [`configure`] runs first thing when crudforge opens a
//! SQLite database or registers its auto-extensions. If something else in the process started
//! SQLite earlier, SQLite refuses and keeps its defaults, which are correct, only slower.
#![allow(unsafe_code)]

use libsqlite3_sys as ffi;
use std::ffi::{c_char, c_int};
use std::sync::OnceLock;

/// An auto-extension's entry point: SQLite calls it with each connection it opens.
pub(crate) type OnOpen = unsafe extern "C" fn(
    *mut ffi::sqlite3,
    *mut *mut c_char,
    *const ffi::sqlite3_api_routines,
) -> c_int;

/// Registers `entry` for every SQLite connection opened from now on, once per `registered`
/// (after [`configure`], since registering starts SQLite). Returns whether SQLite accepted it;
/// a refusal is logged naming `what`.
pub(crate) fn register(registered: &OnceLock<bool>, entry: OnOpen, what: &str) -> bool {
    *registered.get_or_init(|| {
        configure();
        // SAFETY: `entry` has exactly the entry-point signature SQLite expects and is a
        // function, so it lives for the whole process; registering is thread-safe (SQLite
        // serializes its list of auto-extensions).
        let rc = unsafe { ffi::sqlite3_auto_extension(Some(entry)) };
        if rc != ffi::SQLITE_OK {
            tracing::warn!(code = rc, "SQLite refused {what}");
        }
        rc == ffi::SQLITE_OK
    })
}

/// Applies the settings once per process; returns whether SQLite took them (false when
/// SQLite had already started).
pub fn configure() -> bool {
    static APPLIED: OnceLock<bool> = OnceLock::new();
    *APPLIED.get_or_init(|| {
        // SAFETY: `sqlite3_config` with these two options takes no argument and an int
        // respectively; before initialization it only sets fields of SQLite's global
        // configuration, and afterwards it returns SQLITE_MISUSE without changing anything.
        // `OnceLock` runs this once. SQLite asks that no other thread call into it meanwhile:
        // crudforge makes its own calls after this, and should code elsewhere start SQLite at
        // the same instant, the worst outcome is a mix of the two settings, each safe for
        // connections that one thread uses at a time, as Rust's types ensure.
        let threading = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_MULTITHREAD) };
        if threading != ffi::SQLITE_OK {
            tracing::debug!(
                code = threading,
                "SQLite was started before crudforge set it up"
            );
            return false;
        }
        // SAFETY: as above; the option takes one int (0: off).
        let stats = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_MEMSTATUS, 0 as c_int) };
        stats == ffi::SQLITE_OK
    })
}

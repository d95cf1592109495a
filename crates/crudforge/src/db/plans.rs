//! Stable query plans on SQLite: every connection runs with SQLite's query planner stability
//! guarantee (QPSG), so a cached prepared statement keeps its plan when its parameters are
//! bound again instead of being compiled anew on its next step.
//!
//! Without it, SQLite (3.5x) marks a statement for re-preparation whenever a parameter that
//! the planner looked at gets a new value: a `LIMIT ?` or `OFFSET ?` (so every page of a list),
//! a `LIKE ?` pattern, and any parameter compared against `sqlite_stat4` samples. A list
//! request then paid a full parse and plan of its page query, every time. Statements are
//! planned from the schema, the indexes and `sqlite_stat1` instead, as for any other
//! database whose statements are prepared once.
//!
//! Diesel exposes no connection handle, so the setting is applied by an SQLite auto-extension,
//! called for every connection the process opens, as [`deadline`](super::deadline) does.
#![allow(unsafe_code)]

use libsqlite3_sys as ffi;
use std::ffi::{c_char, c_int};
use std::sync::OnceLock;

/// The auto-extension's entry point, called by SQLite for each connection it opens.
extern "C" fn on_open(
    db: *mut ffi::sqlite3,
    _err: *mut *mut c_char,
    _api: *const ffi::sqlite3_api_routines,
) -> c_int {
    // SAFETY: SQLite passes the handle of the connection being opened, valid for the call.
    // `SQLITE_DBCONFIG_ENABLE_QPSG` takes an int (1: on) and an `int*` for the resulting
    // setting, which may be null.
    unsafe {
        ffi::sqlite3_db_config(
            db,
            ffi::SQLITE_DBCONFIG_ENABLE_QPSG,
            1 as c_int,
            std::ptr::null_mut::<c_int>(),
        )
    }
}

/// Turns QPSG on for every SQLite connection opened from now on. Idempotent; returns whether
/// SQLite accepted the registration.
pub fn install() -> bool {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    super::sqlite_global::register(&REGISTERED, on_open, "the query-plan stability setting")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    /// A raw connection to a fresh in-memory database, closed on drop.
    struct Raw(*mut ffi::sqlite3);

    impl Raw {
        fn open() -> Raw {
            let mut db = std::ptr::null_mut();
            let name = CString::new(":memory:").expect("no NUL");
            // SAFETY: a valid C string and an out-pointer for the handle.
            let rc = unsafe { ffi::sqlite3_open(name.as_ptr(), &raw mut db) };
            assert_eq!(rc, ffi::SQLITE_OK);
            Raw(db)
        }

        fn exec(&self, sql: &str) {
            let sql = CString::new(sql).expect("no NUL");
            // SAFETY: an open handle and a valid C string; no callback.
            let rc = unsafe {
                ffi::sqlite3_exec(
                    self.0,
                    sql.as_ptr(),
                    None,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(rc, ffi::SQLITE_OK, "{sql:?}");
        }

        fn qpsg(&self) -> c_int {
            let mut on: c_int = -1;
            // SAFETY: -1 leaves the setting as it is; the result goes to `on`.
            unsafe {
                ffi::sqlite3_db_config(
                    self.0,
                    ffi::SQLITE_DBCONFIG_ENABLE_QPSG,
                    -1 as c_int,
                    &raw mut on,
                )
            };
            on
        }

        fn set_qpsg(&self, on: bool) {
            // SAFETY: as in `on_open`.
            unsafe {
                ffi::sqlite3_db_config(
                    self.0,
                    ffi::SQLITE_DBCONFIG_ENABLE_QPSG,
                    c_int::from(on),
                    std::ptr::null_mut::<c_int>(),
                )
            };
        }

        /// Runs a page query three times with other `LIMIT` and `OFFSET` values on one prepared
        /// statement, and returns how often SQLite prepared it again.
        fn repreparations_of_a_page_query(&self) -> c_int {
            let sql = CString::new("SELECT x FROM t ORDER BY x LIMIT ? OFFSET ?").expect("no NUL");
            let mut stmt = std::ptr::null_mut();
            // SAFETY: an open handle, a valid C string, an out-pointer; the statement is
            // finalized below.
            unsafe {
                let rc = ffi::sqlite3_prepare_v2(
                    self.0,
                    sql.as_ptr(),
                    -1,
                    &raw mut stmt,
                    std::ptr::null_mut(),
                );
                assert_eq!(rc, ffi::SQLITE_OK);
                for (limit, offset) in [(2, 0), (3, 1), (5, 2)] {
                    ffi::sqlite3_reset(stmt);
                    ffi::sqlite3_bind_int(stmt, 1, limit);
                    ffi::sqlite3_bind_int(stmt, 2, offset);
                    let mut rows = 0;
                    while ffi::sqlite3_step(stmt) == ffi::SQLITE_ROW {
                        rows += 1;
                    }
                    assert_eq!(rows, limit, "the page has its rows");
                }
                let n = ffi::sqlite3_stmt_status(stmt, ffi::SQLITE_STMTSTATUS_REPREPARE, 0);
                ffi::sqlite3_finalize(stmt);
                n
            }
        }
    }

    impl Drop for Raw {
        fn drop(&mut self) {
            // SAFETY: the handle was opened by `open` and every statement is finalized.
            unsafe { ffi::sqlite3_close(self.0) };
        }
    }

    #[test]
    fn connections_keep_their_plans_when_parameters_change() {
        assert!(install());
        let db = Raw::open();
        assert_eq!(db.qpsg(), 1, "the auto-extension turned QPSG on");
        db.exec("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1),(2),(3),(4),(5),(6),(7);");
        assert_eq!(db.repreparations_of_a_page_query(), 0);
        // What it prevents: without QPSG, each new LIMIT compiles the statement again.
        db.set_qpsg(false);
        assert!(db.repreparations_of_a_page_query() > 0);
    }
}

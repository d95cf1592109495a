//! SQLite's process-wide settings: in a process where crudforge is the first to use SQLite
//! (this test runs in a process of its own), they take effect, and pooled connections then
//! work from many threads at once, handed from thread to thread between statements, with
//! every row read back intact.
#![allow(missing_docs, clippy::unwrap_used)]
#![cfg(feature = "sqlite")]

use crudforge::__bench::configure_sqlite_globally;
use crudforge::db::{DbOptions, Target};
use crudforge::{with_conn, Database};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use diesel_async::{RunQueryDsl, SimpleAsyncConnection};

#[derive(QueryableByName)]
struct Row {
    #[diesel(sql_type = BigInt)]
    n: i64,
    #[diesel(sql_type = Text)]
    label: String,
}

#[test]
fn settings_apply_first_and_connections_stay_sound_across_threads() {
    if !crudforge_tests::alone() {
        return;
    }
    // Nothing in this test's process has touched SQLite yet.
    assert!(configure_sqlite_globally(), "SQLite took the settings");
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // The blocking pool: statements of one connection run on different threads.
        let options = DbOptions {
            sqlite_inline: false,
            ..DbOptions::default()
        };
        let db = Database::open(Target::Sqlite(dir.path().join("t.db")), options)
            .await
            .unwrap();
        let mut conn = db.get().await.unwrap();
        with_conn!(conn, |c| c
            .batch_execute("CREATE TABLE t (n INTEGER PRIMARY KEY, label TEXT NOT NULL)")
            .await)
        .unwrap();
        drop(conn);
        let mut tasks = Vec::new();
        for w in 0..8_i64 {
            let db = db.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..50_i64 {
                    let n = w * 1000 + i;
                    let mut conn = db.get().await.unwrap();
                    let sql = format!("INSERT INTO t (n, label) VALUES ({n}, 'row {n}')");
                    with_conn!(conn, |c| c.batch_execute(&sql).await).unwrap();
                    let rows: Vec<Row> = with_conn!(conn, |c| diesel::sql_query(
                        "SELECT n, label FROM t WHERE n / 1000 = ? ORDER BY n"
                    )
                    .bind::<BigInt, _>(w)
                    .load(c)
                    .await)
                    .unwrap();
                    assert_eq!(rows.len() as i64, i + 1, "worker {w} sees its own rows");
                    for r in &rows {
                        assert_eq!(r.label, format!("row {}", r.n));
                    }
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
}

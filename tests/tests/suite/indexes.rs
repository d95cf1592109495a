//! Declared indexes and SQLite upkeep: the SQL `#[resource(index(...))]` yields creates
//! indexes the start-up check then finds, a missing one is reported (and logged with its SQL),
//! and on SQLite the maintenance checkpoint brings a WAL that readers kept growing back under
//! `journal_size_limit`, while `PRAGMA optimize` gathers statistics.
#![allow(missing_docs, clippy::unwrap_used)]

use chrono::{DateTime, Utc};
#[cfg(feature = "sqlite")]
use crudforge::__bench::JOURNAL_SIZE_LIMIT;
// Index helpers the tests reach inside the crate.
use crudforge::__bench as indexes;
use crudforge::db::IndexSpec;
use crudforge::{with_conn, Api, Database, Resource};
use crudforge_tests::{backend_tests, Backend, TestDb};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
#[cfg(feature = "sqlite")]
use std::time::{Duration, Instant};
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    shelf_items (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        kind -> Text,
        weight -> Integer,
        name -> Text,
    }
}

/// A resource whose list is filtered by `kind` and a `weight` range, in the default order.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = shelf_items)]
#[resource(rules = crudforge::perms::Open, index("kind", "weight"), index("created_at", "id"))]
pub struct ShelfItem {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub kind: String,
    pub weight: i32,
    pub name: String,
}

async fn execute(db: &Database, sql: &str) {
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(sql).await).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

async fn create_table(db: &Database) {
    execute(
        db,
        match db.backend() {
            Backend::Sqlite => {
                "CREATE TABLE shelf_items (id TEXT PRIMARY KEY, created_at TEXT NOT NULL,
                 updated_at TEXT NOT NULL, kind TEXT NOT NULL, weight INTEGER NOT NULL,
                 name TEXT NOT NULL)"
            }
            Backend::Postgres => {
                "CREATE TABLE shelf_items (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL,
                 updated_at TIMESTAMPTZ NOT NULL, kind TEXT NOT NULL, weight INTEGER NOT NULL,
                 name TEXT NOT NULL)"
            }
        },
    )
    .await;
}

backend_tests! {
    async fn the_generated_sql_creates_the_indexes_the_check_finds(t) {
        assert_eq!(ShelfItem::TABLE, "shelf_items");
        assert_eq!(ShelfItem::INDEXES, &[&["kind", "weight"][..], &["created_at", "id"][..]]);
        let declared = ShelfItem::indexes();
        assert_eq!(
            indexes::index_sql(&declared),
            [
                "CREATE INDEX IF NOT EXISTS shelf_items_kind_weight_idx ON shelf_items (kind, weight);",
                "CREATE INDEX IF NOT EXISTS shelf_items_created_at_id_idx ON shelf_items (created_at, id);",
            ]
        );

        let cfg = t.config();
        let db = t.open(&cfg).await;
        create_table(&db).await;
        let api = Api::new(cfg, db.clone()).unwrap().mount(ShelfItem::blueprint("/api/items/")).unwrap();
        assert_eq!(api.declared_indexes(), declared);

        // Nothing created yet: both are reported, and logged with the SQL that creates them.
        let (lines, guard) = crudforge_tests::logs::capture(tracing::Level::WARN);
        let missing = api.check_indexes().await.unwrap();
        drop(guard);
        assert_eq!(missing, declared);
        let log = lines.text();
        for spec in &declared {
            assert!(log.contains(&spec.name()), "{log}");
            assert!(log.contains(&spec.create_sql()), "{log}");
        }
        assert!(log.contains("WARN"), "{log}");

        // The generated statements create exactly what the check looks for, and are
        // idempotent.
        for sql in indexes::index_sql(&declared) {
            execute(&db, &sql).await;
            execute(&db, &sql).await;
        }
        assert_eq!(api.check_indexes().await.unwrap(), []);
        let present = indexes::table_indexes(&db, "shelf_items").await.unwrap();
        let names: Vec<&str> = present.iter().map(|(n, _)| n.as_str()).collect();
        assert!(names.contains(&"shelf_items_kind_weight_idx"), "{names:?}");
        // The schema is the migrations' business: the check never creates anything.
        execute(&db, &declared[0].drop_sql()).await;
        assert_eq!(api.check_indexes().await.unwrap(), [declared[0]]);
        assert_eq!(api.check_indexes().await.unwrap(), [declared[0]]);
    }

    async fn an_index_counts_when_it_starts_with_the_declared_columns(t) {
        let db = t.open(&t.config()).await;
        create_table(&db).await;
        let spec = IndexSpec::new("shelf_items", &["kind", "weight"]);
        // Columns in another order, or a partial index, do not serve the declared one.
        execute(&db, "CREATE INDEX other_order ON shelf_items (weight, kind)").await;
        execute(&db, "CREATE INDEX only_heavy ON shelf_items (kind, weight) WHERE weight > 10").await;
        execute(&db, "CREATE INDEX by_kind ON shelf_items (kind)").await;
        assert_eq!(indexes::missing(&db, &[spec]).await.unwrap(), [spec]);
        // A wider index under any name does.
        execute(&db, "CREATE UNIQUE INDEX wider ON shelf_items (kind, weight, name)").await;
        assert_eq!(indexes::missing(&db, &[spec]).await.unwrap(), []);
        // The primary key's index counts too; a table that does not exist has none.
        let by_id = IndexSpec::new("shelf_items", &["id"]);
        assert_eq!(indexes::missing(&db, &[by_id]).await.unwrap(), []);
        let nowhere = IndexSpec::new("no_such_table", &["id"]);
        assert_eq!(indexes::missing(&db, &[nowhere, by_id]).await.unwrap(), [nowhere]);
    }
}

/// Size of the `-wal` file beside `db_path` (0 when there is none).
#[cfg(feature = "sqlite")]
fn wal_size(db_path: &std::path::Path) -> u64 {
    let mut wal = db_path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(wal).map_or(0, |m| m.len())
}

#[cfg(feature = "sqlite")]
#[actix_web::test]
async fn a_checkpoint_brings_a_wal_that_a_reader_kept_growing_back_under_the_limit() {
    let t = TestDb::sqlite().await;
    let db = t.open(&t.config()).await;
    let crudforge::db::Target::Sqlite(path) = t.target() else {
        unreachable!("a SQLite test database")
    };
    execute(
        &db,
        "CREATE TABLE blobs (id INTEGER PRIMARY KEY, body BLOB NOT NULL)",
    )
    .await;
    execute(&db, "INSERT INTO blobs (body) VALUES (zeroblob(16))").await;

    // Every pooled connection bounds the WAL it leaves behind.
    #[derive(QueryableByName)]
    struct Limit {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        journal_size_limit: i64,
    }
    let mut conn = db.get().await.unwrap();
    let limit: Limit = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(diesel::sql_query("PRAGMA journal_size_limit"), c)
            .await
    })
    .unwrap();
    assert_eq!(
        u64::try_from(limit.journal_size_limit).unwrap(),
        JOURNAL_SIZE_LIMIT
    );
    drop(conn);

    // A reader that keeps its snapshot open: no checkpoint can restart the log meanwhile.
    let mut reader = SqliteConnection::establish(path.to_str().unwrap()).unwrap();
    diesel::connection::SimpleConnection::batch_execute(
        &mut reader,
        "BEGIN; SELECT count(*) FROM blobs;",
    )
    .unwrap();

    // Past the limit: 1 MiB rows, one transaction each, like a stream of writes.
    let rows = JOURNAL_SIZE_LIMIT / (1024 * 1024) + 16;
    for _ in 0..rows {
        execute(&db, "INSERT INTO blobs (body) VALUES (zeroblob(1048576))").await;
    }
    let grown = wal_size(&path);
    assert!(grown > JOURNAL_SIZE_LIMIT, "the WAL grew to {grown} bytes");

    // While the reader holds its snapshot, the checkpoint gives up after its short wait.
    let started = Instant::now();
    let busy = db.checkpoint().await.unwrap().unwrap();
    assert!(busy.busy, "{busy:?}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert!(wal_size(&path) > JOURNAL_SIZE_LIMIT);

    // Once the reader is done, one round of upkeep truncates the log.
    diesel::connection::SimpleConnection::batch_execute(&mut reader, "COMMIT").unwrap();
    let done = db.maintain(true).await.unwrap().unwrap();
    assert!(!done.busy, "{done:?}");
    let after = wal_size(&path);
    assert!(
        after <= JOURNAL_SIZE_LIMIT,
        "the WAL is still {after} bytes"
    );
    assert_eq!(after, 0, "TRUNCATE leaves an empty log");

    // The pooled connections still wait the usual 5 s for locks afterwards.
    #[derive(QueryableByName)]
    struct Timeout {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        timeout: i64,
    }
    let mut conn = db.get().await.unwrap();
    let timeout: Timeout = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(diesel::sql_query("PRAGMA busy_timeout"), c).await
    })
    .unwrap();
    assert_eq!(timeout.timeout, 5000);
}

#[actix_web::test]
async fn optimize_gathers_statistics_for_new_indexes() {
    let t = TestDb::sqlite().await;
    let db = t.open(&t.config()).await;
    create_table(&db).await;
    let mut values = Vec::new();
    for i in 0..200 {
        values.push(format!(
            "('{}', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z', 'k{}', {i}, 'n')",
            Uuid::new_v4(),
            i % 7
        ));
    }
    execute(
        &db,
        &format!("INSERT INTO shelf_items VALUES {}", values.join(", ")),
    )
    .await;
    for sql in indexes::index_sql(&ShelfItem::indexes()) {
        execute(&db, &sql).await;
    }
    db.optimize().await.unwrap();
    #[derive(QueryableByName)]
    struct Stat {
        #[diesel(sql_type = diesel::sql_types::Text)]
        idx: String,
    }
    let mut conn = db.get().await.unwrap();
    let stats: Vec<Stat> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::load(
            diesel::sql_query("SELECT idx FROM sqlite_stat1 WHERE tbl = 'shelf_items'"),
            c,
        )
        .await
    })
    .unwrap();
    let names: Vec<&str> = stats.iter().map(|s| s.idx.as_str()).collect();
    assert!(names.contains(&"shelf_items_kind_weight_idx"), "{names:?}");
    // The bundled SQLite gathers STAT4 samples too; they are removed (with them, cached
    // statements would be compiled again for every new bound value).
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let tables: Count = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            diesel::sql_query(
                "SELECT count(*) AS n FROM sqlite_schema WHERE name = 'sqlite_stat4'",
            ),
            c,
        )
        .await
    })
    .unwrap();
    assert_eq!(
        tables.n, 1,
        "ANALYZE made sqlite_stat4 (the bundled build has STAT4)"
    );
    let samples: Count = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            diesel::sql_query("SELECT count(*) AS n FROM sqlite_stat4"),
            c,
        )
        .await
    })
    .unwrap();
    assert_eq!(samples.n, 0, "STAT4 samples are dropped after optimize");
    // On PostgreSQL (and here too) the calls are safe to repeat.
    db.optimize().await.unwrap();
}

#[cfg(feature = "postgres")]
#[actix_web::test]
async fn upkeep_does_nothing_on_postgres() {
    let Some(t) = TestDb::postgres().await else {
        return;
    };
    let db = t.open(&t.config()).await;
    db.optimize().await.unwrap();
    assert_eq!(db.checkpoint().await.unwrap(), None);
    assert_eq!(db.maintain(true).await.unwrap(), None);
}

#[cfg(feature = "sqlite")]
#[actix_web::test]
async fn a_connection_opened_while_another_writes_does_not_wait_to_optimize() {
    let t = TestDb::sqlite().await;
    let db = t.open(&t.config()).await;
    let crudforge::db::Target::Sqlite(path) = t.target() else {
        unreachable!("a SQLite test database")
    };
    create_table(&db).await;
    execute(
        &db,
        "INSERT INTO shelf_items VALUES ('a', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z', 'k', 1, 'n')",
    )
    .await;
    // An index without statistics: a new connection's `PRAGMA optimize=0x10002` would analyze.
    execute(&db, &ShelfItem::indexes()[0].create_sql()).await;

    // Another connection holds the write lock.
    let mut writer = SqliteConnection::establish(path.to_str().unwrap()).unwrap();
    diesel::connection::SimpleConnection::batch_execute(&mut writer, "BEGIN IMMEDIATE").unwrap();

    // Every pooled connection at once, so new ones are opened now.
    let started = Instant::now();
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(db.get().await.unwrap());
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "opening connections waited {:?} for the writer",
        started.elapsed()
    );
    // They still wait for locks as usual (the optimization's own wait was the exception).
    #[derive(QueryableByName)]
    struct Timeout {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        timeout: i64,
    }
    for conn in &mut held {
        let timeout: Timeout = with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::get_result(diesel::sql_query("PRAGMA busy_timeout"), c).await
        })
        .unwrap();
        assert_eq!(timeout.timeout, 5000);
    }
    diesel::connection::SimpleConnection::batch_execute(&mut writer, "COMMIT").unwrap();
}

//! Schema drift on both backends: a table that matches its resource gives no difference; a
//! dropped column, a nullability that differs from the field, an incompatible column type, a
//! dropped declared index and a dropped table each give their line, all of them at once;
//! `SCHEMA_CHECK=strict` refuses to start (`apply_schema_check`, `serve` before binding, and a
//! server whose background check stops it), `warn` logs each line and serves, `off` compares
//! nothing.
#![allow(missing_docs, clippy::unwrap_used)]

use chrono::{DateTime, Utc};
use crudforge::config::SchemaCheck;
use crudforge::db::{SchemaDrift, SchemaError};
use crudforge::users::UserBlueprint;
use crudforge::{with_conn, Api, Config, Database, Resource};
use crudforge_tests::{backend_tests, Backend, TestDb};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    drift_notes (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        title -> Text,
        level -> Integer,
        note -> Nullable<Text>,
        done -> Bool,
    }
}

/// A resource with a required text, an `i32`, an optional text, a boolean and an index.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = drift_notes)]
#[resource(rules = crudforge::perms::Open, index("title", "level"))]
pub struct DriftNote {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub title: String,
    pub level: i32,
    pub note: Option<String>,
    pub done: bool,
}

/// Column definitions of the three columns the cases change.
struct Columns {
    title: &'static str,
    level: &'static str,
    note: &'static str,
}

/// What the migration of `DriftNote` would write.
const MATCHING: Columns = Columns {
    title: "TEXT NOT NULL",
    level: "INTEGER NOT NULL",
    note: "TEXT",
};

async fn execute(db: &Database, sql: &str) {
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(sql).await).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// (Re)creates `drift_notes` with `columns` and its declared index.
async fn create_table(db: &Database, columns: &Columns) {
    let (id, at, flag) = match db.backend() {
        Backend::Sqlite => ("TEXT", "TEXT", "BOOLEAN NOT NULL DEFAULT 0"),
        Backend::Postgres => ("UUID", "TIMESTAMPTZ", "BOOLEAN NOT NULL DEFAULT false"),
    };
    let Columns { title, level, note } = columns;
    execute(
        db,
        &format!(
            "DROP TABLE IF EXISTS drift_notes;
             CREATE TABLE drift_notes (id {id} PRIMARY KEY, created_at {at} NOT NULL,
                 updated_at {at} NOT NULL, title {title}, level {level}, note {note}, done {flag});
             CREATE INDEX drift_notes_title_level_idx ON drift_notes (title, level);"
        ),
    )
    .await;
}

async fn api(t: &TestDb, check: SchemaCheck) -> (Api, Database) {
    let cfg = t.config().with(|c| c.db.schema_check = check);
    let db = t.open(&cfg).await;
    create_table(&db, &MATCHING).await;
    let api = Api::new(cfg, db.clone())
        .unwrap()
        .mount(DriftNote::blueprint("/api/notes/"))
        .unwrap();
    (api, db)
}

async fn lines(api: &Api) -> Vec<String> {
    let drifts = api.check_schema().await.unwrap();
    drifts.iter().map(ToString::to_string).collect()
}

/// Drops the `note` column and the declared index: two differences.
async fn drift(db: &Database) -> [&'static str; 2] {
    execute(
        db,
        "ALTER TABLE drift_notes DROP COLUMN note; DROP INDEX drift_notes_title_level_idx;",
    )
    .await;
    [
        "drift_notes.note: missing",
        "drift_notes(title, level): index missing",
    ]
}

/// A configuration for `t` with `SCHEMA_CHECK` set.
fn config(t: &TestDb, check: SchemaCheck) -> Config {
    t.config().with(|c| c.db.schema_check = check)
}

backend_tests! {
    async fn a_matching_schema_has_no_drift(t) {
        let (api, db) = api(&t, SchemaCheck::Warn).await;
        assert_eq!(lines(&api).await, Vec::<String>::new());
        // The user blueprint's model over the library's own tables, and a resource mounted
        // twice, agree too.
        let api = Api::new(config(&t, SchemaCheck::Warn), db)
            .unwrap()
            .mount(UserBlueprint::default())
            .unwrap()
            .mount(DriftNote::blueprint("/api/notes/"))
            .unwrap()
            .mount(DriftNote::blueprint("/api/more-notes/"))
            .unwrap();
        assert_eq!(lines(&api).await, Vec::<String>::new());
    }

    async fn each_difference_is_one_line(t) {
        let (api, db) = api(&t, SchemaCheck::Warn).await;
        let sqlite = db.backend() == Backend::Sqlite;
        let cases: [(Columns, &str); 4] = [
            (
                Columns { title: "TEXT", ..MATCHING },
                "drift_notes.title: nullable, but the field is not an Option",
            ),
            (
                Columns { note: "TEXT NOT NULL DEFAULT ''", ..MATCHING },
                "drift_notes.note: NOT NULL, but the field is an Option",
            ),
            (
                Columns { level: "TEXT NOT NULL", ..MATCHING },
                if sqlite {
                    "drift_notes.level: type TEXT, expected INTEGER or NUMERIC affinity"
                } else {
                    "drift_notes.level: type text, expected integer"
                },
            ),
            (
                Columns { title: "INTEGER NOT NULL", ..MATCHING },
                if sqlite {
                    "drift_notes.title: type INTEGER, expected TEXT affinity"
                } else {
                    "drift_notes.title: type integer, expected text or character varying"
                },
            ),
        ];
        for (columns, line) in cases {
            create_table(&db, &columns).await;
            assert_eq!(lines(&api).await, [line]);
        }
        if !sqlite {
            // PostgreSQL: an i32 field over a bigint column cannot be read by Diesel.
            create_table(&db, &Columns { level: "BIGINT NOT NULL", ..MATCHING }).await;
            assert_eq!(lines(&api).await, ["drift_notes.level: type bigint, expected integer"]);
        } else {
            // SQLite is lenient: any declared type of a fitting affinity will do.
            create_table(
                &db,
                &Columns { title: "VARCHAR(100) NOT NULL", level: "BIGINT NOT NULL", note: "CLOB" },
            )
            .await;
            assert_eq!(lines(&api).await, Vec::<String>::new());
        }

        // A dropped column, a dropped index, a dropped table.
        create_table(&db, &MATCHING).await;
        execute(&db, "ALTER TABLE drift_notes DROP COLUMN note").await;
        assert_eq!(lines(&api).await, ["drift_notes.note: missing"]);
        create_table(&db, &MATCHING).await;
        execute(&db, "DROP INDEX drift_notes_title_level_idx").await;
        assert_eq!(lines(&api).await, ["drift_notes(title, level): index missing"]);
        let drifts = api.check_schema().await.unwrap();
        assert!(matches!(&drifts[0], SchemaDrift::MissingIndex { index, .. } if index.create_sql().contains("drift_notes_title_level_idx")));
        execute(&db, "DROP TABLE drift_notes").await;
        assert_eq!(lines(&api).await, ["drift_notes: missing"]);
        assert_eq!(api.check_schema().await.unwrap()[0].table(), "drift_notes");
    }

    async fn every_difference_is_returned_once(t) {
        let (_, db) = api(&t, SchemaCheck::Warn).await;
        create_table(&db, &Columns { title: "TEXT", level: "TEXT NOT NULL", note: "TEXT" }).await;
        execute(
            &db,
            "ALTER TABLE drift_notes DROP COLUMN note; DROP INDEX drift_notes_title_level_idx;",
        )
        .await;
        // Mounted twice: each difference is still listed once.
        let api = Api::new(config(&t, SchemaCheck::Warn), db.clone())
            .unwrap()
            .mount(DriftNote::blueprint("/api/notes/"))
            .unwrap()
            .mount(DriftNote::blueprint("/api/more-notes/"))
            .unwrap();
        let level = match db.backend() {
            Backend::Sqlite => "drift_notes.level: type TEXT, expected INTEGER or NUMERIC affinity",
            Backend::Postgres => "drift_notes.level: type text, expected integer",
        };
        assert_eq!(
            lines(&api).await,
            [
                "drift_notes.title: nullable, but the field is not an Option",
                level,
                "drift_notes.note: missing",
                "drift_notes(title, level): index missing",
            ]
        );
    }

    async fn strict_refuses_to_start(t) {
        let (api, db) = api(&t, SchemaCheck::Strict).await;
        assert_eq!(api.apply_schema_check().await.unwrap(), []);
        let expected = drift(&db).await;

        let err = api.apply_schema_check().await.unwrap_err();
        match &err {
            SchemaError::Drift(drifts) => assert_eq!(drifts.len(), 2),
            other => panic!("{other}"),
        }
        let message = err.to_string();
        for line in expected {
            assert!(message.contains(line), "{message}");
        }

        // `serve` checks before it binds: the address stays free.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        let err = api.clone().serve(&addr).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
        for line in expected {
            assert!(err.to_string().contains(line), "{err}");
        }
        std::net::TcpListener::bind(&addr).unwrap();

        // A server started without the check first runs it once ready, and stops itself,
        // logging each difference.
        let api = Api::new(config(&t, SchemaCheck::Strict), db.clone())
            .unwrap()
            .mount(DriftNote::blueprint("/api/notes/"))
            .unwrap();
        let (logs, guard) = crudforge_tests::logs::capture(tracing::Level::WARN);
        let server = api.server("127.0.0.1:0").unwrap();
        let stopped = tokio::time::timeout(std::time::Duration::from_secs(120), server).await;
        drop(guard);
        assert!(matches!(stopped, Ok(Ok(()))), "the refused server stopped: {stopped:?}");
        let log = logs.text();
        for line in expected {
            assert!(log.contains(&format!("schema drift: {line}")), "{log}");
        }
        assert!(log.contains("ERROR"), "{log}");
        assert!(log.contains("refusing to serve"), "{log}");
    }

    async fn warn_logs_each_difference_and_serves(t) {
        let (api, db) = api(&t, SchemaCheck::Warn).await;
        let expected = drift(&db).await;

        let (logs, guard) = crudforge_tests::logs::capture(tracing::Level::WARN);
        let drifts = api.apply_schema_check().await.unwrap();
        drop(guard);
        assert_eq!(drifts.iter().map(ToString::to_string).collect::<Vec<_>>(), expected);
        let log = logs.text();
        for line in expected {
            assert!(log.contains(&format!("WARN crudforge::schema: schema drift: {line}")), "{log}");
        }
        // The missing index comes with the statement that adds it.
        assert!(log.contains("CREATE INDEX IF NOT EXISTS drift_notes_title_level_idx"), "{log}");

        // A server checks once it is ready, logs, and goes on serving.
        let api = Api::new(config(&t, SchemaCheck::Warn), db.clone())
            .unwrap()
            .mount(DriftNote::blueprint("/api/notes/"))
            .unwrap();
        let (logs, guard) = crudforge_tests::logs::capture(tracing::Level::WARN);
        let server = api.server("127.0.0.1:0").unwrap();
        let handle = server.handle();
        let running = actix_web::rt::spawn(server);
        for _ in 0..1200 {
            if logs.text().matches("schema drift:").count() == 2 {
                break;
            }
            actix_web::rt::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let log = logs.text();
        assert_eq!(log.matches("schema drift:").count(), 2, "{log}");
        assert!(!running.is_finished(), "the server still serves");
        handle.stop(false).await;
        running.await.unwrap().unwrap();
        drop(guard);
    }

    async fn off_compares_nothing(t) {
        let (api, db) = api(&t, SchemaCheck::Off).await;
        drift(&db).await;
        let (logs, guard) = crudforge_tests::logs::capture(tracing::Level::WARN);
        assert_eq!(api.apply_schema_check().await.unwrap(), []);
        drop(guard);
        assert_eq!(logs.text(), "");
        // The on-demand check ignores the setting.
        assert_eq!(api.check_schema().await.unwrap().len(), 2);
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// `drift_notes` under another Rust name.
    #[sql_name = "drift_notes"]
    renamed_notes (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        title -> Text,
    }
}

/// Part of `drift_notes`, through a `table!` whose Rust name differs from the SQL one.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = renamed_notes)]
#[resource(rules = crudforge::perms::Open, index("title"))]
pub struct RenamedNote {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub title: String,
}

backend_tests! {
    async fn the_sql_name_of_a_table_is_checked(t) {
        assert_eq!(RenamedNote::TABLE, "renamed_notes");
        assert_eq!(RenamedNote::sql_table(), "drift_notes");
        assert_eq!(RenamedNote::indexes()[0].table, "drift_notes");
        let (_, db) = api(&t, SchemaCheck::Warn).await;
        let api = Api::new(config(&t, SchemaCheck::Warn), db.clone())
            .unwrap()
            .mount(RenamedNote::blueprint("/api/renamed/"))
            .unwrap();
        // `drift_notes_title_level_idx` starts with `title`: it serves the declared index.
        assert_eq!(lines(&api).await, Vec::<String>::new());
        execute(&db, "DROP TABLE drift_notes").await;
        assert_eq!(lines(&api).await, ["drift_notes: missing"]);
    }
}

//! The reference application's schema: its migrated database agrees with every mounted
//! resource (on SQLite, and on PostgreSQL when configured); `schema check` prints one line per
//! difference and exits 1 when there is one; `serve` with `SCHEMA_CHECK=strict` refuses a
//! drifted database and exits non-zero, and with the default `warn` logs the difference and
//! serves; `make-migrations` has nothing to write for its schema-first resources.

use crate::harness::{cli, Server};
use crudforge_tests::TestDb;
use std::path::Path;
use std::process::Stdio;

async fn execute(db: &crudforge::Database, sql: &str) {
    let mut conn = db.get().await.unwrap();
    crudforge::with_conn!(conn, |c| {
        diesel_async::SimpleAsyncConnection::batch_execute(c, sql).await
    })
    .unwrap();
}

async fn check(t: &TestDb) {
    let config = t.config();
    let (db, _) = reference_app::cli::open_and_migrate(&config).await.unwrap();
    let api = reference_app::cli::build_api(config, db.clone()).unwrap();
    let drifts = api.check_schema().await.unwrap();
    assert!(drifts.is_empty(), "{:?}: {drifts:?}", t.backend);
    // A column dropped by hand is found, on the application's own table and on the library's
    // table its user model extends.
    execute(
        &db,
        "ALTER TABLE critters DROP COLUMN vet_notes; ALTER TABLE users DROP COLUMN city",
    )
    .await;
    let lines: Vec<String> = api
        .check_schema()
        .await
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        lines,
        ["users.city: missing", "critters.vet_notes: missing"]
    );
}

#[test]
fn the_migrated_reference_database_has_no_drift() {
    actix_web::rt::System::new().block_on(async {
        check(&TestDb::sqlite().await).await;
        if let Some(t) = TestDb::postgres().await {
            check(&t).await;
        }
    });
}

/// Migrates the SQLite file `app.db` in `dir` with the binary, then drops `critters.vet_notes`.
fn drifted(dir: &Path) -> Vec<(&'static str, String)> {
    let uri = format!("sqlite://{}", dir.join("app.db").display());
    let env = vec![("ORM_DATABASE_URI", uri.clone())];
    let out = cli(dir, &env, &["migrate"]);
    assert!(out.status.success(), "{out:?}");
    let out = cli(dir, &env, &["schema", "check"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    actix_web::rt::System::new().block_on(async {
        let config = crudforge::Config::default().with(|c| {
            c.db.database_uri = Some(uri.clone());
            c.db.data_dir = dir.join("data");
        });
        let db = crudforge::Database::connect(&config).await.unwrap();
        execute(&db, "ALTER TABLE critters DROP COLUMN vet_notes").await;
    });
    env
}

#[test]
fn schema_check_prints_each_difference_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let env = drifted(dir.path());
    let out = cli(dir.path(), &env, &["schema", "check"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "critters.vet_notes: missing\n"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: 1 difference(s) between the database and the resources\n"
    );
}

#[test]
fn strict_serve_refuses_a_drifted_database() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = drifted(dir.path());
    env.push(("SCHEMA_CHECK", "strict".to_owned()));
    let out = cli(dir.path(), &env, &["serve", "--bind", "127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: the database schema differs from the mounted resources (SCHEMA_CHECK=strict): critters.vet_notes: missing"),
        "{stderr}"
    );
}

#[test]
fn warn_serve_logs_the_difference_and_serves() {
    let dir = tempfile::tempdir().unwrap();
    let env = drifted(dir.path());
    let log = dir.path().join("serve.log");
    let file = std::fs::File::create(&log).unwrap();
    let mut server = Server::spawn(dir.path(), &env, Stdio::from(file));
    server.wait_ready();
    assert_eq!(server.get("/ready").status, 200);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("schema drift: critters.vet_notes: missing"),
        "{text}"
    );
    assert!(server.try_wait().is_none(), "still serving");
}

/// Copies the folder `from` into `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The migration folders under `dir/sqlite` and `dir/postgres`.
fn folders(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for backend in ["sqlite", "postgres"] {
        for entry in std::fs::read_dir(dir.join(backend)).unwrap() {
            names.push(format!(
                "{backend}/{}",
                entry.unwrap().file_name().to_string_lossy()
            ));
        }
    }
    names.sort();
    names
}

/// `make-migrations` is one of the application's commands: over a copy of its own migrations
/// (its resources are schema-first) it finds nothing to write, writes no folder and says so,
/// opening no database; a malformed name is one error line and a non-zero exit.
#[test]
fn make_migrations_has_nothing_to_write_for_schema_first_resources() {
    let dir = tempfile::tempdir().unwrap();
    let migrations = dir.path().join("migrations");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations"),
        &migrations,
    );
    let before = folders(&migrations);
    let out = cli(dir.path(), &[], &["make-migrations", "more"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("no changes"), "{stdout}");
    assert_eq!(folders(&migrations), before, "no folder written");
    let out = cli(dir.path(), &[], &["make-migrations", "Not A Name"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with("error: ") && stderr.lines().count() == 1,
        "{stderr}"
    );
    assert_eq!(folders(&migrations), before);
    let data: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(data, ["migrations"], "no database, no key file");
}

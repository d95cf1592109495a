//! Shared test harness: a fresh database per test on SQLite and on PostgreSQL.
//!
//! [`backend_tests!`] expands one test body into a SQLite test and a PostgreSQL test. The
//! PostgreSQL one runs when `CRUDFORGE_TEST_POSTGRES_URL` is set (each test creates and drops
//! its own database), is skipped otherwise, and fails when `CRUDFORGE_REQUIRE_POSTGRES=1` and
//! no server is configured.

pub mod authenticator;
pub mod callers;
pub mod critters;
pub mod http;
pub mod logs;
pub mod oidc;
pub mod parts;
pub mod receiver;
pub mod smtp;
pub mod tools;

pub use crudforge::db::Backend;
use crudforge::db::Target;
pub use crudforge::{Config, Database};
#[cfg(feature = "postgres")]
use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};
use std::path::PathBuf;

/// The guide `docs/resources.md`, whose examples run as doc tests.
#[doc = include_str!("../../docs/resources.md")]
#[cfg(doctest)]
pub struct ResourcesGuide;

/// The guide `docs/getting-started.md`, whose examples compile (and run) as doc tests; its
/// `embed_migrations!("migrations")` embeds `tests/migrations`.
#[doc = include_str!("../../docs/getting-started.md")]
#[cfg(doctest)]
pub struct GettingStartedGuide;

/// The guide `docs/cli.md`, whose embedding examples compile as doc tests (as
/// `docs/getting-started.md`'s, whose embedding they repeat).
#[doc = include_str!("../../docs/cli.md")]
#[cfg(doctest)]
pub struct CliGuide;

/// The guide `docs/permissions.md`, whose model examples compile as doc tests.
#[doc = include_str!("../../docs/permissions.md")]
#[cfg(doctest)]
pub struct PermissionsGuide;

/// The guide `docs/filtering.md`, whose examples run as doc tests.
#[doc = include_str!("../../docs/filtering.md")]
#[cfg(doctest)]
pub struct FilteringGuide;

/// The guide `docs/aggregates.md`, whose example runs as a doc test.
#[doc = include_str!("../../docs/aggregates.md")]
#[cfg(doctest)]
pub struct AggregatesGuide;

/// The guide `docs/jobs.md`, whose examples compile as doc tests.
#[doc = include_str!("../../docs/jobs.md")]
#[cfg(doctest)]
pub struct JobsGuide;

/// The guide `docs/mail.md`, whose example compiles as a doc test.
#[doc = include_str!("../../docs/mail.md")]
#[cfg(doctest)]
pub struct MailGuide;

/// A 40-byte signing key for tests.
pub const TEST_SECRET: &str = "test-secret-key-that-is-long-enough-0123456789";

/// One test's private database.
pub struct TestDb {
    /// Which backend.
    pub backend: Backend,
    /// The `ORM_DATABASE_URI` of this database.
    pub uri: String,
    /// A private data directory.
    pub dir: tempfile::TempDir,
    /// The server and the name of a PostgreSQL test database, dropped with it.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pg: Option<(String, String)>,
}

impl std::fmt::Debug for TestDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TestDb({:?}, {})", self.backend, self.uri)
    }
}

/// The PostgreSQL server URL for tests, if configured. Panics when PostgreSQL is required but
/// not configured.
pub fn postgres_url() -> Option<String> {
    let url = std::env::var("CRUDFORGE_TEST_POSTGRES_URL")
        .ok()
        .filter(|s| !s.is_empty());
    if url.is_none() && std::env::var("CRUDFORGE_REQUIRE_POSTGRES").as_deref() == Ok("1") {
        panic!("CRUDFORGE_REQUIRE_POSTGRES=1 but CRUDFORGE_TEST_POSTGRES_URL is not set");
    }
    url
}

/// Replaces the database name of a PostgreSQL URL.
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.find('?') {
        Some(i) => (&url[..i], &url[i..]),
        None => (url, ""),
    };
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let base = match base[after_scheme..].find('/') {
        Some(i) => &base[..after_scheme + i],
        None => base,
    };
    format!("{base}/{name}{query}")
}

impl TestDb {
    /// A fresh SQLite file in a private directory.
    pub async fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().expect("tempdir");
        let uri = format!("sqlite://{}", dir.path().join("test.db").display());
        TestDb {
            backend: Backend::Sqlite,
            uri,
            dir,
            pg: None,
        }
    }

    /// A fresh PostgreSQL database, or `None` when no server is configured (see module docs).
    #[cfg(feature = "postgres")]
    pub async fn postgres() -> Option<TestDb> {
        let Some(server) = postgres_url() else {
            eprintln!("skipped: CRUDFORGE_TEST_POSTGRES_URL is not set");
            return None;
        };
        let name = format!("cf_test_{}", uuid::Uuid::new_v4().simple());
        let mut admin = AsyncPgConnection::establish(&server)
            .await
            .unwrap_or_else(|e| panic!("cannot reach PostgreSQL at {server}: {e}"));
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("create test database");
        Some(TestDb {
            backend: Backend::Postgres,
            uri: with_database(&server, &name),
            dir: tempfile::tempdir().expect("tempdir"),
            pg: Some((server, name)),
        })
    }

    /// A configuration pointing at this database, with a fixed secret and private data dir.
    pub fn config(&self) -> Config {
        Config::default().with(|c| {
            c.db.database_uri = Some(self.uri.clone());
            c.db.data_dir = self.data_dir();
            c.auth.jwt_secret_key = Some(crudforge::config::Secret::new(TEST_SECRET));
        })
    }

    /// The private data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Opens the database (with monitoring as `config` says) and runs the migrations.
    pub async fn open(&self, config: &Config) -> Database {
        let db = Database::connect(config).await.expect("open database");
        db.run_migrations(None).await.expect("migrations");
        db
    }

    /// The target of this database.
    pub fn target(&self) -> Target {
        Target::parse(Some(&self.uri), &self.data_dir()).expect("target")
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        #[cfg(feature = "postgres")]
        if let Some((server, name)) = self.pg.take() {
            // Drop from a thread of its own: Drop cannot await, and the test's runtime may be
            // shutting down.
            let _ = std::thread::spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                rt.block_on(async {
                    if let Ok(mut c) = AsyncPgConnection::establish(&server).await {
                        let _ = c
                            .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                            .await;
                    }
                });
            })
            .join();
        }
    }
}

/// Expands each test body into `<name>::sqlite` and `<name>::postgres` tests; each exists
/// when this crate's feature of its backend (`sqlite`, `postgres`) is on.
///
/// ```ignore
/// backend_tests! {
///     async fn health_is_ok(t) {
///         let db = t.open(&t.config()).await;
///         // ...
///     }
/// }
/// ```
#[macro_export]
macro_rules! backend_tests {
    ($(async fn $name:ident($t:ident) $body:block)*) => {
        $(
            mod $name {
                #[allow(unused_imports)]
                use super::*;

                $crate::__if_sqlite! {
                    #[actix_web::test]
                    async fn sqlite() {
                        let $t = $crate::TestDb::sqlite().await;
                        $body
                    }
                }

                $crate::__if_postgres! {
                    #[actix_web::test]
                    async fn postgres() {
                        let Some($t) = $crate::TestDb::postgres().await else {
                            return;
                        };
                        $body
                    }
                }
            }
        )*
    };
}

/// Expands to its input when this crate's `sqlite` feature is on (a `#[cfg]` in
/// [`backend_tests!`]'s output would test the features of the crate using it).
#[cfg(feature = "sqlite")]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_sqlite {
    ($($item:tt)*) => { $($item)* };
}

/// Expands to its input when this crate's `sqlite` feature is on.
#[cfg(not(feature = "sqlite"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_sqlite {
    ($($item:tt)*) => {};
}

/// Expands to its input when this crate's `postgres` feature is on.
#[cfg(feature = "postgres")]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_postgres {
    ($($item:tt)*) => { $($item)* };
}

/// Expands to its input when this crate's `postgres` feature is on.
#[cfg(not(feature = "postgres"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_postgres {
    ($($item:tt)*) => {};
}

/// The variable that marks a child process started by [`alone`].
const ALONE: &str = "CRUDFORGE_TEST_ALONE";

/// A user of `db` with `email`, enabled, with the password `some-pass` (bcrypt cost
/// 4): its id.
///
/// # Panics
///
/// When the user cannot be created.
pub async fn user(db: &Database, email: &str) -> uuid::Uuid {
    crudforge::users::create_user(db, email, "some-pass", true, 4)
        .await
        .expect("a test user")
}

/// Runs the calling test again in a process of its own, for a test that reads or sets
/// process-wide state (SQLite's global settings, the metrics registry, the environment) and
/// shares one test binary with every other suite.
///
/// In the test binary's run, it starts the binary anew with only the calling test selected
/// (by the name of the thread the harness runs it on), waits, fails when that run fails or
/// ran no test, and returns `false`: the caller returns. In that child it returns `true`: the
/// caller goes on with its body. Where the harness gives no test name (one test thread), it
/// returns `true` and the body runs here.
///
/// ```text
/// #[test]
/// fn reads_process_wide_counters() {
///     if !crudforge_tests::alone() {
///         return;
///     }
///     // ... the test's body
/// }
/// ```
#[must_use]
pub fn alone() -> bool {
    if std::env::var_os(ALONE).is_some() {
        return true;
    }
    let Some(name) = std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .map(str::to_owned)
    else {
        return true;
    };
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = std::process::Command::new(exe)
        .args([name.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env(ALONE, "1")
        .output()
        .expect("the test binary starts again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{name}, run in a process of its own, failed or did not run:\n{stdout}\n{stderr}"
    );
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_name_is_replaced() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/test", "x"),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            with_database("postgres://u:p@h/db?sslmode=disable", "y"),
            "postgres://u:p@h/y?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "z"), "postgres://h/z");
    }
}

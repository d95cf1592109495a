//! A private database for one run (a SQLite file in a temporary directory, or a PostgreSQL
//! database created on the server and dropped afterwards) and the seeded critters.

use chrono::{Duration, NaiveDate, SubsecRound, Utc};
use crudforge::config::Secret;
use crudforge::sql_types::Portable;
use crudforge::{with_conn, Config, Database};
use crudforge_tests::critters::critters;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use std::path::PathBuf;
use uuid::Uuid;

/// A 40-byte signing key (the API needs one; the benchmark never issues tokens).
const SECRET: &str = "crud-bench-secret-key-long-enough-0123456789";

/// Species cycled through by the seeded rows.
pub(crate) const SPECIES: [&str; 5] = ["cat", "dog", "fox", "owl", "eel"];

/// Where this run's database lives; [`Scratch::cleanup`] removes it.
#[derive(Debug)]
pub(crate) struct Scratch {
    dir: PathBuf,
    /// `(server URL, database name)` of a PostgreSQL database to drop.
    pg: Option<(String, String)>,
    /// The configuration pointing at the database.
    pub(crate) config: Config,
}

fn scratch_dir() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("crud-bench-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

fn config(uri: String, dir: &std::path::Path) -> Config {
    Config::default().with(|c| {
        c.db.database_uri = Some(uri);
        c.db.data_dir = dir.join("data");
        c.auth.jwt_secret_key = Some(Secret::new(SECRET));
    })
}

impl Scratch {
    /// A SQLite file in a fresh temporary directory.
    pub(crate) fn sqlite() -> Result<Scratch, String> {
        let dir = scratch_dir()?;
        let uri = format!("sqlite://{}", dir.join("bench.db").display());
        Ok(Scratch {
            config: config(uri, &dir),
            dir,
            pg: None,
        })
    }

    /// A fresh database on the PostgreSQL server at `server`.
    pub(crate) async fn postgres(server: &str) -> Result<Scratch, String> {
        let name = format!("crud_bench_{}", Uuid::new_v4().simple());
        let mut admin = AsyncPgConnection::establish(server)
            .await
            .map_err(|e| format!("cannot reach PostgreSQL: {e}"))?;
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .map_err(|e| format!("cannot create database {name}: {e}"))?;
        let dir = scratch_dir()?;
        let uri = crudforge_tests::with_database(server, &name);
        Ok(Scratch {
            config: config(uri, &dir),
            dir,
            pg: Some((server.to_owned(), name)),
        })
    }

    /// Drops the PostgreSQL database (if any) and removes the temporary directory.
    pub(crate) async fn cleanup(self) {
        if let Some((server, name)) = &self.pg {
            match AsyncPgConnection::establish(server).await {
                Ok(mut admin) => {
                    if let Err(e) = admin
                        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .await
                    {
                        eprintln!("warning: could not drop database {name}: {e}");
                    }
                }
                Err(e) => eprintln!("warning: could not drop database {name}: {e}"),
            }
        }
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            eprintln!("warning: could not remove {}: {e}", self.dir.display());
        }
    }
}

/// Opens the database, runs crudforge's migrations and creates the critters table.
pub(crate) async fn open(config: &Config) -> Result<Database, String> {
    let db = Database::connect(config)
        .await
        .map_err(|e| format!("open database: {e}"))?;
    db.run_migrations(None)
        .await
        .map_err(|e| format!("migrations: {e}"))?;
    crudforge_tests::critters::create_table(&db).await;
    Ok(db)
}

/// Inserts `rows` critters with varied values (every nullable kind both set and null) and
/// distinct creation times. Returns their ids in creation order.
pub(crate) async fn seed(db: &Database, rows: usize) -> Result<Vec<Uuid>, String> {
    let start = Utc::now().trunc_subsecs(6) - Duration::seconds(i64::try_from(rows).unwrap_or(0));
    let born = NaiveDate::from_ymd_opt(2015, 1, 1).ok_or("bad date")?;
    let mut ids = Vec::with_capacity(rows);
    let mut conn = db.get().await.map_err(|e| format!("connection: {e}"))?;
    // One transaction: a commit per row would measure the disk, not the seeding.
    with_conn!(conn, |c| c.batch_execute("BEGIN").await).map_err(|e| format!("begin: {e}"))?;
    for i in 0..rows {
        let id = Uuid::new_v4();
        ids.push(id);
        let n = i32::try_from(i).map_err(|_| "too many rows")?;
        let at = start + Duration::seconds(i64::from(n));
        let values = (
            critters::id.eq(Portable(id)),
            critters::created_at.eq(Portable(at)),
            critters::updated_at.eq(Portable(at)),
            critters::name.eq(format!("critter-{i}")),
            critters::species.eq(SPECIES[i % SPECIES.len()]),
            critters::cuteness_level.eq(n * 7 % 10 + 1),
            critters::weight.eq((i % 7 != 0).then(|| 0.5 + f64::from(n % 40) * 0.25)),
            critters::nickname.eq((i % 3 == 0).then(|| format!("nick {i}"))),
            critters::vaccinated.eq(i % 2 == 0),
            critters::born_on.eq((i % 4 != 0).then(|| born + Duration::days(i64::from(n)))),
            critters::seen_at.eq(Portable((i % 2 == 1).then(|| at + Duration::minutes(5)))),
            critters::keeper_id.eq(Portable((i % 5 == 0).then(Uuid::new_v4))),
            critters::tag.eq(format!("tag-{i}")),
            critters::secret.eq("hush"),
            critters::notes.eq(Portable(
                (i % 4 == 0).then(|| serde_json::json!({"likes": ["naps", "sun"], "n": i})),
            )),
            critters::score.eq(n % 100),
        );
        with_conn!(conn, |c| {
            diesel::insert_into(critters::table)
                .values(values)
                .execute(c)
                .await
        })
        .map_err(|e| format!("seeding critters: {e}"))?;
    }
    with_conn!(conn, |c| c.batch_execute("COMMIT").await).map_err(|e| format!("commit: {e}"))?;
    Ok(ids)
}

//! A private database for one run (a SQLite file in a temporary directory, or a PostgreSQL
//! database created on the server and dropped afterwards), the reference application's
//! environment, its command line (migrations, users), the seeded critters, and child server
//! processes (started, pinned, waited for, killed).

use crate::client::{Client, Req};
use chrono::{Duration as Days, SubsecRound, Utc};
use crudforge::config::Secret;
use crudforge::sql_types::Portable;
use crudforge::{Config, Database};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use reference_app::api::schema::critters;
use std::io::Write as _;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The signing key given to the reference application (`JWT_SECRET_KEY`) and to the framework
/// reference server, so that both accept the same tokens.
pub(crate) const JWT_SECRET: &str = "api-bench-signing-key-long-enough-0123456789abcdef";

/// Species of the seeded rows; only `cat` rows can match W2's filter.
const SPECIES: [&str; 8] = [
    "cat", "dog", "otter", "hedgehog", "owl", "fox", "rabbit", "axolotl",
];

/// Rows matching W2's filter (`species=cat&cuteness_level__gte=5`), whatever `--rows` is
/// (from 5,736 rows on; fewer rows give fewer matches).
pub(crate) const MATCHES: usize = 717;

/// Where this run's database lives; [`Scratch::cleanup`] removes it.
#[derive(Debug)]
pub(crate) struct Scratch {
    /// The temporary directory (data directory, SQLite file, logs, canned bodies).
    pub(crate) dir: PathBuf,
    /// `(server URL, database name)` of a PostgreSQL database to drop.
    pub(crate) pg: Option<(String, String)>,
    /// `ORM_DATABASE_URI` of the database.
    pub(crate) uri: String,
    /// SQLite with `SQLITE_LOCKING=EXCLUSIVE`: the running server is the file's only user.
    pub(crate) exclusive: bool,
    /// More environment for the server (`--server-env`), after the benchmark's own.
    pub(crate) extra_env: Vec<(String, String)>,
}

impl Scratch {
    /// A SQLite file in a fresh temporary directory; `exclusive` runs the server with
    /// `SQLITE_LOCKING=EXCLUSIVE`.
    pub(crate) fn sqlite(exclusive: bool) -> Result<Scratch, String> {
        let dir = scratch_dir()?;
        let uri = format!("sqlite://{}", dir.join("bench.db").display());
        Ok(Scratch {
            dir,
            pg: None,
            uri,
            exclusive,
            extra_env: Vec::new(),
        })
    }

    /// A fresh database `api_bench_<uuid>` on the PostgreSQL server at `server`.
    pub(crate) async fn postgres(server: &str) -> Result<Scratch, String> {
        let name = format!("api_bench_{}", Uuid::new_v4().simple());
        let mut admin = AsyncPgConnection::establish(server)
            .await
            .map_err(|e| format!("cannot reach PostgreSQL: {e}"))?;
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .map_err(|e| format!("cannot create database {name}: {e}"))?;
        let scratch = Scratch {
            dir: PathBuf::new(),
            uri: with_database(server, &name),
            pg: Some((server.to_owned(), name)),
            exclusive: false,
            extra_env: Vec::new(),
        };
        match scratch_dir() {
            Ok(dir) => Ok(Scratch { dir, ..scratch }),
            Err(e) => {
                scratch.cleanup().await;
                Err(e)
            }
        }
    }

    /// The SQLite database file, if this is SQLite.
    pub(crate) fn sqlite_file(&self) -> Option<PathBuf> {
        self.pg.is_none().then(|| self.dir.join("bench.db"))
    }

    /// The configuration pointing at the database (for direct access from this process).
    pub(crate) fn config(&self) -> Config {
        Config::default().with(|c| {
            c.db.database_uri = Some(self.uri.clone());
            c.db.data_dir = self.dir.join("data");
            c.auth.jwt_secret_key = Some(Secret::new(JWT_SECRET));
        })
    }

    /// The environment of the reference application (the whole environment: nothing else
    /// is inherited but `PATH`).
    pub(crate) fn app_env(&self, monitoring: bool) -> Vec<(String, String)> {
        let mut env = vec![
            ("ORM_DATABASE_URI".to_owned(), self.uri.clone()),
            (
                "CRUDFORGE_DATA_DIR".to_owned(),
                self.dir.join("data").display().to_string(),
            ),
            ("JWT_SECRET_KEY".to_owned(), JWT_SECRET.to_owned()),
            // A day, so that a long soak keeps its token.
            ("JWT_ACCESS_TOKEN_EXPIRES".to_owned(), "86400".to_owned()),
            ("DEBUG".to_owned(), "false".to_owned()),
            (
                "ORM_PERFORMANCE_MONITORING".to_owned(),
                monitoring.to_string(),
            ),
        ];
        if self.exclusive {
            env.push(("SQLITE_LOCKING".to_owned(), "EXCLUSIVE".to_owned()));
        }
        if monitoring {
            // Every query counts as slow, so its SQL is logged.
            env.push(("ORM_SLOW_QUERY_THRESHOLD".to_owned(), "0.000001".to_owned()));
        }
        if let Ok(path) = std::env::var("PATH") {
            env.push(("PATH".to_owned(), path));
        }
        env.extend(self.extra_env.iter().cloned());
        env
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
        if !self.dir.as_os_str().is_empty() {
            if let Err(e) = std::fs::remove_dir_all(&self.dir) {
                eprintln!("warning: could not remove {}: {e}", self.dir.display());
            }
        }
    }
}

fn scratch_dir() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("api-bench-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(dir.join("data"))
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

/// `url` with its database name replaced by `name` (query string kept).
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url.find('?').map_or((url, ""), |i| url.split_at(i));
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let base = match base[after_scheme..].find('/') {
        Some(i) => &base[..after_scheme + i],
        None => base,
    };
    format!("{base}/{name}{query}")
}

/// Runs one command of the reference application's command line (`args`), with `stdin`
/// written to its standard input; returns its standard output.
pub(crate) fn run_cli(
    bin: &Path,
    scratch: &Scratch,
    args: &[&str],
    stdin: Option<&str>,
) -> Result<String, String> {
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .env_clear()
        .envs(scratch.app_env(false))
        .current_dir(&scratch.dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        writeln!(pipe, "{text}").map_err(|e| format!("writing to reference-app: {e}"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("reference-app {}: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!(
            "reference-app {} failed: {}",
            args.first().unwrap_or(&""),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Inserts `rows` critters; [`MATCHES`] of them match W2's filter whatever `rows` is (row `i`
/// is the same in every run, so a larger table only adds non-matching rows). Creation times
/// are distinct and lie in the past. Returns the ids in creation order.
pub(crate) async fn seed(db: &Database, rows: usize) -> Result<Vec<Uuid>, String> {
    let start = Utc::now().trunc_subsecs(6) - Days::seconds(i64::try_from(rows).unwrap_or(0) + 60);
    let mut ids = Vec::with_capacity(rows);
    let mut all = Vec::with_capacity(rows);
    for i in 0..rows {
        let id = Uuid::new_v4();
        ids.push(id);
        let species = SPECIES[i % SPECIES.len()];
        let level = if species == "cat" {
            let k = i / SPECIES.len();
            if k < MATCHES {
                5 + k % 6
            } else {
                1 + k % 4
            }
        } else {
            1 + i % 10
        };
        let at = start + Days::seconds(i64::try_from(i).unwrap_or(0));
        all.push((
            critters::id.eq(Portable(id)),
            critters::created_at.eq(Portable(at)),
            critters::updated_at.eq(Portable(at)),
            critters::name.eq(format!("critter {i}")),
            critters::species.eq(species.to_owned()),
            critters::cuteness_level.eq(i32::try_from(level).unwrap_or(1)),
        ));
    }
    let mut conn = db.get().await.map_err(|e| format!("connection: {e}"))?;
    // Transactions of many rows: a commit per row would measure the disk, not the seeding; one
    // transaction for a million rows would outlast the connection's statement deadline.
    match &mut conn {
        crudforge::db::Conn::Sqlite(c) => {
            let mut rows = all.into_iter().peekable();
            while rows.peek().is_some() {
                let chunk: Vec<_> = rows.by_ref().take(20_000).collect();
                c.spawn_blocking(move |c| {
                    c.transaction(|c| {
                        for row in chunk {
                            diesel::RunQueryDsl::execute(
                                diesel::insert_into(critters::table).values(row),
                                c,
                            )?;
                        }
                        diesel::QueryResult::Ok(())
                    })
                })
                .await
                .map_err(|e| format!("seeding critters: {e}"))?;
            }
        }
        crudforge::db::Conn::Postgres(c) => {
            c.batch_execute("BEGIN")
                .await
                .map_err(|e| format!("begin: {e}"))?;
            for chunk in all.chunks(1000) {
                diesel::insert_into(critters::table)
                    .values(chunk.to_vec())
                    .execute(&mut **c)
                    .await
                    .map_err(|e| format!("seeding critters: {e}"))?;
            }
            c.batch_execute("COMMIT")
                .await
                .map_err(|e| format!("commit: {e}"))?;
        }
    }
    Ok(ids)
}

/// A free port on the loopback interface (free when asked; the child binds it soon after).
pub(crate) fn free_addr() -> Result<SocketAddr, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr().map_err(|e| format!("no free port: {e}"))
}

/// Whether `taskset` can be run.
pub(crate) fn have_taskset() -> bool {
    Command::new("taskset")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A command running `program`, pinned to `cpu` through `taskset` when given (`taskset` execs
/// the program, so the child's pid is the program's).
pub(crate) fn command(program: &Path, cpu: Option<usize>) -> Command {
    match cpu {
        Some(cpu) => {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(cpu.to_string()).arg(program);
            c
        }
        None => Command::new(program),
    }
}

/// A child server process, killed when dropped.
pub(crate) struct Server {
    child: Child,
    /// Its process id.
    pub(crate) pid: u32,
    /// Where it listens.
    pub(crate) addr: SocketAddr,
    /// Its standard output and error.
    log: PathBuf,
    name: String,
}

impl Server {
    /// Starts `cmd` (which must listen on `addr`), logging to `log`, and waits until `ready`
    /// answers 200.
    pub(crate) fn start(
        mut cmd: Command,
        addr: SocketAddr,
        log: PathBuf,
        name: &str,
        ready: &str,
    ) -> Result<Server, String> {
        let file = std::fs::File::create(&log)
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let err = file
            .try_clone()
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        cmd.stdin(Stdio::null()).stdout(file).stderr(err);
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start the {name}: {e}"))?;
        let mut server = Server {
            pid: child.id(),
            child,
            addr,
            log,
            name: name.to_owned(),
        };
        server.wait_ready(ready)?;
        Ok(server)
    }

    fn wait_ready(&mut self, path: &str) -> Result<(), String> {
        let until = Instant::now() + Duration::from_secs(60);
        let req = Req::get(path);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "the {} exited ({status}) before answering {path}:\n{}",
                    self.name,
                    self.log_tail()
                ));
            }
            if let Ok(mut c) = Client::connect(self.addr) {
                if matches!(c.send(&req, None), Ok((200, _))) {
                    return Ok(());
                }
            }
            if Instant::now() > until {
                return Err(format!(
                    "the {} did not answer {path} with 200 within 60 s:\n{}",
                    self.name,
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The whole log so far.
    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last lines of its log.
    pub(crate) fn log_tail(&self) -> String {
        let text = self.log_text();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

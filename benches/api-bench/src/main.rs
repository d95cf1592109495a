//! api-bench: an end-to-end benchmark of the reference application's release binary over
//! loopback HTTP (workloads W1–W6 of issue 11), with two references measured in the same run
//! on the same machine: a minimal actix-web server that checks the same HS256 token and
//! answers the same JSON with no I/O (framework limit), and the same SQL statements executed
//! directly with Diesel on the same database (storage limit). `--soak MINUTES` instead runs a
//! mixed W1–W4 load and checks that the service does not degrade. `--live` instead measures
//! the live change feed: many open streams, writes at a fixed rate, the delay to each
//! delivery, memory per idle stream, W3/W4 with the streams open (and, with `--pocketbase`,
//! the same against PocketBase's realtime API). `--data` instead measures export, aggregates
//! and import of critters. `--scale` (PostgreSQL) instead runs two instances on one database
//! and measures W3/W4 on one against both, with PostgreSQL's wait events (and, with
//! `--streams`, a delivery check of the change feed across the instances): see `scale.rs`.
//!
//! It builds nothing: build the binaries first, then run it.
//!
//! ```text
//! cargo build --release -p reference-app -p api-bench
//! target/release/api-bench --backend sqlite
//! target/release/api-bench --backend postgres \
//!     --postgres-url postgres://postgres@127.0.0.1:5432/test
//! ```
//!
//! It is never part of `cargo test`: it is a binary, run on demand. See `docs/performance.md`.

mod client;
mod data;
mod live;
mod measure;
mod procfs;
mod reference;
mod scale;
mod setup;
mod soak;
mod sse;
mod storage;

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

/// Command-line options.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "api-bench",
    about = "End-to-end benchmark of the reference application with framework and storage references"
)]
pub(crate) struct Args {
    /// Database backend.
    #[arg(long, value_enum, default_value_t = BackendArg::Sqlite)]
    pub(crate) backend: BackendArg,
    /// PostgreSQL server URL (a database `api_bench_<uuid>` is created there and dropped
    /// afterwards).
    #[arg(long, env = "CRUDFORGE_TEST_POSTGRES_URL")]
    pub(crate) postgres_url: Option<String>,
    /// The reference application's release binary (default: `reference-app` next to this
    /// binary, else `release/reference-app` in CARGO_TARGET_DIR or the workspace's `target`).
    #[arg(long)]
    pub(crate) server_bin: Option<PathBuf>,
    /// Critters to seed (W2's filter matches 717 of them from 5,736 rows on, whatever the
    /// total).
    #[arg(long, default_value_t = 10_000)]
    pub(crate) rows: usize,
    /// Concurrent keep-alive connections of W1–W4 and W6 (one client thread each).
    #[arg(long, default_value_t = 32)]
    pub(crate) connections: usize,
    /// Concurrent connections logging in during W5 (each login costs a bcrypt verification).
    #[arg(long, default_value_t = 2)]
    pub(crate) login_connections: usize,
    /// Interval of the `/health` probe during W5, in milliseconds.
    #[arg(long, default_value_t = 20)]
    pub(crate) probe_interval_ms: u64,
    /// Measurement rounds; workloads and servers are interleaved, medians are reported.
    #[arg(long, default_value_t = 3)]
    pub(crate) rounds: u32,
    /// Seconds per measurement window.
    #[arg(long, default_value_t = 3.0)]
    pub(crate) seconds: f64,
    /// Warm-up seconds per workload and server before the rounds.
    #[arg(long, default_value_t = 1.0)]
    pub(crate) warmup: f64,
    /// Workloads to run, comma-separated (w1,w2,w3,w4,w5,w6; w7, batch creates of 1,000
    /// critters against 1,000 inserts in one transaction, only when named).
    #[arg(long, value_delimiter = ',', default_value = "w1,w2,w3,w4,w5,w6")]
    pub(crate) workloads: Vec<String>,
    /// Do not pin the servers to CPU 0 and the client to CPU 1.
    #[arg(long)]
    pub(crate) no_pin: bool,
    /// SQLite: run the server with `SQLITE_LOCKING=EXCLUSIVE` (the server is the file's only
    /// user). The storage reference then uses the same locking, in rounds of its own before
    /// the server starts, and W3's rows stay in the table until the end; a soak counts the
    /// table only after the server has stopped.
    #[arg(long)]
    pub(crate) sqlite_exclusive: bool,
    /// Skip the storage reference in W1–W4 (for a server whose schema differs from this
    /// benchmark's, such as an older build compared with `--server-bin`).
    #[arg(long)]
    pub(crate) no_storage: bool,
    /// More environment for the reference application, `KEY=VALUE`, repeatable (for instance
    /// `--server-env RUST_LOG=warn` to measure without the access log). The references are
    /// unchanged.
    #[arg(long, value_name = "KEY=VALUE", value_parser = key_value)]
    pub(crate) server_env: Vec<(String, String)>,
    /// Soak mode: mixed W1–W4 load for this many minutes (10 when given without a value),
    /// with figures every minute and pass/fail checks at the end.
    #[arg(long, num_args = 0..=1, default_missing_value = "10", value_name = "MINUTES")]
    pub(crate) soak: Option<u64>,
    /// Soak: the largest acceptable SQLite WAL file, in MiB.
    #[arg(long, default_value_t = 64)]
    pub(crate) wal_limit_mib: u64,
    /// Live updates: measure the change feed (streams, deliveries, memory per idle stream,
    /// W3/W4 with idle streams open against none) instead of W1–W6.
    #[arg(long)]
    pub(crate) live: bool,
    /// Live updates: streams to open. Scale-out: streams to open during (b), split between
    /// the instances, and check (none unless given).
    #[arg(long, default_value_t = 1000)]
    pub(crate) streams: usize,
    /// Live updates: writes per second while the streams receive.
    #[arg(long, default_value_t = 200.0)]
    pub(crate) write_rate: f64,
    /// Live updates: seconds of writes.
    #[arg(long, default_value_t = 10.0)]
    pub(crate) live_seconds: f64,
    /// Live updates: users the streams are spread over (the per-user stream cap is raised to
    /// streams / users for the run).
    #[arg(long, default_value_t = 10)]
    pub(crate) live_users: usize,
    /// Live updates: rows in the streams' view; the writes rename them in turn.
    #[arg(long, default_value_t = 20)]
    pub(crate) live_rows: usize,
    /// Live updates: also run the streams and writes against this PocketBase binary.
    #[arg(long, value_name = "PATH")]
    pub(crate) pocketbase: Option<PathBuf>,
    /// Live updates: skip the reference application (PocketBase only).
    #[arg(long)]
    pub(crate) no_crudforge: bool,
    /// Data in and out: export the seeded critters as CSV and NDJSON, aggregate them by
    /// species with and without an index, import a CSV file (instead of W1–W6; seed with
    /// `--rows 1000000` for the documented figures).
    #[arg(long)]
    pub(crate) data: bool,
    /// Scale-out: two instances of the reference application on one PostgreSQL database; W3
    /// and W4 on one instance alone against both at once, with PostgreSQL's wait events
    /// (instead of W1–W6; `--backend postgres` only).
    #[arg(long)]
    pub(crate) scale: bool,
    /// Scale-out: configurations to run, comma-separated: a (instance A alone, N
    /// connections), b (A and B at once, N/2 each), c (A and B at once, N each).
    #[arg(long, value_delimiter = ',', default_value = "a,b,c")]
    pub(crate) scale_configs: Vec<String>,
    /// Internal: serve the framework reference on this port (a child process of the benchmark).
    #[arg(long, hide = true)]
    pub(crate) serve_reference: Option<u16>,
    /// Internal: the canned answers of the framework reference.
    #[arg(long, hide = true)]
    pub(crate) canned: Option<PathBuf>,
}

/// Parses `KEY=VALUE`.
fn key_value(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .filter(|(k, _)| !k.is_empty())
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("expected KEY=VALUE, got {text:?}"))
}

/// The database backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BackendArg {
    /// A SQLite file.
    Sqlite,
    /// A PostgreSQL database.
    Postgres,
}

impl BackendArg {
    /// Its name in reports.
    pub(crate) fn label(self) -> &'static str {
        match self {
            BackendArg::Sqlite => "SQLite",
            BackendArg::Postgres => "PostgreSQL",
        }
    }
}

/// Set in the re-executed benchmark that runs pinned to CPU 1: the servers go to CPU 0.
const PINNED_ENV: &str = "API_BENCH_PINNED";

fn main() -> ExitCode {
    let matches = Args::command().get_matches();
    let args = Args::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // `--streams` defaults to 1000 for `--live`; `--scale` opens streams only when asked.
    let streams_given = matches.value_source("streams") == Some(ValueSource::CommandLine);
    if let Some(port) = args.serve_reference {
        let Some(canned) = &args.canned else {
            eprintln!("api-bench: --serve-reference needs --canned");
            return ExitCode::FAILURE;
        };
        return match reference::serve(port, canned, setup::JWT_SECRET) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("api-bench reference server: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let pin = match pinning(&args) {
        Pinning::Reexec => return reexec_pinned(),
        Pinning::Servers => Some(0),
        Pinning::None => None,
    };
    let outcome = if args.data {
        data::run(&args, pin)
    } else if args.scale {
        scale::run(&args, pin, if streams_given { args.streams } else { 0 })
    } else if args.live {
        live::run(&args, pin)
    } else {
        measure::run(&args, pin)
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("api-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

enum Pinning {
    /// Run this benchmark again under `taskset -c 1`.
    Reexec,
    /// Already on CPU 1: pin the servers to CPU 0.
    Servers,
    /// No pinning.
    None,
}

fn pinning(args: &Args) -> Pinning {
    if args.no_pin {
        return Pinning::None;
    }
    if std::env::var_os(PINNED_ENV).is_some() {
        return Pinning::Servers;
    }
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    if cpus < 2 {
        eprintln!("warning: {cpus} CPU available: server and client are not pinned");
        return Pinning::None;
    }
    if !setup::have_taskset() {
        eprintln!("warning: taskset not found: server and client are not pinned");
        return Pinning::None;
    }
    Pinning::Reexec
}

/// Runs this program again with the same arguments under `taskset -c 1` (the load client's
/// core); the servers it starts are pinned to CPU 0.
fn reexec_pinned() -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("api-bench: cannot find its own binary to pin it: {e}");
            return ExitCode::FAILURE;
        }
    };
    let status = std::process::Command::new("taskset")
        .arg("-c")
        .arg("1")
        .arg(exe)
        .args(std::env::args_os().skip(1))
        .env(PINNED_ENV, "1")
        .status();
    match status {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("api-bench: taskset: {e}");
            ExitCode::FAILURE
        }
    }
}

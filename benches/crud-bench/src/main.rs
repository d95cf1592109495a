//! crud-bench: the generated crudforge CRUD endpoints against hand-written actix-web +
//! diesel-async handlers over the same `critters` table, over real HTTP on loopback.
//!
//! One actix-web server serves the generated blueprint at `/api/critters/` and the
//! hand-written handlers at `/hand/critters/`. After seeding, the run checks that both
//! families answer a sample of requests with the same JSON, then drives each endpoint pair
//! (GET by id, filtered INDEX page) with the same number of keep-alive connections, in
//! alternating rounds, and prints requests per second and the ratio generated / hand-written.
//!
//! ```text
//! cargo run --release -p crud-bench -- --backend sqlite
//! cargo run --release -p crud-bench -- --backend postgres \
//!     --postgres-url postgres://postgres@127.0.0.1:5432/test
//! ```
//!
//! It is never part of `cargo test`: it is a binary, run on demand.

mod client;
mod hand;
mod paging;
mod rules;
mod setup;

use clap::{Parser, ValueEnum};
use client::{run_load, Client, Outcome};
use crudforge::{Api, Resource};
use crudforge_tests::critters::Critter;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The filter of the INDEX measurements (both families get the same query string).
const INDEX_QUERY: &str = "species=cat&cuteness_level__gte=5&page_size=20";

/// Command-line options.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "crud-bench",
    about = "Benchmark generated crudforge endpoints against hand-written handlers"
)]
struct Args {
    /// Database backend.
    #[arg(long, value_enum, default_value_t = BackendArg::Sqlite)]
    backend: BackendArg,
    /// PostgreSQL server URL (a database of its own is created there and dropped afterwards).
    #[arg(long, env = "CRUDFORGE_TEST_POSTGRES_URL")]
    postgres_url: Option<String>,
    /// Seconds per measurement round (each endpoint and family gets `rounds` of them).
    #[arg(long, default_value_t = 1.5)]
    seconds: f64,
    /// Measurement rounds per endpoint and family; the order alternates between rounds.
    #[arg(long, default_value_t = 4)]
    rounds: u32,
    /// Warm-up seconds per endpoint and family before measuring.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Concurrent keep-alive connections (one client thread each).
    #[arg(long, default_value_t = 8)]
    connections: usize,
    /// Upper bound on the requests of one measurement round.
    #[arg(long, default_value_t = 2_000_000)]
    max_requests: u64,
    /// Critters to seed.
    #[arg(long, default_value_t = 2000)]
    rows: usize,
    /// actix-web worker threads (default: the number of CPUs).
    #[arg(long)]
    workers: Option<usize>,
    /// Make the hand-written GET use Diesel's `.first()` (a bound `LIMIT 1`) instead of
    /// `get_result()`: shows what a bound LIMIT costs (on SQLite it forces a re-prepare).
    #[arg(long)]
    hand_get_limit: bool,
    /// Instead of the endpoint pairs: time page 2 and page `--far-page` of the unfiltered list
    /// with OFFSET and with `cursor`, without and with an index on `(created_at, id)`.
    #[arg(long)]
    paging: bool,
    /// Items per page of `--paging`.
    #[arg(long, default_value_t = 50)]
    paging_page_size: u32,
    /// The deep page of `--paging`.
    #[arg(long, default_value_t = 1000)]
    far_page: u32,
    /// Timed requests per variant of `--paging`.
    #[arg(long, default_value_t = 50)]
    paging_repeats: usize,
    /// Instead of the endpoint pairs: W2 (a filtered list page, signed in) on tickets whose
    /// read rule crosses a relation (`event.organizer_id = @me`) against tickets whose read
    /// rule reads a denormalised column (`organizer_id = @me`); `--rows` tickets. Prints the
    /// generated SQL with its query plans, then interleaved rounds of both variants.
    #[arg(long)]
    rule_crossing: bool,
    /// With `--rule-crossing`: no secondary index (only the primary keys).
    #[arg(long)]
    rule_bare: bool,
    /// With `--rule-crossing`: instead of timed rounds, send this many sequential requests of
    /// `--rule-variant` over one connection and stop (for `valgrind --tool=callgrind`).
    #[arg(long)]
    fixed_requests: Option<u64>,
    /// The variant of `--fixed-requests`.
    #[arg(long, value_enum, default_value_t = RuleVariant::Crossing)]
    rule_variant: RuleVariant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RuleVariant {
    Crossing,
    Column,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BackendArg {
    Sqlite,
    Postgres,
}

impl BackendArg {
    fn label(self) -> &'static str {
        match self {
            BackendArg::Sqlite => "SQLite",
            BackendArg::Postgres => "PostgreSQL",
        }
    }
}

#[actix_web::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("crud-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), String> {
    if args.connections == 0 || args.rows == 0 || args.rounds == 0 {
        return Err("--connections, --rows and --rounds must be at least 1".into());
    }
    if !(args.seconds > 0.0 && args.seconds <= 600.0 && args.warmup >= 0.0 && args.warmup <= 60.0) {
        return Err("--seconds must be in (0, 600] and --warmup in [0, 60]".into());
    }
    let scratch = match args.backend {
        BackendArg::Sqlite => setup::Scratch::sqlite()?,
        BackendArg::Postgres => {
            let url =
                args.postgres_url.clone().filter(|u| !u.is_empty()).ok_or(
                    "--backend postgres needs --postgres-url or CRUDFORGE_TEST_POSTGRES_URL",
                )?;
            setup::Scratch::postgres(&url).await?
        }
    };
    let result = serve_and_measure(&args, &scratch).await;
    scratch.cleanup().await;
    result
}

async fn serve_and_measure(args: &Args, scratch: &setup::Scratch) -> Result<(), String> {
    let db = setup::open(&scratch.config).await?;
    let workers = args.workers.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get)
    });
    if args.rule_crossing {
        let o = rules::Options {
            rows: args.rows,
            connections: args.connections,
            rounds: args.rounds,
            seconds: args.seconds,
            warmup: args.warmup,
            max_requests: args.max_requests,
            workers,
            bare: args.rule_bare,
            fixed: args.fixed_requests.map(|n| {
                (
                    n,
                    match args.rule_variant {
                        RuleVariant::Crossing => 0,
                        RuleVariant::Column => 1,
                    },
                )
            }),
        };
        let report = rules::run(&scratch.config, &db, &o, args.backend.label()).await;
        drop(db);
        print!("{}", report?);
        return Ok(());
    }
    let t = Instant::now();
    let ids = setup::seed(&db, args.rows).await?;
    println!(
        "seeded {} critters on {} in {:.2?}",
        ids.len(),
        args.backend.label(),
        t.elapsed()
    );

    let api = Api::new(scratch.config.clone(), db.clone())
        .map_err(|e| format!("configuration: {e}"))?
        .mount(Critter::blueprint("/api/critters/"))
        .map_err(|e| e.to_string())?;
    let hand_db = db.clone();
    let get_limit = args.hand_get_limit;
    let server = actix_web::HttpServer::new(move || {
        let db = hand_db.clone();
        api.app()
            .configure(move |cfg| hand::configure(cfg, db, get_limit))
    })
    .workers(workers)
    .disable_signals()
    .bind(("127.0.0.1", 0))
    .map_err(|e| format!("bind: {e}"))?;
    let addr = server
        .addrs()
        .first()
        .copied()
        .ok_or("the server has no address")?;
    let server = server.run();
    let handle = server.handle();
    let server_task = actix_web::rt::spawn(server);
    println!(
        "serving on http://{addr} ({workers} workers); {} connections, {} x {:.1} s per family and endpoint",
        args.connections, args.rounds, args.seconds
    );

    let bench_args = args.clone();
    let report = if args.paging {
        let p = paging::Paging {
            page_size: args.paging_page_size,
            far_page: args.far_page,
            repeats: args.paging_repeats.max(1),
        };
        paging::measure(addr, &db, p, args.backend.label()).await
    } else {
        tokio::task::spawn_blocking(move || measure(addr, &bench_args, &ids))
            .await
            .map_err(|e| format!("the load driver failed: {e}"))?
    };

    handle.stop(true).await;
    let _ = server_task.await;
    drop(db);
    let report = report?;
    print!("{report}");
    Ok(())
}

/// One endpoint pair: the generated and the hand-written paths of the same requests.
struct Pair {
    name: &'static str,
    generated: Vec<String>,
    hand: Vec<String>,
}

fn measure(addr: SocketAddr, args: &Args, ids: &[Uuid]) -> Result<String, String> {
    let mut client = Client::connect(addr).map_err(|e| format!("connect: {e}"))?;

    // GET by id: every seeded row, spread over the connections.
    let get = Pair {
        name: "GET /critters/{id}",
        generated: ids.iter().map(|id| format!("/api/critters/{id}")).collect(),
        hand: ids
            .iter()
            .map(|id| format!("/hand/critters/{id}"))
            .collect(),
    };
    // Filtered INDEX: every page of the filter.
    let pages = index_pages(&mut client)?;
    let index = Pair {
        name: "INDEX ?species=cat&cuteness_level__gte=5&page_size=20",
        generated: (1..=pages)
            .map(|p| format!("/api/critters/?{INDEX_QUERY}&page={p}"))
            .collect(),
        hand: (1..=pages)
            .map(|p| format!("/hand/critters/?{INDEX_QUERY}&page={p}"))
            .collect(),
    };

    // Same answers from both families, on a sample of GETs and on every INDEX page.
    let step = (ids.len() / 50).max(1);
    let get_sample: Vec<usize> = (0..ids.len()).step_by(step).collect();
    let (get_checked, get_identical) = compare(&mut client, &get, &get_sample)?;
    let index_sample: Vec<usize> = (0..index.generated.len()).collect();
    let (index_checked, index_identical) = compare(&mut client, &index, &index_sample)?;
    println!(
        "verified: {get_checked} GET and {index_checked} INDEX responses are equal JSON \
         ({get_identical} and {index_identical} byte-identical); {pages} INDEX pages"
    );
    drop(client);

    let round = Duration::from_secs_f64(args.seconds);
    let warmup = Duration::from_secs_f64(args.warmup);
    let mut rows = Vec::new();
    for pair in [&get, &index] {
        let load = |paths: &[String], d: Duration| {
            run_load(addr, paths, args.connections, d, args.max_requests)
        };
        if !warmup.is_zero() {
            check(
                pair.name,
                "generated (warm-up)",
                &load(&pair.generated, warmup),
            )?;
            check(
                pair.name,
                "hand-written (warm-up)",
                &load(&pair.hand, warmup),
            )?;
        }
        let mut generated = Outcome::default();
        let mut hand = Outcome::default();
        for r in 0..args.rounds {
            let order = if r % 2 == 0 {
                [true, false]
            } else {
                [false, true]
            };
            for is_generated in order {
                let (paths, acc, label) = if is_generated {
                    (&pair.generated, &mut generated, "generated")
                } else {
                    (&pair.hand, &mut hand, "hand-written")
                };
                let out = load(paths, round);
                check(pair.name, label, &out)?;
                eprintln!(
                    "  {} / {label} round {}: {:.0} req/s, {:.0} µs server CPU per request",
                    pair.name,
                    r + 1,
                    out.rps(),
                    out.cpu_us_per_request()
                );
                acc.merge(out);
            }
        }
        rows.push((pair.name, generated, hand));
    }

    let mut report = String::new();
    let _ = writeln!(
        report,
        "\n{} backend, {} rows, {} connections, {} workers, {} x {:.1} s rounds, hand-written GET {}\n",
        args.backend.label(),
        args.rows,
        args.connections,
        workers_label(args),
        args.rounds,
        args.seconds,
        if args.hand_get_limit {
            "with .first() (LIMIT 1)"
        } else {
            "with get_result() (no LIMIT)"
        }
    );
    let _ = writeln!(
        report,
        "| backend | endpoint | generated req/s | hand-written req/s | ratio gen/hand | generated server CPU µs/req | hand-written server CPU µs/req | CPU ratio hand/gen |"
    );
    let _ = writeln!(report, "|---|---|---:|---:|---:|---:|---:|---:|");
    for (name, g, h) in &rows {
        let _ = writeln!(
            report,
            "| {} | {name} | {:.0} | {:.0} | {:.2} | {:.0} | {:.0} | {:.2} |",
            args.backend.label(),
            g.rps(),
            h.rps(),
            g.rps() / h.rps(),
            g.cpu_us_per_request(),
            h.cpu_us_per_request(),
            h.cpu_us_per_request() / g.cpu_us_per_request(),
        );
    }
    let _ = writeln!(
        report,
        "\n| endpoint | generated p50 / p99 ms | hand-written p50 / p99 ms | client CPU µs/req gen / hand |"
    );
    let _ = writeln!(report, "|---|---:|---:|---:|");
    for (name, mut g, mut h) in rows {
        let _ = writeln!(
            report,
            "| {name} | {:.2} / {:.2} | {:.2} / {:.2} | {:.0} / {:.0} |",
            g.latency_ms(0.5),
            g.latency_ms(0.99),
            h.latency_ms(0.5),
            h.latency_ms(0.99),
            client_us(&g),
            client_us(&h),
        );
    }
    Ok(report)
}

/// Client CPU time per successful request, in microseconds.
fn client_us(o: &Outcome) -> f64 {
    // Request counts stay far below 2^52.
    #[allow(clippy::cast_precision_loss)]
    let ok = o.ok.max(1) as f64;
    o.client_cpu.as_secs_f64() * 1e6 / ok
}

fn workers_label(args: &Args) -> String {
    args.workers
        .map_or_else(|| "default".to_owned(), |w| w.to_string())
}

/// Fails the run when a measurement saw anything but 200.
fn check(endpoint: &str, label: &str, out: &Outcome) -> Result<(), String> {
    if out.errors > 0 || out.ok == 0 {
        return Err(format!(
            "{endpoint} / {label}: {} errors, {} successes; first error: {}",
            out.errors,
            out.ok,
            out.first_error.as_deref().unwrap_or("none")
        ));
    }
    Ok(())
}

/// The number of pages of the INDEX filter, as the generated endpoint reports it.
fn index_pages(client: &mut Client) -> Result<u64, String> {
    let path = format!("/api/critters/?{INDEX_QUERY}");
    let (status, body) = client.get(&path).map_err(|e| format!("GET {path}: {e}"))?;
    if status != 200 {
        return Err(format!(
            "GET {path}: {status} {}",
            String::from_utf8_lossy(body)
        ));
    }
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("GET {path}: not JSON: {e}"))?;
    match v["pagination"]["total_pages"].as_u64() {
        Some(n) if n > 0 => Ok(n),
        _ => Err(format!("GET {path}: the filter matches nothing: {v}")),
    }
}

/// Fetches `sample` entries of both path lists; both must be 200 with equal JSON. Returns the
/// number compared and how many were byte-identical.
fn compare(client: &mut Client, pair: &Pair, sample: &[usize]) -> Result<(usize, usize), String> {
    let mut identical = 0;
    for &i in sample {
        let fetch = |client: &mut Client, path: &str| -> Result<Vec<u8>, String> {
            let (status, body) = client.get(path).map_err(|e| format!("GET {path}: {e}"))?;
            if status != 200 {
                return Err(format!(
                    "GET {path}: {status} {}",
                    String::from_utf8_lossy(body)
                ));
            }
            Ok(body.to_vec())
        };
        let g = fetch(client, &pair.generated[i])?;
        let h = fetch(client, &pair.hand[i])?;
        let parse = |b: &[u8], path: &str| -> Result<serde_json::Value, String> {
            serde_json::from_slice(b).map_err(|e| format!("GET {path}: not JSON: {e}"))
        };
        let mut gv = parse(&g, &pair.generated[i])?;
        let hv = parse(&h, &pair.hand[i])?;
        // The generated list also links its next page by a cursor, which the hand-written
        // handler does not offer: that member aside, the answers must agree.
        if let Some(p) = gv.get_mut("pagination").and_then(|p| p.as_object_mut()) {
            p.remove("next_cursor");
        }
        if gv != hv {
            return Err(format!(
                "{}: responses differ\n  generated:    {gv}\n  hand-written: {hv}",
                pair.name
            ));
        }
        if g == h {
            identical += 1;
        }
    }
    Ok((sample.len(), identical))
}

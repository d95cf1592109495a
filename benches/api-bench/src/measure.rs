//! The benchmark run: prepares the database and users, counts each workload's queries, starts
//! the reference application and the framework reference, measures W1–W4 and W6 in
//! interleaved rounds with the storage reference, then W5, and prints Markdown tables.

use crate::client::{run_load, Client, Load, Outcome, Req};
use crate::setup::{self, Scratch, Server};
use crate::storage::{self, Op, Storage};
use crate::{procfs, reference, Args, BackendArg};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The administrator the benchmark creates (not used by the workloads).
pub(crate) const ADMIN_EMAIL: &str = "admin@api-bench.example";
/// The ordinary user every workload is authenticated as.
pub(crate) const USER_EMAIL: &str = "user@api-bench.example";
/// Both users' password.
pub(crate) const PASSWORD: &str = "bench-password-0123";
/// W2's request.
pub(crate) const W2_PATH: &str =
    "/api/critters/?species=cat&cuteness_level__gte=5&page=2&page_size=25";
/// The login route.
pub(crate) const LOGIN_PATH: &str = "/api/user/login/";

/// The server binary: `--server-bin`, or `reference-app` next to this binary (both built into
/// the same target directory), or `release/reference-app` in CARGO_TARGET_DIR or in the
/// workspace's `target` directory.
pub(crate) fn server_bin(args: &Args) -> Result<PathBuf, String> {
    let bin = match &args.server_bin {
        Some(b) => b.clone(),
        None => {
            let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
                || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
                PathBuf::from,
            );
            let beside = std::env::current_exe()
                .ok()
                .and_then(|e| Some(e.parent()?.join("reference-app")));
            let default = target.join("release").join("reference-app");
            beside.filter(|b| b.is_file()).unwrap_or(default)
        }
    };
    if !bin.is_file() {
        return Err(format!(
            "no server binary at {}: build it with `cargo build --release -p reference-app` \
             (same CARGO_TARGET_DIR) or pass --server-bin",
            bin.display()
        ));
    }
    // The servers run in the scratch directory: a relative path would not resolve there.
    std::fs::canonicalize(&bin).map_err(|e| format!("{}: {e}", bin.display()))
}

/// Runs the benchmark (or the soak); `Ok(false)` when a soak check failed.
///
/// # Errors
///
/// Anything that stops the run: a bad option, a server that does not start, a non-2xx answer.
pub(crate) fn run(args: &Args, pin: Option<usize>) -> Result<bool, String> {
    if args.connections == 0 || args.rounds == 0 || args.login_connections == 0 {
        return Err("--connections, --login-connections and --rounds must be at least 1".into());
    }
    if args.rows < 2 {
        return Err("--rows must be at least 2 (W1 and W4 use different rows)".into());
    }
    if !(args.seconds > 0.0 && args.seconds <= 600.0 && args.warmup >= 0.0 && args.warmup <= 60.0) {
        return Err("--seconds must be in (0, 600] and --warmup in [0, 60]".into());
    }
    for w in &args.workloads {
        if !["w1", "w2", "w3", "w4", "w5", "w6", "w7"].contains(&w.to_lowercase().as_str()) {
            return Err(format!("unknown workload {w:?} (w1 … w7)"));
        }
    }
    let bin = server_bin(args)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    let scratch = match args.backend {
        BackendArg::Sqlite => Scratch::sqlite(args.sqlite_exclusive)?,
        BackendArg::Postgres if args.sqlite_exclusive => {
            return Err("--sqlite-exclusive is for --backend sqlite".into());
        }
        BackendArg::Postgres => {
            let url =
                args.postgres_url.clone().filter(|u| !u.is_empty()).ok_or(
                    "--backend postgres needs --postgres-url or CRUDFORGE_TEST_POSTGRES_URL",
                )?;
            rt.block_on(Scratch::postgres(&url))?
        }
    };
    let scratch = Scratch {
        extra_env: args.server_env.clone(),
        ..scratch
    };
    let result = prepare_and_run(args, pin, &bin, &scratch, &rt);
    rt.block_on(scratch.cleanup());
    result
}

fn prepare_and_run(
    args: &Args,
    pin: Option<usize>,
    bin: &Path,
    scratch: &Scratch,
    rt: &tokio::runtime::Runtime,
) -> Result<bool, String> {
    println!(
        "api-bench: {} backend, server {}, {}",
        args.backend.label(),
        bin.display(),
        match pin {
            Some(_) => "servers pinned to CPU 0, client to CPU 1".to_owned(),
            None => "not pinned".to_owned(),
        }
    );
    setup::run_cli(bin, scratch, &["migrate"], None)?;
    for (email, admin) in [(ADMIN_EMAIL, true), (USER_EMAIL, false)] {
        let mut cli = vec!["create-user", "--email", email, "--password-stdin"];
        if admin {
            cli.push("--admin");
        }
        setup::run_cli(bin, scratch, &cli, Some(PASSWORD))?;
    }
    let t = Instant::now();
    let ids = rt.block_on(async {
        let db = crudforge::Database::connect(&scratch.config())
            .await
            .map_err(|e| format!("open database: {e}"))?;
        setup::seed(&db, args.rows).await
    })?;
    println!(
        "created an admin and an ordinary user (reference-app create-user), seeded {} critters in {:.1?}",
        ids.len(),
        t.elapsed()
    );
    if let Some(minutes) = args.soak {
        return crate::soak::run(args, pin, bin, scratch, ids, minutes);
    }
    let counts = query_counts(pin, bin, scratch, &ids)?;
    measure(args, pin, bin, scratch, ids, &counts)?;
    Ok(true)
}

/// Starts the reference application on a free port, pinned to `pin`, with query monitoring
/// on or off, and waits until it is ready.
pub(crate) fn start_app(
    bin: &Path,
    scratch: &Scratch,
    pin: Option<usize>,
    monitoring: bool,
    log: &str,
) -> Result<Server, String> {
    let addr = setup::free_addr()?;
    let mut cmd = setup::command(bin, pin);
    cmd.arg("serve")
        .arg("--bind")
        .arg(addr.to_string())
        .env_clear()
        .envs(scratch.app_env(monitoring))
        .current_dir(&scratch.dir);
    Server::start(cmd, addr, scratch.dir.join(log), "reference app", "/ready")
}

/// The storage reference's warm-up and rounds for every chosen workload that has one, run
/// before any server starts (for exclusive SQLite locking).
fn storage_first(
    args: &Args,
    storage: &mut Storage,
) -> Result<Vec<(Op, Vec<storage::Cost>)>, String> {
    let round = Duration::from_secs_f64(args.seconds);
    let warm = Duration::from_secs_f64(args.warmup).min(Duration::from_millis(300));
    let ops = [
        ("W1", Op::Point),
        ("W2", Op::CountAndPage),
        ("W3", Op::Insert),
        ("W4", Op::Update),
    ];
    let mut out = Vec::new();
    for (key, op) in ops {
        if !args.workloads.iter().any(|w| w.eq_ignore_ascii_case(key)) {
            continue;
        }
        if !warm.is_zero() {
            storage.measure(op, warm)?;
        }
        let mut costs = Vec::new();
        for r in 0..args.rounds {
            let c = storage.measure(op, round)?;
            eprintln!(
                "  {key} round {} storage reference (before the server starts): {} ops, {:.1} µs CPU/op",
                r + 1,
                c.ops,
                c.us_per_op()
            );
            costs.push(c);
        }
        out.push((op, costs));
    }
    Ok(out)
}

/// Logs in as `email` and returns the access token.
pub(crate) fn login(client: &mut Client, email: &str) -> Result<String, String> {
    let body = client.expect(&login_req(email), None)?;
    let v: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| format!("login answer is not JSON: {e}"))?;
    v["access_token"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("login answer without access_token: {v}"))
}

fn login_req(email: &str) -> Req {
    Req::json(
        "POST",
        LOGIN_PATH,
        serde_json::json!({"email": email, "password": PASSWORD}).to_string(),
        200,
    )
}

/// W3's request body number `n` (a species no filter matches; deleted after each window).
pub(crate) fn w3_req(n: u64) -> Req {
    Req::json(
        "POST",
        "/api/critters/",
        serde_json::json!({"name": format!("bench {n}"), "species": storage::INSERTED_SPECIES, "cuteness_level": 3})
            .to_string(),
        201,
    )
}

/// W4's request: renames critter `id`.
pub(crate) fn w4_req(id: &Uuid, n: u64) -> Req {
    Req::json(
        "PATCH",
        format!("/api/critters/{id}"),
        serde_json::json!({"name": format!("patched {n}")}).to_string(),
        200,
    )
}

/// One workload's query count and SQL, from a server with monitoring on.
struct QueryCount {
    key: &'static str,
    count: String,
    sql: Vec<String>,
}

/// Removes ANSI colour sequences.
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Starts the application with `ORM_PERFORMANCE_MONITORING=true` (and every query logged as
/// slow), sends one request of each workload, and reads the `Server-Timing` query count and
/// the logged SQL of each.
fn query_counts(
    pin: Option<usize>,
    bin: &Path,
    scratch: &Scratch,
    ids: &[Uuid],
) -> Result<Vec<QueryCount>, String> {
    let server = start_app(bin, scratch, pin, true, "monitoring.log")?;
    let mut client = Client::connect(server.addr).map_err(|e| format!("connect: {e}"))?;
    let token = login(&mut client, USER_EMAIL)?;
    let samples: Vec<(&'static str, Req, bool)> = vec![
        ("W1", Req::get(format!("/api/critters/{}", ids[0])), true),
        ("W2", Req::get(W2_PATH), true),
        ("W3", w3_req(0), true),
        ("W4", w4_req(&ids[1], 0), true),
        ("W5", login_req(USER_EMAIL), false),
        ("W6", Req::get("/health"), false),
    ];
    let mut out = Vec::new();
    for (key, req, auth) in samples {
        // Log lines reach the file shortly after the answer: let the previous request's land.
        std::thread::sleep(Duration::from_millis(150));
        let before = server.log_text().len();
        client.expect(&req, auth.then_some(token.as_str()))?;
        let timing = client.server_timing.clone();
        std::thread::sleep(Duration::from_millis(150));
        let log = strip_ansi(server.log_text().get(before..).unwrap_or(""));
        let sql: Vec<String> = log
            .lines()
            .filter(|l| l.contains("slow query"))
            .filter_map(|l| {
                let s = l.split_once("sql=")?.1;
                Some(s.split(" duration_ms=").next().unwrap_or(s).to_owned())
            })
            .collect();
        let logged = sql.len();
        let count = match timing.as_deref().and_then(|t| {
            t.split_once("desc=\"")
                .and_then(|(_, d)| d.split(' ').next())
                .map(str::to_owned)
        }) {
            Some(n) if n == logged.to_string() => n,
            Some(n) => format!("{n} ({logged} in the log)"),
            None if key == "W5" => format!("{logged} (from the log; no Server-Timing on login)"),
            None => format!("{logged} (from the log; no Server-Timing)"),
        };
        out.push(QueryCount { key, count, sql });
    }
    drop(server);
    println!("\nQueries per request (ORM_PERFORMANCE_MONITORING=true, one request each; measured runs have it off):\n");
    for q in &out {
        println!("- {}: {}", q.key, q.count);
        for s in &q.sql {
            println!("    {s}");
        }
    }
    Ok(out)
}

/// One measurement window of one server.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    rps: f64,
    p50: f64,
    p99: f64,
    server_us: f64,
    pg_us: f64,
    hwm: u64,
}

/// Microseconds of `d` per one of `n` requests.
pub(crate) fn per_req(d: Duration, n: u64) -> f64 {
    // Request counts stay far below 2^52.
    #[allow(clippy::cast_precision_loss)]
    let n = n.max(1) as f64;
    d.as_secs_f64() * 1e6 / n
}

/// Runs `make` against `server` for `duration` and measures the server's CPU (and
/// PostgreSQL's) and its peak memory during the window.
fn window(
    server: &Server,
    connections: usize,
    duration: Duration,
    token: Option<&str>,
    storage: &Storage,
    make: &(dyn Fn(usize, u64) -> Req + Sync),
    what: &str,
) -> Result<(Sample, Outcome), String> {
    procfs::reset_peak(server.pid);
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let load = Load {
        addr: server.addr,
        connections,
        duration,
        token,
        stop: &stop,
        done: &done,
        pace: Duration::ZERO,
    };
    let pg0 = storage.postgres_cpu();
    let cpu0 = procfs::cpu(server.pid).ok_or("cannot read the server's CPU time")?;
    let mut out = run_load(&load, make);
    let cpu1 = procfs::cpu(server.pid).ok_or("cannot read the server's CPU time")?;
    let pg1 = storage.postgres_cpu();
    out.check(what)?;
    let sample = Sample {
        rps: out.rps(),
        p50: out.latency_ms(0.5),
        p99: out.latency_ms(0.99),
        server_us: per_req(cpu1.saturating_sub(cpu0), out.ok),
        pg_us: per_req(pg1.saturating_sub(pg0), out.ok),
        hwm: procfs::status_bytes(server.pid, "VmHWM").unwrap_or(0),
    };
    Ok((sample, out))
}

/// The median of `v` (0 when empty).
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Medians of a workload's samples.
fn medians(samples: &[Sample]) -> Sample {
    let m = |f: fn(&Sample) -> f64| median(samples.iter().map(f).collect());
    Sample {
        rps: m(|s| s.rps),
        p50: m(|s| s.p50),
        p99: m(|s| s.p99),
        server_us: m(|s| s.server_us),
        pg_us: m(|s| s.pg_us),
        hwm: samples.iter().map(|s| s.hwm).max().unwrap_or(0),
    }
}

/// A workload of the rounds.
struct Workload<'a> {
    key: &'static str,
    title: &'static str,
    op: Option<Op>,
    make: Box<dyn Fn(usize, u64) -> Req + Sync + 'a>,
    app: Vec<Sample>,
    reference: Vec<Sample>,
    storage: Vec<storage::Cost>,
}

fn mib(bytes: u64) -> f64 {
    // Sizes stay far below 2^52.
    #[allow(clippy::cast_precision_loss)]
    let b = bytes as f64;
    b / (1024.0 * 1024.0)
}

#[allow(clippy::too_many_lines)]
fn measure(
    args: &Args,
    pin: Option<usize>,
    bin: &Path,
    scratch: &Scratch,
    ids: Vec<Uuid>,
    counts: &[QueryCount],
) -> Result<(), String> {
    let mut storage = Storage::open(scratch, ids.clone())?;
    // With exclusive SQLite locking the server is the file's only user, so the storage
    // reference runs its rounds first, then lets go of the file.
    let early = if scratch.exclusive && !args.no_storage {
        let costs = storage_first(args, &mut storage)?;
        storage.close();
        costs
    } else {
        Vec::new()
    };
    let app = start_app(bin, scratch, pin, false, "server.log")?;
    let mut client = Client::connect(app.addr).map_err(|e| format!("connect: {e}"))?;
    let token = login(&mut client, USER_EMAIL)?;
    login(&mut client, ADMIN_EMAIL)?;

    // The framework reference answers with what the real server answered.
    let auth = Some(token.as_str());
    let item = client.expect(&Req::get(format!("/api/critters/{}", ids[0])), auth)?;
    let page = client.expect(&Req::get(W2_PATH), auth)?;
    let created = client.expect(&w3_req(0), auth)?;
    let patched = client.expect(&w4_req(&ids[1], 0), auth)?;
    let health = client.expect(&Req::get("/health"), None)?;
    storage.delete_inserted()?;
    let json = |b: &[u8]| -> Result<serde_json::Value, String> {
        serde_json::from_slice(b).map_err(|e| format!("an answer is not JSON: {e}"))
    };
    let canned = reference::Canned {
        item: json(&item)?,
        page: json(&page)?,
        created: json(&created)?,
        patched: json(&patched)?,
        health: json(&health)?,
    };
    let matches = canned.page["pagination"]["total"].clone();
    let canned_file = scratch.dir.join("canned.json");
    std::fs::write(
        &canned_file,
        serde_json::to_vec(&canned).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("cannot write {}: {e}", canned_file.display()))?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find own binary: {e}"))?;
    let ref_addr = setup::free_addr()?;
    let mut cmd = setup::command(&exe, pin);
    cmd.arg("--serve-reference")
        .arg(ref_addr.port().to_string())
        .arg("--canned")
        .arg(&canned_file)
        .env_remove("API_BENCH_PINNED");
    let reference = Server::start(
        cmd,
        ref_addr,
        scratch.dir.join("reference.log"),
        "framework reference",
        "/health",
    )?;
    println!(
        "\nreference app on http://{} (pid {}), framework reference on http://{} (pid {}); \
         W2 filter matches {matches} rows; {} connections, {} rounds x {:.1} s",
        app.addr,
        app.pid,
        reference.addr,
        reference.pid,
        args.connections,
        args.rounds,
        args.seconds
    );

    let paths: Vec<String> = ids.iter().map(|id| format!("/api/critters/{id}")).collect();
    let stride = (ids.len() / args.connections).max(1);
    let pick = |k: usize, i: u64| (k * stride + usize::try_from(i).unwrap_or(0)) % ids.len();
    let want = |k: &str| args.workloads.iter().any(|w| w.eq_ignore_ascii_case(k));
    type Make<'m> = Box<dyn Fn(usize, u64) -> Req + Sync + 'm>;
    let all: Vec<(&'static str, &'static str, Option<Op>, Make<'_>)> = vec![
        (
            "W1",
            "`GET /api/critters/{id}`",
            Some(Op::Point),
            Box::new(|k, i| Req::get(paths[pick(k, i)].clone())),
        ),
        (
            "W2",
            "`GET /api/critters/?species=cat&cuteness_level__gte=5&page=2&page_size=25`",
            Some(Op::CountAndPage),
            Box::new(|_, _| Req::get(W2_PATH)),
        ),
        (
            "W3",
            "`POST /api/critters/`",
            Some(Op::Insert),
            Box::new(|k, i| w3_req((k as u64) << 40 | i)),
        ),
        (
            "W4",
            "`PATCH /api/critters/{id}`",
            Some(Op::Update),
            Box::new(|k, i| w4_req(&ids[pick(k, i)], i)),
        ),
        (
            "W6",
            "`GET /health`",
            None,
            Box::new(|_, _| Req::get("/health")),
        ),
    ];
    let mut workloads: Vec<Workload<'_>> = all
        .into_iter()
        .filter(|(key, ..)| want(key))
        .map(|(key, title, op, make)| Workload {
            key,
            title,
            op,
            make,
            app: Vec::new(),
            reference: Vec::new(),
            storage: Vec::new(),
        })
        .collect();

    let round = Duration::from_secs_f64(args.seconds);
    let warm = Duration::from_secs_f64(args.warmup);
    let servers = [(&app, "reference app"), (&reference, "framework reference")];
    if !warm.is_zero() {
        for w in &workloads {
            for (server, name) in servers {
                let what = format!("{} warm-up on the {name}", w.key);
                window(
                    server,
                    args.connections,
                    warm,
                    auth,
                    &storage,
                    &*w.make,
                    &what,
                )?;
                storage.delete_inserted()?;
            }
            if let Some(op) = w.op.filter(|_| !scratch.exclusive && !args.no_storage) {
                storage.measure(op, warm.min(Duration::from_millis(300)))?;
            }
        }
    }
    for r in 0..args.rounds {
        for (wi, w) in workloads.iter_mut().enumerate() {
            let first_app = (r as usize + wi).is_multiple_of(2);
            for is_app in [first_app, !first_app] {
                let (server, name) = if is_app { servers[0] } else { servers[1] };
                let what = format!("{} round {} on the {name}", w.key, r + 1);
                let (s, _) = window(
                    server,
                    args.connections,
                    round,
                    auth,
                    &storage,
                    &*w.make,
                    &what,
                )?;
                storage.delete_inserted()?;
                eprintln!(
                    "  {what}: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, server CPU {:.1} µs/req{}",
                    s.rps,
                    s.p50,
                    s.p99,
                    s.server_us,
                    if storage.counts_postgres() && is_app {
                        format!(", PostgreSQL {:.1} µs/req", s.pg_us)
                    } else {
                        String::new()
                    }
                );
                if is_app {
                    w.app.push(s);
                } else {
                    w.reference.push(s);
                }
            }
            if let Some(op) = w.op.filter(|_| !scratch.exclusive && !args.no_storage) {
                let c = storage.measure(op, round)?;
                eprintln!(
                    "  {} round {} storage reference: {} ops, {:.1} µs CPU/op",
                    w.key,
                    r + 1,
                    c.ops,
                    c.us_per_op()
                );
                w.storage.push(c);
            }
        }
    }
    for (op, costs) in early {
        if let Some(w) = workloads.iter_mut().find(|w| w.op == Some(op)) {
            w.storage = costs;
        }
    }

    let w5 = if want("w5") {
        Some(w5(args, &app, &storage)?)
    } else {
        None
    };
    let w7 = if want("w7") {
        Some(w7(args, &app, &mut storage, &token, scratch.exclusive)?)
    } else {
        None
    };
    // Each window reset the peak: the run's peak is the largest of the windows' peaks.
    let peak = workloads
        .iter()
        .flat_map(|w| w.app.iter().map(|s| s.hwm))
        .chain(w5.as_ref().map(|w| w.logins.hwm))
        .chain(procfs::status_bytes(app.pid, "VmHWM"))
        .max()
        .unwrap_or(0);
    let ref_peak = workloads
        .iter()
        .flat_map(|w| w.reference.iter().map(|s| s.hwm))
        .chain(procfs::status_bytes(reference.pid, "VmHWM"))
        .max()
        .unwrap_or(0);
    drop(reference);
    drop(app);

    print!(
        "{}",
        report(
            args,
            &workloads,
            w5.as_ref(),
            counts,
            peak,
            ref_peak,
            &matches
        )
    );
    if let Some((app, stored)) = w7 {
        let server = app.server_us + app.pg_us;
        let limit = stored.map(|c| c.us_per_op());
        println!(
            "\nW7 `POST /api/critters/batch/` with {} items, one connection (medians): {:.1} batches/s, \
             p50 {:.1} ms, p99 {:.1} ms, server CPU {:.0} µs/batch{}; storage reference ({} \
             `INSERT … RETURNING` in one transaction): {}; ratio {}",
            storage::BATCH,
            app.rps,
            app.p50,
            app.p99,
            server,
            if args.backend == BackendArg::Postgres {
                format!(" (PostgreSQL {:.0} of it)", app.pg_us)
            } else {
                String::new()
            },
            storage::BATCH,
            limit.map_or("n/a (exclusive locking)".to_owned(), |l| format!("{l:.0} µs CPU/batch")),
            limit.map_or("n/a".to_owned(), |l| format!("{:.2}x", server / l)),
        );
    }
    Ok(())
}

/// W7's request body number `n`: [`storage::BATCH`] critters of a species no filter matches.
fn w7_req(n: u64) -> Req {
    let items: Vec<serde_json::Value> = (0..storage::BATCH)
        .map(|j| {
            serde_json::json!({"name": format!("batch {n}-{j}"), "species": storage::INSERTED_SPECIES, "cuteness_level": 3})
        })
        .collect();
    Req::json(
        "POST",
        "/api/critters/batch/",
        serde_json::json!({ "items": items }).to_string(),
        201,
    )
}

/// W7: batch creates of [`storage::BATCH`] critters on one connection, against the storage
/// reference's [`storage::BATCH`] inserts in one transaction (not with exclusive locking,
/// where the server owns the file), interleaved round by round; medians.
fn w7(
    args: &Args,
    app: &Server,
    storage: &mut Storage,
    token: &str,
    exclusive: bool,
) -> Result<(Sample, Option<storage::Cost>), String> {
    let round = Duration::from_secs_f64(args.seconds);
    let make = |k: usize, i: u64| w7_req((k as u64) << 40 | i);
    let (mut samples, mut costs) = (Vec::new(), Vec::new());
    for r in 0..args.rounds {
        let what = format!("W7 round {} on the reference app", r + 1);
        let (s, _) = window(app, 1, round, Some(token), storage, &make, &what)?;
        storage.delete_inserted()?;
        eprintln!(
            "  {what}: {:.1} batches/s, p50 {:.1} ms, server CPU {:.0} µs/batch",
            s.rps,
            s.p50,
            s.server_us + s.pg_us
        );
        samples.push(s);
        if !exclusive {
            let c = storage.measure(Op::InsertBatch, round)?;
            eprintln!(
                "  W7 round {} storage reference: {} batches, {:.0} µs CPU/batch",
                r + 1,
                c.ops,
                c.us_per_op()
            );
            costs.push(c);
        }
    }
    let stored = (!costs.is_empty()).then(|| {
        let mut by_cost = costs.clone();
        by_cost.sort_by(|a, b| a.us_per_op().total_cmp(&b.us_per_op()));
        by_cost[by_cost.len() / 2]
    });
    Ok((medians(&samples), stored))
}

/// W5's figures.
struct W5 {
    logins: Sample,
    idle_p99: f64,
    busy_p99: f64,
    bcrypt_us: f64,
    cost: u32,
}

/// W5: logins at the configured bcrypt cost with a `/health` probe alongside, against the
/// probe alone; and bcrypt's own rate in this process.
fn w5(args: &Args, app: &Server, storage: &Storage) -> Result<W5, String> {
    let round = Duration::from_secs_f64(args.seconds.max(3.0));
    let pace = Duration::from_millis(args.probe_interval_ms.max(1));
    let probe = |stop: &AtomicBool| -> Outcome {
        let done = AtomicU64::new(0);
        let load = Load {
            addr: app.addr,
            connections: 1,
            duration: round,
            token: None,
            stop,
            done: &done,
            pace,
        };
        run_load(&load, &|_, _| Req::get("/health"))
    };
    let mut logins = Vec::new();
    let (mut idle, mut busy) = (Vec::new(), Vec::new());
    let login_make = |_: usize, _: u64| login_req(USER_EMAIL);
    for r in 0..args.rounds {
        let stop = AtomicBool::new(false);
        let mut alone = probe(&stop);
        alone.check("W5 idle /health probe")?;
        idle.push(alone.latency_ms(0.99));
        let (s, mut probed) = std::thread::scope(|sc| {
            let prober = sc.spawn(|| probe(&stop));
            let what = format!("W5 round {} (logins)", r + 1);
            let s = window(
                app,
                args.login_connections,
                round,
                None,
                storage,
                &login_make,
                &what,
            );
            let probed = prober.join().unwrap_or_default();
            (s, probed)
        });
        let (s, _) = s?;
        probed.check("W5 /health probe during logins")?;
        let p99 = probed.latency_ms(0.99);
        eprintln!(
            "  W5 round {}: {:.1} logins/s, server CPU {:.0} µs/login, /health p99 {:.2} ms idle, {:.2} ms during logins",
            r + 1,
            s.rps,
            s.server_us,
            idle.last().copied().unwrap_or(0.0),
            p99
        );
        logins.push(s);
        busy.push(p99);
    }
    // bcrypt's own rate at the application's default cost, in this thread.
    let cost = crudforge::Config::default().auth.bcrypt_cost;
    let hash = bcrypt::hash(PASSWORD, cost).map_err(|e| format!("bcrypt: {e}"))?;
    let cpu0 = procfs::thread_cpu();
    let t0 = Instant::now();
    let mut n = 0u64;
    while n < 3 || t0.elapsed() < Duration::from_secs(1) {
        if !bcrypt::verify(PASSWORD, &hash).map_err(|e| format!("bcrypt: {e}"))? {
            return Err("bcrypt verification failed".into());
        }
        n += 1;
    }
    let bcrypt_us = per_req(procfs::thread_cpu().saturating_sub(cpu0), n);
    Ok(W5 {
        logins: medians(&logins),
        idle_p99: median(idle),
        busy_p99: median(busy),
        bcrypt_us,
        cost,
    })
}

fn report(
    args: &Args,
    workloads: &[Workload<'_>],
    w5: Option<&W5>,
    counts: &[QueryCount],
    peak: u64,
    ref_peak: u64,
    matches: &serde_json::Value,
) -> String {
    let pg = args.backend == BackendArg::Postgres;
    let mut r = String::new();
    let _ = writeln!(
        r,
        "\n{} backend{}, {} critters (W2 matches {matches}), {} connections, {} rounds x {:.1} s (medians), \
         reference app peak RSS {:.1} MiB, framework reference {:.1} MiB\n",
        args.backend.label(),
        if args.sqlite_exclusive {
            " (SQLITE_LOCKING=EXCLUSIVE)"
        } else {
            ""
        },
        args.rows,
        args.connections,
        args.rounds,
        args.seconds,
        mib(peak),
        mib(ref_peak)
    );
    let pg_cols = if pg {
        " PostgreSQL CPU µs/req | server + PostgreSQL µs/req |"
    } else {
        ""
    };
    let _ = writeln!(
        r,
        "| workload | req/s | p50 / p99 ms | server CPU µs/req |{pg_cols} framework ref req/s | framework ref CPU µs/req | storage ref CPU µs/op{} | x framework | x storage | issue-11 target µs | peak RSS MiB | queries/req |",
        if pg { " (PostgreSQL part)" } else { "" }
    );
    let _ = writeln!(
        r,
        "|---|---:|---:|---:|{}---:|---:|---:|---:|---:|---|---:|---:|",
        if pg { "---:|---:|" } else { "" }
    );
    for w in workloads {
        let a = medians(&w.app);
        let f = medians(&w.reference);
        let total = a.server_us + if pg { a.pg_us } else { 0.0 };
        let st = (!w.storage.is_empty()).then(|| {
            (
                median(w.storage.iter().map(storage::Cost::us_per_op).collect()),
                median(w.storage.iter().map(storage::Cost::pg_us_per_op).collect()),
            )
        });
        let storage_cell = match st {
            Some((s, p)) if pg => format!("{s:.1} ({p:.1})"),
            Some((s, _)) => format!("{s:.1}"),
            None => "-".to_owned(),
        };
        let x_storage = st.map_or_else(|| "-".to_owned(), |(s, _)| format!("{:.2}", total / s));
        let target = match (w.key, st) {
            ("W1", _) => Some(2.0 * f.server_us),
            ("W2", Some((s, _))) => Some(1.5 * s),
            ("W3", Some((s, _))) => Some(f.server_us + 1.5 * s),
            ("W4", Some((s, _))) => Some(f.server_us + 2.0 * s),
            _ => None,
        };
        let target_cell = match target {
            Some(t) if !pg => format!("≤ {t:.0} ({})", if total <= t { "met" } else { "not met" }),
            _ => "-".to_owned(),
        };
        let pg_cells = if pg {
            format!(" {:.1} | {total:.1} |", a.pg_us)
        } else {
            String::new()
        };
        let queries = counts
            .iter()
            .find(|q| q.key == w.key)
            .map_or("?", |q| q.count.as_str());
        let _ = writeln!(
            r,
            "| {} {} | {:.0} | {:.2} / {:.2} | {:.1} |{pg_cells} {:.0} | {:.1} | {storage_cell} | {:.2} | {x_storage} | {target_cell} | {:.1} | {queries} |",
            w.key,
            w.title,
            a.rps,
            a.p50,
            a.p99,
            a.server_us,
            f.rps,
            f.server_us,
            total / f.server_us,
            mib(a.hwm),
        );
    }
    if let Some(w) = w5 {
        let queries = counts
            .iter()
            .find(|q| q.key == "W5")
            .map_or("?", |q| q.count.as_str());
        let bound = 1e6 / w.bcrypt_us;
        let _ = writeln!(
            r,
            "\nW5 `POST {LOGIN_PATH}` (bcrypt cost {}, {} connections, `/health` probed every {} ms on one more connection):\n",
            w.cost, args.login_connections, args.probe_interval_ms
        );
        let _ = writeln!(
            r,
            "| logins/s | login p50 / p99 ms | server CPU µs/login |{} bcrypt verify CPU µs (this process) | logins/s bcrypt allows on one core | x bcrypt (CPU) | `/health` p99 idle ms | `/health` p99 during logins ms | ratio | peak RSS MiB | queries/login |",
            if pg { " PostgreSQL CPU µs/login |" } else { "" }
        );
        let _ = writeln!(
            r,
            "|---:|---:|---:|{}---:|---:|---:|---:|---:|---:|---:|---:|",
            if pg { "---:|" } else { "" }
        );
        let _ = writeln!(
            r,
            "| {:.1} | {:.0} / {:.0} | {:.0} |{} {:.0} | {bound:.1} | {:.2} | {:.2} | {:.2} | {:.1} | {:.1} | {queries} |",
            w.logins.rps,
            w.logins.p50,
            w.logins.p99,
            w.logins.server_us,
            if pg { format!(" {:.0} |", w.logins.pg_us) } else { String::new() },
            w.bcrypt_us,
            (w.logins.server_us + if pg { w.logins.pg_us } else { 0.0 }) / w.bcrypt_us,
            w.idle_p99,
            w.busy_p99,
            w.busy_p99 / w.idle_p99.max(1e-9),
            mib(w.logins.hwm),
        );
    }
    let _ = writeln!(
        r,
        "\nServer CPU: utime + stime of the server process (`/proc/PID/stat`) over each window, per \
         successful request{}. Storage reference: the same statements through Diesel on the same \
         database in the benchmark's own thread (its CPU time{}). Peak RSS: `VmHWM`, reset before \
         each window. Targets (issue 11, SQLite): W1 ≤ 2 x framework, W2 ≤ 1.5 x storage, \
         W3 ≤ framework + 1.5 x storage, W4 ≤ framework + 2 x storage.",
        if pg {
            "; PostgreSQL: the server's processes and this database's backends, read alike"
        } else {
            ""
        },
        if pg {
            " plus the PostgreSQL processes'"
        } else {
            ", SQLite runs in it"
        }
    );
    r
}

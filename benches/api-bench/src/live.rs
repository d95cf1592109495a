//! Live updates (`--live`): many Server-Sent Event streams open on one reference application,
//! writes at a fixed rate, and for every delivery the delay from the write to its receipt;
//! the server's CPU per delivered event; its memory per idle stream; W3 and W4 with the idle
//! streams open against none, alternated in the same run. With `--pocketbase`, the same
//! streams, writes and figures against PocketBase's realtime API.

use crate::client::{quantile_ms, run_load, Client, Load, Req};
use crate::measure::{login, server_bin, start_app, w3_req, w4_req, PASSWORD};
use crate::setup::{self, Scratch, Server};
use crate::sse::{self, Protocol, Streams, MARK};
use crate::{procfs, Args, BackendArg};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The species of the rows the streams follow (no seeded row has it).
const LIVE_SPECIES: &str = "live";
/// What a writer records of each write: its number, when it was sent, when its answer came
/// (microseconds since the common base).
type Written = Vec<(u64, u64, u64)>;

/// Writer connections sharing the write rate.
const WRITERS: u64 = 16;

/// The load average, as `/proc/loadavg` gives it (1, 5, 15 minutes).
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn kib(bytes: i64) -> f64 {
    // Sizes stay far below 2^52.
    #[allow(clippy::cast_precision_loss)]
    let b = bytes as f64;
    b / 1024.0
}

/// What one delivery run measured.
#[derive(Debug, Default)]
struct Delivery {
    writes: u64,
    expected: u64,
    delivered: u64,
    /// Receipt minus the write's response, ms: p50, p99, max.
    from_response: [f64; 3],
    /// Receipt minus the write's sending, ms: p50, p99, max.
    from_send: [f64; 3],
    /// Deliveries that arrived before the write's response did.
    before_response: u64,
    /// The writes' own latency, ms: p50, p99.
    write_ms: [f64; 2],
    /// The achieved write rate.
    write_rate: f64,
    server_cpu_s: f64,
    client_cpu_s: f64,
    window_s: f64,
    others: Vec<(String, usize)>,
    stream_errors: usize,
    load: String,
}

/// Memory with the streams open, against none.
#[derive(Debug, Default)]
struct Idle {
    rss_before: u64,
    rss_after: u64,
    streams: usize,
    open_s: f64,
    /// Server CPU (in cores) over 5 s with the streams open and nothing written.
    idle_cores: f64,
    load: String,
}

impl Idle {
    fn per_stream_kib(&self) -> f64 {
        let d = i64::try_from(self.rss_after).unwrap_or(i64::MAX)
            - i64::try_from(self.rss_before).unwrap_or(i64::MAX);
        // Stream counts stay far below 2^52.
        #[allow(clippy::cast_precision_loss)]
        let n = self.streams.max(1) as f64;
        kib(d) / n
    }
}

/// One W3 or W4 window.
#[derive(Debug, Clone)]
struct Window {
    key: &'static str,
    streams: bool,
    rps: f64,
    p50: f64,
    p99: f64,
    cpu_us: f64,
    load: String,
}

/// Runs `--live`.
///
/// # Errors
///
/// Anything that stops the run: a server that does not start, a refused stream or write.
pub(crate) fn run(args: &Args, pin: Option<usize>) -> Result<bool, String> {
    if args.streams == 0 || args.live_users == 0 || args.live_rows == 0 {
        return Err("--streams, --live-users and --live-rows must be at least 1".into());
    }
    if !(args.write_rate > 0.0 && args.write_rate <= 10_000.0) {
        return Err("--write-rate must be in (0, 10000]".into());
    }
    if !(args.live_seconds > 0.0 && args.live_seconds <= 600.0) {
        return Err("--live-seconds must be in (0, 600]".into());
    }
    let mut report = String::new();
    let _ = writeln!(
        report,
        "\n## Live updates: {} streams, {} writes/s for {} s{}\n",
        args.streams,
        args.write_rate,
        args.live_seconds,
        match pin {
            Some(_) => ", servers pinned to CPU 0, client to CPU 1",
            None => ", not pinned",
        }
    );
    if !args.no_crudforge {
        crudforge_side(args, pin, &mut report)?;
    }
    if let Some(pb) = &args.pocketbase {
        pocketbase_side(args, pin, pb, &mut report)?;
    }
    println!("{report}");
    Ok(true)
}

fn crudforge_side(args: &Args, pin: Option<usize>, report: &mut String) -> Result<(), String> {
    let bin = server_bin(args)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    let scratch = match args.backend {
        BackendArg::Sqlite => Scratch::sqlite(args.sqlite_exclusive)?,
        BackendArg::Postgres => {
            let url =
                args.postgres_url.clone().filter(|u| !u.is_empty()).ok_or(
                    "--backend postgres needs --postgres-url or CRUDFORGE_TEST_POSTGRES_URL",
                )?;
            rt.block_on(Scratch::postgres(&url))?
        }
    };
    let per_user = args.streams.div_ceil(args.live_users);
    let mut extra_env = vec![
        (
            "REALTIME_MAX_STREAMS".to_owned(),
            (args.streams + 16).to_string(),
        ),
        (
            "REALTIME_MAX_STREAMS_PER_USER".to_owned(),
            per_user.to_string(),
        ),
    ];
    extra_env.extend(args.server_env.iter().cloned());
    let scratch = Scratch {
        extra_env,
        ..scratch
    };
    let result = crudforge_measure(args, pin, &bin, &scratch, &rt, report);
    rt.block_on(scratch.cleanup());
    result
}

fn user_email(i: usize) -> String {
    format!("live{i}@api-bench.example")
}

fn crudforge_measure(
    args: &Args,
    pin: Option<usize>,
    bin: &Path,
    scratch: &Scratch,
    rt: &tokio::runtime::Runtime,
    report: &mut String,
) -> Result<(), String> {
    setup::run_cli(bin, scratch, &["migrate"], None)?;
    for i in 0..args.live_users {
        let email = user_email(i);
        setup::run_cli(
            bin,
            scratch,
            &["create-user", "--email", &email, "--password-stdin"],
            Some(PASSWORD),
        )?;
    }
    let ids = rt.block_on(async {
        let db = crudforge::Database::connect(&scratch.config())
            .await
            .map_err(|e| format!("open database: {e}"))?;
        setup::seed(&db, args.rows).await
    })?;
    let app = start_app(bin, scratch, pin, false, "live.log")?;
    eprintln!(
        "reference app at {} (pid {}), {} users, {} critters seeded; env {:?}",
        app.addr,
        app.pid,
        args.live_users,
        ids.len(),
        scratch.extra_env
    );
    let mut client = Client::connect(app.addr).map_err(|e| format!("connect: {e}"))?;
    let mut tokens = Vec::new();
    for i in 0..args.live_users {
        tokens.push(login_as(&mut client, &user_email(i))?);
    }
    let token = tokens[0].clone();
    let mut live = Vec::new();
    for i in 0..args.live_rows {
        let body = client.expect(
            &Req::json(
                "POST",
                "/api/critters/",
                serde_json::json!({"name": format!("row {i}"), "species": LIVE_SPECIES, "cuteness_level": 3})
                    .to_string(),
                201,
            ),
            Some(&token),
        )?;
        live.push(json_id(&body)?);
    }
    drop(client);

    let feed = format!("/api/critters/events/?species={LIVE_SPECIES}");
    let protocol = |i: usize| Protocol::Crudforge {
        path: feed.clone(),
        token: tokens[i % tokens.len()].clone(),
    };
    let base = Instant::now();

    // Warm up W3 and W4 with no stream open, then the memory with none.
    let seconds = Duration::from_secs_f64(args.seconds);
    let warm = Duration::from_secs_f64(args.warmup);
    let stride = (ids.len() / args.connections).max(1);
    let pick = |k: usize, i: u64| (k * stride + usize::try_from(i).unwrap_or(0)) % ids.len();
    let w3 = |k: usize, i: u64| w3_req((k as u64) << 40 | i);
    let w4 = |k: usize, i: u64| w4_req(&ids[pick(k, i)], i);
    if !warm.is_zero() {
        window(&app, args, warm, &token, "W3", false, &w3)?;
        window(&app, args, warm, &token, "W4", false, &w4)?;
    }
    let fds = procfs::socket_count(app.pid).ok_or("cannot count the server's sockets")?;
    let idle = idle_memory(&app, args.streams, &protocol, base)?;
    eprintln!(
        "idle: {:.1} KiB per stream ({} streams opened in {:.1} s)",
        idle.0.per_stream_kib(),
        idle.0.streams,
        idle.0.open_s
    );

    // Deliveries, on the streams just opened.
    let write = |n: u64| {
        let id = &live[usize::try_from(n).unwrap_or(0) % live.len()];
        Req::json(
            "PATCH",
            format!("/api/critters/{id}"),
            serde_json::json!({ "name": format!("{MARK}{n}") }).to_string(),
            200,
        )
    };
    let delivery = deliver(&app, idle.1, args, &write, Some(&token), base)?;
    released(&app, fds)?;

    // W3 and W4 with the streams open and with none, alternated.
    let mut windows = Vec::new();
    for r in 0..args.rounds {
        let order = if r % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for with in order {
            let streams = if with {
                Some(Streams::open(app.addr, args.streams, &protocol, base)?)
            } else {
                None
            };
            if with {
                // Let the opening settle.
                std::thread::sleep(Duration::from_secs(1));
            }
            windows.push(window(&app, args, seconds, &token, "W3", with, &w3)?);
            windows.push(window(&app, args, seconds, &token, "W4", with, &w4)?);
            if let Some(s) = streams {
                if let Some(e) = s.failure() {
                    return Err(format!("a stream failed during W3/W4: {e}"));
                }
                s.close()?;
                released(&app, fds)?;
            }
        }
    }
    let cmd = command_line(args, pin, false);
    write_crudforge(report, args, &idle.0, &delivery, &windows, &cmd);
    Ok(())
}

/// Waits until the server has let go of the closed streams: its open sockets are back to `fds`
/// (it notices a closed stream when it next writes to it, a heartbeat at the latest). Sockets,
/// not all descriptors: the database pool may have opened files during the windows.
fn released(server: &Server, fds: usize) -> Result<(), String> {
    let t = Instant::now();
    loop {
        let now = procfs::socket_count(server.pid).ok_or("cannot count the server's sockets")?;
        if now <= fds + 2 {
            // The stream's permit goes with its task, just after the socket.
            std::thread::sleep(Duration::from_millis(500));
            eprintln!("  streams released in {:.1?}", t.elapsed());
            return Ok(());
        }
        if t.elapsed() > Duration::from_secs(60) {
            return Err(format!(
                "the server still holds {now} sockets (before the streams: {fds}) 60 s after they closed"
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn login_as(client: &mut Client, email: &str) -> Result<String, String> {
    login(client, email)
}

fn json_id(body: &[u8]) -> Result<String, String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("answer is not JSON: {e}"))?;
    v["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("answer without id: {v}"))
}

/// Server RSS with no stream, then with `count` streams open (after they settle); the
/// streams stay open.
fn idle_memory(
    server: &Server,
    count: usize,
    protocol: &dyn Fn(usize) -> Protocol,
    base: Instant,
) -> Result<(Idle, Streams), String> {
    std::thread::sleep(Duration::from_secs(2));
    let rss_before = procfs::status_bytes(server.pid, "VmRSS").ok_or("cannot read VmRSS")?;
    let t = Instant::now();
    let streams = Streams::open(server.addr, count, protocol, base)?;
    let open_s = t.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_secs(3));
    let rss_after = procfs::status_bytes(server.pid, "VmRSS").ok_or("cannot read VmRSS")?;
    let cpu0 = procfs::cpu(server.pid).ok_or("cannot read the server's CPU time")?;
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs(5));
    let cpu1 = procfs::cpu(server.pid).ok_or("cannot read the server's CPU time")?;
    let idle_cores = cpu1.saturating_sub(cpu0).as_secs_f64() / t.elapsed().as_secs_f64();
    Ok((
        Idle {
            rss_before,
            rss_after,
            streams: streams.count(),
            open_s,
            idle_cores,
            load: loadavg(),
        },
        streams,
    ))
}

/// One W3 or W4 window: throughput, latency, server CPU per request.
fn window(
    server: &Server,
    args: &Args,
    duration: Duration,
    token: &str,
    key: &'static str,
    streams: bool,
    make: &(dyn Fn(usize, u64) -> Req + Sync),
) -> Result<Window, String> {
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let load = Load {
        addr: server.addr,
        connections: args.connections,
        duration,
        token: Some(token),
        stop: &stop,
        done: &done,
        pace: Duration::ZERO,
    };
    let cpu0 = procfs::cpu(server.pid).ok_or("cannot read the server's CPU time")?;
    let mut out = run_load(&load, make);
    let cpu1 = procfs::cpu(server.pid).ok_or("cannot read the server's CPU time")?;
    out.check(key)?;
    // Request counts stay far below 2^52.
    #[allow(clippy::cast_precision_loss)]
    let n = out.ok.max(1) as f64;
    let w = Window {
        key,
        streams,
        rps: out.rps(),
        p50: out.latency_ms(0.5),
        p99: out.latency_ms(0.99),
        cpu_us: cpu1.saturating_sub(cpu0).as_secs_f64() * 1e6 / n,
        load: loadavg(),
    };
    eprintln!(
        "  {key} {}: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, {:.0} µs CPU/req (load {})",
        if streams {
            "with streams"
        } else {
            "no streams"
        },
        w.rps,
        w.p50,
        w.p99,
        w.cpu_us,
        w.load
    );
    Ok(w)
}

/// Writes `write(n)` at `--write-rate` for `--live-seconds` while `streams` receive, then
/// closes the streams and measures the delays.
fn deliver(
    server: &Server,
    streams: Streams,
    args: &Args,
    write: &(dyn Fn(u64) -> Req + Sync),
    token: Option<&str>,
    base: Instant,
) -> Result<Delivery, String> {
    // Truncation is intended: whole writes.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let total = (args.write_rate * args.live_seconds).round() as u64;
    let interval = Duration::from_secs_f64(1.0 / args.write_rate);
    let us = |t: Instant| u64::try_from(t.duration_since(base).as_micros()).unwrap_or(u64::MAX);
    let start = Instant::now() + Duration::from_millis(200);
    let cpu0 = procfs::cpu(server.pid).ok_or("cannot read the server's CPU time")?;
    let me0 = procfs::cpu(std::process::id()).unwrap_or_default();
    let stop = AtomicBool::new(false);
    let results: Vec<Result<Written, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|k| {
                let stop = &stop;
                s.spawn(move || -> Result<Written, String> {
                    let mut c =
                        Client::connect(server.addr).map_err(|e| format!("connect: {e}"))?;
                    let mut out = Vec::new();
                    let mut n = k;
                    while n < total && !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let due = start + interval.mul_f64(n as f64);
                        let now = Instant::now();
                        if due > now {
                            std::thread::sleep(due - now);
                        }
                        let req = write(n);
                        let sent = Instant::now();
                        if let Err(e) = c.expect(&req, token) {
                            stop.store(true, std::sync::atomic::Ordering::Relaxed);
                            return Err(e);
                        }
                        out.push((n, us(sent), us(Instant::now())));
                        n += WRITERS;
                    }
                    Ok(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a writer panicked".into())))
            .collect()
    });
    let writes_done = Instant::now();
    let mut sent = vec![0u64; usize::try_from(total).unwrap_or(0)];
    let mut answered = vec![0u64; sent.len()];
    let mut write_lat = Vec::new();
    for r in results {
        for (n, s, a) in r? {
            let i = usize::try_from(n).unwrap_or(0);
            sent[i] = s;
            answered[i] = a;
            write_lat.push(u32::try_from(a.saturating_sub(s)).unwrap_or(u32::MAX));
        }
    }
    let expected = total * streams.count() as u64;
    // Wait for the deliveries (at most 10 s after the last write).
    let until = Instant::now() + Duration::from_secs(10);
    while streams.delivered() < expected && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    let end = Instant::now();
    let cpu1 = procfs::cpu(server.pid).ok_or("cannot read the server's CPU time")?;
    let me1 = procfs::cpu(std::process::id()).unwrap_or_default();
    let load = loadavg();
    let outs = streams.close()?;
    let mut from_response = Vec::new();
    let mut from_send = Vec::new();
    let mut before_response = 0;
    let mut others: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    let mut stream_errors = 0;
    for o in &outs {
        for &(n, at) in &o.receipts {
            let Some(i) = usize::try_from(n).ok().filter(|&i| i < sent.len()) else {
                continue;
            };
            if at < answered[i] {
                before_response += 1;
            }
            from_response.push(u32::try_from(at.saturating_sub(answered[i])).unwrap_or(u32::MAX));
            from_send.push(u32::try_from(at.saturating_sub(sent[i])).unwrap_or(u32::MAX));
        }
        for e in &o.others {
            *others.entry(e.clone()).or_default() += 1;
        }
        if o.error.is_some() {
            stream_errors += 1;
        }
    }
    let delivered = from_response.len() as u64;
    let q3 = |v: &mut Vec<u32>| {
        [
            quantile_ms(v, 0.5),
            quantile_ms(v, 0.99),
            quantile_ms(v, 1.0),
        ]
    };
    // Write counts stay far below 2^52.
    #[allow(clippy::cast_precision_loss)]
    let write_rate = total as f64 / writes_done.duration_since(start).as_secs_f64();
    let d = Delivery {
        writes: total,
        expected,
        delivered,
        from_response: q3(&mut from_response),
        from_send: q3(&mut from_send),
        before_response,
        write_ms: [
            quantile_ms(&mut write_lat, 0.5),
            quantile_ms(&mut write_lat, 0.99),
        ],
        write_rate,
        server_cpu_s: cpu1.saturating_sub(cpu0).as_secs_f64(),
        client_cpu_s: me1.saturating_sub(me0).as_secs_f64(),
        window_s: end.duration_since(start).as_secs_f64(),
        others: others.into_iter().collect(),
        stream_errors,
        load,
    };
    eprintln!("delivery: {d:?}");
    Ok(d)
}

impl Delivery {
    fn cpu_us_per_event(&self) -> f64 {
        // Event counts stay far below 2^52.
        #[allow(clippy::cast_precision_loss)]
        let n = self.delivered.max(1) as f64;
        self.server_cpu_s * 1e6 / n
    }

    fn row(&self, name: &str) -> String {
        format!(
            "| {name} | {} | {:.0} | {} / {} | {:.1} / {:.1} / {:.1} | {:.1} / {:.1} / {:.1} | {} | {:.1} / {:.1} | {:.1} | {:.2} | {:.2} | {} |",
            self.writes,
            self.write_rate,
            self.delivered,
            self.expected,
            self.from_response[0],
            self.from_response[1],
            self.from_response[2],
            self.from_send[0],
            self.from_send[1],
            self.from_send[2],
            self.before_response,
            self.write_ms[0],
            self.write_ms[1],
            self.cpu_us_per_event(),
            self.server_cpu_s / self.window_s.max(1e-9),
            self.client_cpu_s / self.window_s.max(1e-9),
            self.load
        )
    }
}

const DELIVERY_HEAD: &str = "| server | writes | writes/s | delivered / expected | delay from the write's response p50 / p99 / max ms | delay from the write's sending p50 / p99 / max ms | delivered before the response | write latency p50 / p99 ms | server CPU µs per delivered event | server CPU (cores) | client CPU (cores) | load average |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|";

const IDLE_HEAD: &str = "| server | streams | opened in s | RSS without streams MiB | RSS with the streams MiB | per idle stream KiB | server CPU while idle (cores) | load average |\n|---|---:|---:|---:|---:|---:|---:|---|";

fn mib(b: u64) -> f64 {
    // Sizes stay far below 2^52.
    #[allow(clippy::cast_precision_loss)]
    let b = b as f64;
    b / (1024.0 * 1024.0)
}

impl Idle {
    fn row(&self, name: &str) -> String {
        format!(
            "| {name} | {} | {:.1} | {:.1} | {:.1} | **{:.1}** | {:.3} | {} |",
            self.streams,
            self.open_s,
            mib(self.rss_before),
            mib(self.rss_after),
            self.per_stream_kib(),
            self.idle_cores,
            self.load
        )
    }
}

fn median(mut v: Vec<f64>) -> f64 {
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

fn command_line(args: &Args, pin: Option<usize>, pocketbase: bool) -> String {
    let mut c = format!(
        "api-bench --live --streams {} --write-rate {} --live-seconds {} --live-users {} --live-rows {} --rounds {} --seconds {} --connections {}",
        args.streams,
        args.write_rate,
        args.live_seconds,
        args.live_users,
        args.live_rows,
        args.rounds,
        args.seconds,
        args.connections
    );
    if pin.is_none() {
        c.push_str(" --no-pin");
    }
    if pocketbase {
        c.push_str(" --pocketbase pb-venv/bin/pocketbase");
    }
    c
}

fn write_crudforge(
    report: &mut String,
    args: &Args,
    idle: &Idle,
    d: &Delivery,
    windows: &[Window],
    cmd: &str,
) {
    let _ = writeln!(report, "crudforge, {}; `{cmd}`\n", args.backend.label());
    let _ = writeln!(report, "{IDLE_HEAD}\n{}\n", idle.row("crudforge"));
    let _ = writeln!(report, "{DELIVERY_HEAD}\n{}\n", d.row("crudforge"));
    if !d.others.is_empty() || d.stream_errors > 0 {
        let _ = writeln!(
            report,
            "Other events: {:?}; streams that failed: {}\n",
            d.others, d.stream_errors
        );
    }
    let _ = writeln!(
        report,
        "W3/W4, {} connections, {} rounds x {} s, medians (idle streams: {} open on the feed, none delivered to):\n",
        args.connections, args.rounds, args.seconds, args.streams
    );
    let _ = writeln!(
        report,
        "| workload | streams | req/s | p50 ms | p99 ms | server CPU µs/req | req/s ratio with/without | loads |\n|---|---|---:|---:|---:|---:|---:|---|"
    );
    for key in ["W3", "W4"] {
        let pick = |with: bool| -> (f64, f64, f64, f64, String) {
            let ws: Vec<&Window> = windows
                .iter()
                .filter(|w| w.key == key && w.streams == with)
                .collect();
            (
                median(ws.iter().map(|w| w.rps).collect()),
                median(ws.iter().map(|w| w.p50).collect()),
                median(ws.iter().map(|w| w.p99).collect()),
                median(ws.iter().map(|w| w.cpu_us).collect()),
                ws.iter()
                    .map(|w| w.load.split(' ').next().unwrap_or("?").to_owned())
                    .collect::<Vec<_>>()
                    .join(", "),
            )
        };
        let none = pick(false);
        let with = pick(true);
        let ratio = with.0 / none.0.max(1e-9);
        let idle = format!("{} idle", args.streams);
        for (label, s, r) in [
            ("none", &none, String::new()),
            (idle.as_str(), &with, format!("**{ratio:.2}**")),
        ] {
            let _ = writeln!(
                report,
                "| {key} | {label} | {:.0} | {:.2} | {:.2} | {:.0} | {r} | {} |",
                s.0, s.1, s.2, s.3, s.4
            );
        }
    }
    let _ = writeln!(report);
}

fn pocketbase_side(
    args: &Args,
    pin: Option<usize>,
    pb: &Path,
    report: &mut String,
) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("api-bench-pb-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let result = pocketbase_measure(args, pin, pb, &dir, report);
    if let Err(e) = std::fs::remove_dir_all(&dir) {
        eprintln!("warning: could not remove {}: {e}", dir.display());
    }
    result
}

fn pocketbase_measure(
    args: &Args,
    pin: Option<usize>,
    pb: &Path,
    dir: &Path,
    report: &mut String,
) -> Result<(), String> {
    let data = dir.join("pb_data");
    let data_arg = format!("--dir={}", data.display());
    let email = "admin@api-bench.example";
    let out = std::process::Command::new(pb)
        .args(["superuser", "upsert", email, PASSWORD, &data_arg])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", pb.display()))?;
    if !out.status.success() {
        return Err(format!(
            "pocketbase superuser upsert: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let addr = setup::free_addr()?;
    let mut cmd = setup::command(pb, pin);
    cmd.arg("serve")
        .arg(format!("--http={addr}"))
        .arg(&data_arg)
        .current_dir(dir);
    let server = Server::start(cmd, addr, dir.join("pb.log"), "PocketBase", "/api/health")?;
    let version = std::process::Command::new(pb)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    eprintln!("{version} at {addr} (pid {})", server.pid);
    let token = pb_call(
        addr,
        "POST",
        "/api/collections/_superusers/auth-with-password",
        None,
        &serde_json::json!({"identity": email, "password": PASSWORD}),
        200,
    )?["token"]
        .as_str()
        .ok_or("PocketBase login without token")?
        .to_owned();
    pb_call(
        addr,
        "POST",
        "/api/collections",
        Some(&token),
        &serde_json::json!({
            "name": "critters",
            "type": "base",
            "listRule": "",
            "viewRule": "",
            "createRule": "",
            "updateRule": "",
            "fields": [
                {"name": "name", "type": "text", "required": true},
                {"name": "species", "type": "text"},
                {"name": "cuteness_level", "type": "number"}
            ]
        }),
        200,
    )?;
    let mut live = Vec::new();
    for i in 0..args.live_rows {
        let v = pb_call(
            addr,
            "POST",
            "/api/collections/critters/records",
            None,
            &serde_json::json!({"name": format!("row {i}"), "species": LIVE_SPECIES, "cuteness_level": 3}),
            200,
        )?;
        live.push(
            v["id"]
                .as_str()
                .ok_or("PocketBase record without id")?
                .to_owned(),
        );
    }
    let write = |n: u64| {
        let id = &live[usize::try_from(n).unwrap_or(0) % live.len()];
        Req::json(
            "PATCH",
            format!("/api/collections/critters/records/{id}"),
            serde_json::json!({ "name": format!("{MARK}{n}") }).to_string(),
            200,
        )
    };
    // Warm the write path as the crudforge side's W3/W4 warm-up does.
    let mut c = Client::connect(addr).map_err(|e| format!("connect: {e}"))?;
    for n in 0..200 {
        c.expect(&write(1_000_000 + n), None)?;
    }
    drop(c);
    let base = Instant::now();
    let protocol = |_: usize| Protocol::PocketBase {
        topic: "critters".into(),
    };
    let (idle, streams) = idle_memory(&server, args.streams, &protocol, base)?;
    eprintln!(
        "PocketBase idle: {:.1} KiB per stream ({} streams opened in {:.1} s)",
        idle.per_stream_kib(),
        idle.streams,
        idle.open_s
    );
    let d = deliver(&server, streams, args, &write, None, base)?;
    let cmd = command_line(args, pin, true);
    let _ = writeln!(
        report,
        "{version} (SQLite, collection `critters` with an open list rule, subscribers on topic `critters`); `{cmd}`\n"
    );
    let _ = writeln!(report, "{IDLE_HEAD}\n{}\n", idle.row("PocketBase"));
    let _ = writeln!(report, "{DELIVERY_HEAD}\n{}\n", d.row("PocketBase"));
    if !d.others.is_empty() || d.stream_errors > 0 {
        let _ = writeln!(
            report,
            "Other events: {:?}; streams that failed: {}\n",
            d.others, d.stream_errors
        );
    }
    Ok(())
}

/// One JSON call to PocketBase (its `Authorization` header takes the bare token).
fn pb_call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &serde_json::Value,
    expect: u16,
) -> Result<serde_json::Value, String> {
    let headers: Vec<(&str, &str)> = token.map(|t| ("Authorization", t)).into_iter().collect();
    let (status, answer) =
        sse::request_blocking(addr, method, path, &headers, Some(&body.to_string()))?;
    if status != expect {
        return Err(format!(
            "PocketBase {method} {path}: expected {expect}, got {status}: {}",
            String::from_utf8_lossy(&answer)
        ));
    }
    serde_json::from_slice(&answer).map_err(|e| format!("PocketBase {method} {path}: {e}"))
}

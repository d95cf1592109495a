//! Data in and out (`--data`): the reference application's critters exported as CSV and as
//! NDJSON (rows per second, the server's peak memory against idle), the aggregate "critters
//! per species with the average cuteness" with its covering index and without it, and an
//! import of a CSV file (rows per second). Seed with `--rows` (1,000,000 for the figures in
//! `benches/JOURNAL.md`).

use crate::measure::{login, server_bin, start_app, ADMIN_EMAIL, PASSWORD};
use crate::setup::{self, Scratch};
use crate::{procfs, Args, BackendArg};
use diesel_async::SimpleAsyncConnection;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Rows of the imported file.
const IMPORT_ROWS: usize = 100_000;
/// Timed repetitions of the aggregate (the median is reported).
const AGGREGATE_RUNS: usize = 5;

/// What one streamed answer measured.
struct Streamed {
    status: u16,
    /// Lines of the body (for CSV, the header line included).
    lines: u64,
    bytes: u64,
    elapsed: Duration,
    /// The body, when it was short (error answers, aggregates).
    text: String,
}

/// Sends one request on a fresh connection and reads the whole answer (chunked or not),
/// counting its lines as they arrive; keeps the text of answers under 64 KiB.
fn exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: &str,
    body: Option<(&str, &[u8])>,
) -> Result<Streamed, String> {
    let io = |e: std::io::Error| format!("{method} {path}: {e}");
    let stream = TcpStream::connect(addr).map_err(io)?;
    stream.set_nodelay(true).map_err(io)?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n"
    );
    if let Some((kind, bytes)) = body {
        let _ = write!(
            head,
            "Content-Type: {kind}\r\nContent-Length: {}\r\n",
            bytes.len()
        );
    }
    head.push_str("\r\n");
    let start = Instant::now();
    let mut writer = stream.try_clone().map_err(io)?;
    writer.write_all(head.as_bytes()).map_err(io)?;
    if let Some((_, bytes)) = body {
        writer.write_all(bytes).map_err(io)?;
    }
    let mut reader = BufReader::with_capacity(1 << 16, stream);
    let mut line = String::new();
    reader.read_line(&mut line).map_err(io)?;
    let status: u16 = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{method} {path}: bad status line {line:?}"))?;
    let mut chunked = false;
    let mut length: Option<u64> = None;
    loop {
        line.clear();
        reader.read_line(&mut line).map_err(io)?;
        let h = line.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("transfer-encoding") && value.contains("chunked") {
                chunked = true;
            } else if name.eq_ignore_ascii_case("content-length") {
                length = value.parse().ok();
            }
        }
    }
    let mut out = Streamed {
        status,
        lines: 0,
        bytes: 0,
        elapsed: Duration::ZERO,
        text: String::new(),
    };
    let mut buf = vec![0u8; 1 << 16];
    let take = |out: &mut Streamed, bytes: &[u8]| {
        out.bytes += bytes.len() as u64;
        out.lines += bytes.iter().filter(|b| **b == b'\n').count() as u64;
        if out.text.len() < 1 << 16 {
            out.text.push_str(&String::from_utf8_lossy(bytes));
        }
    };
    if chunked {
        loop {
            line.clear();
            reader.read_line(&mut line).map_err(io)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| format!("{method} {path}: bad chunk size {line:?}"))?;
            if size == 0 {
                break;
            }
            let mut left = size;
            while left > 0 {
                let n = left.min(buf.len());
                reader.read_exact(&mut buf[..n]).map_err(io)?;
                take(&mut out, &buf[..n]);
                left -= n;
            }
            line.clear();
            reader.read_line(&mut line).map_err(io)?;
        }
    } else {
        let mut left = length.unwrap_or(u64::MAX);
        while left > 0 {
            let want = usize::try_from(left.min(buf.len() as u64)).unwrap_or(buf.len());
            let n = reader.read(&mut buf[..want]).map_err(io)?;
            if n == 0 {
                break;
            }
            take(&mut out, &buf[..n]);
            left -= n as u64;
        }
    }
    out.elapsed = start.elapsed();
    Ok(out)
}

fn mib(bytes: u64) -> f64 {
    // Sizes stay far below 2^52.
    #[allow(clippy::cast_precision_loss)]
    let b = bytes as f64;
    b / (1024.0 * 1024.0)
}

fn per_second(n: u64, d: Duration) -> f64 {
    // Counts stay far below 2^52.
    #[allow(clippy::cast_precision_loss)]
    let n = n as f64;
    n / d.as_secs_f64().max(1e-9)
}

/// Runs `--data`.
///
/// # Errors
///
/// Anything that stops the run: a server that does not start, a refused request.
pub(crate) fn run(args: &Args, pin: Option<usize>) -> Result<bool, String> {
    let bin = server_bin(args)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    let scratch = match args.backend {
        BackendArg::Sqlite => Scratch::sqlite(false)?,
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
    let result = measure(args, pin, &bin, &scratch, &rt);
    rt.block_on(scratch.cleanup());
    result.map(|report| {
        println!("{report}");
        true
    })
}

fn measure(
    args: &Args,
    pin: Option<usize>,
    bin: &std::path::Path,
    scratch: &Scratch,
    rt: &tokio::runtime::Runtime,
) -> Result<String, String> {
    setup::run_cli(bin, scratch, &["migrate"], None)?;
    setup::run_cli(
        bin,
        scratch,
        &[
            "create-user",
            "--email",
            ADMIN_EMAIL,
            "--password-stdin",
            "--admin",
        ],
        Some(PASSWORD),
    )?;
    let t = Instant::now();
    let db = rt.block_on(async {
        let db = crudforge::Database::connect(&scratch.config())
            .await
            .map_err(|e| format!("open database: {e}"))?;
        setup::seed(&db, args.rows).await?;
        Ok::<_, String>(db)
    })?;
    eprintln!("seeded {} critters in {:.1?}", args.rows, t.elapsed());
    let server = start_app(bin, scratch, pin, false, "data.log")?;
    let mut client =
        crate::client::Client::connect(server.addr).map_err(|e| format!("connect: {e}"))?;
    let token = login(&mut client, ADMIN_EMAIL)?;
    let mut report = String::new();
    let _ = writeln!(
        report,
        "\n## Data in and out: {} critters, {}\n",
        args.rows,
        args.backend.label()
    );

    // Export: idle memory first, then each format with the peak reset before it.
    let _ = writeln!(
        report,
        "| Export | rows | MiB | seconds | rows/s | server RSS idle → peak (MiB) |\n|---|---|---|---|---|---|"
    );
    for (label, format, header) in [("CSV", "csv", 1), ("NDJSON", "ndjson", 0)] {
        let idle = procfs::status_bytes(server.pid, "VmRSS").unwrap_or(0);
        procfs::reset_peak(server.pid);
        let s = exchange(
            server.addr,
            "GET",
            &format!("/api/critters/export/?format={format}"),
            &token,
            None,
        )?;
        if s.status != 200 {
            return Err(format!("export {format}: {} {}", s.status, s.text));
        }
        let rows = s.lines.saturating_sub(header);
        if rows != args.rows as u64 {
            return Err(format!(
                "export {format}: {rows} rows, expected {}",
                args.rows
            ));
        }
        let peak = procfs::status_bytes(server.pid, "VmHWM").unwrap_or(0);
        let _ = writeln!(
            report,
            "| {label} | {rows} | {:.1} | {:.2} | {:.0} | {:.1} → {:.1} (+{:.1}) |",
            mib(s.bytes),
            s.elapsed.as_secs_f64(),
            per_second(rows, s.elapsed),
            mib(idle),
            mib(peak),
            mib(peak.saturating_sub(idle)),
        );
    }

    // The aggregate, with the covering index (species, deleted_at, cuteness_level), then
    // without any index that leads with species.
    let path = "/api/critters/aggregate/?group_by=species&avg=cuteness_level";
    let _ = writeln!(
        report,
        "\n| Aggregate by species, avg(cuteness_level) | median ms ({AGGREGATE_RUNS} runs) | groups |\n|---|---|---|"
    );
    for with_index in [true, false] {
        if !with_index {
            rt.block_on(drop_species_indexes(&db))?;
        }
        let mut times = Vec::new();
        let mut groups = 0;
        for _ in 0..AGGREGATE_RUNS {
            let s = exchange(server.addr, "GET", path, &token, None)?;
            if s.status != 200 {
                return Err(format!("aggregate: {} {}", s.status, s.text));
            }
            let v: serde_json::Value = serde_json::from_str(&s.text)
                .map_err(|e| format!("aggregate answer is not JSON: {e}"))?;
            groups = v["groups"].as_array().map_or(0, Vec::len);
            times.push(s.elapsed.as_secs_f64() * 1000.0);
        }
        times.sort_by(f64::total_cmp);
        let _ = writeln!(
            report,
            "| {} | {:.1} | {groups} |",
            if with_index {
                "with the index"
            } else {
                "without an index on species"
            },
            times[times.len() / 2],
        );
    }

    // Import: one CSV file, all or nothing.
    let mut csv = String::from("name,species,cuteness_level\n");
    for i in 0..IMPORT_ROWS {
        let _ = writeln!(csv, "imported {i},import,{}", i % 101);
    }
    let s = exchange(
        server.addr,
        "POST",
        "/api/critters/import/",
        &token,
        Some(("text/csv", csv.as_bytes())),
    )?;
    if !(200..300).contains(&s.status) {
        return Err(format!(
            "import: {} {}",
            s.status,
            s.text.chars().take(500).collect::<String>()
        ));
    }
    let _ = writeln!(
        report,
        "\n| Import (CSV, all or nothing) | rows | seconds | rows/s |\n|---|---|---|---|\n| one request | {IMPORT_ROWS} | {:.2} | {:.0} |",
        s.elapsed.as_secs_f64(),
        per_second(IMPORT_ROWS as u64, s.elapsed),
    );
    drop(server);
    Ok(report)
}

/// Drops every index of `critters` whose first column is `species`.
async fn drop_species_indexes(db: &crudforge::Database) -> Result<(), String> {
    let mut conn = db.get().await.map_err(|e| format!("connection: {e}"))?;
    for name in [
        "critters_species_deleted_at_cuteness_level_idx",
        "critters_species_deleted_at_created_at_id_cuteness_level_idx",
    ] {
        let sql = format!("DROP INDEX IF EXISTS {name}");
        match &mut conn {
            crudforge::db::Conn::Sqlite(c) => c.batch_execute(&sql).await,
            crudforge::db::Conn::Postgres(c) => c.batch_execute(&sql).await,
        }
        .map_err(|e| format!("{sql}: {e}"))?;
    }
    Ok(())
}

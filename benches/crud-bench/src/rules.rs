//! `--rule-crossing`: W2 (a filtered list page) on a resource whose read rule crosses one
//! relation (`event.organizer_id = @me`), against the same list whose read rule reads a
//! denormalised column of the row itself (`organizer_id = @me`).
//!
//! Both variants serve the same `tickets` table (two mounts of one model, differing only in
//! their read rule), called by the same signed-in organizer, with the same filter. The run
//! checks that both answer every page identically, prints the SQL the library runs for each
//! (captured from its query monitor) with its query plan on the backend (`EXPLAIN QUERY PLAN`
//! on SQLite, `EXPLAIN ANALYZE` of the prepared statement on PostgreSQL), then measures the two
//! variants in interleaved rounds and reports medians and spread.

use crate::client::{run_load_as, Client, Outcome};
use crudforge::db::Backend;
use crudforge::perms::Expr;
use crudforge::sql_types::Portable;
use crudforge::{users, with_conn, Api, Config, Database, Resource};
use diesel::prelude::*;
use diesel_async::{RunQueryDsl, SimpleAsyncConnection};
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Events, each with an organizer.
    events (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Organizer.
        organizer_id -> PortableUuid,
        /// Title.
        title -> Text,
        /// Published.
        published -> Bool,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Tickets of events; `organizer_id` is the event's, copied (the denormalised variant).
    tickets (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Event.
        event_id -> PortableUuid,
        /// The event's organizer, copied.
        organizer_id -> PortableUuid,
        /// Holder.
        holder_id -> PortableUuid,
        /// Kind of ticket.
        kind -> Text,
        /// Seat.
        seat -> Integer,
    }
}

diesel::allow_tables_to_appear_in_same_query!(events, tickets);

type DateTime = chrono::DateTime<chrono::Utc>;

/// An event: published ones are everyone's, drafts their organizer's.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = events)]
#[resource(rules(read = "published = true or organizer_id = @me"))]
pub(crate) struct Event {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Who organizes it.
    pub organizer_id: Uuid,
    /// Its title.
    pub title: String,
    /// Whether everyone sees it.
    pub published: bool,
}

/// A ticket; its read rule is given to each of its two mounts.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = tickets)]
pub(crate) struct Ticket {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// For which event.
    #[resource(belongs_to(Event))]
    pub event_id: Uuid,
    /// The event's organizer, copied onto the ticket.
    pub organizer_id: Uuid,
    /// Whose.
    pub holder_id: Uuid,
    /// `vip`, `standard` or `student`.
    pub kind: String,
    /// Which seat.
    pub seat: i32,
}

/// The W2-like filter of both variants (page 2 of 25).
const FILTER: &str = "kind=vip&seat__gte=50&page_size=25";
/// Users organizing events; the caller is the first.
const ORGANIZERS: usize = 20;
/// Tickets per event.
const PER_EVENT: usize = 50;
const KINDS: [&str; 4] = ["vip", "standard", "standard", "student"];

/// The two variants: name, path, read rule.
const VARIANTS: [(&str, &str, &str); 2] = [
    (
        "crossing",
        "/api/tickets-crossing/",
        "event.organizer_id = @me",
    ),
    ("column", "/api/tickets-column/", "organizer_id = @me"),
];

/// The options of a `--rule-crossing` run.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) rows: usize,
    pub(crate) connections: usize,
    pub(crate) rounds: u32,
    pub(crate) seconds: f64,
    pub(crate) warmup: f64,
    pub(crate) max_requests: u64,
    pub(crate) workers: usize,
    /// Leave out the secondary indexes.
    pub(crate) bare: bool,
    /// Instead of timed rounds: this many sequential requests of `only` (for callgrind).
    pub(crate) fixed: Option<(u64, usize)>,
}

fn ddl(backend: Backend, bare: bool) -> String {
    let (uuid, ts) = match backend {
        Backend::Sqlite => ("TEXT", "TEXT"),
        Backend::Postgres => ("UUID", "TIMESTAMPTZ"),
    };
    let mut s = format!(
        "CREATE TABLE events (id {uuid} PRIMARY KEY, created_at {ts} NOT NULL, updated_at {ts} NOT NULL, \
         organizer_id {uuid} NOT NULL, title TEXT NOT NULL, published BOOLEAN NOT NULL); \
         CREATE TABLE tickets (id {uuid} PRIMARY KEY, created_at {ts} NOT NULL, updated_at {ts} NOT NULL, \
         event_id {uuid} NOT NULL REFERENCES events (id), organizer_id {uuid} NOT NULL, \
         holder_id {uuid} NOT NULL, kind TEXT NOT NULL, seat INTEGER NOT NULL);"
    );
    if !bare {
        s.push_str(
            " CREATE INDEX tickets_event_id ON tickets (event_id); \
             CREATE INDEX tickets_organizer_id ON tickets (organizer_id); \
             CREATE INDEX events_organizer_id ON events (organizer_id);",
        );
    }
    s
}

/// Creates the tables and the organizers, seeds `rows` tickets; returns the organizers' ids.
async fn seed(db: &Database, rows: usize, bare: bool) -> Result<Vec<Uuid>, String> {
    let mut organizers = Vec::with_capacity(ORGANIZERS);
    for i in 0..ORGANIZERS {
        let id = users::create_user(
            db,
            &format!("organizer{i}@example.com"),
            "bench-password-1",
            true,
            4,
        )
        .await
        .map_err(|e| format!("user: {e}"))?;
        organizers.push(id);
    }
    let mut conn = db.get().await.map_err(|e| format!("connection: {e}"))?;
    let ddl = ddl(db.backend(), bare);
    with_conn!(conn, |c| c.batch_execute(&ddl).await).map_err(|e| format!("tables: {e}"))?;
    let events_n = rows.div_ceil(PER_EVENT).max(ORGANIZERS);
    let start = chrono::Utc::now() - chrono::Duration::days(1);
    with_conn!(conn, |c| c.batch_execute("BEGIN").await).map_err(|e| format!("begin: {e}"))?;
    let mut event_ids = Vec::with_capacity(events_n);
    for e in 0..events_n {
        let id = Uuid::new_v4();
        event_ids.push(id);
        let values = (
            events::id.eq(Portable(id)),
            events::created_at.eq(Portable(start)),
            events::updated_at.eq(Portable(start)),
            events::organizer_id.eq(Portable(organizers[e % ORGANIZERS])),
            events::title.eq(format!("event {e}")),
            events::published.eq(e % 2 == 0),
        );
        with_conn!(conn, |c| diesel::insert_into(events::table)
            .values(values)
            .execute(c)
            .await)
        .map_err(|e| format!("seeding events: {e}"))?;
    }
    for i in 0..rows {
        // Ticket `k` of event `e`: kinds and seats vary within every event.
        let (e, k) = (i % events_n, i / events_n);
        let at = start + chrono::Duration::milliseconds(i64::try_from(i).unwrap_or(0));
        let values = (
            tickets::id.eq(Portable(Uuid::new_v4())),
            tickets::created_at.eq(Portable(at)),
            tickets::updated_at.eq(Portable(at)),
            tickets::event_id.eq(Portable(event_ids[e])),
            tickets::organizer_id.eq(Portable(organizers[e % ORGANIZERS])),
            tickets::holder_id.eq(Portable(Uuid::new_v4())),
            tickets::kind.eq(KINDS[k % KINDS.len()]),
            tickets::seat.eq(i32::try_from(k * 2 % 100).unwrap_or(0)),
        );
        with_conn!(conn, |c| diesel::insert_into(tickets::table)
            .values(values)
            .execute(c)
            .await)
        .map_err(|e| format!("seeding tickets: {e}"))?;
    }
    with_conn!(conn, |c| c.batch_execute("COMMIT; ANALYZE").await)
        .map_err(|e| format!("commit: {e}"))?;
    Ok(organizers)
}

/// The API of both variants (and the events they cross into) over `db`.
fn api(config: Config, db: Database) -> Result<Api, String> {
    let mut api = Api::new(config, db)
        .map_err(|e| format!("configuration: {e}"))?
        .mount(Event::blueprint("/api/events/"))
        .map_err(|e| e.to_string())?;
    for (_, path, read) in VARIANTS {
        api = api
            .mount(Ticket::blueprint(path).rules(Expr::new().read(read)))
            .map_err(|e| e.to_string())?;
    }
    Ok(api)
}

/// Collects what the query monitor logs (JSON lines).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut v) = self.0.lock() {
            v.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// The SQL of the queries logged since the last call.
    fn take_sql(&self) -> Vec<String> {
        let text = self
            .0
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default();
        String::from_utf8_lossy(&text)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["fields"]["sql"].as_str().map(str::to_owned))
            .collect()
    }
}

#[derive(QueryableByName)]
struct SqlitePlanRow {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    id: i32,
    #[diesel(sql_type = diesel::sql_types::Integer)]
    parent: i32,
    #[diesel(sql_type = diesel::sql_types::Text)]
    detail: String,
}

#[derive(QueryableByName)]
struct PgPlanRow {
    #[diesel(sql_type = diesel::sql_types::Text, column_name = "QUERY PLAN")]
    line: String,
}

#[derive(QueryableByName)]
struct PgParams {
    #[diesel(sql_type = diesel::sql_types::Text)]
    types: String,
}

/// The plan of `sql` as the backend would run it for `caller`'s page 2.
async fn plan(db: &Database, sql: &str, caller: Uuid) -> Result<String, String> {
    let mut conn = db.get().await.map_err(|e| e.to_string())?;
    let mut out = String::new();
    match &mut conn {
        crudforge::db::Conn::Sqlite(c) => {
            // Unbound parameters are NULL; the plan is chosen when the statement is prepared.
            let rows: Vec<SqlitePlanRow> = diesel::sql_query(format!("EXPLAIN QUERY PLAN {sql}"))
                .load(&mut **c)
                .await
                .map_err(|e| format!("EXPLAIN QUERY PLAN: {e}"))?;
            let mut depth: Vec<(i32, usize)> = Vec::new();
            for r in rows {
                let d = depth
                    .iter()
                    .find(|(id, _)| *id == r.parent)
                    .map_or(0, |(_, d)| d + 1);
                depth.push((r.id, d));
                let _ = writeln!(out, "{}{}", "  ".repeat(d), r.detail);
            }
        }
        crudforge::db::Conn::Postgres(c) => {
            let c = &mut **c;
            c.batch_execute(&format!("PREPARE bench_plan AS {sql}"))
                .await
                .map_err(|e| format!("PREPARE: {e}"))?;
            let types: Vec<PgParams> = diesel::sql_query(
                "SELECT parameter_types::text AS types FROM pg_prepared_statements WHERE name = 'bench_plan'",
            )
            .load(c)
            .await
            .map_err(|e| e.to_string())?;
            // The values of the measured request, by type: the caller, the filter, the page.
            let values: Vec<String> = types
                .into_iter()
                .next()
                .map(|t| t.types.trim_matches(|ch| ch == '{' || ch == '}').to_owned())
                .unwrap_or_default()
                .split(',')
                .filter(|t| !t.is_empty())
                .map(|t| match t {
                    "uuid" => format!("'{caller}'"),
                    "text" => "'vip'".to_owned(),
                    "integer" => "50".to_owned(),
                    "bigint" => "25".to_owned(),
                    "boolean" => "true".to_owned(),
                    other => format!("NULL::{other}"),
                })
                .collect();
            let _ = writeln!(out, "-- parameters: ({})", values.join(", "));
            let rows: Vec<PgPlanRow> = diesel::sql_query(format!(
                "EXPLAIN (ANALYZE, COSTS OFF) EXECUTE bench_plan({})",
                values.join(", ")
            ))
            .load(c)
            .await
            .map_err(|e| format!("EXPLAIN: {e}"))?;
            c.batch_execute("DEALLOCATE bench_plan")
                .await
                .map_err(|e| e.to_string())?;
            for r in rows {
                let _ = writeln!(out, "{}", r.line);
            }
        }
    }
    Ok(out)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn spread(v: &[f64]) -> (f64, f64) {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

fn get_ok(client: &mut Client, path: &str) -> Result<serde_json::Value, String> {
    let (status, body) = client.get(path).map_err(|e| format!("GET {path}: {e}"))?;
    if status != 200 {
        return Err(format!(
            "GET {path}: {status} {}",
            String::from_utf8_lossy(body)
        ));
    }
    serde_json::from_slice(body).map_err(|e| format!("GET {path}: not JSON: {e}"))
}

/// Checks that both variants answer every page the same; returns the number of pages.
fn same_answers(addr: SocketAddr, authorization: &str) -> Result<u64, String> {
    let mut client = Client::connect(addr).map_err(|e| format!("connect: {e}"))?;
    client.authorize(authorization);
    let first = get_ok(&mut client, &format!("{}?{FILTER}", VARIANTS[0].1))?;
    let pages = first["pagination"]["total_pages"].as_u64().unwrap_or(0);
    if pages < 2 {
        return Err(format!("the filter needs at least 2 pages: {first}"));
    }
    for p in 1..=pages {
        let a = get_ok(&mut client, &format!("{}?{FILTER}&page={p}", VARIANTS[0].1))?;
        let b = get_ok(&mut client, &format!("{}?{FILTER}&page={p}", VARIANTS[1].1))?;
        if a["data"] != b["data"] || a["pagination"]["total"] != b["pagination"]["total"] {
            return Err(format!("page {p} differs between the variants"));
        }
    }
    println!(
        "verified: both variants answer the same {} tickets on {pages} pages",
        first["pagination"]["total"]
    );
    Ok(pages)
}

/// Runs `--rule-crossing` on a migrated, empty database.
pub(crate) async fn run(
    config: &Config,
    db: &Database,
    o: &Options,
    backend: &str,
) -> Result<String, String> {
    let t = std::time::Instant::now();
    let organizers = seed(db, o.rows, o.bare).await?;
    let caller = organizers[0];
    println!(
        "seeded {} tickets of {} events ({} organizers) on {backend} in {:.2?}{}",
        o.rows,
        o.rows.div_ceil(PER_EVENT).max(ORGANIZERS),
        ORGANIZERS,
        t.elapsed(),
        if o.bare { ", no secondary index" } else { "" }
    );
    let served = api(config.clone(), db.clone())?;
    let authorization = format!(
        "Bearer {}",
        served
            .state()
            .tokens
            .access(caller)
            .map_err(|e| format!("token: {e}"))?
    );
    let mut report = String::new();

    // The SQL each variant runs, from the query monitor of a second, monitored connection pool.
    if o.fixed.is_none() {
        let captured = Captured::default();
        let writer = captured.clone();
        let _ = tracing_subscriber::fmt()
            .json()
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                "crudforge::slow_query=warn",
            ))
            .with_writer(move || writer.clone())
            .try_init();
        let monitored = config.clone().with(|c| {
            c.db.orm_performance_monitoring = true;
            c.db.orm_slow_query_threshold = 0.0;
        });
        let mdb = Database::connect(&monitored)
            .await
            .map_err(|e| format!("open database: {e}"))?;
        let app = actix_web::test::init_service(api(monitored, mdb.clone())?.app()).await;
        for (name, path, read) in VARIANTS {
            let _ = captured.take_sql();
            let req = actix_web::test::TestRequest::get()
                .uri(&format!("{path}?{FILTER}&page=2"))
                .insert_header(("authorization", authorization.as_str()))
                .to_request();
            let resp = actix_web::test::call_service(&app, req).await;
            if resp.status() != 200 {
                return Err(format!("{name}: {}", resp.status()));
            }
            let _ = writeln!(
                report,
                "\n### {name}: read rule `{read}`, GET {path}?{FILTER}&page=2\n"
            );
            for sql in captured.take_sql().iter().filter(|s| s.contains("tickets")) {
                let _ = writeln!(report, "```sql\n{sql}\n```\n\nplan:\n\n```text");
                report.push_str(&plan(db, sql, caller).await?);
                let _ = writeln!(report, "```\n");
            }
        }
    }

    let server = actix_web::HttpServer::new(move || served.app())
        .workers(o.workers)
        .disable_signals()
        .bind(("127.0.0.1", 0))
        .map_err(|e| format!("bind: {e}"))?;
    let addr = server
        .addrs()
        .into_iter()
        .next()
        .ok_or("the server has no address")?;
    let server = server.run();
    let handle = server.handle();
    let server_task = actix_web::rt::spawn(server);
    let opts = o.clone();
    let auth = authorization.clone();
    let measured = tokio::task::spawn_blocking(move || measure(addr, &opts, &auth))
        .await
        .map_err(|e| format!("the load driver failed: {e}"));
    handle.stop(true).await;
    let _ = server_task.await;
    report.push_str(&measured??);
    Ok(report)
}

fn measure(addr: SocketAddr, o: &Options, authorization: &str) -> Result<String, String> {
    let pages = same_answers(addr, authorization)?;
    let paths: Vec<Vec<String>> = VARIANTS
        .iter()
        .map(|(_, path, _)| vec![format!("{path}?{FILTER}&page=2")])
        .collect();
    let mut out = String::new();
    if let Some((n, only)) = o.fixed {
        // Sequential requests of one variant over one connection (for instruction counts).
        let mut client = Client::connect(addr).map_err(|e| format!("connect: {e}"))?;
        client.authorize(authorization);
        for _ in 0..n {
            let _ = get_ok(&mut client, &paths[only][0])?;
        }
        let _ = writeln!(out, "sent {n} requests of {}", VARIANTS[only].0);
        return Ok(out);
    }
    let load = |i: usize, d: Duration| -> Result<Outcome, String> {
        let r = run_load_as(
            addr,
            &paths[i],
            o.connections,
            d,
            o.max_requests,
            authorization,
        );
        if r.errors > 0 || r.ok == 0 {
            return Err(format!(
                "{}: {} errors; first: {}",
                VARIANTS[i].0,
                r.errors,
                r.first_error.as_deref().unwrap_or("none")
            ));
        }
        Ok(r)
    };
    let warmup = Duration::from_secs_f64(o.warmup);
    if !warmup.is_zero() {
        load(0, warmup)?;
        load(1, warmup)?;
    }
    let round = Duration::from_secs_f64(o.seconds);
    let mut rps = [Vec::new(), Vec::new()];
    let mut cpu = [Vec::new(), Vec::new()];
    let mut p50 = [Vec::new(), Vec::new()];
    for r in 0..o.rounds {
        let order = if r % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let mut out = load(i, round)?;
            eprintln!(
                "  round {} {}: {:.0} req/s, {:.0} µs server CPU per request",
                r + 1,
                VARIANTS[i].0,
                out.rps(),
                out.cpu_us_per_request()
            );
            rps[i].push(out.rps());
            cpu[i].push(out.cpu_us_per_request());
            p50[i].push(out.latency_ms(0.5));
        }
    }
    let _ = writeln!(
        out,
        "\n{} rows, {} connections, {} workers, {} interleaved rounds x {:.1} s, W2 page 2 of {pages}\n",
        o.rows, o.connections, o.workers, o.rounds, o.seconds
    );
    let _ = writeln!(
        out,
        "| variant | read rule | req/s median (min–max) | server CPU µs/req median (min–max) | p50 ms median |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|");
    // Round by round (the two variants of a round ran back to back), before sorting.
    let mut ratios: Vec<f64> = cpu[0].iter().zip(&cpu[1]).map(|(a, b)| a / b).collect();
    let mut medians = [0.0; 2];
    for (i, (name, _, read)) in VARIANTS.iter().enumerate() {
        let (rlo, rhi) = spread(&rps[i]);
        let (clo, chi) = spread(&cpu[i]);
        let rm = median(&mut rps[i]);
        let cm = median(&mut cpu[i]);
        medians[i] = cm;
        let _ = writeln!(
            out,
            "| {name} | `{read}` | {rm:.0} ({rlo:.0}–{rhi:.0}) | {cm:.0} ({clo:.0}–{chi:.0}) | {:.2} |",
            median(&mut p50[i])
        );
    }
    let (lo, hi) = spread(&ratios);
    let _ = writeln!(
        out,
        "\nCPU crossing / column: median of round ratios {:.2} ({lo:.2}–{hi:.2}); ratio of medians {:.2}",
        median(&mut ratios),
        medians[0] / medians[1]
    );
    let _ = std::io::stdout().flush();
    Ok(out)
}

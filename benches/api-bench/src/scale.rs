//! Scale-out (`--scale`): two instances of the reference application's release binary on one
//! PostgreSQL database, and W3 (`POST /api/critters/`) and W4 (`PATCH /api/critters/{id}`) in
//! several configurations, interleaved round by round in one sitting: (a) instance A alone
//! with `--connections` N; (b) A and B at once, N/2 connections each; (c) A and B at once, N
//! each; and, with `--streams S`, (b) again with S Server-Sent Event streams open on
//! `/api/critters/events/`, split between the two instances, each stream checked to receive
//! every event of the window's writes exactly once and in order per row. For each window it
//! reports the requests per second over both instances, p50/p99, each instance's CPU time per
//! request it served and PostgreSQL's per request (`/proc`, as the other modes read them);
//! during every window a connection of its own samples the wait events of the database's
//! active backends in `pg_stat_activity` every 20 ms (`Lock/advisory`: a session waiting for
//! an advisory lock; `Lock/transactionid`: a write waiting for a row another transaction
//! holds), and every 100 ms the locks they wait for in `pg_locks` (so that a `Lock/object`
//! says which object: `pg_database 0` is the lock a commit takes after a `NOTIFY`).
//!
//! Run it (PostgreSQL only; build first, as for the other modes):
//!
//! ```text
//! nice -n 19 cargo build --release -p reference-app -p api-bench
//! target/release/api-bench --scale --backend postgres \
//!     --postgres-url postgres://postgres@127.0.0.1:5432/test [--streams 8] \
//!     [--connections 32] [--rounds 3] [--seconds 3] [--scale-configs a,b,c] [--workloads w3,w4]
//! ```
//!
//! The migrations run once, through `reference-app migrate`, before either instance starts;
//! the run fails if an instance's log says it applied any. Both instances get the same
//! environment (one `JWT_SECRET_KEY`, so the token from A is good on B) and, unless
//! `--no-pin`, are both pinned to CPU 0 with the load client on CPU 1: on a two-core machine
//! (b) and (c) then measure what a second process costs on the same core (its CPU, its
//! connections, the lock waits), not added capacity. With `--streams`, the instances get
//! `REALTIME_MAX_STREAMS(_PER_USER)` for the streams, `REALTIME_VIEW_MAX` above the table (the
//! streams follow the whole table, so that both W3's new rows and W4's updated ones are in
//! their view), `REALTIME_QUEUE` of 65,536 (the check is about delivery, not about a slow
//! reader's `reset`) and a heartbeat of 1 s (so the instances notice the closed streams soon).

use crate::client::{quantile_ms, run_load, Client, Load, Outcome, Req};
use crate::measure::{
    login, median, per_req, server_bin, start_app, w3_req, w4_req, PASSWORD, USER_EMAIL,
};
use crate::setup::{self, Scratch, Server};
use crate::sse::{Protocol, StreamOut, Streams};
use crate::storage::Storage;
use crate::{procfs, Args, BackendArg};
use diesel::sql_types::{BigInt, Nullable, Text};
use diesel::QueryableByName;
use diesel_async::{AsyncConnection, AsyncPgConnection};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// How often the wait events are sampled.
const WAIT_EVERY: Duration = Duration::from_millis(20);

/// The wait events of the benchmark database's active backends, but the sampler's own.
const WAITS_SQL: &str = "SELECT wait_event_type, wait_event, count(*) AS n FROM pg_stat_activity \
     WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid() \
     GROUP BY 1, 2";

/// Every how many wait samples the lock waits are sampled too.
const LOCKS_EVERY: u64 = 5;

/// What the database's backends wait for, when they wait for a heavyweight lock: the lock's
/// kind, its target (relation, object class and id, advisory key; not a transaction's id, so
/// that waits for rows add up) and mode.
const LOCKS_SQL: &str = "SELECT l.locktype AS locktype, \
       CASE WHEN l.locktype IN ('relation', 'extend', 'page', 'tuple') \
                 THEN coalesce(l.relation::regclass::text, '') \
            WHEN l.locktype = 'object' \
                 THEN coalesce(l.classid::regclass::text, '') || ' ' || coalesce(l.objid::text, '') \
            WHEN l.locktype = 'advisory' \
                 THEN coalesce(l.classid::text, '') || ':' || coalesce(l.objid::text, '') \
            ELSE '' END AS target, \
       l.mode AS mode, count(*) AS n \
     FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
     WHERE NOT l.granted AND a.datname = current_database() AND a.pid <> pg_backend_pid() \
     GROUP BY 1, 2, 3";

/// The feed the streams follow: the whole table, so that W3's and W4's rows are in view.
const FEED: &str = "/api/critters/events/";

/// `REALTIME_QUEUE` of the instances when streams are open.
const STREAM_QUEUE: u32 = 65_536;

/// One configuration of the instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// (a) instance A alone, N connections.
    Alone,
    /// (b) A and B at once, N/2 connections each.
    Split,
    /// (c) A and B at once, N connections each.
    Both,
    /// (b) with the streams open and checked.
    Streams,
}

impl Layout {
    /// Connections on A and on B for `n` (`--connections`).
    fn connections(self, n: usize) -> (usize, usize) {
        match self {
            Layout::Alone => (n, 0),
            Layout::Split | Layout::Streams => (n.div_ceil(2), n / 2),
            Layout::Both => (n, n),
        }
    }

    /// Its name in the report.
    fn label(self, streams: usize) -> String {
        match self {
            Layout::Alone => "(a) A alone".to_owned(),
            Layout::Split => "(b) A + B, N/2 each".to_owned(),
            Layout::Both => "(c) A + B, N each".to_owned(),
            Layout::Streams => format!("(b) with {streams} streams"),
        }
    }
}

/// A wait event's name in the report: `type/event`, or on-CPU for an active backend without one.
fn wait_label(kind: Option<&str>, event: Option<&str>) -> String {
    match (kind, event) {
        (None, _) => "(none: on CPU)".to_owned(),
        (Some(t), Some(e)) => format!("{t}/{e}"),
        (Some(t), None) => t.to_owned(),
    }
}

#[derive(QueryableByName)]
struct LockRow {
    #[diesel(sql_type = Text)]
    locktype: String,
    #[diesel(sql_type = Text)]
    target: String,
    #[diesel(sql_type = Text)]
    mode: String,
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(QueryableByName)]
struct WaitRow {
    #[diesel(sql_type = Nullable<Text>)]
    wait_event_type: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    wait_event: Option<String>,
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Wait-event samples of one or more windows.
#[derive(Debug, Clone, Default)]
struct Waits {
    /// Samples taken.
    samples: u64,
    /// Samples in which at least one backend was active.
    busy: u64,
    /// Active backends, summed over the samples.
    active: u64,
    /// By wait event: backends in it summed over the samples, and samples in which it appeared.
    by: BTreeMap<String, (u64, u64)>,
    /// Samples of the lock waits (one per [`LOCKS_EVERY`] wait samples).
    lock_samples: u64,
    /// By lock (kind, target, mode): backends waiting for it, summed over the lock samples.
    locks: BTreeMap<String, u64>,
    /// How long the sampling lasted.
    elapsed: Duration,
}

impl Waits {
    fn add(&mut self, rows: &[WaitRow]) {
        self.samples += 1;
        let mut any = false;
        for r in rows {
            let n = u64::try_from(r.n).unwrap_or(0);
            if n == 0 {
                continue;
            }
            any = true;
            self.active += n;
            let e = self
                .by
                .entry(wait_label(
                    r.wait_event_type.as_deref(),
                    r.wait_event.as_deref(),
                ))
                .or_default();
            e.0 += n;
            e.1 += 1;
        }
        if any {
            self.busy += 1;
        }
    }

    fn add_locks(&mut self, rows: &[LockRow]) {
        self.lock_samples += 1;
        for r in rows {
            let label = if r.target.is_empty() {
                format!("{} {}", r.locktype, r.mode)
            } else {
                format!("{} {} {}", r.locktype, r.target, r.mode)
            };
            *self.locks.entry(label).or_default() += u64::try_from(r.n).unwrap_or(0);
        }
    }

    fn merge(&mut self, other: &Waits) {
        self.samples += other.samples;
        self.busy += other.busy;
        self.active += other.active;
        self.elapsed += other.elapsed;
        for (k, (n, s)) in &other.by {
            let e = self.by.entry(k.clone()).or_default();
            e.0 += n;
            e.1 += s;
        }
        self.lock_samples += other.lock_samples;
        for (k, n) in &other.locks {
            *self.locks.entry(k.clone()).or_default() += n;
        }
    }
}

/// A connection of its own that samples the wait events while a window runs.
struct WaitSampler {
    rt: tokio::runtime::Runtime,
    conn: AsyncPgConnection,
}

impl WaitSampler {
    fn connect(uri: &str) -> Result<WaitSampler, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("runtime: {e}"))?;
        let conn = rt
            .block_on(AsyncPgConnection::establish(uri))
            .map_err(|e| format!("wait-event sampler: cannot connect: {e}"))?;
        Ok(WaitSampler { rt, conn })
    }

    /// Samples every [`WAIT_EVERY`] until `stop` is set.
    fn sample(&mut self, stop: &AtomicBool) -> Result<Waits, String> {
        let conn = &mut self.conn;
        self.rt.block_on(async {
            let mut waits = Waits::default();
            let start = Instant::now();
            let mut next = start;
            while !stop.load(Ordering::Relaxed) {
                let rows: Vec<WaitRow> =
                    diesel_async::RunQueryDsl::load(diesel::sql_query(WAITS_SQL), &mut *conn)
                        .await
                        .map_err(|e| format!("sampling pg_stat_activity: {e}"))?;
                waits.add(&rows);
                if waits.samples % LOCKS_EVERY == 1 {
                    let locks: Vec<LockRow> =
                        diesel_async::RunQueryDsl::load(diesel::sql_query(LOCKS_SQL), &mut *conn)
                            .await
                            .map_err(|e| format!("sampling pg_locks: {e}"))?;
                    waits.add_locks(&locks);
                }
                next += WAIT_EVERY;
                let now = Instant::now();
                if next > now {
                    tokio::time::sleep(next - now).await;
                } else {
                    next = now;
                }
            }
            waits.elapsed = start.elapsed();
            Ok(waits)
        })
    }
}

/// One window of one configuration.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    rps: f64,
    p50: f64,
    p99: f64,
    /// A's CPU per request it served.
    a_us: Option<f64>,
    /// B's CPU per request it served.
    b_us: Option<f64>,
    /// Both instances' CPU per request served by either (B's idle time included in (a)).
    servers_us: f64,
    /// PostgreSQL's CPU per request.
    pg_us: f64,
}

fn medians(samples: &[Sample]) -> Sample {
    let m = |f: fn(&Sample) -> f64| median(samples.iter().map(f).collect());
    let opt = |f: fn(&Sample) -> Option<f64>| {
        let v: Vec<f64> = samples.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| median(v))
    };
    Sample {
        rps: m(|s| s.rps),
        p50: m(|s| s.p50),
        p99: m(|s| s.p99),
        a_us: opt(|s| s.a_us),
        b_us: opt(|s| s.b_us),
        servers_us: m(|s| s.servers_us),
        pg_us: m(|s| s.pg_us),
    }
}

/// W3's row name for request number `n`: what [`w3_req`] writes (the test below keeps them
/// together).
fn w3_name(n: u64) -> String {
    format!("bench {n}")
}

/// The global number of connection `k`'s `i`-th request (as W3 of the other modes numbers it).
fn request_number(k: usize, i: u64) -> u64 {
    (k as u64) << 40 | i
}

/// What the streams of a window must receive.
enum Expect {
    /// W3: one `created` event for each of these row names.
    Created(HashSet<String>),
    /// W4: so many `updated` events for each row key.
    Updated(HashMap<String, u64>),
}

impl Expect {
    fn writes(&self) -> u64 {
        match self {
            Expect::Created(names) => names.len() as u64,
            Expect::Updated(keys) => keys.values().sum(),
        }
    }
}

/// What the streams of one or more windows received, against what they should have.
#[derive(Debug, Clone, Default)]
struct Check {
    windows: usize,
    streams: usize,
    writes: u64,
    expected: u64,
    delivered: u64,
    /// Events of the writes a stream never received.
    missing: u64,
    /// More events for a row than it had writes (with distinct positions).
    extra: u64,
    /// The same position received twice by one stream.
    duplicate_ids: u64,
    /// A row's event at a position not after the row's previous one in that stream.
    out_of_order: u64,
    /// Events for a row none of the window's writes touched.
    unexpected: u64,
    /// `updated` where `created` was due, or the other way round.
    wrong_kind: u64,
    /// Streams that failed, or were reset or ended by the server.
    failed: usize,
    /// Positions lower than an earlier one of the same stream, any row (information only).
    inversions: u64,
    /// The longest wait after the window until every stream had its events, seconds.
    drain_s: f64,
    others: BTreeMap<String, usize>,
}

impl Check {
    fn violations(&self) -> u64 {
        self.missing
            + self.extra
            + self.duplicate_ids
            + self.out_of_order
            + self.unexpected
            + self.wrong_kind
            + self.failed as u64
    }

    fn merge(&mut self, o: &Check) {
        self.windows += o.windows;
        self.streams = self.streams.max(o.streams);
        self.writes += o.writes;
        self.expected += o.expected;
        self.delivered += o.delivered;
        self.missing += o.missing;
        self.extra += o.extra;
        self.duplicate_ids += o.duplicate_ids;
        self.out_of_order += o.out_of_order;
        self.unexpected += o.unexpected;
        self.wrong_kind += o.wrong_kind;
        self.failed += o.failed;
        self.inversions += o.inversions;
        self.drain_s = self.drain_s.max(o.drain_s);
        for (k, v) in &o.others {
            *self.others.entry(k.clone()).or_default() += v;
        }
    }

    /// Checks what one stream received against `expect`.
    fn stream(&mut self, out: &StreamOut, expect: &Expect) {
        self.streams += 1;
        self.expected += expect.writes();
        if out.error.is_some() || out.others.iter().any(|o| o == "reset" || o == "end") {
            self.failed += 1;
        }
        for o in &out.others {
            *self.others.entry(o.clone()).or_default() += 1;
        }
        let mut positions = HashSet::new();
        let mut last_of_row: HashMap<&str, i64> = HashMap::new();
        let mut got: HashMap<&str, u64> = HashMap::new();
        let mut last = i64::MIN;
        for s in &out.seen {
            self.delivered += 1;
            if !positions.insert(s.position) {
                self.duplicate_ids += 1;
                continue;
            }
            if s.position < last {
                self.inversions += 1;
            }
            last = last.max(s.position);
            if let Some(before) = last_of_row.insert(s.key.as_str(), s.position) {
                if before >= s.position {
                    self.out_of_order += 1;
                }
            }
            let (due, counted) = match expect {
                Expect::Created(names) => {
                    ("created", s.name.as_deref().filter(|n| names.contains(*n)))
                }
                Expect::Updated(keys) => (
                    "updated",
                    keys.contains_key(&s.key).then_some(s.key.as_str()),
                ),
            };
            if s.kind != due {
                self.wrong_kind += 1;
            }
            match counted {
                Some(k) => *got.entry(k).or_default() += 1,
                None => self.unexpected += 1,
            }
        }
        let mut tally = |want: u64, have: u64| {
            if have < want {
                self.missing += want - have;
            } else {
                self.extra += have - want;
            }
        };
        match expect {
            Expect::Created(names) => {
                for n in names {
                    tally(1, got.get(n.as_str()).copied().unwrap_or(0));
                }
            }
            Expect::Updated(keys) => {
                for (k, &want) in keys {
                    tally(want, got.get(k.as_str()).copied().unwrap_or(0));
                }
            }
        }
    }
}

/// A workload of the rounds and what it measured.
struct Workload {
    key: &'static str,
    title: &'static str,
    samples: Vec<(Layout, Sample)>,
    waits: Vec<(Layout, Waits)>,
    check: Option<Check>,
}

/// Everything a window needs.
struct Bench<'a> {
    args: &'a Args,
    a: &'a Server,
    b: &'a Server,
    token: &'a str,
    ids: &'a [Uuid],
}

impl Bench<'_> {
    /// Connection `k`'s `i`-th request of workload `key` when `total` connections run (W4's
    /// rows are spread over the table by `total`, so that no two connections update the same
    /// row at once, in every configuration).
    fn request(&self, key: &str, total: usize, k: usize, i: u64) -> Req {
        if key == "W3" {
            return w3_req(request_number(k, i));
        }
        let stride = (self.ids.len() / total.max(1)).max(1);
        w4_req(&self.ids[self.pick(stride, k, i)], i)
    }

    fn pick(&self, stride: usize, k: usize, i: u64) -> usize {
        (k * stride + usize::try_from(i).unwrap_or(0)) % self.ids.len()
    }

    /// Runs workload `key` in `layout` for `duration`: A's connections are numbered from 0, B's
    /// after them; `sampler` samples the wait events meanwhile; `record` gets each
    /// connection's request count; `storage` reads PostgreSQL's CPU time.
    #[allow(clippy::too_many_arguments)]
    fn window(
        &self,
        storage: &Storage,
        key: &str,
        layout: Layout,
        duration: Duration,
        sampler: Option<&mut WaitSampler>,
        record: Option<&[AtomicU64]>,
        what: &str,
    ) -> Result<(Sample, Option<Waits>), String> {
        let (na, nb) = layout.connections(self.args.connections);
        let total = na + nb;
        let make = |k: usize, i: u64| {
            if let Some(r) = record.and_then(|r| r.get(k)) {
                r.store(i + 1, Ordering::Relaxed);
            }
            self.request(key, total, k, i)
        };
        let make_b = |k: usize, i: u64| make(k + na, i);
        let stop = AtomicBool::new(false);
        let done = AtomicU64::new(0);
        let load = |server: &Server, connections| Load {
            addr: server.addr,
            connections,
            duration,
            token: Some(self.token),
            stop: &stop,
            done: &done,
            pace: Duration::ZERO,
        };
        let (load_a, load_b) = (load(self.a, na), load(self.b, nb));
        let sampling = AtomicBool::new(false);
        let sampling = &sampling;
        let cpu = |s: &Server| procfs::cpu(s.pid).ok_or("cannot read a server's CPU time");
        let pg0 = storage.postgres_cpu();
        let (a0, b0) = (cpu(self.a)?, cpu(self.b)?);
        let (out_a, out_b, waits) = std::thread::scope(|s| {
            let sampler = sampler.map(|w| s.spawn(move || w.sample(sampling)));
            let on_b = (nb > 0).then(|| s.spawn(|| run_load(&load_b, &make_b)));
            let out_a = run_load(&load_a, &make);
            let out_b = on_b.map(|h| {
                h.join().unwrap_or_else(|_| Outcome {
                    errors: 1,
                    first_error: Some("a client thread panicked".into()),
                    ..Outcome::default()
                })
            });
            sampling.store(true, Ordering::Relaxed);
            let waits = sampler.map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("the wait-event sampler panicked".into()))
            });
            (out_a, out_b, waits)
        });
        let (a1, b1) = (cpu(self.a)?, cpu(self.b)?);
        let pg1 = storage.postgres_cpu();
        out_a.check(&format!("{what} on instance A"))?;
        if let Some(o) = &out_b {
            o.check(&format!("{what} on instance B"))?;
        }
        let waits = waits.transpose()?;
        let ok = out_a.ok + out_b.as_ref().map_or(0, |o| o.ok);
        let mut latencies = out_a.latencies_us.clone();
        if let Some(o) = &out_b {
            latencies.extend_from_slice(&o.latencies_us);
        }
        let (da, db) = (a1.saturating_sub(a0), b1.saturating_sub(b0));
        let sample = Sample {
            rps: out_a.rps() + out_b.as_ref().map_or(0.0, Outcome::rps),
            p50: quantile_ms(&mut latencies, 0.5),
            p99: quantile_ms(&mut latencies, 0.99),
            a_us: Some(per_req(da, out_a.ok)),
            b_us: out_b.as_ref().map(|o| per_req(db, o.ok)),
            servers_us: per_req(da + db, ok),
            pg_us: per_req(pg1.saturating_sub(pg0), ok),
        };
        Ok((sample, waits))
    }

    /// What the streams must have received from a window whose connections made `counts`
    /// requests each.
    fn expect(&self, key: &str, layout: Layout, counts: &[AtomicU64]) -> Expect {
        let (na, nb) = layout.connections(self.args.connections);
        let stride = (self.ids.len() / (na + nb).max(1)).max(1);
        let made = counts.iter().map(|c| c.load(Ordering::Relaxed)).enumerate();
        if key == "W3" {
            Expect::Created(
                made.flat_map(|(k, n)| (0..n).map(move |i| w3_name(request_number(k, i))))
                    .collect(),
            )
        } else {
            let mut keys: HashMap<String, u64> = HashMap::new();
            for (k, n) in made {
                for i in 0..n {
                    *keys
                        .entry(self.ids[self.pick(stride, k, i)].to_string())
                        .or_default() += 1;
                }
            }
            Expect::Updated(keys)
        }
    }
}

/// Waits (at most 30 s, then warns) until each server's open sockets are back to what they
/// were before the streams opened: it notices a closed stream when it next writes to it.
fn released(servers: &[(&Server, usize)]) {
    let t = Instant::now();
    loop {
        let held: Vec<usize> = servers
            .iter()
            .map(|(s, _)| procfs::socket_count(s.pid).unwrap_or(0))
            .collect();
        if servers
            .iter()
            .zip(&held)
            .all(|((_, before), now)| *now <= before + 2)
        {
            return;
        }
        if t.elapsed() > Duration::from_secs(30) {
            eprintln!(
                "  warning: the instances still hold {held:?} sockets 30 s after the streams closed (before: {:?})",
                servers.iter().map(|(_, b)| *b).collect::<Vec<_>>()
            );
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `--scale`.
///
/// # Errors
///
/// Anything that stops the run: a bad option, a server that does not start, a non-2xx answer.
pub(crate) fn run(args: &Args, pin: Option<usize>, streams: usize) -> Result<bool, String> {
    if args.backend != BackendArg::Postgres {
        return Err("--scale needs --backend postgres (two instances on one database)".into());
    }
    if args.connections < 2 || args.rounds == 0 {
        return Err("--scale needs --connections of at least 2 and --rounds of at least 1".into());
    }
    if args.rows < 2 {
        return Err("--rows must be at least 2".into());
    }
    if !(args.seconds > 0.0 && args.seconds <= 600.0 && args.warmup >= 0.0 && args.warmup <= 60.0) {
        return Err("--seconds must be in (0, 600] and --warmup in [0, 60]".into());
    }
    let mut layouts = Vec::new();
    for c in &args.scale_configs {
        let l = match c.to_lowercase().as_str() {
            "a" => Layout::Alone,
            "b" => Layout::Split,
            "c" => Layout::Both,
            _ => return Err(format!("unknown --scale-configs entry {c:?} (a, b, c)")),
        };
        if !layouts.contains(&l) {
            layouts.push(l);
        }
    }
    if streams > 0 {
        layouts.push(Layout::Streams);
    }
    if layouts.is_empty() {
        return Err("--scale-configs names no configuration".into());
    }
    let want = |k: &str| args.workloads.iter().any(|w| w.eq_ignore_ascii_case(k));
    let keys: Vec<&'static str> = ["W3", "W4"].into_iter().filter(|k| want(k)).collect();
    if keys.is_empty() {
        return Err("--scale measures W3 and W4: name at least one in --workloads".into());
    }
    let bin = server_bin(args)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    let url = args
        .postgres_url
        .clone()
        .filter(|u| !u.is_empty())
        .ok_or("--backend postgres needs --postgres-url or CRUDFORGE_TEST_POSTGRES_URL")?;
    let scratch = rt.block_on(Scratch::postgres(&url))?;
    let mut extra_env = Vec::new();
    if streams > 0 {
        let view_max = u32::try_from(args.rows)
            .unwrap_or(u32::MAX)
            .saturating_add(1_000_000);
        for (k, v) in [
            ("REALTIME_MAX_STREAMS", (streams + 16).to_string()),
            ("REALTIME_MAX_STREAMS_PER_USER", (streams + 16).to_string()),
            ("REALTIME_VIEW_MAX", view_max.to_string()),
            ("REALTIME_QUEUE", STREAM_QUEUE.to_string()),
            ("REALTIME_HEARTBEAT", "1".to_owned()),
        ] {
            extra_env.push((k.to_owned(), v));
        }
    }
    extra_env.extend(args.server_env.iter().cloned());
    let scratch = Scratch {
        extra_env,
        ..scratch
    };
    let result = prepare_and_run(args, pin, &bin, &scratch, &rt, &layouts, &keys, streams);
    rt.block_on(scratch.cleanup());
    result
}

#[allow(clippy::too_many_arguments)]
fn prepare_and_run(
    args: &Args,
    pin: Option<usize>,
    bin: &Path,
    scratch: &Scratch,
    rt: &tokio::runtime::Runtime,
    layouts: &[Layout],
    keys: &[&'static str],
    streams: usize,
) -> Result<bool, String> {
    println!(
        "api-bench --scale: PostgreSQL backend, two instances of {}, {}",
        bin.display(),
        match pin {
            Some(_) => "both instances pinned to CPU 0, client to CPU 1".to_owned(),
            None => "not pinned".to_owned(),
        }
    );
    setup::run_cli(bin, scratch, &["migrate"], None)?;
    setup::run_cli(
        bin,
        scratch,
        &["create-user", "--email", USER_EMAIL, "--password-stdin"],
        Some(PASSWORD),
    )?;
    let t = Instant::now();
    let ids = rt.block_on(async {
        let db = crudforge::Database::connect(&scratch.config())
            .await
            .map_err(|e| format!("open database: {e}"))?;
        setup::seed(&db, args.rows).await
    })?;
    println!(
        "migrated once (reference-app migrate), created a user, seeded {} critters in {:.1?}",
        ids.len(),
        t.elapsed()
    );
    let mut storage = Storage::open(scratch, ids.clone())?;
    let a = start_app(bin, scratch, pin, false, "scale-a.log")?;
    let b = start_app(bin, scratch, pin, false, "scale-b.log")?;
    for (name, s) in [("A", &a), ("B", &b)] {
        if s.log_text().contains("applied migrations") {
            return Err(format!(
                "instance {name} applied migrations, though `migrate` had run:\n{}",
                s.log_tail()
            ));
        }
    }
    let mut client = Client::connect(a.addr).map_err(|e| format!("connect: {e}"))?;
    let token = login(&mut client, USER_EMAIL)?;
    let mut on_b = Client::connect(b.addr).map_err(|e| format!("connect: {e}"))?;
    on_b.expect(&Req::get(format!("/api/critters/{}", ids[0])), Some(&token))
        .map_err(|e| format!("instance B refused the token from instance A: {e}"))?;
    drop((client, on_b));
    println!(
        "instance A on http://{} (pid {}), instance B on http://{} (pid {}), neither applied a \
         migration, A's token accepted by B; {} connections of the database open",
        a.addr,
        a.pid,
        b.addr,
        b.pid,
        storage
            .pg_connections()
            .map_or("?".to_owned(), |n| n.to_string())
    );
    if !storage.counts_postgres() {
        eprintln!("warning: PostgreSQL's CPU is not counted (no postgres user)");
    }
    let mut sampler = WaitSampler::connect(&scratch.uri)?;
    let bench = Bench {
        args,
        a: &a,
        b: &b,
        token: &token,
        ids: &ids,
    };
    let mut workloads: Vec<Workload> = keys
        .iter()
        .map(|&key| Workload {
            key,
            title: if key == "W3" {
                "`POST /api/critters/`"
            } else {
                "`PATCH /api/critters/{id}`"
            },
            samples: Vec::new(),
            waits: Vec::new(),
            check: None,
        })
        .collect();

    let round = Duration::from_secs_f64(args.seconds);
    let warm = Duration::from_secs_f64(args.warmup);
    if !warm.is_zero() {
        for w in &workloads {
            let what = format!("{} warm-up", w.key);
            bench.window(&storage, w.key, Layout::Both, warm, None, None, &what)?;
            storage.delete_inserted()?;
        }
    }
    let base = Instant::now();
    let protocol = |_: usize| Protocol::Crudforge {
        path: FEED.to_owned(),
        token: token.clone(),
    };
    for r in 0..args.rounds {
        for (wi, w) in workloads.iter_mut().enumerate() {
            let mut order = layouts.to_vec();
            order.rotate_left((r as usize + wi) % layouts.len());
            for layout in order {
                let what = format!("{} {} round {}", w.key, layout.label(streams), r + 1);
                let (sample, waits, check) = if layout == Layout::Streams {
                    let place = Place {
                        storage: &storage,
                        sampler: &mut sampler,
                        protocol: &protocol,
                        base,
                    };
                    streams_window(&bench, place, w.key, round, streams, &what)?
                } else {
                    let (s, waits) = bench.window(
                        &storage,
                        w.key,
                        layout,
                        round,
                        Some(&mut sampler),
                        None,
                        &what,
                    )?;
                    (s, waits, None)
                };
                storage.delete_inserted()?;
                let waits = waits.unwrap_or_default();
                let lock = |k: &str| {
                    let n = waits.by.get(k).map_or(0, |v| v.0);
                    // Sample counts stay far below 2^52.
                    #[allow(clippy::cast_precision_loss)]
                    let share = 100.0 * n as f64 / waits.active.max(1) as f64;
                    share
                };
                eprintln!(
                    "  {what}: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, A {} µs/req, B {} µs/req, PostgreSQL {:.1} µs/req; \
                     {} wait samples, Lock/advisory {:.1} %, Lock/transactionid {:.1} % of active backends{}",
                    sample.rps,
                    sample.p50,
                    sample.p99,
                    sample.a_us.map_or("-".to_owned(), |v| format!("{v:.1}")),
                    sample.b_us.map_or("-".to_owned(), |v| format!("{v:.1}")),
                    sample.pg_us,
                    waits.samples,
                    lock("Lock/advisory"),
                    lock("Lock/transactionid"),
                    check.as_ref().map_or(String::new(), |c| format!(
                        "; streams: {} of {} events delivered, {} violations",
                        c.delivered,
                        c.expected,
                        c.violations()
                    ))
                );
                w.samples.push((layout, sample));
                match w.waits.iter_mut().find(|(l, _)| *l == layout) {
                    Some((_, all)) => all.merge(&waits),
                    None => w.waits.push((layout, waits)),
                }
                if let Some(c) = check {
                    w.check.get_or_insert_with(Check::default).merge(&c);
                }
            }
        }
    }
    storage.close();
    drop(b);
    drop(a);
    print!("{}", report(args, pin, &workloads, layouts, streams));
    Ok(true)
}

/// What a window with streams uses besides the [`Bench`].
struct Place<'p> {
    storage: &'p Storage,
    sampler: &'p mut WaitSampler,
    /// How stream `i` subscribes.
    protocol: &'p dyn Fn(usize) -> Protocol,
    /// The instant the streams' receipt times count from.
    base: Instant,
}

/// One (b) window with `count` recording streams open, half on each instance: opens them,
/// runs the window, waits for the deliveries, closes them and checks what each received.
fn streams_window(
    bench: &Bench<'_>,
    place: Place<'_>,
    key: &str,
    duration: Duration,
    count: usize,
    what: &str,
) -> Result<(Sample, Option<Waits>, Option<Check>), String> {
    let Place {
        storage,
        sampler,
        protocol,
        base,
    } = place;
    let (a, b) = (bench.a, bench.b);
    let sockets = |s: &Server| procfs::socket_count(s.pid).unwrap_or(0);
    let before = [(a, sockets(a)), (b, sockets(b))];
    let (on_a, on_b) = (count.div_ceil(2), count / 2);
    let streams_a = Streams::open_recording(a.addr, on_a, protocol, base)
        .map_err(|e| format!("{what}: instance A: {e}"))?;
    let streams_b = if on_b > 0 {
        Some(
            Streams::open_recording(b.addr, on_b, protocol, base)
                .map_err(|e| format!("{what}: instance B: {e}"))?,
        )
    } else {
        None
    };
    let (na, nb) = Layout::Streams.connections(bench.args.connections);
    let counts: Vec<AtomicU64> = (0..na + nb).map(|_| AtomicU64::new(0)).collect();
    let (sample, waits) = bench.window(
        storage,
        key,
        Layout::Streams,
        duration,
        Some(sampler),
        Some(&counts),
        what,
    )?;
    let expect = bench.expect(key, Layout::Streams, &counts);
    let target = expect.writes() * count as u64;
    let delivered = || streams_a.delivered() + streams_b.as_ref().map_or(0, Streams::delivered);
    let t = Instant::now();
    while delivered() < target && t.elapsed() < Duration::from_secs(10) {
        if streams_a.failure().is_some() || streams_b.as_ref().and_then(Streams::failure).is_some()
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let drain_s = t.elapsed().as_secs_f64();
    // Let late duplicates arrive, if any.
    std::thread::sleep(Duration::from_millis(300));
    let mut outs = streams_a.close()?;
    if let Some(s) = streams_b {
        outs.extend(s.close()?);
    }
    let mut check = Check {
        windows: 1,
        writes: expect.writes(),
        drain_s,
        ..Check::default()
    };
    for o in &outs {
        check.stream(o, &expect);
    }
    // Streams that never reported count as failed.
    check.failed += count.saturating_sub(outs.len());
    released(&before);
    Ok((sample, waits, Some(check)))
}

fn report(
    args: &Args,
    pin: Option<usize>,
    workloads: &[Workload],
    layouts: &[Layout],
    streams: usize,
) -> String {
    let n = args.connections;
    let mut r = String::new();
    let _ = writeln!(
        r,
        "\n## Scale-out: two reference-app instances on one PostgreSQL database\n\n\
         {} critters, N = {n} connections, {} rounds x {:.1} s (medians), {}\n",
        args.rows,
        args.rounds,
        args.seconds,
        match pin {
            Some(_) => "both instances pinned to CPU 0, client to CPU 1",
            None => "not pinned",
        }
    );
    let _ = writeln!(
        r,
        "| workload | configuration | connections A + B | req/s (both) | x (a) | p50 / p99 ms | A CPU µs/req | B CPU µs/req | servers CPU µs/req | PostgreSQL CPU µs/req | total CPU µs/req |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let cell = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.1}"));
    for w in workloads {
        let of = |l: Layout| -> Vec<Sample> {
            w.samples
                .iter()
                .filter(|(x, _)| *x == l)
                .map(|(_, s)| *s)
                .collect()
        };
        let alone = of(Layout::Alone);
        let base_rps = (!alone.is_empty()).then(|| medians(&alone).rps);
        for &l in layouts {
            let m = medians(&of(l));
            let (ca, cb) = l.connections(n);
            let _ = writeln!(
                r,
                "| {} {} | {} | {ca} + {cb} | {:.0} | {} | {:.2} / {:.2} | {} | {} | {:.1} | {:.1} | {:.1} |",
                w.key,
                w.title,
                l.label(streams),
                m.rps,
                base_rps.map_or("-".to_owned(), |b| format!("{:.2}", m.rps / b.max(1e-9))),
                m.p50,
                m.p99,
                cell(m.a_us),
                cell(m.b_us),
                m.servers_us,
                m.pg_us,
                m.servers_us + m.pg_us,
            );
        }
    }
    let _ = writeln!(
        r,
        "\nA/B CPU: utime + stime of each instance (`/proc/PID/stat`) over the window, per request \
         it served; servers: both instances' CPU per request served by either (in (a) B's idle \
         time is in it); PostgreSQL: its server processes and this database's backends (the \
         wait-event sampler's included), per request. W4 spreads its connections' rows over the \
         table in every configuration, so that no two connections update one row at once."
    );
    let _ = writeln!(
        r,
        "\nWait events of the database's active backends (`pg_stat_activity`, state `active`, \
         sampled every {} ms on a connection of its own during every window, all rounds): share \
         of the active backends seen over all samples, share of the samples in which the event \
         was seen at least once, and backends in it per sample; `Lock/advisory` is a session \
         waiting for an advisory lock, `Lock/transactionid` a write waiting for a row another \
         transaction holds.\n",
        WAIT_EVERY.as_millis()
    );
    let _ = writeln!(
        r,
        "| workload | configuration | wait event | % of active backends | % of samples | backends per sample |\n\
         |---|---|---|---:|---:|---:|"
    );
    // Counts stay far below 2^52.
    #[allow(clippy::cast_precision_loss)]
    let pct = |a: u64, b: u64| 100.0 * a as f64 / b.max(1) as f64;
    #[allow(clippy::cast_precision_loss)]
    let per = |a: u64, b: u64| a as f64 / b.max(1) as f64;
    for w in workloads {
        for &l in layouts {
            let Some((_, waits)) = w.waits.iter().find(|(x, _)| *x == l) else {
                continue;
            };
            // Sample counts stay far below 2^52.
            #[allow(clippy::cast_precision_loss)]
            let interval = waits.elapsed.as_secs_f64() * 1e3 / waits.samples.max(1) as f64;
            let _ = writeln!(
                r,
                "| {} | {} | all active ({} samples, one per {interval:.1} ms) | 100.0 | {:.1} | {:.2} |",
                w.key,
                l.label(streams),
                waits.samples,
                pct(waits.busy, waits.samples),
                per(waits.active, waits.samples),
            );
            let mut rows: Vec<(&String, &(u64, u64))> = waits.by.iter().collect();
            rows.sort_by(|x, y| y.1 .0.cmp(&x.1 .0).then_with(|| x.0.cmp(y.0)));
            for must in ["Lock/advisory", "Lock/transactionid"] {
                if !rows.iter().take(8).any(|(k, _)| k.as_str() == must) {
                    let v = waits.by.get(must).copied().unwrap_or_default();
                    let _ = writeln!(
                        r,
                        "| {} | {} | {must} | {:.1} | {:.1} | {:.2} |",
                        w.key,
                        l.label(streams),
                        pct(v.0, waits.active),
                        pct(v.1, waits.samples),
                        per(v.0, waits.samples),
                    );
                }
            }
            for (k, v) in rows.iter().take(8) {
                let _ = writeln!(
                    r,
                    "| {} | {} | {k} | {:.1} | {:.1} | {:.2} |",
                    w.key,
                    l.label(streams),
                    pct(v.0, waits.active),
                    pct(v.1, waits.samples),
                    per(v.0, waits.samples),
                );
            }
            if rows.len() > 8 {
                let rest: u64 = rows.iter().skip(8).map(|(_, v)| v.0).sum();
                let _ = writeln!(
                    r,
                    "| {} | {} | {} others | {:.1} | | |",
                    w.key,
                    l.label(streams),
                    rows.len() - 8,
                    pct(rest, waits.active),
                );
            }
        }
    }
    let _ = writeln!(
        r,
        "\nLock waits by lock (`pg_locks` not granted, of this database's backends, sampled \
         every {} ms with the wait events): backends waiting for it per sample, and its share of \
         the lock waiters. `object pg_database 0 AccessExclusiveLock` is the lock PostgreSQL \
         takes at the commit of a transaction that called `NOTIFY`/`pg_notify` (the \
         notification queue's, for the whole server; held through the commit).\n",
        WAIT_EVERY.as_millis() * u128::from(LOCKS_EVERY)
    );
    let _ = writeln!(
        r,
        "| workload | configuration | lock (kind, target, mode) | waiting per sample | % of lock waiters |\n\
         |---|---|---|---:|---:|"
    );
    for w in workloads {
        for &l in layouts {
            let Some((_, waits)) = w.waits.iter().find(|(x, _)| *x == l) else {
                continue;
            };
            let all: u64 = waits.locks.values().sum();
            let mut rows: Vec<(&String, &u64)> = waits.locks.iter().collect();
            rows.sort_by(|x, y| y.1.cmp(x.1).then_with(|| x.0.cmp(y.0)));
            if rows.is_empty() {
                let _ = writeln!(
                    r,
                    "| {} | {} | none ({} samples) | 0 | |",
                    w.key,
                    l.label(streams),
                    waits.lock_samples
                );
            }
            for (k, n) in rows.iter().take(4) {
                let _ = writeln!(
                    r,
                    "| {} | {} | {k} | {:.2} | {:.1} |",
                    w.key,
                    l.label(streams),
                    per(**n, waits.lock_samples),
                    pct(**n, all),
                );
            }
        }
    }
    if streams > 0 {
        let _ = writeln!(
            r,
            "\nStreams during (b): {streams} on `GET {FEED}` ({} on A, {} on B), opened before each \
             window and closed after it; each checked against the window's writes: one `created` \
             per W3 row, one `updated` per W4 request to its row, positions (the number before `_` \
             in the event id) increasing per row, none twice.\n",
            streams.div_ceil(2),
            streams / 2
        );
        let _ = writeln!(
            r,
            "| workload | windows | writes | events expected (all streams) | delivered | missing | extra | duplicate ids | out of order per row | unexpected rows | wrong kind | streams failed or reset | **violations** | inversions across rows | longest drain s |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for w in workloads {
            let Some(c) = &w.check else { continue };
            let _ = writeln!(
                r,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | **{}** | {} | {:.2} |",
                w.key,
                c.windows,
                c.writes,
                c.expected,
                c.delivered,
                c.missing,
                c.extra,
                c.duplicate_ids,
                c.out_of_order,
                c.unexpected,
                c.wrong_kind,
                c.failed,
                c.violations(),
                c.inversions,
                c.drain_s,
            );
            if !c.others.is_empty() {
                let _ = writeln!(r, "\n{}: other events {:?}", w.key, c.others);
            }
        }
        let _ = writeln!(
            r,
            "\nInversions across rows: a position lower than one the stream received before, for \
             any row (information: the check is per row). Drain: from the window's end until \
             every stream had as many events as the window had writes (10 s at most)."
        );
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::Seen;

    #[test]
    fn w3_names_match_the_requests() {
        let n = request_number(3, 7);
        let body = w3_req(n).body.unwrap_or_default();
        assert!(body.contains(&format!("\"{}\"", w3_name(n))), "{body}");
    }

    fn seen(position: i64, kind: &str, key: &str, name: &str) -> Seen {
        Seen {
            position,
            kind: kind.into(),
            key: key.into(),
            name: Some(name.into()),
        }
    }

    #[test]
    fn checks_a_stream_per_row() {
        let expect = Expect::Updated([("r1".to_owned(), 2), ("r2".to_owned(), 1)].into());
        let good = StreamOut {
            seen: vec![
                seen(5, "updated", "r1", "x"),
                seen(6, "updated", "r2", "y"),
                seen(9, "updated", "r1", "z"),
            ],
            ..StreamOut::default()
        };
        let mut c = Check::default();
        c.stream(&good, &expect);
        assert_eq!(c.violations(), 0, "{c:?}");
        assert_eq!((c.expected, c.delivered), (3, 3));

        let bad = StreamOut {
            seen: vec![
                seen(9, "updated", "r1", "z"),
                seen(5, "updated", "r1", "x"),
                seen(5, "updated", "r1", "x"),
                seen(7, "created", "r3", "w"),
            ],
            ..StreamOut::default()
        };
        let mut c = Check::default();
        c.stream(&bad, &expect);
        assert_eq!(c.out_of_order, 1);
        assert_eq!(c.duplicate_ids, 1);
        assert_eq!(c.unexpected, 1);
        assert_eq!(c.wrong_kind, 1);
        assert_eq!(c.missing, 1, "r2's update");
        assert_eq!(c.inversions, 2);

        let names = Expect::Created(["bench 1".to_owned(), "bench 2".to_owned()].into());
        let mut w3 = StreamOut {
            seen: vec![
                seen(1, "created", "k1", "bench 1"),
                seen(2, "created", "k2", "bench 2"),
            ],
            ..StreamOut::default()
        };
        let mut c = Check::default();
        c.stream(&w3, &names);
        assert_eq!(c.violations(), 0, "{c:?}");
        w3.others.push("reset".into());
        let mut c = Check::default();
        c.stream(&w3, &names);
        assert_eq!(c.failed, 1);
    }
}

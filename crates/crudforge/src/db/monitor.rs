//! Query monitoring: times every query through Diesel's instrumentation, logs slow ones and
//! collects per-request statistics.

use diesel::connection::{Instrumentation, InstrumentationEvent};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

tokio::task_local! {
    /// Statistics of the request the current task serves (set by the [`Api`](crate::Api)'s
    /// middleware when monitoring is on).
    static CURRENT: Arc<QueryStats>;
}

thread_local! {
    /// Set while this thread runs a statement that is not one of the request's queries (a
    /// read snapshot's `BEGIN` and `COMMIT`, see [`uncounted`]).
    static UNCOUNTED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f`, whose statements the monitor neither times nor counts: they are not queries of
/// the request but the read snapshot around them ([`super::snapshot`]), which exists on SQLite
/// only, so an operation reports the same queries on both backends.
#[cfg(feature = "sqlite")]
pub(crate) fn uncounted<T>(f: impl FnOnce() -> T) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            UNCOUNTED.set(false);
        }
    }
    UNCOUNTED.set(true);
    let _reset = Reset;
    f()
}

/// Query count and total query time of one request.
#[derive(Debug, Default)]
pub struct QueryStats {
    count: AtomicU64,
    nanos: AtomicU64,
}

impl QueryStats {
    /// Number of queries run so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Total time spent in queries so far.
    pub fn total(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }

    fn record(&self, d: Duration) {
        self.count.fetch_add(1, Ordering::Relaxed);
        let n = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_add(n, Ordering::Relaxed);
    }

    /// Runs `fut` with `stats` as the statistics of the current request.
    pub(crate) async fn scope<F: std::future::Future>(stats: Arc<QueryStats>, fut: F) -> F::Output {
        CURRENT.scope(stats, fut).await
    }

    /// The statistics of the request served by the current task, if monitoring is on.
    pub fn current() -> Option<Arc<QueryStats>> {
        CURRENT.try_with(Arc::clone).ok()
    }
}

/// The instrumentation set on every checked-out connection: feeds the query metrics, and with
/// monitoring on (a threshold) logs slow queries.
pub(crate) struct QueryMonitor {
    threshold: Option<Duration>,
    stats: Option<Arc<QueryStats>>,
    started: Option<Instant>,
}

impl QueryMonitor {
    pub(crate) fn new(threshold: Option<Duration>, stats: Option<Arc<QueryStats>>) -> Self {
        QueryMonitor {
            threshold,
            stats,
            started: None,
        }
    }
}

/// The SQL of a query without its bound values (which may hold secrets).
fn sql_only(query: &dyn diesel::connection::DebugQuery) -> String {
    let text = query.to_string();
    match text.find(" -- binds:") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

impl Instrumentation for QueryMonitor {
    fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
        match event {
            InstrumentationEvent::StartQuery { .. } if !UNCOUNTED.get() => {
                self.started = Some(Instant::now());
            }
            InstrumentationEvent::FinishQuery { query, .. } => {
                let Some(start) = self.started.take() else {
                    return;
                };
                let elapsed = start.elapsed();
                crate::metrics::global().observe_query(elapsed);
                if let Some(stats) = &self.stats {
                    stats.record(elapsed);
                }
                if self.threshold.is_some_and(|t| elapsed > t) {
                    tracing::warn!(
                        target: "crudforge::slow_query",
                        sql = %sql_only(query),
                        duration_ms = elapsed.as_secs_f64() * 1000.0,
                        "slow query"
                    );
                }
            }
            InstrumentationEvent::CacheQuery { .. } => {
                crate::metrics::global().statement_cached();
            }
            _ => {}
        }
    }
}

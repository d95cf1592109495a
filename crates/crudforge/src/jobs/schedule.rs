//! Schedules: when a schedule's ticks fall (a cron expression in UTC, or every n seconds
//! since 1970), and the pass that enqueues a due tick's job exactly once across instances.
//!
//! Catch-up: the ticks missed while no instance ran are one tick, the latest: a schedule
//! behind by many ticks runs once when an instance comes back, then on its ticks again. A
//! schedule seen for the first time starts at its next tick (the ticks before it existed
//! are not run).

use super::store::{self, NewJob};
use crate::db::Database;
use crate::error::Error;
use chrono::{DateTime, Utc};
use croner::Cron;
use std::str::FromStr;

/// When a schedule's ticks fall.
#[derive(Debug, Clone)]
pub(crate) enum When {
    /// The times a cron expression matches, in UTC.
    Cron(Box<Cron>),
    /// Every this many seconds since 1970 (the server's own periodic work).
    Every(u64),
}

impl When {
    /// A cron expression: five fields (minute to day of week) or six (seconds first).
    ///
    /// # Errors
    ///
    /// The expression's mistake, in words.
    pub(crate) fn cron(expr: &str) -> Result<When, String> {
        let cron = Cron::from_str(expr).map_err(|e| e.to_string())?;
        Ok(When::Cron(Box::new(cron)))
    }

    /// The expression as text (`0 * * * *`), or `every 3600 s`.
    pub(crate) fn describe(&self) -> String {
        match self {
            When::Cron(cron) => cron.as_str().to_owned(),
            When::Every(secs) => format!("every {secs} s"),
        }
    }

    /// The latest tick at or before `now` (microseconds since 1970), if any.
    pub(crate) fn latest(&self, now: i64) -> Option<i64> {
        match self {
            When::Cron(cron) => {
                let at = DateTime::<Utc>::from_timestamp_micros(now)?;
                let tick = cron.find_previous_occurrence(&at, true).ok()?;
                Some(tick.timestamp_micros())
            }
            When::Every(secs) => {
                let every = i64::try_from(*secs).ok()?.checked_mul(1_000_000)?.max(1);
                Some(now.div_euclid(every) * every)
            }
        }
    }
}

/// One schedule: its name, when its ticks fall, and the job each tick enqueues.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    /// Unique among the API's schedules; the row that keeps its last tick.
    pub(crate) name: String,
    /// When its ticks fall.
    pub(crate) when: When,
    /// The kind of the job a tick enqueues.
    pub(crate) kind: String,
    /// That job's payload (JSON).
    pub(crate) payload: String,
    /// That job's attempts.
    pub(crate) max_attempts: u32,
    /// Whether its tick at or before the moment it is first seen runs (the server's own
    /// periodic work runs at once on a new database; an application's schedule waits for its
    /// next tick).
    pub(crate) run_when_new: bool,
}

impl Schedule {
    /// Enqueues this schedule's job now, as its ticks do (kind, payload, attempts, the
    /// schedule's name on the row), leaving its last tick as it is; the job's number.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub(crate) async fn run_now(&self, db: &Database) -> Result<i64, Error> {
        let mut conn = db.get().await?;
        let job = NewJob {
            kind: &self.kind,
            payload: &self.payload,
            max_attempts: self.max_attempts,
            run_at: store::now_micros(),
            schedule: Some(&self.name),
        };
        store::insert(&mut conn, &job).await
    }

    /// Enqueues the job of this schedule's latest tick at `now` if no instance has taken that
    /// tick yet; the job's number when this call took it. A read first: nothing is written
    /// while the tick is taken.
    ///
    /// # Errors
    ///
    /// Database errors (the tick stays for the next pass).
    pub(crate) async fn pass(&self, db: &Database, now: i64) -> Result<Option<i64>, Error> {
        let Some(tick) = self.when.latest(now) else {
            return Ok(None);
        };
        let seen = match store::last_tick(db, &self.name).await? {
            Some(seen) => seen,
            None if self.run_when_new => {
                store::first_seen(db, &self.name, tick.saturating_sub(1)).await?;
                match store::last_tick(db, &self.name).await? {
                    Some(seen) => seen,
                    None => return Ok(None),
                }
            }
            None => {
                store::first_seen(db, &self.name, tick).await?;
                return Ok(None);
            }
        };
        if tick <= seen {
            return Ok(None);
        }
        let job = NewJob {
            kind: &self.kind,
            payload: &self.payload,
            max_attempts: self.max_attempts,
            run_at: now,
            schedule: Some(&self.name),
        };
        store::take_tick(db, &self.name, seen, tick, &job).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(rfc3339: &str) -> i64 {
        DateTime::parse_from_rfc3339(rfc3339)
            .map(|t| t.timestamp_micros())
            .unwrap_or_default()
    }

    #[test]
    fn the_latest_tick_of_a_cron_expression_is_at_or_before_now() {
        let hourly = When::cron("0 * * * *").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            hourly.latest(micros("2026-12-07T03:59:59Z")),
            Some(micros("2026-12-07T03:00:00Z"))
        );
        assert_eq!(
            hourly.latest(micros("2026-12-07T04:00:00Z")),
            Some(micros("2026-12-07T04:00:00Z"))
        );
        // Six fields: seconds first.
        let every_ten = When::cron("*/10 * * * * *").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            every_ten.latest(micros("2026-12-07T03:00:19Z")),
            Some(micros("2026-12-07T03:00:10Z"))
        );
    }

    #[test]
    fn every_n_seconds_is_aligned_to_1970() {
        let w = When::Every(60);
        assert_eq!(
            w.latest(micros("2026-12-07T03:07:59.5Z")),
            Some(micros("2026-12-07T03:07:00Z"))
        );
    }

    #[test]
    fn a_malformed_cron_expression_is_refused_in_words() {
        for bad in ["", "61 * * * *", "* * *", "nonsense"] {
            assert!(When::cron(bad).is_err(), "{bad:?} was accepted");
        }
    }
}

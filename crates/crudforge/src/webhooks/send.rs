//! Sending: a subscription's due messages claimed with a lease under its cap of messages in
//! flight (the cap holds across instances: claims of one subscription take turns on its row),
//! each attempt signed and posted through the guard's pinned client, and its end stored,
//! fenced by the attempt: delivered, tried again later (the schedule, `Retry-After`, jitter),
//! or dead; failures in a row, or a `410 Gone`, disable the endpoint with the reason.

use super::store::{self, Claimed, Ended};
use super::{guard, sign, Sub};
use crate::api::Api;
use crate::error::Error;
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The units of the retry schedule: the wait after the n-th failed attempt is the n-th of them
/// times `WEBHOOKS_RETRY_BASE` (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h with the default).
const SCHEDULE: [u64; 7] = [1, 60, 360, 1440, 3600, 7200, 7200];

/// The longest `Retry-After` honoured.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(86_400);

/// The most bytes of an answer's body kept with a failure.
const BODY_KEPT: usize = 1024;

/// How long a client keeps the address it was pinned to before the host is looked up again.
const REPIN_AFTER: Duration = Duration::from_secs(60);

/// The clients of the endpoints, each pinned to the address its guard checked.
#[derive(Default)]
pub(crate) struct Clients(HashMap<String, (Result<reqwest::Client, String>, Instant)>);

impl Clients {
    /// The client of `sub`'s endpoint, or why it may not be sent to.
    async fn get(&mut self, api: &Api, sub: &Sub) -> Result<reqwest::Client, String> {
        if let Some((client, at)) = self.0.get(&sub.name) {
            if at.elapsed() < REPIN_AFTER {
                return client.clone();
            }
        }
        let ops = &api.config().ops;
        let client = match guard::resolve(&sub.url, &ops.webhooks_allow_networks).await {
            Ok(addr) => guard::client(&sub.url, addr, Duration::from_secs(ops.webhooks_timeout)),
            Err(e) => Err(e),
        };
        self.0
            .insert(sub.name.clone(), (client.clone(), Instant::now()));
        client
    }
}

/// Sends `sub`'s due messages, as many as its cap lets this instance claim; how many attempts.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn run(api: &Api, sub: &Sub, clients: &mut Clients) -> Result<usize, Error> {
    let ops = &api.config().ops;
    let now = store::now_micros();
    let lease = Duration::from_secs(ops.webhooks_timeout.saturating_mul(2).saturating_add(5));
    let lease_until = now.saturating_add(i64::try_from(lease.as_micros()).unwrap_or(i64::MAX));
    let cap = i64::from(ops.webhooks_in_flight);
    let claimed = api
        .db()
        .in_tx(async |conn| match store::lock(conn, &sub.name).await? {
            Some(state) if state.enabled => {
                store::claim(conn, &sub.name, cap, now, lease_until).await
            }
            _ => Ok(Vec::new()),
        })
        .await?;
    if claimed.is_empty() {
        return Ok(0);
    }
    let client = clients.get(api, sub).await;
    let mut attempts: FuturesUnordered<_> = claimed
        .iter()
        .map(|m| {
            let client = client.clone();
            async move { (m, attempt(client, sub, m).await) }
        })
        .collect();
    let mut made = 0;
    while let Some((m, outcome)) = attempts.next().await {
        made += 1;
        if let Err(e) = end(api, sub, m, outcome).await {
            tracing::warn!(target: "crudforge::webhooks", webhook = %sub.name, message = %m.msg_id, error = %e, "storing an attempt's end failed");
        }
    }
    Ok(made)
}

/// How one attempt went.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// A 2xx answer.
    Delivered { code: u16, took: Duration },
    /// Anything else.
    Failed {
        /// The answer's status code, when there was an answer.
        code: Option<u16>,
        /// What went wrong.
        error: String,
        /// The answer's `Retry-After`.
        retry_after: Option<Duration>,
        took: Duration,
    },
}

/// Posts `m` to `sub`'s endpoint, signed.
async fn attempt(client: Result<reqwest::Client, String>, sub: &Sub, m: &Claimed) -> Outcome {
    let started = Instant::now();
    let client = match client {
        Ok(c) => c,
        Err(error) => {
            return Outcome::Failed {
                code: None,
                error,
                retry_after: None,
                took: started.elapsed(),
            }
        }
    };
    let body = m.payload.clone().into_bytes();
    let headers = sign::headers(
        &sub.secrets,
        &m.msg_id,
        chrono::Utc::now().timestamp(),
        &body,
    );
    let mut req = client
        .post(sub.url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json");
    for (name, value) in headers {
        req = req.header(name, value);
    }
    match req.body(body).send().await {
        Ok(resp) if resp.status().is_success() => Outcome::Delivered {
            code: resp.status().as_u16(),
            took: started.elapsed(),
        },
        Ok(mut resp) => {
            let code = resp.status().as_u16();
            let retry_after = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(retry_after);
            let mut kept = Vec::new();
            while kept.len() < BODY_KEPT {
                match resp.chunk().await {
                    Ok(Some(chunk)) => kept.extend_from_slice(&chunk),
                    _ => break,
                }
            }
            kept.truncate(BODY_KEPT);
            let text = String::from_utf8_lossy(&kept);
            Outcome::Failed {
                code: Some(code),
                error: format!("answered {code}: {}", text.trim()),
                retry_after,
                took: started.elapsed(),
            }
        }
        Err(e) => Outcome::Failed {
            code: None,
            error: if e.is_timeout() {
                "timed out".to_owned()
            } else {
                format!("{e}")
            },
            retry_after: None,
            took: started.elapsed(),
        },
    }
}

/// A `Retry-After` value: seconds, or an HTTP date.
fn retry_after(v: &str) -> Option<Duration> {
    let v = v.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs).min(MAX_RETRY_AFTER));
    }
    let at = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let wait = (at.with_timezone(&chrono::Utc) - chrono::Utc::now())
        .to_std()
        .ok()?;
    Some(wait.min(MAX_RETRY_AFTER))
}

/// The wait before the attempt after attempt `n` (1 the first): the schedule's, less a random
/// part of up to a fifth, and at least `retry_after`.
pub(crate) fn backoff(base: u64, n: i32, retry_after: Option<Duration>) -> Duration {
    let at = usize::try_from(n.saturating_sub(1))
        .unwrap_or(0)
        .min(SCHEDULE.len() - 1);
    let full = Duration::from_secs(base.saturating_mul(SCHEDULE[at]));
    let mut b = [0u8; 2];
    let _ = getrandom::fill(&mut b);
    let jitter = f64::from(u16::from_le_bytes(b)) / f64::from(u16::MAX);
    let wait = full.mul_f64(1.0 - jitter / 5.0);
    wait.max(retry_after.unwrap_or_default())
}

/// Stores the end of attempt `m`: delivered, to be tried again, or dead; the subscription's
/// failures in a row counted, and its endpoint disabled past `WEBHOOKS_DISABLE_AFTER` or on a
/// `410 Gone`.
///
/// # Errors
///
/// Database errors.
async fn end(api: &Api, sub: &Sub, m: &Claimed, outcome: Outcome) -> Result<(), Error> {
    let ops = &api.config().ops;
    let max_attempts = i32::try_from(ops.webhooks_max_attempts.min(8)).unwrap_or(8);
    let now = store::now_micros();
    let ms = |d: Duration| i32::try_from(d.as_millis()).unwrap_or(i32::MAX);
    let (ended, failure) = match outcome {
        Outcome::Delivered { code, took } => (
            Ended {
                status: store::DELIVERED,
                next_at: now,
                code: Some(i32::from(code)),
                error: None,
                latency_ms: ms(took),
            },
            None,
        ),
        Outcome::Failed {
            code,
            error,
            retry_after,
            took,
        } => {
            let dead = m.attempts >= max_attempts;
            let wait = backoff(ops.webhooks_retry_base, m.attempts, retry_after);
            let next_at = now.saturating_add(i64::try_from(wait.as_micros()).unwrap_or(i64::MAX));
            (
                Ended {
                    status: if dead { store::DEAD } else { store::PENDING },
                    next_at,
                    code: code.map(i32::from),
                    error: Some(error.clone()),
                    latency_ms: ms(took),
                },
                Some((code, error)),
            )
        }
    };
    let outcome = match (&failure, ended.status) {
        (None, _) => "delivered",
        (Some(_), s) if s == store::DEAD => "dead",
        _ => "failed",
    };
    let metrics = super::metrics();
    metrics.attempts.with_label_values(&[outcome]).inc();
    metrics
        .duration
        .observe(f64::from(ended.latency_ms) / 1000.0);
    api.db()
        .in_tx(async |conn| {
            if !store::end(conn, m, &ended).await? {
                return Ok(());
            }
            let Some((code, error)) = &failure else {
                return store::succeeded(conn, &sub.name).await;
            };
            let failures = store::failed(conn, &sub.name).await?;
            let limit = ops.webhooks_disable_after;
            if *code == Some(410) {
                store::disable(conn, &sub.name, "the endpoint answered 410 Gone").await?;
            } else if limit > 0 && i64::from(failures) >= i64::from(limit) {
                let why = format!("{failures} failed attempts in a row; the last {error}");
                store::disable(conn, &sub.name, &why).await?;
            }
            Ok(())
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_spans_about_a_day_with_jitter_and_retry_after() {
        let total: Duration = (1..=7).map(|n| backoff(5, n, None)).sum();
        let hours = total.as_secs_f64() / 3600.0;
        assert!((21.0..=27.7).contains(&hours), "{hours} hours");
        for n in 1..=7 {
            let w = backoff(5, n, None).as_secs_f64();
            let full = (5 * SCHEDULE[n as usize - 1]) as f64;
            assert!(w <= full && w >= full * 0.8, "attempt {n}: {w} of {full}");
        }
        assert!(backoff(5, 30, None) <= Duration::from_secs(36_000));
        assert!(backoff(5, 1, Some(Duration::from_secs(120))) == Duration::from_secs(120));
        assert_eq!(backoff(0, 3, None), Duration::ZERO);
    }

    #[test]
    fn retry_after_is_seconds_or_a_date_and_at_most_a_day() {
        assert_eq!(retry_after("120"), Some(Duration::from_secs(120)));
        assert_eq!(retry_after("9999999"), Some(MAX_RETRY_AFTER));
        let later = (chrono::Utc::now() + chrono::Duration::seconds(600)).to_rfc2822();
        let w = retry_after(&later).unwrap();
        assert!(
            w > Duration::from_secs(590) && w <= Duration::from_secs(600),
            "{w:?}"
        );
        assert_eq!(retry_after("soon"), None);
    }
}

//! Timestamps as text without `fmt`: the RFC 3339 forms crudforge writes (JSON members of
//! responses, SQLite values, the time of log lines) and reads back, the common case done by
//! hand and anything else left to chrono (or, for log lines, to `tracing-subscriber`'s clock),
//! with the same result. It is the crate's one RFC 3339 writer of its own: the few other
//! timestamps (`/health`, cursors, parent ids from the path put into a body) call chrono's
//! `to_rfc3339*`.
//!
//! Kept for a measured reason: chrono writes a timestamp digit by digit through `fmt::Write`
//! (and `serde_json` escapes each piece it is handed); a list page of 25 rows has 50 of them,
//! and in the profile of W2 (the list workload of `api-bench`) serializing the 25 items was
//! 10 % of the server's samples, most of it these timestamps ([the benchmarks' journal](https://github.com/crudforge/crudforge/blob/main/benches/JOURNAL.md), "Per-request
//! work, third pass"). The text is chrono's byte for byte (the tests compare both), and
//! chrono writes every form this module does not (years outside 0-9999, leap seconds, other
//! offsets). Log lines take the same text ([`LogClock`]): `tracing-subscriber`'s own clock
//! writes each of its seven fields through `fmt`, about 2,400 instructions of every log line
//! ([the benchmarks' journal](https://github.com/crudforge/crudforge/blob/main/benches/JOURNAL.md), "Issue 46, item 8").

use chrono::{DateTime, Datelike, NaiveDate, NaiveTime, Timelike, Utc};
use serde::{Serialize, Serializer};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};

/// How many fractional digits a timestamp's text has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fraction {
    /// None, 3, 6 or 9, the fewest that keep the value (chrono's `SecondsFormat::AutoSi`,
    /// its JSON form).
    Auto,
    /// Always 6 (`SecondsFormat::Micros`, the SQLite form: fixed width, so text order is
    /// time order; also the time of log lines).
    Micros,
}

/// RFC 3339 text in UTC with `Z`, at most 30 bytes.
struct Text {
    buf: [u8; 30],
    len: usize,
}

impl Text {
    fn as_str(&self) -> &str {
        // Only ASCII digits and separators are ever written.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }

    fn push(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
    }

    /// `n` as exactly `width` decimal digits (`n` is below 10^width).
    fn digits(&mut self, n: u32, width: usize) {
        let mut n = n;
        for i in (0..width).rev() {
            self.buf[self.len + i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
        self.len += width;
    }
}

/// The text of `t`, or `None` where chrono's form differs from the plain one (a year outside
/// 0–9999 is written with a sign; a leap second as second 60).
fn text(t: &DateTime<Utc>, fraction: Fraction) -> Option<Text> {
    // The date and time in UTC once: each of `DateTime`'s own accessors converts to local
    // time (the offset added) again.
    let t = t.naive_utc();
    let year = u32::try_from(t.year()).ok().filter(|y| *y <= 9999)?;
    let nano = t.nanosecond();
    if nano >= 1_000_000_000 {
        return None;
    }
    let mut out = Text {
        buf: [0; 30],
        len: 0,
    };
    out.digits(year, 4);
    out.push(b'-');
    out.digits(t.month(), 2);
    out.push(b'-');
    out.digits(t.day(), 2);
    out.push(b'T');
    out.digits(t.hour(), 2);
    out.push(b':');
    out.digits(t.minute(), 2);
    out.push(b':');
    out.digits(t.second(), 2);
    match fraction {
        Fraction::Micros => {
            out.push(b'.');
            out.digits(nano / 1_000, 6);
        }
        Fraction::Auto if nano == 0 => {}
        Fraction::Auto if nano.is_multiple_of(1_000_000) => {
            out.push(b'.');
            out.digits(nano / 1_000_000, 3);
        }
        Fraction::Auto if nano.is_multiple_of(1_000) => {
            out.push(b'.');
            out.digits(nano / 1_000, 6);
        }
        Fraction::Auto => {
            out.push(b'.');
            out.digits(nano, 9);
        }
    }
    out.push(b'Z');
    Some(out)
}

/// Serializes a timestamp as chrono does (RFC 3339, UTC as `Z`, the fewest fractional digits
/// of 0, 3, 6 or 9 that keep the value): the `serialize_with` of timestamp members.
///
/// # Errors
///
/// The serializer's.
pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    match text(t, Fraction::Auto) {
        Some(text) => s.serialize_str(text.as_str()),
        None => t.serialize(s),
    }
}

/// [`serialize`] for a nullable timestamp (`null` for `None`).
///
/// # Errors
///
/// The serializer's.
pub fn serialize_opt<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => serialize(t, s),
        None => s.serialize_none(),
    }
}

/// The SQLite text form: UTC, six fractional digits, `Z` (chrono's
/// `to_rfc3339_opts(SecondsFormat::Micros, true)`).
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) fn sqlite_text(t: &DateTime<Utc>) -> String {
    match text(t, Fraction::Micros) {
        Some(text) => text.as_str().to_owned(),
        None => t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
    }
}

/// Reads the SQLite text form (`YYYY-MM-DDTHH:MM:SS.ffffffZ`, as [`sqlite_text`] writes it);
/// `None` for any other text, which the caller hands to chrono's general parser.
// Only the SQLite file needs it (tested whatever the features).
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) fn parse_sqlite(s: &str) -> Option<DateTime<Utc>> {
    let b = s.as_bytes();
    if b.len() != 27
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'.'
        || b[26] != b'Z'
    {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<u32> {
        b[from..to].iter().try_fold(0u32, |n, c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let year = i32::try_from(num(0, 4)?).ok()?;
    let date = NaiveDate::from_ymd_opt(year, num(5, 7)?, num(8, 10)?)?;
    let time =
        NaiveTime::from_hms_micro_opt(num(11, 13)?, num(14, 16)?, num(17, 19)?, num(20, 26)?)?;
    Some(date.and_time(time).and_utc())
}

/// The time at the start of log lines: `tracing-subscriber`'s default text (RFC 3339 in UTC,
/// six fractional digits, `Z`, as its `SystemTime` clock writes it) without `fmt`. A time that
/// text does not cover (a year outside 0–9999) is left to that clock.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LogClock;

impl FormatTime for LogClock {
    fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
        match text(&Utc::now(), Fraction::Micros) {
            Some(text) => w.write_str(text.as_str()),
            None => SystemTime.format_time(w),
        }
    }
}

/// The current time, at the microsecond precision both backends store.
pub fn now() -> DateTime<Utc> {
    use chrono::SubsecRound;
    Utc::now().trunc_subsecs(6)
}

/// The time of the next of rows written together, after `previous` (the last one's): the
/// current time, or a microsecond after `previous` when the clock has not moved past it, so
/// that rows written in one statement keep the order they were given in.
pub fn now_after(previous: Option<DateTime<Utc>>) -> DateTime<Utc> {
    let now = now();
    match previous {
        Some(p) if now <= p => p + chrono::TimeDelta::microseconds(1),
        _ => now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{SecondsFormat, TimeZone};

    #[test]
    fn rows_written_together_get_increasing_times() {
        let mut last = None;
        let times: Vec<_> = (0..2_000)
            .map(|_| {
                let t = now_after(last);
                last = Some(t);
                t
            })
            .collect();
        assert!(times.windows(2).all(|w| w[0] < w[1]));
        let ahead = now_after(Some(now() + chrono::TimeDelta::seconds(5)));
        assert!(ahead > now() + chrono::TimeDelta::seconds(4));
    }

    fn chrono_json(t: &DateTime<Utc>) -> String {
        serde_json::to_string(t).unwrap()
    }

    fn ours_json(t: &DateTime<Utc>) -> String {
        let mut out = Vec::new();
        serialize(t, &mut serde_json::Serializer::new(&mut out)).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn samples() -> Vec<DateTime<Utc>> {
        let base = Utc.with_ymd_and_hms(2026, 11, 23, 7, 5, 9).unwrap();
        let mut out = vec![
            base,
            Utc.with_ymd_and_hms(0, 1, 1, 0, 0, 0).unwrap(),
            Utc.with_ymd_and_hms(9999, 12, 31, 23, 59, 59).unwrap(),
            Utc.with_ymd_and_hms(1970, 1, 1, 0, 0, 0).unwrap(),
            Utc.with_ymd_and_hms(2024, 2, 29, 12, 0, 0).unwrap(),
            // Outside 0–9999: chrono's signed form.
            Utc.with_ymd_and_hms(10000, 1, 1, 0, 0, 0).unwrap(),
            Utc.with_ymd_and_hms(-1, 6, 1, 0, 0, 0).unwrap(),
        ];
        for nanos in [
            1,
            999,
            1_000,
            120_000,
            123_456,
            1_000_000,
            7_000_000,
            123_456_789,
            999_999_999,
            500_000_000,
            10_500,
        ] {
            out.push(base + chrono::Duration::nanoseconds(nanos));
        }
        // A leap second, which chrono writes as second 60.
        let leap = NaiveDate::from_ymd_opt(2016, 12, 31)
            .unwrap()
            .and_hms_nano_opt(23, 59, 59, 1_500_000_000)
            .unwrap()
            .and_utc();
        out.push(leap);
        out
    }

    #[test]
    fn json_text_is_chronos() {
        for t in samples() {
            assert_eq!(ours_json(&t), chrono_json(&t), "{t:?}");
        }
        let mut out = Vec::new();
        serialize_opt(&None, &mut serde_json::Serializer::new(&mut out)).unwrap();
        assert_eq!(out, b"null");
    }

    #[test]
    fn sqlite_text_is_chronos_and_reads_back() {
        for t in samples() {
            let text = sqlite_text(&t);
            assert_eq!(
                text,
                t.to_rfc3339_opts(SecondsFormat::Micros, true),
                "{t:?}"
            );
            if (0..=9999).contains(&t.year()) && t.nanosecond() < 1_000_000_000 {
                let micros = t.with_nanosecond(t.nanosecond() / 1000 * 1000).unwrap();
                assert_eq!(parse_sqlite(&text), Some(micros), "{text}");
            }
        }
    }

    fn clock_text(clock: &impl FormatTime) -> String {
        let mut out = String::new();
        clock.format_time(&mut Writer::new(&mut out)).unwrap();
        out
    }

    #[test]
    fn log_clock_writes_what_tracing_subscribers_clock_writes() {
        // Both read the clock, so compare readings taken within one second: the same bytes
        // up to the second, digits where its digits are, the same separators.
        for _ in 0..100 {
            let before = clock_text(&SystemTime);
            let ours = clock_text(&LogClock);
            let after = clock_text(&SystemTime);
            if before[..19] != after[..19] {
                continue;
            }
            assert_eq!(ours.len(), before.len(), "{ours} {before}");
            assert_eq!(ours[..19], before[..19], "{ours} {before}");
            for (a, b) in ours.bytes().zip(before.bytes()) {
                assert_eq!(a.is_ascii_digit(), b.is_ascii_digit(), "{ours} {before}");
                if !a.is_ascii_digit() {
                    assert_eq!(a, b, "{ours} {before}");
                }
            }
            assert!(ours[19..] >= before[19..] && ours[19..] <= after[19..]);
            return;
        }
        panic!("the clock never stayed within one second");
    }

    #[test]
    fn other_text_is_left_to_chrono() {
        for s in [
            "2024-01-02T03:04:05Z",
            "2024-01-02T03:04:05.123Z",
            "2024-01-02T03:04:05.123456+00:00",
            "2024-01-02 03:04:05",
            "2024-13-02T03:04:05.123456Z",
            "2024-02-30T03:04:05.123456Z",
            "2024-01-02T24:04:05.123456Z",
            "2024-01-02T03:04:05.12345xZ",
            "+024-01-02T03:04:05.123456Z",
            "2024-01-02T03:04:05.123456z",
        ] {
            assert_eq!(parse_sqlite(s), None, "{s}");
        }
    }
}

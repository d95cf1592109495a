//! The text log formatter for uncoloured output: the same lines, byte for byte, as
//! `tracing-subscriber`'s default full format without colours, written straight to the line
//! buffer instead of through `core::fmt` and the colour-styling layer at every step.
//!
//! A line is the timestamp (RFC 3339, UTC, microseconds), the level padded to five
//! characters, the spans from root to leaf (`name{fields}:` each), the target and `: `, then
//! the event's fields: the message bare, every other field as `name=value`, one space apart.
//! Strings given as fields are quoted and escaped as `{:?}` prints them; the message, and the
//! text of errors, have terminal control characters (ESC, BEL, BS, FF, DEL and the C1 range)
//! written as escapes unless the subscriber turned that off. Values that only implement
//! `Debug` or `Display` still go through `core::fmt`, once each; names, strings, integers,
//! booleans, the level and the timestamp do not.
//!
//! [`Text`] formats events and [`TextFields`] formats fields (an event's, and those each span
//! keeps); install both (see [`init`](super::init)). They write no colour codes, whatever the
//! writer allows: the process keeps the default formatter when stderr is a terminal.

use std::fmt::{self, Write as _};
use std::time::{SystemTime, UNIX_EPOCH};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// Formats an event as one uncoloured text line (see the [module](self) documentation).
///
/// It reads each span's fields as the subscriber's field formatter stored them, so it works
/// with any field formatter; with [`TextFields`] the whole line avoids the default's
/// overhead.
#[derive(Debug, Clone, Copy, Default)]
pub struct Text;

/// Formats fields (of events and of spans) as `tracing-subscriber`'s default field formatter
/// does without colours (see the [module](self) documentation).
#[derive(Debug, Clone, Copy, Default)]
pub struct TextFields;

impl<S, N> FormatEvent<S, N> for Text
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        // The timestamp, a space and the level column, in one write.
        let mut head = rfc3339_micros(SystemTime::now());
        head.push(b' ');
        head.push_str(level_column(event.metadata().level()));
        writer.write_str(head.as_str()?)?;

        if let Some(scope) = ctx.event_scope() {
            let mut any = false;
            for span in scope.from_root() {
                any = true;
                writer.write_str(span.metadata().name())?;
                let extensions = span.extensions();
                if let Some(fields) = extensions.get::<FormattedFields<N>>() {
                    if !fields.fields.is_empty() {
                        writer.write_char('{')?;
                        writer.write_str(&fields.fields)?;
                        writer.write_char('}')?;
                    }
                }
                writer.write_char(':')?;
            }
            if any {
                writer.write_char(' ')?;
            }
        }

        writer.write_str(event.metadata().target())?;
        writer.write_str(": ")?;
        ctx.format_fields(writer.by_ref(), event)?;
        writer.write_char('\n')
    }
}

impl<'writer> FormatFields<'writer> for TextFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'writer>, fields: R) -> fmt::Result {
        let mut visitor = FieldWriter {
            sanitize: writer.sanitizes_ansi_escapes(),
            writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }

    // `add_fields` (a span's `record`) keeps the trait's behaviour: a space after what the
    // span already holds, if anything, then these fields formatted as above.
}

/// The level column and the space after it, as wide as the widest level name.
fn level_column(level: &Level) -> &'static str {
    match *level {
        Level::TRACE => "TRACE ",
        Level::DEBUG => "DEBUG ",
        Level::INFO => " INFO ",
        Level::WARN => " WARN ",
        Level::ERROR => "ERROR ",
    }
}

/// Writes one set of fields; stops at the first failed write and keeps its error.
struct FieldWriter<'a> {
    writer: Writer<'a>,
    /// Write terminal control characters in the message and in error texts as escapes.
    sanitize: bool,
    /// No field written yet (no space before the next one).
    first: bool,
    result: fmt::Result,
}

/// The field that carries an event's message, written without its name.
const MESSAGE: &str = "message";

impl FieldWriter<'_> {
    /// Writes the separating space, if a field came before, then `name=` unless the field is
    /// the message. Returns whether it was the message.
    fn start(&mut self, field: &Field) -> Result<bool, fmt::Error> {
        if self.first {
            self.first = false;
        } else {
            self.writer.write_char(' ')?;
        }
        let name = field.name();
        if name == MESSAGE {
            return Ok(true);
        }
        // A raw identifier (`r#type`) is written without its `r#`.
        self.writer
            .write_str(name.strip_prefix("r#").unwrap_or(name))?;
        self.writer.write_char('=')?;
        Ok(false)
    }

    /// Records the outcome of writing one field, unless an earlier field failed.
    fn field(&mut self, write: impl FnOnce(&mut Self) -> fmt::Result) {
        if self.result.is_ok() {
            self.result = write(self);
        }
    }
}

impl Visit for FieldWriter<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.field(|w| {
            if w.start(field)? {
                // The message is the text itself, escaped.
                write_escaped(&mut w.writer, value, w.sanitize)
            } else {
                write_debug_str(&mut w.writer, value)
            }
        });
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.field(|w| {
            w.start(field)?;
            let mut digits = Ascii::new();
            if value < 0 {
                digits.push(b'-');
            }
            digits.number(value.unsigned_abs(), 1);
            w.writer.write_str(digits.as_str()?)
        });
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.field(|w| {
            w.start(field)?;
            let mut digits = Ascii::new();
            digits.number(value, 1);
            w.writer.write_str(digits.as_str()?)
        });
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.field(|w| {
            w.start(field)?;
            w.writer.write_str(if value { "true" } else { "false" })
        });
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        // `{:?}`, as the default prints floats: `0.1`, `1.0`, `1e21`, `NaN`.
        self.field(|w| {
            w.start(field)?;
            write!(w.writer, "{value:?}")
        });
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        // The error's text, then, when it has causes, ` <name>.sources=[<cause>, ...]` with
        // the field's name as declared (a raw identifier keeps its `r#` there). Each text is
        // escaped; in the message, the whole is escaped again, which changes nothing.
        self.field(|w| {
            w.start(field)?;
            write_display(&mut w.writer, value, w.sanitize)?;
            let Some(first_cause) = value.source() else {
                return Ok(());
            };
            w.writer.write_char(' ')?;
            w.writer.write_str(field.name())?;
            w.writer.write_str(".sources=[")?;
            let mut cause = Some(first_cause);
            let mut first = true;
            while let Some(error) = cause {
                if !first {
                    w.writer.write_str(", ")?;
                }
                first = false;
                write_display(&mut w.writer, error, w.sanitize)?;
                cause = error.source();
            }
            w.writer.write_char(']')
        });
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // Everything else, `%` values among them (their `Debug` is their `Display`).
        self.field(|w| {
            if w.start(field)? && w.sanitize {
                write!(Escaping(&mut w.writer), "{value:?}")
            } else {
                write!(w.writer, "{value:?}")
            }
        });
    }
}

/// Writes `value`'s `Display` text, escaped when `sanitize`.
fn write_display(
    out: &mut Writer<'_>,
    value: &(dyn std::error::Error + 'static),
    sanitize: bool,
) -> fmt::Result {
    if sanitize {
        write!(Escaping(out), "{value}")
    } else {
        write!(out, "{value}")
    }
}

/// A writer that passes text on with terminal control characters escaped.
struct Escaping<'a, W: fmt::Write + ?Sized>(&'a mut W);

impl<W: fmt::Write + ?Sized> fmt::Write for Escaping<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        write_escaped(self.0, s, true)
    }
}

/// Writes `s`, with ESC, BEL, BS, FF and DEL as `\x1b`-style escapes and C1 controls
/// (U+0080 to U+009F) as `\u{80}`-style escapes when `sanitize`; as it is otherwise.
fn write_escaped<W: fmt::Write + ?Sized>(out: &mut W, s: &str, sanitize: bool) -> fmt::Result {
    if !sanitize {
        return out.write_str(s);
    }
    let bytes = s.as_bytes();
    let mut clean_from = 0;
    let mut i = 0;
    while i < bytes.len() {
        let escape: Option<(&str, usize)> = match bytes[i] {
            0x07 => Some(("\\x07", 1)),
            0x08 => Some(("\\x08", 1)),
            0x0c => Some(("\\x0c", 1)),
            0x1b => Some(("\\x1b", 1)),
            0x7f => Some(("\\x7f", 1)),
            // A C1 control is encoded as 0xC2 then 0x80 to 0x9F.
            0xc2 => match bytes.get(i + 1) {
                Some(&second @ 0x80..=0x9f) => Some((c1_escape(second), 2)),
                _ => None,
            },
            _ => None,
        };
        match escape {
            Some((text, len)) => {
                // `i` and `i + len` sit on character boundaries: an ASCII byte, or a whole
                // two-byte character.
                out.write_str(&s[clean_from..i])?;
                out.write_str(text)?;
                i += len;
                clean_from = i;
            }
            None => i += 1,
        }
    }
    out.write_str(&s[clean_from..])
}

/// The escape of the C1 control whose UTF-8 second byte is `second` (0x80 to 0x9F).
fn c1_escape(second: u8) -> &'static str {
    const C1: [&str; 32] = [
        "\\u{80}", "\\u{81}", "\\u{82}", "\\u{83}", "\\u{84}", "\\u{85}", "\\u{86}", "\\u{87}",
        "\\u{88}", "\\u{89}", "\\u{8a}", "\\u{8b}", "\\u{8c}", "\\u{8d}", "\\u{8e}", "\\u{8f}",
        "\\u{90}", "\\u{91}", "\\u{92}", "\\u{93}", "\\u{94}", "\\u{95}", "\\u{96}", "\\u{97}",
        "\\u{98}", "\\u{99}", "\\u{9a}", "\\u{9b}", "\\u{9c}", "\\u{9d}", "\\u{9e}", "\\u{9f}",
    ];
    C1[usize::from(second & 0x1f)]
}

/// Writes `s` as `{:?}` prints a string: in double quotes, with `"`, `\`, control
/// characters and characters `char::escape_debug` escapes written as escapes (`'` stays).
fn write_debug_str(out: &mut Writer<'_>, s: &str) -> fmt::Result {
    out.write_char('"')?;
    let bytes = s.as_bytes();
    let mut clean_from = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
            i += 1;
            continue;
        }
        // Not plain printable ASCII: a control, a quote, a backslash or a non-ASCII character
        // starting at `i`, which is a character boundary.
        let Some(c) = s[i..].chars().next() else {
            break;
        };
        let escaped = c.escape_debug();
        if escaped.len() != 1 {
            out.write_str(&s[clean_from..i])?;
            for e in escaped {
                out.write_char(e)?;
            }
            clean_from = i + c.len_utf8();
        }
        i += c.len_utf8();
    }
    out.write_str(&s[clean_from..])?;
    out.write_char('"')
}

/// `t` as `YYYY-MM-DDTHH:MM:SS.ffffffZ` in UTC, the fraction cut (not rounded) to
/// microseconds, as the default formatter's clock prints it: years past 9999 get a `+` and
/// all their digits, years before 0 a `-` and at least four digits.
fn rfc3339_micros(t: SystemTime) -> Ascii {
    let (secs, nanos) = unix_seconds(t);
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    let second_of_day = secs.rem_euclid(86_400).unsigned_abs();

    let mut text = Ascii::new();
    if year > 9999 {
        text.push(b'+');
        text.number(year.unsigned_abs(), 1);
    } else if year < 0 {
        text.push(b'-');
        text.number(year.unsigned_abs(), 4);
    } else {
        text.number(year.unsigned_abs(), 4);
    }
    text.push(b'-');
    text.number(month, 2);
    text.push(b'-');
    text.number(day, 2);
    text.push(b'T');
    text.number(second_of_day / 3_600, 2);
    text.push(b':');
    text.number(second_of_day / 60 % 60, 2);
    text.push(b':');
    text.number(second_of_day % 60, 2);
    text.push(b'.');
    text.number(u64::from(nanos / 1_000), 6);
    text.push(b'Z');
    text
}

/// Whole seconds since 1970-01-01T00:00:00Z (rounded down, so negative before it) and the
/// nanoseconds past them.
fn unix_seconds(t: SystemTime) -> (i64, u32) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(after) => (
            i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
            after.subsec_nanos(),
        ),
        Err(before) => {
            let before = before.duration();
            let secs = i64::try_from(before.as_secs()).unwrap_or(i64::MAX);
            match before.subsec_nanos() {
                0 => (-secs, 0),
                nanos => (-secs - 1, 1_000_000_000 - nanos),
            }
        }
    }
}

/// The proleptic Gregorian (year, month, day) of a count of days since 1970-01-01.
///
/// Counts in 400-year eras of 146 097 days, from a year that starts on 1 March so that the
/// leap day falls last.
fn civil_from_days(days: i64) -> (i64, u64, u64) {
    let from_0000_03_01 = days + 719_468;
    let era = from_0000_03_01.div_euclid(146_097);
    let day_of_era = from_0000_03_01.rem_euclid(146_097); // 0 ..= 146_096
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153; // 0 ..= 11
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = era * 400 + year_of_era + i64::from(month <= 2);
    (year, month.unsigned_abs(), day.unsigned_abs())
}

/// Room for the longest line head: a sign, 19 year digits, `-MM-DDTHH:MM:SS.ffffffZ`, a space
/// and the level column.
const ASCII_CAPACITY: usize = 64;

/// A short ASCII text built on the stack: a timestamp or an integer.
struct Ascii {
    bytes: [u8; ASCII_CAPACITY],
    len: usize,
}

impl Ascii {
    fn new() -> Ascii {
        Ascii {
            bytes: [0; ASCII_CAPACITY],
            len: 0,
        }
    }

    /// Appends one byte (dropped past the capacity, which no caller reaches).
    fn push(&mut self, b: u8) {
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }

    /// Appends ASCII text (cut short past the capacity, which no caller reaches).
    fn push_str(&mut self, s: &str) {
        for &b in s.as_bytes() {
            self.push(b);
        }
    }

    /// Appends `n` in decimal, zero-padded to at least `width` digits.
    fn number(&mut self, mut n: u64, width: usize) {
        let mut digits = [b'0'; 20];
        let mut start = digits.len();
        loop {
            start -= 1;
            digits[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let start = start.min(digits.len().saturating_sub(width));
        for &d in &digits[start..] {
            self.push(d);
        }
    }

    fn as_str(&self) -> Result<&str, fmt::Error> {
        std::str::from_utf8(&self.bytes[..self.len]).map_err(|_| fmt::Error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
    use std::io;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;
    use tracing::field;

    /// A `MakeWriter` that appends every line to a shared buffer.
    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Capture {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Capture {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    /// What `run` prints under the default formatter and under ours (with sanitizing of
    /// control characters on or off).
    fn both(sanitize: bool, run: impl Fn()) -> (String, String) {
        let default_out = Capture::default();
        let sink = default_out.clone();
        let default = tracing_subscriber::fmt()
            .with_max_level(Level::TRACE)
            .with_ansi(false)
            .with_ansi_sanitization(sanitize)
            .with_writer(move || sink.clone())
            .finish();
        tracing::subscriber::with_default(default, &run);

        let ours_out = Capture::default();
        let sink = ours_out.clone();
        let ours = tracing_subscriber::fmt()
            .with_max_level(Level::TRACE)
            .with_ansi(false)
            .with_ansi_sanitization(sanitize)
            .with_writer(move || sink.clone())
            .fmt_fields(TextFields)
            .event_format(Text)
            .finish();
        tracing::subscriber::with_default(ours, &run);

        (default_out.text(), ours_out.text())
    }

    /// The lines without their timestamps (the first space-separated word).
    fn untimed(text: &str) -> Vec<String> {
        text.lines()
            .map(|line| line.split_once(' ').unwrap().1.to_owned())
            .collect()
    }

    /// Runs `run` under both formatters and checks they print the same `lines` lines.
    fn assert_same(sanitize: bool, lines: usize, run: impl Fn()) -> Vec<String> {
        let (default, ours) = both(sanitize, run);
        assert!(default.ends_with('\n'), "{default:?}");
        assert!(ours.ends_with('\n'), "{ours:?}");
        let (default, ours) = (untimed(&default), untimed(&ours));
        assert_eq!(default.len(), lines, "{default:#?}");
        for (d, o) in default.iter().zip(&ours) {
            assert_eq!(d, o, "\ndefault: {d:?}\nours:    {o:?}");
        }
        assert_eq!(default, ours);
        ours
    }

    #[derive(Debug)]
    struct Failure {
        text: &'static str,
        cause: Option<Box<Failure>>,
    }

    impl fmt::Display for Failure {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.text)
        }
    }

    impl std::error::Error for Failure {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.cause
                .as_deref()
                .map(|c| c as &(dyn std::error::Error + 'static))
        }
    }

    fn chained() -> Failure {
        Failure {
            text: "outer \x1b[31m failed",
            cause: Some(Box::new(Failure {
                text: "middle\u{9b}2J",
                cause: Some(Box::new(Failure {
                    text: "root \x07 cause",
                    cause: None,
                })),
            })),
        }
    }

    fn lone() -> Failure {
        Failure {
            text: "alone \x7f here",
            cause: None,
        }
    }

    /// Displays as text with control characters in it.
    struct Shouty;

    impl fmt::Display for Shouty {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("loud \x1b[1m\u{85} text")
        }
    }

    const NASTY: &str = "q\"uo'te \\back\nnew\ttab\r\0 esc\x1b[2J bel\x07 bs\x08 ff\x0c \
                         del\x7f c1\u{80}\u{9b}\u{9f} a0\u{a0} e\u{301} zw\u{200b} \u{1f600} é";

    fn every_kind() {
        tracing::info!(
            text = NASTY,
            plain = "plain",
            empty = "",
            shown = %Shouty,
            shown_str = %"percent \x1b str",
            debugged = ?Some("dbg \x1b"),
            debug_vec = ?vec![1, 2],
            negative = -42i64,
            min = i64::MIN,
            zero = 0i64,
            big = u64::MAX,
            small = 7u64,
            tenth = 0.1,
            huge = 1e21,
            tiny = 1e-7,
            whole = 1.0,
            negative_zero = -0.0,
            not_a_number = f64::NAN,
            infinite = f64::INFINITY,
            single = 0.1f32,
            yes = true,
            no = false,
            wide = 5i128,
            wider = u128::MAX,
            bytes = &b"\x00ab"[..],
            error = &chained() as &dyn std::error::Error,
            error_alone = &lone() as &dyn std::error::Error,
            r#type = "raw",
            r#loop = 3,
            "r#quoted" = 4,
            "r#quoted_error" = &chained() as &dyn std::error::Error,
            dotted.name = 1,
            "message \x1b[31m {} \u{9b}", "arg\x07"
        );
    }

    #[test]
    fn events_outside_spans_match_the_default() {
        let lines = assert_same(true, 14, || {
            tracing::trace!("at trace");
            tracing::debug!("at debug");
            tracing::info!("at info");
            tracing::warn!("at warn");
            tracing::error!("at error");
            tracing::info!(a = 1, b = "two");
            tracing::info!(target: "elsewhere::target", "only a message");
            tracing::info!(message = "message given as a str \x1b[0m");
            tracing::info!(message = 12u64);
            tracing::info!(message = -12i64, extra = true);
            tracing::info!(message = %Shouty);
            tracing::error!(message = &chained() as &dyn std::error::Error);
            tracing::error!(message = &lone() as &dyn std::error::Error, after = 1);
            every_kind();
        });
        // Both could be wrong alike: pin a few lines down.
        assert_eq!(lines[0], "TRACE crudforge::logging::text::tests: at trace");
        assert_eq!(lines[2], " INFO crudforge::logging::text::tests: at info");
        assert_eq!(lines[3], " WARN crudforge::logging::text::tests: at warn");
        assert_eq!(
            lines[5],
            " INFO crudforge::logging::text::tests: a=1 b=\"two\""
        );
        assert_eq!(lines[6], " INFO elsewhere::target: only a message");
        assert!(
            lines[7].ends_with("message given as a str \\x1b[0m"),
            "{}",
            lines[7]
        );
        assert!(
            lines[11].ends_with(
                "outer \\x1b[31m failed message.sources=[middle\\u{9b}2J, root \\x07 cause]"
            ),
            "{}",
            lines[11]
        );
        assert!(lines[13].contains(" type=\"raw\""), "{}", lines[13]);
        // A quoted name keeps `r#` until the formatter drops it, except after `.sources=`.
        assert!(
            lines[13]
                .contains(" quoted=4 quoted_error=outer \\x1b[31m failed r#quoted_error.sources=["),
            "{}",
            lines[13]
        );
    }

    #[test]
    fn unsanitized_output_matches_the_default() {
        assert_same(false, 4, || {
            tracing::info!(message = "raw \x1b[0m \u{85}");
            tracing::error!(message = &chained() as &dyn std::error::Error);
            tracing::info!(name = "x", "message \x1b {}", 1);
            every_kind();
        });
    }

    #[test]
    fn spans_match_the_default() {
        let lines = assert_same(true, 9, || {
            let outer = tracing::info_span!("outer", id = 7, name = "n\x1b", shown = %Shouty);
            let _outer = outer.enter();
            tracing::info!("in one span");
            {
                let inner = tracing::debug_span!("inner", depth = 2u64);
                let _inner = inner.enter();
                tracing::warn!(x = 1, "in two spans");
                let bare = tracing::trace_span!("bare");
                let _bare = bare.enter();
                tracing::error!("in three spans, the last without fields");
                every_kind();
            }
            tracing::info!(parent: None, "explicitly at the root");
            let other = tracing::info_span!("other", k = "v");
            tracing::info!(parent: &other, "explicit parent");
            let only_bare = tracing::info_span!(parent: None, "only_bare");
            tracing::info!(parent: &only_bare, "under a span without fields");
            let with_message = tracing::info_span!("with_message", message = "span msg", n = 1);
            tracing::info!(parent: &with_message, "under a span with a message");
            let with_error =
                tracing::info_span!("with_error", e = &chained() as &dyn std::error::Error);
            tracing::info!(parent: &with_error, "under a span with an error");
        });
        assert_eq!(
            lines[0],
            " INFO outer{id=7 name=\"n\\u{1b}\" shown=loud \x1b[1m\u{85} text}: \
             crudforge::logging::text::tests: in one span"
        );
        assert_eq!(
            lines[4],
            " INFO crudforge::logging::text::tests: explicitly at the root"
        );
        assert_eq!(
            lines[6],
            " INFO only_bare: crudforge::logging::text::tests: under a span without fields"
        );
    }

    #[test]
    fn fields_recorded_later_match_the_default() {
        assert_same(true, 6, || {
            let span = tracing::info_span!(
                "later",
                first = field::Empty,
                second = field::Empty,
                r#type = field::Empty,
            );
            let _entered = span.enter();
            tracing::info!("before any field");
            span.record("second", "two \x1b");
            tracing::info!("after one field");
            span.record("first", 1);
            span.record("type", true);
            tracing::info!("after three fields");

            let some = tracing::info_span!("some", a = 1, b = field::Empty);
            let _some = some.enter();
            tracing::info!("a span with one of two fields");
            some.record("b", tracing::field::display("shown"));
            tracing::info!("and then both");
            some.record("a", 2);
            tracing::info!("a recorded twice");
        });
    }

    #[test]
    fn the_access_log_line_matches_the_default() {
        let lines = assert_same(true, 1, || {
            let span = tracing::info_span!(
                "request",
                request_id = %"7d5f0c9e-0000-4000-8000-000000000001",
                method = %"GET",
                path = %"/gadgets/1",
            );
            let _entered = span.enter();
            tracing::info!(
                target: "crudforge::access",
                request_id = %"7d5f0c9e-0000-4000-8000-000000000001",
                operation_id = %"get_gadget",
                method = %"GET",
                status = 200u16,
                duration_ms = 0.123,
                "request"
            );
        });
        assert_eq!(
            lines[0],
            " INFO request{request_id=7d5f0c9e-0000-4000-8000-000000000001 method=GET \
             path=/gadgets/1}: crudforge::access: request \
             request_id=7d5f0c9e-0000-4000-8000-000000000001 operation_id=get_gadget \
             method=GET status=200 duration_ms=0.123"
        );
    }

    /// Our timestamp of `t`.
    fn stamp(t: SystemTime) -> String {
        rfc3339_micros(t).as_str().unwrap().to_owned()
    }

    fn at(y: i32, m: u32, d: u32, h: u32, min: u32, s: u32, micros: u32) -> DateTime<Utc> {
        NaiveDate::from_ymd_opt(y, m, d)
            .unwrap()
            .and_hms_micro_opt(h, min, s, micros)
            .unwrap()
            .and_utc()
    }

    #[test]
    fn timestamps_match_chrono() {
        let instants = [
            at(1970, 1, 1, 0, 0, 0, 0),
            at(2000, 2, 29, 23, 59, 59, 999_999),
            at(2026, 11, 24, 13, 5, 7, 42),
            at(9999, 12, 31, 23, 59, 59, 999_999),
            at(2024, 3, 1, 0, 0, 0, 0),
            at(2100, 2, 28, 12, 0, 0, 500_000),
            at(1969, 12, 31, 23, 59, 59, 500_000),
            at(1900, 1, 1, 0, 0, 0, 0),
            at(1, 1, 1, 0, 0, 0, 1),
        ];
        for instant in instants {
            let expected = instant.to_rfc3339_opts(SecondsFormat::Micros, true);
            assert_eq!(stamp(SystemTime::from(instant)), expected);
        }
        // Nanoseconds are cut, not rounded.
        let t = UNIX_EPOCH + Duration::new(1, 999_999_999);
        assert_eq!(stamp(t), "1970-01-01T00:00:01.999999Z");
        let t = UNIX_EPOCH - Duration::new(0, 1);
        assert_eq!(stamp(t), "1969-12-31T23:59:59.999999Z");
        let t = UNIX_EPOCH - Duration::from_secs(1);
        assert_eq!(stamp(t), "1969-12-31T23:59:59.000000Z");
    }

    #[test]
    fn timestamps_outside_four_digit_years() {
        let secs = |y, m, d| at(y, m, d, 0, 0, 0, 0).timestamp();
        let from_secs = |s: i64| {
            if s >= 0 {
                UNIX_EPOCH + Duration::from_secs(s.unsigned_abs())
            } else {
                UNIX_EPOCH - Duration::from_secs(s.unsigned_abs())
            }
        };
        assert_eq!(
            stamp(from_secs(secs(0, 1, 1))),
            "0000-01-01T00:00:00.000000Z"
        );
        assert_eq!(
            stamp(from_secs(secs(0, 1, 1) - 1)),
            "-0001-12-31T23:59:59.000000Z"
        );
        assert_eq!(
            stamp(from_secs(secs(-1234, 5, 6) + 7 * 3600 + 8 * 60 + 9)),
            "-1234-05-06T07:08:09.000000Z"
        );
        assert_eq!(
            stamp(from_secs(secs(10_000, 1, 1))),
            "+10000-01-01T00:00:00.000000Z"
        );
    }

    #[test]
    fn a_real_line_carries_the_time_now() {
        let out = Capture::default();
        let sink = out.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || sink.clone())
            .fmt_fields(TextFields)
            .event_format(Text)
            .finish();
        let before = Utc::now();
        tracing::subscriber::with_default(subscriber, || tracing::info!("now"));
        let text = out.text();
        let (word, rest) = text.split_once(' ').unwrap();
        assert_eq!(rest, " INFO crudforge::logging::text::tests: now\n");
        let written = DateTime::parse_from_rfc3339(word)
            .unwrap()
            .with_timezone(&Utc);
        assert!(word.ends_with('Z') && word.len() == 27, "{word}");
        let gap = (written - before).num_milliseconds().abs();
        assert!(gap < 5_000, "{word} is {gap} ms from {before}");
    }

    #[test]
    fn escaping_and_debug_strings() {
        let mut out = String::new();
        write_escaped(
            &mut out,
            "a\x1bb\u{80}c\u{9f}\u{a0}\x7f\x07\x08\x0c\n",
            true,
        )
        .unwrap();
        assert_eq!(out, "a\\x1bb\\u{80}c\\u{9f}\u{a0}\\x7f\\x07\\x08\\x0c\n");
        let mut buf = String::new();
        write_debug_str(&mut Writer::new(&mut buf), NASTY).unwrap();
        assert_eq!(buf, format!("{NASTY:?}"));
    }
}

//! The server's clock in filters: the words `now` (a date-time field) and `today` (a date
//! field, or midnight UTC of today for a date-time field), which a `filter` expression and a
//! named filter accept as values. Read when the request is parsed, so a named filter such as
//! `due_date < now` means the time of each request.

use crate::condition::Arg;
use crate::field::Kind;
use chrono::Utc;

/// The value the word `word` stands for in a comparison with a field of `kind` (case
/// insensitive), read from the clock now; `None` when it is not a clock word for that kind.
pub(crate) fn value_of(word: &str, kind: Kind) -> Option<Arg> {
    let now = Utc::now();
    if word.eq_ignore_ascii_case("now") && kind == Kind::DateTime {
        return Some(Arg::DateTime(now));
    }
    if word.eq_ignore_ascii_case("today") {
        let day = now.date_naive();
        return match kind {
            Kind::Date => Some(Arg::Date(day)),
            Kind::DateTime => Some(Arg::DateTime(
                day.and_time(chrono::NaiveTime::MIN).and_utc(),
            )),
            _ => None,
        };
    }
    None
}

/// The clock word `word` spelled as the parser keeps it (`now` or `today`), when it is one
/// for a field of `kind`.
pub(crate) fn word(word: &str, kind: Kind) -> Option<&'static str> {
    value_of(word, kind)?;
    ["now", "today"]
        .into_iter()
        .find(|w| w.eq_ignore_ascii_case(word))
}

/// The `param` of a comparison with the clock made from a rule ([`word`]), by which the
/// description tells it from a literal date.
pub(crate) fn param_of(word: &str) -> String {
    format!("@{word}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_stand_for_the_clock_on_their_kinds_only() {
        let before = Utc::now();
        let Some(Arg::DateTime(t)) = value_of("NOW", Kind::DateTime) else {
            panic!("now on a date-time")
        };
        assert!(t >= before);
        assert_eq!(
            value_of("today", Kind::Date),
            Some(Arg::Date(Utc::now().date_naive()))
        );
        let Some(Arg::DateTime(midnight)) = value_of("today", Kind::DateTime) else {
            panic!("today on a date-time")
        };
        assert_eq!(midnight.time(), chrono::NaiveTime::MIN);
        assert_eq!(value_of("now", Kind::Date), None);
        assert_eq!(value_of("now", Kind::Text), None);
        assert_eq!(value_of("yesterday", Kind::DateTime), None);
    }
}

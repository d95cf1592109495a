//! Conditions: typed filter values, comparisons on one field, and the tree (AND, OR, NOT)
//! that selects rows. Rules, handlers and generated queries all speak this vocabulary.

use crate::field::Kind;
use chrono::{DateTime, NaiveDate, NaiveTime, Utc};

pub use crudforge_core::{operator, operators_for, Op, Operator, Value, OPERATORS};

pub(crate) mod nodes;

pub(crate) use nodes::{Link, Node, Reach, Related, WhereFn};

/// A typed filter value, checked against the field's kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// Text.
    Text(String),
    /// A whole number.
    Int(i64),
    /// A decimal number.
    Float(f64),
    /// `true` / `false`.
    Bool(bool),
    /// A UUID.
    Uuid(uuid::Uuid),
    /// A point in time.
    DateTime(DateTime<Utc>),
    /// A calendar date.
    Date(NaiveDate),
    /// The members of an `__in` list.
    List(Vec<Arg>),
}

/// One filter condition on one field.
#[derive(Debug, Clone, PartialEq)]
pub struct Cond {
    /// The field's name.
    pub field: &'static str,
    /// The comparison.
    pub op: Op,
    /// The value (for [`Op::IsNull`], a [`Arg::Bool`]).
    pub arg: Arg,
    /// The query parameter it came from, for error messages.
    pub param: String,
}

impl Cond {
    /// An equality condition.
    pub fn eq(field: &'static str, arg: Arg) -> Cond {
        Cond {
            field,
            op: Op::Eq,
            arg,
            param: field.to_owned(),
        }
    }
}

/// One sort key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort {
    /// The field.
    pub field: &'static str,
    /// Descending when true.
    pub desc: bool,
}

/// Conditions combined into a tree. Every operation that selects rows takes one, through
/// [`Conditions`] (so a plain `&[Cond]`, combined with AND, works too).
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// All of these (an empty list matches every row).
    All(Vec<Condition>),
    /// At least one of these (an empty list matches no row).
    Any(Vec<Condition>),
    /// Not this.
    Not(Box<Condition>),
    /// One comparison.
    Is(Cond),
    /// A condition on the rows of a related resource (`habitat.name=Savanna`), which the
    /// handler completes with that resource's read scope; only the list parameters' parsers
    /// write it.
    #[doc(hidden)]
    Related(Related),
}

/// `s` as a static string: the names of related fields (`habitat.name`), which are few (each
/// relation's fields, checked before they get here), kept once for the process.
pub(crate) fn intern(s: &str) -> &'static str {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(found) = names.get(s) {
        return found;
    }
    let leaked: &'static str = Box::leak(s.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

impl Condition {
    /// The condition that matches every row.
    pub const fn always() -> Condition {
        Condition::All(Vec::new())
    }

    /// This condition and `other`.
    #[must_use]
    pub fn and(self, other: impl Into<Condition>) -> Condition {
        match (self, other.into()) {
            (Condition::All(mut a), Condition::All(b)) => {
                a.extend(b);
                Condition::All(a)
            }
            (Condition::All(mut a), b) => {
                a.push(b);
                Condition::All(a)
            }
            (a, b) => Condition::All(vec![a, b]),
        }
    }

    /// Whether the condition matches every row (an empty AND).
    pub(crate) fn is_always(&self) -> bool {
        matches!(self, Condition::All(v) if v.iter().all(Condition::is_always))
    }
}

impl From<Cond> for Condition {
    fn from(c: Cond) -> Self {
        Condition::Is(c)
    }
}

impl From<Vec<Cond>> for Condition {
    fn from(v: Vec<Cond>) -> Self {
        Condition::All(v.into_iter().map(Condition::Is).collect())
    }
}

/// Anything that selects rows: a [`Condition`] tree, or comparisons combined with AND
/// (`&[Cond]`, `Vec<Cond>`, `[Cond; N]`, one `Cond`).
pub trait Conditions {
    /// The conditions as generated queries walk them.
    #[doc(hidden)]
    fn node(&self) -> Node<'_>;
}

impl Conditions for [Cond] {
    fn node(&self) -> Node<'_> {
        Node::All(self)
    }
}

impl<const N: usize> Conditions for [Cond; N] {
    fn node(&self) -> Node<'_> {
        Node::All(self)
    }
}

impl Conditions for Vec<Cond> {
    fn node(&self) -> Node<'_> {
        Node::All(self)
    }
}

impl Conditions for Cond {
    fn node(&self) -> Node<'_> {
        Node::All(std::slice::from_ref(self))
    }
}

impl Conditions for Condition {
    fn node(&self) -> Node<'_> {
        Node::Tree(self)
    }
}

/// `__from` / `__to` on dates and datetimes: a date means the whole day (UTC).
pub(crate) fn parse_bound(kind: Kind, value: &str, upper: bool) -> Result<(Op, Arg), String> {
    match kind {
        Kind::DateTime => {
            if let Ok(d) = NaiveDate::parse_from_str(value, "%Y-%m-%d") {
                let start = d.and_time(NaiveTime::MIN).and_utc();
                if upper {
                    let next = start + chrono::Duration::days(1);
                    Ok((Op::Lt, Arg::DateTime(next)))
                } else {
                    Ok((Op::Gte, Arg::DateTime(start)))
                }
            } else {
                let t = parse_datetime(value)?;
                Ok((if upper { Op::Lte } else { Op::Gte }, Arg::DateTime(t)))
            }
        }
        Kind::Date => {
            let d = parse_date(value)?;
            Ok((if upper { Op::Lte } else { Op::Gte }, Arg::Date(d)))
        }
        _ => Err("`__from` and `__to` apply to dates".to_owned()),
    }
}

pub(crate) fn parse_bool(v: &str) -> Result<bool, String> {
    match v {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!("expected true or false, got {v:?}")),
    }
}

fn parse_date(v: &str) -> Result<NaiveDate, String> {
    NaiveDate::parse_from_str(v, "%Y-%m-%d")
        .map_err(|_| format!("expected a date as YYYY-MM-DD, got {v:?}"))
}

fn parse_datetime(v: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(v) {
        return Ok(t.with_timezone(&Utc));
    }
    if let Ok(d) = NaiveDate::parse_from_str(v, "%Y-%m-%d") {
        return Ok(d.and_time(NaiveTime::MIN).and_utc());
    }
    Err(format!(
        "expected a date (YYYY-MM-DD) or an RFC 3339 date-time, got {v:?}"
    ))
}

/// Text as a condition value. The NUL character is refused: PostgreSQL cannot store or
/// compare it, and refusing it everywhere keeps the backends alike.
pub(crate) fn text_arg(v: &str) -> Result<Arg, String> {
    if v.contains('\0') {
        return Err("text cannot contain the NUL character (%00)".to_owned());
    }
    Ok(Arg::Text(v.to_owned()))
}

/// Parses a value for a field of `kind`.
///
/// # Errors
///
/// A message saying what form was expected.
pub(crate) fn parse_arg(kind: Kind, v: &str) -> Result<Arg, String> {
    match kind {
        Kind::Text | Kind::Other => text_arg(v),
        Kind::Integer => v
            .parse::<i64>()
            .map(Arg::Int)
            .map_err(|_| format!("expected a whole number, got {v:?}")),
        Kind::Float => v
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(Arg::Float)
            .ok_or_else(|| format!("expected a number, got {v:?}")),
        Kind::Bool => parse_bool(v).map(Arg::Bool),
        Kind::Uuid => uuid::Uuid::parse_str(v)
            .map(Arg::Uuid)
            .map_err(|_| format!("expected a UUID, got {v:?}")),
        Kind::DateTime => parse_datetime(v).map(Arg::DateTime),
        Kind::Date => parse_date(v).map(Arg::Date),
        Kind::Json => Err("JSON fields cannot be filtered".to_owned()),
    }
}

/// Converts a checked filter value into a field's Rust type.
///
/// Implemented for every type a resource field can be filtered by; implement it (and
/// [`IntoBind`](crate::crud::IntoBind)) for your own field types, or mark the field
/// `#[resource(filter = false)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used as a filter value",
    label = "this field is filterable, so `{Self}` must be parsed from query strings",
    note = "add `#[resource(filter = false)]` to the field, or implement `crudforge::condition::FromArg` for `{Self}`"
)]
pub trait FromArg: Sized {
    /// The conversion.
    ///
    /// # Errors
    ///
    /// A message for a value out of the type's range.
    fn from_arg(arg: &Arg) -> Result<Self, String>;
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl FromArg for $t {
            fn from_arg(arg: &Arg) -> Result<Self, String> {
                match arg {
                    Arg::Int(i) => <$t>::try_from(*i).map_err(|_| format!("{i} is out of range")),
                    other => Err(format!("expected a whole number, got {other:?}")),
                }
            }
        }
    )*};
}
from_int!(i16, i32, i64);

impl FromArg for f64 {
    fn from_arg(arg: &Arg) -> Result<Self, String> {
        match arg {
            Arg::Float(f) => Ok(*f),
            // Whole numbers are exact in f64 up to 2^53; beyond that, rounding is acceptable
            // for a filter bound.
            #[allow(clippy::cast_precision_loss)]
            Arg::Int(i) => Ok(*i as f64),
            other => Err(format!("expected a number, got {other:?}")),
        }
    }
}

impl FromArg for f32 {
    fn from_arg(arg: &Arg) -> Result<Self, String> {
        #[allow(clippy::cast_possible_truncation)]
        f64::from_arg(arg).map(|f| f as f32)
    }
}

impl FromArg for String {
    fn from_arg(arg: &Arg) -> Result<Self, String> {
        match arg {
            Arg::Text(s) => Ok(s.clone()),
            other => Err(format!("expected text, got {other:?}")),
        }
    }
}

impl FromArg for bool {
    fn from_arg(arg: &Arg) -> Result<Self, String> {
        match arg {
            Arg::Bool(b) => Ok(*b),
            other => Err(format!("expected true or false, got {other:?}")),
        }
    }
}

impl FromArg for uuid::Uuid {
    fn from_arg(arg: &Arg) -> Result<Self, String> {
        match arg {
            Arg::Uuid(u) => Ok(*u),
            other => Err(format!("expected a UUID, got {other:?}")),
        }
    }
}

impl FromArg for DateTime<Utc> {
    fn from_arg(arg: &Arg) -> Result<Self, String> {
        match arg {
            Arg::DateTime(t) => Ok(*t),
            Arg::Date(d) => Ok(d.and_time(NaiveTime::MIN).and_utc()),
            other => Err(format!("expected a date-time, got {other:?}")),
        }
    }
}

impl FromArg for NaiveDate {
    fn from_arg(arg: &Arg) -> Result<Self, String> {
        match arg {
            Arg::Date(d) => Ok(*d),
            Arg::DateTime(t) => Ok(t.date_naive()),
            other => Err(format!("expected a date, got {other:?}")),
        }
    }
}

/// The members of an `__in` list, converted.
///
/// # Errors
///
/// A member out of range.
pub(crate) fn list_of<T: FromArg>(arg: &Arg) -> Result<Vec<T>, String> {
    match arg {
        Arg::List(items) => items.iter().map(T::from_arg).collect(),
        one => Ok(vec![T::from_arg(one)?]),
    }
}

//! The values a write sends, as member rules read them (`@new.member`): a sent JSON value as a
//! member's typed value, and a comparison of it with a rule's value, judged in the process.

use crate::condition::{parse_arg, Arg, Op};
use crate::field::Kind;
use serde_json::{Map, Value};
use std::cmp::Ordering;

/// The members a write sends, as JSON (`None` outside member rules).
pub(crate) type Sent<'a> = Option<&'a Map<String, Value>>;

/// A sent JSON value as a value of a member of `kind`; `None` for null and for a value of
/// another type (which the body's decoding refuses with 422).
pub(crate) fn sent_arg(kind: Kind, v: &Value) -> Option<Arg> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => return None,
    };
    parse_arg(kind, &text).ok()
}

/// Whether the sent value `v` of a member of `kind` satisfies `op arg`; null satisfies only
/// `is null`, as in SQL.
pub(crate) fn sent_holds(kind: Kind, v: &Value, op: Op, arg: &Arg) -> bool {
    if op == Op::IsNull {
        return *arg == Arg::Bool(v.is_null());
    }
    let Some(a) = sent_arg(kind, v) else {
        return false;
    };
    match (op, arg) {
        (Op::In, Arg::List(items)) => items.contains(&a),
        (Op::Eq, b) => a == *b,
        (Op::Ne, b) => a != *b,
        (Op::Gt, b) => order(&a, b) == Some(Ordering::Greater),
        (Op::Gte, b) => order(&a, b).is_some_and(Ordering::is_ge),
        (Op::Lt, b) => order(&a, b) == Some(Ordering::Less),
        (Op::Lte, b) => order(&a, b).is_some_and(Ordering::is_le),
        _ => false,
    }
}

/// How two values of an ordered kind compare (numbers and dates: the parser orders no other
/// sent value).
fn order(a: &Arg, b: &Arg) -> Option<Ordering> {
    match (a, b) {
        (Arg::Int(x), Arg::Int(y)) => Some(x.cmp(y)),
        (Arg::Float(x), Arg::Float(y)) => x.partial_cmp(y),
        (Arg::Date(x), Arg::Date(y)) => Some(x.cmp(y)),
        (Arg::DateTime(x), Arg::DateTime(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

//! Cursor pagination: the opaque, signed `next_cursor` of an INDEX page and the keyset
//! condition that selects the rows after it.
//!
//! A cursor is `base64url(payload) "." base64url(HMAC-SHA256(key, resource, payload))`, where
//! the payload is JSON holding the sort it was made for, the number of the page it opens, and
//! the last row's sort values and id. The key is the API's signing key, so a client can
//! neither forge nor edit one; a cursor of another resource or another sort is refused.
//!
//! The rows after a position are selected with a keyset condition built from the ordinary
//! [`Condition`] tree: for sort keys `k1..kn` (then `id`, always ascending), a row comes later
//! when it equals the position on `k1..k(i-1)` and is after it on `ki`, for some `i`. Nullable
//! keys follow the generated `ORDER BY`: nulls last ascending and first descending.

use crate::condition::{parse_arg, Arg, Cond, Condition, Op, Sort};
use crate::error::Error;
use crate::field::FieldInfo;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// The name of the parameter, as errors name it.
pub(crate) const PARAM: &str = "cursor";

/// Where a cursor points: after the row with these sort values and id.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Position {
    /// The number of the page the cursor opens.
    pub page: u32,
    /// The last row's value of each sort key (`None`: null), in [`keys`] order.
    pub values: Vec<Option<Arg>>,
    /// The last row's id.
    pub id: Arg,
}

#[derive(Serialize, Deserialize)]
struct Payload {
    /// Sort, as `sort` would write it.
    s: String,
    /// Page number.
    p: u32,
    /// Sort values, as text.
    k: Vec<Option<String>>,
    /// Id, as text.
    i: String,
}

/// The sort keys a list is ordered by before `id`: `sort`, or `created_at` when it is empty.
pub(crate) fn keys(sort: &[Sort]) -> Vec<Sort> {
    if sort.is_empty() {
        vec![Sort {
            field: "created_at",
            desc: false,
        }]
    } else {
        sort.to_vec()
    }
}

fn spec(sort: &[Sort]) -> String {
    keys(sort)
        .iter()
        .map(|s| format!("{}{}", if s.desc { "-" } else { "" }, s.field))
        .collect::<Vec<_>>()
        .join(",")
}

fn mac(key: &[u8], resource: &str, payload: &str) -> Hmac<Sha256> {
    // HMAC takes keys of any length; `new_from_slice` cannot fail for it.
    let mut m =
        <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC accepts keys of any length");
    m.update(b"crudforge-cursor\0");
    m.update(resource.as_bytes());
    m.update(b"\0");
    m.update(payload.as_bytes());
    m
}

/// The text form of a sort value in a cursor; [`parse_arg`] reads it back.
fn text(arg: &Arg) -> String {
    match arg {
        Arg::Text(s) => s.clone(),
        Arg::Int(i) => i.to_string(),
        Arg::Float(f) => f.to_string(),
        Arg::Bool(b) => b.to_string(),
        Arg::Uuid(u) => u.to_string(),
        Arg::DateTime(t) => t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
        Arg::Date(d) => d.to_string(),
        Arg::List(items) => items.iter().map(text).collect::<Vec<_>>().join(","),
    }
}

/// The cursor of the page after the one that ends at `position`.
pub(crate) fn encode(key: &[u8], resource: &str, sort: &[Sort], position: &Position) -> String {
    let payload = Payload {
        s: spec(sort),
        p: position.page,
        k: position
            .values
            .iter()
            .map(|v| v.as_ref().map(text))
            .collect(),
        i: text(&position.id),
    };
    let json = serde_json::to_string(&payload).unwrap_or_default();
    let body = URL_SAFE_NO_PAD.encode(json);
    let tag = URL_SAFE_NO_PAD.encode(mac(key, resource, &body).finalize().into_bytes());
    format!("{body}.{tag}")
}

fn bad(why: &str) -> Error {
    Error::bad_param(PARAM, why)
}

/// Reads a cursor made by [`encode`] for the same resource and sort.
///
/// # Errors
///
/// A 400 naming `cursor`: malformed, signed with another key or for another resource (edited
/// or forged), or made for another sort.
pub(crate) fn decode(
    key: &[u8],
    resource: &str,
    fields: &'static [FieldInfo],
    id_field: &str,
    sort: &[Sort],
    token: &str,
) -> Result<Position, Error> {
    let tampered = "not a cursor this API issued (was it edited?)";
    let (body, tag) = token.split_once('.').ok_or_else(|| bad(tampered))?;
    let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| bad(tampered))?;
    mac(key, resource, body)
        .verify_slice(&tag)
        .map_err(|_| bad(tampered))?;
    let json = URL_SAFE_NO_PAD.decode(body).map_err(|_| bad(tampered))?;
    let payload: Payload = serde_json::from_slice(&json).map_err(|_| bad(tampered))?;
    if payload.s != spec(sort) {
        return Err(bad(&format!(
            "the cursor belongs to the sort `{}`; send the same `sort` as the request that returned it",
            payload.s
        )));
    }
    let keys = keys(sort);
    if payload.k.len() != keys.len() {
        return Err(bad(tampered));
    }
    let field = |name: &str| {
        fields
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| bad("the sort has no cursor"))
    };
    let mut values = Vec::with_capacity(keys.len());
    for (k, v) in keys.iter().zip(&payload.k) {
        let f = field(k.field)?;
        values.push(match v {
            None if f.nullable => None,
            None => return Err(bad(tampered)),
            Some(s) => Some(parse_arg(f.kind, s).map_err(|_| bad(tampered))?),
        });
    }
    let id = parse_arg(field(id_field)?.kind, &payload.i).map_err(|_| bad(tampered))?;
    Ok(Position {
        page: payload.p,
        values,
        id,
    })
}

fn cmp(field: &'static str, op: Op, arg: Arg) -> Condition {
    Condition::Is(Cond {
        field,
        op,
        arg,
        param: PARAM.to_owned(),
    })
}

fn is_null(field: &'static str, null: bool) -> Condition {
    cmp(field, Op::IsNull, Arg::Bool(null))
}

/// The rows strictly after `position` in the order of `sort` (then `id` ascending).
pub(crate) fn keyset(
    fields: &[FieldInfo],
    sort: &[Sort],
    id_field: &'static str,
    position: &Position,
) -> Condition {
    let keys = keys(sort);
    let nullable = |name: &str| fields.iter().any(|f| f.name == name && f.nullable);
    let mut any = Vec::new();
    // Equal on the keys before the one being compared.
    let mut prefix: Vec<Condition> = Vec::new();
    for (k, v) in keys.iter().zip(&position.values) {
        let after = match (v, k.desc) {
            // Ascending, nulls last: a larger value, or null.
            (Some(v), false) if nullable(k.field) => Some(Condition::Any(vec![
                cmp(k.field, Op::Gt, v.clone()),
                is_null(k.field, true),
            ])),
            (Some(v), false) => Some(cmp(k.field, Op::Gt, v.clone())),
            // Descending, nulls first: a smaller value (never null).
            (Some(v), true) => Some(cmp(k.field, Op::Lt, v.clone())),
            // After null ascending: nothing. After null descending: every value.
            (None, false) => None,
            (None, true) => Some(is_null(k.field, false)),
        };
        if let Some(after) = after {
            any.push(Condition::All(
                prefix.iter().cloned().chain([after]).collect(),
            ));
        }
        prefix.push(match v {
            Some(v) => cmp(k.field, Op::Eq, v.clone()),
            None => is_null(k.field, true),
        });
    }
    prefix.push(cmp(id_field, Op::Gt, position.id.clone()));
    any.push(Condition::All(prefix));
    // A redundant range on the first key (`k1 >= v1`, or `<=` descending) lets an index on the
    // sort columns start at the position instead of filtering every row before it.
    let bound = match (keys.first(), position.values.first()) {
        (Some(k), Some(Some(v))) if !nullable(k.field) => Some(cmp(
            k.field,
            if k.desc { Op::Lte } else { Op::Gte },
            v.clone(),
        )),
        _ => None,
    };
    match bound {
        Some(b) => Condition::All(vec![b, Condition::Any(any)]),
        None => Condition::Any(any),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::Kind;

    static FIELDS: &[FieldInfo] = &[
        FieldInfo::new("id", Kind::Uuid),
        FieldInfo::new("created_at", Kind::DateTime),
        FieldInfo::new("level", Kind::Integer),
        FieldInfo::new("nick", Kind::Text).nullable(),
    ];

    fn position() -> Position {
        Position {
            page: 3,
            values: vec![Some(Arg::Int(7)), None],
            id: Arg::Uuid(uuid::Uuid::nil()),
        }
    }

    fn sort() -> Vec<Sort> {
        vec![
            Sort {
                field: "level",
                desc: true,
            },
            Sort {
                field: "nick",
                desc: false,
            },
        ]
    }

    #[test]
    fn round_trip_and_tamper() {
        let t = encode(b"k", "Critter", &sort(), &position());
        assert_eq!(
            decode(b"k", "Critter", FIELDS, "id", &sort(), &t).unwrap(),
            position()
        );
        let field = |e: Error| match e {
            Error::BadRequest { field, detail } => (field.unwrap_or_default(), detail),
            other => panic!("{other:?}"),
        };
        for bad in [
            decode(b"other", "Critter", FIELDS, "id", &sort(), &t),
            decode(b"k", "Other", FIELDS, "id", &sort(), &t),
            decode(b"k", "Critter", FIELDS, "id", &sort(), &t.replace('.', "")),
            decode(b"k", "Critter", FIELDS, "id", &sort(), &format!("x{t}")),
            decode(b"k", "Critter", FIELDS, "id", &sort(), "ü.ü"),
        ] {
            assert_eq!(field(bad.unwrap_err()).0, "cursor");
        }
        let (_, d) = field(decode(b"k", "Critter", FIELDS, "id", &[], &t).unwrap_err());
        assert!(d.contains("belongs to the sort `-level,nick`"), "{d}");
    }

    #[test]
    fn keyset_follows_the_order() {
        let k = keyset(FIELDS, &sort(), "id", &position());
        // level <= 7 and: level < 7, or level = 7 and nick (null, ascending: nothing after)
        // ..., or ties on both and a larger id.
        let Condition::All(parts) = k else { panic!() };
        assert_eq!(parts[0], cmp("level", Op::Lte, Arg::Int(7)));
        let Condition::Any(branches) = &parts[1] else {
            panic!()
        };
        assert_eq!(branches.len(), 2);
        assert_eq!(
            branches[0],
            Condition::All(vec![cmp("level", Op::Lt, Arg::Int(7))])
        );
        assert_eq!(
            branches[1],
            Condition::All(vec![
                cmp("level", Op::Eq, Arg::Int(7)),
                is_null("nick", true),
                cmp("id", Op::Gt, Arg::Uuid(uuid::Uuid::nil())),
            ])
        );
    }
}

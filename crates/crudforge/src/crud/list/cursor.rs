//! Cursor pagination: the opaque, encrypted `next_cursor` of an INDEX page and the keyset
//! condition that selects the rows after it.
//!
//! A cursor is `base64url(nonce || XChaCha20-Poly1305(key, nonce, payload, resource))`: the
//! payload is JSON holding the sort it was made for, the number of the page it opens, and the
//! last row's sort values and id, padded with spaces to a multiple of [`PAD`] bytes so its
//! length hardly tells how long the values are. The nonce is 24 random bytes; the key is
//! derived from the API's signing key with HKDF-SHA256 under a label of its own, so it is not
//! the key that signs tokens; the resource's name is the associated data. A cursor therefore
//! shows nothing of the values it carries (a sort by a member only administrators read puts
//! that member's value in the cursor of an administrator's page), and a client can neither
//! forge nor edit one, nor move it to another resource; a cursor made for another sort is
//! refused after it is opened.
//!
//! The rows after a position are selected with a keyset condition built from the ordinary
//! [`Condition`] tree: for sort keys `k1..kn` (then `id`, always ascending), a row comes later
//! when it equals the position on `k1..k(i-1)` and is after it on `ki`, for some `i`. Nullable
//! keys follow the generated `ORDER BY`: nulls last ascending and first descending.

use crate::condition::{parse_arg, Arg, Cond, Condition, Op, Sort};
use crate::crud::search::RANK;
use crate::error::Error;
use crate::field::FieldInfo;
use serde::{Deserialize, Serialize};

/// The name of the parameter, as errors name it.
pub(crate) const PARAM: &str = "cursor";

/// The payload is padded to a multiple of this many bytes before it is encrypted.
const PAD: usize = 64;

/// What the cursor key is derived under (HKDF's `info`): no other key of the API uses it.
const KEY_LABEL: &[u8] = b"crudforge cursor encryption key v1";

/// What every cursor's associated data starts with, before the resource's name.
const AD_LABEL: &[u8] = b"crudforge-cursor\0";

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

/// The cipher of the cursors of an API whose signing key is `key` (HKDF-SHA256 of it under
/// [`KEY_LABEL`], kept by [`crate::seal`]).
#[cfg(test)]
fn cipher(key: &[u8]) -> Result<chacha20poly1305::XChaCha20Poly1305, Error> {
    crate::seal::cipher(key, KEY_LABEL)
}

/// The associated data of `resource`'s cursors.
fn associated(resource: &str) -> Vec<u8> {
    [AD_LABEL, resource.as_bytes()].concat()
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

/// The cursor of the page after the one that ends at `position`, for the API whose signing
/// key is `key`.
///
/// # Errors
///
/// 500 when no random nonce can be had, or the payload cannot be written or encrypted.
pub(crate) fn encode(
    key: &[u8],
    resource: &str,
    sort: &[Sort],
    position: &Position,
) -> Result<String, Error> {
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
    let mut json = serde_json::to_vec(&payload).map_err(|e| Error::Internal(e.to_string()))?;
    // JSON readers skip trailing white space.
    json.resize(json.len().div_ceil(PAD) * PAD, b' ');
    crate::seal::seal(key, KEY_LABEL, &associated(resource), &json)
}

fn bad(why: &str) -> Error {
    Error::bad_param(PARAM, why)
}

/// Reads a cursor made by [`encode`] for the same resource and sort.
///
/// # Errors
///
/// A 400 naming `cursor`: malformed, truncated, edited or forged (it does not open with the
/// key derived from `key` and the name `resource`), or made for another sort; 500 when the key cannot
/// be derived.
pub(crate) fn decode(
    key: &[u8],
    resource: &str,
    fields: &'static [FieldInfo],
    id_field: &str,
    sort: &[Sort],
    token: &str,
) -> Result<Position, Error> {
    let tampered = "not a cursor this API issued (was it edited?)";
    let json = crate::seal::open(key, KEY_LABEL, &associated(resource), token)?
        .ok_or_else(|| bad(tampered))?;
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
        if k.field == RANK {
            // A place in the ranking.
            let at = v.as_deref().and_then(|s| s.parse::<i64>().ok());
            values.push(Some(Arg::Int(
                at.filter(|n| *n >= 0).ok_or_else(|| bad(tampered))?,
            )));
            continue;
        }
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

/// The rows a ranked list's cursor skips (its place in the ranking); `None` for another sort.
pub(crate) fn ranked_offset(sort: &[Sort], at: &Position) -> Option<i64> {
    if !crate::crud::search::ranked(sort) {
        return None;
    }
    match at.values.first() {
        Some(Some(Arg::Int(n))) => Some(*n),
        _ => None,
    }
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
    use crate::seal::NONCE;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    use chacha20poly1305::aead::{Aead, KeyInit, Payload as Sealed};
    use chacha20poly1305::{XChaCha20Poly1305, XNonce};

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

    fn field(e: Error) -> (String, String) {
        match e {
            Error::BadRequest { field, detail } => (field.unwrap_or_default(), detail.to_string()),
            other => panic!("{other:?}"),
        }
    }

    fn open(key: &[u8], resource: &str, sort: &[Sort], t: &str) -> Result<Position, Error> {
        decode(key, resource, FIELDS, "id", sort, t)
    }

    #[test]
    fn round_trip_and_tamper() {
        let t = encode(b"k", "Critter", &sort(), &position()).unwrap();
        assert_eq!(open(b"k", "Critter", &sort(), &t).unwrap(), position());
        let raw = URL_SAFE_NO_PAD.decode(&t).unwrap();
        let mut bad = vec![
            open(b"other", "Critter", &sort(), &t),
            open(b"k", "Other", &sort(), &t),
            open(b"k", "Critter", &sort(), &t[..t.len() - 1]),
            open(b"k", "Critter", &sort(), &t[..NONCE]),
            open(b"k", "Critter", &sort(), &format!("x{t}")),
            open(b"k", "Critter", &sort(), &format!("{t}AAAA")),
            open(b"k", "Critter", &sort(), &format!("{t}=")),
            open(b"k", "Critter", &sort(), "ü.ü"),
            open(b"k", "Critter", &sort(), ""),
            open(b"k", "Critter", &sort(), "forged.AAAA"),
        ];
        // Any one bit changed, in the nonce, the ciphertext or the tag.
        for i in 0..raw.len() {
            let mut edited = raw.clone();
            edited[i] ^= 1;
            bad.push(open(
                b"k",
                "Critter",
                &sort(),
                &URL_SAFE_NO_PAD.encode(edited),
            ));
        }
        for b in bad {
            let (f, d) = field(b.unwrap_err());
            assert_eq!(f, "cursor");
            assert!(d.contains("not a cursor this API issued"), "{d}");
        }
        let (f, d) = field(open(b"k", "Critter", &[], &t).unwrap_err());
        assert_eq!(f, "cursor");
        assert!(d.contains("belongs to the sort `-level,nick`"), "{d}");
    }

    #[test]
    fn a_cursor_shows_nothing_of_what_it_carries() {
        let secret = Position {
            page: 2,
            values: vec![
                Some(Arg::Int(987_654_321)),
                Some(Arg::Text("salary-note".into())),
            ],
            id: Arg::Uuid(uuid::Uuid::nil()),
        };
        let t = encode(b"k", "Critter", &sort(), &secret).unwrap();
        let raw = URL_SAFE_NO_PAD.decode(&t).unwrap();
        let shown = String::from_utf8_lossy(&raw);
        // (Strings long enough that random bytes never spell them.)
        for hidden in ["987654321", "salary-note", "-level,nick", "00000000-0000"] {
            assert!(
                !t.contains(hidden) && !shown.contains(hidden),
                "{hidden} in {t}"
            );
        }
        // Each cursor has a nonce of its own: the same position never gives the same text.
        assert_ne!(t, encode(b"k", "Critter", &sort(), &secret).unwrap());
        // Values of different lengths pad to the same length.
        let short = Position {
            values: vec![Some(Arg::Int(1)), Some(Arg::Text("n".into()))],
            ..secret.clone()
        };
        let s = encode(b"k", "Critter", &sort(), &short).unwrap();
        assert_eq!(s.len(), t.len());
        assert_eq!(open(b"k", "Critter", &sort(), &s).unwrap(), short);
    }

    #[test]
    fn the_cursor_key_is_not_the_signing_key() {
        // A cursor sealed with the signing key itself (as a JWT is signed) does not open.
        let key = b"0123456789abcdef0123456789abcdef";
        let nonce = [7u8; NONCE];
        let json = br#"{"s":"-level,nick","p":3,"k":["7",null],"i":"00000000-0000-0000-0000-000000000000"}"#;
        let raw = XChaCha20Poly1305::new_from_slice(key)
            .unwrap()
            .encrypt(
                XNonce::from_slice(&nonce),
                Sealed {
                    msg: json,
                    aad: &associated("Critter"),
                },
            )
            .unwrap();
        let t = URL_SAFE_NO_PAD.encode([&nonce[..], &raw].concat());
        assert_eq!(
            field(open(key, "Critter", &sort(), &t).unwrap_err()).0,
            "cursor"
        );
        // The same payload sealed with the derived key opens: the format is what it says.
        let raw = cipher(key)
            .unwrap()
            .encrypt(
                XNonce::from_slice(&nonce),
                Sealed {
                    msg: json,
                    aad: &associated("Critter"),
                },
            )
            .unwrap();
        let t = URL_SAFE_NO_PAD.encode([&nonce[..], &raw].concat());
        assert_eq!(open(key, "Critter", &sort(), &t).unwrap(), position());
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

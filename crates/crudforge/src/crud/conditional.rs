//! Conditional requests (RFC 9110 sections 8.8.3 and 13): strong entity tags of items and the
//! `If-Match` / `If-None-Match` preconditions of GET, PATCH and DELETE.
//!
//! An item's tag is the SHA-256 of its generated response representation (the JSON of
//! `R::Response`, which includes `updated_at`), so it changes whenever a returned field or the
//! row's `updated_at` changes, and it is the same whichever operation returns the item.

use crate::error::Error;
use actix_web::http::header::{self, HeaderMap, HeaderName};
use sha2::{Digest, Sha256};

/// The strong entity tag of a representation (the bytes of a JSON body), as the generated
/// operations send it in `ETag`: the first 128 bits of its SHA-256, in hex, quoted. For a
/// hand-written handler that answers with an item and so should send its tag too.
pub fn entity_tag(representation: &[u8]) -> String {
    tag_of(representation)
}

/// The strong entity tag of a representation: the first 128 bits of its SHA-256, in hex,
/// quoted.
pub(crate) fn tag_of(representation: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(representation);
    let mut out = String::with_capacity(34);
    out.push('"');
    for b in &digest[..16] {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out.push('"');
    out
}

/// One entity tag of a precondition header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EntityTag {
    /// `W/` was given.
    pub weak: bool,
    /// The opaque tag with its quotes (`"abc"`).
    pub opaque: String,
}

/// A parsed `If-Match` or `If-None-Match` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Precondition {
    /// `*`: any current representation.
    Any,
    /// A list of tags.
    Tags(Vec<EntityTag>),
}

impl Precondition {
    /// `If-Match` evaluation: strong comparison, so a weak tag never matches; `*` matches any
    /// existing item.
    pub(crate) fn matches_strong(&self, current: &str) -> bool {
        match self {
            Precondition::Any => true,
            Precondition::Tags(tags) => tags.iter().any(|t| !t.weak && t.opaque == current),
        }
    }

    /// `If-None-Match` evaluation: weak comparison (the `W/` prefix is ignored); `*` matches
    /// any existing item.
    pub(crate) fn matches_weak(&self, current: &str) -> bool {
        match self {
            Precondition::Any => true,
            Precondition::Tags(tags) => tags.iter().any(|t| t.opaque == current),
        }
    }
}

/// Parses every line of header `name` (`*` or a comma-separated list of entity tags);
/// `None` when the request does not carry it.
///
/// # Errors
///
/// A 400 naming the header when a value is not `*` or a list of entity tags.
pub(crate) fn parse(headers: &HeaderMap, name: &HeaderName) -> Result<Option<Precondition>, Error> {
    let mut tags = Vec::new();
    let mut any = false;
    let mut seen = false;
    for value in headers.get_all(name) {
        seen = true;
        let text = value
            .to_str()
            .map_err(|_| bad(name, "not a visible ASCII value"))?;
        parse_value(text, &mut tags, &mut any).map_err(|why| bad(name, why))?;
    }
    if !seen {
        return Ok(None);
    }
    if any {
        if !tags.is_empty() {
            return Err(bad(name, "`*` cannot be combined with entity tags"));
        }
        return Ok(Some(Precondition::Any));
    }
    Ok(Some(Precondition::Tags(tags)))
}

/// A precondition written as a header value would be (`*`, or entity tags separated by
/// commas), as a batch item's `if_match` member carries it.
///
/// # Errors
///
/// Why the text is not `*` or a list of entity tags.
pub(crate) fn parse_text(text: &str) -> Result<Precondition, &'static str> {
    let mut tags = Vec::new();
    let mut any = false;
    parse_value(text, &mut tags, &mut any)?;
    match (any, tags.is_empty()) {
        (true, _) => Ok(Precondition::Any),
        (false, false) => Ok(Precondition::Tags(tags)),
        (false, true) => Err("expected `*` or a list of entity tags such as \"abc\""),
    }
}

fn bad(name: &HeaderName, why: &str) -> Error {
    let display = match name.as_str() {
        "if-match" => "If-Match",
        "if-none-match" => "If-None-Match",
        other => other,
    };
    Error::bad_param(display, why)
}

/// Parses one header line into `tags` (or sets `any` for `*`).
fn parse_value(text: &str, tags: &mut Vec<EntityTag>, any: &mut bool) -> Result<(), &'static str> {
    let mut rest = text.trim_matches([' ', '\t']);
    if rest == "*" {
        *any = true;
        return Ok(());
    }
    // An empty value is an empty list (RFC 9110's `#entity-tag`): `If-Match` then matches
    // nothing (412), `If-None-Match` every state (the request goes on).
    loop {
        rest = rest.trim_start_matches([' ', '\t']);
        // Empty list elements (`"a", , "b"`) are allowed and skipped.
        if let Some(r) = rest.strip_prefix(',') {
            rest = r;
            continue;
        }
        if rest.is_empty() {
            break;
        }
        let (weak, r) = match rest.strip_prefix("W/") {
            Some(r) => (true, r),
            None => (false, rest),
        };
        let r = r
            .strip_prefix('"')
            .ok_or("an entity tag must be a quoted string such as \"abc\" or W/\"abc\"")?;
        let end = r
            .find('"')
            .ok_or("an entity tag is missing its closing quote")?;
        let inner = &r[..end];
        // etagc = %x21 / %x23-7E / obs-text
        if inner.bytes().any(|b| b == b'"' || b < 0x21 || b == 0x7f) {
            return Err("an entity tag contains a character it may not");
        }
        tags.push(EntityTag {
            weak,
            opaque: format!("\"{inner}\""),
        });
        rest = r[end + 1..].trim_start_matches([' ', '\t']);
        match rest.strip_prefix(',') {
            Some(r) => rest = r,
            None if rest.is_empty() => break,
            None => return Err("entity tags must be separated by commas"),
        }
    }
    Ok(())
}

/// The `If-Match` precondition of a request.
///
/// # Errors
///
/// A 400 naming the header when it is malformed.
pub(crate) fn if_match(headers: &HeaderMap) -> Result<Option<Precondition>, Error> {
    parse(headers, &header::IF_MATCH)
}

/// The `If-None-Match` precondition of a request.
///
/// # Errors
///
/// A 400 naming the header when it is malformed.
pub(crate) fn if_none_match(headers: &HeaderMap) -> Result<Option<Precondition>, Error> {
    parse(headers, &header::IF_NONE_MATCH)
}

/// Checks `If-Match` against the current tag of an item: 412 when it does not hold.
///
/// # Errors
///
/// 412 when the precondition is false.
pub(crate) fn check_if_match(pre: Option<&Precondition>, current: &str) -> Result<(), Error> {
    match pre {
        Some(p) if !p.matches_strong(current) => Err(Error::PreconditionFailed(
            "The item has changed since the given tag was issued (If-Match); nothing was written. Read it again and retry with its current ETag.".into(),
        )),
        _ => Ok(()),
    }
}

/// The 428 of a blueprint that requires `If-Match` when the request has none.
pub(crate) fn required() -> Error {
    Error::PreconditionRequired(
        "This operation requires an If-Match header with the item's current ETag.".into(),
    )
}

/// Whether a database error is the loser's side of two concurrent conditional writes of one
/// row (PostgreSQL's serialization failure under `REPEATABLE READ`).
pub(crate) fn is_write_race(e: &Error) -> bool {
    matches!(
        e,
        Error::Database(diesel::result::Error::DatabaseError(
            diesel::result::DatabaseErrorKind::SerializationFailure,
            _
        ))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::IF_MATCH, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn star_and_lists() {
        assert_eq!(if_match(&headers(&[])).unwrap(), None);
        assert_eq!(if_match(&headers(&["*"])).unwrap(), Some(Precondition::Any));
        let p = if_match(&headers(&["\"a\", W/\"b\"", " \"c\""]))
            .unwrap()
            .unwrap();
        assert!(p.matches_strong("\"a\""));
        assert!(!p.matches_strong("\"b\""), "weak tags never match If-Match");
        assert!(p.matches_weak("\"b\""));
        assert!(p.matches_strong("\"c\""));
        assert!(!p.matches_strong("\"d\""));
        assert!(if_match(&headers(&["\"\""])).unwrap().is_some());
    }

    #[test]
    fn malformed_values_name_the_header() {
        for bad in ["abc", "\"a", "\"a\" \"b\"", "*, \"a\"", "W/abc"] {
            match if_match(&headers(&[bad])) {
                Err(Error::BadRequest { field, .. }) => {
                    assert_eq!(field.as_deref(), Some("If-Match"), "{bad}")
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn an_empty_value_is_an_empty_list() {
        for empty in ["", " ", ","] {
            let p = if_match(&headers(&[empty])).unwrap().unwrap();
            assert_eq!(p, Precondition::Tags(Vec::new()), "{empty:?}");
            assert!(
                !p.matches_strong("\"a\""),
                "If-Match with no tag matches nothing"
            );
            assert!(
                !p.matches_weak("\"a\""),
                "If-None-Match with no tag goes on"
            );
        }
        // A batch item's `if_match` names at least one tag.
        assert!(parse_text("").is_err());
    }

    #[test]
    fn tags_are_strong_and_quoted() {
        let t = tag_of(b"{}");
        assert_eq!(t.len(), 34);
        assert!(t.starts_with('"') && t.ends_with('"'));
        assert_ne!(t, tag_of(b"{ }"));
    }
}

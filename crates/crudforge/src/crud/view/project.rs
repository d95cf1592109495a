//! Reshaping a written item: the members a caller may not read taken out of an answer of any
//! shape, embedded related items added, and the sparse projection (`fields=`). Each works on
//! the bytes of one JSON object.

use crate::error::Error;
use crate::json::Members;
use serde_json::{Map, Value};

/// Embedded related items of one row (`expand`): each relation's name and its value.
pub(crate) type Embedded = Vec<(&'static str, Value)>;

/// Removes the members `hidden` from the JSON object written to `out` from `start` on: the one
/// place an answer of another shape than the generated one (a presenter's, a substituted
/// schema's) loses what its caller may not read, by member name. The other members keep their
/// order and their bytes: each value is passed through as written, never parsed into a tree.
///
/// # Errors
///
/// 500 when what was written is not a JSON object.
pub(crate) fn strip(out: &mut Vec<u8>, start: usize, hidden: &[&str]) -> Result<(), Error> {
    if hidden.is_empty() {
        return Ok(());
    }
    let members: Members<'_> = serde_json::from_slice(&out[start..])
        .map_err(|e| Error::Internal(format!("read rules on a non-object item: {e}")))?;
    let mut kept = Vec::with_capacity(out.len() - start);
    kept.push(b'{');
    for (name, value) in members
        .0
        .iter()
        .filter(|(n, _)| !hidden.contains(&n.as_ref()))
    {
        if kept.len() > 1 {
            kept.push(b',');
        }
        serde_json::to_writer(&mut kept, name).map_err(|e| Error::Internal(e.to_string()))?;
        kept.push(b':');
        kept.extend_from_slice(value.get().as_bytes());
    }
    kept.push(b'}');
    out.truncate(start);
    out.extend_from_slice(&kept);
    Ok(())
}

fn object(body: &[u8]) -> Result<Map<String, Value>, Error> {
    serde_json::from_slice(body)
        .map_err(|e| Error::Internal(format!("reshaping a non-object item: {e}")))
}

/// `body` (a written item) as an object, with the embedded `members` added.
///
/// # Errors
///
/// 500 when the item is not a JSON object.
pub(crate) fn embed(body: &[u8], members: Embedded) -> Result<Map<String, Value>, Error> {
    let mut obj = object(body)?;
    for (name, v) in members {
        obj.insert(name.to_owned(), v);
    }
    Ok(obj)
}

/// Keeps the members `fields` of `obj`: a plain name keeps its member; `rel.sub` keeps the
/// embedded object (or each object of an embedded list) `rel` trimmed to the named members.
fn project(obj: &mut Map<String, Value>, fields: &[&str]) {
    let whole = |k: &str| fields.contains(&k);
    let subs = |k: &str| -> Vec<&str> {
        fields
            .iter()
            .filter_map(|f| f.split_once('.'))
            .filter(|(r, _)| *r == k)
            .map(|(_, s)| s)
            .collect()
    };
    obj.retain(|k, _| whole(k) || !subs(k).is_empty());
    for (k, v) in obj.iter_mut() {
        if whole(k) {
            continue;
        }
        let keep = subs(k);
        let trim = |o: &mut Map<String, Value>| o.retain(|m, _| keep.contains(&m.as_str()));
        match v {
            Value::Object(o) => trim(o),
            Value::Array(items) => {
                for item in items {
                    if let Value::Object(o) = item {
                        trim(o);
                    }
                }
            }
            _ => {}
        }
    }
}

/// `body` with the embedded `members` added (when given) and kept to `fields` (when given).
///
/// # Errors
///
/// 500 when the item is not a JSON object.
pub(crate) fn reshape(
    body: &[u8],
    members: Option<Embedded>,
    fields: Option<&[&str]>,
) -> Result<Vec<u8>, Error> {
    let mut obj = embed(body, members.unwrap_or_default())?;
    if let Some(f) = fields {
        project(&mut obj, f);
    }
    serde_json::to_vec(&obj).map_err(|e| Error::Internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_removes_only_the_hidden_members_of_the_written_item() {
        let mut out = b"[1,".to_vec();
        out.extend_from_slice(br#"{"a":1,"secret":"x","b":2}"#);
        strip(&mut out, 3, &["secret"]).unwrap();
        assert_eq!(out, br#"[1,{"a":1,"b":2}"#);
        let mut same = br#"{"a":1}"#.to_vec();
        strip(&mut same, 0, &[]).unwrap();
        assert_eq!(same, br#"{"a":1}"#);
        assert!(strip(&mut b"[1]".to_vec(), 0, &["a"]).is_err());
    }

    #[test]
    fn strip_keeps_the_other_members_in_order_and_as_written() {
        let mut out = b"[".to_vec();
        out.extend_from_slice(
            br#"{"id":1,"secret":{"a":[1,"}"]},"name":"a\"b","z":null,"s\u00e9":2}"#,
        );
        strip(&mut out, 1, &["secret", "s\u{e9}"]).unwrap();
        assert_eq!(out, br#"[{"id":1,"name":"a\"b","z":null}"#);
        let mut out = br#"{"only":true}"#.to_vec();
        strip(&mut out, 0, &["only"]).unwrap();
        assert_eq!(out, b"{}");
        let mut out = b"[1]".to_vec();
        assert!(strip(&mut out, 0, &["x"]).is_err());
    }

    #[test]
    fn reshape_embeds_then_keeps_the_named_members_and_sub_members() {
        let body = br#"{"id":1,"name":"Rex","owner_id":7}"#;
        let owner = serde_json::json!({"id": 7, "email": "a@b", "name": "Ann"});
        let out = reshape(
            body,
            Some(vec![("owner", owner)]),
            Some(&["name", "owner.email"]),
        )
        .unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&out).unwrap(),
            serde_json::json!({"name": "Rex", "owner": {"email": "a@b"}})
        );
        let out = reshape(body, None, Some(&["id"])).unwrap();
        assert_eq!(out, br#"{"id":1}"#);
        assert!(reshape(b"[1]", None, Some(&["id"])).is_err());
    }
}

//! Sparse fields: `fields=id,name` keeps only those members of each rendered item (INDEX and
//! GET). The names are checked against the resource's readable fields when the query is
//! parsed ([`parse_fields`](super::query::parse_fields)); here a rendered JSON object loses
//! its other members.

use crate::error::Error;

/// The members `fields` of the rendered JSON object `item`, in the item's order.
///
/// # Errors
///
/// 500 when the item is not a JSON object.
pub(crate) fn project(item: &[u8], fields: &[&str]) -> Result<Vec<u8>, Error> {
    let mut obj: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(item)
        .map_err(|e| Error::Internal(format!("sparse fields of a non-object item: {e}")))?;
    obj.retain(|k, _| fields.contains(&k.as_str()));
    serde_json::to_vec(&obj).map_err(|e| Error::Internal(e.to_string()))
}

/// The `fields` parameter of a query string, if any, checked against `fields`.
///
/// # Errors
///
/// A 400 naming `fields` (see [`parse_fields`](super::query::parse_fields)), or `query` for a
/// malformed query string.
pub(crate) fn requested(
    fields: &'static [crate::field::FieldInfo],
    query: &str,
) -> Result<Option<Vec<&'static str>>, Error> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
        .map_err(|e| Error::bad_param("query", format!("malformed query string: {e}")))?;
    let mut out = None;
    for (name, value) in pairs {
        if name == "fields" {
            out = Some(super::query::parse_fields(fields, &value)?);
        }
    }
    Ok(out)
}

//! What a write records of each row it touched, in its own transaction: the row as it now
//! stands (its generated representation, which never holds a write-only member), the members
//! that changed since the row's latest entry with their old and new values, the write-only
//! members the write set (named, their values never kept), who wrote and when.

use super::store::{self, New};
use crate::crud::rows::by_key;
use crate::crud::shared::{Author, Touch, Touched};
use crate::crud::Resource;
use crate::db::Conn;
use crate::error::Error;
use actix_web::HttpMessage;
use serde_json::{Map, Value};

/// The write-only members a create's or update's body set (a password), kept on the request
/// for its history: named as changed, their values never kept.
#[derive(Debug, Clone)]
pub(crate) struct Redacted(pub(crate) Vec<&'static str>);

/// Notes on `req` which write-only members of `R` the body `obj` sets.
pub(crate) fn note_redacted<R: Resource>(req: &actix_web::HttpRequest, obj: &Map<String, Value>) {
    let set: Vec<&'static str> = R::FIELDS
        .iter()
        .filter(|f| f.write_only && obj.contains_key(f.name))
        .map(|f| f.name)
        .collect();
    if !set.is_empty() {
        req.extensions_mut().insert(Redacted(set));
    }
}

/// The action an entry names.
pub(crate) fn action(t: Touch) -> &'static str {
    match t {
        Touch::Created => "created",
        Touch::Updated => "updated",
        Touch::Deleted => "deleted",
        Touch::Restored => "restored",
    }
}

/// Records an entry for each row of `R` in `touched`, in the transaction `conn` is in.
///
/// # Errors
///
/// Database errors (the write then rolls back with its entries).
pub(crate) async fn record<R: Resource>(
    conn: &mut Conn,
    touched: &Touched,
    by: &Author<'_>,
) -> Result<(), Error> {
    let at = chrono::Utc::now().timestamp_micros();
    let request_id = by.req.and_then(|r| {
        r.extensions()
            .get::<crate::request_id::RequestId>()
            .map(|id| id.as_str().to_owned())
    });
    let redacted = by
        .req
        .and_then(|r| r.extensions().get::<Redacted>().cloned());
    for (touch, key) in touched {
        let now = match by_key::<R>(conn, key).await? {
            Some(row) => Some(state_of(row)?),
            None => None,
        };
        let before = match store::latest(conn, R::sql_table(), key).await? {
            Some(Some(s)) => serde_json::from_str::<Map<String, Value>>(&s).ok(),
            _ => None,
        };
        let mut changes = diff(before.as_ref(), now.as_ref());
        // A batch's rows were written from several bodies: only one write's body is known.
        if touched.len() == 1 {
            if let Some(Redacted(names)) = &redacted {
                for name in names {
                    changes.insert((*name).to_owned(), serde_json::json!({"redacted": true}));
                }
            }
        }
        let state = match &now {
            Some(m) => Some(to_text(&Value::Object(m.clone()))?),
            None => None,
        };
        store::insert(
            conn,
            &New {
                resource: R::sql_table(),
                row_key: key,
                action: action(*touch),
                actor: by.user.map(|u| u.to_string()),
                request_id: request_id.as_deref(),
                at,
                state,
                changes: to_text(&Value::Object(changes))?,
            },
        )
        .await?;
    }
    Ok(())
}

/// The generated representation of `row`, every member (the read rules apply when it is read).
fn state_of<R: Resource>(row: R) -> Result<Map<String, Value>, Error> {
    match serde_json::to_value(R::Response::from(row)) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(Error::Internal(format!(
            "a {} row is not a JSON object",
            R::NAME
        ))),
        Err(e) => Err(Error::Internal(format!(
            "serializing a {} row: {e}",
            R::NAME
        ))),
    }
}

/// JSON text.
fn to_text(v: &Value) -> Result<String, Error> {
    serde_json::to_string(v).map_err(|e| Error::Internal(format!("serializing history: {e}")))
}

/// The members that differ between `before` and `now`: `{"old": ..., "new": ...}` each, `old`
/// left out when there was no state before (a new row, or one written before history was
/// kept), `new` when there is none now (a row deleted for good).
pub(crate) fn diff(
    before: Option<&Map<String, Value>>,
    now: Option<&Map<String, Value>>,
) -> Map<String, Value> {
    let mut out = Map::new();
    let empty = Map::new();
    let (b, n) = (before.unwrap_or(&empty), now.unwrap_or(&empty));
    for (name, new) in n {
        if b.get(name) != Some(new) {
            let mut change = Map::new();
            if let Some(old) = b.get(name) {
                change.insert("old".into(), old.clone());
            }
            change.insert("new".into(), new.clone());
            out.insert(name.clone(), Value::Object(change));
        }
    }
    for (name, old) in b {
        if !n.contains_key(name) {
            out.insert(name.clone(), serde_json::json!({ "old": old }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("an object"),
        }
    }

    #[test]
    fn the_changes_name_what_differs_with_both_values() {
        let a = obj(json!({"id": 1, "name": "Rex", "age": 3}));
        let b = obj(json!({"id": 1, "name": "Max", "age": 3}));
        assert_eq!(
            Value::Object(diff(Some(&a), Some(&b))),
            json!({"name": {"old": "Rex", "new": "Max"}})
        );
        assert_eq!(
            Value::Object(diff(None, Some(&a))),
            json!({"id": {"new": 1}, "name": {"new": "Rex"}, "age": {"new": 3}})
        );
        assert_eq!(
            Value::Object(diff(Some(&a), None)),
            json!({"id": {"old": 1}, "name": {"old": "Rex"}, "age": {"old": 3}})
        );
        assert!(diff(Some(&a), Some(&a)).is_empty());
    }
}

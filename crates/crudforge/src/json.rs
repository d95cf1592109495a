//! JSON request bodies: content type, syntax, text the databases can store, and errors that
//! name the member at fault; and the members of a rendered object, read without copying.

use crate::error::Error;
use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::HttpMessage as _;
use actix_web::{web, FromRequest, HttpRequest};
use futures_util::future::LocalBoxFuture;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt::Write as _;

/// A JSON body deserialized into `T`, for hand-written handlers.
///
/// Unlike actix-web's `web::Json`, it refuses text that PostgreSQL cannot store (the NUL
/// character, `\u0000`) with 422 naming the member, before anything reaches the database, and
/// reports shape errors as 422 naming the member. Other failures are the usual problems: 415
/// for a body that is not JSON, 400 for malformed JSON, 413 for an oversize body.
#[derive(Debug)]
pub struct Json<T>(pub T);

impl<T> Json<T> {
    /// The deserialized value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for Json<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: DeserializeOwned + 'static> FromRequest for Json<T> {
    type Error = actix_web::Error;
    type Future = LocalBoxFuture<'static, Result<Self, actix_web::Error>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        let bytes = web::Bytes::from_request(&req, payload);
        Box::pin(async move {
            let body = bytes.await?;
            let value = syntax(&req, &body)?;
            let value = read_text(value, |v| {
                // What `T` leaves unread never reaches the database.
                let mut ignored = Vec::new();
                let _ = serde_ignored::deserialize::<_, _, T>(v, |path| ignored.push(steps(&path)));
                ignored
            })?;
            Ok(Json(from_value(value)?))
        })
    }
}

/// Checks the content type and syntax of a JSON body and the text inside it.
///
/// # Errors
///
/// 415 when the content type is not JSON, 400 for malformed JSON, 422 for a string or member
/// name containing the NUL character.
pub(crate) fn parse(req: &HttpRequest, body: &[u8]) -> Result<Value, Error> {
    let value = syntax(req, body)?;
    check_text(&value, &mut String::new())?;
    Ok(value)
}

/// Marks a request whose body was `multipart/form-data`: its JSON part has been taken out of
/// it, so the body handed on is JSON whatever the request's `Content-Type` says.
#[allow(
    dead_code,
    reason = "a door of the seam: set by the file members' multipart writes"
)]
pub(crate) struct FromMultipart;

/// The content type and syntax of a JSON body (see [`parse`]).
fn syntax(req: &HttpRequest, body: &[u8]) -> Result<Value, Error> {
    if req.extensions().contains::<FromMultipart>() {
        return serde_json::from_slice(body).map_err(|e| crate::error::serde_error(&e));
    }
    let ct = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let mime = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if mime != "application/json" && !mime.ends_with("+json") {
        return Err(Error::UnsupportedMediaType(
            "The request body must be JSON (Content-Type: application/json).".into(),
        ));
    }
    serde_json::from_slice(body).map_err(|e| crate::error::serde_error(&e))
}

/// One step of the path to a member: a name or a position.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Member(String),
    Item(usize),
}

/// The steps of a path `serde_ignored` reports.
fn steps(path: &serde_ignored::Path<'_>) -> Vec<Step> {
    use serde_ignored::Path;
    match path {
        Path::Root => Vec::new(),
        Path::Seq { parent, index } => {
            let mut out = steps(parent);
            out.push(Step::Item(*index));
            out
        }
        Path::Map { parent, key } => {
            let mut out = steps(parent);
            out.push(Step::Member(key.clone()));
            out
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => steps(parent),
    }
}

/// `value` without the member at `path` (nothing when there is none).
fn remove(value: &mut Value, path: &[Step]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = value;
    for step in parents {
        let next = match (step, at) {
            (Step::Member(name), Value::Object(m)) => m.get_mut(name),
            (Step::Item(i), Value::Array(a)) => a.get_mut(*i),
            _ => None,
        };
        let Some(next) = next else {
            return;
        };
        at = next;
    }
    if let (Step::Member(name), Value::Object(m)) = (last, at) {
        m.remove(name);
    }
}

/// Refuses the NUL character in the text of `value` that its reader reads (see
/// [`check_text`]): a NUL found is refused only when it is not inside a member that
/// `unread(value)` reports as ignored (those members are dropped, since no reader
/// sees them). Members a hand-written body does not declare may hold anything, as its
/// description allows.
fn read_text(value: Value, unread: impl FnOnce(&Value) -> Vec<Vec<Step>>) -> Result<Value, Error> {
    if check_text(&value, &mut String::new()).is_ok() {
        return Ok(value);
    }
    let ignored = unread(&value);
    let mut read = value;
    for path in &ignored {
        remove(&mut read, path);
    }
    check_text(&read, &mut String::new())?;
    Ok(read)
}

/// Refuses the NUL character anywhere in `value`'s strings or member names. PostgreSQL cannot
/// store it in `text` or `jsonb`; refusing it on every backend keeps them alike. `path` is the
/// location so far (`notes.tags[2]`), used to name the member.
fn check_text(value: &Value, path: &mut String) -> Result<(), Error> {
    let refuse = |at: &str| {
        // A member name may hold the NUL itself: it is named with the NUL written out, so
        // the answer never carries one.
        let at = at.replace('\0', "\\u0000");
        Error::invalid_field(
            if at.is_empty() { "body" } else { at.as_str() },
            "text cannot contain the NUL character (\\u0000)",
        )
    };
    match value {
        Value::String(s) if s.contains('\0') => Err(refuse(path)),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                let _ = write!(path, "[{i}]");
                check_text(item, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Object(members) => {
            for (name, item) in members {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(name);
                if name.contains('\0') {
                    return Err(refuse(path));
                }
                check_text(item, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Deserializes JSON into `T`, naming the member at fault.
///
/// # Errors
///
/// 422 naming the member (or the object, for a missing or unknown member).
pub(crate) fn from_value<T: DeserializeOwned>(v: Value) -> Result<T, Error> {
    decode(v)
}

/// Like [`from_value`], reading a borrowed value (to check a body against a second type
/// without copying it).
///
/// # Errors
///
/// 422 naming the member.
pub(crate) fn from_value_ref<T: DeserializeOwned>(v: &Value) -> Result<T, Error> {
    decode(v)
}

fn decode<'de, T: DeserializeOwned, D>(d: D) -> Result<T, Error>
where
    D: serde::Deserializer<'de>,
    D::Error: std::fmt::Display,
{
    serde_path_to_error::deserialize::<_, T>(d).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let msg = inner.to_string();
        let field = if path == "." {
            // Missing or unknown members are reported on the object itself.
            ["missing field `", "unknown field `"].iter().find_map(|m| {
                msg.find(m)
                    .map(|i| &msg[i + m.len()..])
                    .and_then(|rest| rest.find('`').map(|end| rest[..end].to_owned()))
            })
        } else {
            Some(path)
        };
        match field {
            Some(f) => {
                let detail = if msg.starts_with("unknown field") {
                    format!("`{f}` cannot be set: it is read-only or does not exist")
                } else {
                    msg
                };
                Error::invalid_field(f, detail)
            }
            None => Error::Validation {
                detail: format!("The request body does not match the expected shape: {msg}"),
                field: None,
            },
        }
    })
}

/// A JSON object's members in the order written, each name borrowed from the text when it has
/// no escapes and each value as its raw JSON text.
pub(crate) struct Members<'a>(pub(crate) Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'a> Members<'a> {}

impl<'de> serde::Deserialize<'de> for Members<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// A member's name: borrowed from the text unless it holds escapes.
        #[derive(serde::Deserialize)]
        struct Name<'a>(#[serde(borrow)] Cow<'a, str>);
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some((name, value)) = map.next_entry::<Name<'de>, &'de RawValue>()? {
                    members.push((name.0, value));
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(Visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn members_borrow_their_names_and_keep_raw_values() {
        let text = r#"{"a": 1, "b\u0041": [1, "x"], "c": "t\"u"}"#;
        let m: Members<'_> = serde_json::from_str(text).unwrap();
        let names: Vec<&str> = m.0.iter().map(|(n, _)| n.as_ref()).collect();
        assert_eq!(names, ["a", "bA", "c"]);
        assert!(matches!(m.0[0].0, Cow::Borrowed(_)));
        assert!(matches!(m.0[1].0, Cow::Owned(_)));
        let raws: Vec<&str> = m.0.iter().map(|(_, v)| v.get()).collect();
        assert_eq!(raws, ["1", r#"[1, "x"]"#, r#""t\"u""#]);
    }

    fn field(e: Error) -> Option<String> {
        match e {
            Error::Validation { field, .. } => field,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn nul_is_refused_where_it_is() {
        let at = |v: Value| check_text(&v, &mut String::new()).map_err(field);
        assert_eq!(at(json!({"name": "ok", "tags": ["a", "b"]})), Ok(()));
        assert_eq!(at(json!({"name": "a\u{0}b"})), Err(Some("name".into())));
        assert_eq!(
            at(json!({"notes": {"tags": ["x", "\u{0}"]}})),
            Err(Some("notes.tags[1]".into()))
        );
        // A NUL in a member name is named written out, never echoed.
        assert_eq!(
            at(json!({"notes": {"k\u{0}": 1}})),
            Err(Some("notes.k\\u0000".into()))
        );
        assert_eq!(at(json!("\u{0}")), Err(Some("body".into())));
    }

    #[derive(Debug, serde::Deserialize)]
    struct Body {
        name: String,
        inner: Option<Inner>,
    }

    #[derive(Debug, serde::Deserialize)]
    struct Inner {
        tags: Vec<String>,
    }

    async fn extract(body: Value) -> Result<Body, Option<String>> {
        let (req, mut payload) = actix_web::test::TestRequest::post()
            .insert_header((header::CONTENT_TYPE, "application/json"))
            .set_payload(body.to_string())
            .to_http_parts();
        match Json::<Body>::from_request(&req, &mut payload).await {
            Ok(Json(b)) => Ok(b),
            Err(e) => match e.as_error::<Error>() {
                Some(Error::Validation { field, .. }) => Err(field.clone()),
                other => panic!("{other:?}"),
            },
        }
    }

    #[actix_web::test]
    async fn a_hand_written_body_judges_only_the_members_it_reads() {
        // A NUL in a member the body reads is refused, named.
        let bad = json!({"name": "a\u{0}", "inner": null});
        assert_eq!(extract(bad).await.unwrap_err(), Some("name".into()));
        let bad = json!({"name": "a", "inner": {"tags": ["x", "\u{0}"]}});
        assert_eq!(
            extract(bad).await.unwrap_err(),
            Some("inner.tags[1]".into())
        );
        // Members it does not declare are never read, so they may hold anything, as its
        // description (no `additionalProperties: false`) allows, in their names too.
        let extra = json!({"name": "a", "k\u{0}": "v\u{0}", "inner": {"tags": [], "x\u{0}": 1}});
        let body = extract(extra).await.unwrap();
        assert_eq!(body.name, "a");
        assert_eq!(body.inner.map(|i| i.tags.len()), Some(0));
    }
}

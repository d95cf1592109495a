//! Hand-written routes mounted under a blueprint's prefix, with their documentation.

use crate::crud::options::{schema_of, SchemaFn};
pub use apistos::paths::OperationType;
use std::fmt;

/// Documentation of a custom route.
#[derive(Debug, Clone, Default)]
pub(crate) struct RouteDoc {
    /// Operation id.
    pub(crate) operation_id: Option<String>,
    /// Summary line.
    pub(crate) summary: Option<String>,
    /// Longer description.
    pub(crate) description: Option<String>,
    /// Response schema of the success response.
    pub(crate) response: Option<SchemaFn>,
    /// Status of the success response (`None`: 200).
    pub(crate) status: Option<u16>,
    /// The success response may also be plain text.
    pub(crate) text: bool,
    /// Public marker.
    pub(crate) public: bool,
    /// Request body schema.
    pub(crate) body: Option<SchemaFn>,
    /// Documented error statuses.
    pub(crate) errors: Vec<u16>,
    /// Tag (default: the resource name).
    pub(crate) tag: Option<String>,
    /// Served but left out of the description (an alias of a documented route).
    pub(crate) undocumented: bool,
    /// Who may call the route, as its description says (default: anyone for a public route,
    /// any signed-in user otherwise).
    pub(crate) callers: Option<String>,
    /// Members of the request body that are passwords: their `minLength` is
    /// `PASSWORD_MIN_LENGTH`.
    pub(crate) passwords: Vec<&'static str>,
    /// The success answer carries a strong `ETag` (required), and `If-None-Match` gets 304:
    /// a GET route that answers as an item's GET does.
    pub(crate) etag: bool,
}

/// A hand-written route mounted under a blueprint's prefix.
/// Build one with [`CustomRoute::new`] and an [`OperationType`].
pub struct CustomRoute {
    pub(crate) path: String,
    pub(crate) method: OperationType,
    pub(crate) route: Box<dyn Fn() -> actix_web::Route + Send + Sync>,
    pub(crate) doc: RouteDoc,
}

impl fmt::Debug for CustomRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CustomRoute")
            .field("path", &self.path)
            .field("method", &self.method)
            .field("doc", &self.doc)
            .finish()
    }
}

impl CustomRoute {
    /// A route for `method` at `path` (relative to the prefix, e.g. `stats/`), built by `route`
    /// (for example `|| web::get().to(handler)`) for each worker.
    pub fn new<F>(method: OperationType, path: &str, route: F) -> Self
    where
        F: Fn() -> actix_web::Route + Send + Sync + 'static,
    {
        CustomRoute {
            path: path.trim_start_matches('/').to_owned(),
            method,
            route: Box::new(route),
            doc: RouteDoc::default(),
        }
    }

    /// Sets the operation id.
    #[must_use]
    pub fn operation_id(mut self, id: &str) -> Self {
        self.doc.operation_id = Some(id.to_owned());
        self
    }

    /// Sets the summary.
    #[must_use]
    pub fn summary(mut self, s: &str) -> Self {
        self.doc.summary = Some(s.to_owned());
        self
    }

    /// Documents the success response as `T`.
    #[must_use]
    pub fn responds<T: schemars::JsonSchema>(mut self) -> Self {
        self.doc.response = Some(schema_of::<T>);
        self
    }

    /// Documents a `text/plain` success body, beside the JSON one if [`CustomRoute::responds`]
    /// names one (for a route that answers in either form).
    #[must_use]
    pub fn responds_text(mut self) -> Self {
        self.doc.text = true;
        self
    }

    /// Documents the success status, when it is not 200 (for example 201 for a route that
    /// creates something).
    #[must_use]
    pub fn status(mut self, status: u16) -> Self {
        self.doc.status = Some(status);
        self
    }

    /// Marks the route public (no token needed).
    #[must_use]
    pub fn public(mut self) -> Self {
        self.doc.public = true;
        self
    }

    /// Documents a JSON request body of type `T`.
    #[must_use]
    pub fn body<T: schemars::JsonSchema>(mut self) -> Self {
        self.doc.body = Some(schema_of::<T>);
        self
    }

    /// Documents problem responses with these statuses.
    #[must_use]
    pub fn errors(mut self, statuses: &[u16]) -> Self {
        self.doc.errors = statuses.to_vec();
        self
    }

    /// Says who may call the route ("the user named in the path, or an administrator"), for
    /// the "Who may call" line of its description. Take the text from the object whose check
    /// the handler runs, so that the two stay together.
    #[must_use]
    pub fn callers(mut self, who: &str) -> Self {
        self.doc.callers = Some(who.to_owned());
        self
    }

    /// Serves the route without documenting it: for an alias of a documented route (such as
    /// the same path without its trailing slash), so that a generated client gets one method
    /// per operation.
    #[must_use]
    pub fn undocumented(mut self) -> Self {
        self.doc.undocumented = true;
        self
    }

    /// Names the members of the request body that are passwords, checked against the
    /// password policy by the handler: the description gives them `minLength`
    /// `PASSWORD_MIN_LENGTH`.
    #[must_use]
    pub fn password_members(mut self, members: &[&'static str]) -> Self {
        self.doc.passwords.extend_from_slice(members);
        self
    }

    /// Documents the `ETag` of the success answer (required) and `If-None-Match` with its 304
    /// answer, for a GET route whose handler sends them.
    #[must_use]
    pub fn etag(mut self) -> Self {
        self.doc.etag = true;
        self
    }

    /// Sets the OpenAPI tag.
    #[must_use]
    pub fn tag(mut self, tag: &str) -> Self {
        self.doc.tag = Some(tag.to_owned());
        self
    }
}

/// Converts `<uuid:user_id>` / `<user_id>` segments to actix's `{user_id}`; returns the path
/// and the parameter names in order.
pub(crate) fn normalize_prefix(prefix: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut params = Vec::new();
    let mut rest = prefix;
    while let Some(i) = rest.find(['<', '{']) {
        out.push_str(&rest[..i]);
        let close = if rest.as_bytes()[i] == b'<' { '>' } else { '}' };
        match rest[i..].find(close) {
            Some(j) => {
                let inner = &rest[i + 1..i + j];
                let name = inner.rsplit(':').next().unwrap_or(inner).trim().to_owned();
                out.push('{');
                out.push_str(&name);
                out.push('}');
                params.push(name);
                rest = &rest[i + j + 1..];
            }
            None => {
                out.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    if !out.starts_with('/') {
        out.insert(0, '/');
    }
    if !out.ends_with('/') {
        out.push('/');
    }
    (out, params)
}

/// `path` as the prefix of a surface's own routes (the jobs' and webhooks' HTTP APIs): one
/// leading and one trailing `/` (`"api/jobs"` gives `"/api/jobs/"`, `""` gives `"/"`).
#[allow(
    dead_code,
    reason = "a door of the seam: a build without optional surfaces leaves it unused"
)]
pub(crate) fn surface_prefix(path: &str) -> String {
    let trimmed = path.trim().trim_matches('/');
    if trimmed.is_empty() {
        "/".to_owned()
    } else {
        format!("/{trimmed}/")
    }
}

/// The path of the restore operation of the items at `item_path` (`/api/critters/{id}` gives
/// `/api/critters/{id}/restore/`).
pub(crate) fn restore_path(item_path: &str) -> String {
    format!("{item_path}/restore/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_surface_prefix_has_a_slash_on_each_side() {
        assert_eq!(surface_prefix("/api/jobs/"), "/api/jobs/");
        assert_eq!(surface_prefix("api/jobs"), "/api/jobs/");
        assert_eq!(surface_prefix("/"), "/");
    }

    #[test]
    fn prefixes_are_normalized() {
        assert_eq!(
            normalize_prefix("/api/critters/"),
            ("/api/critters/".to_owned(), vec![])
        );
        assert_eq!(
            normalize_prefix("api/critters"),
            ("/api/critters/".to_owned(), vec![])
        );
        assert_eq!(
            normalize_prefix("/api/users/<uuid:user_id>/posts/"),
            (
                "/api/users/{user_id}/posts/".to_owned(),
                vec!["user_id".to_owned()]
            )
        );
        assert_eq!(
            normalize_prefix("/api/users/{user_id}/posts/"),
            (
                "/api/users/{user_id}/posts/".to_owned(),
                vec!["user_id".to_owned()]
            )
        );
    }
}

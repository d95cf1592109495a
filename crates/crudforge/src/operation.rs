//! The operation id of a request (`listCritter`, `login`, `health`), found from the route it
//! matched, for metrics labels and log lines: a bounded set, unlike raw paths.

use actix_web::http::Method;
use actix_web::{web, HttpMessage, HttpRequest};
use apistos::paths::OperationType;
use std::collections::HashMap;
use std::sync::Arc;

/// The label of a request that matched no route.
pub const UNMATCHED: &str = "unmatched";

/// The label of a request whose route has no documented operation (a method the route does
/// not take, a CORS preflight).
pub const UNDOCUMENTED: &str = "undocumented";

/// Operation ids by method and route pattern, built once from what an
/// [`Api`](crate::Api) mounts and documents.
#[derive(Debug, Default, Clone)]
pub struct OperationIds {
    by_route: HashMap<(Method, String), Arc<str>>,
}

/// The operation id of a request once found, kept in its extensions so the access log and
/// the metrics match the route once between them.
#[derive(Debug, Clone)]
struct Found(Arc<str>);

impl OperationIds {
    /// The operation ids of an OpenAPI description (its paths use the same `{param}` form as
    /// actix-web's patterns).
    pub fn from_openapi(doc: &apistos::OpenApi) -> OperationIds {
        let mut ids = OperationIds::default();
        for (path, item) in &doc.paths.paths {
            for (op_type, op) in &item.operations {
                if let Some(id) = &op.operation_id {
                    ids.add(method_of(op_type), path, id);
                }
            }
        }
        ids
    }

    /// Adds (or replaces) the id of `method` on the route `pattern`.
    pub fn add(&mut self, method: Method, pattern: &str, id: &str) {
        self.by_route
            .insert((method, normalize(pattern)), Arc::from(id));
    }

    /// The operation id of the route `pattern` answering `method`.
    pub fn get(&self, method: &Method, pattern: Option<&str>) -> &str {
        match pattern {
            None => UNMATCHED,
            Some(pattern) => self.find(method, pattern).map_or(UNDOCUMENTED, |id| &**id),
        }
    }

    /// The id of `method` on the route `pattern`, if documented (HEAD is answered by the GET
    /// route).
    fn find(&self, method: &Method, pattern: &str) -> Option<&Arc<str>> {
        let key = (method.clone(), normalize(pattern));
        match self.by_route.get(&key) {
            None if *method == Method::HEAD => self.find(&Method::GET, pattern),
            found => found,
        }
    }

    /// The operation id of `req` ([`UNMATCHED`] when no route matches, or when the app
    /// carries no table). Matching the path against the routes is done once per request: the
    /// answer is kept in the request's extensions for later calls.
    pub fn of(req: &HttpRequest) -> Arc<str> {
        if let Some(Found(id)) = req.extensions().get::<Found>() {
            return Arc::clone(id);
        }
        let id = match req.app_data::<web::Data<OperationIds>>() {
            Some(ids) => ids.lookup(req.method(), req.match_pattern().as_deref()),
            None => Arc::from(UNMATCHED),
        };
        req.extensions_mut().insert(Found(Arc::clone(&id)));
        id
    }

    /// Like [`get`](Self::get), as a shared string.
    fn lookup(&self, method: &Method, pattern: Option<&str>) -> Arc<str> {
        match pattern {
            None => Arc::from(UNMATCHED),
            Some(pattern) => self
                .find(method, pattern)
                .map_or_else(|| Arc::from(UNDOCUMENTED), Arc::clone),
        }
    }
}

/// `{id:[0-9]+}` and `{id}` are the same parameter.
fn normalize(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut in_param = false;
    let mut skipping = false;
    for c in pattern.chars() {
        match c {
            '{' => {
                in_param = true;
                out.push(c);
            }
            '}' if in_param => {
                in_param = false;
                skipping = false;
                out.push(c);
            }
            ':' if in_param => skipping = true,
            _ if skipping => {}
            _ => out.push(c),
        }
    }
    out
}

fn method_of(op: &OperationType) -> Method {
    match op {
        OperationType::Get => Method::GET,
        OperationType::Put => Method::PUT,
        OperationType::Post => Method::POST,
        OperationType::Delete => Method::DELETE,
        OperationType::Options => Method::OPTIONS,
        OperationType::Head => Method::HEAD,
        OperationType::Patch => Method::PATCH,
        OperationType::Trace => Method::TRACE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_up_by_method_and_pattern() {
        let mut ids = OperationIds::default();
        ids.add(Method::GET, "/api/critters/{id}", "getCritter");
        ids.add(Method::GET, "/health", "health");
        assert_eq!(
            ids.get(&Method::GET, Some("/api/critters/{id:[^/]+}")),
            "getCritter"
        );
        assert_eq!(ids.get(&Method::HEAD, Some("/health")), "health");
        assert_eq!(ids.get(&Method::PUT, Some("/health")), UNDOCUMENTED);
        assert_eq!(ids.get(&Method::GET, None), UNMATCHED);
    }
}

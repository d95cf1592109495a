//! The operation id of a request (`listCritter`, `login`, `health`), found from the route it
//! matched, for metrics labels and log lines: a bounded set, unlike raw paths.

use actix_web::dev::{ResourceDef, ServiceRequest, ServiceResponse};
use actix_web::http::{Method, Uri};
use actix_web::{web, HttpMessage, HttpRequest};
use apistos::paths::OperationType;
use std::collections::HashMap;
use std::sync::Arc;

/// The label of a request that matched no route.
pub(crate) const UNMATCHED: &str = "unmatched";

/// The label of a request whose route has no documented operation (a method the route does
/// not take, a CORS preflight).
pub(crate) const UNDOCUMENTED: &str = "undocumented";

/// Operation ids by method and route pattern, built once from what an
/// [`Api`](crate::Api) mounts and documents.
#[derive(Debug, Default, Clone)]
pub(crate) struct OperationIds {
    /// Ids by route pattern (parameters written `{name}`), then by method.
    by_route: HashMap<String, Vec<(Method, Arc<str>)>>,
    /// The same patterns, static ones first, to find the route of a request known only by its
    /// path (see [`Pending::answered`]).
    routes: Vec<ResourceDef>,
}

/// The operation id of a request once found, kept in its extensions so the access log and
/// the metrics match the route once between them.
#[derive(Debug, Clone)]
struct Found(Arc<str>);

impl OperationIds {
    /// The operation ids of an OpenAPI description (its paths use the same `{param}` form as
    /// actix-web's patterns).
    pub(crate) fn from_openapi(doc: &apistos::OpenApi) -> OperationIds {
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
    pub(crate) fn add(&mut self, method: Method, pattern: &str, id: &str) {
        let pattern = normalize(pattern);
        if !self.by_route.contains_key(&pattern) {
            self.routes.push(ResourceDef::new(pattern.as_str()));
            // Static paths before patterns with parameters, longer before shorter: the most
            // specific route that matches a path wins.
            self.routes.sort_by_key(|def| {
                let p = def.pattern().unwrap_or_default();
                (p.contains('{'), std::cmp::Reverse(p.len()))
            });
        }
        let methods = self.by_route.entry(pattern).or_default();
        methods.retain(|(m, _)| *m != method);
        methods.push((method, Arc::from(id)));
    }

    /// The operation id of the route `pattern` answering `method`.
    #[cfg(test)]
    pub(crate) fn get(&self, method: &Method, pattern: Option<&str>) -> &str {
        match pattern {
            None => UNMATCHED,
            Some(pattern) => self.find(method, pattern).map_or(UNDOCUMENTED, |id| &**id),
        }
    }

    /// The id of `method` on the route `pattern`, if documented (HEAD is answered by the GET
    /// route). An undocumented alias that differs from a documented route only by a trailing
    /// slash ([`CustomRoute::undocumented`](crate::crud::CustomRoute::undocumented)) shares
    /// its id.
    fn find(&self, method: &Method, pattern: &str) -> Option<&Arc<str>> {
        self.find_exact(method, pattern).or_else(|| {
            let other = match pattern.strip_suffix('/') {
                Some(p) => p.to_owned(),
                None => format!("{pattern}/"),
            };
            self.find_exact(method, &other)
        })
    }

    fn find_exact(&self, method: &Method, pattern: &str) -> Option<&Arc<str>> {
        let methods = if pattern.contains(':') {
            self.by_route.get(&normalize(pattern))
        } else {
            self.by_route.get(pattern)
        }?;
        let id = |m: &Method| methods.iter().find(|(have, _)| have == m).map(|(_, id)| id);
        match id(method) {
            None if *method == Method::HEAD => id(&Method::GET),
            found => found,
        }
    }

    /// The operation id of `req` ([`UNMATCHED`] when no route matches, or when the app
    /// carries no table). Once the request has been routed (from a handler, or from a
    /// middleware looking at the response), the route is known without matching the path
    /// again; the answer is kept in the request's extensions for later calls.
    pub(crate) fn of(req: &HttpRequest) -> Arc<str> {
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

    /// The id of `method` on the first documented route whose pattern matches `path`.
    fn by_path(&self, method: &Method, path: &str) -> Arc<str> {
        let pattern = self
            .routes
            .iter()
            .find(|def| def.is_match(path))
            .and_then(ResourceDef::pattern);
        self.lookup(method, pattern)
    }
}

/// A request's operation, to be named once it is answered: middleware that wraps routing
/// (metrics, the access log) takes this before passing the request on, and asks for the id
/// with the answer, when the route that answered is known without matching the path again.
#[derive(Debug)]
pub(crate) struct Pending {
    ids: Option<web::Data<OperationIds>>,
    method: Method,
    uri: Uri,
}

impl Pending {
    /// What is needed to name `req`'s operation later (no allocation: the URI is shared).
    pub(crate) fn of(req: &ServiceRequest) -> Pending {
        Pending {
            ids: req.app_data::<web::Data<OperationIds>>().cloned(),
            method: req.method().clone(),
            uri: req.uri().clone(),
        }
    }

    /// The operation id of the request `res` answers: from the route that answered it, or,
    /// for an error that left the request behind (a timeout), from the first documented route
    /// whose pattern matches the path.
    pub(crate) fn answered<B>(
        &self,
        res: &Result<ServiceResponse<B>, actix_web::Error>,
    ) -> Arc<str> {
        match (res, &self.ids) {
            (Ok(res), _) => OperationIds::of(res.request()),
            (Err(_), Some(ids)) => ids.by_path(&self.method, self.uri.path()),
            (Err(_), None) => Arc::from(UNMATCHED),
        }
    }

    /// The request's method.
    pub(crate) fn method(&self) -> &Method {
        &self.method
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

    #[test]
    fn finds_the_most_specific_route_of_a_bare_path() {
        let mut ids = OperationIds::default();
        ids.add(Method::GET, "/api/critters/{id}", "getCritter");
        ids.add(Method::GET, "/api/critters/stats/", "critterStats");
        ids.add(Method::GET, "/api/critters/", "listCritter");
        ids.add(Method::POST, "/api/critters/", "createCritter");
        ids.add(Method::POST, "/api/critters/", "createCritter2");
        assert_eq!(&*ids.by_path(&Method::GET, "/api/critters/7"), "getCritter");
        assert_eq!(
            &*ids.by_path(&Method::GET, "/api/critters/stats/"),
            "critterStats"
        );
        assert_eq!(
            &*ids.by_path(&Method::HEAD, "/api/critters/"),
            "listCritter"
        );
        assert_eq!(
            &*ids.by_path(&Method::POST, "/api/critters/"),
            "createCritter2",
            "a second add replaces the first"
        );
        assert_eq!(&*ids.by_path(&Method::PUT, "/api/critters/7"), UNDOCUMENTED);
        assert_eq!(&*ids.by_path(&Method::GET, "/elsewhere"), UNMATCHED);
    }
}

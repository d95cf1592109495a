//! A blueprint's routes under one actix scope for the static head of its prefix, so that a
//! request for another prefix is turned away by one string comparison instead of by each of
//! the blueprint's path patterns in turn.
//!
//! actix-web tries an application's services in the order they were registered, and a
//! pattern with a parameter (`/api/critters/{id}`) is a regular expression. Without scopes, a
//! request for the last-mounted resource runs the patterns of every resource mounted before
//! it. With them, it compares one static head per blueprint (`/api/critters`) and runs only
//! its own blueprint's patterns.
//!
//! An actix scope answers every path under its head, also one that none of its routes match.
//! The scope's guard therefore admits a request only when one of the blueprint's own full
//! patterns matches its path, so routing is exactly what it was without the scope: a path
//! that none of them match goes on to the services registered after it (another blueprint
//! under the same head, such as `/api/user/{user_id}/role/` after `/api/user/`, or the
//! application's own routes).

use actix_web::dev::{ResourceDef, Url};
use actix_web::{guard, web, Resource};
use std::sync::{Arc, OnceLock};

/// A blueprint's full path patterns as one set, compiled once for all of the server's workers
/// (each worker registers the routes anew). A set of patterns is one regular-expression set:
/// the guard tells whether any of them matches in one search, instead of one search per
/// pattern.
pub(crate) type Patterns = OnceLock<Arc<ResourceDef>>;

/// The routes of one blueprint, gathered for registration.
pub(crate) struct Routes {
    /// The static head of the prefix without its final `/` (`/api/critters`), or empty when
    /// the prefix has no static segment (then no scope is used).
    head: String,
    /// Each route's full path, in registration order.
    paths: Vec<String>,
    /// Each route's resource, at its path relative to `head`.
    resources: Vec<Resource>,
}

impl Routes {
    /// No routes yet, for a blueprint at `prefix` (`/…/`, in actix form).
    pub(crate) fn new(prefix: &str) -> Routes {
        Routes {
            head: head_of(prefix).to_owned(),
            paths: Vec::new(),
            resources: Vec::new(),
        }
    }

    /// Adds a resource at `path` (a full path that starts with the prefix), built by `build`.
    pub(crate) fn add(&mut self, path: &str, build: impl FnOnce(Resource) -> Resource) {
        let relative = path.strip_prefix(self.head.as_str()).unwrap_or(path);
        self.paths.push(path.to_owned());
        self.resources.push(build(web::resource(relative)));
    }

    /// Registers the routes on `cfg`: in a guarded scope for their head, or one by one when
    /// there is no static head. `compiled` keeps the guard's patterns for the next worker;
    /// give the same one for the same routes.
    pub(crate) fn register(self, cfg: &mut web::ServiceConfig, compiled: &Patterns) {
        if self.head.is_empty() || self.resources.is_empty() {
            for resource in self.resources {
                cfg.service(resource);
            }
            return;
        }
        let paths = self.paths;
        let patterns = Arc::clone(compiled.get_or_init(|| Arc::new(ResourceDef::new(paths))));
        let mut scope = web::scope(&self.head).guard(guard::fn_guard(move |ctx| {
            // The path the router matches: percent-encodings requoted as actix does.
            let url = Url::new(ctx.head().uri.clone());
            patterns.is_match(url.path())
        }));
        for resource in self.resources {
            scope = scope.service(resource);
        }
        cfg.service(scope);
    }
}

/// The static segments at the start of `prefix`, without the final `/`: `/api/critters/` →
/// `/api/critters`, `/api/user/{user_id}/role/` → `/api/user`, `/{tenant}/x/` → empty.
fn head_of(prefix: &str) -> &str {
    let fixed = &prefix[..prefix.find('{').unwrap_or(prefix.len())];
    &fixed[..fixed.rfind('/').unwrap_or(0)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test as actix_test;
    use actix_web::{App, HttpResponse};

    #[test]
    fn heads_are_the_static_segments() {
        assert_eq!(head_of("/api/critters/"), "/api/critters");
        assert_eq!(head_of("/api/user/{user_id}/role/"), "/api/user");
        assert_eq!(head_of("/api/{tenant}/x/"), "/api");
        assert_eq!(head_of("/{tenant}/x/"), "");
        assert_eq!(head_of("/"), "");
    }

    fn answer(name: &'static str) -> impl Fn(Resource) -> Resource {
        move |r| r.route(web::get().to(move || async move { HttpResponse::Ok().body(name) }))
    }

    /// The status and body of a GET of `path` on `app`.
    macro_rules! get {
        ($app:expr, $path:expr) => {{
            let req = actix_test::TestRequest::get().uri($path).to_request();
            let res = actix_test::call_service($app, req).await;
            let status = res.status().as_u16();
            let body = actix_test::read_body(res).await;
            (status, String::from_utf8_lossy(&body).into_owned())
        }};
    }

    #[actix_web::test]
    async fn paths_no_route_of_a_scope_matches_go_on_to_later_services() {
        let app = actix_test::init_service(
            App::new()
                .configure(|cfg| {
                    let mut users = Routes::new("/api/user/");
                    users.add("/api/user/", answer("user list"));
                    users.add("/api/user/me", answer("me"));
                    users.add("/api/user/{user_id}/settings/", answer("settings"));
                    users.add("/api/user/{id}", answer("user item"));
                    users.register(cfg, &Patterns::new());
                    let mut roles = Routes::new("/api/user/{user_id}/role/");
                    roles.add("/api/user/{user_id}/role/", answer("role list"));
                    roles.add("/api/user/{user_id}/role/{id}", answer("role item"));
                    roles.register(cfg, &Patterns::new());
                    let mut rooted = Routes::new("/{tenant}/things/");
                    rooted.add("/{tenant}/things/{id}", answer("rooted item"));
                    rooted.register(cfg, &Patterns::new());
                })
                .route(
                    "/api/user/{id}/extra",
                    web::get().to(|| async { "app's own" }),
                )
                .default_service(web::to(|| async { HttpResponse::NotFound().body("none") })),
        )
        .await;
        for (path, expected) in [
            ("/api/user/", (200, "user list")),
            ("/api/user/me", (200, "me")),
            ("/api/user/m%65", (200, "me")),
            ("/api/user/42/settings/", (200, "settings")),
            // The router matches the requoted path (`%73` is `s`); so does the guard.
            ("/api/user/42/setting%73/", (200, "settings")),
            ("/api/user/42", (200, "user item")),
            ("/api/user/42/role/", (200, "role list")),
            ("/api/user/42/role/7", (200, "role item")),
            ("/api/user/42/extra", (200, "app's own")),
            ("/acme/things/9", (200, "rooted item")),
            ("/api/user", (404, "none")),
            ("/api/users/1", (404, "none")),
            ("/api/user/42/role/7/x", (404, "none")),
        ] {
            let (status, body) = get!(&app, path);
            assert_eq!((status, body.as_str()), expected, "{path}");
        }
    }

    #[actix_web::test]
    async fn match_info_and_pattern_are_those_of_the_full_path() {
        let app = actix_test::init_service(App::new().configure(|cfg| {
            let mut roles = Routes::new("/api/user/{user_id}/role/");
            roles.add("/api/user/{user_id}/role/{id}", |r| {
                r.route(web::get().to(|req: actix_web::HttpRequest| async move {
                    format!(
                        "{} {} {}",
                        req.match_pattern().unwrap_or_default(),
                        req.match_info().get("user_id").unwrap_or_default(),
                        req.match_info().get("id").unwrap_or_default(),
                    )
                }))
            });
            roles.register(cfg, &Patterns::new());
        }))
        .await;
        let (status, body) = get!(&app, "/api/user/u1/role/r2");
        assert_eq!(status, 200);
        assert_eq!(body, "/api/user/{user_id}/role/{id} u1 r2");
    }
}

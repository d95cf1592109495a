//! The admin page (feature `admin`): a single-page app embedded in the binary and served
//! under a path of the application's choice, reading only the public API.
//!
//! The page learns every resource from the OpenAPI description (`/openapi.json`) and signs in
//! through the user blueprint's `login/` and `refresh/`, or through a sign-in provider's
//! `start/` and `callback/` when the description has them (feature `providers`); it has no
//! endpoint of its own. Its Jobs view uses the jobs' API (`Api::jobs_api`, feature `jobs`)
//! when the description has it, and its API keys view the Token resource when the API mounts
//! it. Each asset is answered with a strong `ETag` (a digest of its bytes, computed once),
//! `Cache-Control: no-cache` (revalidated, then 304 while unchanged), a
//! `Content-Security-Policy` that allows only the page's own scripts, styles and the API (no
//! inline script, no `eval`), `X-Frame-Options: DENY`, `X-Content-Type-Options: nosniff` and
//! `Referrer-Policy: no-referrer`.

mod part;
#[cfg(all(test, feature = "sqlite"))]
mod tests_api;

use crate::api::{Api, Surface};
use crate::operation::OperationIds;
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::Method;
use actix_web::{web, HttpRequest, HttpResponse};
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

/// Where the admin page is mounted ([`Api::admin`]), as [`base`] writes it.
struct Mounted(String);

/// The admin page's side of the whole API: its routes, when the application mounted it.
pub(crate) struct Admin;

impl Surface for Admin {
    fn register(&self, api: &Api, cfg: &mut web::ServiceConfig) {
        if let Some(Mounted(base)) = api.ext.get::<Mounted>() {
            register(cfg, base);
        }
    }

    /// The page is not in the description; its requests are labelled `admin`.
    fn operation_ids(&self, api: &Api, ids: &mut OperationIds) {
        if let Some(Mounted(base)) = api.ext.get::<Mounted>() {
            for route in routes(base) {
                ids.add(Method::GET, &route, "admin");
            }
        }
    }
}

impl Api {
    /// Mounts the admin page at `path` (for example `"/admin/"`; `"/admin"` answers with a
    /// redirect to it): a single-page app, embedded in the binary, that signs in with the user
    /// blueprint's `login/` and `refresh/` and lists, creates, edits, deletes and restores the
    /// rows of every mounted resource through the same endpoints any client uses, with the
    /// signed-in user's rights. It learns the resources from `/openapi.json` and offers only
    /// the operations the caller may perform. See [admin.md](https://github.com/crudforge/crudforge/blob/main/docs/admin.md).
    #[must_use]
    pub fn admin(mut self, path: &str) -> Self {
        self.ext.insert(Mounted(base(path)));
        self.routes_changed();
        self
    }
}

/// The policy every asset is served with: the page's own files and the API only, no inline
/// script or `eval`, images also from `blob:`/`data:` (previews of files), never framed.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; frame-ancestors 'none'";

/// One embedded file: its name under the admin path, media type and bytes.
struct Asset {
    name: &'static str,
    media_type: &'static str,
    body: &'static str,
}

/// Every file of the page, hand-written (no build step).
const ASSETS: &[Asset] = &[
    Asset {
        name: "",
        media_type: "text/html; charset=utf-8",
        body: include_str!("assets/index.html"),
    },
    Asset {
        name: "admin.css",
        media_type: "text/css; charset=utf-8",
        body: include_str!("assets/admin.css"),
    },
    Asset {
        name: "main.js",
        media_type: "text/javascript; charset=utf-8",
        body: include_str!("assets/main.js"),
    },
    Asset {
        name: "api.js",
        media_type: "text/javascript; charset=utf-8",
        body: include_str!("assets/api.js"),
    },
    Asset {
        name: "schema.js",
        media_type: "text/javascript; charset=utf-8",
        body: include_str!("assets/schema.js"),
    },
    Asset {
        name: "dom.js",
        media_type: "text/javascript; charset=utf-8",
        body: include_str!("assets/dom.js"),
    },
    Asset {
        name: "list.js",
        media_type: "text/javascript; charset=utf-8",
        body: include_str!("assets/list.js"),
    },
    Asset {
        name: "form.js",
        media_type: "text/javascript; charset=utf-8",
        body: include_str!("assets/form.js"),
    },
    Asset {
        name: "users.js",
        media_type: "text/javascript; charset=utf-8",
        body: include_str!("assets/users.js"),
    },
    Asset {
        name: "live.js",
        media_type: "text/javascript; charset=utf-8",
        body: include_str!("assets/live.js"),
    },
    Asset {
        name: "data.js",
        media_type: "text/javascript; charset=utf-8",
        body: include_str!("assets/data.js"),
    },
    Asset {
        name: "jobs.js",
        media_type: "text/javascript; charset=utf-8",
        body: include_str!("assets/jobs.js"),
    },
    Asset {
        name: "keys.js",
        media_type: "text/javascript; charset=utf-8",
        body: include_str!("assets/keys.js"),
    },
    Asset {
        name: "providers.js",
        media_type: "text/javascript; charset=utf-8",
        body: include_str!("assets/providers.js"),
    },
];

/// The strong entity tag of each asset (the first 16 bytes of its SHA-256, in hex), in the
/// order of [`ASSETS`], computed on first use.
fn etags() -> &'static [String] {
    static TAGS: OnceLock<Vec<String>> = OnceLock::new();
    TAGS.get_or_init(|| {
        ASSETS
            .iter()
            .map(|a| {
                let digest = Sha256::digest(a.body.as_bytes());
                let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
                format!("\"{hex}\"")
            })
            .collect()
    })
}

/// `path` as the page's base: a leading `/`, no trailing one (`"/admin/"` gives `"/admin"`;
/// `"/"` gives `""`, the root).
pub(crate) fn base(path: &str) -> String {
    let trimmed = path.trim().trim_matches('/');
    if trimmed.is_empty() {
        String::new()
    } else {
        format!("/{trimmed}")
    }
}

/// The route of every asset under `base` (see [`base`]): the page itself at `<base>/`.
pub(crate) fn routes(base: &str) -> impl Iterator<Item = String> + '_ {
    ASSETS.iter().map(move |a| format!("{base}/{}", a.name))
}

/// Registers the page under `base` (see [`base`]): `<base>/` and its files; `<base>` alone
/// redirects to `<base>/`.
pub(crate) fn register(cfg: &mut web::ServiceConfig, base: &str) {
    if !base.is_empty() {
        let location = format!("{base}/");
        cfg.service(web::resource(base).route(web::get().to(move || {
            let location = location.clone();
            async move {
                HttpResponse::PermanentRedirect()
                    .insert_header((header::LOCATION, location))
                    .finish()
            }
        })));
    }
    for (index, path) in routes(base).enumerate() {
        cfg.service(
            web::resource(path.as_str())
                .route(web::get().to(move |req: HttpRequest| async move { serve(&req, index) })),
        );
    }
}

/// The answer for asset `index`: 304 when the client's `If-None-Match` names its tag.
fn serve(req: &HttpRequest, index: usize) -> HttpResponse {
    let (Some(asset), Some(tag)) = (ASSETS.get(index), etags().get(index)) else {
        return HttpResponse::NotFound().finish();
    };
    let fresh = req
        .headers()
        .get_all(header::IF_NONE_MATCH)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|t| t == tag || t == "*");
    let mut answer = if fresh {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    answer
        .insert_header((header::ETAG, tag.as_str()))
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-cache")))
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ))
        .insert_header((header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")))
        .insert_header((
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .insert_header((
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ));
    if fresh {
        return answer.finish();
    }
    answer.content_type(asset.media_type).body(asset.body)
}

/// The total size of the assets, raw, in bytes (for the size report of the tests).
#[cfg(test)]
fn raw_size() -> usize {
    ASSETS.iter().map(|a| a.body.len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases_have_one_leading_slash_and_no_trailing_one() {
        assert_eq!(base("/admin/"), "/admin");
        assert_eq!(base("admin"), "/admin");
        assert_eq!(base("/ops/admin"), "/ops/admin");
        assert_eq!(base("/"), "");
        assert_eq!(routes("/admin").next().as_deref(), Some("/admin/"));
    }

    #[test]
    fn tags_are_strong_and_distinct() {
        let tags = etags();
        assert_eq!(tags.len(), ASSETS.len());
        for (i, t) in tags.iter().enumerate() {
            assert!(t.starts_with('"') && !t.starts_with("W/"), "{t}");
            assert!(!tags[..i].contains(t), "duplicate tag {t}");
        }
        assert!(raw_size() > 0);
    }

    /// Whether `html` has an attribute like `onclick=`: ` on`, letters, `=`.
    fn inline_handler(html: &str) -> bool {
        html.match_indices(" on").any(|(i, _)| {
            let rest = &html[i + 3..];
            let letters = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
            letters > 0 && rest[letters..].starts_with('=')
        })
    }

    #[test]
    fn inline_handlers_are_recognized() {
        assert!(inline_handler(r#"<img src=x onerror=alert(1)>"#));
        assert!(!inline_handler("<p>turned on or off</p>"));
    }

    #[test]
    fn no_asset_holds_inline_script_or_eval() {
        for a in ASSETS {
            assert!(!a.body.contains("eval("), "{}", a.name);
            assert!(!a.body.contains("new Function"), "{}", a.name);
            assert!(!a.body.contains("innerHTML"), "{}", a.name);
            assert!(!a.body.contains("localStorage"), "{}", a.name);
            if a.name == "providers.js" {
                // Its one use of web storage: a provider sign-in's ticket, across the trip to
                // the provider and back; never a token.
                assert!(!a.body.contains("access_token"), "{}", a.name);
                assert!(!a.body.contains("refresh_token"), "{}", a.name);
            } else {
                assert!(!a.body.contains("sessionStorage"), "{}", a.name);
            }
            if a.name.is_empty() {
                assert!(!a.body.contains("<script>"), "inline script in index.html");
                assert!(!a.body.contains("style="), "an inline style in index.html");
                assert!(!a.body.contains("<style"), "a style element in index.html");
                assert!(!inline_handler(a.body), "an inline handler in index.html");
            }
        }
    }
}

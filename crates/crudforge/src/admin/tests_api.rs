//! The admin page's routes as an application sees them: served with their security and caching
//! headers when mounted (feature `admin`), absent otherwise.

use crate::db::{Database, DbOptions, Target};
use crate::{Api, Config};
use actix_web::test;

/// An API over a fresh SQLite file in `dir`.
async fn api(dir: &tempfile::TempDir) -> Api {
    let db = Database::open(
        Target::Sqlite(dir.path().join("admin.db")),
        DbOptions::default(),
    )
    .await
    .expect("open");
    let config = Config::default().with(|c| {
        c.db.data_dir = dir.path().join("data");
        c.auth.jwt_secret_key = Some(crate::config::Secret::new(
            "a test secret of at least thirty-two bytes",
        ));
    });
    Api::new(config, db).expect("api")
}

/// `GET path` on `api`'s application: status, headers and body.
async fn get(
    api: &Api,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, actix_web::http::header::HeaderMap, Vec<u8>) {
    let app = test::init_service(api.app()).await;
    let mut req = test::TestRequest::get().uri(path);
    for (k, v) in headers {
        req = req.insert_header((*k, *v));
    }
    let res = test::call_service(&app, req.to_request()).await;
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let body = test::read_body(res).await.to_vec();
    (status, headers, body)
}

#[actix_web::test]
async fn an_api_without_the_admin_call_has_no_admin_route() {
    let dir = tempfile::tempdir().expect("tempdir");
    let api = api(&dir).await;
    for path in ["/admin/", "/admin", "/admin/main.js", "/admin/admin.css"] {
        let (status, headers, _) = get(&api, path, &[]).await;
        assert_eq!(status, 404, "{path}");
        assert_eq!(
            headers.get("content-type").and_then(|v| v.to_str().ok()),
            Some("application/problem+json"),
            "{path}"
        );
    }
}

#[actix_web::test]
async fn the_page_and_its_files_carry_the_security_and_caching_headers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let api = api(&dir).await.admin("/admin/");
    let csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; frame-ancestors 'none'";
    for (path, media) in [
        ("/admin/", "text/html; charset=utf-8"),
        ("/admin/main.js", "text/javascript; charset=utf-8"),
        ("/admin/api.js", "text/javascript; charset=utf-8"),
        ("/admin/jobs.js", "text/javascript; charset=utf-8"),
        ("/admin/keys.js", "text/javascript; charset=utf-8"),
        ("/admin/providers.js", "text/javascript; charset=utf-8"),
        ("/admin/admin.css", "text/css; charset=utf-8"),
    ] {
        let (status, headers, body) = get(&api, path, &[]).await;
        assert_eq!(status, 200, "{path}");
        let h = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        assert_eq!(h("content-type"), media, "{path}");
        assert_eq!(h("content-security-policy"), csp, "{path}");
        assert_eq!(h("x-frame-options"), "DENY", "{path}");
        assert_eq!(h("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(h("cache-control"), "no-cache", "{path}");
        let etag = h("etag");
        assert!(
            etag.len() > 2 && etag.starts_with('"') && etag.ends_with('"'),
            "{path}: {etag}"
        );
        assert!(!body.is_empty(), "{path}");
        // The tag it answered with: 304, no body, the same headers.
        let (status, again, body) = get(&api, path, &[("If-None-Match", &etag)]).await;
        assert_eq!(status, 304, "{path}");
        assert!(body.is_empty(), "{path}");
        assert_eq!(
            again.get("etag").and_then(|v| v.to_str().ok()),
            Some(etag.as_str())
        );
        assert_eq!(
            again
                .get("content-security-policy")
                .and_then(|v| v.to_str().ok()),
            Some(csp)
        );
        // Another tag: the whole file again.
        let (status, _, body) = get(&api, path, &[("If-None-Match", "\"other\"")]).await;
        assert_eq!(status, 200, "{path}");
        assert!(!body.is_empty(), "{path}");
    }
    // The page names only its own files, as modules.
    let (_, _, page) = get(&api, "/admin/", &[]).await;
    let page = String::from_utf8(page).expect("UTF-8");
    assert!(
        page.contains(r#"<script type="module" src="main.js">"#),
        "{page}"
    );
    // Without the trailing slash: a redirect to the page.
    let (status, headers, _) = get(&api, "/admin", &[]).await;
    assert_eq!(status, 308);
    assert_eq!(
        headers.get("location").and_then(|v| v.to_str().ok()),
        Some("/admin/")
    );
    // A file the page does not have: the API's 404 problem.
    let (status, headers, _) = get(&api, "/admin/nothing.js", &[]).await;
    assert_eq!(status, 404);
    assert_eq!(
        headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("application/problem+json")
    );
}

#[actix_web::test]
async fn a_blueprints_hints_reach_the_description_and_unknown_members_fail_the_mount() {
    use crate::crud::Resource as _;
    use crate::users::UserRole;
    let dir = tempfile::tempdir().expect("tempdir");
    let refused = api(&dir)
        .await
        .mount(UserRole::blueprint("/api/roles/").admin_columns(["role", "nope"]));
    let e = refused.expect_err("an unknown column").to_string();
    assert!(e.contains("admin_columns names `nope`"), "{e}");
    let refused = api(&dir)
        .await
        .mount(UserRole::blueprint("/api/roles/").admin_member_label("nope", "Nope"));
    assert!(refused.is_err());
    let api = api(&dir)
        .await
        .mount(
            UserRole::blueprint("/api/roles/")
                .admin_label("Grants")
                .admin_columns(["role", "user_id"])
                .admin_member_label("user_id", "User"),
        )
        .expect("mount")
        .admin("/admin/");
    let doc: serde_json::Value = serde_json::from_str(&api.openapi_json()).expect("json");
    let list = &doc["paths"]["/api/roles/"]["get"];
    assert_eq!(
        list["x-admin"],
        serde_json::json!({"label": "Grants", "columns": ["role", "user_id"], "labels": {"user_id": "User"}}),
        "{list}"
    );
    // Another operation carries none.
    assert!(doc["paths"]["/api/roles/"]["post"]["x-admin"].is_null());
}

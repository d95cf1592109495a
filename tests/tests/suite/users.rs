//! The user system on both backends: models, login, refresh, JWT checks, permission rules,
//! admin-only and public markers, mass assignment and object-level access.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::test;
use chrono::{DateTime, Utc};
use crudforge::auth::TokenKind;
use crudforge::crud::Operation;
use crudforge::perms::OwnerRules;
use crudforge::users::{
    self, Domain, LoginContext, Role, Token, User, UserBlueprint, UserModel, UserRole, UserSetting,
};
use crudforge::{with_conn, Api, Config, Database, Error, Resource};
use crudforge_tests::{backend_tests, Backend, TestDb};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::{json, Value};
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    notes (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        owner_id -> PortableUuid,
        body -> Text,
    }
}

/// A resource with simple ownership.
#[derive(Debug, Queryable, Selectable, Resource)]
#[diesel(table_name = notes)]
#[resource(rules = OwnerRules::new("owner_id"))]
pub struct Note {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub owner_id: Uuid,
    #[resource(max_len = 200)]
    pub body: String,
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    #[sql_name = "users"]
    members (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        email -> Text,
        password -> Nullable<Text>,
        is_enabled -> Bool,
        nickname -> Nullable<Text>,
    }
}

/// An application's own user model: the `users` table plus a column, open registration.
#[derive(Debug, Queryable, Selectable, Resource)]
#[diesel(table_name = members)]
#[resource(rules = crudforge::users::UserRules)]
pub struct Member {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(email)]
    pub email: String,
    #[resource(password)]
    pub password: Option<String>,
    #[resource(default = true)]
    pub is_enabled: bool,
    #[resource(max_len = 40)]
    pub nickname: Option<String>,
}

impl UserModel for Member {
    const PUBLIC_REGISTRATION: bool = true;
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    #[sql_name = "users"]
    staff (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        email -> Text,
        password -> Nullable<Text>,
        is_enabled -> Bool,
        roles -> Nullable<Text>,
    }
}

/// A user model with a member of its own called `roles`, which `me/` leaves alone.
#[derive(Debug, Queryable, Selectable, Resource)]
#[diesel(table_name = staff)]
#[resource(rules = crudforge::users::UserRules)]
pub struct Staff {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(email)]
    pub email: String,
    #[resource(password)]
    pub password: Option<String>,
    #[resource(default = true)]
    pub is_enabled: bool,
    #[resource(max_len = 40)]
    pub roles: Option<String>,
}

impl UserModel for Staff {}

const COST: u32 = 4;

struct World {
    api: Api,
    db: Database,
    admin: Uuid,
    alice: Uuid,
    bob: Uuid,
}

async fn world(t: &TestDb, cfg: Config) -> World {
    let cfg = cfg.with(|c| c.auth.bcrypt_cost = COST);
    let db = t.open(&cfg).await;
    let ddl = match db.backend() {
        Backend::Sqlite => "CREATE TABLE notes (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, owner_id TEXT NOT NULL REFERENCES users (id), body TEXT NOT NULL);
                            ALTER TABLE users ADD COLUMN nickname TEXT;",
        Backend::Postgres => "CREATE TABLE notes (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, owner_id UUID NOT NULL REFERENCES users (id), body TEXT NOT NULL);
                              ALTER TABLE users ADD COLUMN nickname TEXT;",
    };
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(ddl).await).unwrap();
    drop(conn);
    let admin = users::create_user(&db, "admin@example.com", "admin-pass", true, COST)
        .await
        .unwrap();
    users::grant_role(&db, admin, Role::Admin.as_str(), None)
        .await
        .unwrap();
    let alice = users::create_user(&db, "alice@example.com", "alice-pass", true, COST)
        .await
        .unwrap();
    let bob = users::create_user(&db, "bob@example.com", "bob-pass", true, COST)
        .await
        .unwrap();
    let api = Api::new(cfg, db.clone())
        .unwrap()
        .mount(UserBlueprint::default())
        .unwrap()
        .mount(UserBlueprint::<Member>::new("/api/members/").name("members"))
        .unwrap()
        .mount(UserRole::blueprint("/api/roles/"))
        .unwrap()
        .mount(Token::blueprint("/api/tokens/"))
        .unwrap()
        .mount(UserSetting::blueprint("/api/settings/"))
        .unwrap()
        .mount(Domain::blueprint("/api/domains/"))
        .unwrap()
        .mount(Note::blueprint("/api/notes/"))
        .unwrap()
        .mount(Note::blueprint("/api/admin-notes/").admin_only([Operation::Index]))
        .unwrap()
        .mount(
            Note::blueprint("/api/public-notes/")
                .methods([Operation::Index])
                .public([Operation::Index]),
        )
        .unwrap();
    World {
        api,
        db,
        admin,
        alice,
        bob,
    }
}

fn bearer(api: &Api, id: Uuid) -> (&'static str, String) {
    (
        "authorization",
        format!("Bearer {}", api.state().tokens.access(id).unwrap()),
    )
}

async fn body<B: MessageBody>(resp: ServiceResponse<B>) -> (StatusCode, Value) {
    let status = resp.status();
    let bytes = test::read_body(resp).await;
    if bytes.is_empty() {
        return (status, Value::Null);
    }
    (
        status,
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&bytes))),
    )
}

async fn send<S, B>(app: &S, req: test::TestRequest) -> (StatusCode, Value)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    body(test::call_service(app, req.to_request()).await).await
}

fn as_user(req: test::TestRequest, api: &Api, id: Uuid) -> test::TestRequest {
    req.insert_header(bearer(api, id))
}

fn login_req(email: &str, password: &str) -> test::TestRequest {
    test::TestRequest::post()
        .uri("/api/users/login/")
        .set_json(json!({"email": email, "password": password}))
}

backend_tests! {
    async fn me_sends_the_etag_its_description_declares(t) {
        let w = world(&t, t.config()).await;
        let app = test::init_service(w.api.app()).await;
        let resp = test::call_service(&app, as_user(test::TestRequest::get().uri("/api/users/me/"), &w.api, w.alice).to_request()).await;
        assert_eq!(resp.status(), 200);
        let etag = resp.headers().get("etag").expect("an ETag").to_str().unwrap().to_owned();
        assert!(etag.starts_with('"') && etag.ends_with('"') && etag.len() == 34, "{etag}");
        let bytes = test::read_body(resp).await;
        assert_eq!(etag, crudforge::crud::entity_tag(&bytes), "the tag of the body sent");
        // If-None-Match with it: 304; with another tag, the body again; a malformed one, 400.
        let conditional = |value: &str| as_user(test::TestRequest::get().uri("/api/users/me/").insert_header(("if-none-match", value.to_owned())), &w.api, w.alice);
        let resp = test::call_service(&app, conditional(&etag).to_request()).await;
        assert_eq!(resp.status(), 304);
        assert_eq!(resp.headers().get("etag").unwrap().to_str().unwrap(), etag);
        assert_eq!(send(&app, conditional("\"other\"")).await.0, 200);
        assert_eq!(send(&app, conditional("not-a-tag")).await.0, 400);
        // The description declares it, with If-None-Match and 304.
        let doc: Value = serde_json::from_str(&w.api.openapi_json()).unwrap();
        let me = &doc["paths"]["/api/users/me/"]["get"];
        assert_eq!(me["responses"]["200"]["headers"]["ETag"]["required"], true, "{me}");
        assert!(me["responses"].get("304").is_some(), "{me}");
        assert!(me["parameters"].as_array().unwrap().iter().any(|p| p["name"] == "If-None-Match"), "{me}");
    }

    async fn me_lists_the_callers_roles_in_its_body_tag_and_description(t) {
        let w = world(&t, t.config()).await;
        let app = test::init_service(w.api.app()).await;
        let me = |id: Uuid| as_user(test::TestRequest::get().uri("/api/users/me/"), &w.api, id);
        let (status, v) = send(&app, me(w.alice)).await;
        assert_eq!(status, 200);
        assert_eq!(v["roles"], json!([]), "{v}");
        assert_eq!(v["email"], "alice@example.com", "the user's members are still there: {v}");
        let (_, v) = send(&app, me(w.admin)).await;
        assert_eq!(v["roles"], json!([{"role": "ADMIN", "domain_id": null}]));
        // The model's members in their order, then `roles`.
        let text = String::from_utf8(test::read_body(test::call_service(&app, me(w.admin).to_request()).await).await.to_vec()).unwrap();
        assert!(text.starts_with(r#"{"id":"#) && text.ends_with(r#","roles":[{"role":"ADMIN","domain_id":null}]}"#), "{text}");
        // A role granted changes the body and its tag: the old tag no longer matches.
        let resp = test::call_service(&app, me(w.alice).to_request()).await;
        let etag = resp.headers().get("etag").unwrap().to_str().unwrap().to_owned();
        let mut conn = w.db.get().await.unwrap();
        let input: <Domain as Resource>::Create = serde_json::from_value(json!({"name": "north"})).unwrap();
        let north = Domain::insert(&mut conn, input).await.unwrap().id;
        drop(conn);
        users::grant_role(&w.db, w.alice, "USER", Some(north)).await.unwrap();
        users::grant_role(&w.db, w.alice, "MODERATOR", None).await.unwrap();
        users::grant_role(&w.db, w.alice, "ADMIN", Some(north)).await.unwrap();
        let resp = test::call_service(&app, me(w.alice).insert_header(("if-none-match", etag.clone())).to_request()).await;
        assert_eq!(resp.status(), 200, "the roles are part of the tag");
        let again = resp.headers().get("etag").unwrap().to_str().unwrap().to_owned();
        assert_ne!(again, etag);
        let (_, v) = body(resp).await;
        // Ordered by name, then domain: the same roles always make the same body and tag.
        assert_eq!(v["roles"], json!([
            {"role": "ADMIN", "domain_id": north},
            {"role": "MODERATOR", "domain_id": null},
            {"role": "USER", "domain_id": north},
        ]));
        for _ in 0..3 {
            let resp = test::call_service(&app, me(w.alice).insert_header(("if-none-match", again.clone())).to_request()).await;
            assert_eq!(resp.status(), 304);
        }
        // An application's own user model lists them too.
        let (_, v) = send(&app, me(w.admin).uri("/api/members/me/")).await;
        assert_eq!(v["roles"], json!([{"role": "ADMIN", "domain_id": null}]), "{v}");
        // The description says so: `CurrentUser` is the model's response plus `roles`.
        let doc: Value = serde_json::from_str(&w.api.openapi_json()).unwrap();
        let schema = &doc["paths"]["/api/users/me/"]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
        assert_eq!(schema["$ref"], "#/components/schemas/CurrentUser", "{schema}");
        let current = &doc["components"]["schemas"]["CurrentUser"];
        assert!(current["required"].as_array().unwrap().contains(&json!("roles")), "{current}");
        assert!(current["properties"]["email"].is_object(), "{current}");
        assert_eq!(current["properties"]["roles"]["type"], "array", "{current}");
        assert_eq!(current["properties"]["roles"]["items"]["$ref"], "#/components/schemas/HeldRole", "{current}");
        let held = &doc["components"]["schemas"]["HeldRole"];
        assert_eq!(held["properties"]["domain_id"]["nullable"], true, "{held}");
        assert!(held["required"].as_array().unwrap().contains(&json!("role")), "{held}");
        let members = &doc["paths"]["/api/members/me/"]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
        assert_eq!(members["$ref"], "#/components/schemas/CurrentMember", "{members}");
        // The model's own response schema is unchanged.
        assert!(doc["components"]["schemas"]["User"]["properties"].get("roles").is_none());

        // A user model with a member called `roles` keeps it, in the body and the description.
        let mut conn = w.db.get().await.unwrap();
        with_conn!(conn, |c| c.batch_execute("ALTER TABLE users ADD COLUMN roles TEXT").await).unwrap();
        drop(conn);
        let api = Api::new((*w.api.state().config).clone(), w.db.clone()).unwrap().mount(UserBlueprint::<Staff>::new("/api/staff/")).unwrap();
        let staff = test::init_service(api.app()).await;
        let (status, v) = send(&staff, as_user(test::TestRequest::get().uri("/api/staff/me/"), &api, w.admin)).await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["roles"], Value::Null, "the model's own member: {v}");
        let doc: Value = serde_json::from_str(&api.openapi_json()).unwrap();
        let current = &doc["components"]["schemas"]["CurrentStaff"];
        assert_eq!(current["properties"]["roles"]["type"], "string", "{current}");
        assert!(!current["required"].as_array().is_some_and(|r| r.contains(&json!("roles"))), "{current}");
    }

    async fn password_members_are_described_with_the_configured_minimum(t) {
        let w = world(&t, t.config()).await;
        for min in [8, 12] {
            let cfg = (*w.api.state().config).clone().with(|c| c.auth.password_min_length = min);
            let api = Api::new(cfg, w.db.clone()).unwrap().mount(UserBlueprint::default()).unwrap();
            let doc: Value = serde_json::from_str(&api.openapi_json()).unwrap();
            let schemas = &doc["components"]["schemas"];
            for (schema, member) in [("UserCreate", "password"), ("UserUpdate", "password"), ("PasswordChange", "new_password")] {
                assert_eq!(schemas[schema]["properties"][member]["minLength"], min, "{schema}.{member} with {min}");
            }
            // The current password and the login's are any text: they are compared, not set.
            assert!(schemas["PasswordChange"]["properties"]["current_password"].get("minLength").is_none());
            assert!(schemas["LoginRequest"]["properties"]["password"].get("minLength").is_none());
            // What the description says is what the server does.
            let app = test::init_service(api.app()).await;
            let email = format!("n{min}@example.com");
            let (status, v) = send(&app, as_user(test::TestRequest::post().uri("/api/users/").set_json(json!({"email": email, "password": "x".repeat(min - 1)})), &api, w.admin)).await;
            assert_eq!((status.as_u16(), v["field"].as_str()), (422, Some("password")), "{v}");
            let (status, v) = send(&app, as_user(test::TestRequest::post().uri("/api/users/").set_json(json!({"email": email, "password": "x".repeat(min)})), &api, w.admin)).await;
            assert_eq!(status.as_u16(), 201, "{v}");
        }
    }

    async fn login_me_and_refresh(t) {
        let w = world(&t, t.config()).await;
        let app = test::init_service(w.api.app()).await;
        let (status, tokens) = send(&app, login_req("ALICE@example.com", "alice-pass")).await;
        assert_eq!(status, 200, "e-mail compares case-insensitively: {tokens}");
        assert_eq!(tokens["token_type"], "bearer");
        assert_eq!(tokens["expires_in"], 900);
        // Text PostgreSQL cannot compare is refused before any query, on both backends.
        let (status, v) = send(&app, login_req("alice\u{0}@example.com", "alice-pass")).await;
        assert_eq!((status.as_u16(), v["field"].as_str()), (422, Some("email")), "{v}");
        let (status, v) = send(&app, test::TestRequest::post().uri("/api/users/login/").set_json(json!({"email": "alice@example.com"}))).await;
        assert_eq!((status.as_u16(), v["field"].as_str()), (422, Some("password")), "{v}");
        let access = tokens["access_token"].as_str().unwrap().to_owned();
        let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();

        let (status, me) = send(&app, test::TestRequest::get().uri("/api/users/me/").insert_header(("authorization", format!("Bearer {access}")))).await;
        assert_eq!(status, 200);
        assert_eq!(me["email"], "alice@example.com");
        assert_eq!(me["id"], w.alice.to_string());
        assert!(me.get("password").is_none(), "the hash is never returned: {me}");

        // The refresh token is not an access token.
        let (status, _) = send(&app, test::TestRequest::get().uri("/api/users/me/").insert_header(("authorization", format!("Bearer {refresh}")))).await;
        assert_eq!(status, 401);

        let refresh_req = |tok: &str| test::TestRequest::post().uri("/api/users/refresh/").set_json(json!({"refresh_token": tok}));
        let (status, again) = send(&app, refresh_req(&refresh)).await;
        assert_eq!(status, 200, "{again}");
        assert_ne!(again["refresh_token"], tokens["refresh_token"]);
        let (status, me) = send(&app, test::TestRequest::get().uri("/api/users/me/").insert_header(("authorization", format!("Bearer {}", again["access_token"].as_str().unwrap())))).await;
        assert_eq!(status, 200);
        assert_eq!(me["email"], "alice@example.com");
        // Rotation: a used refresh token is revoked.
        let (status, v) = send(&app, refresh_req(&refresh)).await;
        assert_eq!(status, 401, "{v}");
        // Unknown, malformed, access-kind and expired refresh tokens.
        let (forged, _) = w.api.state().tokens.issue(w.alice, TokenKind::Refresh, 600).unwrap();
        let (expired, claims) = w.api.state().tokens.issue(w.alice, TokenKind::Refresh, -10).unwrap();
        users::store_token(&w.db, users::TokenRecord::ApiKey, w.alice, &claims.jti.to_string(), None, None).await.unwrap();
        for tok in [forged, expired, "garbage".to_owned(), access.clone()] {
            let (status, v) = send(&app, refresh_req(&tok)).await;
            assert_eq!(status, 401, "{v}");
            assert_eq!(v["type"], "/errors/unauthorized_error");
        }
        // A stored refresh token past its record's expiry, or revoked, is refused.
        let (late, claims) = w.api.state().tokens.issue(w.alice, TokenKind::Refresh, 600).unwrap();
        users::store_token(&w.db, users::TokenRecord::ApiKey, w.alice, &claims.jti.to_string(), None, Some(Utc::now() - chrono::Duration::seconds(5))).await.unwrap();
        assert_eq!(send(&app, refresh_req(&late)).await.0, 401);
    }

    async fn failed_logins_look_alike(t) {
        let w = world(&t, t.config()).await;
        users::set_enabled(&w.db, w.bob, false).await.unwrap();
        let app = test::init_service(w.api.app()).await;
        let mut bodies = Vec::new();
        for (email, pw) in [("nobody@example.com", "x"), ("alice@example.com", "wrong"), ("bob@example.com", "bob-pass")] {
            let (status, mut v) = send(&app, login_req(email, pw)).await;
            assert_eq!(status, 401, "{email}");
            v.as_object_mut().unwrap().remove("instance");
            // Each answer has its own request id.
            assert!(v.as_object_mut().unwrap().remove("request_id").is_some());
            bodies.push(v);
        }
        assert_eq!(bodies[0], bodies[1]);
        assert_eq!(bodies[1], bodies[2], "a disabled account is indistinguishable");
        let (status, v) = send(&app, test::TestRequest::post().uri("/api/users/login/").set_json(json!({"email": "a@b.c"}))).await;
        assert_eq!(status, 422);
        assert_eq!(v["field"], "password");
        let (status, _) = send(&app, login_req("alice@example.com", &"p".repeat(100))).await;
        assert_eq!(status, 401);
    }

    async fn login_hook_runs_after_password_and_enabled(t) {
        let w = world(&t, t.config()).await;
        fn hook<'a>(ctx: &'a LoginContext<'a>) -> futures_util::future::LocalBoxFuture<'a, Result<(), Error>> {
            let refuse = ctx.domain == Some("closed") || !ctx.user.is_enabled;
            Box::pin(async move {
                if refuse {
                    Err(Error::Unauthorized("No access to this domain.".into()))
                } else {
                    Ok(())
                }
            })
        }
        let api = Api::new(t.config().with(|c| c.auth.bcrypt_cost = COST), w.db.clone()).unwrap()
            .mount(UserBlueprint::default().login_hook(hook)).unwrap();
        let app = test::init_service(api.app()).await;
        let with_domain = |d: &str| test::TestRequest::post().uri("/api/users/login/").set_json(json!({"email": "alice@example.com", "password": "alice-pass", "domain": d}));
        let (status, v) = send(&app, with_domain("closed")).await;
        assert_eq!(status, 401);
        assert_eq!(v["detail"], "No access to this domain.");
        let (status, _) = send(&app, with_domain("open")).await;
        assert_eq!(status, 200);
        // The password is checked before the hook: a wrong password never reaches it.
        let (_, v) = send(&app, test::TestRequest::post().uri("/api/users/login/").set_json(json!({"email": "alice@example.com", "password": "no", "domain": "closed"}))).await;
        assert_eq!(v["detail"], "Invalid e-mail or password.");
    }

    async fn jwt_failures_are_401_on_protected_and_ignored_on_public(t) {
        let cfg = t.config();
        let w = world(&t, cfg).await;
        let app = test::init_service(w.api.app()).await;
        let tokens = &w.api.state().tokens;
        let (expired, _) = tokens.issue(w.alice, TokenKind::Access, -1).unwrap();
        let (recovery, _) = tokens.issue(w.alice, TokenKind::Recovery, 600).unwrap();
        let other_key = crudforge::auth::Tokens::new(&crudforge::config::Secret::new(vec![9u8; 40]), 60, 60);
        let wrong_sig = other_key.access(w.alice).unwrap();
        let ghost = tokens.access(Uuid::new_v4()).unwrap();
        users::set_enabled(&w.db, w.bob, false).await.unwrap();
        let disabled = tokens.access(w.bob).unwrap();
        let bad_headers = [
            None,
            Some("Bearer".to_owned()),
            Some("Basic abc".to_owned()),
            Some("Bearer not-a-jwt".to_owned()),
            Some(format!("Bearer {expired}")),
            Some(format!("Bearer {recovery}")),
            Some(format!("Bearer {wrong_sig}")),
            Some(format!("Bearer {ghost}")),
            Some(format!("Bearer {disabled}")),
        ];
        for h in &bad_headers {
            for uri in ["/api/users/me/", "/api/notes/", "/api/tokens/"] {
                let mut req = test::TestRequest::get().uri(uri);
                if let Some(h) = h {
                    req = req.insert_header(("authorization", h.clone()));
                }
                let (status, v) = send(&app, req).await;
                assert_eq!(status, 401, "{uri} with {h:?}: {v}");
                assert_eq!(v["type"], "/errors/unauthorized_error");
            }
            // Public endpoints ignore the header.
            let mut req = login_req("alice@example.com", "alice-pass");
            let mut list = test::TestRequest::get().uri("/api/public-notes/");
            if let Some(h) = h {
                req = req.insert_header(("authorization", h.clone()));
                list = list.insert_header(("authorization", h.clone()));
            }
            assert_eq!(send(&app, req).await.0, 200, "login with {h:?}");
            assert_eq!(send(&app, list).await.0, 200, "public list with {h:?}");
            let mut health = test::TestRequest::get().uri("/health");
            if let Some(h) = h {
                health = health.insert_header(("authorization", h.clone()));
            }
            assert_eq!(send(&app, health).await.0, 200);
        }
        // A user deleted after the token was issued.
        let (status, _) = send(&app, as_user(test::TestRequest::delete().uri(&format!("/api/users/{}", w.alice)), &w.api, w.admin)).await;
        assert_eq!(status, 204);
        let (status, _) = send(&app, as_user(test::TestRequest::get().uri("/api/users/me/"), &w.api, w.alice)).await;
        assert_eq!(status, 401);
    }

    async fn owner_rules_scope_every_operation(t) {
        let w = world(&t, t.config()).await;
        let app = test::init_service(w.api.app()).await;
        let post_note = |uid: Uuid, text: &str| as_user(test::TestRequest::post().uri("/api/notes/").set_json(json!({"body": text})), &w.api, uid);
        let (status, a1) = send(&app, post_note(w.alice, "a1")).await;
        assert_eq!(status, 201, "{a1}");
        assert_eq!(a1["owner_id"], w.alice.to_string(), "the server sets the owner");
        send(&app, post_note(w.alice, "a2")).await;
        send(&app, post_note(w.bob, "b1")).await;
        let (status, v) = send(&app, as_user(test::TestRequest::post().uri("/api/notes/").set_json(json!({"body": "x", "owner_id": w.bob})), &w.api, w.alice)).await;
        assert_eq!(status, 422, "clients cannot choose the owner: {v}");
        assert_eq!(v["field"], "owner_id");

        let (_, list) = send(&app, as_user(test::TestRequest::get().uri("/api/notes/"), &w.api, w.bob)).await;
        assert_eq!(list["pagination"]["total"], 1, "total counts only readable rows");
        assert_eq!(list["data"][0]["body"], "b1");
        let (_, list) = send(&app, as_user(test::TestRequest::get().uri("/api/notes/?body__like=a%25"), &w.api, w.bob)).await;
        assert_eq!(list["pagination"]["total"], 0, "filters cannot reach other owners' rows");
        let (_, list) = send(&app, as_user(test::TestRequest::get().uri("/api/notes/"), &w.api, w.admin)).await;
        assert_eq!(list["pagination"]["total"], 3, "admins see everything");

        let uri = format!("/api/notes/{}", a1["id"].as_str().unwrap());
        assert_eq!(send(&app, as_user(test::TestRequest::get().uri(&uri), &w.api, w.bob)).await.0, 404);
        assert_eq!(send(&app, as_user(test::TestRequest::patch().uri(&uri).set_json(json!({"body": "hacked"})), &w.api, w.bob)).await.0, 404);
        assert_eq!(send(&app, as_user(test::TestRequest::delete().uri(&uri), &w.api, w.bob)).await.0, 404);
        let (status, v) = send(&app, as_user(test::TestRequest::patch().uri(&uri).set_json(json!({"owner_id": w.bob})), &w.api, w.alice)).await;
        assert_eq!(status, 422, "the owner cannot be moved: {v}");
        let (_, same) = send(&app, as_user(test::TestRequest::get().uri(&uri), &w.api, w.alice)).await;
        assert_eq!(same["body"], "a1");
        assert_eq!(send(&app, as_user(test::TestRequest::patch().uri(&uri).set_json(json!({"body": "edited"})), &w.api, w.admin)).await.0, 200);
        assert_eq!(send(&app, test::TestRequest::get().uri("/api/notes/")).await.0, 401, "anonymous");
        assert_eq!(send(&app, test::TestRequest::post().uri("/api/notes/").set_json(json!({"body": "x"}))).await.0, 401, "create is checked before anything is written");
        let (_, list) = send(&app, as_user(test::TestRequest::get().uri("/api/notes/"), &w.api, w.admin)).await;
        assert_eq!(list["pagination"]["total"], 3);
        assert_eq!(send(&app, as_user(test::TestRequest::delete().uri(&uri), &w.api, w.alice)).await.0, 204);
    }

    async fn admin_only_and_public_markers(t) {
        let w = world(&t, t.config()).await;
        let app = test::init_service(w.api.app()).await;
        assert_eq!(send(&app, test::TestRequest::get().uri("/api/admin-notes/")).await.0, 401);
        let (status, v) = send(&app, as_user(test::TestRequest::get().uri("/api/admin-notes/"), &w.api, w.alice)).await;
        assert_eq!(status, 403);
        assert_eq!(v["type"], "/errors/forbidden_error");
        assert_eq!(send(&app, as_user(test::TestRequest::get().uri("/api/admin-notes/"), &w.api, w.admin)).await.0, 200);
        assert_eq!(send(&app, test::TestRequest::get().uri("/api/public-notes/")).await.0, 200);
        let spec = serde_json::to_value(w.api.openapi()).unwrap();
        assert_eq!(spec["paths"]["/api/admin-notes/"]["get"]["x-admin-only"], true);
        assert_eq!(spec["paths"]["/api/public-notes/"]["get"]["security"], json!([]));
        assert_eq!(spec["paths"]["/api/notes/"]["get"]["security"], json!([{"bearerAuth": []}]));
        assert_eq!(spec["paths"]["/api/users/login/"]["post"]["operationId"], "loginUser");
        assert_eq!(spec["paths"]["/api/users/me/"]["get"]["operationId"], "getCurrentUser");
        assert_eq!(spec["components"]["securitySchemes"]["bearerAuth"]["scheme"], "bearer");
    }

    async fn users_endpoints_and_rules(t) {
        let w = world(&t, t.config()).await;
        let app = test::init_service(w.api.app()).await;
        // Only admins create users through the default blueprint.
        let new_user = json!({"email": "carol@example.com", "password": "carol-pass"});
        assert_eq!(send(&app, test::TestRequest::post().uri("/api/users/").set_json(new_user.clone())).await.0, 401);
        assert_eq!(send(&app, as_user(test::TestRequest::post().uri("/api/users/").set_json(new_user.clone()), &w.api, w.alice)).await.0, 403);
        let (status, carol) = send(&app, as_user(test::TestRequest::post().uri("/api/users/").set_json(new_user), &w.api, w.admin)).await;
        assert_eq!(status, 201, "{carol}");
        assert_eq!(carol["is_enabled"], true);
        assert!(carol.get("password").is_none());
        let (status, _) = send(&app, login_req("carol@example.com", "carol-pass")).await;
        assert_eq!(status, 200, "the password was hashed and stored");
        let stored = users_hash(&w.db, carol["id"].as_str().unwrap().parse().unwrap()).await;
        assert!(stored.starts_with("$2") && !stored.contains("carol-pass"));
        // Case-insensitive uniqueness.
        let (status, v) = send(&app, as_user(test::TestRequest::post().uri("/api/users/").set_json(json!({"email": "Carol@Example.com", "password": "carol-pass-2"})), &w.api, w.admin)).await;
        assert_eq!(status, 409, "{v}");
        let (status, v) = send(&app, as_user(test::TestRequest::post().uri("/api/users/").set_json(json!({"email": "not-an-email", "password": "long-enough"})), &w.api, w.admin)).await;
        assert_eq!(status, 422);
        assert_eq!(v["field"], "email");
        let (status, v) = send(&app, as_user(test::TestRequest::post().uri("/api/users/").set_json(json!({"email": "d@example.com", "password": "p".repeat(1025)})), &w.api, w.admin)).await;
        assert_eq!(status, 422, "over-long passwords are refused, not cut: {v}");
        assert_eq!(v["field"], "password");
        // A user sees and changes only itself.
        let (_, list) = send(&app, as_user(test::TestRequest::get().uri("/api/users/"), &w.api, w.alice)).await;
        assert_eq!(list["pagination"]["total"], 1);
        assert_eq!(list["data"][0]["email"], "alice@example.com");
        let (_, list) = send(&app, as_user(test::TestRequest::get().uri("/api/users/"), &w.api, w.admin)).await;
        assert_eq!(list["pagination"]["total"], 4);
        let bob_uri = format!("/api/users/{}", w.bob);
        assert_eq!(send(&app, as_user(test::TestRequest::get().uri(&bob_uri), &w.api, w.alice)).await.0, 404);
        assert_eq!(send(&app, as_user(test::TestRequest::patch().uri(&bob_uri).set_json(json!({"email": "x@y.zz"})), &w.api, w.alice)).await.0, 404);
        assert_eq!(send(&app, as_user(test::TestRequest::delete().uri(&bob_uri), &w.api, w.alice)).await.0, 404);
        let alice_uri = format!("/api/users/{}", w.alice);
        // Changing one's own password needs the current one: not through PATCH (a stolen
        // access token must not become a stolen account), but through me/password/.
        let (status, v) = send(&app, as_user(test::TestRequest::patch().uri(&alice_uri).set_json(json!({"password": "new-pass"})), &w.api, w.alice)).await;
        assert_eq!(status, 403, "{v}");
        assert_eq!(send(&app, login_req("alice@example.com", "alice-pass")).await.0, 200, "unchanged");
        // Mass assignment.
        let (status, v) = send(&app, as_user(test::TestRequest::patch().uri(&alice_uri).set_json(json!({"is_enabled": false})), &w.api, w.alice)).await;
        assert_eq!(status, 403, "{v}");
        // Without a token the answer is 401, whatever the body asks for.
        let (status, v) = send(&app, test::TestRequest::patch().uri(&alice_uri).set_json(json!({"is_enabled": false}))).await;
        assert_eq!(status, 401, "{v}");
        for member in [json!({"id": Uuid::new_v4()}), json!({"created_at": "2000-01-01T00:00:00Z"}), json!({"roles": ["ADMIN"]})] {
            let (status, v) = send(&app, as_user(test::TestRequest::patch().uri(&alice_uri).set_json(member.clone()), &w.api, w.alice)).await;
            assert_eq!(status, 422, "{member}: {v}");
        }
        let (status, v) = send(&app, as_user(test::TestRequest::post().uri("/api/roles/").set_json(json!({"user_id": w.alice, "role": "ADMIN"})), &w.api, w.alice)).await;
        assert_eq!(status, 403, "users cannot grant themselves roles: {v}");
        let (_, me) = send(&app, as_user(test::TestRequest::get().uri("/api/users/me/"), &w.api, w.alice)).await;
        assert_eq!(me["is_enabled"], true);
        // Admins may disable users; disabled users cannot authenticate.
        assert_eq!(send(&app, as_user(test::TestRequest::patch().uri(&bob_uri).set_json(json!({"is_enabled": false})), &w.api, w.admin)).await.0, 200);
        assert_eq!(send(&app, login_req("bob@example.com", "bob-pass")).await.0, 401);
        assert_eq!(send(&app, as_user(test::TestRequest::get().uri("/api/users/me/"), &w.api, w.bob)).await.0, 401);
        // me/password/ changes one's own password, given the current one.
        let change = |current: &str| as_user(test::TestRequest::post().uri("/api/users/me/password/").set_json(json!({"current_password": current, "new_password": "new-pass"})), &w.api, w.alice);
        assert_eq!(send(&app, change("wrong")).await.0, 401);
        let (status, v) = send(&app, change("alice-pass")).await;
        assert_eq!(status, 200, "{v}");
        assert!(v["access_token"].is_string());
        assert_eq!(send(&app, login_req("alice@example.com", "new-pass")).await.0, 200);
        assert_eq!(send(&app, login_req("alice@example.com", "alice-pass")).await.0, 401);
    }

    async fn custom_user_model_with_public_registration(t) {
        let w = world(&t, t.config()).await;
        let app = test::init_service(w.api.app()).await;
        let (status, m) = send(&app, test::TestRequest::post().uri("/api/members/").set_json(json!({"email": "dave@example.com", "password": "dave-pass", "nickname": "D"}))).await;
        assert_eq!(status, 201, "public registration: {m}");
        assert_eq!(m["nickname"], "D");
        assert!(m.get("password").is_none());
        let (status, v) = send(&app, test::TestRequest::post().uri("/api/members/").set_json(json!({"email": "eve@example.com", "password": "p", "is_enabled": false}))).await;
        assert_eq!(status, 403, "registration cannot choose is_enabled: {v}");
        let (status, tokens) = send(&app, test::TestRequest::post().uri("/api/members/login/").set_json(json!({"email": "dave@example.com", "password": "dave-pass"}))).await;
        assert_eq!(status, 200);
        let auth = ("authorization", format!("Bearer {}", tokens["access_token"].as_str().unwrap()));
        let (_, me) = send(&app, test::TestRequest::get().uri("/api/members/me/").insert_header(auth.clone())).await;
        assert_eq!(me["nickname"], "D");
        // The same account through the built-in blueprint: both blueprints coexist.
        let (_, me) = send(&app, test::TestRequest::get().uri("/api/users/me/").insert_header(auth)).await;
        assert_eq!(me["email"], "dave@example.com");
        assert!(me.get("nickname").is_none());
        assert_eq!(send(&app, test::TestRequest::post().uri("/api/users/").set_json(json!({"email": "f@example.com", "password": "p"}))).await.0, 401, "the built-in model has no public registration");
    }

    async fn tokens_settings_roles_and_domains(t) {
        let w = world(&t, t.config()).await;
        let app = test::init_service(w.api.app()).await;
        // Tokens mirror their owner's rules; the value is never returned.
        let (status, tok) = send(&app, as_user(test::TestRequest::post().uri("/api/tokens/").set_json(json!({"token": "alice-api-key-0123456789abcdefghijk", "description": "ci"})), &w.api, w.alice)).await;
        assert_eq!(status, 201, "{tok}");
        assert_eq!(tok["user_id"], w.alice.to_string());
        assert!(tok.get("token").is_none());
        assert_eq!(tok["revoked"], false);
        let (status, v) = send(&app, as_user(test::TestRequest::post().uri("/api/tokens/").set_json(json!({"token": "k2", "user_id": w.bob})), &w.api, w.alice)).await;
        assert_eq!(status, 422, "{v}");
        let tok_uri = format!("/api/tokens/{}", tok["id"].as_str().unwrap());
        assert_eq!(send(&app, as_user(test::TestRequest::get().uri(&tok_uri), &w.api, w.bob)).await.0, 404);
        assert_eq!(send(&app, as_user(test::TestRequest::delete().uri(&tok_uri), &w.api, w.bob)).await.0, 404);
        let (status, v) = send(&app, as_user(test::TestRequest::get().uri("/api/tokens/?token=alice-api-key"), &w.api, w.alice)).await;
        assert_eq!(status, 400, "token values are not filterable: {v}");
        let (status, revoked) = send(&app, as_user(test::TestRequest::patch().uri(&tok_uri).set_json(json!({"revoked": true, "revoked_at": "2026-01-01T00:00:00Z"})), &w.api, w.alice)).await;
        assert_eq!(status, 200);
        assert_eq!(revoked["revoked"], true);
        let (_, list) = send(&app, as_user(test::TestRequest::get().uri("/api/tokens/"), &w.api, w.bob)).await;
        assert_eq!(list["pagination"]["total"], 0);
        let (_, list) = send(&app, as_user(test::TestRequest::get().uri("/api/tokens/"), &w.api, w.admin)).await;
        assert_eq!(list["pagination"]["total"], 1);

        // Settings: owner only; one value per user and key.
        let (status, s) = send(&app, as_user(test::TestRequest::post().uri("/api/settings/").set_json(json!({"key": "theme", "value": "dark"})), &w.api, w.alice)).await;
        assert_eq!(status, 201);
        let (status, _) = send(&app, as_user(test::TestRequest::post().uri("/api/settings/").set_json(json!({"key": "theme", "value": "light"})), &w.api, w.alice)).await;
        assert_eq!(status, 409);
        assert_eq!(send(&app, as_user(test::TestRequest::post().uri("/api/settings/").set_json(json!({"key": "theme", "value": "light"})), &w.api, w.bob)).await.0, 201);
        let s_uri = format!("/api/settings/{}", s["id"].as_str().unwrap());
        assert_eq!(send(&app, as_user(test::TestRequest::get().uri(&s_uri), &w.api, w.bob)).await.0, 404);
        assert_eq!(send(&app, as_user(test::TestRequest::patch().uri(&s_uri).set_json(json!({"value": "x"})), &w.api, w.bob)).await.0, 404);

        // Roles: read own, admins grant.
        let (status, role) = send(&app, as_user(test::TestRequest::post().uri("/api/roles/").set_json(json!({"user_id": w.alice, "role": "MODERATOR"})), &w.api, w.admin)).await;
        assert_eq!(status, 201, "{role}");
        assert_eq!(role["role"], "MODERATOR");
        assert!(role["domain_id"].is_null());
        let (_, list) = send(&app, as_user(test::TestRequest::get().uri("/api/roles/"), &w.api, w.alice)).await;
        assert_eq!(list["pagination"]["total"], 1);
        let role_uri = format!("/api/roles/{}", role["id"].as_str().unwrap());
        assert_eq!(send(&app, as_user(test::TestRequest::get().uri(&role_uri), &w.api, w.bob)).await.0, 404);
        let (status, _) = send(&app, as_user(test::TestRequest::delete().uri(&role_uri), &w.api, w.alice)).await;
        assert_eq!(status, 403, "alice can read but not remove her role");
        let loaded = crudforge::auth::load_user(&w.db, w.alice).await.unwrap().unwrap();
        assert!(loaded.has_role("MODERATOR", None) && !loaded.is_admin() && loaded.has_any_role());
        let admin = crudforge::auth::load_user(&w.db, w.admin).await.unwrap().unwrap();
        assert!(admin.is_admin());
        assert_eq!(serde_json::to_value(Role::SuperAdmin).unwrap(), "SUPERADMIN");
        assert_eq!(serde_json::to_value([Role::Admin, Role::Moderator, Role::User]).unwrap(), json!(["ADMIN", "MODERATOR", "USER"]));

        // Domains: anyone reads, admins create (issue #10); names are unique.
        assert_eq!(send(&app, test::TestRequest::post().uri("/api/domains/").set_json(json!({"name": "acme"}))).await.0, 401);
        assert_eq!(send(&app, as_user(test::TestRequest::post().uri("/api/domains/").set_json(json!({"name": "acme"})), &w.api, w.alice)).await.0, 403);
        let (status, d) = send(&app, as_user(test::TestRequest::post().uri("/api/domains/").set_json(json!({"name": "acme"})), &w.api, w.admin)).await;
        assert_eq!(status, 201);
        assert_eq!(d["active"], true);
        assert_eq!(send(&app, as_user(test::TestRequest::post().uri("/api/domains/").set_json(json!({"name": "acme"})), &w.api, w.admin)).await.0, 409);
        let (_, list) = send(&app, test::TestRequest::get().uri("/api/domains/?name=acme")).await;
        assert_eq!(list["pagination"]["total"], 1);
    }

    async fn user_methods(t) {
        let w = world(&t, t.config()).await;
        let mut conn = w.db.get().await.unwrap();
        let mut user = User::select(&mut conn, &[crudforge::condition::Cond::eq("id", crudforge::condition::Arg::Uuid(w.alice))], &[], None).await.unwrap().remove(0);
        drop(conn);
        assert!(user.check_password("alice-pass", COST).await.unwrap());
        assert!(!user.check_password("nope", COST).await.unwrap());
        user.set_password(&w.db, "fresh-pass", COST).await.unwrap();
        assert!(user.check_password("fresh-pass", COST).await.unwrap());
        assert!(!user.check_password("alice-pass", COST).await.unwrap());
    }

    async fn authentication_costs_one_query(t) {
        let cfg = t.config().with(|c| { c.db.orm_performance_monitoring = true; c.db.orm_slow_query_threshold = 60.0; });
        let w = world(&t, cfg).await;
        let app = test::init_service(w.api.app()).await;
        let (_, note) = send(&app, as_user(test::TestRequest::post().uri("/api/notes/").set_json(json!({"body": "n"})), &w.api, w.alice)).await;
        let uri = format!("/api/notes/{}", note["id"].as_str().unwrap());
        let resp = test::call_service(&app, as_user(test::TestRequest::get().uri(&uri), &w.api, w.alice).to_request()).await;
        assert_eq!(resp.status(), 200);
        let timing = resp.headers().get("server-timing").unwrap().to_str().unwrap().to_owned();
        assert!(timing.contains("\"2 queries\""), "one to authenticate (user and roles), one to read: {timing}");
    }

    async fn sessions_end_when_credentials_change(t) {
        let w = world(&t, t.config()).await;
        let app = test::init_service(w.api.app()).await;
        let me = |token: &str| test::TestRequest::get().uri("/api/users/me/").insert_header(("authorization", format!("Bearer {token}")));
        let refresh = |token: &str| test::TestRequest::post().uri("/api/users/refresh/").set_json(json!({"refresh_token": token}));
        let (status, t1) = send(&app, login_req("alice@example.com", "alice-pass")).await;
        assert_eq!(status, 200);
        let (a1, r1) = (t1["access_token"].as_str().unwrap().to_owned(), t1["refresh_token"].as_str().unwrap().to_owned());
        assert_eq!(send(&app, me(&a1)).await.0, 200);
        // An administrator sets a new password: every older session ends, on every instance
        // (the version lives in the user row), while a new login works.
        let alice_uri = format!("/api/users/{}", w.alice);
        assert_eq!(send(&app, as_user(test::TestRequest::patch().uri(&alice_uri).set_json(json!({"password": "second-pass"})), &w.api, w.admin)).await.0, 200);
        assert_eq!(send(&app, me(&a1)).await.0, 401, "access token from before the change");
        assert_eq!(send(&app, refresh(&r1)).await.0, 401, "refresh token from before the change");
        let (status, t2) = send(&app, login_req("alice@example.com", "second-pass")).await;
        assert_eq!(status, 200);
        let (a2, r2) = (t2["access_token"].as_str().unwrap().to_owned(), t2["refresh_token"].as_str().unwrap().to_owned());
        assert_eq!(send(&app, me(&a2)).await.0, 200, "a token issued after the change works");
        // A password reset through the library (as a recovery endpoint does) ends them too.
        users::set_password(&w.db, w.alice, "third-pass", COST).await.unwrap();
        assert_eq!(send(&app, me(&a2)).await.0, 401);
        assert_eq!(send(&app, refresh(&r2)).await.0, 401);
        let (_, t3) = send(&app, login_req("alice@example.com", "third-pass")).await;
        let (a3, r3) = (t3["access_token"].as_str().unwrap().to_owned(), t3["refresh_token"].as_str().unwrap().to_owned());
        // Logout revokes this session's refresh token; the access token lives until it expires.
        let logout = |access: &str, body: Value| test::TestRequest::post().uri("/api/users/logout/").insert_header(("authorization", format!("Bearer {access}"))).set_json(body);
        assert_eq!(send(&app, logout(&a3, json!({"refresh_token": r3}))).await.0, 204);
        assert_eq!(send(&app, refresh(&r3)).await.0, 401);
        assert_eq!(send(&app, me(&a3)).await.0, 200);
        // Another user's refresh token cannot be revoked by alice.
        let (_, bt) = send(&app, login_req("bob@example.com", "bob-pass")).await;
        let rb = bt["refresh_token"].as_str().unwrap();
        assert_eq!(send(&app, logout(&a3, json!({"refresh_token": rb}))).await.0, 401);
        assert_eq!(send(&app, refresh(rb)).await.0, 200, "bob's session is untouched");
        // Logging out everywhere ends the access token too.
        let (_, t4) = send(&app, login_req("alice@example.com", "third-pass")).await;
        let r4 = t4["refresh_token"].as_str().unwrap().to_owned();
        assert_eq!(send(&app, logout(&a3, json!({"all": true}))).await.0, 204);
        assert_eq!(send(&app, me(&a3)).await.0, 401);
        assert_eq!(send(&app, refresh(&r4)).await.0, 401);
        // Disabling ends sessions; enabling again does not bring them back.
        let (_, t5) = send(&app, login_req("alice@example.com", "third-pass")).await;
        let (a5, r5) = (t5["access_token"].as_str().unwrap().to_owned(), t5["refresh_token"].as_str().unwrap().to_owned());
        assert_eq!(send(&app, as_user(test::TestRequest::patch().uri(&alice_uri).set_json(json!({"is_enabled": false})), &w.api, w.admin)).await.0, 200);
        assert_eq!(send(&app, as_user(test::TestRequest::patch().uri(&alice_uri).set_json(json!({"is_enabled": true})), &w.api, w.admin)).await.0, 200);
        assert_eq!(send(&app, me(&a5)).await.0, 401);
        assert_eq!(send(&app, refresh(&r5)).await.0, 401);
    }

    async fn token_records_are_digests_of_one_kind(t) {
        let w = world(&t, t.config()).await;
        let app = test::init_service(w.api.app()).await;
        let key = "alice-api-key-0123456789-abcdefghijkl";
        let (status, tok) = send(&app, as_user(test::TestRequest::post().uri("/api/tokens/").set_json(json!({"token": key, "description": "ci"})), &w.api, w.alice)).await;
        assert_eq!(status, 201, "{tok}");
        assert_eq!(tok["kind"], "api_key");
        // Stored as the SHA-256 of the value, never as given.
        let mut conn = w.db.get().await.unwrap();
        let id = Uuid::parse_str(tok["id"].as_str().unwrap()).unwrap();
        let stored: String = with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::get_result(
                crudforge::users::schema::tokens::table
                    .filter(crudforge::users::schema::tokens::id.eq(crudforge::sql_types::Portable(id)))
                    .select(crudforge::users::schema::tokens::token),
                c,
            )
            .await
        })
        .unwrap();
        drop(conn);
        assert_ne!(stored, key);
        assert_eq!(stored, crudforge::__bench::digest_hex(key));
        assert_eq!(users::token_owner(&w.db, users::TokenRecord::ApiKey, key).await.unwrap(), Some(w.alice));
        assert_eq!(users::token_owner(&w.db, users::TokenRecord::ApiKey, &stored).await.unwrap(), None, "the digest is no key");
        // A refresh token's id is a refresh record: refresh accepts it, API-key login does not.
        let (_, t1) = send(&app, login_req("alice@example.com", "alice-pass")).await;
        let claims = w.api.state().tokens.verify(t1["refresh_token"].as_str().unwrap(), TokenKind::Refresh).unwrap();
        let jti = claims.jti.to_string();
        assert_eq!(users::token_owner(&w.db, users::TokenRecord::ApiKey, &jti).await.unwrap(), None);
        assert_eq!(users::token_owner(&w.db, users::TokenRecord::Refresh, &jti).await.unwrap(), Some(w.alice));
        // An owner can revoke, never restore, and bring an expiry forward, never push it out.
        let uri = format!("/api/tokens/{id}");
        let patch = |body: Value| as_user(test::TestRequest::patch().uri(&uri).set_json(body), &w.api, w.alice);
        assert_eq!(send(&app, patch(json!({"expires_at": "2099-01-01T00:00:00Z"}))).await.0, 200);
        let (status, v) = send(&app, patch(json!({"expires_at": "2100-01-01T00:00:00Z"}))).await;
        assert_eq!((status.as_u16(), v["field"].as_str()), (422, Some("expires_at")), "{v}");
        let (status, v) = send(&app, patch(json!({"expires_at": null}))).await;
        assert_eq!(status, 422, "{v}");
        assert_eq!(send(&app, patch(json!({"expires_at": "2098-01-01T00:00:00Z"}))).await.0, 200);
        assert_eq!(send(&app, patch(json!({"revoked": true, "revoked_at": "2026-01-01T00:00:00Z"}))).await.0, 200);
        let (status, v) = send(&app, patch(json!({"revoked": false}))).await;
        assert_eq!((status.as_u16(), v["field"].as_str()), (422, Some("revoked")), "{v}");
        assert_eq!(users::token_owner(&w.db, users::TokenRecord::ApiKey, key).await.unwrap(), None, "still revoked");
        // API keys too short to resist guessing are refused, whatever path stores them.
        let (status, v) = send(&app, as_user(test::TestRequest::post().uri("/api/tokens/").set_json(json!({"token": "short-key"})), &w.api, w.alice)).await;
        assert_eq!((status.as_u16(), v["field"].as_str()), (422, Some("token")), "{v}");
        assert_eq!(users::store_token(&w.db, users::TokenRecord::ApiKey, w.alice, "short-key", None, None).await.unwrap_err().problem().status, 422);
        // Clients cannot choose the kind.
        let (status, v) = send(&app, as_user(test::TestRequest::post().uri("/api/tokens/").set_json(json!({"token": "x-0123456789-0123456789-0123456789", "kind": "refresh"})), &w.api, w.alice)).await;
        assert_eq!(status, 422, "{v}");
    }
}

async fn users_hash(db: &Database, id: Uuid) -> String {
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result::<Option<String>>(
            crudforge::users::schema::users::table
                .filter(crudforge::users::schema::users::id.eq(crudforge::sql_types::Portable(id)))
                .select(crudforge::users::schema::users::password),
            c,
        )
        .await
    })
    .unwrap()
    .unwrap()
}

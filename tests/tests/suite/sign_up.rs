//! Sign-up (`UserBlueprint::sign_up`) on both backends: anonymous registration works when the
//! blueprint enables it and only then; a self-registering caller sends only e-mail, password
//! and the listed members (anything else is refused naming it, nothing is written) and gets
//! no role; the account logs in and is throttled like any other; administrators keep the full
//! create; the OpenAPI description shows the operation open to anonymous callers and keeps the
//! schema names of the application's model; mounting refuses members that cannot be sign-up
//! members, and a batch POST beside sign-up; sign-ups are throttled per client address; the
//! uniform answer does not tell whether an address was taken.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::test;
use chrono::{DateTime, Utc};
use crudforge::crud::Operation;
use crudforge::users::{self, Role, UserBlueprint, UserModel};
use crudforge::{with_conn, Api, Config, Database, Resource};
use crudforge_tests::{backend_tests, Backend, TestDb};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::{json, Value};
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    #[sql_name = "users"]
    players (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        email -> Text,
        password -> Nullable<Text>,
        is_enabled -> Bool,
        nickname -> Nullable<Text>,
        karma -> Integer,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    #[sql_name = "users"]
    opens (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        email -> Text,
        password -> Nullable<Text>,
        is_enabled -> Bool,
    }
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
        deleted_at -> Nullable<PortableTimestamp>,
    }
}

/// An application's user model for its extra columns only: no `PUBLIC_REGISTRATION`.
#[derive(Debug, Queryable, Selectable, Resource)]
#[diesel(table_name = players)]
#[resource(rules = crudforge::users::UserRules)]
pub struct Player {
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
    #[resource(default = 0)]
    pub karma: i32,
}

impl UserModel for Player {}

/// A model with the contract's public registration.
#[derive(Debug, Queryable, Selectable, Resource)]
#[diesel(table_name = opens)]
#[resource(rules = crudforge::users::UserRules)]
pub struct Open {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(email)]
    pub email: String,
    #[resource(password)]
    pub password: Option<String>,
    #[resource(default = true)]
    pub is_enabled: bool,
}

impl UserModel for Open {
    const PUBLIC_REGISTRATION: bool = true;
}

/// A user model that keeps deleted accounts.
#[derive(Debug, Queryable, Selectable, Resource)]
#[diesel(table_name = members)]
#[resource(rules = crudforge::users::UserRules, soft_delete)]
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
    pub deleted_at: Option<DateTime<Utc>>,
}

impl UserModel for Member {}

const COST: u32 = 4;

/// The database with the `nickname` and `karma` columns and an administrator.
async fn setup(t: &TestDb) -> (Config, Database, Uuid) {
    let cfg = t.config().with(|c| {
        c.auth.bcrypt_cost = COST;
        c.auth.login_max_failures_per_account_and_address = 3;
    });
    let db = t.open(&cfg).await;
    // The same DDL on both backends.
    let ddl = "ALTER TABLE users ADD COLUMN nickname TEXT;
               ALTER TABLE users ADD COLUMN karma INTEGER NOT NULL DEFAULT 0;";
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(ddl).await).unwrap();
    drop(conn);
    let admin = users::create_user(&db, "admin@example.com", "admin-pass", true, COST)
        .await
        .unwrap();
    users::grant_role(&db, admin, Role::Admin.as_str(), None)
        .await
        .unwrap();
    (cfg, db, admin)
}

/// The built-in user model at `/api/users/` with sign-up, and `Player` at `/api/players/`
/// with sign-up of `nickname`.
async fn world(t: &TestDb) -> (Api, Database, Uuid) {
    let (cfg, db, admin) = setup(t).await;
    let api = Api::new(cfg, db.clone())
        .unwrap()
        .mount(UserBlueprint::default().sign_up(&[]))
        .unwrap()
        .mount(
            UserBlueprint::<Player>::new("/api/players/")
                .name("players")
                .sign_up(&["nickname"]),
        )
        .unwrap();
    (api, db, admin)
}

async fn body<B: MessageBody>(resp: ServiceResponse<B>) -> (u16, Value) {
    let status = resp.status().as_u16();
    let bytes = test::read_body(resp).await;
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

async fn send<S, B>(app: &S, req: test::TestRequest) -> (u16, Value)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    body(test::call_service(app, req.to_request()).await).await
}

fn post(uri: &str, body: Value) -> test::TestRequest {
    test::TestRequest::post().uri(uri).set_json(body)
}

fn bearer(api: &Api, id: Uuid) -> (&'static str, String) {
    (
        "authorization",
        format!("Bearer {}", api.state().tokens.access(id).unwrap()),
    )
}

async fn user_count(db: &Database) -> i64 {
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result::<i64>(players::table.count(), c).await
    })
    .unwrap()
}

fn peer() -> std::net::SocketAddr {
    "192.0.2.10:4000".parse().unwrap()
}

backend_tests! {
    async fn anonymous_sign_up_creates_an_account_without_roles_that_logs_in(t) {
        let (api, db, _) = world(&t).await;
        let app = test::init_service(api.app()).await;
        let (status, u) = send(&app, post("/api/users/", json!({"email": "New@Example.com", "password": "new-pass-1"}))).await;
        assert_eq!(status, 201, "{u}");
        assert_eq!(u["email"], "new@example.com");
        assert_eq!(u["is_enabled"], true);
        assert!(u.get("password").is_none());
        let id: Uuid = u["id"].as_str().unwrap().parse().unwrap();
        let loaded = crudforge::auth::load_user(&db, id).await.unwrap().unwrap();
        assert!(loaded.roles.is_empty(), "a self-registered user has no role");
        assert!(!loaded.is_admin());
        let (status, tokens) = send(&app, post("/api/users/login/", json!({"email": "new@example.com", "password": "new-pass-1"}))).await;
        assert_eq!(status, 200, "{tokens}");
        let auth = ("authorization", format!("Bearer {}", tokens["access_token"].as_str().unwrap()));
        let (status, me) = send(&app, test::TestRequest::get().uri("/api/users/me/").insert_header(auth)).await;
        assert_eq!(status, 200);
        assert_eq!(me["id"], id.to_string());
        // The same rules as any creation: the password policy, one account per address.
        let (status, v) = send(&app, post("/api/users/", json!({"email": "short@example.com", "password": "short"}))).await;
        assert_eq!((status, v["field"].as_str()), (422, Some("password")), "{v}");
        let (status, v) = send(&app, post("/api/users/", json!({"email": "NEW@example.com", "password": "other-pass"}))).await;
        assert_eq!(status, 409, "{v}");
    }

    async fn members_outside_the_sign_up_list_are_refused_and_nothing_is_written(t) {
        let (api, db, alice_admin) = world(&t).await;
        let app = test::init_service(api.app()).await;
        let before = user_count(&db).await;
        // Not a member of the built-in model's sign-up: 422 naming it.
        for (member, value) in [("roles", json!(["ADMIN"])), ("nickname", json!("n")), ("id", json!(Uuid::new_v4()))] {
            let mut b = json!({"email": "x@example.com", "password": "long-enough"});
            b[member] = value;
            let (status, v) = send(&app, post("/api/users/", b)).await;
            assert_eq!(status, 422, "{member}: {v}");
            assert_eq!(v["field"], member, "{v}");
            assert!(v["detail"].as_str().unwrap().contains("sign-up"), "{v}");
        }
        // A member only administrators set: refused as everywhere (401 anonymous).
        let (status, v) = send(&app, post("/api/users/", json!({"email": "x@example.com", "password": "long-enough", "is_enabled": false}))).await;
        assert_eq!(status, 401, "{v}");
        assert!(v["detail"].as_str().unwrap().contains("is_enabled"), "{v}");
        // A listed member of the application's model is accepted; others of it are not.
        let (status, v) = send(&app, post("/api/players/", json!({"email": "p@example.com", "password": "long-enough", "karma": 1000}))).await;
        assert_eq!((status, v["field"].as_str()), (422, Some("karma")), "{v}");
        assert_eq!(user_count(&db).await, before, "nothing was written");
        let (status, p) = send(&app, post("/api/players/", json!({"email": "p@example.com", "password": "long-enough", "nickname": "Pip"}))).await;
        assert_eq!(status, 201, "{p}");
        assert_eq!((p["nickname"].as_str(), p["karma"].as_i64()), (Some("Pip"), Some(0)));
        // A signed-in user who is not an administrator signs up under the same rules.
        let bob = users::create_user(&db, "bob@example.com", "bob-pass-1", true, COST).await.unwrap();
        let (status, v) = send(&app, post("/api/players/", json!({"email": "q@example.com", "password": "long-enough", "karma": 5})).insert_header(bearer(&api, bob))).await;
        assert_eq!((status, v["field"].as_str()), (422, Some("karma")), "{v}");
        let (status, v) = send(&app, post("/api/players/", json!({"email": "q@example.com", "password": "long-enough", "is_enabled": false})).insert_header(bearer(&api, bob))).await;
        assert_eq!(status, 403, "{v}");
        // Administrators keep the full create.
        let (status, v) = send(&app, post("/api/players/", json!({"email": "r@example.com", "password": "long-enough", "karma": 7, "is_enabled": false})).insert_header(bearer(&api, alice_admin))).await;
        assert_eq!(status, 201, "{v}");
        assert_eq!((v["karma"].as_i64(), v["is_enabled"].as_bool()), (Some(7), Some(false)));
    }

    async fn without_sign_up_creation_stays_for_administrators(t) {
        let (cfg, db, admin) = setup(&t).await;
        let api = Api::new(cfg, db)
            .unwrap()
            .mount(UserBlueprint::default())
            .unwrap()
            .mount(UserBlueprint::<Player>::new("/api/players/").name("players"))
            .unwrap();
        let app = test::init_service(api.app()).await;
        for uri in ["/api/users/", "/api/players/"] {
            let (status, v) = send(&app, post(uri, json!({"email": "x@example.com", "password": "long-enough"}))).await;
            assert_eq!(status, 401, "{uri}: {v}");
            let (status, v) = send(&app, post(uri, json!({"email": format!("y{}@example.com", uri.len()), "password": "long-enough"})).insert_header(bearer(&api, admin))).await;
            assert_eq!(status, 201, "{uri}: {v}");
        }
        let doc: Value = serde_json::from_str(&api.openapi_json()).unwrap();
        let post = &doc["paths"]["/api/users/"]["post"];
        assert!(!post["security"].as_array().unwrap().iter().any(|r| r == &json!({})), "{post}");
    }

    async fn a_self_registered_account_is_throttled_like_any_other(t) {
        let (api, _, _) = world(&t).await;
        let app = test::init_service(api.app()).await;
        let (status, _) = send(&app, post("/api/users/", json!({"email": "t@example.com", "password": "right-pass"}))).await;
        assert_eq!(status, 201);
        let login = |password: &str| post("/api/users/login/", json!({"email": "t@example.com", "password": password})).peer_addr(peer());
        for _ in 0..3 {
            assert_eq!(send(&app, login("wrong-pass")).await.0, 401);
        }
        let (status, v) = send(&app, login("right-pass")).await;
        assert_eq!(status, 429, "LOGIN_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS applies: {v}");
    }

    async fn the_description_shows_sign_up_open_and_keeps_the_model_names(t) {
        let (api, _, _) = world(&t).await;
        let doc: Value = serde_json::from_str(&api.openapi_json()).unwrap();
        for path in ["/api/users/", "/api/players/"] {
            let post = &doc["paths"][path]["post"];
            let security = post["security"].as_array().unwrap();
            assert!(security.contains(&json!({})), "{path}: anonymous callers are let in: {post}");
            assert!(post["description"].as_str().unwrap().contains("anyone"), "{path}: {post}");
            assert!(post["responses"].get("422").is_some(), "{path}");
        }
        // Other operations keep their rules: INDEX still needs a token.
        let index = &doc["paths"]["/api/players/"]["get"];
        assert!(!index["security"].as_array().unwrap().contains(&json!({})), "{index}");
        // The application's model keeps the names it has.
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        for name in ["Player", "PlayerCreate", "PlayerUpdate", "User", "UserCreate"] {
            assert!(schemas.contains_key(name), "{name} in {:?}", schemas.keys().collect::<Vec<_>>());
        }
        assert_eq!(
            doc["paths"]["/api/players/"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/PlayerCreate"
        );
    }

    async fn mounting_refuses_members_that_cannot_be_sign_up_members(t) {
        let (cfg, db, _) = setup(&t).await;
        for (members, expect) in [
            (&["is_enabled"][..], "only by administrators"),
            (&["id"], "`id` is not a member"),
            (&["nick"], "`nick` is not a member"),
        ] {
            let e = Api::new(cfg.clone(), db.clone())
                .unwrap()
                .mount(UserBlueprint::<Player>::new("/api/players/").sign_up(members))
                .unwrap_err()
                .to_string();
            assert!(e.contains(expect), "{members:?}: {e}");
        }
        let e = Api::new(cfg.clone(), db.clone())
            .unwrap()
            .mount(UserBlueprint::default().crud(|c| c.skip([Operation::Post])).sign_up(&[]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("POST is not enabled"), "{e}");
        let e = Api::new(cfg, db)
            .unwrap()
            .mount(UserBlueprint::default().crud(|c| c.admin_only([Operation::Post])).sign_up(&[]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("admin_only"), "{e}");
    }

    async fn sign_ups_are_throttled_per_client_address(t) {
        let (cfg, db, admin) = setup(&t).await;
        let cfg = cfg.with(|c| c.auth.sign_up_max_per_address = 3);
        let api = Api::new(cfg, db.clone()).unwrap().mount(UserBlueprint::default().sign_up(&[])).unwrap();
        let app = test::init_service(api.app()).await;
        let from = |n: u32, addr: &str| post("/api/users/", json!({"email": format!("s{n}@example.com"), "password": "long-enough"})).peer_addr(addr.parse().unwrap());
        // Every sign-up counts, a refused one too (here an address already taken).
        for n in 0..2 {
            assert_eq!(send(&app, from(n, "192.0.2.10:4000")).await.0, 201);
        }
        assert_eq!(send(&app, from(0, "192.0.2.10:4001")).await.0, 409);
        let before = user_count(&db).await;
        let resp = test::call_service(&app, from(9, "192.0.2.10:4002").to_request()).await;
        assert_eq!(resp.status().as_u16(), 429);
        let retry: u64 = resp.headers().get("retry-after").unwrap().to_str().unwrap().parse().unwrap();
        assert!((1..=3600).contains(&retry), "{retry}");
        let (_, v) = body(resp).await;
        assert_eq!(v["type"], "/errors/too_many_requests_error", "{v}");
        assert_eq!(user_count(&db).await, before, "nothing was created");
        // Another address is counted apart; an administrator is not counted.
        assert_eq!(send(&app, from(10, "198.51.100.7:4000")).await.0, 201);
        let (status, v) = send(&app, from(11, "192.0.2.10:4003").insert_header(bearer(&api, admin))).await;
        assert_eq!(status, 201, "{v}");
        // Login is not counted against the sign-up limit, nor sign-ups against login.
        let (status, _) = send(&app, post("/api/users/login/", json!({"email": "s0@example.com", "password": "long-enough"})).peer_addr(peer())).await;
        assert_eq!(status, 200);
        // The description says so.
        let doc: Value = serde_json::from_str(&api.openapi_json()).unwrap();
        let post_doc = &doc["paths"]["/api/users/"]["post"];
        assert_eq!(post_doc["responses"]["429"]["headers"]["Retry-After"]["required"], true, "{post_doc}");
        assert!(post_doc["description"].as_str().unwrap().contains("SIGN_UP_MAX_PER_ADDRESS"), "{post_doc}");
    }

    async fn public_registration_is_throttled_too(t) {
        let (cfg, db, _) = setup(&t).await;
        let cfg = cfg.with(|c| c.auth.sign_up_max_per_address = 1);
        let api = Api::new(cfg, db).unwrap().mount(UserBlueprint::<Open>::new("/api/open/")).unwrap();
        let app = test::init_service(api.app()).await;
        let from = |n: u32| post("/api/open/", json!({"email": format!("o{n}@example.com"), "password": "long-enough"})).peer_addr(peer());
        assert_eq!(send(&app, from(0)).await.0, 201);
        assert_eq!(send(&app, from(1)).await.0, 429);
    }

    async fn a_batch_post_is_refused_beside_sign_up(t) {
        let (cfg, db, _) = setup(&t).await;
        for bp in [
            UserBlueprint::default().sign_up(&[]).crud(|c| c.batch([Operation::Post])),
            UserBlueprint::default().crud(|c| c.batch([Operation::Post])).sign_up(&[]),
        ] {
            let e = Api::new(cfg.clone(), db.clone()).unwrap().mount(bp).unwrap_err().to_string();
            assert!(e.contains("batch form of POST cannot be mounted with sign-up"), "{e}");
        }
        let e = Api::new(cfg.clone(), db.clone()).unwrap()
            .mount(UserBlueprint::<Open>::new("/api/open/").crud(|c| c.batch([Operation::Post])))
            .unwrap_err().to_string();
        assert!(e.contains("batch form of POST"), "{e}");
        // Without sign-up, administrators keep their batch creation; PATCH batches stay.
        Api::new(cfg.clone(), db.clone()).unwrap().mount(UserBlueprint::default().crud(|c| c.batch([Operation::Post]))).unwrap();
        Api::new(cfg.clone(), db.clone()).unwrap().mount(UserBlueprint::default().sign_up(&[]).crud(|c| c.batch([Operation::Patch]))).unwrap();
        let e = Api::new(cfg, db).unwrap().mount(UserBlueprint::default().uniform_sign_up()).unwrap_err().to_string();
        assert!(e.contains("uniform_sign_up"), "{e}");
    }

    async fn the_uniform_answer_does_not_tell_whether_an_address_was_taken(t) {
        let (cfg, db, admin) = setup(&t).await;
        let api = Api::new(cfg, db.clone()).unwrap().mount(UserBlueprint::default().sign_up(&[]).uniform_sign_up()).unwrap();
        let app = test::init_service(api.app()).await;
        let answer = |email: &str, password: &str| {
            let req = post("/api/users/", json!({"email": email, "password": password}));
            let app = &app;
            async move {
                let resp = test::call_service(app, req.to_request()).await;
                let headers: Vec<String> = resp.headers().keys().map(|k| k.as_str().to_owned()).filter(|k| k != "x-request-id").collect();
                let (status, v) = body(resp).await;
                (status, v, headers)
            }
        };
        let before = user_count(&db).await;
        let free = answer("Fresh@Example.com", "long-enough").await;
        assert_eq!(user_count(&db).await, before + 1, "a free address gets its account");
        // Taken: in another case, by an administrator's account, by the account just made.
        let taken = answer("FRESH@example.com", "other-password").await;
        let admins = answer("admin@example.com", "other-password").await;
        assert_eq!(user_count(&db).await, before + 1, "nothing more was created");
        assert_eq!(free.0, 202, "{:?}", free.1);
        assert_eq!(free, taken, "the same status, body and headers");
        assert_eq!(free, admins);
        assert_eq!(free.1, json!({"detail": "The sign-up has been received."}));
        assert!(!free.2.iter().any(|h| h == "location" || h == "etag"), "{:?}", free.2);
        // Refusals that do not depend on the address stay as they are.
        let (status, v, _) = answer("other@example.com", "short").await;
        assert_eq!((status, v["field"].as_str()), (422, Some("password")), "{v}");
        // Administrators keep the full answers.
        let (status, v) = send(&app, post("/api/users/", json!({"email": "fresh@example.com", "password": "long-enough"})).insert_header(bearer(&api, admin))).await;
        assert_eq!(status, 409, "{v}");
        let (status, v) = send(&app, post("/api/users/", json!({"email": "new-by-admin@example.com", "password": "long-enough"})).insert_header(bearer(&api, admin))).await;
        assert_eq!((status, v["email"].as_str()), (201, Some("new-by-admin@example.com")), "{v}");
        // The description has the 202.
        let doc: Value = serde_json::from_str(&api.openapi_json()).unwrap();
        let responses = &doc["paths"]["/api/users/"]["post"]["responses"];
        assert!(responses.get("202").is_some() && responses.get("201").is_some(), "{responses}");
    }

    async fn an_address_of_a_soft_deleted_account_is_taken(t) {
        let (cfg, db, _) = setup(&t).await;
        let mut conn = db.get().await.unwrap();
        let ddl = match db.backend() {
            Backend::Sqlite => "ALTER TABLE users ADD COLUMN deleted_at TEXT;",
            Backend::Postgres => "ALTER TABLE users ADD COLUMN deleted_at TIMESTAMPTZ;",
        };
        with_conn!(conn, |c| c.batch_execute(ddl).await).unwrap();
        drop(conn);
        let api = Api::new(cfg.clone(), db.clone()).unwrap().mount(UserBlueprint::<Member>::new("/api/members/").sign_up(&[])).unwrap();
        let app = test::init_service(api.app()).await;
        let (status, u) = send(&app, post("/api/members/", json!({"email": "gone@example.com", "password": "long-enough"}))).await;
        assert_eq!(status, 201, "{u}");
        let id: Uuid = u["id"].as_str().unwrap().parse().unwrap();
        let tokens = api.state().tokens.access(id).unwrap();
        let resp = test::call_service(&app, test::TestRequest::delete().uri(&format!("/api/members/{id}")).insert_header(("authorization", format!("Bearer {tokens}"))).to_request()).await;
        assert_eq!(resp.status().as_u16(), 204);
        // Deleted, the row keeps its address: a new sign-up with it is 409 ...
        let (status, v) = send(&app, post("/api/members/", json!({"email": "gone@example.com", "password": "long-enough"}))).await;
        assert_eq!((status, v["type"].as_str()), (409, Some("/errors/conflict_error")), "{v}");
        // ... and with the uniform answer, the same 202 as a free address.
        let api = Api::new(cfg, db).unwrap().mount(UserBlueprint::<Member>::new("/api/members/").sign_up(&[]).uniform_sign_up()).unwrap();
        let app = test::init_service(api.app()).await;
        let taken = send(&app, post("/api/members/", json!({"email": "gone@example.com", "password": "long-enough"}))).await;
        let free = send(&app, post("/api/members/", json!({"email": "free@example.com", "password": "long-enough"}))).await;
        assert_eq!(taken.0, 202);
        assert_eq!(taken, free);
    }
}

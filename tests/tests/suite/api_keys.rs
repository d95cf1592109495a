//! API keys limited to scopes, on both backends: a read-only key reads and writes nothing, a
//! key scoped to one resource (or to some of its operations) is refused elsewhere (403, before
//! the rules), an expired key is refused at exchange and the token of a key never outlives
//! it, the exchange records the key's last use, malformed scopes are 422 and store nothing, a
//! scoped token never changes a password nor mints a key, and a key without scopes keeps its
//! owner's full access.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{Duration, Utc};
use crudforge::auth::TokenKind;
use crudforge::crud::{CustomRoute, OperationType};
use crudforge::sql_types::Portable;
use crudforge::users::schema::tokens;
use crudforge::users::{self, Role, Token, UserBlueprint, UserSetting};
use crudforge::{with_conn, Api, Database, Resource};
use crudforge_tests::critters::{self, Critter};
use crudforge_tests::http::{auth, bearer, exchange, send, Req};
use crudforge_tests::{backend_tests, Backend, TestDb};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::{json, Value};
use uuid::Uuid;

const COST: u32 = 4;
const PASSWORD: &str = "alice pass phrase";

struct World {
    api: Api,
    db: Database,
    alice: Uuid,
}

/// The body of the application's token login.
#[derive(serde::Deserialize)]
struct KeyLogin {
    token: String,
}

/// `POST /api/users/key_login/`: what an application's token login does with the library's
/// exchange.
async fn key_login(req: HttpRequest, body: web::Json<KeyLogin>) -> crudforge::Result<HttpResponse> {
    let access = users::exchange_api_key(&req, &body.token, None, None).await?;
    Ok(HttpResponse::Ok().json(access))
}

async fn world(t: &TestDb) -> World {
    world_with(t, |api| api).await
}

/// The world, with what `extra` mounts besides.
async fn world_with(t: &TestDb, extra: impl FnOnce(Api) -> Api) -> World {
    let cfg = t.config().with(|c| {
        c.auth.bcrypt_cost = COST;
        c.auth.login_max_failures_per_account_and_address = 0;
        c.auth.login_max_failures_per_account = 0;
        c.auth.login_max_failures_per_address = 0;
    });
    let db = t.open(&cfg).await;
    critters::create_table(&db).await;
    let alice = users::create_user(&db, "alice@example.com", PASSWORD, true, COST)
        .await
        .unwrap();
    // An administrator: scopes narrow even what administrators may do.
    users::grant_role(&db, alice, Role::Admin.as_str(), None)
        .await
        .unwrap();
    let login = CustomRoute::new(OperationType::Post, "key_login/", || {
        web::post().to(key_login)
    })
    .public();
    let api = Api::new(cfg, db.clone())
        .unwrap()
        .mount(UserBlueprint::default().crud(|bp| bp.route(login)))
        .unwrap()
        .mount(Token::blueprint("/api/tokens/"))
        .unwrap()
        .mount(UserSetting::blueprint("/api/settings/"))
        .unwrap()
        .mount(Critter::blueprint("/api/critters/"))
        .unwrap();
    let api = extra(api);
    World { api, db, alice }
}

/// A key value of 40 characters, different for each `n`.
fn key(n: u32) -> String {
    format!("test-api-key-{n:04}-0123456789abcdefghijklm")
}

/// Creates a key as `w.alice` with `body` (its `token` member added): the record.
async fn create_key<S, B>(app: &S, w: &World, n: u32, mut body: Value) -> Value
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    body["token"] = json!(key(n));
    let (status, record) = send(
        app,
        auth(
            Req::post().uri("/api/tokens/").set_json(body),
            &w.api,
            w.alice,
        ),
    )
    .await;
    assert_eq!(status, 201, "{record}");
    record
}

/// Exchanges key `n`: the status and the answer.
async fn login<S, B>(app: &S, n: u32) -> (u16, Value)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    send(
        app,
        Req::post()
            .uri("/api/users/key_login/")
            .set_json(json!({"token": key(n)})),
    )
    .await
}

/// Exchanges key `n`, expecting success: the access token.
async fn access<S, B>(app: &S, n: u32) -> String
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let (status, v) = login(app, n).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["token_type"], "bearer");
    v["access_token"].as_str().unwrap().to_owned()
}

/// Sends `req` with `token`: the status, and the body when it is a problem (its content type
/// checked).
async fn with<S, B>(app: &S, req: Req, token: &str) -> (u16, Value)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let (status, headers, body) = exchange(app, bearer(req, token)).await;
    if status >= 400 {
        assert_eq!(
            headers.get("content-type").and_then(|v| v.to_str().ok()),
            Some("application/problem+json"),
            "{status}"
        );
    }
    let v = if body.is_empty() {
        Value::Null
    } else {
        crudforge_tests::http::json_of(&body)
    };
    (status, v)
}

/// A critter created by an unscoped caller: its path.
async fn a_critter<S, B>(app: &S, w: &World, name: &str) -> String
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let (status, c) = send(
        app,
        auth(
            Req::post()
                .uri("/api/critters/")
                .set_json(json!({"name": name, "species": "cat"})),
            &w.api,
            w.alice,
        ),
    )
    .await;
    assert_eq!(status, 201, "{c}");
    format!("/api/critters/{}", c["id"].as_str().unwrap())
}

/// The number of Token records of kind `api_key`.
async fn keys_stored(db: &Database) -> i64 {
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            tokens::table.filter(tokens::kind.eq("api_key")).count(),
            c,
        )
        .await
    })
    .unwrap()
}

backend_tests! {
    async fn a_read_only_key_lists_and_reads_but_writes_nothing(t) {
        let w = world(&t).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let item = a_critter(&app, &w, "Tom").await;
        let record = create_key(&app, &w, 1, json!({"description": "dashboard", "scopes": "read"})).await;
        assert_eq!(record["scopes"], "read");
        let token = access(&app, 1).await;
        let claims = w.api.state().tokens.verify(&token, TokenKind::Access).unwrap();
        assert_eq!(claims.scope.as_deref(), Some("read"));
        let (status, list) = with(&app, Req::get().uri("/api/critters/"), &token).await;
        assert_eq!(status, 200, "{list}");
        assert_eq!(list["data"].as_array().unwrap().len(), 1);
        assert_eq!(with(&app, Req::get().uri(&item), &token).await.0, 200);
        assert_eq!(with(&app, Req::get().uri("/api/users/me/"), &token).await.0, 200);
        assert_eq!(with(&app, Req::get().uri("/api/settings/"), &token).await.0, 200);
        // Writes: 403, whatever the resource, and nothing changes.
        let (status, v) = with(&app, Req::post().uri("/api/critters/").set_json(json!({"name": "Jerry", "species": "mouse"})), &token).await;
        assert_eq!(status, 403, "{v}");
        assert!(v["detail"].as_str().unwrap().contains("Critter:create"), "{v}");
        assert_eq!(with(&app, Req::patch().uri(&item).set_json(json!({"name": "Tim"})), &token).await.0, 403);
        assert_eq!(with(&app, Req::delete().uri(&item), &token).await.0, 403);
        assert_eq!(with(&app, Req::post().uri("/api/settings/").set_json(json!({"key": "k", "value": "v"})), &token).await.0, 403);
        // Judged before the rules and the row: a delete of no row is 403 too, not 404.
        assert_eq!(with(&app, Req::delete().uri(&format!("/api/critters/{}", Uuid::new_v4())), &token).await.0, 403);
        let (_, after) = send(&app, auth(Req::get().uri(&item), &w.api, w.alice)).await;
        assert_eq!(after["name"], "Tom");
        let (_, list) = send(&app, auth(Req::get().uri("/api/critters/"), &w.api, w.alice)).await;
        assert_eq!(list["pagination"]["total"], 1);
        // The older building block of a token login does not find a key limited to scopes.
        assert_eq!(users::token_owner(&w.db, users::TokenRecord::ApiKey, &key(1)).await.unwrap(), None);
    }

    async fn a_key_scoped_to_one_resource_is_refused_on_another(t) {
        let w = world(&t).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        create_key(&app, &w, 2, json!({"scopes": "Critter"})).await;
        let token = access(&app, 2).await;
        // Everything on critters.
        let (status, c) = with(&app, Req::post().uri("/api/critters/").set_json(json!({"name": "Jerry", "species": "mouse"})), &token).await;
        assert_eq!(status, 201, "{c}");
        let item = format!("/api/critters/{}", c["id"].as_str().unwrap());
        assert_eq!(with(&app, Req::get().uri("/api/critters/"), &token).await.0, 200);
        assert_eq!(with(&app, Req::patch().uri(&item).set_json(json!({"name": "Jerry II"})), &token).await.0, 200);
        assert_eq!(with(&app, Req::delete().uri(&item), &token).await.0, 204);
        // Nothing elsewhere, not even a read.
        let (status, v) = with(&app, Req::get().uri("/api/settings/"), &token).await;
        assert_eq!(status, 403, "{v}");
        assert!(v["detail"].as_str().unwrap().contains("UserSetting:read"), "{v}");
        assert_eq!(with(&app, Req::post().uri("/api/settings/").set_json(json!({"key": "k", "value": "v"})), &token).await.0, 403);
        assert_eq!(with(&app, Req::get().uri("/api/tokens/"), &token).await.0, 403);
        assert_eq!(with(&app, Req::get().uri("/api/users/me/"), &token).await.0, 403);
        assert_eq!(with(&app, Req::get().uri("/api/users/"), &token).await.0, 403);
    }

    async fn an_operation_scope_allows_that_operation_only(t) {
        let w = world(&t).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let tom = a_critter(&app, &w, "Tom").await;
        let record = create_key(&app, &w, 3, json!({"scopes": "Critter:read  Critter:delete Critter:read"})).await;
        // Stored in one form: entries once each, one space between them.
        assert_eq!(record["scopes"], "Critter:read Critter:delete");
        let token = access(&app, 3).await;
        assert_eq!(with(&app, Req::get().uri(&tom), &token).await.0, 200);
        assert_eq!(with(&app, Req::get().uri("/api/critters/"), &token).await.0, 200);
        assert_eq!(with(&app, Req::post().uri("/api/critters/").set_json(json!({"name": "Jerry", "species": "mouse"})), &token).await.0, 403);
        let (status, v) = with(&app, Req::patch().uri(&tom).set_json(json!({"name": "Tim"})), &token).await;
        assert_eq!(status, 403, "{v}");
        assert!(v["detail"].as_str().unwrap().contains("Critter:update"), "{v}");
        assert_eq!(with(&app, Req::delete().uri(&tom), &token).await.0, 204);
        assert_eq!(send(&app, auth(Req::get().uri(&tom), &w.api, w.alice)).await.0, 404, "deleted");
        assert_eq!(with(&app, Req::get().uri("/api/settings/"), &token).await.0, 403);
    }

    async fn an_expired_key_is_refused_and_its_tokens_end_with_it(t) {
        let w = world(&t).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        // Expired: refused at the exchange like an unknown key, and its use not recorded.
        let past = (Utc::now() - Duration::minutes(1)).to_rfc3339();
        let expired = create_key(&app, &w, 4, json!({"expires_at": past, "scopes": "read"})).await;
        let (status, v) = login(&app, 4).await;
        assert_eq!(status, 401, "{v}");
        assert_eq!(v["detail"], "invalid token");
        let uri = format!("/api/tokens/{}", expired["id"].as_str().unwrap());
        let (_, record) = send(&app, auth(Req::get().uri(&uri), &w.api, w.alice)).await;
        assert_eq!(record["last_used_at"], Value::Null, "{record}");
        // Expiring in 30 seconds, before the access token's 15 minutes: the token ends with it.
        let soon = Utc::now() + Duration::seconds(30);
        create_key(&app, &w, 5, json!({"expires_at": soon.to_rfc3339()})).await;
        let (status, v) = login(&app, 5).await;
        assert_eq!(status, 200, "{v}");
        let claims = w.api.state().tokens.verify(v["access_token"].as_str().unwrap(), TokenKind::Access).unwrap();
        assert!(claims.exp <= soon.timestamp(), "exp {} after the key's expiry {}", claims.exp, soon.timestamp());
        assert!(v["expires_in"].as_i64().unwrap() <= 30, "{v}");
        assert_eq!(claims.scope, None, "a key without scopes");
        // A key that outlives the access token: the configured lifetime.
        create_key(&app, &w, 6, json!({"expires_at": (Utc::now() + Duration::days(1)).to_rfc3339()})).await;
        let (_, v) = login(&app, 6).await;
        let claims = w.api.state().tokens.verify(v["access_token"].as_str().unwrap(), TokenKind::Access).unwrap();
        assert_eq!(claims.exp - claims.iat, w.api.state().tokens.access_ttl);
        // A revoked key: refused as well.
        let revoked = create_key(&app, &w, 7, json!({})).await;
        let uri = format!("/api/tokens/{}", revoked["id"].as_str().unwrap());
        assert_eq!(send(&app, auth(Req::patch().uri(&uri).set_json(json!({"revoked": true})), &w.api, w.alice)).await.0, 200);
        assert_eq!(login(&app, 7).await.0, 401);
    }

    async fn the_exchange_records_the_last_use(t) {
        let w = world(&t).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let record = create_key(&app, &w, 8, json!({"scopes": "read"})).await;
        assert_eq!(record["last_used_at"], Value::Null);
        let uri = format!("/api/tokens/{}", record["id"].as_str().unwrap());
        let before = Utc::now() - Duration::seconds(1);
        let token = access(&app, 8).await;
        let (_, seen) = send(&app, auth(Req::get().uri(&uri), &w.api, w.alice)).await;
        let used: chrono::DateTime<Utc> = seen["last_used_at"].as_str().unwrap().parse().unwrap();
        assert!(used >= before && used <= Utc::now(), "{seen}");
        // Not a change of the record.
        assert_eq!(seen["updated_at"], record["updated_at"], "{seen}");
        // Requests with the access token leave it.
        assert_eq!(with(&app, Req::get().uri("/api/critters/"), &token).await.0, 200);
        let (_, again) = send(&app, auth(Req::get().uri(&uri), &w.api, w.alice)).await;
        assert_eq!(again["last_used_at"], seen["last_used_at"]);
        // Clients cannot write it.
        let (status, v) = send(&app, auth(Req::patch().uri(&uri).set_json(json!({"last_used_at": "2030-01-01T00:00:00Z"})), &w.api, w.alice)).await;
        assert_eq!(status, 422, "{v}");
    }

    async fn malformed_scopes_are_refused_and_nothing_is_stored(t) {
        let w = world(&t).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        for (n, bad) in ["", "   ", "Critter:write", "Critter:", "Nowhere", "critter", "read Nowhere:read", "User", "Token:create", "UserSetting:read,Critter", "7"].iter().enumerate() {
            let body = json!({"token": key(100 + n as u32), "scopes": bad});
            let (status, headers, bytes) = exchange(&app, auth(Req::post().uri("/api/tokens/").set_json(body), &w.api, w.alice)).await;
            let v = crudforge_tests::http::json_of(&bytes);
            assert_eq!(status, 422, "{bad:?}: {v}");
            assert_eq!(headers.get("content-type").unwrap(), "application/problem+json");
            assert_eq!(v["field"], "scopes", "{bad:?}: {v}");
        }
        // Not a string at all.
        let (status, v) = send(&app, auth(Req::post().uri("/api/tokens/").set_json(json!({"token": key(99), "scopes": ["read"]})), &w.api, w.alice)).await;
        assert_eq!(status, 422, "{v}");
        assert_eq!(keys_stored(&w.db).await, 0);
        // The unknown name's problem lists the names there are.
        let (_, v) = send(&app, auth(Req::post().uri("/api/tokens/").set_json(json!({"token": key(98), "scopes": "Nowhere"})), &w.api, w.alice)).await;
        assert!(v["detail"].as_str().unwrap().contains("Critter, Token, User, UserSetting"), "{v}");
        // Scopes are fixed once the key exists: PATCH refuses them, and so does the database.
        let record = create_key(&app, &w, 9, json!({"scopes": "Critter:read"})).await;
        let uri = format!("/api/tokens/{}", record["id"].as_str().unwrap());
        let (status, v) = send(&app, auth(Req::patch().uri(&uri).set_json(json!({"scopes": "read"})), &w.api, w.alice)).await;
        assert_eq!((status, v["field"].as_str()), (422, Some("scopes")), "{v}");
        let id = Uuid::parse_str(record["id"].as_str().unwrap()).unwrap();
        let mut conn = w.db.get().await.unwrap();
        let widened = with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::execute(
                diesel::update(tokens::table.filter(tokens::id.eq(Portable(id)))).set(tokens::scopes.eq(Some("read"))),
                c,
            )
            .await
        });
        assert!(widened.is_err(), "the database let a key's scopes change");
        drop(conn);
        let (_, still) = send(&app, auth(Req::get().uri(&uri), &w.api, w.alice)).await;
        assert_eq!(still["scopes"], "Critter:read");
        assert_eq!(keys_stored(&w.db).await, 1);
    }

    async fn a_scoped_token_changes_no_password_and_mints_no_key(t) {
        let w = world(&t).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        // A key whose stored scope names the user and Token resources whole (the API refuses
        // to create one; an application's own SQL could): still no write of either.
        let id = Uuid::new_v4();
        let now = Utc::now();
        let mut conn = w.db.get().await.unwrap();
        with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::execute(
                diesel::insert_into(tokens::table).values((
                    tokens::id.eq(Portable(id)),
                    tokens::created_at.eq(Portable(now)),
                    tokens::updated_at.eq(Portable(now)),
                    tokens::user_id.eq(Portable(w.alice)),
                    tokens::token.eq(key(10)),
                    tokens::revoked.eq(false),
                    tokens::kind.eq("api_key"),
                    tokens::scopes.eq(Some("User Token Critter")),
                )),
                c,
            )
            .await
        })
        .unwrap();
        drop(conn);
        let token = access(&app, 10).await;
        // Reads are open to it.
        assert_eq!(with(&app, Req::get().uri("/api/users/me/"), &token).await.0, 200);
        assert_eq!(with(&app, Req::get().uri("/api/tokens/"), &token).await.0, 200);
        // No password change, through `me/password/` or PATCH.
        let change = json!({"current_password": PASSWORD, "new_password": "a brand new phrase"});
        let (status, v) = with(&app, Req::post().uri("/api/users/me/password/").set_json(change), &token).await;
        assert_eq!(status, 403, "{v}");
        let me = format!("/api/users/{}", w.alice);
        let (status, v) = with(&app, Req::patch().uri(&me).set_json(json!({"password": "a brand new phrase"})), &token).await;
        assert_eq!(status, 403, "{v}");
        assert!(v["detail"].as_str().unwrap().contains("never writes User"), "{v}");
        // No new key, no change to one.
        let (status, v) = with(&app, Req::post().uri("/api/tokens/").set_json(json!({"token": key(11)})), &token).await;
        assert_eq!(status, 403, "{v}");
        let uri = format!("/api/tokens/{id}");
        assert_eq!(with(&app, Req::patch().uri(&uri).set_json(json!({"description": "x"})), &token).await.0, 403);
        assert_eq!(with(&app, Req::delete().uri(&uri), &token).await.0, 403);
        // No other route that is not a generated operation (logging out everywhere).
        assert_eq!(with(&app, Req::post().uri("/api/users/logout/").set_json(json!({"all": true})), &token).await.0, 403);
        assert_eq!(keys_stored(&w.db).await, 1);
        // The password is as it was; the key's other entries work.
        assert_eq!(send(&app, Req::post().uri("/api/users/login/").set_json(json!({"email": "alice@example.com", "password": PASSWORD}))).await.0, 200);
        assert_eq!(with(&app, Req::post().uri("/api/critters/").set_json(json!({"name": "Jerry", "species": "mouse"})), &token).await.0, 201);
        // Even a `read` key: no password change.
        create_key(&app, &w, 12, json!({"scopes": "read"})).await;
        let reader = access(&app, 12).await;
        let change = json!({"current_password": PASSWORD, "new_password": "a brand new phrase"});
        assert_eq!(with(&app, Req::post().uri("/api/users/me/password/").set_json(change), &reader).await.0, 403);
    }

    async fn a_key_without_scopes_keeps_its_owners_full_access(t) {
        let w = world(&t).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let record = create_key(&app, &w, 13, json!({"description": "ci"})).await;
        assert_eq!(record["scopes"], Value::Null);
        let (status, v) = login(&app, 13).await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["scopes"], Value::Null);
        let token = v["access_token"].as_str().unwrap().to_owned();
        let claims = w.api.state().tokens.verify(&token, TokenKind::Access).unwrap();
        assert_eq!(claims.scope, None);
        assert_eq!(claims.sub, w.alice);
        assert_eq!(users::token_owner(&w.db, users::TokenRecord::ApiKey, &key(13)).await.unwrap(), Some(w.alice));
        // Every operation, every resource, and the account's own endpoints.
        assert_eq!(with(&app, Req::post().uri("/api/critters/").set_json(json!({"name": "Jerry", "species": "mouse"})), &token).await.0, 201);
        assert_eq!(with(&app, Req::post().uri("/api/settings/").set_json(json!({"key": "k", "value": "v"})), &token).await.0, 201);
        assert_eq!(with(&app, Req::post().uri("/api/tokens/").set_json(json!({"token": key(14)})), &token).await.0, 201);
        assert_eq!(with(&app, Req::get().uri("/api/users/"), &token).await.0, 200);
        let change = json!({"current_password": PASSWORD, "new_password": "a brand new phrase"});
        assert_eq!(with(&app, Req::post().uri("/api/users/me/password/").set_json(change), &token).await.0, 200);
        // The password change ended the key's access token, as it ends every session.
        assert_eq!(with(&app, Req::get().uri("/api/critters/"), &token).await.0, 401);
        assert_eq!(keys_stored(&w.db).await, 2);
    }

    async fn a_key_reads_no_other_resource_through_a_relation(t) {
        use crate::relations::{Pet, Zone};
        let w = world_with(&t, |api| {
            api.mount(Zone::blueprint("/api/zones/")).unwrap().mount(Pet::blueprint("/api/pets/")).unwrap()
        })
        .await;
        let ddl = match w.db.backend() {
            Backend::Sqlite => "CREATE TABLE zones (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, owner_id TEXT NOT NULL, name TEXT NOT NULL, climate TEXT NOT NULL, notes TEXT); \
                 CREATE TABLE keepers (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, name TEXT NOT NULL); \
                 CREATE TABLE pets (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, name TEXT NOT NULL, zone_id TEXT REFERENCES zones (id), keeper_id TEXT REFERENCES keepers (id))",
            Backend::Postgres => "CREATE TABLE zones (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, owner_id UUID NOT NULL, name TEXT NOT NULL, climate TEXT NOT NULL, notes TEXT); \
                 CREATE TABLE keepers (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, name TEXT NOT NULL); \
                 CREATE TABLE pets (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, name TEXT NOT NULL, zone_id UUID REFERENCES zones (id), keeper_id UUID REFERENCES keepers (id))",
        };
        let mut conn = w.db.get().await.unwrap();
        with_conn!(conn, |c| c.batch_execute(ddl).await).unwrap();
        drop(conn);
        let app = actix_web::test::init_service(w.api.app()).await;
        let (status, zone) = send(&app, auth(Req::post().uri("/api/zones/").set_json(json!({"name": "North", "climate": "cold"})), &w.api, w.alice)).await;
        assert_eq!(status, 201, "{zone}");
        create_key(&app, &w, 20, json!({"scopes": "Pet"})).await;
        let token = access(&app, 20).await;
        // A pet in the zone: the key check of `zone_id` is the rules', not the scope's.
        let (status, pet) = with(&app, Req::post().uri("/api/pets/").set_json(json!({"name": "Rex", "zone_id": zone["id"]})), &token).await;
        assert_eq!(status, 201, "{pet}");
        assert_eq!(with(&app, Req::get().uri("/api/pets/"), &token).await.0, 200);
        // The zone itself, embedded or filtered by, is outside the scope.
        let (status, v) = with(&app, Req::get().uri("/api/pets/?expand=zone"), &token).await;
        assert_eq!(status, 400, "{v}");
        assert_eq!(with(&app, Req::get().uri("/api/pets/?zone.name=North"), &token).await.0, 400);
        assert_eq!(with(&app, Req::get().uri("/api/zones/"), &token).await.0, 403);
        // With `Zone:read` too, both work.
        create_key(&app, &w, 21, json!({"scopes": "Pet Zone:read"})).await;
        let both = access(&app, 21).await;
        let (status, v) = with(&app, Req::get().uri("/api/pets/?expand=zone"), &both).await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["data"][0]["zone"]["name"], "North", "{v}");
        let (status, v) = with(&app, Req::get().uri("/api/pets/?zone.name=North"), &both).await;
        assert_eq!((status, v["data"].as_array().map(Vec::len)), (200, Some(1)), "{v}");
    }
}

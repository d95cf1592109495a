//! Passkeys, on both backends, with a software authenticator in place of the browser's:
//! registered as a factor (recovery codes for the first, other sessions ended), then asked
//! for after a password or used alone to sign in, tokens at assurance level 2 either way;
//! each ceremony's ticket taken once, an answer to another ceremony, an edited signature, a
//! removed passkey, a disabled account and a changed password refused and nothing written;
//! enrollment with a sign-in's ticket alone; and no passkey route when passkeys are off.
#![allow(missing_docs, clippy::unwrap_used)]

use crudforge::auth::TokenKind;
use crudforge::users::{self, Role, UserBlueprint};
use crudforge::Api;
use crudforge_tests::authenticator::SoftKey;
use crudforge_tests::http::{bearer, send, Req};
use crudforge_tests::{backend_tests, TestDb};
use serde_json::{json, Value};
use uuid::Uuid;

const COST: u32 = 4;
const PASSWORD: &str = "alice pass phrase";
const ORIGIN: &str = "https://app.example.com";

struct World {
    api: Api,
    alice: Uuid,
    bob: Uuid,
}

/// Alice (an administrator) and Bob; passkeys for pages at [`ORIGIN`] unless `settings`
/// says otherwise.
async fn world(t: &TestDb, settings: impl FnOnce(&mut crudforge::Config)) -> World {
    let cfg = t.config().with(|c| {
        c.auth.bcrypt_cost = COST;
        c.auth.auth_passkey_origins = vec![ORIGIN.into()];
        settings(c);
    });
    let db = t.open(&cfg).await;
    let alice = users::create_user(&db, "alice@example.com", PASSWORD, true, COST)
        .await
        .unwrap();
    users::grant_role(&db, alice, Role::Admin.as_str(), None)
        .await
        .unwrap();
    let bob = users::create_user(&db, "bob@example.com", PASSWORD, true, COST)
        .await
        .unwrap();
    let api = Api::new(cfg, db.clone())
        .unwrap()
        .mount(UserBlueprint::default())
        .unwrap();
    World { api, alice, bob }
}

fn post(uri: &str, body: Value) -> Req {
    Req::post().uri(uri).set_json(body)
}

/// The subject and `aal` of the access token of an answer.
fn claims(api: &Api, answer: &Value) -> (Uuid, Option<u8>) {
    let c = api
        .state()
        .tokens
        .verify(answer["access_token"].as_str().unwrap(), TokenKind::Access)
        .unwrap();
    (c.sub, c.aal)
}

/// How many used tickets are recorded (each ceremony that came back once).
async fn used_tickets(api: &Api) -> usize {
    let mut conn = api.state().db.get().await.unwrap();
    let n: i64 = crudforge::with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            diesel::sql_query("SELECT COUNT(*) AS n FROM crudforge_used_tickets"),
            c,
        )
        .await
        .map(|r: Count| r.n)
    })
    .unwrap();
    usize::try_from(n).unwrap()
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

macro_rules! service {
    () => {
        impl actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<impl actix_web::body::MessageBody>,
            Error = actix_web::Error,
        >
    };
}

/// Registers a passkey on `key` with `token` (or the ticket `ticket` alone): the
/// registration's answer.
async fn register(
    app: &service!(),
    key: &mut SoftKey,
    token: Option<&str>,
    ticket: Option<&str>,
) -> Value {
    let with = |req: Req| match token {
        Some(t) => bearer(req, t),
        None => req,
    };
    let (s, begun) = send(
        app,
        with(post(
            "/api/users/me/factors/passkey/",
            json!({"label": "laptop", "factor_ticket": ticket}),
        )),
    )
    .await;
    assert_eq!(s, 201, "{begun}");
    let credential = key.create(&begun["public_key"]).await;
    let id = begun["id"].as_str().unwrap();
    let (s, done) = send(
        app,
        with(post(
            &format!("/api/users/me/factors/passkey/{id}/"),
            json!({"credential": credential, "factor_ticket": ticket}),
        )),
    )
    .await;
    assert_eq!(s, 200, "{done}");
    done
}

/// Begins a ceremony (after a password with `ticket`, or alone): its answer.
async fn challenge(app: &service!(), ticket: Option<&str>) -> Value {
    let body = match ticket {
        Some(t) => json!({"factor_ticket": t}),
        None => json!({}),
    };
    let (s, c) = send(app, post("/api/users/factors/passkey/challenge/", body)).await;
    assert_eq!(s, 200, "{c}");
    c
}

/// Sends `credential` for the ceremony of `ticket`.
async fn verify(app: &service!(), ticket: &Value, credential: &Value) -> (u16, Value) {
    send(
        app,
        post(
            "/api/users/factors/passkey/verify/",
            json!({"passkey_ticket": ticket, "credential": credential}),
        ),
    )
    .await
}

/// `POST /api/users/login/` as `email`.
async fn login(app: &service!(), email: &str) -> (u16, Value) {
    send(
        app,
        post(
            "/api/users/login/",
            json!({"email": email, "password": PASSWORD}),
        ),
    )
    .await
}

backend_tests! {
    async fn a_passkey_is_asked_after_the_password_and_signs_in_alone(t) {
        let w = world(&t, |_| {}).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let (s, first) = login(&app, "bob@example.com").await;
        assert_eq!(s, 200, "{first}");
        let first_access = first["access_token"].as_str().unwrap().to_owned();

        // The options name the relying party and the account, ask for user verification and
        // for a passkey the authenticator keeps with the account.
        let (s, begun) = send(&app, bearer(post("/api/users/me/factors/passkey/", json!({})), &first_access)).await;
        assert_eq!(s, 201, "{begun}");
        let pk = &begun["public_key"];
        assert_eq!(pk["rp"]["id"], "app.example.com", "{pk}");
        assert_eq!(pk["user"]["name"], "bob@example.com");
        assert_eq!(pk["authenticatorSelection"]["userVerification"], "required");
        assert_eq!(pk["authenticatorSelection"]["residentKey"], "preferred");
        let id = begun["id"].as_str().unwrap().to_owned();
        let finish = format!("/api/users/me/factors/passkey/{id}/");

        // A credential that is not one, another factor's id: refused, nothing confirmed.
        let (s, p) = send(&app, bearer(post(&finish, json!({"credential": {"id": "x"}})), &first_access)).await;
        assert_eq!(s, 422, "{p}");
        assert_eq!(p["field"], "credential", "{p}");
        let mut key = SoftKey::new(ORIGIN);
        let credential = key.create(pk).await;
        let other = format!("/api/users/me/factors/passkey/{}/", Uuid::new_v4());
        let (s, _) = send(&app, bearer(post(&other, json!({"credential": credential})), &first_access)).await;
        assert_eq!(s, 404);
        // The TOTP confirmation does not take a passkey.
        let (s, p) = send(&app, bearer(post(&format!("/api/users/me/factors/{id}/confirm/"), json!({"code": "123456"})), &first_access)).await;
        assert_eq!(s, 409, "{p}");
        let (_, listed) = send(&app, bearer(Req::get().uri("/api/users/me/factors/"), &first_access)).await;
        assert_eq!(listed["factors"][0]["confirmed"], false, "{listed}");

        // Registered: recovery codes, level 2, the other sessions end; once only.
        let (s, done) = send(&app, bearer(post(&finish, json!({"credential": credential})), &first_access)).await;
        assert_eq!(s, 200, "{done}");
        assert_eq!(claims(&w.api, &done), (w.bob, Some(2)));
        assert_eq!(done["recovery_codes"].as_array().unwrap().len(), 10);
        let (s, _) = send(&app, bearer(Req::get().uri("/api/users/me/factors/"), &first_access)).await;
        assert_eq!(s, 401, "the session begun without the passkey ended");
        let access = done["access_token"].as_str().unwrap().to_owned();
        let (s, _) = send(&app, bearer(post(&finish, json!({"credential": credential})), &access)).await;
        assert_eq!(s, 409);
        let (_, listed) = send(&app, bearer(Req::get().uri("/api/users/me/factors/"), &access)).await;
        assert_eq!(listed["factors"][0]["kind"], "passkey", "{listed}");
        assert_eq!(listed["factors"][0]["confirmed"], true);

        // After the password: a challenge naming the passkey; the ceremony gives level 2.
        let (s, refused) = login(&app, "bob@example.com").await;
        assert_eq!(s, 401, "{refused}");
        assert_eq!(refused["challenge"]["factors"], json!(["passkey", "recovery_code"]));
        let ticket = refused["challenge"]["ticket"].as_str().unwrap().to_owned();
        let c = challenge(&app, Some(&ticket)).await;
        assert_eq!(c["public_key"]["allowCredentials"].as_array().unwrap().len(), 1, "{c}");
        let assertion = key.get(&c["public_key"]).await;
        let before = used_tickets(&w.api).await;
        let (s, tokens) = verify(&app, &c["passkey_ticket"], &assertion).await;
        assert_eq!(s, 200, "{tokens}");
        assert_eq!(claims(&w.api, &tokens), (w.bob, Some(2)));
        assert_eq!(used_tickets(&w.api).await, before + 1);

        // The same ceremony twice, an answer to another ceremony, an edited signature.
        let (s, _) = verify(&app, &c["passkey_ticket"], &assertion).await;
        assert_eq!(s, 401, "a ceremony is taken once");
        let (a, b) = (challenge(&app, Some(&ticket)).await, challenge(&app, Some(&ticket)).await);
        let for_a = key.get(&a["public_key"]).await;
        let (s, _) = verify(&app, &b["passkey_ticket"], &for_a).await;
        assert_eq!(s, 401, "the answer to another ceremony's challenge");
        let mut edited = key.get(&b["public_key"]).await;
        let sig = edited["response"]["signature"].as_str().unwrap().to_owned();
        let mut chars: Vec<char> = sig.chars().collect();
        let last = chars.len() - 2;
        chars[last] = if chars[last] == 'A' { 'B' } else { 'A' };
        let flipped: String = chars.into_iter().collect();
        edited["response"]["signature"] = json!(flipped);
        let (s, _) = verify(&app, &b["passkey_ticket"], &edited).await;
        assert_eq!(s, 401, "an edited signature");
        let (s, _) = verify(&app, &json!(format!("{}x", a["passkey_ticket"].as_str().unwrap())), &for_a).await;
        assert_eq!(s, 401, "an edited ticket");
        let (s, p) = verify(&app, &a["passkey_ticket"], &json!({"id": 1})).await;
        assert_eq!(s, 422, "{p}");
        assert_eq!(used_tickets(&w.api).await, before + 1, "no refused ceremony was taken");
        // The ticket of a code is not a passkey's: a TOTP code finds no factor.
        let (s, _) = send(&app, post("/api/users/factors/verify/", json!({"factor_ticket": ticket, "code": "123456"}))).await;
        assert_eq!(s, 401);

        // Alone: no password, the passkey names the account.
        let alone = challenge(&app, None).await;
        assert_eq!(alone["public_key"]["allowCredentials"], json!([]), "{alone}");
        let signed = key.get(&alone["public_key"]).await;
        let (s, tokens) = verify(&app, &alone["passkey_ticket"], &signed).await;
        assert_eq!(s, 200, "{tokens}");
        assert_eq!(claims(&w.api, &tokens), (w.bob, Some(2)));
        let (s, _) = verify(&app, &alone["passkey_ticket"], &signed).await;
        assert_eq!(s, 401, "taken once");

        // A refresh keeps the level.
        let (s, refreshed) = send(&app, post("/api/users/refresh/", json!({"refresh_token": tokens["refresh_token"]}))).await;
        assert_eq!(s, 200, "{refreshed}");
        assert_eq!(claims(&w.api, &refreshed).1, Some(2));
    }

    async fn a_passkey_of_a_disabled_account_or_a_removed_one_signs_nothing_in(t) {
        let w = world(&t, |_| {}).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let (_, first) = login(&app, "bob@example.com").await;
        let mut key = SoftKey::new(ORIGIN);
        let done = register(&app, &mut key, first["access_token"].as_str(), None).await;
        let access = done["access_token"].as_str().unwrap().to_owned();

        // The password changes between the challenge and the answer: the ceremony is void.
        let (_, refused) = login(&app, "bob@example.com").await;
        let ticket = refused["challenge"]["ticket"].as_str().unwrap().to_owned();
        let c = challenge(&app, Some(&ticket)).await;
        let (s, changed) = send(&app, bearer(post("/api/users/me/password/", json!({"current_password": PASSWORD, "new_password": "another pass phrase"})), &access)).await;
        assert_eq!(s, 200, "{changed}");
        let signed = key.get(&c["public_key"]).await;
        let (s, _) = verify(&app, &c["passkey_ticket"], &signed).await;
        assert_eq!(s, 401, "the ceremony of the old password");

        // Disabled: the passkey alone signs nothing in.
        users::set_enabled(&w.api.state().db, w.bob, false).await.unwrap();
        let alone = challenge(&app, None).await;
        let signed = key.get(&alone["public_key"]).await;
        let before = used_tickets(&w.api).await;
        let (s, _) = verify(&app, &alone["passkey_ticket"], &signed).await;
        assert_eq!(s, 401, "a disabled account");
        assert_eq!(used_tickets(&w.api).await, before);
        users::set_enabled(&w.api.state().db, w.bob, true).await.unwrap();

        // Removed (from a session that passed it, the passkey's own): the authenticator still
        // holds it, the server no longer knows it.
        let alone = challenge(&app, None).await;
        let signed = key.get(&alone["public_key"]).await;
        let (s, session) = verify(&app, &alone["passkey_ticket"], &signed).await;
        assert_eq!(s, 200, "enabled again: {session}");
        let access = session["access_token"].as_str().unwrap().to_owned();
        let (s, listed) = send(&app, bearer(Req::get().uri("/api/users/me/factors/"), &access)).await;
        assert_eq!(s, 200, "{listed}");
        let id = listed["factors"][0]["id"].as_str().unwrap();
        let (s, removed) = send(&app, bearer(Req::delete().uri(&format!("/api/users/me/factors/{id}/")), &access)).await;
        assert_eq!(s, 200, "{removed}");
        assert!(key.holds_one());
        let alone = challenge(&app, None).await;
        let signed = key.get(&alone["public_key"]).await;
        let (s, _) = verify(&app, &alone["passkey_ticket"], &signed).await;
        assert_eq!(s, 401, "a removed passkey");
        // And after the password there is nothing to ask: tokens at once.
        let (s, tokens) = send(&app, post("/api/users/login/", json!({"email": "bob@example.com", "password": "another pass phrase"}))).await;
        assert_eq!(s, 200, "{tokens}");
        let c = send(&app, post("/api/users/factors/passkey/challenge/", json!({"factor_ticket": ticket}))).await;
        assert_eq!(c.0, 401, "the old ticket: {}", c.1);
    }

    async fn an_account_that_must_have_a_factor_enrolls_a_passkey_with_the_ticket_alone(t) {
        let w = world(&t, |c| {
            c.auth.auth_factor_roles = vec!["ADMIN".into()];
            c.auth.auth_factor_grace_seconds = 0;
        })
        .await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let (s, refused) = login(&app, "alice@example.com").await;
        assert_eq!(s, 403, "{refused}");
        assert_eq!(refused["challenge"]["kind"], "second_factor_enrollment");
        assert_eq!(refused["challenge"]["factors"], json!(["totp", "passkey"]));
        let ticket = refused["challenge"]["ticket"].as_str().unwrap().to_owned();
        let mut key = SoftKey::new(ORIGIN);
        let done = register(&app, &mut key, None, Some(&ticket)).await;
        assert_eq!(claims(&w.api, &done), (w.alice, Some(2)));
        // Then the passkey alone signs Alice in.
        let alone = challenge(&app, None).await;
        let signed = key.get(&alone["public_key"]).await;
        let (s, tokens) = verify(&app, &alone["passkey_ticket"], &signed).await;
        assert_eq!(s, 200, "{tokens}");
        assert_eq!(claims(&w.api, &tokens), (w.alice, Some(2)));
    }

    async fn without_origins_there_are_no_passkeys(t) {
        let w = world(&t, |c| {
            c.auth.auth_factor_roles = vec!["ADMIN".into()];
            c.auth.auth_factor_grace_seconds = 0;
            c.auth.auth_passkey_origins = Vec::new();
        })
        .await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let (s, _) = send(&app, post("/api/users/factors/passkey/challenge/", json!({}))).await;
        assert_eq!(s, 404);
        let doc: Value = serde_json::from_str(&w.api.openapi_json()).unwrap();
        let paths: Vec<&String> = doc["paths"].as_object().unwrap().keys().collect();
        assert!(paths.iter().all(|p| !p.contains("passkey")), "{paths:?}");
        assert!(paths.iter().any(|p| p.contains("factors/verify")), "{paths:?}");
        // A sign-in that must enroll is offered the authenticator app only.
        let (s, refused) = login(&app, "alice@example.com").await;
        assert_eq!(s, 403, "{refused}");
        assert_eq!(refused["challenge"]["factors"], json!(["totp"]));
    }
}

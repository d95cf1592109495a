//! Second factors, on both backends: a TOTP factor enrolled and confirmed (recovery codes
//! shown once, other sessions ended), then asked at every sign-in (a challenge with a ticket,
//! no tokens); a code accepted once per step, a recovery code once; tokens of the second step
//! carry assurance level 2, which a rule's `@second_factor` asks for; removing a factor needs
//! a session that passed one and ends the others; roles and domains that require a factor,
//! with and without a grace period, and enrollment with the ticket alone.
#![allow(missing_docs, clippy::unwrap_used)]

use crudforge::auth::TokenKind;
use crudforge::perms::Expr;
use crudforge::users::{self, Domain, Role, UserBlueprint};
use crudforge::{Api, Resource};
use crudforge_tests::critters::{self, Critter};
use crudforge_tests::http::{auth, bearer, send, Req};
use crudforge_tests::{backend_tests, TestDb};
use serde_json::{json, Value};
use totp_rs::Totp;
use uuid::Uuid;

const COST: u32 = 4;
const PASSWORD: &str = "alice pass phrase";

struct World {
    api: Api,
    alice: Uuid,
    bob: Uuid,
}

/// Alice (an administrator) and Bob, users, critters whose delete asks for a second factor,
/// and domains; `settings` changes the configuration.
async fn world(t: &TestDb, settings: impl FnOnce(&mut crudforge::Config)) -> World {
    let cfg = t.config().with(|c| {
        c.auth.bcrypt_cost = COST;
        settings(c);
    });
    let db = t.open(&cfg).await;
    critters::create_table(&db).await;
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
        .unwrap()
        .mount(Domain::blueprint("/api/domains/"))
        .unwrap()
        .mount(Critter::blueprint("/api/critters/").rules(Expr::new().delete("@second_factor")))
        .unwrap();
    World { api, alice, bob }
}

fn now() -> u64 {
    u64::try_from(chrono::Utc::now().timestamp()).unwrap()
}

/// The code of `totp` at `at` (seconds since 1970).
fn code(totp: &Totp, at: u64) -> String {
    totp.generate(at).to_string()
}

/// A six-digit code that is not `totp`'s at `at` nor a step either side.
fn wrong_code(totp: &Totp, at: u64) -> String {
    let near: Vec<String> = [at - 30, at, at + 30]
        .iter()
        .map(|t| code(totp, *t))
        .collect();
    (0..)
        .map(|n| format!("{:06}", 123_456 + n))
        .find(|c| !near.contains(c))
        .unwrap()
}

/// `POST /api/users/login/` as `email`: the status and the answer.
async fn login<S, B>(app: &S, email: &str) -> (u16, Value)
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
            .uri("/api/users/login/")
            .set_json(json!({"email": email, "password": PASSWORD})),
    )
    .await
}

/// Enrolls and confirms a TOTP factor with `token` (or with `ticket` alone): the
/// factor's TOTP and the confirmation's answer.
async fn add_totp<S, B>(app: &S, token: Option<&str>, ticket: Option<&str>) -> (Totp, Value)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let with = |req: Req| match token {
        Some(t) => bearer(req, t),
        None => req,
    };
    let (s, enrolled) = send(
        app,
        with(
            Req::post()
                .uri("/api/users/me/factors/totp/")
                .set_json(json!({"label": "phone", "factor_ticket": ticket})),
        ),
    )
    .await;
    assert_eq!(s, 201, "{enrolled}");
    let totp = Totp::from_url(enrolled["otpauth_url"].as_str().unwrap()).unwrap();
    assert_eq!(
        totp.secret().to_base32(),
        enrolled["secret"].as_str().unwrap()
    );
    let id = enrolled["id"].as_str().unwrap();
    let (s, confirmed) = send(
        app,
        with(
            Req::post()
                .uri(&format!("/api/users/me/factors/{id}/confirm/"))
                .set_json(json!({"code": code(&totp, now()), "factor_ticket": ticket})),
        ),
    )
    .await;
    assert_eq!(s, 200, "{confirmed}");
    (totp, confirmed)
}

/// `POST /api/users/factors/verify/` with `body`.
async fn verify<S, B>(app: &S, body: Value) -> (u16, Value)
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
        Req::post().uri("/api/users/factors/verify/").set_json(body),
    )
    .await
}

/// The `aal` of an access token.
fn aal(api: &Api, token: &Value) -> Option<u8> {
    let text = token["access_token"].as_str().unwrap();
    api.state()
        .tokens
        .verify(text, TokenKind::Access)
        .unwrap()
        .aal
}

backend_tests! {
    async fn a_confirmed_factor_is_asked_at_every_sign_in_and_each_code_counts_once(t) {
        let w = world(&t, |_| {}).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let (s, first) = login(&app, "bob@example.com").await;
        assert_eq!(s, 200, "{first}");
        assert_eq!(aal(&w.api, &first), None);
        let first_access = first["access_token"].as_str().unwrap().to_owned();

        // Enrolled, not yet confirmed: listed, not asked for, and a wrong code confirms nothing.
        let (s, enrolled) = send(&app, bearer(Req::post().uri("/api/users/me/factors/totp/").set_json(json!({})), &first_access)).await;
        assert_eq!(s, 201, "{enrolled}");
        assert!(enrolled["otpauth_url"].as_str().unwrap().contains("bob%40example.com") || enrolled["otpauth_url"].as_str().unwrap().contains("bob@example.com"), "{enrolled}");
        let totp = Totp::from_url(enrolled["otpauth_url"].as_str().unwrap()).unwrap();
        let id = enrolled["id"].as_str().unwrap().to_owned();
        let (s, listed) = send(&app, bearer(Req::get().uri("/api/users/me/factors/"), &first_access)).await;
        assert_eq!(s, 200, "{listed}");
        assert_eq!(listed["factors"][0]["confirmed"], false);
        assert_eq!(listed["recovery_codes_left"], 0);
        assert_eq!(listed["required"], false);
        let (s, _) = login(&app, "bob@example.com").await;
        assert_eq!(s, 200, "an unconfirmed factor is not asked for");
        let confirm = format!("/api/users/me/factors/{id}/confirm/");
        let (s, refused) = send(&app, bearer(Req::post().uri(&confirm).set_json(json!({"code": wrong_code(&totp, now())})), &first_access)).await;
        assert_eq!(s, 401, "{refused}");
        let (_, listed) = send(&app, bearer(Req::get().uri("/api/users/me/factors/"), &first_access)).await;
        assert_eq!(listed["factors"][0]["confirmed"], false);

        // Confirmed: ten recovery codes, tokens at level 2, and the other sessions end.
        let now0 = now();
        let (s, confirmed) = send(&app, bearer(Req::post().uri(&confirm).set_json(json!({"code": code(&totp, now0)})), &first_access)).await;
        assert_eq!(s, 200, "{confirmed}");
        assert_eq!(aal(&w.api, &confirmed), Some(2));
        let codes: Vec<String> = confirmed["recovery_codes"].as_array().unwrap().iter().map(|c| c.as_str().unwrap().to_owned()).collect();
        assert_eq!(codes.len(), 10);
        let (s, _) = send(&app, bearer(Req::get().uri("/api/users/me/factors/"), &first_access)).await;
        assert_eq!(s, 401, "the session begun without the factor ended");
        let (s, again) = send(&app, bearer(Req::post().uri(&confirm).set_json(json!({"code": code(&totp, now0 + 30)})), confirmed["access_token"].as_str().unwrap())).await;
        assert_eq!(s, 409, "{again}");

        // A sign-in now answers a challenge, not tokens.
        let (s, challenge) = login(&app, "bob@example.com").await;
        assert_eq!(s, 401, "{challenge}");
        assert!(challenge.get("access_token").is_none());
        assert_eq!(challenge["challenge"]["kind"], "second_factor");
        assert_eq!(challenge["challenge"]["factors"], json!(["totp", "recovery_code"]));
        let ticket = challenge["challenge"]["ticket"].as_str().unwrap().to_owned();

        // The confirming code's step is used; a wrong code, a bad ticket, both factors at once
        // are refused; the next step's code passes, once.
        let (s, _) = verify(&app, json!({"factor_ticket": ticket, "code": code(&totp, now0)})).await;
        assert_eq!(s, 401, "a code is accepted once");
        let (s, _) = verify(&app, json!({"factor_ticket": ticket, "code": wrong_code(&totp, now())})).await;
        assert_eq!(s, 401);
        let (s, _) = verify(&app, json!({"factor_ticket": format!("{ticket}x"), "code": code(&totp, now0 + 30)})).await;
        assert_eq!(s, 401, "an edited ticket");
        let (s, p) = verify(&app, json!({"factor_ticket": ticket, "code": code(&totp, now0 + 30), "recovery_code": codes[0]})).await;
        assert_eq!(s, 422, "{p}");
        let (s, tokens) = verify(&app, json!({"factor_ticket": ticket, "code": code(&totp, now0 + 30)})).await;
        assert_eq!(s, 200, "{tokens}");
        assert_eq!(aal(&w.api, &tokens), Some(2));
        let (s, _) = verify(&app, json!({"factor_ticket": ticket, "code": code(&totp, now0 + 30)})).await;
        assert_eq!(s, 401, "the same code twice");

        // A refresh keeps the level.
        let (s, refreshed) = send(&app, Req::post().uri("/api/users/refresh/").set_json(json!({"refresh_token": tokens["refresh_token"]}))).await;
        assert_eq!(s, 200, "{refreshed}");
        assert_eq!(aal(&w.api, &refreshed), Some(2));

        // A recovery code, as typed (upper case, spaces), signs in once.
        let typed = format!(" {} ", codes[3].to_uppercase());
        let (s, by_code) = verify(&app, json!({"factor_ticket": ticket, "recovery_code": typed})).await;
        assert_eq!(s, 200, "{by_code}");
        let (s, _) = verify(&app, json!({"factor_ticket": ticket, "recovery_code": codes[3]})).await;
        assert_eq!(s, 401, "a recovery code is used once");
        let (_, listed) = send(&app, bearer(Req::get().uri("/api/users/me/factors/"), by_code["access_token"].as_str().unwrap())).await;
        assert_eq!(listed["recovery_codes_left"], 9);
        assert_eq!(listed["factors"][0]["label"], Value::Null);

        // A ticket stops working when the password changes.
        let (s, _) = send(&app, bearer(Req::post().uri("/api/users/me/password/").set_json(json!({"current_password": PASSWORD, "new_password": "a new pass phrase"})), by_code["access_token"].as_str().unwrap())).await;
        assert_eq!(s, 200);
        let (s, _) = verify(&app, json!({"factor_ticket": ticket, "recovery_code": codes[4]})).await;
        assert_eq!(s, 401, "the ticket of the old password");
    }

    async fn rules_ask_for_a_second_factor_with_second_factor(t) {
        let w = world(&t, |_| {}).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        // Bob: an administrator's rights pass every rule.
        let (s, tokens) = login(&app, "bob@example.com").await;
        assert_eq!(s, 200, "{tokens}");
        let access = tokens["access_token"].as_str().unwrap().to_owned();
        let (s, critter) = send(&app, bearer(Req::post().uri("/api/critters/").set_json(json!({"name": "Tom", "species": "cat"})), &access)).await;
        assert_eq!(s, 201, "{critter}");
        let path = format!("/api/critters/{}", critter["id"].as_str().unwrap());
        let (s, refused) = send(&app, bearer(Req::delete().uri(&path), &access)).await;
        assert_eq!(s, 403, "a password alone: {refused}");
        let (_, confirmed) = add_totp(&app, Some(&access), None).await;
        let (s, _) = send(&app, bearer(Req::delete().uri(&path), confirmed["access_token"].as_str().unwrap())).await;
        assert_eq!(s, 204, "after a second factor");
    }

    async fn removing_a_factor_needs_a_second_factor_and_ends_other_sessions(t) {
        let w = world(&t, |_| {}).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let (_, first) = login(&app, "bob@example.com").await;
        let (totp, confirmed) = add_totp(&app, first["access_token"].as_str(), None).await;
        let strong = confirmed["access_token"].as_str().unwrap().to_owned();
        let (_, listed) = send(&app, bearer(Req::get().uri("/api/users/me/factors/"), &strong)).await;
        let id = listed["factors"][0]["id"].as_str().unwrap().to_owned();
        assert_eq!(listed["factors"][0]["label"], "phone");
        // A second session, through the challenge.
        let (_, challenge) = login(&app, "bob@example.com").await;
        let (s, other) = verify(&app, json!({"factor_ticket": challenge["challenge"]["ticket"], "code": code(&totp, now() + 30)})).await;
        assert_eq!(s, 200, "{other}");
        // A token without the level (the library's own `access_token`, as an API key's) may
        // neither remove the factor nor renew the codes.
        let weak = users::access_token(w.api.state(), w.bob).await.unwrap();
        let (s, p) = send(&app, bearer(Req::delete().uri(&format!("/api/users/me/factors/{id}/")), &weak)).await;
        assert_eq!(s, 403, "{p}");
        let (s, p) = send(&app, bearer(Req::post().uri("/api/users/me/factors/recovery_codes/"), &weak)).await;
        assert_eq!(s, 403, "{p}");
        let (s, renewed) = send(&app, bearer(Req::post().uri("/api/users/me/factors/recovery_codes/"), &strong)).await;
        assert_eq!(s, 200, "{renewed}");
        assert_eq!(renewed["recovery_codes"].as_array().unwrap().len(), 10);
        let (s, p) = send(&app, bearer(Req::delete().uri(&format!("/api/users/me/factors/{}/", Uuid::new_v4())), &strong)).await;
        assert_eq!(s, 404, "{p}");
        let (s, p) = send(&app, bearer(Req::delete().uri("/api/users/me/factors/not-an-id/"), &strong)).await;
        assert_eq!(s, 404, "{p}");
        let (s, after) = send(&app, bearer(Req::delete().uri(&format!("/api/users/me/factors/{id}/")), &strong)).await;
        assert_eq!(s, 200, "{after}");
        let (s, _) = send(&app, bearer(Req::get().uri("/api/users/me/factors/"), other["access_token"].as_str().unwrap())).await;
        assert_eq!(s, 401, "the other session ended");
        let (s, listed) = send(&app, bearer(Req::get().uri("/api/users/me/factors/"), after["access_token"].as_str().unwrap())).await;
        assert_eq!(s, 200, "this one goes on");
        assert_eq!(listed["factors"], json!([]));
        assert_eq!(listed["recovery_codes_left"], 0, "the codes went with the last factor");
        let (s, tokens) = login(&app, "bob@example.com").await;
        assert_eq!(s, 200, "no factor is asked any more: {tokens}");
    }

    async fn a_required_factor_is_enrolled_with_the_ticket_once_the_grace_ends(t) {
        let w = world(&t, |c| {
            c.auth.auth_factor_roles = vec!["ADMIN".into()];
            c.auth.auth_factor_grace_seconds = 0;
        }).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let (s, tokens) = login(&app, "bob@example.com").await;
        assert_eq!(s, 200, "Bob holds no such role: {tokens}");
        let (s, refused) = login(&app, "alice@example.com").await;
        assert_eq!(s, 403, "{refused}");
        assert_eq!(refused["challenge"]["kind"], "second_factor_enrollment");
        assert!(refused.get("access_token").is_none());
        let ticket = refused["challenge"]["ticket"].as_str().unwrap().to_owned();
        // The enrollment ticket is no second factor, and no access token.
        let (s, _) = verify(&app, json!({"factor_ticket": ticket, "recovery_code": "aaaaa-aaaaa"})).await;
        assert_eq!(s, 401);
        let (s, _) = send(&app, bearer(Req::get().uri("/api/users/me/factors/"), &ticket)).await;
        assert_eq!(s, 401);
        let (_, confirmed) = add_totp(&app, None, Some(&ticket)).await;
        assert_eq!(aal(&w.api, &confirmed), Some(2));
        assert_eq!(confirmed["recovery_codes"].as_array().unwrap().len(), 10);
        let strong = confirmed["access_token"].as_str().unwrap();
        let (_, listed) = send(&app, bearer(Req::get().uri("/api/users/me/factors/"), strong)).await;
        assert_eq!(listed["required"], true);
        let id = listed["factors"][0]["id"].as_str().unwrap();
        let (s, p) = send(&app, bearer(Req::delete().uri(&format!("/api/users/me/factors/{id}/")), strong)).await;
        assert_eq!(s, 409, "the last factor of an account that must have one: {p}");
        // Bob becomes an administrator: his session may not be refreshed without a factor.
        users::grant_role(w.api.db(), w.bob, Role::Admin.as_str(), None).await.unwrap();
        let (s, p) = send(&app, Req::post().uri("/api/users/refresh/").set_json(json!({"refresh_token": tokens["refresh_token"]}))).await;
        assert_eq!(s, 401, "{p}");
        assert!(p.get("challenge").is_none(), "a refresh gets no ticket: {p}");
    }

    async fn the_grace_period_lets_a_required_account_in_without_a_factor(t) {
        let w = world(&t, |c| {
            c.auth.auth_factor_roles = vec!["*".into()];
            c.auth.auth_factor_grace_seconds = 3600;
        }).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        for _ in 0..2 {
            let (s, tokens) = login(&app, "bob@example.com").await;
            assert_eq!(s, 200, "{tokens}");
            let (s, listed) = send(&app, bearer(Req::get().uri("/api/users/me/factors/"), tokens["access_token"].as_str().unwrap())).await;
            assert_eq!(s, 200);
            assert_eq!(listed["required"], true);
        }
    }

    async fn members_of_a_domain_that_requires_a_factor_must_have_one(t) {
        let w = world(&t, |c| {
            c.auth.auth_factor_domains = vec!["acme".into()];
            c.auth.auth_factor_grace_seconds = 0;
        }).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let mut ids = Vec::new();
        for name in ["acme", "other"] {
            let (s, d) = send(&app, auth(Req::post().uri("/api/domains/").set_json(json!({"name": name})), &w.api, w.alice)).await;
            assert_eq!(s, 201, "{d}");
            ids.push(Uuid::parse_str(d["id"].as_str().unwrap()).unwrap());
        }
        users::grant_role(w.api.db(), w.bob, "EDITOR", Some(ids[1])).await.unwrap();
        let (s, _) = login(&app, "bob@example.com").await;
        assert_eq!(s, 200, "a member of another domain");
        users::grant_role(w.api.db(), w.bob, "EDITOR", Some(ids[0])).await.unwrap();
        let (s, refused) = login(&app, "bob@example.com").await;
        assert_eq!(s, 403, "{refused}");
        assert_eq!(refused["challenge"]["kind"], "second_factor_enrollment");
    }

    async fn wrong_codes_are_throttled_like_wrong_passwords(t) {
        let w = world(&t, |c| c.auth.login_max_failures_per_account_and_address = 2).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let (_, first) = login(&app, "bob@example.com").await;
        let (totp, _) = add_totp(&app, first["access_token"].as_str(), None).await;
        let (s, challenge) = login(&app, "bob@example.com").await;
        assert_eq!(s, 401, "{challenge}");
        let ticket = challenge["challenge"]["ticket"].clone();
        let peer: std::net::SocketAddr = "192.0.2.7:5000".parse().unwrap();
        let at = now();
        let mut statuses = Vec::new();
        for code in [wrong_code(&totp, at), wrong_code(&totp, at), code(&totp, at + 30)] {
            let req = Req::post().uri("/api/users/factors/verify/").set_json(json!({"factor_ticket": ticket, "code": code})).peer_addr(peer);
            statuses.push(send(&app, req).await.0);
        }
        assert_eq!(statuses, [401, 401, 429], "the right code after two wrong ones waits");
        let other: std::net::SocketAddr = "198.51.100.7:5000".parse().unwrap();
        let req = Req::post().uri("/api/users/factors/verify/").set_json(json!({"factor_ticket": ticket, "code": code(&totp, at + 30)})).peer_addr(other);
        assert_eq!(send(&app, req).await.0, 200, "the owner from another address");
    }
}

/// The second step's time on the server (docs/performance.md): `CRUDFORGE_BENCH_VERIFIES`
/// (200) accounts on SQLite, each with a TOTP factor confirmed with the previous step's code,
/// each signing in with its password (the challenge) and then giving the current step's code
/// at `factors/verify/`. Prints the medians of both requests, and of a wrong code's refusal.
mod verify_timing {
    use super::*;
    use std::time::{Duration, Instant};

    fn median(mut v: Vec<Duration>) -> Duration {
        v.sort_unstable();
        v[v.len() / 2]
    }

    #[actix_web::test]
    #[ignore = "a benchmark: run in release, in a quiet window; prints its figures"]
    async fn sqlite() {
        let n: usize = std::env::var("CRUDFORGE_BENCH_VERIFIES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200);
        let t = TestDb::sqlite().await;
        let w = world(&t, |c| {
            c.auth.login_max_failures_per_account_and_address = 0;
            c.auth.login_max_failures_per_account = 0;
            c.auth.login_max_failures_per_address = 0;
        })
        .await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let (mut logins, mut verifies, mut refusals) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..n {
            let email = format!("u{i}@example.com");
            users::create_user(w.api.db(), &email, PASSWORD, true, COST)
                .await
                .unwrap();
            let (_, first) = login(&app, &email).await;
            let bearer_token = first["access_token"].as_str().unwrap().to_owned();
            let (s, enrolled) = send(
                &app,
                bearer(
                    Req::post()
                        .uri("/api/users/me/factors/totp/")
                        .set_json(json!({})),
                    &bearer_token,
                ),
            )
            .await;
            assert_eq!(s, 201);
            let totp = Totp::from_url(enrolled["otpauth_url"].as_str().unwrap()).unwrap();
            let id = enrolled["id"].as_str().unwrap();
            let at = now();
            let (s, _) = send(
                &app,
                bearer(
                    Req::post()
                        .uri(&format!("/api/users/me/factors/{id}/confirm/"))
                        .set_json(json!({"code": code(&totp, at - 30)})),
                    &bearer_token,
                ),
            )
            .await;
            assert_eq!(s, 200);
            let started = Instant::now();
            let (s, challenge) = login(&app, &email).await;
            logins.push(started.elapsed());
            assert_eq!(s, 401);
            let ticket = challenge["challenge"]["ticket"].clone();
            let started = Instant::now();
            let (s, _) = verify(
                &app,
                json!({"factor_ticket": ticket, "code": wrong_code(&totp, at)}),
            )
            .await;
            refusals.push(started.elapsed());
            assert_eq!(s, 401);
            let started = Instant::now();
            let (s, _) = verify(
                &app,
                json!({"factor_ticket": ticket, "code": code(&totp, at)}),
            )
            .await;
            verifies.push(started.elapsed());
            assert_eq!(s, 200);
        }
        println!(
            "factors verify: n={n} password step (challenge) median {:?}; verify with a right code median {:?}; wrong code median {:?}",
            median(logins),
            median(verifies),
            median(refusals)
        );
    }
}

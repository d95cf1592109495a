//! Sign-in through providers on both backends, against an in-process OpenID provider reached
//! over real HTTP: a first sign-in makes an account, later ones find it and re-read its roles;
//! every forged, replayed or misdirected answer is refused with 401 and writes nothing; an
//! address links an account only when the provider verified it, and linking to an account
//! whose own address was never verified clears its password; `return_to` stays on the
//! configured origins; the last way to sign in cannot be unlinked; an OAuth 2.0 provider
//! shaped like GitHub; keys rotated at the provider are fetched again, at most once a minute.
#![allow(missing_docs, clippy::unwrap_used)]

use crudforge::config::ProviderSettings;
use crudforge::users::{self, UserBlueprint};
use crudforge::{with_conn, Api, Config};
use crudforge_tests::http::{send, Req};
use crudforge_tests::oidc::{Fault, MockProvider, MockUser, CLIENT_ID, CLIENT_SECRET};
use crudforge_tests::{backend_tests, TestDb};
use serde_json::{json, Value};

/// The page the provider sends the browser back to.
const RETURN: &str = "http://app.test/signed-in";

fn settings(name: &str, mock: &MockProvider) -> ProviderSettings {
    let mut p = ProviderSettings::new(name, CLIENT_ID, CLIENT_SECRET);
    p.issuer = Some(mock.issuer());
    p.roles = Some("groups:admins=admin".to_owned());
    p
}

fn config(t: &TestDb, providers: Vec<ProviderSettings>) -> Config {
    t.config().with(move |c| {
        c.auth.bcrypt_cost = 4;
        c.auth.auth_return_origins = vec!["http://app.test".to_owned()];
        c.providers = providers;
    })
}

async fn api(t: &TestDb, config: Config) -> Api {
    let db = t.open(&config).await;
    Api::new(config, db)
        .unwrap()
        .mount(UserBlueprint::default())
        .unwrap()
}

fn mock() -> MockProvider {
    let mock = MockProvider::start();
    mock.register_redirect(RETURN);
    mock
}

fn user(sub: &str, email: &str, verified: bool, groups: &[&str]) -> MockUser {
    MockUser {
        sub: sub.to_owned(),
        email: Some(email.to_owned()),
        email_verified: verified,
        name: Some("Ada".to_owned()),
        groups: groups.iter().map(|g| (*g).to_owned()).collect(),
    }
}

fn post(uri: &str, body: Value) -> Req {
    Req::post().uri(uri).set_json(body)
}

/// Starts a sign-in with `provider` (with `bearer`, a link): the ticket and the
/// authorization URL.
async fn start<S, B>(app: &S, provider: &str, bearer: Option<&str>) -> (String, String)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let mut req = post(
        &format!("/api/users/providers/{provider}/start/"),
        json!({"return_to": RETURN, "link": bearer.is_some()}),
    );
    if let Some(token) = bearer {
        req = req.insert_header(("authorization", format!("Bearer {token}")));
    }
    let (status, body) = send(app, req).await;
    assert_eq!(status, 200, "{body}");
    (
        body["ticket"].as_str().unwrap().to_owned(),
        body["authorization_url"].as_str().unwrap().to_owned(),
    )
}

/// The callback with what the provider sent back for `url`.
fn callback(provider: &str, ticket: &str, code: &str, state: &str, iss: Option<&str>) -> Req {
    post(
        &format!("/api/users/providers/{provider}/callback/"),
        json!({"ticket": ticket, "code": code, "state": state, "iss": iss}),
    )
}

/// A whole sign-in: the callback's status and body.
async fn sign_in<S, B>(app: &S, mock: &MockProvider, provider: &str) -> (u16, Value)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let (ticket, url) = start(app, provider, None).await;
    let back = mock.authorize(&url).unwrap();
    send(
        app,
        callback(
            provider,
            &ticket,
            &back.code,
            &back.state,
            back.iss.as_deref(),
        ),
    )
    .await
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// The rows of the tables a sign-in writes.
async fn rows(api: &Api) -> Vec<i64> {
    let mut conn = api.db().get().await.unwrap();
    let mut out = Vec::new();
    for table in [
        "users",
        "user_roles",
        "tokens",
        "crudforge_identities",
        "crudforge_used_tickets",
        "crudforge_addresses",
    ] {
        let q = format!("SELECT COUNT(*) AS n FROM {table}");
        let c: Count = with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::get_result(diesel::sql_query(q.clone()), c).await
        })
        .unwrap();
        out.push(c.n);
    }
    out
}

async fn me<S, B>(app: &S, access: &str) -> (u16, Value)
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
        Req::get()
            .uri("/api/users/me/")
            .insert_header(("authorization", format!("Bearer {access}"))),
    )
    .await
}

fn has_role(me: &Value, role: &str) -> bool {
    me["roles"]
        .as_array()
        .is_some_and(|r| r.iter().any(|g| g["role"] == role || g == role))
}

backend_tests! {
    async fn a_first_sign_in_makes_an_account_and_later_ones_find_it(t) {
        let mock = mock();
        mock.set_user(user("s-1", "Ada@Example.com", true, &["admins"]));
        let api = api(&t, config(&t, vec![settings("mock", &mock)])).await;
        let app = actix_web::test::init_service(api.app()).await;
        let (status, listed) = send(&app, Req::get().uri("/api/users/providers/")).await;
        assert_eq!((status, listed), (200, json!([{"name": "mock", "openid": true}])));

        let (status, tokens) = sign_in(&app, &mock, "mock").await;
        assert_eq!(status, 200, "{tokens}");
        let access = tokens["access_token"].as_str().unwrap();
        assert!(tokens["refresh_token"].is_string());
        let (status, who) = me(&app, access).await;
        assert_eq!(status, 200, "{who}");
        assert_eq!(who["email"], "ada@example.com");
        assert!(has_role(&who, "admin"), "{who}");
        let (status, ids) = send(
            &app,
            Req::get().uri("/api/users/me/identities/").insert_header(("authorization", format!("Bearer {access}"))),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(ids.as_array().unwrap().len(), 1);
        assert_eq!((ids[0]["provider"].as_str(), ids[0]["subject"].as_str()), (Some("mock"), Some("s-1")));

        // The same person again, no longer in the group: the same account, the role taken.
        mock.set_user(user("s-1", "ada@example.com", true, &[]));
        let before = rows(&api).await;
        let (status, again) = sign_in(&app, &mock, "mock").await;
        assert_eq!(status, 200, "{again}");
        let (_, who2) = me(&app, again["access_token"].as_str().unwrap()).await;
        assert_eq!(who2["id"], who["id"]);
        assert!(!has_role(&who2, "admin"), "{who2}");
        let after = rows(&api).await;
        assert_eq!(after[0], before[0], "no second account");
        // A disabled account does not sign in through its provider either.
        let id: uuid::Uuid = who["id"].as_str().unwrap().parse().unwrap();
        users::set_enabled(api.db(), id, false).await.unwrap();
        let (status, body) = sign_in(&app, &mock, "mock").await;
        assert_eq!(status, 401, "{body}");
        users::set_enabled(api.db(), id, true).await.unwrap();
        // A password login to the account fails: it has no password.
        let (status, _) = send(&app, post("/api/users/login/", json!({"email": "ada@example.com", "password": "anything-at-all"}))).await;
        assert_eq!(status, 401);
    }

    async fn forged_or_wrong_answers_are_refused_and_write_nothing(t) {
        let mock = mock();
        let api = api(&t, config(&t, vec![settings("mock", &mock)])).await;
        let app = actix_web::test::init_service(api.app()).await;
        // Discovery and keys fetched by a first, good sign-in.
        assert_eq!(sign_in(&app, &mock, "mock").await.0, 200);
        // Each fault and what the refusal names.
        let faults = [
            (Fault::BadSignature, "Signature verification failed"),
            (Fault::WrongIssuer, "Invalid issuer"),
            (Fault::WrongAudience, "Invalid audiences"),
            (Fault::ExtraAudienceNoAzp, "not a trusted audience"),
            (Fault::WrongAzp, "(azp)"),
            (Fault::Expired, "expired"),
            // The token answer does not parse: an ID token needs its `iat`.
            (Fault::NoIat, "parse"),
            (Fault::IssuedInFuture, "issued in the future"),
            (Fault::NoNonce, "missing nonce"),
            (Fault::WrongNonce, "nonce mismatch"),
            (Fault::AlgNone, "Signature verification failed"),
            (Fault::HmacWithPublicKey, "Signature verification failed"),
            (Fault::UserinfoSubject, "(sub)"),
            (Fault::WrongIssParam, "iss is not the provider's"),
        ];
        for (fault, named) in faults {
            mock.behave();
            mock.set_user(user(&format!("new-{fault:?}"), &format!("{fault:?}@example.com").to_lowercase(), true, &["admins"]));
            mock.fault(fault.clone());
            let before = rows(&api).await;
            let (status, body) = sign_in(&app, &mock, "mock").await;
            assert_eq!(status, 401, "{fault:?}: {body}");
            assert_eq!(body["status"], 401, "{fault:?}: problem+json {body}");
            assert!(body["detail"].as_str().unwrap().contains(named), "{fault:?}: {body}");
            assert_eq!(rows(&api).await, before, "{fault:?} wrote something");
        }
        mock.behave();
        assert_eq!(sign_in(&app, &mock, "mock").await.0, 200, "a good answer still passes");
    }

    async fn a_ticket_a_code_and_a_state_work_once_and_only_together(t) {
        let mock = mock();
        let api = api(&t, config(&t, vec![settings("mock", &mock)])).await;
        let app = actix_web::test::init_service(api.app()).await;
        let (ticket, url) = start(&app, "mock", None).await;
        let back = mock.authorize(&url).unwrap();
        let first = callback("mock", &ticket, &back.code, &back.state, back.iss.as_deref());
        assert_eq!(send(&app, first).await.0, 200);
        let before = rows(&api).await;

        // The same ticket again (a replayed state).
        let again = callback("mock", &ticket, &back.code, &back.state, back.iss.as_deref());
        let (status, body) = send(&app, again).await;
        assert_eq!(status, 401, "{body}");
        assert!(body["detail"].as_str().unwrap().contains("used"), "{body}");

        // A new ticket with the used code (issued for another sign-in's PKCE challenge).
        let (ticket2, url2) = start(&app, "mock", None).await;
        let state2 = url::Url::parse(&url2).unwrap().query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned();
        let (status, body) = send(&app, callback("mock", &ticket2, &back.code, &state2, back.iss.as_deref())).await;
        assert_eq!(status, 401, "{body}");

        // A ticket with another ticket's state, a ticket edited, another provider's name.
        let (ticket3, url3) = start(&app, "mock", None).await;
        let back3 = mock.authorize(&url3).unwrap();
        let (status, _) = send(&app, callback("mock", &ticket3, &back3.code, &state2, back3.iss.as_deref())).await;
        assert_eq!(status, 401);
        let mut edited = ticket3.clone().into_bytes();
        edited[40] = if edited[40] == b'A' { b'B' } else { b'A' };
        let edited = String::from_utf8(edited).unwrap();
        let (status, _) = send(&app, callback("mock", &edited, &back3.code, &back3.state, back3.iss.as_deref())).await;
        assert_eq!(status, 401);
        let (status, _) = send(&app, callback("mock", &ticket3, "", &back3.state, back3.iss.as_deref())).await;
        assert_eq!(status, 401, "no code");
        assert_eq!(rows(&api).await, before, "the refusals wrote nothing");
        // The ticket was not spent by the refusals: with its own state and code it still works.
        let (status, body) = send(&app, callback("mock", &ticket3, &back3.code, &back3.state, back3.iss.as_deref())).await;
        assert_eq!(status, 200, "{body}");
    }

    async fn a_code_sent_back_to_another_page_is_refused(t) {
        let mock = mock();
        mock.register_redirect("http://app.test/other");
        let api = api(&t, config(&t, vec![settings("mock", &mock)])).await;
        let app = actix_web::test::init_service(api.app()).await;
        // The provider sent its code to /other (an authorization made for that page); the
        // ticket says /signed-in: the exchange names /signed-in and the provider refuses.
        let (ticket, url) = start(&app, "mock", None).await;
        let state = url::Url::parse(&url).unwrap().query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned();
        let elsewhere = url.replace("signed-in", "other");
        let back = mock.authorize(&elsewhere).unwrap();
        let before = rows(&api).await;
        let (status, body) = send(&app, callback("mock", &ticket, &back.code, &state, back.iss.as_deref())).await;
        assert_eq!(status, 401, "{body}");
        assert_eq!(rows(&api).await, before);
    }

    async fn return_to_stays_on_the_configured_origins(t) {
        let mock = mock();
        let api = api(&t, config(&t, vec![settings("mock", &mock)])).await;
        let app = actix_web::test::init_service(api.app()).await;
        for bad in [
            "https://evil.example/signed-in",
            "http://app.test.evil.example/x",
            "http://app.test@evil.example/x",
            "http://user:pw@app.test/x",
            "//evil.example/x",
            "/signed-in",
            "javascript:alert(1)",
            "http://app.test/x#fragment",
            "https://app.test/x",
        ] {
            let (status, body) = send(&app, post("/api/users/providers/mock/start/", json!({"return_to": bad}))).await;
            assert_eq!(status, 422, "{bad}: {body}");
            assert_eq!(body["field"], "return_to", "{bad}: {body}");
        }
        let (status, _) = send(&app, post("/api/users/providers/nobody/start/", json!({"return_to": RETURN}))).await;
        assert_eq!(status, 404);
        // Linking needs a signed-in caller.
        let (status, _) = send(&app, post("/api/users/providers/mock/start/", json!({"return_to": RETURN, "link": true}))).await;
        assert_eq!(status, 401);
    }

    async fn an_address_links_only_when_the_provider_verified_it(t) {
        let mock = mock();
        let api = api(&t, config(&t, vec![settings("mock", &mock)])).await;
        let app = actix_web::test::init_service(api.app()).await;
        let owner = users::create_user(api.db(), "grace@example.com", "grace-password", true, 4).await.unwrap();
        let (_, login) = send(&app, post("/api/users/login/", json!({"email": "grace@example.com", "password": "grace-password"}))).await;
        let old_access = login["access_token"].as_str().unwrap().to_owned();

        // Unverified at the provider: refused, nothing written, the password kept.
        mock.set_user(user("g-1", "grace@example.com", false, &[]));
        let before = rows(&api).await;
        let (status, body) = sign_in(&app, &mock, "mock").await;
        assert_eq!(status, 409, "{body}");
        assert_eq!(rows(&api).await, before);
        assert_eq!(me(&app, &old_access).await.0, 200);

        // Verified at the provider, never verified here (the account may have been made by
        // someone else first): linked, its password cleared, its sessions ended.
        mock.set_user(user("g-1", "grace@example.com", true, &[]));
        let (status, tokens) = sign_in(&app, &mock, "mock").await;
        assert_eq!(status, 200, "{tokens}");
        let (_, who) = me(&app, tokens["access_token"].as_str().unwrap()).await;
        assert_eq!(who["id"], owner.to_string());
        assert_eq!(me(&app, &old_access).await.0, 401, "the old session ended");
        let (status, _) = send(&app, post("/api/users/login/", json!({"email": "grace@example.com", "password": "grace-password"}))).await;
        assert_eq!(status, 401, "the password was cleared");

        // The account's address is now verified: another provider's verified address links
        // without clearing anything more.
        let before = rows(&api).await;
        mock.set_user(user("g-2", "grace@example.com", true, &[]));
        let (status, tokens) = sign_in(&app, &mock, "mock").await;
        assert_eq!(status, 200, "{tokens}");
        let after = rows(&api).await;
        assert_eq!(after[3], before[3] + 1, "a second identity, the same account");
        assert_eq!(after[0], before[0]);
    }

    async fn a_signed_in_account_links_a_provider_and_keeps_a_way_to_sign_in(t) {
        let mock = mock();
        let api = api(&t, config(&t, vec![settings("mock", &mock)])).await;
        let app = actix_web::test::init_service(api.app()).await;
        users::create_user(api.db(), "lin@example.com", "lin-password", true, 4).await.unwrap();
        let (_, login) = send(&app, post("/api/users/login/", json!({"email": "lin@example.com", "password": "lin-password"}))).await;
        let access = login["access_token"].as_str().unwrap().to_owned();
        // Another address at the provider, unverified: an explicit link does not need it.
        mock.set_user(user("l-1", "someone-else@example.com", false, &[]));
        let (ticket, url) = start(&app, "mock", Some(&access)).await;
        let back = mock.authorize(&url).unwrap();
        let (status, body) = send(&app, callback("mock", &ticket, &back.code, &back.state, back.iss.as_deref())).await;
        assert_eq!(status, 200, "{body}");
        let ids = |a: String| Req::get().uri("/api/users/me/identities/").insert_header(("authorization", format!("Bearer {a}")));
        let (_, listed) = send(&app, ids(access.clone())).await;
        assert_eq!(listed[0]["subject"], "l-1");
        // The identity now signs into this account.
        let (status, tokens) = sign_in(&app, &mock, "mock").await;
        assert_eq!(status, 200);
        let (_, who) = me(&app, tokens["access_token"].as_str().unwrap()).await;
        assert_eq!(who["email"], "lin@example.com");

        let unlink = |a: &str, p: &str| post("/api/users/me/identities/unlink/", json!({"provider": p})).insert_header(("authorization", format!("Bearer {a}")));
        assert_eq!(send(&app, unlink(&access, "nobody")).await.0, 404);
        // With a password left, unlinking is fine.
        assert_eq!(send(&app, unlink(&access, "mock")).await.0, 204);
        assert_eq!(send(&app, ids(access.clone())).await.1, json!([]));

        // An account made by a provider has no password: its last identity stays.
        mock.set_user(user("n-1", "newbie@example.com", true, &[]));
        let (_, tokens) = sign_in(&app, &mock, "mock").await;
        let newbie = tokens["access_token"].as_str().unwrap();
        let (status, body) = send(&app, unlink(newbie, "mock")).await;
        assert_eq!(status, 409, "{body}");
        assert_eq!(send(&app, ids(newbie.to_owned())).await.1.as_array().unwrap().len(), 1);
    }

    async fn an_oauth_provider_shaped_like_github_signs_in_with_its_verified_primary_address(t) {
        let mock = mock();
        let issuer = mock.issuer();
        let mut github = ProviderSettings::new("github", CLIENT_ID, CLIENT_SECRET);
        github.auth_url = Some(format!("{issuer}/authorize"));
        github.token_url = Some(format!("{issuer}/token"));
        github.userinfo_url = Some(format!("{issuer}/github/user"));
        let api = api(&t, config(&t, vec![github])).await;
        let app = actix_web::test::init_service(api.app()).await;
        mock.set_user(user("4242", "octo@example.com", true, &[]));
        let (ticket, url) = start(&app, "github", None).await;
        assert!(!url.contains("openid"), "{url}");
        assert!(url.contains("code_challenge_method=S256"), "{url}");
        let back = mock.authorize(&url).unwrap();
        let (status, tokens) = send(&app, callback("github", &ticket, &back.code, &back.state, None)).await;
        assert_eq!(status, 200, "{tokens}");
        let (_, who) = me(&app, tokens["access_token"].as_str().unwrap()).await;
        assert_eq!(who["email"], "octo@example.com");
        // An unverified primary address gives no address: a first sign-in cannot make an account.
        mock.set_user(user("77", "cat@example.com", false, &[]));
        let before = rows(&api).await;
        let (ticket, url) = start(&app, "github", None).await;
        let back = mock.authorize(&url).unwrap();
        let (status, body) = send(&app, callback("github", &ticket, &back.code, &back.state, None)).await;
        assert_eq!(status, 401, "{body}");
        assert_eq!(rows(&api).await, before);
    }

    async fn keys_rotated_at_the_provider_are_fetched_again_at_most_once_a_minute(t) {
        let mock = mock();
        let api = api(&t, config(&t, vec![settings("mock", &mock)])).await;
        let app = actix_web::test::init_service(api.app()).await;
        assert_eq!(sign_in(&app, &mock, "mock").await.0, 200);
        let fetched = mock.hits("/jwks");
        // The provider signs with a new key: one fetch, and the sign-in passes.
        mock.rotate_keys();
        let (status, body) = sign_in(&app, &mock, "mock").await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(mock.hits("/jwks"), fetched + 1);
        // Again an unknown key, within the minute: no fetch, refused.
        mock.fault(Fault::UnknownKid);
        mock.publish_next_key();
        let (status, _) = sign_in(&app, &mock, "mock").await;
        assert_eq!(status, 401);
        assert_eq!(mock.hits("/jwks"), fetched + 1);
    }

    async fn failed_callbacks_are_throttled_like_password_logins(t) {
        let mock = mock();
        let cfg = config(&t, vec![settings("mock", &mock)]).with(|c| c.auth.login_max_failures_per_address = 2);
        let api = api(&t, cfg).await;
        let app = actix_web::test::init_service(api.app()).await;
        let peer: std::net::SocketAddr = "192.0.2.9:5000".parse().unwrap();
        let (ticket, _) = start(&app, "mock", None).await;
        let mut statuses = Vec::new();
        for _ in 0..3 {
            let req = callback("mock", &ticket, "forged-code", "forged-state", None).peer_addr(peer);
            statuses.push(send(&app, req).await.0);
        }
        assert_eq!(statuses, [401, 401, 429]);
    }

    async fn an_account_with_a_second_factor_gives_it_after_its_provider(t) {
        let mock = mock();
        mock.set_user(user("s-9", "eve@example.com", true, &[]));
        let api = api(&t, config(&t, vec![settings("mock", &mock)])).await;
        let app = actix_web::test::init_service(api.app()).await;
        let (status, tokens) = sign_in(&app, &mock, "mock").await;
        assert_eq!(status, 200, "{tokens}");
        let bearer = format!("Bearer {}", tokens["access_token"].as_str().unwrap());
        let (status, enrolled) = send(&app, post("/api/users/me/factors/totp/", json!({})).insert_header(("authorization", bearer.clone()))).await;
        assert_eq!(status, 201, "{enrolled}");
        let totp = totp_rs::Totp::from_url(enrolled["otpauth_url"].as_str().unwrap()).unwrap();
        let now = u64::try_from(chrono::Utc::now().timestamp()).unwrap();
        let id = enrolled["id"].as_str().unwrap();
        let (status, confirmed) = send(&app, post(&format!("/api/users/me/factors/{id}/confirm/"), json!({"code": totp.generate(now).to_string()})).insert_header(("authorization", bearer))).await;
        assert_eq!(status, 200, "{confirmed}");
        // The provider proves who signs in; the factor is still asked for.
        let (status, challenge) = sign_in(&app, &mock, "mock").await;
        assert_eq!(status, 401, "{challenge}");
        assert!(challenge.get("access_token").is_none());
        assert_eq!(challenge["challenge"]["kind"], "second_factor");
        let (status, tokens) = send(&app, post("/api/users/factors/verify/", json!({"factor_ticket": challenge["challenge"]["ticket"], "code": totp.generate(now + 30).to_string()}))).await;
        assert_eq!(status, 200, "{tokens}");
        let claims = api.state().tokens.verify(tokens["access_token"].as_str().unwrap(), crudforge::auth::TokenKind::Access).unwrap();
        assert_eq!(claims.aal, Some(2));
    }

    async fn settings_that_cannot_work_stop_the_api_being_built(t) {
        let mock = mock();
        let without_origins = config(&t, vec![settings("mock", &mock)]).with(|c| c.auth.auth_return_origins.clear());
        let db = t.open(&without_origins).await;
        assert!(Api::new(without_origins, db.clone()).unwrap_err().to_string().contains("AUTH_RETURN_ORIGINS"));
        let mut no_issuer = settings("corp", &mock);
        no_issuer.issuer = None;
        let cfg = config(&t, vec![no_issuer]);
        assert!(Api::new(cfg, db.clone()).unwrap_err().to_string().contains("_ISSUER"));
        let mut bad_roles = settings("corp", &mock);
        bad_roles.roles = Some("groups=admin".to_owned());
        assert!(Api::new(config(&t, vec![bad_roles]), db.clone()).unwrap_err().to_string().contains("_ROLES"));
        let mut plain = settings("corp", &mock);
        plain.issuer = Some("http://idp.example.com".to_owned());
        assert!(Api::new(config(&t, vec![plain]), db).unwrap_err().to_string().contains("https"));
    }
}

/// The callback's time on the server (docs/performance.md): `CRUDFORGE_BENCH_SIGN_INS` (200)
/// sign-ins of one person on SQLite against the loopback provider, after one that fetched the
/// discovery document and keys. Prints the callback's median and mean, and the median of the
/// provider's own part measured alone: the same two requests the callback makes to it (the
/// code exchanged, the user info read), each sign-in's, from a plain client.
mod callback_timing {
    use super::*;
    use std::time::{Duration, Instant};

    fn median(mut v: Vec<Duration>) -> Duration {
        v.sort_unstable();
        v[v.len() / 2]
    }

    #[actix_web::test]
    #[ignore = "a benchmark: run in release, in a quiet window; prints its figures"]
    async fn sqlite() {
        let n: usize = std::env::var("CRUDFORGE_BENCH_SIGN_INS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200);
        let t = TestDb::sqlite().await;
        let mock = mock();
        let api = api(&t, config(&t, vec![settings("mock", &mock)])).await;
        let app = actix_web::test::init_service(api.app()).await;
        assert_eq!(sign_in(&app, &mock, "mock").await.0, 200);
        let mut callbacks = Vec::with_capacity(n);
        for _ in 0..n {
            let (ticket, url) = start(&app, "mock", None).await;
            let back = mock.authorize(&url).unwrap();
            let req = callback(
                "mock",
                &ticket,
                &back.code,
                &back.state,
                back.iss.as_deref(),
            );
            let at = Instant::now();
            let (status, _) = send(&app, req).await;
            callbacks.push(at.elapsed());
            assert_eq!(status, 200);
        }
        // The provider's part alone: a code exchanged and the user info read, over a client
        // of the same kind (the PKCE pair made here).
        let client = reqwest::Client::new();
        let verifier = "v".repeat(43);
        let challenge = {
            use base64::Engine as _;
            use sha2::Digest as _;
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(verifier.as_bytes()))
        };
        let issuer = mock.issuer();
        let mut provider = Vec::with_capacity(n);
        for i in 0..n {
            let url = format!(
                "{issuer}/authorize?response_type=code&client_id={CLIENT_ID}&redirect_uri={}&scope=openid+email&state=s{i}&nonce=n{i}&code_challenge={challenge}&code_challenge_method=S256",
                url::form_urlencoded::byte_serialize(RETURN.as_bytes()).collect::<String>()
            );
            let back = mock.authorize(&url).unwrap();
            let at = Instant::now();
            let form = serde_urlencoded::to_string([
                ("grant_type", "authorization_code"),
                ("code", back.code.as_str()),
                ("redirect_uri", RETURN),
                ("code_verifier", verifier.as_str()),
            ])
            .unwrap();
            let answer = client
                .post(format!("{issuer}/token"))
                .basic_auth(CLIENT_ID, Some(CLIENT_SECRET))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(form)
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
            let token: Value = serde_json::from_slice(&answer).unwrap();
            let access = token["access_token"].as_str().unwrap();
            let info = client
                .get(format!("{issuer}/userinfo"))
                .bearer_auth(access)
                .send()
                .await
                .unwrap();
            assert!(info.status().is_success());
            provider.push(at.elapsed());
        }
        let mean = callbacks.iter().sum::<Duration>() / n as u32;
        println!(
            "sign-ins {n}: callback median {:?}, mean {:?}; the provider's part alone: median {:?}",
            median(callbacks),
            mean,
            median(provider)
        );
    }
}

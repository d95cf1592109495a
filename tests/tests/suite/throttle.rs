//! Throttling of failed credential checks on both backends: per account and client address
//! (the lockout that cannot lock the owner out), per client address, the per-account ceiling,
//! `X-Forwarded-For` behind trusted proxies, the 429 problem with `Retry-After`, and the end of
//! the window.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::test;
use crudforge::config::IpNet;
use crudforge::users::{self, UserBlueprint};
use crudforge::{Api, Config};
use crudforge_tests::{backend_tests, TestDb};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::Duration;

const COST: u32 = 4;

/// The failure window of these tests, in seconds: long enough that a loaded machine (a whole
/// test run on two cores) finishes each test's sequence of logins inside one window, short
/// enough for the two tests that wait for its end.
const WINDOW: u64 = 10;

/// An API with the user blueprint, alice and bob, and small limits in a [`WINDOW`]: 3
/// failures per account from one address, 5 per address over all accounts, 8 per account over
/// all addresses.
async fn api(t: &TestDb, tune: impl FnOnce(Config) -> Config) -> Api {
    let cfg = tune(t.config().with(|c| {
        c.auth.bcrypt_cost = COST;
        c.auth.login_max_failures_per_account_and_address = 3;
        c.auth.login_max_failures_per_address = 5;
        c.auth.login_max_failures_per_account = 8;
        c.auth.login_failure_window = WINDOW;
    }));
    let db = t.open(&cfg).await;
    users::create_user(&db, "alice@example.com", "alice-pass", true, COST)
        .await
        .unwrap();
    users::create_user(&db, "bob@example.com", "bob-pass", true, COST)
        .await
        .unwrap();
    Api::new(cfg, db)
        .unwrap()
        .mount(UserBlueprint::default())
        .unwrap()
}

/// Status, `Retry-After`, content type and JSON body of a response.
struct Answer {
    status: StatusCode,
    retry_after: Option<u64>,
    content_type: String,
    body: Value,
}

async fn answer<B: MessageBody>(resp: ServiceResponse<B>) -> Answer {
    let status = resp.status();
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let retry_after = header("retry-after").map(|v| v.parse().unwrap());
    let content_type = header("content-type").unwrap_or_default();
    let bytes = test::read_body(resp).await;
    Answer {
        status,
        retry_after,
        content_type,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

async fn send<S, B>(app: &S, req: test::TestRequest) -> Answer
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    answer(test::call_service(app, req.to_request()).await).await
}

fn peer(ip: &str) -> SocketAddr {
    format!("{ip}:40000").parse().unwrap()
}

fn login(from: &str, email: &str, password: &str) -> test::TestRequest {
    login_without_peer(email, password).peer_addr(peer(from))
}

/// A login request without a peer address (as over a Unix socket).
fn login_without_peer(email: &str, password: &str) -> test::TestRequest {
    test::TestRequest::post()
        .uri("/api/users/login/")
        .set_json(json!({"email": email, "password": password}))
}

/// Only the per-address limit (the others out of reach).
fn address_limit_only(c: Config) -> Config {
    c.with(|c| {
        c.auth.login_max_failures_per_account_and_address = 100;
        c.auth.login_max_failures_per_account = 100;
    })
}

/// Checks a throttled answer and returns it.
fn throttled(a: &Answer) -> &Answer {
    assert_eq!(a.status, 429, "{}", a.body);
    assert_eq!(a.content_type, "application/problem+json");
    assert_eq!(a.body["type"], "/errors/too_many_requests_error");
    assert_eq!(a.body["title"], "Too Many Requests");
    assert_eq!(a.body["status"], 429);
    assert_eq!(a.body["instance"], "/api/users/login/");
    let wait = a.retry_after.expect("Retry-After");
    assert!(
        (1..=WINDOW).contains(&wait),
        "Retry-After {wait} within the window"
    );
    a
}

/// Waits until the window of a throttled answer has ended.
async fn wait_out(a: &Answer) {
    let secs = a.retry_after.expect("Retry-After");
    tokio::time::sleep(Duration::from_secs(secs) + Duration::from_millis(200)).await;
}

backend_tests! {
    async fn a_guessing_address_is_locked_out_but_the_owner_logs_in_from_another(t) {
        let api = api(&t, |c| c).await;
        let app = test::init_service(api.app()).await;
        // Three failures from one address are evaluated (401).
        for _ in 0..3 {
            let a = send(&app, login("192.0.2.1", "alice@example.com", "guess")).await;
            assert_eq!(a.status, 401, "{}", a.body);
        }
        // The fourth from there is refused without evaluation, even with the right password,
        // and whatever the e-mail's case.
        let wrong = send(&app, login("192.0.2.1", "ALICE@example.com", "guess")).await;
        throttled(&wrong);
        let right = send(&app, login("192.0.2.1", "alice@example.com", "alice-pass")).await;
        throttled(&right);
        // The owner, from another address, logs in with the right password at once.
        let owner = send(&app, login("192.0.2.5", "alice@example.com", "alice-pass")).await;
        assert_eq!(owner.status, 200, "{}", owner.body);
        // The guessing address may still use other accounts (under its own limit).
        let bob = send(&app, login("192.0.2.1", "bob@example.com", "bob-pass")).await;
        assert_eq!(bob.status, 200, "{}", bob.body);
        // Once the window has passed, the guessing address is evaluated again.
        wait_out(&right).await;
        let ok = send(&app, login("192.0.2.1", "alice@example.com", "alice-pass")).await;
        assert_eq!(ok.status, 200, "{}", ok.body);
    }

    async fn the_account_ceiling_holds_across_addresses(t) {
        let api = api(&t, |c| c).await;
        let app = test::init_service(api.app()).await;
        // Eight addresses, one failure each: every one is evaluated.
        for i in 0..8 {
            let a = send(&app, login(&format!("192.0.2.{}", 10 + i), "alice@example.com", "guess")).await;
            assert_eq!(a.status, 401, "{}", a.body);
        }
        // Past the ceiling, every address is refused on this account, the owner's too.
        throttled(&send(&app, login("192.0.2.30", "alice@example.com", "guess")).await);
        let right = send(&app, login("192.0.2.31", "alice@example.com", "alice-pass")).await;
        throttled(&right);
        // Other accounts are not affected.
        let bob = send(&app, login("192.0.2.10", "bob@example.com", "bob-pass")).await;
        assert_eq!(bob.status, 200, "{}", bob.body);
        wait_out(&right).await;
        let ok = send(&app, login("192.0.2.31", "alice@example.com", "alice-pass")).await;
        assert_eq!(ok.status, 200, "{}", ok.body);
    }

    async fn requests_without_a_peer_address_share_one_client(t) {
        let api = api(&t, |c| c).await;
        let app = test::init_service(api.app()).await;
        for _ in 0..3 {
            let a = send(&app, login_without_peer("alice@example.com", "guess")).await;
            assert_eq!(a.status, 401, "{}", a.body);
        }
        // They count as one client on an account...
        throttled(&send(&app, login_without_peer("alice@example.com", "alice-pass")).await);
        // ...but not as one address over all accounts (one guesser would lock out everyone):
        // six more accounts, past the per-address limit of 5, are still evaluated.
        for i in 0..6 {
            let a = send(&app, login_without_peer(&format!("user{i}@example.com"), "x")).await;
            assert_eq!(a.status, 401, "{}", a.body);
        }
        let bob = send(&app, login_without_peer("bob@example.com", "bob-pass")).await;
        assert_eq!(bob.status, 200, "{}", bob.body);
        // A client with an address is not affected.
        let a = send(&app, login("192.0.2.40", "alice@example.com", "alice-pass")).await;
        assert_eq!(a.status, 200, "{}", a.body);
    }

    async fn unknown_accounts_get_the_identical_answer(t) {
        let api = api(&t, |c| c).await;
        let app = test::init_service(api.app()).await;
        let mut last = Vec::new();
        // Per account and address, then per account over all addresses: alike both ways.
        for (k, email) in ["alice@example.com", "nobody@example.com"].into_iter().enumerate() {
            let from = format!("198.51.100.{k}");
            for _ in 0..3 {
                let a = send(&app, login(&from, email, "guess")).await;
                assert_eq!(a.status, 401, "{email}: {}", a.body);
            }
            let a = send(&app, login(&from, email, "guess")).await;
            throttled(&a);
            last.push(a);
            for i in 0..5 {
                let a = send(&app, login(&format!("198.51.100.{}", 10 + 10 * k + i), email, "guess")).await;
                assert_eq!(a.status, 401, "{email}: {}", a.body);
            }
            let a = send(&app, login(&format!("198.51.100.{}", 30 + k), email, "guess")).await;
            throttled(&a);
            last.push(a);
        }
        // Alike but for the id of each request.
        for a in &mut last {
            a.body.as_object_mut().unwrap().remove("request_id");
        }
        for a in &last[1..] {
            assert_eq!(last[0].body, a.body, "same problem for existing and unknown e-mail");
            assert_eq!(last[0].content_type, a.content_type);
        }
        // An unknown e-mail compares case-insensitively too.
        let a = send(&app, login("198.51.100.1", "NOBODY@example.com", "guess")).await;
        throttled(&a);
    }

    async fn an_address_is_throttled_across_accounts(t) {
        let api = api(&t, address_limit_only).await;
        let app = test::init_service(api.app()).await;
        for i in 0..5 {
            let a = send(&app, login("203.0.113.7", &format!("user{i}@example.com"), "x")).await;
            assert_eq!(a.status, 401, "{}", a.body);
        }
        let a = send(&app, login("203.0.113.7", "alice@example.com", "alice-pass")).await;
        throttled(&a);
        // Another address is not affected.
        let a = send(&app, login("203.0.113.8", "alice@example.com", "alice-pass")).await;
        assert_eq!(a.status, 200, "{}", a.body);
        // IPv6 addresses count by their /64.
        for i in 1..=5 {
            let from = format!("[2001:db8:1:2::{i}]");
            let a = send(&app, login(&from, "bob@example.com", "x")).await;
            assert_eq!(a.status, 401, "{}", a.body);
        }
        let a = send(&app, login("[2001:db8:1:2:ffff::1]", "bob@example.com", "bob-pass")).await;
        throttled(&a);
        let a = send(&app, login("[2001:db8:1:3::1]", "bob@example.com", "bob-pass")).await;
        assert_eq!(a.status, 200, "{}", a.body);
    }

    async fn successful_logins_are_not_counted(t) {
        let api = api(&t, |c| c).await;
        let app = test::init_service(api.app()).await;
        for _ in 0..8 {
            let a = send(&app, login("192.0.2.50", "alice@example.com", "alice-pass")).await;
            assert_eq!(a.status, 200, "{}", a.body);
        }
        for _ in 0..3 {
            let a = send(&app, login("192.0.2.50", "alice@example.com", "guess")).await;
            assert_eq!(a.status, 401, "{}", a.body);
        }
        throttled(&send(&app, login("192.0.2.50", "alice@example.com", "guess")).await);
    }

    async fn a_burst_gets_no_more_evaluations_than_the_limit(t) {
        let api = api(&t, |c| c).await;
        let app = test::init_service(api.app()).await;
        // From many addresses on alice: the ceiling (8); from one address on bob: 3.
        for (account, from, limit) in [
            ("alice@example.com", None, 8),
            ("bob@example.com", Some("192.0.2.99"), 3),
        ] {
            let burst = (0..12).map(|i| {
                let ip = from.map_or_else(|| format!("192.0.2.{}", 100 + i), str::to_owned);
                let req = login(&ip, account, "guess");
                let app = &app;
                async move { send(app, req).await }
            });
            let answers = futures_util::future::join_all(burst).await;
            let evaluated = answers.iter().filter(|a| a.status == 401).count();
            let refused = answers.iter().filter(|a| a.status == 429).count();
            assert_eq!((evaluated, refused), (limit, 12 - limit), "{account}: exactly the limit");
        }
    }

    async fn forwarded_for_is_ignored_without_trusted_proxies(t) {
        let api = api(&t, address_limit_only).await;
        let app = test::init_service(api.app()).await;
        for i in 0..5 {
            let req = login("10.0.0.1", "bob@example.com", "x")
                .insert_header(("x-forwarded-for", format!("203.0.113.{i}")));
            assert_eq!(send(&app, req).await.status, 401);
        }
        let req = login("10.0.0.1", "bob@example.com", "bob-pass")
            .insert_header(("x-forwarded-for", "203.0.113.99"));
        throttled(&send(&app, req).await);
    }

    async fn forwarded_for_is_honoured_behind_trusted_proxies(t) {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let api = api(&t, |c| address_limit_only(c).with(|c| c.http.trusted_proxies = trusted))
        .await;
        let app = test::init_service(api.app()).await;
        for i in 0..5 {
            // A spoofed left-most entry does not matter: the right-most untrusted hop counts.
            let req = login("10.0.0.1", "bob@example.com", "x").insert_header((
                "x-forwarded-for",
                format!("192.0.2.{i}, 203.0.113.1, 10.0.0.2"),
            ));
            assert_eq!(send(&app, req).await.status, 401);
        }
        let req = login("10.0.0.3", "bob@example.com", "bob-pass")
            .insert_header(("x-forwarded-for", "203.0.113.1"));
        throttled(&send(&app, req).await);
        // Another client behind the same proxy is not affected.
        let req = login("10.0.0.1", "bob@example.com", "bob-pass")
            .insert_header(("x-forwarded-for", "203.0.113.2"));
        assert_eq!(send(&app, req).await.status, 200);
    }

    async fn refresh_failures_count_per_address(t) {
        let api = api(&t, |c| c).await;
        let app = test::init_service(api.app()).await;
        let refresh = |token: &str| {
            test::TestRequest::post()
                .uri("/api/users/refresh/")
                .peer_addr(peer("192.0.2.77"))
                .set_json(json!({"refresh_token": token}))
        };
        for _ in 0..5 {
            assert_eq!(send(&app, refresh("not-a-token")).await.status, 401);
        }
        let a = send(&app, refresh("not-a-token")).await;
        assert_eq!(a.status, 429, "{}", a.body);
        assert_eq!(a.body["type"], "/errors/too_many_requests_error");
        assert!(a.retry_after.is_some());
        // A replayed (rotated) refresh token also counts against its account from that
        // address, shared with login.
        let ok = send(&app, login("192.0.2.78", "alice@example.com", "alice-pass")).await;
        let token = ok.body["refresh_token"].as_str().unwrap().to_owned();
        let from = |ip: &str| {
            test::TestRequest::post()
                .uri("/api/users/refresh/")
                .peer_addr(peer(ip))
                .set_json(json!({"refresh_token": token}))
        };
        assert_eq!(send(&app, from("192.0.2.79")).await.status, 200);
        for _ in 0..3 {
            assert_eq!(send(&app, from("192.0.2.80")).await.status, 401);
        }
        let a = send(&app, from("192.0.2.80")).await;
        assert_eq!(a.status, 429, "{}", a.body);
        throttled(&send(&app, login("192.0.2.80", "alice@example.com", "alice-pass")).await);
        let a = send(&app, login("192.0.2.84", "alice@example.com", "alice-pass")).await;
        assert_eq!(a.status, 200, "{}", a.body);
    }

    async fn instances_on_one_database_share_the_counters(t) {
        let first = api(&t, |c| c).await;
        // A second instance: its own pool on the same database.
        let cfg = first.state().config.as_ref().clone();
        let db = crudforge::Database::connect(&cfg).await.unwrap();
        let second = Api::new(cfg, db).unwrap().mount(UserBlueprint::default()).unwrap();
        let one = test::init_service(first.app()).await;
        let two = test::init_service(second.app()).await;
        for app in [&one, &two, &one] {
            let a = send(app, login("192.0.2.60", "alice@example.com", "x")).await;
            assert_eq!(a.status, 401, "{}", a.body);
        }
        throttled(&send(&two, login("192.0.2.60", "alice@example.com", "alice-pass")).await);
        throttled(&send(&one, login("192.0.2.60", "alice@example.com", "alice-pass")).await);
        // The ceiling too: five more addresses, split over the instances, reach 8.
        for (i, app) in [&two, &one, &two, &one, &two].into_iter().enumerate() {
            let a = send(app, login(&format!("192.0.2.{}", 61 + i), "alice@example.com", "x")).await;
            assert_eq!(a.status, 401, "{}", a.body);
        }
        throttled(&send(&one, login("192.0.2.70", "alice@example.com", "alice-pass")).await);
    }

    async fn limits_of_zero_turn_throttling_off(t) {
        let api = api(&t, |c| c.with(|c| {
            c.auth.login_max_failures_per_account_and_address = 0;
            c.auth.login_max_failures_per_account = 0;
            c.auth.login_max_failures_per_address = 0;
        }))
        .await;
        let app = test::init_service(api.app()).await;
        for _ in 0..8 {
            assert_eq!(send(&app, login("192.0.2.9", "alice@example.com", "x")).await.status, 401);
        }
        let a = send(&app, login("192.0.2.9", "alice@example.com", "alice-pass")).await;
        assert_eq!(a.status, 200, "{}", a.body);
    }
}

//! Limits per operation and per door (`CrudBlueprint::limit`), on both backends: a limit
//! admits its units and answers 429 with `Retry-After` past them, every answer of a limited
//! route carries `RateLimit` and `RateLimit-Policy`, callers are counted apart (a user, an
//! anonymous client address), a large page and an export cost more than a `GET`, other routes
//! are not limited, the description states each limit; on PostgreSQL two instances of the
//! API share one count and together never admit more than the limit.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::crud::Operation;
use crudforge::limits::{Limit, LimitKey};
use crudforge::perms::Door;
use crudforge::users;
use crudforge::{Api, CrudBlueprint, Resource};
use crudforge_tests::backend_tests;
use crudforge_tests::http::{auth, exchange, json_of, send, Req};
use crudforge_tests::parts::Part;
use serde_json::{json, Value};
use std::time::Duration;
use uuid::Uuid;

/// A window long enough that no test run crosses its end (windows are aligned to the clock).
const LONG: Duration = Duration::from_secs(10 * 365 * 86_400);

struct World {
    api: Api,
    alice: Uuid,
    bob: Uuid,
}

async fn world(t: &crudforge_tests::TestDb, blueprint: fn() -> CrudBlueprint<Part>) -> World {
    let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
    let db = t.open(&cfg).await;
    crudforge_tests::parts::create_table(&db).await;
    let admin = crudforge_tests::user(&db, "admin@example.com").await;
    users::grant_role(&db, admin, "ADMIN", None).await.unwrap();
    let alice = crudforge_tests::user(&db, "alice@example.com").await;
    let bob = crudforge_tests::user(&db, "bob@example.com").await;
    let api = Api::new(cfg, db).unwrap().mount(blueprint()).unwrap();
    World { api, alice, bob }
}

/// Sends `req`: the status, the `RateLimit` header and the `Retry-After` header; an answer
/// other than 429 also carries the `RateLimit-Policy` of its limit.
async fn hit<S, B>(app: &S, req: Req) -> (u16, String, Option<String>)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let (status, headers, _) = exchange(app, req).await;
    let header = |name: &str| headers.get(name).map(|v| v.to_str().unwrap().to_owned());
    let limit = header("ratelimit").unwrap_or_default();
    if status != 429 {
        assert_eq!(
            header("ratelimit-policy").as_deref(),
            Some(&*policy(&limit)),
            "{limit}"
        );
    }
    (status, limit, header("retry-after"))
}

/// The `RateLimit-Policy` the tests' limits give, by the policy's name in `RateLimit`.
fn policy(ratelimit: &str) -> String {
    match ratelimit.split(';').next().unwrap_or_default() {
        "\"get\"" => format!("\"get\";q=3;w={}", LONG.as_secs()),
        "\"index\"" => format!("\"index\";q=10;w={}", LONG.as_secs()),
        "\"export\"" => format!("\"export\";q=2;w={}", LONG.as_secs()),
        other => panic!("unexpected policy {other}"),
    }
}

/// `r=` of a `RateLimit` header.
fn left(ratelimit: &str) -> u64 {
    ratelimit
        .split(';')
        .find_map(|p| p.strip_prefix("r="))
        .unwrap()
        .parse()
        .unwrap()
}

fn limited() -> CrudBlueprint<Part> {
    Part::blueprint("/api/parts/")
        .export()
        .limit(Operation::Get, Limit::new(3, LONG))
        .limit(Operation::Index, Limit::new(10, LONG).by(LimitKey::Address))
        .limit(Door::Export, Limit::new(2, LONG).cost(1))
}

backend_tests! {
    async fn a_limit_admits_its_units_then_answers_429(t) {
        let w = world(&t, limited).await;
        let app = test::init_service(w.api.app()).await;
        let (s, headers, body) = exchange(&app, auth(Req::post().uri("/api/parts/").set_json(json!({"name": "bolt", "qty": 1, "stocked": true})), &w.api, w.alice)).await;
        assert_eq!(s, 201, "POST is not limited");
        assert!(headers.get("ratelimit").is_none());
        let body: Value = json_of(&body);
        let item = format!("/api/parts/{}", body["id"].as_str().unwrap());
        let get = |who: Uuid| auth(Req::get().uri(&item), &w.api, who);
        for expect_left in [2, 1, 0] {
            let (s, limit, _) = hit(&app, get(w.alice)).await;
            assert_eq!((s, left(&limit)), (200, expect_left), "{limit}");
        }
        let (s, headers, body) = exchange(&app, get(w.alice)).await;
        assert_eq!(s, 429);
        let retry: u64 = headers.get("retry-after").unwrap().to_str().unwrap().parse().unwrap();
        assert!(retry > 0 && retry <= LONG.as_secs(), "{retry}");
        let limit = headers.get("ratelimit").unwrap().to_str().unwrap().to_owned();
        assert_eq!(left(&limit), 0);
        assert!(limit.ends_with(&format!(";t={retry}")), "{limit}");
        let problem = json_of(&body);
        assert_eq!(problem["status"], 429, "{problem}");
        assert!(problem["detail"].as_str().unwrap().contains("at most 3"), "{problem}");
        // Bob has his own count (the default key is the caller).
        let (s, limit, _) = hit(&app, get(w.bob)).await;
        assert_eq!((s, left(&limit)), (404, 2), "bob may not read alice's part: {limit}");
    }

    async fn a_page_costs_by_its_size_and_addresses_count_apart(t) {
        let w = world(&t, limited).await;
        let app = test::init_service(w.api.app()).await;
        let from = |ip: &str| {
            auth(Req::get().uri("/api/parts/?page_size=40"), &w.api, w.alice)
                .peer_addr(format!("{ip}:4000").parse().unwrap())
        };
        // A page of 40 costs 2 of the address's 10 units (one per 25 items), whoever signs in.
        for expect_left in [8, 6, 4, 2, 0] {
            let (s, limit, _) = hit(&app, from("192.0.2.1")).await;
            assert_eq!((s, left(&limit)), (200, expect_left), "{limit}");
        }
        let (s, _, retry) = hit(&app, from("192.0.2.1")).await;
        assert_eq!(s, 429);
        assert!(retry.is_some());
        let bob = auth(Req::get().uri("/api/parts/"), &w.api, w.bob).peer_addr("192.0.2.1:4001".parse().unwrap());
        assert_eq!(hit(&app, bob).await.0, 429, "the same address, another user");
        let (s, limit, _) = hit(&app, from("192.0.2.2")).await;
        assert_eq!((s, left(&limit)), (200, 8), "another address");
        // A door has its own limit, with the cost it is given.
        let export = || auth(Req::get().uri("/api/parts/export/?format=ndjson"), &w.api, w.alice);
        assert_eq!(hit(&app, export()).await.0, 200);
        assert_eq!(hit(&app, export()).await.0, 200);
        assert_eq!(hit(&app, export()).await.0, 429);
    }

    async fn the_description_states_each_limit(t) {
        let w = world(&t, limited).await;
        let app = test::init_service(w.api.app()).await;
        let (_, spec) = send(&app, Req::get().uri("/openapi.json")).await;
        let get = &spec["paths"]["/api/parts/{id}"]["get"];
        assert_eq!(get["x-rate-limit"], json!({"policy": "get", "limit": 3, "window": LONG.as_secs(), "key": "caller", "cost": null}));
        let text = get["description"].as_str().unwrap();
        assert!(text.contains("Limit: 3 units per"), "{text}");
        assert!(get["responses"]["429"]["headers"]["Retry-After"].is_object(), "{get}");
        assert!(get["responses"]["200"]["headers"]["RateLimit"].is_object(), "{get}");
        assert!(get["responses"]["200"]["headers"]["RateLimit-Policy"].is_object(), "{get}");
        let index = &spec["paths"]["/api/parts/"]["get"];
        assert_eq!(index["x-rate-limit"]["key"], "address");
        assert!(index["description"].as_str().unwrap().contains("one unit per `DEFAULT_PAGE_SIZE` items"), "{index}");
        let export = &spec["paths"]["/api/parts/export/"]["get"];
        assert_eq!(export["x-rate-limit"]["cost"], 1, "{export}");
        let post = &spec["paths"]["/api/parts/"]["post"];
        assert!(post.get("x-rate-limit").is_none(), "{post}");
        assert!(post["responses"].get("429").is_none(), "{post}");
    }
}

/// Two instances of the API on one PostgreSQL database share each key's count: together
/// they admit exactly the limit, whichever instance a request reaches.
#[cfg(feature = "postgres")]
#[actix_web::test]
async fn instances_share_the_count_on_postgres() {
    use crudforge_tests::http::call;
    let Some(t) = crudforge_tests::TestDb::postgres().await else {
        return;
    };
    let blueprint = || Part::blueprint("/api/parts/").limit(Operation::Index, Limit::new(16, LONG));
    let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
    let db = t.open(&cfg).await;
    crudforge_tests::parts::create_table(&db).await;
    let alice = crudforge_tests::user(&db, "alice@example.com").await;
    let one = Api::new(cfg.clone(), db)
        .unwrap()
        .mount(blueprint())
        .unwrap();
    let two = Api::new(cfg.clone(), t.open(&cfg).await)
        .unwrap()
        .mount(blueprint())
        .unwrap();
    let app_one = test::init_service(one.app()).await;
    let app_two = test::init_service(two.app()).await;
    let mut admitted = 0;
    for i in 0..24 {
        let status = if i % 3 == 0 {
            call(&app_two, auth(Req::get().uri("/api/parts/"), &two, alice))
                .await
                .0
        } else {
            call(&app_one, auth(Req::get().uri("/api/parts/"), &one, alice))
                .await
                .0
        };
        match status {
            200 => admitted += 1,
            429 => {}
            other => panic!("{other}"),
        }
    }
    assert_eq!(
        admitted, 16,
        "the two instances together admit the limit, no more"
    );
}

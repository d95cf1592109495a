//! Nothing hangs, nothing is unbounded, on both backends: a full pool answers 503 after the
//! checkout timeout, PostgreSQL statements stop at the statement timeout, and list requests
//! have caps on filters and `__in` values (400 naming the cap).
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::{with_conn, Api, Config, Resource};
use crudforge_tests::critters::{create_table, Critter};
use crudforge_tests::{backend_tests, Backend};
use diesel_async::SimpleAsyncConnection;
use serde_json::Value;
use std::time::{Duration, Instant};

backend_tests! {
    async fn lists_have_caps_on_filters_and_in_values(t) {
        let cfg = Config { max_filters: 3, max_in_values: 4, ..t.config() };
        let db = t.open(&cfg).await;
        create_table(&db).await;
        let api = Api::new(cfg, db).unwrap().mount(Critter::blueprint("/api/critters/")).unwrap();
        let app = test::init_service(api.app()).await;
        let get = |uri: &str| test::TestRequest::get().uri(uri).to_request();
        let resp = test::call_service(&app, get("/api/critters/?name=a&species=b&tag=c")).await;
        assert_eq!(resp.status(), 200);
        let resp = test::call_service(&app, get("/api/critters/?name=a&species=b&tag=c&name__ne=d")).await;
        assert_eq!(resp.status(), 400);
        let v: Value = test::read_body_json(resp).await;
        assert!(v["detail"].as_str().unwrap().contains("MAX_FILTERS"), "{v}");
        let resp = test::call_service(&app, get("/api/critters/?name__in=a,b,c,d")).await;
        assert_eq!(resp.status(), 200);
        let resp = test::call_service(&app, get("/api/critters/?name__in=a,b,c,d,e")).await;
        assert_eq!(resp.status(), 400);
        let v: Value = test::read_body_json(resp).await;
        let detail = v["detail"].as_str().unwrap();
        assert!(detail.contains("MAX_IN_VALUES") && detail.contains("name__in"), "{v}");
    }

    async fn a_full_pool_answers_503_after_the_checkout_timeout(t) {
        let cfg = Config { db_checkout_timeout: 1, ..t.config() };
        let db = t.open(&cfg).await;
        create_table(&db).await;
        let api = Api::new(cfg, db.clone()).unwrap().mount(Critter::blueprint("/api/critters/")).unwrap();
        let app = test::init_service(api.app()).await;
        // Take every connection the pool has.
        let mut held = Vec::new();
        loop {
            match db.get().await {
                Ok(c) => held.push(c),
                Err(_) => break,
            }
            assert!(held.len() <= 64, "the pool has a bound");
        }
        let started = Instant::now();
        let resp = test::call_service(&app, test::TestRequest::get().uri("/api/critters/").to_request()).await;
        assert_eq!(resp.status(), 503);
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(resp.headers().get("content-type").unwrap(), "application/problem+json");
        drop(held);
        let resp = test::call_service(&app, test::TestRequest::get().uri("/api/critters/").to_request()).await;
        assert_eq!(resp.status(), 200, "connections come back");
    }

    async fn postgres_statements_stop_at_the_statement_timeout(t) {
        let cfg = Config { db_statement_timeout: 1, ..t.config() };
        let db = t.open(&cfg).await;
        if db.backend() != Backend::Postgres {
            return;
        }
        let mut conn = db.get().await.unwrap();
        let started = Instant::now();
        let r = with_conn!(conn, |c| c.batch_execute("SELECT pg_sleep(5)").await);
        assert!(r.is_err(), "cancelled by statement_timeout");
        assert!(started.elapsed() < Duration::from_secs(4));
    }
}

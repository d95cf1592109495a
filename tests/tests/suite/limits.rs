//! Nothing hangs, nothing is unbounded, on both backends: a full pool answers 503 after the
//! checkout timeout, statements stop at the statement timeout (PostgreSQL cancels them, SQLite's
//! progress handler interrupts them: 503), a slow body gets 408, and list requests
//! have caps on filters and `__in` values (400 naming the cap).
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::{with_conn, Api, Resource};
use crudforge_tests::critters::{create_table, Critter};
use crudforge_tests::{backend_tests, Backend};
use diesel_async::SimpleAsyncConnection;
use serde_json::Value;
use std::time::{Duration, Instant};

backend_tests! {
    async fn lists_have_caps_on_filters_and_in_values(t) {
        let cfg = t.config().with(|c| { c.list.max_filters = 3; c.list.max_in_values = 4; });
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
        let cfg = t.config().with(|c| c.db.db_checkout_timeout = 1);
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

    async fn statements_stop_at_the_statement_timeout_with_a_503(t) {
        let cfg = t.config().with(|c| c.db.db_statement_timeout = 1);
        let db = t.open(&cfg).await;
        let endless = match db.backend() {
            Backend::Postgres => "SELECT pg_sleep(5)",
            // SQLite: a recursive count that would run for minutes, stopped by the progress handler.
            Backend::Sqlite => "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n",
        };
        let mut conn = db.get().await.unwrap();
        let r = with_conn!(conn, |c| c.batch_execute(endless).await);
        let err = crudforge::Error::from(r.expect_err("cancelled by the statement timeout"));
        let problem = err.problem();
        assert_eq!(problem.status, 503, "{err}");
        assert!(problem.detail.contains("DB_STATEMENT_TIMEOUT"), "{}", problem.detail);
        // The connection is usable afterwards.
        let again = with_conn!(conn, |c| c.batch_execute("SELECT 1").await);
        assert!(again.is_ok(), "{again:?}");
    }

    async fn a_body_slower_than_the_request_timeout_gets_408_and_changes_nothing(t) {
        let cfg = t.config().with(|c| { c.http.request_timeout = 1; c.ops.metrics_enabled = true; });
        let db = t.open(&cfg).await;
        create_table(&db).await;
        let api = Api::new(cfg, db.clone()).unwrap()
            .mount(Critter::blueprint("/api/critters/").public([crudforge::crud::Operation::Post])).unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = actix_web::HttpServer::new(move || api.app())
            .workers(1)
            .disable_signals()
            .listen(listener)
            .unwrap()
            .run();
        let handle = server.handle();
        actix_web::rt::spawn(server);
        let answer = tokio::task::spawn_blocking(move || {
            use std::io::{Read, Write};
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            let body = r#"{"name":"Slow","species":"cat"}"#;
            let head = format!(
                "POST /api/critters/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            s.write_all(head.as_bytes()).unwrap();
            // Half the body now, the rest long after REQUEST_TIMEOUT (if the server still reads).
            s.write_all(&body.as_bytes()[..10]).unwrap();
            std::thread::sleep(Duration::from_millis(2500));
            let _ = s.write_all(&body.as_bytes()[10..]);
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut out = Vec::new();
            let mut buf = [0u8; 4096];
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&buf[..n]);
                if out.windows(4).any(|w| w == b"\r\n\r\n") && out.ends_with(b"}") {
                    break;
                }
            }
            let answer = String::from_utf8_lossy(&out).into_owned();
            // The metrics count the timed-out request under its operation.
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
            let mut metrics = String::new();
            let _ = s.read_to_string(&mut metrics);
            (answer, metrics)
        })
        .await
        .unwrap();
        let (answer, metrics) = answer;
        handle.stop(false).await;
        assert!(
            metrics.lines().any(|l| l.starts_with("crudforge_http_requests_total{")
                && l.contains(r#"operation="createCritter""#)
                && l.contains(r#"status="4xx""#)),
            "{metrics}"
        );
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.to_ascii_lowercase().contains("content-type: application/problem+json"), "{answer}");
        assert!(answer.contains("request_timeout_error"), "{answer}");
        let mut conn = db.get().await.unwrap();
        let n: i64 = with_conn!(conn, |c| {
            use diesel::prelude::*;
            diesel_async::RunQueryDsl::get_result(crudforge_tests::critters::critters::table.count(), c).await
        }).unwrap();
        assert_eq!(n, 0, "nothing was written");
    }
}

//! DEBUG details on every problem and none without DEBUG; no `Server-Timing` on
//! authentication endpoints. Both backends.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::users::{self, UserBlueprint};
use crudforge::{Api, Config, Database, Resource};
use crudforge_tests::backend_tests;
use crudforge_tests::critters::{create_table, Critter};
use serde_json::{json, Value};
use uuid::Uuid;

async fn open(t: &crudforge_tests::TestDb, cfg: &Config) -> Database {
    let db = t.open(cfg).await;
    create_table(&db).await;
    users::create_user(&db, "alice@example.com", "alice-pass", true, 4)
        .await
        .unwrap();
    db
}

fn app_with(db: &Database, cfg: Config) -> Api {
    let cfg = cfg.with(|c| c.auth.bcrypt_cost = 4);
    Api::new(cfg, db.clone())
        .unwrap()
        .mount(UserBlueprint::default())
        .unwrap()
        .mount(Critter::blueprint("/api/critters/"))
        .unwrap()
}

backend_tests! {
    async fn every_problem_has_debug_details_in_debug_mode_only(t) {
        let db = open(&t, &t.config()).await;
        for debug in [true, false] {
            let api = app_with(&db, t.config().with(|c| c.http.debug = debug));
            let app = test::init_service(api.app()).await;
            let missing = format!("/api/critters/{}", Uuid::new_v4());
            for uri in [missing.as_str(), "/nowhere", "/api/critters/?nope=1"] {
                let resp = test::call_service(&app, test::TestRequest::get().uri(uri).to_request()).await;
                assert!(resp.status().is_client_error());
                let v: Value = test::read_body_json(resp).await;
                assert_eq!(v.get("debug").is_some(), debug, "{uri}: {v}");
                if debug {
                    let d = v["debug"].as_str().unwrap();
                    assert!(d.contains("kind:") && d.contains("route:"), "{d}");
                    assert!(!d.to_lowercase().contains("select "), "no SQL: {d}");
                }
            }
            let resp = test::call_service(&app, test::TestRequest::get().uri(&missing).to_request()).await;
            let v: Value = test::read_body_json(resp).await;
            if debug {
                assert!(v["debug"].as_str().unwrap().contains("/api/critters/{id}"), "{v}");
            }
        }
    }

    async fn no_server_timing_on_authentication_endpoints(t) {
        let cfg = t.config().with(|c| c.db.orm_performance_monitoring = true);
        let db = open(&t, &cfg).await;
        let api = app_with(&db, cfg);
        let app = test::init_service(api.app()).await;
        let resp = test::call_service(&app, test::TestRequest::get().uri("/api/critters/").to_request()).await;
        assert!(resp.headers().contains_key("server-timing"), "lists still carry it");
        for email in ["alice@example.com", "nobody@example.com"] {
            let resp = test::call_service(&app, test::TestRequest::post().uri("/api/users/login/")
                .set_json(json!({"email": email, "password": "wrong-pass"})).to_request()).await;
            assert_eq!(resp.status(), 401);
            assert!(!resp.headers().contains_key("server-timing"), "{email}");
        }
        let resp = test::call_service(&app, test::TestRequest::post().uri("/api/users/refresh/")
            .set_json(json!({"refresh_token": "x"})).to_request()).await;
        assert!(!resp.headers().contains_key("server-timing"));
    }

    async fn no_server_timing_on_authentication_endpoints_spelt_otherwise(t) {
        let cfg = t.config().with(|c| c.db.orm_performance_monitoring = true);
        let db = open(&t, &cfg).await;
        let api = app_with(&db, cfg);
        let app = test::init_service(api.app()).await;
        // Percent-encoded letters route to the same endpoints (the 401 shows it was reached)
        // and are judged by the route they matched, not by the raw path.
        for (uri, body) in [
            ("/api/users/logi%6e/", json!({"email": "alice@example.com", "password": "wrong-pass"})),
            ("/api/users/logi%6E/", json!({"email": "nobody@example.com", "password": "wrong-pass"})),
            ("/api/users/%72efresh/", json!({"refresh_token": "x"})),
        ] {
            let resp = test::call_service(&app, test::TestRequest::post().uri(uri)
                .set_json(body).to_request()).await;
            assert_eq!(resp.status(), 401, "{uri} reaches the endpoint");
            assert!(!resp.headers().contains_key("server-timing"), "{uri}");
        }
        // Other routes spelt so still carry it.
        let resp = test::call_service(&app, test::TestRequest::get().uri("/api/critter%73/").to_request()).await;
        assert_eq!(resp.status(), 200);
        assert!(resp.headers().contains_key("server-timing"), "lists still carry it");
    }
}

//! Writes users can trust, on both backends: lifecycle hooks, ETags with conditional requests
//! (`If-None-Match`, `If-Match`, required `If-Match`), and idempotent retries
//! (`Idempotency-Key`), including real concurrency.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::body::MessageBody;
use actix_web::dev::ServiceResponse;
use actix_web::http::StatusCode;
use actix_web::test;
use crudforge::crud::CrudBlueprint;
use crudforge::{Api, Config, Error, Resource};
use crudforge_tests::critters::{create_table, Critter};
use crudforge_tests::{backend_tests, TestDb};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

async fn api_with(t: &TestDb, cfg: Config, bp: CrudBlueprint<Critter>) -> Api {
    let db = t.open(&cfg).await;
    create_table(&db).await;
    Api::new(cfg, db).unwrap().mount(bp).unwrap()
}

async fn api(t: &TestDb, bp: CrudBlueprint<Critter>) -> Api {
    api_with(t, t.config(), bp).await
}

struct Answer {
    status: StatusCode,
    headers: actix_web::http::header::HeaderMap,
    raw: Vec<u8>,
    json: Value,
}

impl Answer {
    fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    }
    fn etag(&self) -> String {
        self.header("etag").expect("ETag header")
    }
}

async fn answer<B: MessageBody>(resp: ServiceResponse<B>) -> Answer {
    let status = resp.status();
    let headers = resp.headers().clone();
    let raw = test::read_body(resp).await.to_vec();
    let json = if raw.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&raw)
            .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&raw)))
    };
    Answer {
        status,
        headers,
        raw,
        json,
    }
}

macro_rules! call {
    ($app:expr, $req:expr) => {
        answer(test::call_service(&$app, $req.to_request()).await).await
    };
}

fn get(uri: &str) -> test::TestRequest {
    test::TestRequest::get().uri(uri)
}

fn post(uri: &str, v: Value) -> test::TestRequest {
    test::TestRequest::post().uri(uri).set_json(v)
}

fn patch(uri: &str, v: Value) -> test::TestRequest {
    test::TestRequest::patch().uri(uri).set_json(v)
}

fn delete(uri: &str) -> test::TestRequest {
    test::TestRequest::delete().uri(uri)
}

fn critter(name: &str) -> Value {
    json!({"name": name, "species": "cat"})
}

async fn total<S, B>(app: &S) -> i64
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: MessageBody,
{
    let a = answer(test::call_service(app, get("/api/critters/").to_request()).await).await;
    assert_eq!(a.status, 200);
    a.json["pagination"]["total"].as_i64().unwrap()
}

fn assert_problem(a: &Answer, status: u16, type_: &str) {
    assert_eq!(a.status.as_u16(), status, "{}", a.json);
    assert_eq!(
        a.header("content-type").as_deref(),
        Some("application/problem+json")
    );
    assert_eq!(a.json["type"], type_, "{}", a.json);
}

backend_tests! {
    // ---- hooks ----

    async fn before_create_normalizes_and_before_update_refuses(t) {
        let bp = Critter::blueprint("/api/critters/")
            .before_create(|_ctx, mut input: crudforge_tests::critters::CritterCreate| async move {
                input.name = input.name.trim().to_owned();
                input.species = input.species.to_lowercase();
                Ok(input)
            })
            .before_update(|_ctx, input: crudforge_tests::critters::CritterUpdate, current: Arc<Critter>| async move {
                if current.species == "cat" && input.species.as_deref() == Some("dog") {
                    return Err(Error::invalid_field("species", "a cat stays a cat"));
                }
                Ok(input)
            });
        let app = test::init_service(api(&t, bp).await.app()).await;
        let a = call!(app, post("/api/critters/", json!({"name": "  Tom  ", "species": "CAT"})));
        assert_eq!(a.status, 201, "{}", a.json);
        assert_eq!(a.json["name"], "Tom");
        assert_eq!(a.json["species"], "cat");
        let uri = format!("/api/critters/{}", a.json["id"].as_str().unwrap());
        let refused = call!(app, patch(&uri, json!({"species": "dog", "name": "Rex"})));
        assert_problem(&refused, 422, "/errors/validation_error");
        assert_eq!(refused.json["field"], "species");
        let now = call!(app, get(&uri));
        assert_eq!(now.json["name"], "Tom", "a refused update changes nothing");
        let ok = call!(app, patch(&uri, json!({"name": "Tommy"})));
        assert_eq!(ok.status, 200, "{}", ok.json);
        assert_eq!(ok.json["name"], "Tommy");
    }

    async fn before_update_input_tidies_and_refuses_without_reading_the_row(t) {
        let bp = Critter::blueprint("/api/critters/")
            .before_update_input(|_ctx, mut input: crudforge_tests::critters::CritterUpdate| async move {
                if input.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
                    return Err(Error::invalid_field("name", "must not be blank"));
                }
                input.name = input.name.map(|n| n.trim().to_owned());
                Ok(input)
            });
        let cfg = t.config().with(|c| c.db.orm_performance_monitoring = true);
        let app = test::init_service(api_with(&t, cfg, bp).await.app()).await;
        let a = call!(app, post("/api/critters/", critter("Tom")));
        assert_eq!(a.status, 201, "{}", a.json);
        let uri = format!("/api/critters/{}", a.json["id"].as_str().unwrap());
        let ok = call!(app, patch(&uri, json!({"name": "  Tommy  "})));
        assert_eq!(ok.status, 200, "{}", ok.json);
        assert_eq!(ok.json["name"], "Tommy");
        let timing = ok.header("server-timing").expect("Server-Timing");
        assert!(timing.contains("\"1 queries\""), "the update alone, no read, no BEGIN/COMMIT: {timing}");
        let refused = call!(app, patch(&uri, json!({"name": "   "})));
        assert_problem(&refused, 422, "/errors/validation_error");
        assert_eq!(refused.json["field"], "name");
        assert_eq!(call!(app, get(&uri)).json["name"], "Tommy", "a refused update changes nothing");
    }

    async fn an_after_hook_error_rolls_the_write_back(t) {
        let bp = Critter::blueprint("/api/critters/")
            .after_create(|_conn, _ctx, row: &Critter| {
                let bad = row.name == "doomed";
                Box::pin(async move {
                    if bad {
                        Err(Error::Conflict("the audit log refused it".into()))
                    } else {
                        Ok(())
                    }
                })
            })
            .after_update(|_conn, _ctx, row: &Critter| {
                let bad = row.name == "doomed";
                Box::pin(async move {
                    if bad { Err(Error::Internal("audit failed".into())) } else { Ok(()) }
                })
            })
            .after_delete(|_conn, _ctx, row: &Critter| {
                let bad = row.species == "immortal";
                Box::pin(async move {
                    if bad { Err(Error::Forbidden("it cannot die".into())) } else { Ok(()) }
                })
            });
        let app = test::init_service(api(&t, bp).await.app()).await;
        let a = call!(app, post("/api/critters/", critter("doomed")));
        assert_problem(&a, 409, "/errors/conflict_error");
        assert_eq!(total(&app).await, 0, "nothing written");
        let a = call!(app, post("/api/critters/", critter("Tom")));
        assert_eq!(a.status, 201);
        let uri = format!("/api/critters/{}", a.json["id"].as_str().unwrap());
        let a = call!(app, patch(&uri, json!({"name": "doomed"})));
        assert_eq!(a.status, 500);
        assert_eq!(call!(app, get(&uri)).json["name"], "Tom", "update rolled back");
        let a = call!(app, patch(&uri, json!({"species": "immortal"})));
        assert_eq!(a.status, 200);
        let a = call!(app, delete(&uri));
        assert_problem(&a, 403, "/errors/forbidden_error");
        assert_eq!(call!(app, get(&uri)).status, 200, "delete rolled back");
    }

    async fn after_commit_runs_once_per_committed_write(t) {
        let seen = Arc::new(AtomicUsize::new(0));
        let names = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (s, n) = (seen.clone(), names.clone());
        let bp = Critter::blueprint("/api/critters/")
            .after_create(|_conn, _ctx, row: &Critter| {
                let bad = row.name == "doomed";
                Box::pin(async move {
                    if bad { Err(Error::Conflict("no".into())) } else { Ok(()) }
                })
            })
            .after_commit(move |ctx, row: Arc<Critter>| {
                let (s, n) = (s.clone(), n.clone());
                async move {
                    s.fetch_add(1, Ordering::SeqCst);
                    n.lock().unwrap().push(format!("{:?} {}", ctx.operation, row.name));
                    // A failure here is logged; the committed write stays a success.
                    Err(Error::Internal("mail server down".into()))
                }
            });
        let app = test::init_service(api(&t, bp).await.app()).await;
        let a = call!(app, post("/api/critters/", critter("Tom")));
        assert_eq!(a.status, 201, "an after-commit failure never fails the write");
        let uri = format!("/api/critters/{}", a.json["id"].as_str().unwrap());
        assert_eq!(seen.load(Ordering::SeqCst), 1);
        let a = call!(app, post("/api/critters/", critter("doomed")));
        assert_eq!(a.status, 409);
        let a = call!(app, post("/api/critters/", json!({"name": 5})));
        assert_eq!(a.status, 422);
        assert_eq!(seen.load(Ordering::SeqCst), 1, "never for a failed write");
        let a = call!(app, patch(&uri, json!({"name": "Tommy"})));
        assert_eq!(a.status, 200);
        let a = call!(app, patch(&uri, json!({"name": "Tommy"})).insert_header(("If-Match", "\"stale\"")));
        assert_eq!(a.status, 412);
        let a = call!(app, delete(&uri));
        assert_eq!(a.status, 204);
        let a = call!(app, delete(&uri));
        assert_eq!(a.status, 404);
        // A replayed POST writes nothing, so runs nothing.
        let a = call!(app, post("/api/critters/", critter("Kit")).insert_header(("Idempotency-Key", "k1")));
        assert_eq!(a.status, 201);
        let a = call!(app, post("/api/critters/", critter("Kit")).insert_header(("Idempotency-Key", "k1")));
        assert_eq!(a.status, 201);
        assert_eq!(a.header("idempotent-replayed").as_deref(), Some("true"));
        assert_eq!(seen.load(Ordering::SeqCst), 4);
        assert_eq!(
            *names.lock().unwrap(),
            vec!["Post Tom", "Patch Tommy", "Delete Tommy", "Post Kit"]
        );
    }

    async fn after_commit_hooks_get_the_written_row_and_the_answer_matches_a_read(t) {
        // With only after-commit hooks and no idempotency key, the answer is made after them
        // from the row the write returned: whether a hook keeps that row (then it is read
        // again) or not, the answer and its ETag are those a GET gives.
        let kept = Arc::new(std::sync::Mutex::new(Vec::<Arc<Critter>>::new()));
        let k = kept.clone();
        let bp = Critter::blueprint("/api/critters/").after_commit(move |_ctx, row: Arc<Critter>| {
            let k = k.clone();
            async move {
                if row.name.starts_with("keep") {
                    k.lock().unwrap().push(row);
                }
                Ok(())
            }
        });
        let app = test::init_service(api(&t, bp).await.app()).await;
        for name in ["keep me", "let go"] {
            let made = call!(app, post("/api/critters/", critter(name)));
            assert_eq!(made.status, 201);
            let uri = format!("/api/critters/{}", made.json["id"].as_str().unwrap());
            let read = call!(app, get(&uri));
            assert_eq!(made.json, read.json, "{name}");
            assert_eq!(made.header("etag"), read.header("etag"), "{name}");
            let changed = call!(app, patch(&uri, json!({"species": "lynx"})));
            assert_eq!(changed.status, 200);
            let read = call!(app, get(&uri));
            assert_eq!(changed.json, read.json, "{name}");
            assert_eq!(changed.json["species"], "lynx");
            assert_eq!(changed.header("etag"), read.header("etag"), "{name}");
        }
        let kept = kept.lock().unwrap();
        assert_eq!(kept.len(), 2, "the hook kept the created and the changed row");
        assert_eq!(kept[1].species, "lynx");
    }

    // ---- ETags and conditional requests ----

    async fn etags_and_if_none_match(t) {
        let app = test::init_service(api(&t, Critter::blueprint("/api/critters/")).await.app()).await;
        let created = call!(app, post("/api/critters/", critter("Tom")));
        let uri = format!("/api/critters/{}", created.json["id"].as_str().unwrap());
        let tag = created.etag();
        assert!(tag.starts_with('"') && tag.ends_with('"') && !tag.starts_with("W/"), "{tag}");
        let got = call!(app, get(&uri));
        assert_eq!(got.etag(), tag, "GET and POST agree on the tag");
        for inm in [tag.clone(), format!("W/{tag}"), "*".to_owned(), format!("\"x\", {tag}")] {
            let a = call!(app, get(&uri).insert_header(("If-None-Match", inm.as_str())));
            assert_eq!(a.status, 304, "{inm}");
            assert!(a.raw.is_empty(), "304 has no body");
            assert_eq!(a.etag(), tag);
        }
        let a = call!(app, get(&uri).insert_header(("If-None-Match", "\"other\"")));
        assert_eq!(a.status, 200);
        let changed = call!(app, patch(&uri, json!({"nickname": "T"})));
        assert_eq!(changed.status, 200);
        assert_ne!(changed.etag(), tag, "the tag changes with the row");
        assert_eq!(call!(app, get(&uri)).etag(), changed.etag());
        let a = call!(app, get(&uri).insert_header(("If-None-Match", tag.as_str())));
        assert_eq!(a.status, 200, "an old tag no longer matches");
        let a = call!(app, get(&uri).insert_header(("If-None-Match", "nope")));
        assert_problem(&a, 400, "/errors/bad_request_error");
        assert_eq!(a.json["field"], "If-None-Match");
    }

    async fn if_match_guards_patch_and_delete(t) {
        let app = test::init_service(api(&t, Critter::blueprint("/api/critters/")).await.app()).await;
        let created = call!(app, post("/api/critters/", critter("Tom")));
        let uri = format!("/api/critters/{}", created.json["id"].as_str().unwrap());
        let tag = created.etag();
        let stale = call!(app, patch(&uri, json!({"name": "A"})).insert_header(("If-Match", "\"0000\"")));
        assert_problem(&stale, 412, "/errors/precondition_failed_error");
        let weak = call!(app, patch(&uri, json!({"name": "A"})).insert_header(("If-Match", format!("W/{tag}"))));
        assert_eq!(weak.status, 412, "a weak tag never matches If-Match");
        assert_eq!(call!(app, get(&uri)).json["name"], "Tom", "412 changes nothing");
        let bad = call!(app, patch(&uri, json!({"name": "A"})).insert_header(("If-Match", "abc")));
        assert_problem(&bad, 400, "/errors/bad_request_error");
        assert_eq!(bad.json["field"], "If-Match");
        let ok = call!(app, patch(&uri, json!({"name": "B"})).insert_header(("If-Match", format!("\"x\", {tag}"))));
        assert_eq!(ok.status, 200, "{}", ok.json);
        let new_tag = ok.etag();
        let a = call!(app, delete(&uri).insert_header(("If-Match", tag.as_str())));
        assert_problem(&a, 412, "/errors/precondition_failed_error");
        assert_eq!(call!(app, get(&uri)).status, 200);
        let a = call!(app, patch(&uri, json!({"name": "C"})).insert_header(("If-Match", "*")));
        assert_eq!(a.status, 200);
        let a = call!(app, delete(&uri).insert_header(("If-Match", new_tag.as_str())));
        assert_eq!(a.status, 412, "the * update changed the tag");
        let a = call!(app, delete(&uri).insert_header(("If-Match", a_tag(&app, &uri).await.as_str())));
        assert_eq!(a.status, 204);
        let a = call!(app, delete(&uri).insert_header(("If-Match", "*")));
        assert_eq!(a.status, 404, "a missing item is 404 whatever the precondition");
    }

    async fn require_if_match_gives_428(t) {
        let bp = Critter::blueprint("/api/critters/").require_if_match(true);
        let app = test::init_service(api(&t, bp).await.app()).await;
        let created = call!(app, post("/api/critters/", critter("Tom")));
        let uri = format!("/api/critters/{}", created.json["id"].as_str().unwrap());
        let a = call!(app, patch(&uri, json!({"name": "A"})));
        assert_problem(&a, 428, "/errors/precondition_required_error");
        let a = call!(app, delete(&uri));
        assert_problem(&a, 428, "/errors/precondition_required_error");
        assert_eq!(call!(app, get(&uri)).json["name"], "Tom");
        let a = call!(app, patch(&uri, json!({"name": "A"})).insert_header(("If-Match", created.etag())));
        assert_eq!(a.status, 200);
        let a = call!(app, delete(&uri).insert_header(("If-Match", a.etag())));
        assert_eq!(a.status, 204);
    }

    async fn concurrent_patches_with_one_tag_one_wins(t) {
        let app = test::init_service(api(&t, Critter::blueprint("/api/critters/")).await.app()).await;
        let created = call!(app, post("/api/critters/", critter("Tom")));
        let uri = format!("/api/critters/{}", created.json["id"].as_str().unwrap());
        for round in 0..20 {
            let tag = a_tag(&app, &uri).await;
            let calls = (0..12).map(|i| {
                let req = patch(&uri, json!({"name": format!("r{round}-{i}")}))
                    .insert_header(("If-Match", tag.as_str()))
                    .to_request();
                let app = &app;
                async move { answer(test::call_service(app, req).await).await }
            });
            let answers = futures_util::future::join_all(calls).await;
            let ok: Vec<&Answer> = answers.iter().filter(|a| a.status == 200).collect();
            let failed = answers.iter().filter(|a| a.status == 412).count();
            assert_eq!(ok.len(), 1, "round {round}: {:?}", answers.iter().map(|a| (a.status, a.json.clone())).collect::<Vec<_>>());
            assert_eq!(failed, 11, "round {round}");
            let now = call!(app, get(&uri));
            assert_eq!(now.json["name"], ok[0].json["name"], "the winner's write is the one stored");
            assert_eq!(now.etag(), ok[0].etag());
        }
    }

    async fn concurrent_deletes_with_one_tag_one_wins(t) {
        let app = test::init_service(api(&t, Critter::blueprint("/api/critters/")).await.app()).await;
        for round in 0..10 {
            let created = call!(app, post("/api/critters/", critter(&format!("r{round}"))));
            let uri = format!("/api/critters/{}", created.json["id"].as_str().unwrap());
            let tag = created.etag();
            let calls = (0..6).map(|i| {
                let req = if i % 2 == 0 {
                    delete(&uri)
                } else {
                    patch(&uri, json!({"name": format!("p{i}")}))
                }
                .insert_header(("If-Match", tag.as_str()))
                .to_request();
                let app = &app;
                async move { answer(test::call_service(app, req).await).await }
            });
            let answers = futures_util::future::join_all(calls).await;
            let wins = answers.iter().filter(|a| a.status.is_success()).count();
            let statuses: Vec<u16> = answers.iter().map(|a| a.status.as_u16()).collect();
            assert_eq!(wins, 1, "round {round}: {statuses:?}");
            assert!(statuses.iter().all(|s| [200, 204, 404, 412].contains(s)), "{statuses:?}");
        }
    }

    // ---- idempotency keys ----

    async fn a_retried_post_is_answered_from_the_store(t) {
        let app = test::init_service(api(&t, Critter::blueprint("/api/critters/")).await.app()).await;
        let first = call!(app, post("/api/critters/", critter("Tom")).insert_header(("Idempotency-Key", "order-1")));
        assert_eq!(first.status, 201);
        assert!(first.header("idempotent-replayed").is_none());
        let again = call!(app, post("/api/critters/", critter("Tom")).insert_header(("Idempotency-Key", "order-1")));
        assert_eq!(again.status, 201);
        assert_eq!(again.json["id"], first.json["id"]);
        assert_eq!(again.raw, first.raw, "the same body");
        assert_eq!(again.header("location"), first.header("location"));
        assert!(first.header("location").is_some());
        assert_eq!(again.etag(), first.etag());
        assert_eq!(again.header("idempotent-replayed").as_deref(), Some("true"));
        assert_eq!(total(&app).await, 1, "one row");
        // Another body under the same key.
        let other = call!(app, post("/api/critters/", critter("Jerry")).insert_header(("Idempotency-Key", "order-1")));
        assert_problem(&other, 422, "/errors/validation_error");
        assert_eq!(other.json["field"], "Idempotency-Key");
        assert_eq!(total(&app).await, 1);
        // Another key is another request.
        let a = call!(app, post("/api/critters/", critter("Tom")).insert_header(("Idempotency-Key", "\"order-2\"")));
        assert_eq!(a.status, 201);
        assert_ne!(a.json["id"], first.json["id"]);
        // A failed request stores nothing: its retry is processed anew.
        let a = call!(app, post("/api/critters/", json!({"name": "x"})).insert_header(("Idempotency-Key", "order-3")));
        assert_eq!(a.status, 422);
        let a = call!(app, post("/api/critters/", json!({"name": "x"})).insert_header(("Idempotency-Key", "order-3")));
        assert_eq!(a.status, 422);
        assert!(a.header("idempotent-replayed").is_none());
        // Malformed keys.
        for bad in ["", &"k".repeat(256)] {
            let a = call!(app, post("/api/critters/", critter("Tom")).insert_header(("Idempotency-Key", bad)));
            assert_problem(&a, 400, "/errors/bad_request_error");
            assert_eq!(a.json["field"], "Idempotency-Key");
        }
        let a = call!(app, post("/api/critters/", critter("Tom")).insert_header(("Idempotency-Key", "k".repeat(255))));
        assert_eq!(a.status, 201);
        assert_eq!(total(&app).await, 3);
    }

    async fn a_retried_patch_is_answered_from_the_store(t) {
        let app = test::init_service(api(&t, Critter::blueprint("/api/critters/")).await.app()).await;
        let created = call!(app, post("/api/critters/", critter("Tom")));
        let uri = format!("/api/critters/{}", created.json["id"].as_str().unwrap());
        let tag = created.etag();
        let req = || {
            patch(&uri, json!({"cuteness_level": 11}))
                .insert_header(("Idempotency-Key", "p-1"))
                .insert_header(("If-Match", tag.as_str()))
        };
        let first = call!(app, req());
        assert_eq!(first.status, 200);
        // The retry carries the now stale tag, yet receives the stored answer.
        let again = call!(app, req());
        assert_eq!(again.status, 200, "{}", again.json);
        assert_eq!(again.raw, first.raw);
        assert_eq!(again.header("idempotent-replayed").as_deref(), Some("true"));
        assert_eq!(call!(app, get(&uri)).json["updated_at"], first.json["updated_at"], "not written twice");
    }

    async fn concurrent_duplicates_create_one_row(t) {
        let app = test::init_service(api(&t, Critter::blueprint("/api/critters/")).await.app()).await;
        for round in 0..5 {
            let key = format!("dup-{round}");
            let calls = (0..10).map(|_| {
                let req = post("/api/critters/", critter("Tom"))
                    .insert_header(("Idempotency-Key", key.as_str()))
                    .to_request();
                let app = &app;
                async move { answer(test::call_service(app, req).await).await }
            });
            let answers = futures_util::future::join_all(calls).await;
            let created: Vec<&Answer> = answers.iter().filter(|a| a.status == 201).collect();
            assert!(!created.is_empty());
            assert!(created.iter().all(|a| a.json["id"] == created[0].json["id"]));
            for a in &answers {
                assert!(a.status == 201 || a.status == 409, "{} {}", a.status, a.json);
                if a.status == 409 {
                    assert_eq!(a.json["type"], "/errors/conflict_error");
                }
            }
            assert_eq!(total(&app).await, round + 1, "round {round}: one row per key");
            // Once done, a retry is a replay.
            let a = call!(app, post("/api/critters/", critter("Tom")).insert_header(("Idempotency-Key", key.as_str())));
            assert_eq!(a.status, 201);
            assert_eq!(a.json["id"], created[0].json["id"]);
        }
    }

    async fn a_key_is_bound_to_its_request(t) {
        // The fingerprint covers method and path: the same key on another endpoint is refused,
        // not answered with the first endpoint's answer.
        let app = test::init_service(api(&t, Critter::blueprint("/api/critters/")).await.app()).await;
        let created = call!(app, post("/api/critters/", critter("Tom")).insert_header(("Idempotency-Key", "same")));
        let uri = format!("/api/critters/{}", created.json["id"].as_str().unwrap());
        let a = call!(app, patch(&uri, critter("Tom")).insert_header(("Idempotency-Key", "same")));
        assert_problem(&a, 422, "/errors/validation_error");
    }

    async fn anonymous_callers_from_two_addresses_do_not_share_keys(t) {
        let bp = Critter::blueprint("/api/critters/").public([crudforge::crud::Operation::Post]);
        let app = test::init_service(api(&t, bp).await.app()).await;
        let from = |ip: &str| {
            post("/api/critters/", critter("Tom"))
                .insert_header(("Idempotency-Key", "shared-key"))
                .peer_addr(format!("{ip}:40000").parse().unwrap())
        };
        let first = call!(app, from("192.0.2.1"));
        assert_eq!(first.status, 201, "{}", first.json);
        // Another anonymous client, same key and request: processed as its own.
        let other = call!(app, from("192.0.2.2"));
        assert_eq!(other.status, 201, "{}", other.json);
        assert!(other.header("idempotent-replayed").is_none());
        assert_ne!(other.json["id"], first.json["id"], "not the first client's answer");
        assert_eq!(total(&app).await, 2);
        // Each client's retry replays its own answer.
        for (ip, mine) in [("192.0.2.1", &first), ("192.0.2.2", &other)] {
            let again = call!(app, from(ip));
            assert_eq!(again.header("idempotent-replayed").as_deref(), Some("true"));
            assert_eq!(again.json["id"], mine.json["id"], "{ip}");
        }
        assert_eq!(total(&app).await, 2);
    }

    async fn a_key_is_bound_to_its_query_string(t) {
        let app = test::init_service(api(&t, Critter::blueprint("/api/critters/")).await.app()).await;
        let req = |uri: &str| post(uri, critter("Tom")).insert_header(("Idempotency-Key", "q-1"));
        let first = call!(app, req("/api/critters/?tag=a"));
        assert_eq!(first.status, 201, "{}", first.json);
        for uri in ["/api/critters/?tag=b", "/api/critters/"] {
            let a = call!(app, req(uri));
            assert_problem(&a, 422, "/errors/validation_error");
            assert_eq!(a.json["field"], "Idempotency-Key", "{uri}");
        }
        let again = call!(app, req("/api/critters/?tag=a"));
        assert_eq!(again.header("idempotent-replayed").as_deref(), Some("true"));
        assert_eq!(again.json["id"], first.json["id"]);
        assert_eq!(total(&app).await, 1);
    }

    async fn an_expired_key_is_processed_anew(t) {
        let cfg = t.config().with(|c| c.http.idempotency_key_ttl = 1);
        let app = test::init_service(api_with(&t, cfg, Critter::blueprint("/api/critters/")).await.app()).await;
        let first = call!(app, post("/api/critters/", critter("Tom")).insert_header(("Idempotency-Key", "short")));
        assert_eq!(first.status, 201);
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        let again = call!(app, post("/api/critters/", critter("Tom")).insert_header(("Idempotency-Key", "short")));
        assert_eq!(again.status, 201);
        assert!(again.header("idempotent-replayed").is_none());
        assert_ne!(again.json["id"], first.json["id"]);
        assert_eq!(total(&app).await, 2);
        let third = call!(app, post("/api/critters/", critter("Tom")).insert_header(("Idempotency-Key", "short")));
        assert_eq!(third.json["id"], again.json["id"], "the new answer is stored in turn");
    }

    // ---- OpenAPI ----

    async fn openapi_documents_headers_and_answers(t) {
        let bp = Critter::blueprint("/api/critters/").require_if_match(true);
        let app = test::init_service(api(&t, bp).await.app()).await;
        let spec = call!(app, get("/openapi.json")).json;
        let item = &spec["paths"]["/api/critters/{id}"];
        let list = &spec["paths"]["/api/critters/"];
        let params = |op: &Value| -> Vec<(String, bool)> {
            op["parameters"].as_array().unwrap().iter()
                .filter(|p| p["in"] == "header")
                .map(|p| (p["name"].as_str().unwrap().to_owned(), p["required"].as_bool().unwrap_or(false)))
                .collect()
        };
        assert_eq!(params(&item["get"]), vec![("If-None-Match".to_owned(), false)]);
        assert!(params(&item["patch"]).contains(&("If-Match".to_owned(), true)));
        assert!(params(&item["patch"]).contains(&("Idempotency-Key".to_owned(), false)));
        assert_eq!(params(&item["delete"]), vec![("If-Match".to_owned(), true)]);
        assert_eq!(params(&list["post"]), vec![("Idempotency-Key".to_owned(), false)]);
        assert!(item["get"]["responses"]["304"].is_object());
        assert!(item["get"]["responses"]["200"]["headers"]["ETag"].is_object());
        assert!(list["post"]["responses"]["201"]["headers"]["ETag"].is_object());
        assert!(item["patch"]["responses"]["200"]["headers"]["ETag"].is_object());
        for code in ["412", "428"] {
            assert!(item["patch"]["responses"][code].is_object(), "{code}");
            assert!(item["delete"]["responses"][code].is_object(), "{code}");
        }
        for code in ["409", "422"] {
            assert!(list["post"]["responses"][code].is_object(), "{code}");
            assert!(item["patch"]["responses"][code].is_object(), "{code}");
        }
    }
}

/// The current tag of `uri`.
async fn a_tag<S, B>(app: &S, uri: &str) -> String
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: MessageBody,
{
    answer(test::call_service(app, get(uri).to_request()).await)
        .await
        .etag()
}

/// One blocking HTTP/1.1 request (`Connection: close`): status, headers (lower-case names),
/// body.
fn http(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let bytes = body.map(|b| serde_json::to_vec(b).unwrap());
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = &bytes {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    if let Some(b) = &bytes {
        s.write_all(b).unwrap();
    }
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers, raw[split + 4..].to_vec())
}

fn etag_of(headers: &[(String, String)]) -> String {
    headers
        .iter()
        .find(|(k, _)| k == "etag")
        .map(|(_, v)| v.clone())
        .expect("ETag header")
}

backend_tests! {
    async fn a_real_server_lets_one_of_many_concurrent_patches_win(t) {
        let api = api(&t, Critter::blueprint("/api/critters/")).await;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = actix_web::HttpServer::new(move || api.app())
            .workers(4)
            .disable_signals()
            .listen(listener)
            .unwrap()
            .run();
        let handle = server.handle();
        actix_web::rt::spawn(server);
        let (status, _, body) = tokio::task::spawn_blocking(move || {
            http(addr, "POST", "/api/critters/", &[], Some(&critter("Tom")))
        })
        .await
        .unwrap();
        assert_eq!(status, 201);
        let made: Value = serde_json::from_slice(&body).unwrap();
        let uri = format!("/api/critters/{}", made["id"].as_str().unwrap());
        let results = tokio::task::spawn_blocking(move || {
            let mut rounds = Vec::new();
            for round in 0..20 {
                let (_, headers, _) = http(addr, "GET", &uri, &[], None);
                let tag = etag_of(&headers);
                let start = Arc::new(std::sync::Barrier::new(8));
                let threads: Vec<_> = (0..8)
                    .map(|i| {
                        let (start, uri, tag) = (start.clone(), uri.clone(), tag.clone());
                        std::thread::spawn(move || {
                            let body = json!({"name": format!("r{round}-t{i}")});
                            start.wait();
                            http(addr, "PATCH", &uri, &[("If-Match", &tag)], Some(&body)).0
                        })
                    })
                    .collect();
                let statuses: Vec<u16> = threads.into_iter().map(|t| t.join().unwrap()).collect();
                rounds.push(statuses);
            }
            rounds
        })
        .await
        .unwrap();
        handle.stop(true).await;
        for (round, statuses) in results.iter().enumerate() {
            let ok = statuses.iter().filter(|s| **s == 200).count();
            let failed = statuses.iter().filter(|s| **s == 412).count();
            assert_eq!((ok, failed), (1, 7), "round {round}: {statuses:?}");
        }
    }
}

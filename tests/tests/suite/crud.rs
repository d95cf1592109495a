//! Generated CRUD endpoints on both backends: the five operations, base fields, pagination,
//! sorting, every filter, endpoint configuration, errors, OpenAPI and query counts.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::{test, web, HttpResponse};
use crudforge::crud::registry;
use crudforge::crud::CustomRoute;
use crudforge::crud::{OpOptions, Operation};
use crudforge::{Api, Config, Resource};
use crudforge_tests::critters::{create_table, stored_secret, Critter, CritterFilter};
use crudforge_tests::{backend_tests, TestDb};
use serde_json::{json, Value};

async fn api_with(t: &TestDb, cfg: Config, mounts: Vec<Box<dyn crudforge::Mount>>) -> Api {
    let db = t.open(&cfg).await;
    create_table(&db).await;
    let mut api = Api::new(cfg, db).unwrap();
    for m in mounts {
        api = api.mount(m).unwrap();
    }
    api
}

async fn critter_api(t: &TestDb) -> Api {
    let db = t.open(&t.config()).await;
    create_table(&db).await;
    Api::new(t.config(), db)
        .unwrap()
        .mount(Critter::blueprint("/api/critters/"))
        .unwrap()
}

async fn body<B: MessageBody>(resp: ServiceResponse<B>) -> (StatusCode, Value) {
    let status = resp.status();
    let bytes = test::read_body(resp).await;
    if bytes.is_empty() {
        return (status, Value::Null);
    }
    let v = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&bytes)));
    (status, v)
}

macro_rules! call {
    ($app:expr, $req:expr) => {
        body(test::call_service(&$app, $req.to_request()).await).await
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

async fn seed<S, B>(app: &S, items: &[Value]) -> Vec<Value>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let mut out = Vec::new();
    for item in items {
        let (status, v) =
            body(test::call_service(app, post("/api/critters/", item.clone()).to_request()).await)
                .await;
        assert_eq!(status, 201, "{v}");
        out.push(v);
    }
    out
}

fn names(v: &Value) -> Vec<String> {
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect()
}

backend_tests! {
    async fn five_operations_round_trip(t) {
        let api = critter_api(&t).await;
        let db = api.db().clone();
        let app = test::init_service(api.app()).await;

        let req = post("/api/critters/", json!({
            "name": "Mittens", "species": "cat", "nickname": null, "weight": 4.5,
            "born_on": "2020-02-29", "seen_at": "2024-05-01T10:00:00+02:00",
            "notes": {"likes": ["naps"]}, "secret": "tuna"
        })).to_request();
        let resp = test::call_service(&app, req).await;
        assert_eq!(resp.status(), 201);
        let location = resp.headers().get("location").unwrap().to_str().unwrap().to_owned();
        let (_, created) = body(resp).await;
        let id = created["id"].as_str().unwrap().to_owned();
        assert_eq!(location, format!("/api/critters/{id}"));
        assert_eq!(created["cuteness_level"], 10, "default applies");
        assert_eq!(created["vaccinated"], false);
        assert_eq!(created["score"], 7, "read-only field takes the database default");
        assert_eq!(created["seen_at"], "2024-05-01T08:00:00Z");
        assert_eq!(created["notes"]["likes"][0], "naps");
        assert!(created.get("secret").is_none(), "write-only fields are never returned");
        assert_eq!(stored_secret(&db, id.parse().unwrap()).await.as_deref(), Some("tuna"));
        assert_eq!(created["created_at"], created["updated_at"]);

        let (status, got) = call!(app, get(&location));
        assert_eq!(status, 200);
        assert_eq!(got, created);

        let (status, changed) = call!(app, patch(&location, json!({"cuteness_level": 11, "nickname": "Mitty"})));
        assert_eq!(status, 200, "{changed}");
        assert_eq!(changed["cuteness_level"], 11);
        assert_eq!(changed["nickname"], "Mitty");
        assert_eq!(changed["name"], "Mittens", "absent members are unchanged");
        assert_eq!(changed["created_at"], created["created_at"]);
        assert!(changed["updated_at"].as_str().unwrap() > created["updated_at"].as_str().unwrap(), "updated_at moves");

        let (status, changed) = call!(app, patch(&location, json!({"nickname": null})));
        assert_eq!(status, 200);
        assert!(changed["nickname"].is_null(), "null clears a nullable field");
        assert_eq!(changed["cuteness_level"], 11);

        let (status, list) = call!(app, get("/api/critters/"));
        assert_eq!(status, 200);
        assert_eq!(list["pagination"], json!({"page": 1, "page_size": 25, "total": 1, "total_pages": 1, "next_cursor": null}));
        assert_eq!(list["data"][0]["id"], id);

        let resp = test::call_service(&app, delete(&location).to_request()).await;
        assert_eq!(resp.status(), 204);
        assert!(test::read_body(resp).await.is_empty());
        let (status, v) = call!(app, get(&location));
        assert_eq!(status, 404);
        assert_eq!(v["type"], "/errors/not_found_error");
        assert_eq!(v["title"], "Not Found");
        let (status, _) = call!(app, delete(&location));
        assert_eq!(status, 404);
    }

    async fn clients_cannot_write_base_or_read_only_fields(t) {
        let api = critter_api(&t).await;
        let app = test::init_service(api.app()).await;
        let created = seed(&app, &[json!({"name": "A", "species": "ant"})]).await.remove(0);
        let uri = format!("/api/critters/{}", created["id"].as_str().unwrap());
        for member in ["id", "created_at", "updated_at", "score"] {
            let mut body_v = json!({"name": "B", "species": "bee"});
            body_v[member] = json!(if member == "score" { json!(99) } else if member == "id" { json!(uuid::Uuid::new_v4()) } else { json!("2000-01-01T00:00:00Z") });
            let (status, v) = call!(app, post("/api/critters/", body_v.clone()));
            assert_eq!(status, 422, "{member}: {v}");
            assert_eq!(v["field"], member);
            let (status, v) = call!(app, patch(&uri, json!({ member: body_v[member].clone() })));
            assert_eq!(status, 422, "{member}: {v}");
            assert_eq!(v["field"], member);
        }
        let (_, list) = call!(app, get("/api/critters/"));
        assert_eq!(list["pagination"]["total"], 1, "failed requests wrote nothing");
        let (_, same) = call!(app, get(&uri));
        assert_eq!(same, created, "failed requests changed nothing");
    }

    async fn invalid_bodies_name_the_field_and_write_nothing(t) {
        let api = critter_api(&t).await;
        let app = test::init_service(api.app()).await;
        let cases = [
            (json!({"species": "cat"}), "name"),
            (json!({"name": 5, "species": "cat"}), "name"),
            (json!({"name": "x".repeat(101), "species": "cat"}), "name"),
            (json!({"name": "ok", "species": "s".repeat(51)}), "species"),
            (json!({"name": "ok", "species": "cat", "cuteness_level": "very"}), "cuteness_level"),
            (json!({"name": "ok", "species": "cat", "born_on": "yesterday"}), "born_on"),
            (json!({"name": "ok", "species": "cat", "colour": "red"}), "colour"),
            // PostgreSQL cannot store NUL in text or jsonb: refused on both backends, naming where.
            (json!({"name": "a\u{0}b", "species": "cat"}), "name"),
            (json!({"name": "ok", "species": "cat", "notes": {"tags": ["x", "\u{0}"]}}), "notes.tags[1]"),
            // A member name holding NUL is named with the NUL written out, never echoed.
            (json!({"name": "ok", "species": "cat", "a\u{0}b": 1}), "a\\u0000b"),
        ];
        for (b, field) in cases {
            let (status, v) = call!(app, post("/api/critters/", b.clone()));
            assert_eq!(status, 422, "{b}: {v}");
            assert_eq!(v["field"], field, "{v}");
            assert_eq!(v["type"], "/errors/validation_error");
        }
        let (status, _) = call!(app, test::TestRequest::post().uri("/api/critters/").insert_header(("content-type", "application/json")).set_payload("[1,2]"));
        assert_eq!(status, 422);
        let (status, _) = call!(app, test::TestRequest::post().uri("/api/critters/").insert_header(("content-type", "application/json")).set_payload("{oops"));
        assert_eq!(status, 400);
        let (status, _) = call!(app, test::TestRequest::post().uri("/api/critters/").insert_header(("content-type", "text/plain")).set_payload("{}"));
        assert_eq!(status, 415);
        let created = seed(&app, &[json!({"name": "A", "species": "ant"})]).await.remove(0);
        let uri = format!("/api/critters/{}", created["id"].as_str().unwrap());
        let (status, v) = call!(app, patch(&uri, json!({"name": "y".repeat(101)})));
        assert_eq!(status, 422);
        assert_eq!(v["field"], "name");
        let (status, v) = call!(app, patch(&uri, json!({"name": null})));
        assert_eq!(status, 422, "a required field cannot be cleared: {v}");
        let (_, list) = call!(app, get("/api/critters/"));
        assert_eq!(list["pagination"]["total"], 1);
        let (_, same) = call!(app, get(&uri));
        assert_eq!(same, created);
    }

    async fn malformed_or_missing_ids_are_404(t) {
        let api = critter_api(&t).await;
        let app = test::init_service(api.app()).await;
        let missing = uuid::Uuid::new_v4();
        for uri in [format!("/api/critters/{missing}"), "/api/critters/not-a-uuid".to_owned(), "/api/critters/%00".to_owned()] {
            let (status, v) = call!(app, get(&uri));
            assert_eq!(status, 404, "{uri}: {v}");
            assert_eq!(v["type"], "/errors/not_found_error");
            let (status, _) = call!(app, patch(&uri, json!({"name": "x"})));
            assert_eq!(status, 404);
            let (status, _) = call!(app, delete(&uri));
            assert_eq!(status, 404);
        }
    }

    async fn unique_violations_are_409(t) {
        let api = critter_api(&t).await;
        let app = test::init_service(api.app()).await;
        let first = seed(&app, &[json!({"name": "A", "species": "ant", "tag": "t1"}), json!({"name": "B", "species": "bee", "tag": "t2"})]).await;
        let (status, v) = call!(app, post("/api/critters/", json!({"name": "C", "species": "cow", "tag": "t1"})));
        assert_eq!(status, 409, "{v}");
        assert_eq!(v["type"], "/errors/conflict_error");
        let uri = format!("/api/critters/{}", first[1]["id"].as_str().unwrap());
        let (status, _) = call!(app, patch(&uri, json!({"tag": "t1"})));
        assert_eq!(status, 409);
        let (_, list) = call!(app, get("/api/critters/?sort=name"));
        assert_eq!(names(&list), ["A", "B"]);
        assert_eq!(list["data"][1]["tag"], "t2");
    }

    async fn pagination_envelope_and_limits(t) {
        let api = critter_api(&t).await;
        let app = test::init_service(api.app()).await;
        let items: Vec<Value> = (0..7).map(|i| json!({"name": format!("c{i}"), "species": "cat"})).collect();
        seed(&app, &items).await;
        let (_, v) = call!(app, get("/api/critters/?page_size=3&page=2"));
        assert!(v["pagination"]["next_cursor"].is_string(), "a page before the last has a next cursor");
        assert_eq!(v["pagination"], json!({"page": 2, "page_size": 3, "total": 7, "total_pages": 3, "next_cursor": v["pagination"]["next_cursor"]}));
        assert_eq!(names(&v), ["c3", "c4", "c5"], "default order is creation order");
        let (_, v) = call!(app, get("/api/critters/?page_size=3&page=3"));
        assert_eq!(names(&v), ["c6"]);
        let (status, v) = call!(app, get("/api/critters/?page_size=3&page=9"));
        assert_eq!(status, 200);
        assert_eq!(v["data"], json!([]));
        assert_eq!(v["pagination"]["total"], 7);
        for (q, param) in [("page=0", "page"), ("page=-1", "page"), ("page=x", "page"), ("page_size=101", "page_size"), ("page_size=0", "page_size")] {
            let (status, v) = call!(app, get(&format!("/api/critters/?{q}")));
            assert_eq!(status, 400, "{q}");
            assert_eq!(v["field"], param);
        }
        let (status, v) = call!(app, get("/api/critters/?page_size=100"));
        assert_eq!(status, 200);
        assert_eq!(v["pagination"]["page_size"], 100);
    }

    async fn configured_page_sizes(t) {
        let cfg = t.config().with(|c| { c.list.default_page_size = 2; c.list.max_page_size = 4; });
        let api = api_with(&t, cfg, vec![registry::blueprint("Critter", "/api/critters/").unwrap()]).await;
        let app = test::init_service(api.app()).await;
        seed(&app, &(0..5).map(|i| json!({"name": format!("c{i}"), "species": "cat"})).collect::<Vec<_>>()).await;
        let (_, v) = call!(app, get("/api/critters/"));
        assert!(v["pagination"]["next_cursor"].is_string());
        assert_eq!(v["pagination"], json!({"page": 1, "page_size": 2, "total": 5, "total_pages": 3, "next_cursor": v["pagination"]["next_cursor"]}));
        let (status, _) = call!(app, get("/api/critters/?page_size=5"));
        assert_eq!(status, 400);
    }

    async fn sorting(t) {
        let api = critter_api(&t).await;
        let app = test::init_service(api.app()).await;
        seed(&app, &[
            json!({"name": "b", "species": "x", "cuteness_level": 5}),
            json!({"name": "a", "species": "x", "cuteness_level": 9}),
            json!({"name": "c", "species": "x", "cuteness_level": 5}),
        ]).await;
        let (_, v) = call!(app, get("/api/critters/?sort=-cuteness_level,name"));
        assert_eq!(names(&v), ["a", "b", "c"]);
        let (_, v) = call!(app, get("/api/critters/?sort=name"));
        assert_eq!(names(&v), ["a", "b", "c"]);
        let (_, v) = call!(app, get("/api/critters/?sort=-name"));
        assert_eq!(names(&v), ["c", "b", "a"]);
        // Nulls sort as if larger than every value, on both backends: last ascending, first
        // descending.
        seed(&app, &[json!({"name": "d", "species": "x", "weight": 2.5}), json!({"name": "e", "species": "x", "weight": 0.5})]).await;
        let (_, v) = call!(app, get("/api/critters/?sort=weight,name"));
        assert_eq!(names(&v), ["e", "d", "a", "b", "c"]);
        let (_, v) = call!(app, get("/api/critters/?sort=-weight,name"));
        assert_eq!(names(&v), ["a", "b", "c", "d", "e"]);
        for bad in ["secret", "nope", "notes"] {
            let (status, v) = call!(app, get(&format!("/api/critters/?sort={bad}")));
            assert_eq!(status, 400, "{bad}");
            assert_eq!(v["field"], "sort");
        }
    }

    async fn ilike_folds_every_letter_like_postgres(t) {
        let api = critter_api(&t).await;
        let app = test::init_service(api.app()).await;
        seed(&app, &[
            json!({"name": "Émile", "species": "cat", "nickname": "ÆON"}),
            json!({"name": "emile", "species": "cat"}),
        ]).await;
        let cases: [(&str, &[&str]); 6] = [
            ("name__ilike=%C3%89MILE", &["Émile"]),
            ("name__ilike=%C3%A9mile", &["Émile"]),
            ("name__ilike=%25MILE", &["Émile", "emile"]),
            ("name__like=%C3%A9mile", &[]),
            ("name__ilike=_mile", &["Émile", "emile"]),
            ("nickname__ilike=%C3%A6on", &["Émile"]),
        ];
        for (q, want) in cases {
            let (status, v) = call!(app, get(&format!("/api/critters/?{q}")));
            assert_eq!(status, 200, "{q}: {v}");
            assert_eq!(names(&v), want, "{q}");
        }
    }

    async fn every_filter(t) {
        let api = critter_api(&t).await;
        let app = test::init_service(api.app()).await;
        let keeper = uuid::Uuid::new_v4();
        let made = seed(&app, &[
            json!({"name": "Alpha", "species": "cat", "cuteness_level": 3, "weight": 4.0, "vaccinated": true,
                   "born_on": "2020-01-10", "seen_at": "2024-03-01T23:30:00Z", "keeper_id": keeper, "nickname": "al"}),
            json!({"name": "beta", "species": "dog", "cuteness_level": 7, "weight": 12.5,
                   "born_on": "2021-06-01", "seen_at": "2024-03-02T00:00:00Z"}),
            json!({"name": "Gamma_1", "species": "cat", "cuteness_level": 10, "born_on": "2022-12-31",
                   "seen_at": "2024-02-29T12:00:00Z", "keeper_id": keeper}),
            json!({"name": "delta%", "species": "Cat", "cuteness_level": 7}),
        ]).await;
        let beta_id = made[1]["id"].as_str().unwrap();
        let cases: Vec<(String, Vec<&str>)> = vec![
            ("species=cat".into(), vec!["Alpha", "Gamma_1"]),
            ("species__ne=cat".into(), vec!["beta", "delta%"]),
            ("species__in=dog,Cat".into(), vec!["beta", "delta%"]),
            ("cuteness_level=7".into(), vec!["beta", "delta%"]),
            ("cuteness_level__gt=7".into(), vec!["Gamma_1"]),
            ("cuteness_level__gte=7".into(), vec!["beta", "Gamma_1", "delta%"]),
            ("cuteness_level__lt=7".into(), vec!["Alpha"]),
            ("cuteness_level__lte=7".into(), vec!["Alpha", "beta", "delta%"]),
            ("cuteness_level__in=3,10".into(), vec!["Alpha", "Gamma_1"]),
            ("weight__gt=4.5".into(), vec!["beta"]),
            ("weight__isnull=true".into(), vec!["Gamma_1", "delta%"]),
            ("weight__isnull=false".into(), vec!["Alpha", "beta"]),
            ("vaccinated=true".into(), vec!["Alpha"]),
            ("vaccinated=false".into(), vec!["beta", "Gamma_1", "delta%"]),
            ("vaccinated__ne=true".into(), vec!["beta", "Gamma_1", "delta%"]),
            ("name__like=%25a".into(), vec!["Alpha", "beta"]),
            ("name__like=%25A".into(), vec![]),
            ("name__like=a%25".into(), vec![]),
            ("name__like=A%25".into(), vec!["Alpha"]),
            ("name__ilike=a%25".into(), vec!["Alpha"]),
            ("name__ilike=%25A".into(), vec!["Alpha", "beta"]),
            ("name__ilike=%25\\%25".into(), vec!["delta%"]),
            ("name__like=Gamma_%25".into(), vec!["Gamma_1"]),
            ("nickname__ilike=AL".into(), vec!["Alpha"]),
            ("born_on__from=2021-06-01".into(), vec!["beta", "Gamma_1"]),
            ("born_on__to=2021-06-01".into(), vec!["Alpha", "beta"]),
            ("born_on__gt=2021-06-01".into(), vec!["Gamma_1"]),
            ("born_on=2020-01-10".into(), vec!["Alpha"]),
            ("seen_at__from=2024-03-01".into(), vec!["Alpha", "beta"]),
            ("seen_at__to=2024-03-01".into(), vec!["Alpha", "Gamma_1"]),
            ("seen_at__from=2024-03-01&seen_at__to=2024-03-01".into(), vec!["Alpha"]),
            ("seen_at__lt=2024-03-02T00:00:00Z".into(), vec!["Alpha", "Gamma_1"]),
            ("seen_at__gte=2024-03-02T00:00:00%2B00:00".into(), vec!["beta"]),
            ("seen_at__isnull=true".into(), vec!["delta%"]),
            (format!("keeper_id={keeper}"), vec!["Alpha", "Gamma_1"]),
            (format!("keeper_id__ne={keeper}"), vec![]),
            ("keeper_id__isnull=true".into(), vec!["beta", "delta%"]),
            (format!("id={beta_id}"), vec!["beta"]),
            (format!("id__in={beta_id},{}", uuid::Uuid::new_v4()), vec!["beta"]),
            ("species=cat&cuteness_level__gt=3".into(), vec!["Gamma_1"]),
            ("created_at__from=2000-01-01".into(), vec!["Alpha", "beta", "Gamma_1", "delta%"]),
            ("created_at__to=2000-01-01".into(), vec![]),
            ("name=Robert'); DROP TABLE critters;--".replace(' ', "%20"), vec![]),
        ];
        for (q, want) in cases {
            let (status, v) = call!(app, get(&format!("/api/critters/?{q}")));
            assert_eq!(status, 200, "{q}: {v}");
            assert_eq!(names(&v), want, "{q}");
            assert_eq!(v["pagination"]["total"], want.len(), "{q}: total counts only matches");
        }
        let bad = [
            ("nope=1", "nope"),
            ("secret=tuna", "secret"),
            ("secret__isnull=true", "secret__isnull"),
            ("notes=1", "notes"),
            ("cuteness_level=high", "cuteness_level"),
            ("cuteness_level__like=1", "cuteness_level__like"),
            ("cuteness_level=99999999999", "cuteness_level"),
            ("name__gt=a", "name__gt"),
            ("vaccinated=yes", "vaccinated"),
            ("born_on__from=2021-13-01", "born_on__from"),
            ("seen_at__to=tomorrow", "seen_at__to"),
            ("keeper_id=abc", "keeper_id"),
            ("id__in=abc", "id__in"),
            ("name__isnull=true", "name__isnull"),
            ("weight__gt=heavy", "weight__gt"),
            // A pattern ending in a lone escape: PostgreSQL would reject the query.
            ("name__like=a%5C", "name__like"),
            ("name=a%00", "name"),
            ("nickname__ilike=%25%00%25", "nickname__ilike"),
            ("nickname__ilike=%25%5C%5C%5C", "nickname__ilike"),
        ];
        for (q, param) in bad {
            let (status, v) = call!(app, get(&format!("/api/critters/?{q}")));
            assert_eq!(status, 400, "{q}: {v}");
            assert_eq!(v["field"], param, "{q}");
            assert_eq!(v["type"], "/errors/bad_request_error");
        }
    }

    async fn methods_list_skip_list_and_options_map(t) {
        let api = api_with(&t, t.config(), vec![
            crudforge::IntoMount::into_mount(Critter::blueprint("/ro/").methods([Operation::Index, Operation::Get])).unwrap(),
        ]).await;
        let api = api
            .mount(Critter::blueprint("/noskip/").skip([Operation::Delete, Operation::Patch])).unwrap()
            .mount(Critter::blueprint("/map/").options([(Operation::Post, false), (Operation::Index, true)])).unwrap()
            .mount(Critter::blueprint("/all/")).unwrap();
        let spec = api.openapi();
        let app = test::init_service(api.app()).await;
        let (status, made) = call!(app, post("/all/", json!({"name": "n", "species": "s"})));
        assert_eq!(status, 201);
        let id = made["id"].as_str().unwrap();

        let expect = [
            ("/ro/", [true, true, false, false, false]),
            ("/noskip/", [true, true, true, false, false]),
            ("/map/", [true, true, false, true, true]),
        ];
        for (prefix, [index, get_, post_, patch_, delete_]) in expect {
            let item = format!("{prefix}{id}");
            let (s, _) = call!(app, get(prefix));
            assert_eq!(s == 200, index, "{prefix} INDEX");
            let (s, _) = call!(app, get(&item));
            assert_eq!(s == 200, get_, "{prefix} GET");
            let (s, _) = call!(app, post(prefix, json!({"name": "n2", "species": "s"})));
            assert_eq!(s == 201, post_, "{prefix} POST");
            if !post_ {
                assert_eq!(s, 405);
            }
            let (s, _) = call!(app, patch(&item, json!({"name": "n3"})));
            assert_eq!(s == 200, patch_, "{prefix} PATCH");
            let items = format!("{prefix}{{id}}");
            let ops = &spec.paths.paths;
            let has = |path: &str, m: apistos::paths::OperationType| ops.get(path).is_some_and(|p| p.operations.contains_key(&m));
            use apistos::paths::OperationType as M;
            assert_eq!(has(prefix, M::Get), index);
            assert_eq!(has(&items, M::Get), get_);
            assert_eq!(has(prefix, M::Post), post_);
            assert_eq!(has(&items, M::Patch), patch_);
            assert_eq!(has(&items, M::Delete), delete_);
        }
        let (s, _) = call!(app, delete(&format!("/map/{id}")));
        assert_eq!(s, 204);
    }

    async fn schema_and_arg_schema_substitution(t) {
        #[derive(serde::Serialize, schemars::JsonSchema)]
        struct Card {
            title: String,
        }
        impl From<Critter> for Card {
            fn from(c: Critter) -> Self {
                Card { title: format!("{} the {}", c.name, c.species) }
            }
        }
        #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        struct Rename {
            name: String,
        }
        impl crudforge::crud::Validate for Rename {
            fn validate(&self) -> Result<(), crudforge::Error> {
                if self.name.chars().count() > 5 {
                    return Err(crudforge::Error::invalid_field(
                        "name",
                        "at most 5 characters allowed",
                    ));
                }
                Ok(())
            }
        }
        let bp = Critter::blueprint("/api/critters/")
            .with(Operation::Get, |o| o.schema::<Card>())
            .options([(Operation::Patch, OpOptions::new().arg_schema::<Rename>())]);
        let api = api_with(&t, t.config(), vec![]).await.mount(bp).unwrap();
        let spec = serde_json::to_value(api.openapi()).unwrap();
        let app = test::init_service(api.app()).await;
        let made = seed(&app, &[json!({"name": "Rex", "species": "dog"})]).await.remove(0);
        let uri = format!("/api/critters/{}", made["id"].as_str().unwrap());
        let (_, v) = call!(app, get(&uri));
        assert_eq!(v, json!({"title": "Rex the dog"}));
        let (status, v) = call!(app, patch(&uri, json!({"species": "cat"})));
        assert_eq!(status, 422, "the substituted input schema has no species: {v}");
        assert_eq!(v["field"], "species");
        let (status, v) = call!(app, patch(&uri, json!({"name": "Toolong"})));
        assert_eq!(status, 422, "{v}");
        let (status, v) = call!(app, patch(&uri, json!({"name": "Max"})));
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["name"], "Max");
        assert_eq!(v["species"], "dog");
        let get_schema = &spec["paths"]["/api/critters/{id}"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"];
        // A GET's answer may be sparse (`fields`): the substituted schema, nothing required.
        assert_eq!(get_schema, "#/components/schemas/PartialCard");
        assert!(spec["components"]["schemas"]["PartialCard"].get("required").is_none());
        let patch_body = &spec["paths"]["/api/critters/{id}"]["patch"]["requestBody"]["content"]["application/json"]["schema"]["$ref"];
        assert_eq!(patch_body, "#/components/schemas/Rename");
        // Filters still come from the model, not from the substituted schema.
        let (status, v) = call!(app, get("/api/critters/?species=dog"));
        assert_eq!(status, 200);
        assert_eq!(v["data"][0]["name"], "Max");
    }

    async fn res_id_and_res_id_param(t) {
        let bp = Critter::blueprint("/api/tags/").res_id("tag").res_id_param("<tag_name>");
        let api = api_with(&t, t.config(), vec![]).await
            .mount(bp).unwrap()
            .mount(Critter::blueprint("/api/critters/")).unwrap();
        let spec = serde_json::to_value(api.openapi()).unwrap();
        let app = test::init_service(api.app()).await;
        let resp = test::call_service(&app, post("/api/tags/", json!({"name": "Rex", "species": "dog", "tag": "rex-1"})).to_request()).await;
        assert_eq!(resp.headers().get("location").unwrap(), "/api/tags/rex-1");
        let (status, v) = call!(app, get("/api/tags/rex-1"));
        assert_eq!(status, 200);
        assert_eq!(v["name"], "Rex");
        let (status, v) = call!(app, patch("/api/tags/rex-1", json!({"cuteness_level": 1})));
        assert_eq!(status, 200);
        assert_eq!(v["cuteness_level"], 1);
        let (status, _) = call!(app, get("/api/tags/nobody"));
        assert_eq!(status, 404);
        let (status, v) = call!(app, get("/api/tags/a%00b"));
        assert_eq!(status, 404, "{v}");
        assert!(spec["paths"]["/api/tags/{tag_name}"]["get"].is_object(), "{}", spec["paths"]);
        let (status, _) = call!(app, delete("/api/tags/rex-1"));
        assert_eq!(status, 204);
        let (_, v) = call!(app, get("/api/critters/"));
        assert_eq!(v["pagination"]["total"], 0);
        assert!(api_with(&t, t.config(), vec![]).await.mount(Critter::blueprint("/x/").res_id("nope")).is_err());
        assert!(api_with(&t, t.config(), vec![]).await.mount(Critter::blueprint("/x/").res_id("secret")).is_err());
    }

    async fn nested_prefix_scopes_every_query(t) {
        let bp = Critter::blueprint("/api/keepers/<uuid:keeper_id>/critters/");
        assert_eq!(bp.operations(), vec![Operation::Index, Operation::Get, Operation::Post]);
        let api = api_with(&t, t.config(), vec![]).await
            .mount(bp).unwrap()
            .mount(Critter::blueprint("/api/critters/")).unwrap();
        let spec = serde_json::to_value(api.openapi()).unwrap();
        let app = test::init_service(api.app()).await;
        let (k1, k2) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
        let (status, a) = call!(app, post(&format!("/api/keepers/{k1}/critters/"), json!({"name": "a", "species": "s"})));
        assert_eq!(status, 201, "{a}");
        assert_eq!(a["keeper_id"], k1.to_string(), "the parent is set on create");
        let (status, v) = call!(app, post(&format!("/api/keepers/{k1}/critters/"), json!({"name": "z", "species": "s", "keeper_id": k2})));
        assert_eq!(status, 422, "the body cannot choose another parent: {v}");
        call!(app, post(&format!("/api/keepers/{k2}/critters/"), json!({"name": "b", "species": "s"})));
        call!(app, post("/api/critters/", json!({"name": "c", "species": "s"})));
        let (_, v) = call!(app, get(&format!("/api/keepers/{k1}/critters/")));
        assert_eq!(names(&v), ["a"]);
        assert_eq!(v["pagination"]["total"], 1);
        let (status, _) = call!(app, get(&format!("/api/keepers/{k1}/critters/{}", a["id"].as_str().unwrap())));
        assert_eq!(status, 200);
        let (status, _) = call!(app, get(&format!("/api/keepers/{k2}/critters/{}", a["id"].as_str().unwrap())));
        assert_eq!(status, 404, "another parent's item is not found");
        let (status, _) = call!(app, get("/api/keepers/not-a-uuid/critters/"));
        assert_eq!(status, 404);
        let (status, _) = call!(app, patch(&format!("/api/keepers/{k1}/critters/{}", a["id"].as_str().unwrap()), json!({"name": "q"})));
        assert_eq!(status, 405, "nested prefixes expose INDEX, POST and GET only");
        let params = &spec["paths"]["/api/keepers/{keeper_id}/critters/"]["get"]["parameters"];
        assert_eq!(params[0]["name"], "keeper_id");
        assert_eq!(params[0]["in"], "path");
        assert!(api_with(&t, t.config(), vec![]).await.mount(Critter::blueprint("/x/<uuid:owner>/y/")).is_err());
    }

    async fn custom_routes_and_several_blueprints(t) {
        async fn stats(
            filter: CritterFilter,
            db: web::Data<crudforge::Database>,
        ) -> crudforge::Result<HttpResponse> {
            let mut conn = db.get().await?;
            let n = Critter::count(&mut conn, &filter.query.conds).await?;
            Ok(HttpResponse::Ok().json(json!({ "count": n })))
        }
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Stats {
            count: i64,
        }
        let bp = Critter::blueprint("/api/critters/").route(
            CustomRoute::new(apistos::paths::OperationType::Get, "stats/", || web::get().to(stats))
                .operation_id("critterStats")
                .summary("How many critters")
                .responds::<Stats>(),
        );
        let api = api_with(&t, t.config(), vec![]).await
            .mount(bp).unwrap()
            .mount(Critter::blueprint("/v2/critters/").methods([Operation::Index])).unwrap();
        let spec = serde_json::to_value(api.openapi()).unwrap();
        let app = test::init_service(api.app()).await;
        seed(&app, &[json!({"name": "a", "species": "s"}), json!({"name": "b", "species": "s"})]).await;
        let (status, v) = call!(app, get("/api/critters/stats/"));
        assert_eq!(status, 200);
        assert_eq!(v["count"], 2);
        let (_, v) = call!(app, get("/api/critters/stats/?name=a"));
        assert_eq!(v["count"], 1, "the generated filter struct parses the INDEX filters");
        let (status, v) = call!(app, get("/api/critters/stats/?colour=red"));
        assert_eq!(status, 400);
        assert_eq!(v["field"], "colour");
        let (_, v) = call!(app, get("/v2/critters/"));
        assert_eq!(v["pagination"]["total"], 2);
        assert_eq!(spec["paths"]["/api/critters/stats/"]["get"]["operationId"], "critterStats");
        assert_eq!(spec["paths"]["/api/critters/"]["get"]["operationId"], "listCritter");
        assert_eq!(spec["paths"]["/v2/critters/"]["get"]["operationId"], "listCritter_2", "operation ids stay unique");
    }

    async fn registry_mounts_by_name(t) {
        assert!(registry::names().contains(&"Critter"));
        let api = api_with(&t, t.config(), vec![registry::blueprint("Critter", "/api/critters/").unwrap()]).await;
        let app = test::init_service(api.app()).await;
        let (status, _) = call!(app, post("/api/critters/", json!({"name": "a", "species": "s"})));
        assert_eq!(status, 201);
        let err = match registry::blueprint("Unicorn", "/u/") {
            Ok(_) => panic!("unknown names must fail"),
            Err(e) => e,
        };
        assert!(err.contains("Unicorn") && err.contains("Critter"), "{err}");
        let err = Api::new(t.config(), api.db().clone()).unwrap().mount(registry::blueprint("Unicorn", "/u/")).unwrap_err();
        assert!(err.to_string().contains("unknown resource"), "{err}");
    }

    async fn openapi_describes_every_operation(t) {
        let api = critter_api(&t).await
            .mount(Critter::blueprint("/admin/critters/").admin_only([Operation::Delete])).unwrap()
            .mount(Critter::blueprint("/api/keepers/<uuid:keeper_id>/critters/")).unwrap()
            .mount(Critter::blueprint("/owned/critters/").rules(crudforge::perms::OwnerRules::new("keeper_id"))).unwrap();
        let app = test::init_service(api.app()).await;
        let (_, spec) = call!(app, get("/openapi.json"));
        let paths = &spec["paths"];
        let ids = [
            ("/api/critters/", "get", "listCritter"),
            ("/api/critters/", "post", "createCritter"),
            ("/api/critters/{id}", "get", "getCritter"),
            ("/api/critters/{id}", "patch", "updateCritter"),
            ("/api/critters/{id}", "delete", "deleteCritter"),
        ];
        for (path, method, id) in ids {
            assert_eq!(paths[path][method]["operationId"], id, "{path} {method}");
        }
        let list = &paths["/api/critters/"]["get"];
        let params: Vec<&str> = list["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
        for p in ["page", "page_size", "sort", "name", "name__ilike", "cuteness_level__gte", "seen_at__from", "weight__isnull", "keeper_id__in"] {
            assert!(params.contains(&p), "{p} missing from {params:?}");
        }
        for p in ["secret", "notes", "name__gt"] {
            assert!(!params.contains(&p), "{p} must not be a filter");
        }
        let page = &list["responses"]["200"]["content"]["application/json"]["schema"];
        assert!(page["properties"]["data"]["items"]["$ref"].as_str().unwrap().ends_with("/PartialCritter"), "{page}");
        assert!(list["responses"]["400"]["content"]["application/problem+json"].is_object());
        let create = &paths["/api/critters/"]["post"];
        assert_eq!(create["requestBody"]["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/CritterCreate");
        assert!(create["responses"]["201"].is_object() && create["responses"]["422"].is_object() && create["responses"]["409"].is_object());
        let item = &paths["/api/critters/{id}"];
        assert_eq!(item["get"]["parameters"][0]["name"], "id");
        assert!(item["get"]["responses"]["404"]["content"]["application/problem+json"].is_object());
        assert!(item["delete"]["responses"]["204"].is_object());
        assert_eq!(item["patch"]["requestBody"]["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/CritterUpdate");
        let schemas = &spec["components"]["schemas"];
        let response = &schemas["Critter"]["properties"];
        assert!(response["id"].is_object() && response["score"].is_object());
        assert!(response.get("secret").is_none(), "write-only fields are not in the response schema");
        let create_schema = &schemas["CritterCreate"];
        assert!(create_schema["properties"].get("id").is_none() && create_schema["properties"].get("score").is_none());
        assert!(create_schema["properties"]["secret"].is_object());
        let required: Vec<&str> = create_schema["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(required, ["name", "species"]);
        // No `default` in a request body: generators would make the member required. The
        // description says it instead.
        assert!(create_schema["properties"]["cuteness_level"].get("default").is_none());
        assert!(create_schema["properties"]["cuteness_level"]["description"].as_str().unwrap().ends_with("Default: `10`."));
        assert_eq!(schemas["CritterUpdate"].get("required"), None);
        let admin = &paths["/admin/critters/{id}"]["delete"];
        assert_eq!(admin["x-admin-only"], true);
        assert!(admin["responses"]["403"].is_object());

        // What the server checks, the description states.
        let param = |op: &serde_json::Value, name: &str| -> serde_json::Value {
            op["parameters"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap_or_else(|| panic!("{name}")).clone()
        };
        assert_eq!(param(list, "page")["schema"]["minimum"].as_f64(), Some(1.0));
        assert_eq!(param(list, "page_size")["schema"]["minimum"].as_f64(), Some(1.0));
        assert_eq!(param(list, "page_size")["schema"]["maximum"].as_f64(), Some(100.0));
        let within = param(list, "keeper_id__in");
        assert_eq!((within["style"].as_str(), within["explode"].as_bool()), (Some("form"), Some(false)));
        assert_eq!(within["schema"]["type"], "array");
        assert_eq!(within["schema"]["items"]["format"], "uuid");
        assert_eq!(within["schema"]["minItems"], 1);
        let level = param(list, "cuteness_level__gte");
        assert_eq!((level["schema"]["minimum"].as_f64(), level["schema"]["maximum"].as_f64()), (Some(f64::from(i32::MIN)), Some(f64::from(i32::MAX))));
        let sort = param(list, "sort")["schema"]["pattern"].as_str().unwrap().to_owned();
        assert!(sort.contains("cuteness_level") && !sort.contains("secret") && !sort.contains("notes"), "{sort}");
        for code in ["400", "413", "415", "422"] {
            assert!(create["responses"][code].is_object(), "POST documents {code}");
            assert!(item["patch"]["responses"][code].is_object(), "PATCH documents {code}");
        }
        assert!(item["delete"]["responses"]["404"].is_object());
        assert_eq!(create_schema["properties"]["name"]["maxLength"].as_u64(), Some(100));
        // A nested POST takes the parent from the path, so its body schema does not list it.
        let nested = &paths["/api/keepers/{keeper_id}/critters/"]["post"]["requestBody"]["content"]["application/json"]["schema"];
        assert!(nested["properties"]["name"].is_object() && nested["properties"].get("keeper_id").is_none(), "{nested}");
        assert!(nested["required"].as_array().unwrap().iter().all(|r| r != "keeper_id"));
        assert!(nested["properties"].get("id").is_none());
        assert!(nested["properties"]["name"].is_object());
        // Open rules admit anonymous callers: the token is optional. Owner rules require it.
        assert_eq!(list["security"], json!([{}, {"bearerAuth": []}]));
        assert_eq!(paths["/owned/critters/"]["get"]["security"], json!([{"bearerAuth": []}]));
    }

    async fn query_counts(t) {
        let cfg = t.config().with(|c| { c.db.orm_performance_monitoring = true; c.db.orm_slow_query_threshold = 60.0; });
        let api = api_with(&t, cfg, vec![crudforge::IntoMount::into_mount(Critter::blueprint("/api/critters/")).unwrap()]).await;
        let app = test::init_service(api.app()).await;
        let queries = |resp: &ServiceResponse<_>| -> u64 {
            let h = resp.headers().get("server-timing").unwrap().to_str().unwrap().to_owned();
            let n = h.split("desc=\"").nth(1).unwrap().split(' ').next().unwrap();
            n.parse().unwrap()
        };
        let resp = test::call_service(&app, post("/api/critters/", json!({"name": "a", "species": "s"})).to_request()).await;
        assert_eq!(queries(&resp), 1, "POST is one INSERT ... RETURNING");
        let (_, made) = body(resp).await;
        for i in 0..30 {
            test::call_service(&app, post("/api/critters/", json!({"name": format!("n{i}"), "species": "s"})).to_request()).await;
        }
        let uri = format!("/api/critters/{}", made["id"].as_str().unwrap());
        let resp = test::call_service(&app, get(&uri).to_request()).await;
        assert_eq!(queries(&resp), 1, "GET");
        let resp = test::call_service(&app, get("/api/critters/?species=s&page_size=20").to_request()).await;
        assert_eq!(queries(&resp), 2, "INDEX: one page query and one count, never one per row");
        let resp = test::call_service(&app, patch(&uri, json!({"name": "b"})).to_request()).await;
        assert_eq!(queries(&resp), 1, "PATCH");
        let resp = test::call_service(&app, delete(&uri).to_request()).await;
        assert_eq!(queries(&resp), 1, "DELETE");
    }

    async fn condition_trees_select_count_update_and_delete(t) {
        use crudforge::condition::{Arg, Cond, Condition, Op};
        let api = critter_api(&t).await;
        let app = test::init_service(api.app()).await;
        seed(&app, &[
            json!({"name": "Ada", "species": "cat", "cuteness_level": 9}),
            json!({"name": "Bo", "species": "dog", "cuteness_level": 3}),
            json!({"name": "Cy", "species": "owl", "cuteness_level": 7}),
            json!({"name": "Di", "species": "cat", "cuteness_level": 2}),
        ]).await;
        let is = |field, op, arg| Condition::Is(Cond { field, op, arg, param: field.to_owned() });
        let species = |s: &str| is("species", Op::Eq, Arg::Text(s.to_owned()));
        let level_at_least = |n| is("cuteness_level", Op::Gte, Arg::Int(n));
        let mut conn = api.db().get().await.unwrap();
        // (cat OR dog) AND level >= 3
        let tree = Condition::All(vec![Condition::Any(vec![species("cat"), species("dog")]), level_at_least(3)]);
        assert_eq!(Critter::count(&mut conn, &tree).await.unwrap(), 2);
        let rows = Critter::select(&mut conn, &tree, &[], None).await.unwrap();
        let mut got: Vec<_> = rows.iter().map(|c| c.name.as_str()).collect();
        got.sort_unstable();
        assert_eq!(got, ["Ada", "Bo"]);
        // NOT cat
        assert_eq!(Critter::count(&mut conn, &Condition::Not(Box::new(species("cat")))).await.unwrap(), 2);
        // An empty OR matches nothing, an empty AND everything; NOT of everything is nothing.
        assert_eq!(Critter::count(&mut conn, &Condition::Any(vec![])).await.unwrap(), 0);
        assert_eq!(Critter::count(&mut conn, &Condition::always()).await.unwrap(), 4);
        assert_eq!(Critter::count(&mut conn, &Condition::Not(Box::new(Condition::always()))).await.unwrap(), 0);
        // OR binds inside AND: cat AND (level >= 9 OR level < 3) is Ada and Di, not Bo.
        let nested = species("cat").and(Condition::Any(vec![level_at_least(9), is("cuteness_level", Op::Lt, Arg::Int(3))]));
        assert_eq!(Critter::count(&mut conn, &nested).await.unwrap(), 2);
        // A plain list of comparisons still means AND.
        let list = [Cond::eq("species", Arg::Text("cat".into())), Cond { field: "cuteness_level", op: Op::Gt, arg: Arg::Int(5), param: "x".into() }];
        assert_eq!(Critter::count(&mut conn, &list).await.unwrap(), 1);
        // Writes take trees too: delete dogs or owls.
        let gone = Condition::Any(vec![species("dog"), species("owl")]);
        assert!(Critter::delete(&mut conn, &gone).await.unwrap());
        assert_eq!(Critter::count(&mut conn, &Condition::always()).await.unwrap(), 2);
        // A condition that matches every row never reaches an UPDATE or DELETE.
        assert!(Critter::delete(&mut conn, &Condition::always()).await.is_err());
        assert_eq!(Critter::count(&mut conn, &Condition::always()).await.unwrap(), 2);
        // An operator the field does not take is an error, not a silent match.
        let bad = is("vaccinated", Op::Like, Arg::Text("x".into()));
        assert!(Critter::count(&mut conn, &bad).await.is_err());
    }

    async fn rule_fields_are_checked_at_mount(t) {
        let api = api_with(&t, t.config(), vec![]).await;
        let err = api
            .clone()
            .mount(Critter::blueprint("/api/critters/").rules(crudforge::perms::OwnerRules::new("keeper")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`keeper`") && err.contains("not a field of Critter"), "{err}");
        assert!(api.mount(Critter::blueprint("/api/critters/").rules(crudforge::perms::OwnerRules::new("keeper_id"))).is_ok());
    }
}

//! List queries on both backends: `filter` expressions, cursor pagination, count modes and
//! sparse fields.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::test;
use crudforge::perms::OwnerRules;
use crudforge::{users, Api, Config, Resource};
use crudforge_tests::critters::{create_table, Critter};
use crudforge_tests::{backend_tests, TestDb};
use serde_json::{json, Value};
use std::collections::HashSet;

async fn critter_api(t: &TestDb, cfg: Config) -> Api {
    let db = t.open(&cfg).await;
    create_table(&db).await;
    Api::new(cfg, db)
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

async fn send<S, B>(app: &S, req: test::TestRequest) -> (StatusCode, Value)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    body(test::call_service(app, req.to_request()).await).await
}

/// GET `/api/critters/?<query>`, the query given unencoded as name/value pairs.
fn list(pairs: &[(&str, &str)]) -> test::TestRequest {
    let q = serde_urlencoded::to_string(pairs).unwrap();
    test::TestRequest::get().uri(&format!("/api/critters/?{q}"))
}

fn post(v: Value) -> test::TestRequest {
    test::TestRequest::post().uri("/api/critters/").set_json(v)
}

async fn seed<S, B>(app: &S, items: &[Value]) -> Vec<Value>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let mut out = Vec::new();
    for item in items {
        let (status, v) = send(app, post(item.clone())).await;
        assert_eq!(status, 201, "{v}");
        out.push(v);
    }
    out
}

fn names(v: &Value) -> Vec<String> {
    v["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data: {v}"))
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect()
}

fn animals() -> Vec<Value> {
    vec![
        json!({"name": "Tom", "species": "cat", "cuteness_level": 7, "weight": 4.5, "nickname": "T",
               "vaccinated": true, "born_on": "2020-01-01", "seen_at": "2024-06-01T10:00:00Z"}),
        json!({"name": "Rex", "species": "dog", "cuteness_level": 5, "weight": 30.0,
               "born_on": "2019-05-05", "seen_at": "2024-06-02T10:00:00Z"}),
        json!({"name": "Kitty O'Hara", "species": "cat", "cuteness_level": 9, "vaccinated": true}),
        json!({"name": "Nemo", "species": "fish", "cuteness_level": 3, "weight": 0.1, "nickname": "N%"}),
        json!({"name": "Érable", "species": "dog", "cuteness_level": 8, "weight": 12.0}),
    ]
}

backend_tests! {
    async fn filter_expressions(t) {
        let api = critter_api(&t, t.config()).await;
        let app = test::init_service(api.app()).await;
        seed(&app, &animals()).await;
        let cases: &[(&str, &[&str])] = &[
            ("species = 'cat'", &["Tom", "Kitty O'Hara"]),
            ("species != 'cat'", &["Rex", "Nemo", "Érable"]),
            ("species <> 'cat'", &["Rex", "Nemo", "Érable"]),
            ("cuteness_level > 7", &["Kitty O'Hara", "Érable"]),
            ("cuteness_level >= 7", &["Tom", "Kitty O'Hara", "Érable"]),
            ("cuteness_level < 5", &["Nemo"]),
            ("cuteness_level <= 5", &["Rex", "Nemo"]),
            ("weight > 4.5", &["Rex", "Érable"]),
            ("weight >= 1e1", &["Rex", "Érable"]),
            ("cuteness_level > -1 and cuteness_level < 4", &["Nemo"]),
            ("name like 'K%'", &["Kitty O'Hara"]),
            ("name like 'k%'", &[]),
            ("name ilike 'k%'", &["Kitty O'Hara"]),
            ("name ilike 'érable'", &["Érable"]),
            ("name like 'érable'", &[]),
            ("nickname like 'N\\%'", &["Nemo"]),
            ("nickname like 'N%'", &["Nemo"]),
            ("name = 'Kitty O''Hara'", &["Kitty O'Hara"]),
            ("species in ('fish', 'dog')", &["Rex", "Nemo", "Érable"]),
            ("cuteness_level in (3,9)", &["Kitty O'Hara", "Nemo"]),
            ("nickname is null", &["Rex", "Kitty O'Hara", "Érable"]),
            ("nickname is not null", &["Tom", "Nemo"]),
            ("vaccinated = true", &["Tom", "Kitty O'Hara"]),
            ("vaccinated = false", &["Rex", "Nemo", "Érable"]),
            ("born_on >= '2020-01-01'", &["Tom"]),
            ("born_on < '2020-01-01'", &["Rex"]),
            ("seen_at > '2024-06-01T10:00:00Z'", &["Rex"]),
            ("seen_at >= '2024-06-01'", &["Tom", "Rex"]),
            ("seen_at < '2024-06-02T12:00:00+02:00'", &["Tom"]),
            ("seen_at <= '2024-06-02T12:00:00+02:00'", &["Tom", "Rex"]),
            // Precedence: not, then and, then or.
            ("species = 'dog' or species = 'cat' and cuteness_level > 8", &["Rex", "Kitty O'Hara", "Érable"]),
            ("(species = 'dog' or species = 'cat') and cuteness_level > 8", &["Kitty O'Hara"]),
            ("not species = 'cat' and cuteness_level > 4", &["Rex", "Érable"]),
            ("not (species = 'cat' and cuteness_level > 4)", &["Rex", "Nemo", "Érable"]),
            ("not not species = 'fish'", &["Nemo"]),
            ("(species = 'cat' or species = 'dog') and cuteness_level >= 5", &["Tom", "Rex", "Kitty O'Hara", "Érable"]),
            ("species = 'cat' AND (nickname IS NULL OR cuteness_level < 8)", &["Tom", "Kitty O'Hara"]),
            // A null never matches a comparison, and not of an unknown stays unknown, as in SQL.
            ("not weight > 1", &["Nemo"]),
            // Injection attempts are values (or 400s), never SQL.
            ("name = 'x'' or ''1''=''1'", &[]),
            ("name = 'Robert''); DROP TABLE critters;--'", &[]),
            ("name like '%'' OR 1=1 --'", &[]),
        ];
        for (expr, want) in cases {
            let (status, v) = send(&app, list(&[("filter", expr)])).await;
            assert_eq!(status, 200, "{expr}: {v}");
            assert_eq!(names(&v), *want, "{expr}");
            assert_eq!(v["pagination"]["total"], want.len(), "{expr}");
        }
        // The expression combines with the other parameters by AND, and with sort and paging.
        let (_, v) = send(&app, list(&[("filter", "species = 'cat' or species = 'dog'"), ("cuteness_level__gte", "8"), ("sort", "-cuteness_level")])).await;
        assert_eq!(names(&v), ["Kitty O'Hara", "Érable"]);
        let (_, v) = send(&app, list(&[("filter", "cuteness_level > 0"), ("page_size", "2"), ("page", "2")])).await;
        assert_eq!(names(&v), ["Kitty O'Hara", "Nemo"]);
        assert_eq!(v["pagination"]["total"], 5);
        // The table survived the injection attempts.
        let (_, v) = send(&app, list(&[])).await;
        assert_eq!(v["pagination"]["total"], 5);
    }

    async fn malformed_expressions_are_400(t) {
        let cfg = t.config().with(|c| { c.list.filter_max_length = 200; c.list.filter_max_depth = 4; });
        let api = critter_api(&t, cfg).await;
        let app = test::init_service(api.app()).await;
        seed(&app, &animals()).await;
        let deep = format!("{}name = 'a'{}", "(".repeat(5), ")".repeat(5));
        let nots = format!("{}name = 'a'", "not ".repeat(5));
        let long = format!("name = '{}'", "x".repeat(200));
        let ok_deep = format!("{}name = 'a'{}", "(".repeat(4), ")".repeat(4));
        let (status, _) = send(&app, list(&[("filter", &ok_deep)])).await;
        assert_eq!(status, 200, "four levels are allowed");
        for (expr, want) in [
            ("", "at character 1: expected a condition"),
            ("species =", "at character 10: expected a quoted string"),
            ("species = 'cat' and", "at character 20: expected a field name"),
            ("(species = 'cat'", "at character 17: expected `)`"),
            ("species = 'cat' species", "at character 17: expected `and`, `or`"),
            ("species = \"cat\"", "at character 11"),
            ("species = 'cat", "at character 11: expected a closing quote"),
            ("species == 'cat'", "at character 10"),
            ("cuteness_level = 'high'", "expected a number"),
            ("cuteness_level = 99999999999", "out of range"),
            ("cuteness_level like '1%'", "`like` does not apply to `cuteness_level`"),
            ("name > 'a'", "`>` does not apply to `name`"),
            ("name is null", "`name` cannot be null"),
            ("secret = 'tuna'", "`secret` is not a filterable field"),
            ("secret is null", "`secret` is not a filterable field"),
            ("notes = 'x'", "`notes` is not a filterable field"),
            ("nope = 1", "`nope` is not a filterable field"),
            ("vaccinated = 'yes'", "expected true or false"),
            ("keeper_id = 'not-a-uuid'", "expected a UUID"),
            ("born_on = '03/01/2024'", "expected a date"),
            ("species = null", "write `species is null`"),
            ("name like 'a\\'", "lone escape"),
            ("species = 'cat'; DROP TABLE critters", "at character 16"),
            ("1 = 1", "at character 1: expected a field name"),
            // Injection attempts: quotes cannot be closed early, a backslash escapes nothing,
            // comments do not exist, and secrets cannot be probed.
            ("name = '' or 1=1 --", "at character 18: expected a field name, a value, an operator or a parenthesis, found '-'"),
            ("name = '' or 1=1", "at character 14: expected a field name"),
            ("name = 'a\\' or 1=1 --'", "at character 20"),
            ("name = 'a\\' or 1=1", "at character 16: expected a field name"),
            ("name = 'a' or secret like '%'", "`secret` is not a filterable field"),
            ("name = 'a' /* x */", "at character 12"),
            (deep.as_str(), "deeper than 4"),
            (nots.as_str(), "deeper than 4"),
            (long.as_str(), "at most 200"),
        ] {
            let (status, v) = send(&app, list(&[("filter", expr)])).await;
            assert_eq!(status, 400, "{expr}: {v}");
            assert_eq!(v["type"], "/errors/bad_request_error");
            assert_eq!(v["field"], "filter", "{expr}");
            assert!(v["detail"].as_str().unwrap().contains(want), "{expr}: {}", v["detail"]);
        }
        let (_, v) = send(&app, list(&[])).await;
        assert_eq!(v["pagination"]["total"], 5);
    }

    async fn or_never_widens_the_read_scope(t) {
        let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
        let db = t.open(&cfg).await;
        create_table(&db).await;
        let alice = users::create_user(&db, "alice@example.com", "alice-pass", true, 4).await.unwrap();
        let bob = users::create_user(&db, "bob@example.com", "bob-pass", true, 4).await.unwrap();
        let api = Api::new(cfg, db).unwrap()
            .mount(Critter::blueprint("/api/critters/").rules(OwnerRules::new("keeper_id"))).unwrap();
        let bearer = |id| ("authorization", format!("Bearer {}", api.state().tokens.access(id).unwrap()));
        let app = test::init_service(api.app()).await;
        for (who, name) in [(alice, "a1"), (alice, "a2"), (bob, "b1"), (bob, "b2"), (bob, "b3")] {
            let (status, v) = send(&app, post(json!({"name": name, "species": "cat"})).insert_header(bearer(who))).await;
            assert_eq!(status, 201, "{v}");
        }
        for expr in [
            format!("keeper_id = '{bob}'"),
            format!("keeper_id = '{bob}' or name like '%'"),
            "name = 'b1' or species = 'cat'".to_owned(),
            "not name = 'zzz' or name = 'b1'".to_owned(),
            format!("not keeper_id = '{alice}'"),
            "(name like 'b%' or name like 'a%') or not name like 'a%'".to_owned(),
        ] {
            let (status, v) = send(&app, list(&[("filter", &expr)]).insert_header(bearer(alice))).await;
            assert_eq!(status, 200, "{expr}: {v}");
            let seen = names(&v);
            assert!(seen.iter().all(|n| n.starts_with('a')), "{expr}: {seen:?}");
            assert!(v["pagination"]["total"].as_i64().unwrap() <= 2, "{expr}: the total is scoped too");
        }
        let (_, v) = send(&app, list(&[("filter", "name like '%' or name = 'b1'")]).insert_header(bearer(alice))).await;
        assert_eq!(names(&v), ["a1", "a2"]);
        assert_eq!(v["pagination"]["total"], 2);
        // A cursor walk stays in the scope too.
        let (_, v) = send(&app, list(&[("filter", "name like '%' or name = 'b1'"), ("page_size", "1")]).insert_header(bearer(alice))).await;
        let cursor = v["pagination"]["next_cursor"].as_str().unwrap().to_owned();
        let (_, v) = send(&app, list(&[("filter", "name like '%' or name = 'b1'"), ("page_size", "1"), ("cursor", &cursor)]).insert_header(bearer(alice))).await;
        assert_eq!(names(&v), ["a2"]);
        assert!(v["pagination"]["next_cursor"].is_null(), "{v}");
    }

    async fn estimated_counts_stay_in_the_read_scope(t) {
        let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
        let db = t.open(&cfg).await;
        create_table(&db).await;
        let alice = users::create_user(&db, "alice@example.com", "alice-pass", true, 4).await.unwrap();
        let bob = users::create_user(&db, "bob@example.com", "bob-pass", true, 4).await.unwrap();
        let admin = users::create_user(&db, "admin@example.com", "admin-pass", true, 4).await.unwrap();
        users::grant_role(&db, admin, "ADMIN", None).await.unwrap();
        let api = Api::new(cfg, db.clone()).unwrap()
            .mount(Critter::blueprint("/api/critters/").rules(OwnerRules::new("keeper_id"))).unwrap();
        let bearer = |id| ("authorization", format!("Bearer {}", api.state().tokens.access(id).unwrap()));
        let app = test::init_service(api.app()).await;
        // Bob keeps thirty dogs named Secret; Alice keeps one cat.
        let (status, v) = send(&app, post(json!({"name": "Mine", "species": "cat"})).insert_header(bearer(alice))).await;
        assert_eq!(status, 201, "{v}");
        for _ in 0..30 {
            let (status, v) = send(&app, post(json!({"name": "Secret", "species": "dog"})).insert_header(bearer(bob))).await;
            assert_eq!(status, 201, "{v}");
        }
        if db.backend() == crudforge_tests::Backend::Postgres {
            let mut conn = db.get().await.unwrap();
            crudforge::with_conn!(conn, |c| diesel_async::SimpleAsyncConnection::batch_execute(c, "ANALYZE critters").await).unwrap();
        }
        // Alice's scope is her own rows: her estimate is her exact count, whatever Bob keeps.
        for (q, n) in [
            (vec![("name", "Secret")], 0),
            (vec![("filter", "species = 'dog'")], 0),
            (vec![("name", "never-used")], 0),
            (vec![("species", "cat")], 1),
            (vec![], 1),
        ] {
            let mut q = q.clone();
            q.push(("count", "estimated"));
            let (status, v) = send(&app, list(&q).insert_header(bearer(alice))).await;
            assert_eq!(status, 200, "{q:?}: {v}");
            assert_eq!(v["pagination"]["total"], n, "{q:?}: {v}");
        }
        // An administrator reads the whole table: the planner's estimate (never below 1 on
        // PostgreSQL, where the exact count is 0), exact on SQLite.
        let (_, v) = send(&app, list(&[("count", "estimated"), ("name", "never-used")]).insert_header(bearer(admin))).await;
        let estimate = v["pagination"]["total"].as_i64().unwrap();
        match db.backend() {
            crudforge_tests::Backend::Sqlite => assert_eq!(estimate, 0, "{v}"),
            crudforge_tests::Backend::Postgres => assert!(estimate >= 1, "{v}"),
        }
    }

    async fn cursor_walks_never_repeat_or_skip(t) {
        let api = critter_api(&t, t.config().with(|c| c.list.max_page_size = 1000)).await;
        let app = test::init_service(api.app()).await;
        // Ties on every sort key, nulls in the nullable ones.
        let items: Vec<Value> = (0..23).map(|i| json!({
            "name": format!("c{:02}", (i * 7) % 23),
            "species": (["cat", "dog", "fish"][i % 3]),
            "cuteness_level": i % 4,
            "weight": if i % 5 == 0 { Value::Null } else { json!(f64::from(u32::try_from(i % 6).unwrap()) + 0.25) },
            "nickname": if i % 3 == 0 { Value::Null } else { json!(format!("n{}", i % 2)) },
            "vaccinated": i % 2 == 0,
        })).collect();
        seed(&app, &items).await;
        let mut extra = 0;
        for sort in ["", "-cuteness_level,name", "species,-vaccinated", "nickname", "-nickname,-weight", "weight", "-created_at", "-id", "name"] {
            let (_, v) = send(&app, list(&[("page_size", "1000")])).await;
            let before: HashSet<String> = v["data"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap().to_owned()).collect();
            let mut seen: Vec<String> = Vec::new();
            let mut deleted: HashSet<String> = HashSet::new();
            let mut cursor: Option<String> = None;
            let mut pages = 0;
            loop {
                let mut q = vec![("page_size", "4"), ("sort", sort)];
                if let Some(c) = &cursor {
                    q.push(("cursor", c));
                }
                let (status, v) = send(&app, list(&q)).await;
                assert_eq!(status, 200, "{sort}: {v}");
                pages += 1;
                assert_eq!(v["pagination"]["page"], pages, "{sort}: the cursor carries the page number");
                for c in v["data"].as_array().unwrap() {
                    let id = c["id"].as_str().unwrap().to_owned();
                    assert!(!seen.contains(&id), "{sort}: {id} twice");
                    seen.push(id);
                }
                // Between requests: a new row, and one row deleted (already seen or not).
                extra += 1;
                seed(&app, &[json!({"name": format!("x{extra}"), "species": "cat", "cuteness_level": extra % 4,
                                     "nickname": if extra % 2 == 0 { Value::Null } else { json!("n1") }})]).await;
                let (_, all) = send(&app, list(&[("page_size", "1000")])).await;
                if let Some(victim) = all["data"].as_array().unwrap().iter()
                    .map(|c| c["id"].as_str().unwrap().to_owned())
                    .find(|id| before.contains(id) && !deleted.contains(id) && pages % 2 == 0) {
                    let req = test::TestRequest::delete().uri(&format!("/api/critters/{victim}"));
                    assert_eq!(send(&app, req).await.0, 204);
                    deleted.insert(victim);
                }
                match v["pagination"]["next_cursor"].as_str() {
                    Some(c) => cursor = Some(c.to_owned()),
                    None => break,
                }
                assert!(pages < 100, "{sort}: the walk ends");
            }
            for id in before.difference(&deleted) {
                assert!(seen.contains(id), "{sort}: {id} existed throughout but was skipped");
            }
        }
        // The pages of a walk without concurrent changes are the OFFSET pages, in order.
        for sort in ["", "-cuteness_level,name", "nickname", "-weight"] {
            let mut cursor: Option<String> = None;
            for page in 1.. {
                let p = page.to_string();
                let (_, by_offset) = send(&app, list(&[("page_size", "5"), ("sort", sort), ("page", &p)])).await;
                let mut q = vec![("page_size", "5"), ("sort", sort)];
                if let Some(c) = &cursor {
                    q.push(("cursor", c));
                }
                let (_, by_cursor) = send(&app, list(&q)).await;
                assert_eq!(by_cursor["data"], by_offset["data"], "{sort} page {page}");
                assert_eq!(by_cursor["pagination"]["total"], by_offset["pagination"]["total"]);
                match by_cursor["pagination"]["next_cursor"].as_str() {
                    Some(c) => cursor = Some(c.to_owned()),
                    None => {
                        assert_eq!(by_offset["pagination"]["total_pages"], page, "{sort}");
                        break;
                    }
                }
            }
        }
    }

    async fn bad_cursors_are_400(t) {
        let api = critter_api(&t, t.config()).await;
        let app = test::init_service(api.app()).await;
        seed(&app, &animals()).await;
        let (_, v) = send(&app, list(&[("page_size", "2"), ("sort", "-cuteness_level")])).await;
        let cursor = v["pagination"]["next_cursor"].as_str().unwrap().to_owned();
        let (status, v) = send(&app, list(&[("page_size", "2"), ("sort", "-cuteness_level"), ("cursor", &cursor)])).await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(names(&v), ["Tom", "Rex"]);
        // One character changed (in the nonce, the sealed payload, the tag), cut short, or a
        // cursor-shaped string of the same length that this API never issued.
        let edit = |i: usize| {
            let mut b = cursor.as_bytes().to_vec();
            b[i] = if b[i] == b'A' { b'B' } else { b'A' };
            String::from_utf8(b).unwrap()
        };
        let edited = [edit(3), edit(cursor.len() / 2), edit(cursor.len() - 2)];
        let truncated = cursor[..cursor.len() - 4].to_owned();
        let forged = "A".repeat(cursor.len());
        for (q, detail) in [
            (vec![("sort", "-cuteness_level"), ("cursor", edited[0].as_str())], "not a cursor this API issued"),
            (vec![("sort", "-cuteness_level"), ("cursor", edited[1].as_str())], "not a cursor this API issued"),
            (vec![("sort", "-cuteness_level"), ("cursor", edited[2].as_str())], "not a cursor this API issued"),
            (vec![("sort", "-cuteness_level"), ("cursor", truncated.as_str())], "not a cursor this API issued"),
            (vec![("sort", "-cuteness_level"), ("cursor", forged.as_str())], "not a cursor this API issued"),
            (vec![("sort", "-cuteness_level"), ("cursor", "forged.AAAA")], "not a cursor this API issued"),
            (vec![("sort", "-cuteness_level"), ("cursor", "garbage")], "not a cursor this API issued"),
            (vec![("sort", "-cuteness_level"), ("cursor", "")], "not a cursor this API issued"),
            (vec![("sort", "cuteness_level"), ("cursor", cursor.as_str())], "belongs to the sort `-cuteness_level`"),
            (vec![("cursor", cursor.as_str())], "belongs to the sort"),
        ] {
            let (status, v) = send(&app, list(&q)).await;
            assert_eq!(status, 400, "{q:?}: {v}");
            assert_eq!(v["field"], "cursor");
            assert!(v["detail"].as_str().unwrap().contains(detail), "{v}");
        }
        let (status, v) = send(&app, list(&[("sort", "-cuteness_level"), ("cursor", &cursor), ("page", "1")])).await;
        assert_eq!(status, 400);
        assert_eq!(v["field"], "cursor");
        assert!(v["detail"].as_str().unwrap().contains("`page`"), "{v}");
        // A cursor of another API (another signing key) is refused as well.
        #[cfg(feature = "sqlite")]
        let t2 = TestDb::sqlite().await;
        #[cfg(not(feature = "sqlite"))]
        let t2 = TestDb::postgres().await.expect("the PostgreSQL half runs with a server");
        let key = crudforge::config::Secret::new(b"another key, another API, 32 bytes!".to_vec());
        let other = t2.config().with(|c| { c.auth.jwt_secret_key = Some(key.clone()); c.auth.secret_key = Some(key); });
        let api2 = critter_api(&t2, other).await;
        let app2 = test::init_service(api2.app()).await;
        let (status, v) = send(&app2, list(&[("sort", "-cuteness_level"), ("cursor", &cursor)])).await;
        assert_eq!(status, 400, "{v}");
        assert_eq!(v["field"], "cursor");
    }

    async fn count_modes(t) {
        let cfg = t.config().with(|c| { c.db.orm_performance_monitoring = true; c.db.orm_slow_query_threshold = 60.0; });
        let api = critter_api(&t, cfg).await;
        let app = test::init_service(api.app()).await;
        seed(&app, &animals()).await;
        let queries = |resp: &ServiceResponse<_>| -> u64 {
            let h = resp.headers().get("server-timing").unwrap().to_str().unwrap().to_owned();
            let n = h.split("desc=\"").nth(1).unwrap().split(' ').next().unwrap();
            n.parse().unwrap()
        };
        let resp = test::call_service(&app, list(&[("count", "none"), ("page_size", "2")]).to_request()).await;
        assert_eq!(queries(&resp), 1, "count=none runs one query");
        let (_, v) = body(resp).await;
        assert_eq!(names(&v), ["Tom", "Rex"]);
        assert!(v["pagination"]["total"].is_null() && v["pagination"]["total_pages"].is_null(), "{v}");
        assert!(v["pagination"]["next_cursor"].is_string(), "the next page is known without a count");
        let resp = test::call_service(&app, list(&[("count", "exact"), ("species", "cat")]).to_request()).await;
        assert_eq!(queries(&resp), 2);
        let (_, v) = body(resp).await;
        assert_eq!(v["pagination"]["total"], 2);
        assert_eq!(v["pagination"]["total_pages"], 1);
        let (status, v) = send(&app, list(&[("count", "estimated"), ("filter", "species = 'cat'")])).await;
        assert_eq!(status, 200, "{v}");
        let estimate = v["pagination"]["total"].as_i64().unwrap();
        match api.db().backend() {
            crudforge_tests::Backend::Sqlite => assert_eq!(estimate, 2, "exact on SQLite"),
            crudforge_tests::Backend::Postgres => assert!(estimate >= 0, "the planner's estimate"),
        }
        assert!(v["pagination"]["total_pages"].as_i64().is_some());
        let (status, v) = send(&app, list(&[("count", "some")])).await;
        assert_eq!(status, 400);
        assert_eq!(v["field"], "count");
        // count=none on the last page: no cursor either.
        let (_, v) = send(&app, list(&[("count", "none"), ("page_size", "5")])).await;
        assert!(v["pagination"]["next_cursor"].is_null(), "{v}");
        assert_eq!(names(&v).len(), 5);
    }

    async fn sparse_fields(t) {
        let api = critter_api(&t, t.config()).await;
        let app = test::init_service(api.app()).await;
        let made = seed(&app, &animals()).await;
        let (status, v) = send(&app, list(&[("fields", "id,name"), ("page_size", "2")])).await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["data"][0], json!({"id": made[0]["id"], "name": "Tom"}));
        assert_eq!(v["data"][1], json!({"id": made[1]["id"], "name": "Rex"}));
        assert_eq!(v["pagination"]["total"], 5, "the envelope is untouched");
        let (_, v) = send(&app, list(&[("fields", "weight, nickname"), ("filter", "name = 'Rex'")])).await;
        assert_eq!(v["data"][0], json!({"weight": 30.0, "nickname": null}));
        let uri = format!("/api/critters/{}?fields=name,cuteness_level", made[0]["id"].as_str().unwrap());
        let (status, v) = send(&app, test::TestRequest::get().uri(&uri)).await;
        assert_eq!(status, 200);
        assert_eq!(v, json!({"name": "Tom", "cuteness_level": 7}));
        for (fields, named) in [("id,secret", "`secret`"), ("nope,name,zz", "`nope`, `zz`"), ("", "``"), ("name,", "``")] {
            let (status, v) = send(&app, list(&[("fields", fields)])).await;
            assert_eq!(status, 400, "{fields}");
            assert_eq!(v["field"], "fields");
            assert!(v["detail"].as_str().unwrap().contains(named), "{v}");
            let uri = format!("/api/critters/{}?fields={}", made[0]["id"].as_str().unwrap(), fields);
            let (status, v) = send(&app, test::TestRequest::get().uri(&uri)).await;
            assert_eq!((status.as_u16(), v["field"].as_str()), (400, Some("fields")), "GET {fields}");
        }
    }

    async fn repeated_parameters_ask_the_same_question_or_get_400(t) {
        let api = critter_api(&t, t.config()).await;
        let app = test::init_service(api.app()).await;
        let made = seed(&app, &animals()).await;
        let (tom, rex) = (made[0]["id"].as_str().unwrap(), made[1]["id"].as_str().unwrap());
        // A list given as the parameter repeated (how generated clients send arrays) is the
        // same list as the comma form: never the AND of its members.
        let comma = format!("{tom},{rex}");
        let (status, by_comma) = send(&app, list(&[("id__in", &comma), ("sort", "name")])).await;
        assert_eq!(status, 200, "{by_comma}");
        let (status, repeated) = send(&app, list(&[("id__in", tom), ("id__in", rex), ("sort", "name")])).await;
        assert_eq!(status, 200, "{repeated}");
        assert_eq!(names(&repeated), ["Rex", "Tom"]);
        assert_eq!(repeated, by_comma);
        let (_, v) = send(&app, list(&[("fields", "id"), ("fields", "name"), ("page_size", "1")])).await;
        assert_eq!(v["data"][0], json!({"id": tom, "name": "Tom"}));
        let uri = format!("/api/critters/{tom}?fields=name&fields=species");
        let (status, v) = send(&app, test::TestRequest::get().uri(&uri)).await;
        assert_eq!((status.as_u16(), v), (200, json!({"name": "Tom", "species": "cat"})));
        // Anything else given twice is refused, naming it.
        for pairs in [
            [("species", "cat"), ("species", "dog")],
            [("cuteness_level__gte", "3"), ("cuteness_level__gte", "8")],
            [("page", "1"), ("page", "2")],
        ] {
            let (status, v) = send(&app, list(&pairs)).await;
            assert_eq!(status, 400, "{pairs:?}: {v}");
            assert_eq!(v["field"], pairs[0].0, "{v}");
        }
    }

    async fn openapi_describes_the_list_parameters(t) {
        let api = critter_api(&t, t.config()).await;
        let app = test::init_service(api.app()).await;
        let (_, spec) = send(&app, test::TestRequest::get().uri("/openapi.json")).await;
        let list = &spec["paths"]["/api/critters/"]["get"];
        let param = |name: &str| -> Value {
            list["parameters"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap_or_else(|| panic!("{name}")).clone()
        };
        assert_eq!(param("filter")["schema"]["type"], "string");
        assert_eq!(param("filter")["schema"]["maxLength"], 2000);
        assert!(param("filter")["description"].as_str().unwrap().contains("or"));
        assert_eq!(param("cursor")["schema"]["type"], "string");
        assert_eq!(param("count")["schema"]["enum"], json!(["exact", "none", "estimated"]));
        let fields = param("fields");
        assert_eq!(fields["schema"]["type"], "array");
        let names: Vec<&str> = fields["schema"]["items"]["enum"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert!(names.contains(&"name") && names.contains(&"notes") && !names.contains(&"secret"), "{names:?}");
        let get = &spec["paths"]["/api/critters/{id}"]["get"];
        assert!(get["parameters"].as_array().unwrap().iter().any(|p| p["name"] == "fields"));
        let pagination = &spec["components"]["schemas"]["Pagination"];
        for member in ["total", "total_pages", "next_cursor"] {
            assert_eq!(pagination["properties"][member]["nullable"], true, "{member}: {pagination}");
        }
    }
}

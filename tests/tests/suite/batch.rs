//! Batch writes on both backends: creates, updates and deletes of many items in one request
//! and one transaction, each item judged like a single write (validators, hooks, `if_match`),
//! a refusal pointing at each item at fault and writing nothing, one `Idempotency-Key` for
//! the whole batch, the cap, and the OpenAPI description.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::crud::{CrudBlueprint, HookCtx};
use crudforge::{with_conn, Api, Database, Error, Resource};
use crudforge_tests::{backend_tests, Backend};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Books.
    books (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Title.
        title -> Text,
        /// ISBN, unique.
        isbn -> Text,
        /// Year.
        year -> Integer,
    }
}

/// A book with validators and a unique ISBN.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = books)]
#[resource(rules = crudforge::perms::Open)]
pub struct Book {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Its title.
    #[resource(min_len = 2, max_len = 40)]
    pub title: String,
    /// Its ISBN.
    #[resource(unique)]
    pub isbn: String,
    /// Year of publication.
    #[resource(min = 1450, max = 2100)]
    pub year: i32,
}

type DateTime = chrono::DateTime<chrono::Utc>;

/// Ids the after-commit hook has seen (ids are unique, so parallel tests do not mix).
static COMMITTED: Mutex<Option<HashSet<Uuid>>> = Mutex::new(None);

fn committed(id: &str) -> bool {
    let id: Uuid = id.parse().unwrap();
    COMMITTED
        .lock()
        .unwrap()
        .as_ref()
        .is_some_and(|s| s.contains(&id))
}

async fn refuse_forbidden(_ctx: HookCtx, input: BookCreate) -> crudforge::Result<BookCreate> {
    if input.title == "Forbidden" {
        return Err(Error::Forbidden("This title may not be used.".into()));
    }
    Ok(input)
}

async fn remember(_ctx: HookCtx, book: Arc<Book>) -> crudforge::Result<()> {
    COMMITTED
        .lock()
        .unwrap()
        .get_or_insert_with(HashSet::new)
        .insert(book.id);
    Ok(())
}

fn blueprint() -> CrudBlueprint<Book> {
    use crudforge::crud::Operation;
    Book::blueprint("/api/books/")
        .batch([Operation::Post, Operation::Patch, Operation::Delete])
        .before_create(refuse_forbidden)
        // Inside the transaction, after the row is written: a refusal rolls the batch back.
        .after_create(|_conn, _ctx, book| {
            let refuse = book.title == "Rollback";
            Box::pin(async move {
                if refuse {
                    return Err(Error::Conflict("Rolled back by a hook.".into()));
                }
                Ok(())
            })
        })
        .after_commit(remember)
}

async fn api(t: &crudforge_tests::TestDb, max_items: u32) -> (Api, Database) {
    let mut cfg = t.config();
    cfg.http.batch_max_items = max_items;
    let db = t.open(&cfg).await;
    let ddl = match db.backend() {
        Backend::Sqlite => "CREATE TABLE books (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, title TEXT NOT NULL, isbn TEXT NOT NULL UNIQUE, year INTEGER NOT NULL)",
        Backend::Postgres => "CREATE TABLE books (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, title TEXT NOT NULL, isbn TEXT NOT NULL UNIQUE, year INTEGER NOT NULL)",
    };
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(ddl).await).unwrap();
    drop(conn);
    let api = Api::new(cfg, db.clone())
        .unwrap()
        .mount(blueprint())
        .unwrap();
    (api, db)
}

fn book(title: &str, isbn: &str) -> Value {
    json!({"title": title, "isbn": isbn, "year": 1965})
}

/// Status, `Idempotent-Replayed` and body of a request.
async fn send<S, B>(app: &S, req: test::TestRequest) -> (u16, bool, Value)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let resp = test::call_service(app, req.to_request()).await;
    let status = resp.status().as_u16();
    let replayed = resp.headers().contains_key("idempotent-replayed");
    let body = test::read_body(resp).await;
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).unwrap()
    };
    (status, replayed, body)
}

/// `(pointer, detail)` of each entry of a problem's `errors`.
fn faults(problem: &Value) -> Vec<(String, String)> {
    problem["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("no errors array: {problem}"))
        .iter()
        .map(|e| {
            (
                e["pointer"].as_str().unwrap().to_owned(),
                e["detail"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pointers(problem: &Value) -> Vec<String> {
    faults(problem).into_iter().map(|(p, _)| p).collect()
}

macro_rules! call {
    ($app:expr, $req:expr) => {
        send(&$app, $req).await
    };
}

fn post(uri: &str, body: Value) -> test::TestRequest {
    test::TestRequest::post().uri(uri).set_json(body)
}

fn patch(uri: &str, body: Value) -> test::TestRequest {
    test::TestRequest::patch().uri(uri).set_json(body)
}

async fn total<S, B>(app: &S) -> u64
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let (status, _, list) = send(app, test::TestRequest::get().uri("/api/books/")).await;
    assert_eq!(status, 200, "{list}");
    list["pagination"]["total"].as_u64().unwrap()
}

/// Creates `n` books in one batch; their ids and tags.
async fn created<S, B>(app: &S, n: usize) -> (Vec<String>, Vec<String>)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let items: Vec<Value> = (0..n)
        .map(|i| book(&format!("Book {i}"), &format!("isbn-{i}")))
        .collect();
    let (status, _, body) = send(app, post("/api/books/batch/", json!({"items": items}))).await;
    assert_eq!(status, 201, "{body}");
    let ids = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap().to_owned())
        .collect();
    let tags = body["etags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    (ids, tags)
}

backend_tests! {
    async fn a_batch_creates_every_item_in_order_with_their_tags(t) {
        let (api, _db) = api(&t, 1000).await;
        let app = test::init_service(api.app()).await;
        let items = json!({"items": [book("Dune", "1"), book("Emma", "2"), book("Ulysses", "3")]});
        let (status, _, body) = call!(app, post("/api/books/batch/", items));
        assert_eq!(status, 201, "{body}");
        let data = body["data"].as_array().unwrap();
        let titles: Vec<&str> = data.iter().map(|b| b["title"].as_str().unwrap()).collect();
        assert_eq!(titles, ["Dune", "Emma", "Ulysses"]);
        let etags = body["etags"].as_array().unwrap();
        assert_eq!(etags.len(), 3);
        for (item, tag) in data.iter().zip(etags) {
            let id = item["id"].as_str().unwrap();
            // Each tag is the one a GET of the item answers, and the hooks ran after the commit.
            let resp = test::call_service(&app, test::TestRequest::get().uri(&format!("/api/books/{id}")).to_request()).await;
            assert_eq!(resp.headers().get("etag").unwrap().to_str().unwrap(), tag.as_str().unwrap());
            assert!(committed(id), "the after-commit hook saw {id}");
        }
        assert_eq!(total(&app).await, 3);
    }

    async fn a_refused_item_writes_nothing_and_is_pointed_at(t) {
        let (api, _db) = api(&t, 1000).await;
        let app = test::init_service(api.app()).await;
        // Validators: every item and member at fault in one answer.
        let bad = json!({"title": "D", "isbn": "9", "year": 1200});
        let items = json!({"items": [book("Dune", "1"), bad, book("Emma", "2"), "not an object"]});
        let (status, _, p) = call!(app, post("/api/books/batch/", items));
        assert_eq!(status, 422, "{p}");
        assert_eq!(p["type"], "/errors/validation_error");
        assert_eq!(pointers(&p), ["/items/1/title", "/items/1/year", "/items/3"]);
        assert_eq!(
            p["detail"],
            "2 items were refused (items 1, 3); nothing was written. See `errors`."
        );
        assert_eq!(total(&app).await, 0);
        // A member the resource does not have.
        let items = json!({"items": [book("Dune", "1"), {"title": "Emma", "isbn": "2", "year": 1815, "colour": "red"}]});
        let (status, _, p) = call!(app, post("/api/books/batch/", items));
        assert!(status == 400 || status == 422, "{status} {p}");
        assert!(pointers(&p)[0].starts_with("/items/1"), "{p}");
        // A hook before the write refuses one item (403).
        let items = json!({"items": [book("Dune", "1"), book("Forbidden", "2")]});
        let (status, _, p) = call!(app, post("/api/books/batch/", items));
        assert_eq!(status, 403, "{p}");
        assert_eq!(pointers(&p), ["/items/1"]);
        assert_eq!(p["detail"], "Item 1 was refused; nothing was written: This title may not be used.");
        // The database refuses the third item (the ISBN of the first): the two before it are
        // rolled back.
        let items = json!({"items": [book("Dune", "1"), book("Emma", "2"), book("Ulysses", "1")]});
        let (status, _, p) = call!(app, post("/api/books/batch/", items));
        assert_eq!(status, 409, "{p}");
        assert_eq!(pointers(&p), ["/items/2/isbn"], "{p}");
        let detail = p["detail"].as_str().unwrap();
        assert!(detail.starts_with("Item 2 was refused; nothing was written: "), "{p}");
        assert!(!detail.contains("UNIQUE") && !detail.contains("duplicate key"), "no database text: {p}");
        // A hook inside the transaction refuses the second item after it was written.
        let items = json!({"items": [book("Dune", "1"), book("Rollback", "2"), book("Emma", "3")]});
        let (status, _, p) = call!(app, post("/api/books/batch/", items));
        assert_eq!(status, 409, "{p}");
        assert_eq!(pointers(&p), ["/items/1"]);
        assert_eq!(total(&app).await, 0, "nothing was written by any refused batch");
    }

    async fn the_body_shape_and_the_cap_are_checked(t) {
        let (api, _db) = api(&t, 2).await;
        let app = test::init_service(api.app()).await;
        let three = json!({"items": [book("Dune", "1"), book("Emma", "2"), book("Ulysses", "3")]});
        for (body, field) in [
            (three, "items"),
            (json!({"items": []}), "items"),
            (json!({"items": {"title": "Dune"}}), "items"),
            (json!({}), "items"),
            (json!({"items": [book("Dune", "1")], "extra": 1}), "extra"),
            (json!([book("Dune", "1")]), ""),
        ] {
            let (status, _, p) = call!(app, post("/api/books/batch/", body.clone()));
            assert_eq!(status, 422, "{body}: {p}");
            if field.is_empty() {
                assert!(p.get("field").is_none(), "{p}");
            } else {
                assert_eq!(p["field"], field, "{body}: {p}");
            }
        }
        let (status, _, p) = call!(app, post("/api/books/batch/", json!({"items": [book("Dune", "1"), book("Emma", "2")]})));
        assert_eq!(status, 201, "two is the cap: {p}");
        // Malformed JSON and another media type, as for a single write.
        let req = test::TestRequest::post().uri("/api/books/batch/").insert_header(("content-type", "application/json")).set_payload("{\"items\": [");
        assert_eq!(call!(app, req).0, 400);
        let req = test::TestRequest::post().uri("/api/books/batch/").insert_header(("content-type", "text/plain")).set_payload("{}");
        assert_eq!(call!(app, req).0, 415);
        assert_eq!(total(&app).await, 2);
    }

    async fn an_idempotency_key_covers_the_whole_batch(t) {
        let (api, _db) = api(&t, 1000).await;
        let app = test::init_service(api.app()).await;
        let items = json!({"items": [book("Dune", "1"), book("Emma", "2")]});
        let keyed = |body: Value| post("/api/books/batch/", body).insert_header(("Idempotency-Key", "batch-1"));
        let (status, replayed, first) = call!(app, keyed(items.clone()));
        assert_eq!(status, 201, "{first}");
        assert!(!replayed);
        let (status, replayed, again) = call!(app, keyed(items.clone()));
        assert_eq!(status, 201, "{again}");
        assert!(replayed, "the stored answer is marked");
        assert_eq!(again, first, "the same items, not new ones");
        assert_eq!(total(&app).await, 2, "written once");
        let (status, _, p) = call!(app, keyed(json!({"items": [book("Ulysses", "3")]})));
        assert_eq!(status, 422, "another body with the same key: {p}");
        assert_eq!(p["field"], "Idempotency-Key");
        // A refused batch stores nothing: its retry is processed anew.
        let bad = json!({"items": [book("Dune", "1")]});
        let req = post("/api/books/batch/", bad.clone()).insert_header(("Idempotency-Key", "batch-2"));
        assert_eq!(call!(app, req).0, 409);
        let req = post("/api/books/batch/", bad).insert_header(("Idempotency-Key", "batch-2"));
        assert_eq!(call!(app, req).0, 409);
        // Updates take a key too.
        let (ids, _) = created(&app, 1).await;
        let change = json!({"items": [{"id": ids[0], "changes": {"year": 1999}}]});
        let req = patch("/api/books/batch/", change.clone()).insert_header(("Idempotency-Key", "batch-3"));
        let (status, _, first) = call!(app, req);
        assert_eq!(status, 200, "{first}");
        let req = patch("/api/books/batch/", change).insert_header(("Idempotency-Key", "batch-3"));
        let (status, replayed, again) = call!(app, req);
        assert_eq!((status, replayed), (200, true));
        assert_eq!(again, first);
    }

    async fn a_batch_update_judges_each_item_and_its_if_match(t) {
        let (api, _db) = api(&t, 1000).await;
        let app = test::init_service(api.app()).await;
        let (ids, tags) = created(&app, 3).await;
        let change = json!({"items": [
            {"id": ids[0], "if_match": tags[0], "changes": {"year": 1970}},
            {"id": ids[1], "changes": {"title": "Renamed"}},
        ]});
        let (status, _, body) = call!(app, patch("/api/books/batch/", change));
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["data"][0]["year"], 1970);
        assert_eq!(body["data"][1]["title"], "Renamed");
        let fresh = body["etags"][0].as_str().unwrap().to_owned();
        assert_ne!(fresh, tags[0], "the tag follows the change");
        // A stale tag on the second item: 412 pointing at it, and the first item's change in
        // the same batch is not kept.
        let change = json!({"items": [
            {"id": ids[2], "changes": {"year": 2000}},
            {"id": ids[0], "if_match": tags[0], "changes": {"year": 1980}},
        ]});
        let (status, _, p) = call!(app, patch("/api/books/batch/", change));
        assert_eq!(status, 412, "{p}");
        assert_eq!(pointers(&p), ["/items/1"]);
        let (_, _, third) = call!(app, test::TestRequest::get().uri(&format!("/api/books/{}", ids[2])));
        assert_eq!(third["year"], 1965, "rolled back");
        // Validators on the changes, an unknown id, a repeated id, a malformed tag, a missing
        // `changes`: each pointed at.
        let missing = Uuid::new_v4().to_string();
        let change = json!({"items": [
            {"id": ids[0], "changes": {"year": 1000}},
            {"id": ids[1], "if_match": "no quotes", "changes": {}},
            {"id": ids[0], "changes": {"year": 1990}},
            {"id": ids[2]},
            {"changes": {"year": 1990}},
        ]});
        let (status, _, p) = call!(app, patch("/api/books/batch/", change));
        assert_eq!(status, 422, "{p}");
        assert_eq!(
            pointers(&p),
            ["/items/1/if_match", "/items/2/id", "/items/3/changes", "/items/4/id"],
            "the envelope is checked first: {p}"
        );
        let change = json!({"items": [{"id": ids[0], "changes": {"year": 1000, "title": "X"}}]});
        let (status, _, p) = call!(app, patch("/api/books/batch/", change));
        assert_eq!(status, 422, "{p}");
        assert_eq!(pointers(&p), ["/items/0/changes/title", "/items/0/changes/year"]);
        let change = json!({"items": [{"id": ids[0], "changes": {"year": 1990}}, {"id": missing, "changes": {"year": 1990}}]});
        let (status, _, p) = call!(app, patch("/api/books/batch/", change));
        assert_eq!(status, 404, "{p}");
        assert_eq!(pointers(&p), ["/items/1"]);
        let (_, _, first) = call!(app, test::TestRequest::get().uri(&format!("/api/books/{}", ids[0])));
        assert_eq!(first["year"], 1970, "no refused batch changed anything");
    }

    async fn a_batch_delete_removes_all_or_nothing(t) {
        let (api, _db) = api(&t, 1000).await;
        let app = test::init_service(api.app()).await;
        let (ids, tags) = created(&app, 3).await;
        let del = json!({"items": [{"id": ids[0]}, {"id": ids[1], "if_match": "\"stale\""}]});
        let (status, _, p) = call!(app, post("/api/books/batch/delete/", del));
        assert_eq!(status, 412, "{p}");
        assert_eq!(pointers(&p), ["/items/1"]);
        assert_eq!(total(&app).await, 3, "nothing was deleted");
        let del = json!({"items": [{"id": ids[0]}, {"id": ids[1], "if_match": tags[1]}, {"id": ids[1]}]});
        let (status, _, p) = call!(app, post("/api/books/batch/delete/", del));
        assert_eq!(status, 422, "a repeated id: {p}");
        let del = json!({"items": [{"id": ids[0]}, {"id": ids[1], "if_match": tags[1]}]});
        let (status, _, body) = call!(app, post("/api/books/batch/delete/", del));
        assert_eq!(status, 204, "{body}");
        assert_eq!(total(&app).await, 1);
        let del = json!({"items": [{"id": ids[2]}, {"id": ids[0]}]});
        let (status, _, p) = call!(app, post("/api/books/batch/delete/", del));
        assert_eq!(status, 404, "an id already deleted: {p}");
        assert_eq!(pointers(&p), ["/items/1"]);
        assert_eq!(total(&app).await, 1);
    }

    async fn a_key_written_another_way_is_the_same_item(t) {
        let (api, _db) = api(&t, 1000).await;
        let app = test::init_service(api.app()).await;
        let (ids, _) = created(&app, 1).await;
        let id: Uuid = ids[0].parse().unwrap();
        // Every spelling a UUID parses from names the one row: each is a repeat of item 0.
        let spellings = [
            id.hyphenated().to_string().to_uppercase(),
            id.braced().to_string(),
            id.urn().to_string(),
            id.simple().to_string(),
        ];
        for other in &spellings {
            let change = json!({"items": [
                {"id": ids[0], "changes": {"year": 1990}},
                {"id": other, "changes": {"year": 1991}},
            ]});
            let (status, _, p) = call!(app, patch("/api/books/batch/", change));
            assert_eq!(status, 422, "{other}: {p}");
            assert_eq!(pointers(&p), ["/items/1/id"], "{other}: {p}");
            let del = json!({"items": [{"id": ids[0]}, {"id": other}]});
            let (status, _, p) = call!(app, post("/api/books/batch/delete/", del));
            assert_eq!(status, 422, "{other}: {p}");
            assert_eq!(pointers(&p), ["/items/1/id"], "{other}: {p}");
        }
        let (_, _, row) = call!(app, test::TestRequest::get().uri(&format!("/api/books/{}", ids[0])));
        assert_eq!(row["year"], 1965, "no refused batch changed anything");
        // One spelling alone still addresses the row.
        let change = json!({"items": [{"id": spellings[1], "changes": {"year": 1991}}]});
        let (status, _, p) = call!(app, patch("/api/books/batch/", change));
        assert_eq!(status, 200, "{p}");
    }

    async fn each_item_meets_the_rules_of_its_single_write(t) {
        use crudforge::crud::Operation;
        use crudforge_tests::critters::{create_table, Critter};
        let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
        let db = t.open(&cfg).await;
        create_table(&db).await;
        let alice = crudforge::users::create_user(&db, "alice@example.com", "alice-pass", true, 4).await.unwrap();
        let bob = crudforge::users::create_user(&db, "bob@example.com", "bob-pass", true, 4).await.unwrap();
        let blueprint = Critter::blueprint("/api/critters/")
            .rules(crudforge::perms::OwnerRules::new("keeper_id"))
            .batch([Operation::Post, Operation::Patch, Operation::Delete]);
        let api = Api::new(cfg, db).unwrap().mount(blueprint).unwrap();
        let bearer = |id| ("authorization", format!("Bearer {}", api.state().tokens.access(id).unwrap()));
        let app = test::init_service(api.app()).await;
        let two = json!({"items": [{"name": "a1", "species": "cat"}, {"name": "a2", "species": "dog"}]});
        // Anonymous callers are refused before the body is read, as for a single create.
        let (status, _, p) = call!(app, post("/api/critters/batch/", two.clone()));
        assert_eq!(status, 401, "{p}");
        // The rules fill the owner of each item; a member only the server sets is refused.
        let (status, _, mine) = call!(app, post("/api/critters/batch/", two).insert_header(bearer(alice)));
        assert_eq!(status, 201, "{mine}");
        for c in mine["data"].as_array().unwrap() {
            assert_eq!(c["keeper_id"], alice.to_string(), "{c}");
        }
        let theirs = json!({"items": [{"name": "b1", "species": "cat"}, {"name": "b2", "species": "cat", "keeper_id": alice}]});
        let (status, _, p) = call!(app, post("/api/critters/batch/", theirs).insert_header(bearer(bob)));
        assert!(status == 403 || status == 422, "{status} {p}");
        assert_eq!(pointers(&p), ["/items/1/keeper_id"], "{p}");
        let (status, _, bobs) = call!(app, post("/api/critters/batch/", json!({"items": [{"name": "b1", "species": "cat"}]})).insert_header(bearer(bob)));
        assert_eq!(status, 201, "{bobs}");
        // Bob may not change or delete Alice's critter: 404 at its item (he cannot read it),
        // and his own item in the same batch is not changed either.
        let (a1, b1) = (&mine["data"][0]["id"], &bobs["data"][0]["id"]);
        let change = json!({"items": [{"id": b1, "changes": {"name": "b1x"}}, {"id": a1, "changes": {"name": "stolen"}}]});
        let (status, _, p) = call!(app, patch("/api/critters/batch/", change).insert_header(bearer(bob)));
        assert_eq!(status, 404, "{p}");
        assert_eq!(pointers(&p), ["/items/1"]);
        let del = json!({"items": [{"id": b1}, {"id": a1}]});
        let (status, _, p) = call!(app, post("/api/critters/batch/delete/", del).insert_header(bearer(bob)));
        assert_eq!(status, 404, "{p}");
        let (_, _, seen) = call!(app, test::TestRequest::get().uri("/api/critters/").insert_header(bearer(bob)));
        assert_eq!(seen["data"][0]["name"], "b1", "{seen}");
        let (_, _, seen) = call!(app, test::TestRequest::get().uri("/api/critters/").insert_header(bearer(alice)));
        assert_eq!(seen["pagination"]["total"], 2, "{seen}");
    }

    async fn the_description_has_the_batch_operations(t) {
        let (api, _db) = api(&t, 1000).await;
        let app = test::init_service(api.app()).await;
        let (status, _, spec) = call!(app, test::TestRequest::get().uri("/openapi.json"));
        assert_eq!(status, 200);
        if let Err(e) = crudforge_tests::tools::openapi_spec_validator(spec.to_string().as_bytes()) {
            panic!("openapi-spec-validator rejects the description: {e}");
        }
        let batch = &spec["paths"]["/api/books/batch/"];
        assert_eq!(batch["post"]["operationId"], "batchCreateBook");
        assert_eq!(batch["patch"]["operationId"], "batchUpdateBook");
        let delete = &spec["paths"]["/api/books/batch/delete/"]["post"];
        assert_eq!(delete["operationId"], "batchDeleteBook");
        let body = &batch["post"]["requestBody"]["content"]["application/json"]["schema"];
        assert_eq!(body["required"], json!(["items"]));
        assert_eq!(body["properties"]["items"]["items"]["$ref"], "#/components/schemas/BookCreate");
        let answer = &batch["post"]["responses"]["201"]["content"]["application/json"]["schema"];
        assert_eq!(answer["properties"]["data"]["items"]["$ref"], "#/components/schemas/Book", "{answer}");
        let item = &batch["patch"]["requestBody"]["content"]["application/json"]["schema"]["properties"]["items"]["items"];
        assert_eq!(item["required"], json!(["changes", "id"]), "{item}");
        assert_eq!(item["properties"]["changes"]["$ref"], "#/components/schemas/BookUpdate");
        for op in [&batch["post"], &batch["patch"], delete] {
            assert!(op["responses"]["422"].is_object(), "{op}");
            let params: Vec<&str> = op["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
            assert!(params.contains(&"Idempotency-Key"), "{params:?}");
        }
        assert!(delete["responses"]["412"].is_object());
        assert!(delete["responses"]["204"].is_object());
    }
}

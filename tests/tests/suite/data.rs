//! Export and import (feature `export`) on both backends: `GET <prefix>export/` as CSV and
//! NDJSON with the list's filters, sort and `fields`, an owner-scoped caller's rows only, the
//! members the caller may not read never written, formulas neutralized, many chunks each row
//! once in order; `POST <prefix>import/` of CSV and NDJSON through the batch create's path, all
//! or nothing with every refused row named by its line and member, chunked with exactly the
//! good chunks written, the refusals of a wrong type, a malformed file and the caps, members
//! the caller may not set, and an idempotent replay.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::users;
use crudforge::{Api, Config, Resource};
use crudforge_tests::backend_tests;
use crudforge_tests::parts::Part;
use serde_json::{json, Value};
use uuid::Uuid;

struct World {
    api: Api,
    admin: Uuid,
    alice: Uuid,
    bob: Uuid,
}

async fn world(t: &crudforge_tests::TestDb, change: impl FnOnce(&mut Config)) -> World {
    let cfg = t.config().with(|c| {
        c.auth.bcrypt_cost = 4;
        change(c);
    });
    let db = t.open(&cfg).await;
    crudforge_tests::parts::create_table(&db).await;
    let user = |email: &'static str| {
        let db = db.clone();
        async move {
            users::create_user(&db, email, "some-pass", true, 4)
                .await
                .unwrap()
        }
    };
    let admin = user("admin@example.com").await;
    users::grant_role(&db, admin, "ADMIN", None).await.unwrap();
    let alice = user("alice@example.com").await;
    let bob = user("bob@example.com").await;
    let api = Api::new(cfg, db.clone())
        .unwrap()
        .mount(Part::blueprint("/api/parts/").export().import())
        .unwrap();
    World {
        api,
        admin,
        alice,
        bob,
    }
}

type Req = test::TestRequest;

fn auth(req: Req, api: &Api, id: Uuid) -> Req {
    req.insert_header((
        "authorization",
        format!("Bearer {}", api.state().tokens.access(id).unwrap()),
    ))
}

/// Status, headers and body bytes of a request.
async fn call<S, B>(app: &S, req: Req) -> (u16, actix_web::http::header::HeaderMap, Vec<u8>)
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
    let headers = resp.headers().clone();
    let body = test::read_body(resp).await;
    (status, headers, body.to_vec())
}

/// The value of header `name`.
fn header_of<'a>(headers: &'a actix_web::http::header::HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name}"))
        .to_str()
        .unwrap()
}

fn json_of(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(body)))
}

/// The records of a CSV body, the header first.
fn csv_records(body: &[u8]) -> Vec<Vec<String>> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(body)
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect()
}

/// The lines of an NDJSON body, each parsed.
fn ndjson_lines(body: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(body).unwrap();
    assert!(text.is_empty() || text.ends_with('\n'), "{text}");
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn import(api: &Api, who: Uuid, query: &str, media: &str, body: impl Into<Vec<u8>>) -> Req {
    auth(
        Req::post()
            .uri(&format!("/api/parts/import/{query}"))
            .insert_header(("content-type", media))
            .set_payload(body.into()),
        api,
        who,
    )
}

/// `(pointer, field)` of each entry of a problem's `errors`.
fn faults(problem: &Value) -> Vec<(String, String)> {
    problem["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("no errors array: {problem}"))
        .iter()
        .map(|e| {
            (
                e["pointer"].as_str().unwrap().to_owned(),
                e["field"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// How many parts `who` lists.
async fn total<S, B>(app: &S, api: &Api, who: Uuid) -> u64
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let (s, _, body) = call(app, auth(Req::get().uri("/api/parts/"), api, who)).await;
    assert_eq!(s, 200);
    json_of(&body)["pagination"]["total"].as_u64().unwrap()
}

const CSV: &str = "text/csv";
const NDJSON: &str = "application/x-ndjson";

/// An NDJSON import by `who` whose body the test sends: `first` now, the rest through the
/// sender; the notice fires when the server starts reading the body.
fn held_import(
    api: &Api,
    who: Uuid,
    first: &str,
) -> (
    actix_http::Request,
    tokio::sync::mpsc::UnboundedSender<actix_web::web::Bytes>,
    std::sync::Arc<tokio::sync::Notify>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tx.send(actix_web::web::Bytes::from(first.to_owned()))
        .unwrap();
    let reading = std::sync::Arc::new(tokio::sync::Notify::new());
    let notice = reading.clone();
    let stream = futures_util::stream::unfold(rx, move |mut rx| {
        let notice = notice.clone();
        async move {
            notice.notify_one();
            let chunk = rx.recv().await?;
            Some((Ok::<_, actix_http::error::PayloadError>(chunk), rx))
        }
    });
    let stream: std::pin::Pin<Box<dyn futures_util::Stream<Item = _>>> = Box::pin(stream);
    let req = auth(
        Req::post()
            .uri("/api/parts/import/")
            .insert_header(("content-type", NDJSON)),
        api,
        who,
    )
    .to_request();
    let (req, _) = req.replace_payload(actix_http::Payload::from(stream));
    (req, tx, reading)
}

backend_tests! {
    async fn export_writes_the_callers_rows_as_csv_and_ndjson(t) {
        let w = world(&t, |_| {}).await;
        let app = test::init_service(w.api.app()).await;
        let alices = "name,qty,stocked\n\"=HYPERLINK(\"\"http://evil.example\"\",\"\"x\"\")\",3,true\nbolt,7,false\n-nut,5,1\n+washer,1,0\n";
        let (s, _, body) = call(&app, import(&w.api, w.alice, "", CSV, alices)).await;
        assert_eq!(s, 201, "{}", String::from_utf8_lossy(&body));
        assert_eq!(json_of(&body), json!({"created": 4}));
        let bobs = "{\"name\": \"gear\", \"qty\": 9, \"stocked\": true}\n";
        let (s, _, _) = call(&app, import(&w.api, w.bob, "", NDJSON, bobs)).await;
        assert_eq!(s, 201);
        // The administrator writes a staff note on one of Alice's parts.
        let (s, _, _) = call(&app, import(&w.api, w.admin, "", NDJSON, "{\"name\": \"admins\", \"qty\": 0, \"stocked\": false, \"staff_note\": \"secret\"}\n")).await;
        assert_eq!(s, 201);

        // CSV (the default), sorted by quantity: Alice's rows only, no staff note.
        let (s, headers, body) = call(&app, auth(Req::get().uri("/api/parts/export/?sort=qty"), &w.api, w.alice)).await;
        assert_eq!(s, 200, "{}", String::from_utf8_lossy(&body));
        assert!(header_of(&headers, "content-type").starts_with("text/csv"));
        assert_eq!(header_of(&headers, "content-disposition"), "attachment; filename=\"part.csv\"");
        let rows = csv_records(&body);
        let header = &rows[0];
        assert!(!header.contains(&"staff_note".to_owned()), "{header:?}");
        for m in ["id", "created_at", "updated_at", "owner_id", "name", "qty", "stocked"] {
            assert!(header.contains(&m.to_owned()), "{m} in {header:?}");
        }
        let col = |m: &str| header.iter().position(|h| h == m).unwrap();
        let names: Vec<&str> = rows[1..].iter().map(|r| r[col("name")].as_str()).collect();
        // Formulas come back neutralized.
        assert_eq!(names, ["'+washer", "'=HYPERLINK(\"http://evil.example\",\"x\")", "'-nut", "bolt"]);
        let qty: Vec<&str> = rows[1..].iter().map(|r| r[col("qty")].as_str()).collect();
        assert_eq!(qty, ["1", "3", "5", "7"]);
        let stocked: Vec<&str> = rows[1..].iter().map(|r| r[col("stocked")].as_str()).collect();
        assert_eq!(stocked, ["false", "true", "true", "false"]);
        assert!(rows[1..].iter().all(|r| r[col("owner_id")] == w.alice.to_string()));

        // Filters, a descending sort and `fields`, in NDJSON: what the list renders.
        let query = "qty__gte=3&sort=-qty&fields=name,qty";
        let (s, headers, body) = call(&app, auth(Req::get().uri(&format!("/api/parts/export/?{query}")).insert_header(("accept", NDJSON)), &w.api, w.alice)).await;
        assert_eq!(s, 200);
        assert_eq!(header_of(&headers, "content-type"), NDJSON);
        let lines = ndjson_lines(&body);
        let (_, _, list) = call(&app, auth(Req::get().uri(&format!("/api/parts/?{query}")), &w.api, w.alice)).await;
        assert_eq!(Value::Array(lines.clone()), json_of(&list)["data"]);
        assert_eq!(lines[0], json!({"name": "bolt", "qty": 7}));
        assert_eq!(lines.len(), 3);
        // `format` wins over `Accept`; CSV with `fields` has exactly those columns.
        let (_, _, body) = call(&app, auth(Req::get().uri("/api/parts/export/?format=csv&fields=qty,name&sort=qty").insert_header(("accept", NDJSON)), &w.api, w.alice)).await;
        let rows = csv_records(&body);
        assert_eq!(rows[0], ["name", "qty"]);
        assert_eq!(rows.len(), 5);

        // Bob counts one row; the administrator every row, staff note included.
        let (_, _, body) = call(&app, auth(Req::get().uri("/api/parts/export/?format=ndjson"), &w.api, w.bob)).await;
        let lines = ndjson_lines(&body);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["name"], "gear");
        let (_, _, body) = call(&app, auth(Req::get().uri("/api/parts/export/?format=csv&sort=qty"), &w.api, w.admin)).await;
        let rows = csv_records(&body);
        assert_eq!(rows.len(), 7);
        let note = rows[0].iter().position(|h| h == "staff_note").unwrap();
        assert_eq!(rows[1][note], "secret");
        assert_eq!(rows[2][note], "");

        // A hidden member cannot be asked for; paging parameters are refused.
        for (uri, param) in [
            ("/api/parts/export/?fields=name,staff_note", "fields"),
            ("/api/parts/export/?sort=staff_note", "sort"),
            ("/api/parts/export/?page=2", "page"),
            ("/api/parts/export/?cursor=abc", "cursor"),
            ("/api/parts/export/?format=xml", "format"),
        ] {
            let (s, _, body) = call(&app, auth(Req::get().uri(uri), &w.api, w.alice)).await;
            assert_eq!(s, 400, "{uri}: {}", String::from_utf8_lossy(&body));
            assert_eq!(json_of(&body)["field"], param, "{uri}");
        }
        // Anonymous callers are refused before anything is written.
        let (s, headers, _) = call(&app, Req::get().uri("/api/parts/export/")).await;
        assert_eq!(s, 401);
        assert_eq!(header_of(&headers, "content-type"), "application/problem+json");
    }

    async fn an_export_of_many_chunks_has_every_row_once_in_order(t) {
        let w = world(&t, |c| c.http.export_chunk_rows = 1000).await;
        let app = test::init_service(w.api.app()).await;
        // 2,500 rows, their quantities shuffled (a step coprime with the count).
        let mut file = String::new();
        for i in 0..2500u32 {
            let q = (i * 7919) % 2500;
            file.push_str(&format!("{{\"name\": \"p{q}\", \"qty\": {q}, \"stocked\": {}}}\n", q % 2 == 0));
        }
        let (s, _, body) = call(&app, import(&w.api, w.alice, "", NDJSON, file)).await;
        assert_eq!(s, 201, "{}", String::from_utf8_lossy(&body));
        assert_eq!(json_of(&body)["created"], 2500);
        let (_, _, body) = call(&app, import(&w.api, w.bob, "", NDJSON, "{\"name\": \"b\", \"qty\": 1, \"stocked\": true}\n")).await;
        assert_eq!(json_of(&body)["created"], 1);
        for (sort, expected) in [
            ("qty", (0..2500).collect::<Vec<i64>>()),
            ("-qty", (0..2500).rev().collect()),
        ] {
            let (s, _, body) = call(&app, auth(Req::get().uri(&format!("/api/parts/export/?format=ndjson&sort={sort}&fields=qty")), &w.api, w.alice)).await;
            assert_eq!(s, 200);
            let qty: Vec<i64> = ndjson_lines(&body).iter().map(|l| l["qty"].as_i64().unwrap()).collect();
            assert_eq!(qty, expected, "sort={sort}");
        }
        // By a key many rows share (then the id): every row once.
        let (_, _, body) = call(&app, auth(Req::get().uri("/api/parts/export/?format=csv&sort=stocked&fields=id,stocked"), &w.api, w.alice)).await;
        let rows = csv_records(&body);
        assert_eq!(rows.len(), 2501);
        let ids: std::collections::HashSet<&str> = rows[1..].iter().map(|r| r[0].as_str()).collect();
        assert_eq!(ids.len(), 2500);
        let stocked: Vec<&str> = rows[1..].iter().map(|r| r[1].as_str()).collect();
        assert!(stocked[..1250].iter().all(|s| *s == "false") && stocked[1250..].iter().all(|s| *s == "true"));
        // The default order (created_at, then id): every row once.
        let (_, _, body) = call(&app, auth(Req::get().uri("/api/parts/export/?format=ndjson&fields=id"), &w.api, w.alice)).await;
        let lines = ndjson_lines(&body);
        let ids: std::collections::HashSet<String> = lines.iter().map(|l| l["id"].as_str().unwrap().to_owned()).collect();
        assert_eq!((lines.len(), ids.len()), (2500, 2500));
    }

    async fn an_import_with_bad_rows_names_each_and_writes_nothing(t) {
        let w = world(&t, |_| {}).await;
        let app = test::init_service(w.api.app()).await;
        // Line 3: not an integer; line 4: no name (an empty cell leaves it out); line 6: below
        // the minimum; line 7: not a boolean. Lines 2 and 5 are good.
        let file = "name,qty,stocked\nok,1,true\nbad-qty,x,true\n,2,false\nfine,3,0\nneg,-1,1\nbool,4,maybe\n";
        let (s, _, body) = call(&app, import(&w.api, w.alice, "", CSV, file)).await;
        assert_eq!(s, 422, "{}", String::from_utf8_lossy(&body));
        let problem = json_of(&body);
        assert_eq!(faults(&problem), [
            ("/lines/3/qty".to_owned(), "qty".to_owned()),
            ("/lines/4/name".to_owned(), "name".to_owned()),
            ("/lines/6/qty".to_owned(), "qty".to_owned()),
            ("/lines/7/stocked".to_owned(), "stocked".to_owned()),
        ], "{problem}");
        assert_eq!(total(&app, &w.api, w.alice).await, 0);
        // The same file with the line ends an export writes (CRLF): the same lines named.
        let (s, _, body) = call(&app, import(&w.api, w.alice, "", CSV, file.replace('\n', "\r\n"))).await;
        assert_eq!(s, 422, "{}", String::from_utf8_lossy(&body));
        let lines: Vec<String> = faults(&json_of(&body)).into_iter().map(|(p, _)| p).collect();
        assert_eq!(lines, ["/lines/3/qty", "/lines/4/name", "/lines/6/qty", "/lines/7/stocked"]);
        // NDJSON: lines counted as in the file, blank lines included.
        let file = "{\"name\": \"a\", \"qty\": 1, \"stocked\": true}\n\n{\"name\": \"b\", \"qty\": \"many\", \"stocked\": true}\n";
        let (s, _, body) = call(&app, import(&w.api, w.alice, "", NDJSON, file)).await;
        assert_eq!(s, 422);
        let problem = json_of(&body);
        let found = faults(&problem);
        assert_eq!(found.len(), 1, "{problem}");
        assert!(found[0].0.starts_with("/lines/3"), "{problem}");
        assert_eq!(total(&app, &w.api, w.alice).await, 0);
    }

    async fn a_row_the_database_refuses_is_named_by_its_line(t) {
        // Rows go in by multi-row INSERTs; when the database refuses one (here a unique index
        // the resource does not declare), they are written again one at a time to name it.
        let w = world(&t, |_| {}).await;
        let mut conn = w.api.state().db.get().await.unwrap();
        crudforge::with_conn!(conn, |c| diesel_async::SimpleAsyncConnection::batch_execute(c, "CREATE UNIQUE INDEX parts_unique_name ON parts (name)").await).unwrap();
        drop(conn);
        let app = test::init_service(w.api.app()).await;
        let file = "name,qty,stocked\na,1,true\nb,2,true\nc,3,true\na,4,false\n";
        let (s, _, body) = call(&app, import(&w.api, w.alice, "", CSV, file)).await;
        let problem = json_of(&body);
        assert_eq!(s, 422, "{problem}");
        assert_eq!(faults(&problem), [("/lines/5/name".to_owned(), "name".to_owned())], "{problem}");
        assert_eq!(total(&app, &w.api, w.alice).await, 0);
        // Without the duplicate, every row.
        let good = file.strip_suffix("a,4,false\n").unwrap();
        let (s, _, _) = call(&app, import(&w.api, w.alice, "", CSV, good)).await;
        assert_eq!(s, 201);
        assert_eq!(total(&app, &w.api, w.alice).await, 3);
    }

    async fn an_import_of_several_statements_keeps_the_files_order(t) {
        // 2,500 rows: three multi-row INSERTs; the list's order (`created_at`, then the id) is
        // the file's.
        let w = world(&t, |_| {}).await;
        let app = test::init_service(w.api.app()).await;
        let mut file = "name,qty,stocked\n".to_owned();
        for i in 0..2_500 {
            file.push_str(&format!("p{i},{},true\n", i % 7));
        }
        let (s, _, body) = call(&app, import(&w.api, w.alice, "", CSV, file)).await;
        assert_eq!(s, 201, "{}", String::from_utf8_lossy(&body));
        assert_eq!(json_of(&body), json!({"created": 2_500}));
        let (_, _, body) = call(&app, auth(Req::get().uri("/api/parts/export/?format=ndjson&fields=name"), &w.api, w.alice)).await;
        let names: Vec<String> = ndjson_lines(&body).iter().map(|l| l["name"].as_str().unwrap().to_owned()).collect();
        let expected: Vec<String> = (0..2_500).map(|i| format!("p{i}")).collect();
        assert_eq!(names, expected);
    }

    async fn a_chunked_import_writes_exactly_the_good_chunks(t) {
        let w = world(&t, |_| {}).await;
        let app = test::init_service(w.api.app()).await;
        // Ten rows on lines 2 to 11, in chunks of 3: lines 2-4, 5-7, 8-10, 11. Line 6 is bad.
        let mut file = "name,qty,stocked\n".to_owned();
        for i in 0..10 {
            let qty = if i == 4 { "-5".to_owned() } else { i.to_string() };
            file.push_str(&format!("row{i},{qty},true\n"));
        }
        let (s, _, body) = call(&app, import(&w.api, w.alice, "?mode=chunked&chunk_size=3", CSV, file)).await;
        assert_eq!(s, 200, "{}", String::from_utf8_lossy(&body));
        let report = json_of(&body);
        assert_eq!(report["created"], 7, "{report}");
        assert_eq!(report["committed"], json!([
            {"first_line": 2, "last_line": 4, "rows": 3},
            {"first_line": 8, "last_line": 10, "rows": 3},
            {"first_line": 11, "last_line": 11, "rows": 1},
        ]));
        assert_eq!(report["failed"], json!([{"first_line": 5, "last_line": 7, "rows": 3}]));
        assert_eq!(faults(&report), [("/lines/6/qty".to_owned(), "qty".to_owned())]);
        let (_, _, body) = call(&app, auth(Req::get().uri("/api/parts/export/?format=ndjson&sort=qty&fields=name"), &w.api, w.alice)).await;
        let names: Vec<String> = ndjson_lines(&body).iter().map(|l| l["name"].as_str().unwrap().to_owned()).collect();
        assert_eq!(names, ["row0", "row1", "row2", "row6", "row7", "row8", "row9"]);
    }

    async fn a_file_that_is_not_what_it_claims_is_refused(t) {
        let w = world(&t, |c| {
            c.http.import_max_rows = 3;
            c.http.import_max_bytes = 2048;
        })
        .await;
        let app = test::init_service(w.api.app()).await;
        let (s, _, _) = call(&app, import(&w.api, w.alice, "", "application/json", "[]")).await;
        assert_eq!(s, 415);
        let (s, _, _) = call(&app, auth(Req::post().uri("/api/parts/import/").set_payload("name\nx\n"), &w.api, w.alice)).await;
        assert_eq!(s, 415);
        for (media, file, line) in [
            (CSV, b"name,qty,stocked\nok,1,true\nragged,2\n".to_vec(), 3),
            (CSV, b"name,qty,stocked\nok,1,true\n\"open,2,true\n".to_vec(), 3),
            (CSV, b"name,qty,stocked\nok,1,true\nbad\xff,1,true\n".to_vec(), 3),
            (NDJSON, b"{\"name\": \"a\", \"qty\": 1, \"stocked\": true}\n[1, 2]\n".to_vec(), 2),
            (NDJSON, b"{\"name\": \"a\", \"qty\": 1, \"stocked\": true}\n{\"name\": \n".to_vec(), 2),
        ] {
            let (s, _, body) = call(&app, import(&w.api, w.alice, "", media, file.clone())).await;
            let problem = json_of(&body);
            assert_eq!(s, 422, "{}: {problem}", String::from_utf8_lossy(&file));
            let detail = problem["detail"].as_str().unwrap();
            assert!(detail.contains(&format!("Line {line} ")), "{detail}");
        }
        // A column that is no member of the resource.
        let (s, _, body) = call(&app, import(&w.api, w.alice, "", CSV, "name,colour\nx,red\n")).await;
        assert_eq!(s, 422);
        assert_eq!(json_of(&body)["field"], "colour");
        // The caps: rows, then bytes.
        let rows = "name,qty,stocked\na,1,true\nb,1,true\nc,1,true\nd,1,true\n";
        let (s, _, _) = call(&app, import(&w.api, w.alice, "", CSV, rows)).await;
        assert_eq!(s, 413);
        let big = format!("name,qty,stocked\n{},1,true\n", "x".repeat(3000));
        let (s, _, _) = call(&app, import(&w.api, w.alice, "", CSV, big)).await;
        assert_eq!(s, 413);
        // Parameters.
        for query in ["?mode=some", "?chunk_size=3", "?mode=chunked&chunk_size=0", "?page=1"] {
            let (s, _, _) = call(&app, import(&w.api, w.alice, query, CSV, "name,qty,stocked\na,1,true\n")).await;
            assert_eq!(s, 400, "{query}");
        }
        assert_eq!(total(&app, &w.api, w.alice).await, 0);
        // Anonymous callers may not import.
        let (s, _, _) = call(&app, Req::post().uri("/api/parts/import/").insert_header(("content-type", CSV)).set_payload("name,qty,stocked\na,1,true\n")).await;
        assert_eq!(s, 401);
        // Told so before anything about the body: no type, or a bad parameter, is still 401.
        let (s, _, _) = call(&app, Req::post().uri("/api/parts/import/").set_payload("name\nx\n")).await;
        assert_eq!(s, 401);
        let (s, _, _) = call(&app, Req::post().uri("/api/parts/import/?mode=some").insert_header(("content-type", CSV)).set_payload("name\nx\n")).await;
        assert_eq!(s, 401);
    }

    async fn an_import_never_sets_a_member_the_caller_may_not_set(t) {
        let w = world(&t, |_| {}).await;
        let app = test::init_service(w.api.app()).await;
        let file = "name,qty,stocked,staff_note\na,1,true,\nb,2,true,sneaky\n";
        let (s, _, body) = call(&app, import(&w.api, w.alice, "", CSV, file)).await;
        assert_eq!(s, 422, "{}", String::from_utf8_lossy(&body));
        let problem = json_of(&body);
        // Refused as the batch refuses it (the row as a whole: only administrators write it).
        assert_eq!(faults(&problem), [("/lines/3".to_owned(), "line".to_owned())], "{problem}");
        assert!(problem["errors"][0]["detail"].as_str().unwrap().contains("`staff_note`"), "{problem}");
        let file = format!("{{\"name\": \"c\", \"qty\": 1, \"stocked\": true, \"owner_id\": \"{}\"}}\n", w.bob);
        let (s, _, body) = call(&app, import(&w.api, w.alice, "", NDJSON, file)).await;
        assert_eq!(s, 422, "{}", String::from_utf8_lossy(&body));
        assert_eq!(faults(&json_of(&body))[0].1, "owner_id");
        assert_eq!(total(&app, &w.api, w.alice).await, 0);
        assert_eq!(total(&app, &w.api, w.bob).await, 0);
        // The administrator may write the staff note.
        let (s, _, _) = call(&app, import(&w.api, w.admin, "", CSV, "name,qty,stocked,staff_note\na,1,true,noted\n")).await;
        assert_eq!(s, 201);
    }

    async fn an_import_under_an_idempotency_key_is_replayed(t) {
        let w = world(&t, |_| {}).await;
        let app = test::init_service(w.api.app()).await;
        let file = "name,qty,stocked\na,1,true\nb,2,false\n";
        let req = || import(&w.api, w.alice, "", CSV, file).insert_header(("idempotency-key", "import-1"));
        let (s, headers, body) = call(&app, req()).await;
        assert_eq!(s, 201);
        assert!(!headers.contains_key("idempotent-replayed"));
        assert_eq!(json_of(&body), json!({"created": 2}));
        let (s, headers, again) = call(&app, req()).await;
        assert_eq!(s, 201);
        assert_eq!(header_of(&headers, "idempotent-replayed"), "true");
        assert_eq!(again, body);
        assert_eq!(total(&app, &w.api, w.alice).await, 2);
        // Another file under the same key is refused.
        let (s, _, _) = call(&app, import(&w.api, w.alice, "", CSV, "name,qty,stocked\nc,3,true\n").insert_header(("idempotency-key", "import-1"))).await;
        assert_eq!(s, 422);
        // A chunked import takes no key.
        let (s, _, _) = call(&app, import(&w.api, w.alice, "?mode=chunked", CSV, file).insert_header(("idempotency-key", "import-2"))).await;
        assert_eq!(s, 400);
        assert_eq!(total(&app, &w.api, w.alice).await, 2);
    }

    async fn the_description_has_the_export_and_the_import(t) {
        let w = world(&t, |_| {}).await;
        let spec: Value = serde_json::from_str(&w.api.openapi_json()).unwrap();
        let export = &spec["paths"]["/api/parts/export/"]["get"];
        let content = &export["responses"]["200"]["content"];
        assert!(content.get("text/csv").is_some() && content.get("application/x-ndjson").is_some(), "{export}");
        let params: Vec<&str> = export["parameters"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
        assert!(params.contains(&"format") && params.contains(&"qty__gte") && params.contains(&"fields"), "{params:?}");
        assert!(!params.contains(&"page") && !params.contains(&"cursor"), "{params:?}");
        let import = &spec["paths"]["/api/parts/import/"]["post"];
        let body = &import["requestBody"]["content"];
        assert!(body.get("text/csv").is_some() && body.get("application/x-ndjson").is_some(), "{import}");
        // Files, so that generated clients take and give bytes.
        assert_eq!(body["text/csv"]["schema"]["format"], "binary", "{import}");
        assert_eq!(content["application/x-ndjson"]["schema"]["format"], "binary", "{export}");
        for status in ["200", "201", "413", "415", "422"] {
            assert!(import["responses"].get(status).is_some(), "{status}: {import}");
        }
    }

    async fn a_row_longer_than_the_body_limit_is_refused_naming_its_line(t) {
        let w = world(&t, |c| c.http.max_body_size = 200).await;
        let app = test::init_service(w.api.app()).await;
        let long = "x".repeat(300);
        let ndjson = format!(
            "{{\"name\": \"a\", \"qty\": 1, \"stocked\": true}}\n\n{{\"name\": \"{long}\", \"qty\": 1, \"stocked\": true}}\n"
        );
        let csv = format!("name,qty,stocked\na,1,true\n{long},1,true\n");
        for (media, file, line) in [(NDJSON, ndjson, 3), (CSV, csv, 3)] {
            for query in ["", "?mode=chunked&chunk_size=1"] {
                let (s, _, body) = call(&app, import(&w.api, w.alice, query, media, file.clone())).await;
                let problem = json_of(&body);
                assert_eq!(s, 413, "{media}: {problem}");
                let detail = problem["detail"].as_str().unwrap();
                assert!(detail.contains(&format!("Line {line} ")) && detail.contains("MAX_BODY_SIZE"), "{detail}");
            }
        }
        assert_eq!(total(&app, &w.api, w.alice).await, 0);
        // Rows within the limit pass.
        let (s, _, body) = call(&app, import(&w.api, w.alice, "", NDJSON, "{\"name\": \"a\", \"qty\": 1, \"stocked\": true}\n")).await;
        assert_eq!(s, 201, "{}", String::from_utf8_lossy(&body));
    }

    async fn imports_run_a_few_at_a_time_per_user_and_per_process(t) {
        let w = world(&t, |c| {
            c.http.import_max_concurrent_per_user = 1;
            c.http.import_max_concurrent = 2;
        })
        .await;
        let app = test::init_service(w.api.app()).await;
        let row = |name: &str| format!("{{\"name\": \"{name}\", \"qty\": 1, \"stocked\": true}}\n");
        // Alice's import, its body still arriving.
        let (req, alice_tx, reading) = held_import(&w.api, w.alice, &row("a1"));
        let mut alice_held = std::pin::pin!(test::call_service(&app, req));
        tokio::select! {
            _ = &mut alice_held => panic!("the import ended before its body"),
            () = reading.notified() => {}
        }
        // A second one of hers: 429 with Retry-After, nothing written.
        let (s, headers, body) = call(&app, import(&w.api, w.alice, "", NDJSON, row("a2"))).await;
        assert_eq!(s, 429, "{}", String::from_utf8_lossy(&body));
        assert!(header_of(&headers, "retry-after").parse::<u64>().unwrap() > 0);
        assert_eq!(header_of(&headers, "content-type"), "application/problem+json");
        // Bob's passes.
        let (s, _, body) = call(&app, import(&w.api, w.bob, "", NDJSON, row("b1"))).await;
        assert_eq!(s, 201, "{}", String::from_utf8_lossy(&body));
        // With Bob's import held too, the process runs its two: the administrator's is 503.
        let (req, bob_tx, reading) = held_import(&w.api, w.bob, &row("b2"));
        let mut bob_held = std::pin::pin!(test::call_service(&app, req));
        tokio::select! {
            _ = &mut bob_held => panic!("the import ended before its body"),
            () = reading.notified() => {}
        }
        let (s, headers, body) = call(&app, import(&w.api, w.admin, "", NDJSON, row("c1"))).await;
        assert_eq!(s, 503, "{}", String::from_utf8_lossy(&body));
        assert!(header_of(&headers, "retry-after").parse::<u64>().unwrap() > 0);
        // The held imports end; their places are given back.
        alice_tx.send(actix_web::web::Bytes::from(row("a3"))).unwrap();
        drop(alice_tx);
        let resp = alice_held.await;
        assert_eq!(resp.status().as_u16(), 201);
        drop(bob_tx);
        assert_eq!(bob_held.await.status().as_u16(), 201);
        let (s, _, body) = call(&app, import(&w.api, w.alice, "", NDJSON, row("a4"))).await;
        assert_eq!(s, 201, "{}", String::from_utf8_lossy(&body));
        assert_eq!(total(&app, &w.api, w.alice).await, 3);
        assert_eq!(total(&app, &w.api, w.bob).await, 2);
        assert_eq!(total(&app, &w.api, w.admin).await, 5);
    }
}

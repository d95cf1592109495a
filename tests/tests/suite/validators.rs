//! Declared field validators on both backends: lengths, ranges, patterns, allowed values and an
//! application's own check, on create and update alike, every fault in one 422, nothing
//! written, and each rule in the OpenAPI description.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::{with_conn, Api, Database, Resource};
use crudforge_tests::{backend_tests, Backend};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::{json, Value};
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
        /// ISBN.
        isbn -> Text,
        /// Year.
        year -> Integer,
        /// Price.
        price -> Nullable<Double>,
        /// Genre.
        genre -> Text,
        /// Stars.
        stars -> Nullable<Integer>,
        /// Shelf code.
        shelf -> Nullable<Text>,
    }
}

/// Whether `isbn` is an ISBN-13 with a correct check digit (dashes allowed).
fn isbn13(isbn: &str) -> Result<(), String> {
    let digits: Vec<u32> = isbn
        .chars()
        .filter(|c| *c != '-')
        .map(|c| c.to_digit(10).ok_or(()))
        .collect::<Result<_, _>>()
        .map_err(|()| "only digits and dashes".to_owned())?;
    if digits.len() != 13 {
        return Err(format!("13 digits expected, {} given", digits.len()));
    }
    let sum: u32 = digits
        .iter()
        .enumerate()
        .map(|(i, d)| if i % 2 == 0 { *d } else { d * 3 })
        .sum();
    if sum.is_multiple_of(10) {
        Ok(())
    } else {
        Err("wrong check digit".to_owned())
    }
}

/// A book: one validator of each kind.
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
    /// Its ISBN-13.
    #[resource(validate = isbn13)]
    pub isbn: String,
    /// Year of publication.
    #[resource(min = 1450, max = 2100)]
    pub year: i32,
    /// Price in euros.
    #[resource(min = 0, max = 10000.5)]
    pub price: Option<f64>,
    /// Its genre.
    #[resource(one_of = ["novel", "poetry", "essay"])]
    pub genre: String,
    /// Stars from readers.
    #[resource(one_of = [-1, 1, 2, 3, 4, 5])]
    pub stars: Option<i32>,
    /// Shelf code: two capitals and a number.
    #[resource(pattern = r"^[A-Z]{2}-\d+$")]
    pub shelf: Option<String>,
}

type DateTime = chrono::DateTime<chrono::Utc>;

async fn api(t: &crudforge_tests::TestDb) -> (Api, Database) {
    let cfg = t.config();
    let db = t.open(&cfg).await;
    let ddl = match db.backend() {
        Backend::Sqlite => "CREATE TABLE books (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, title TEXT NOT NULL, isbn TEXT NOT NULL, year INTEGER NOT NULL, price DOUBLE, genre TEXT NOT NULL, stars INTEGER, shelf TEXT)",
        Backend::Postgres => "CREATE TABLE books (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, title TEXT NOT NULL, isbn TEXT NOT NULL, year INTEGER NOT NULL, price DOUBLE PRECISION, genre TEXT NOT NULL, stars INTEGER, shelf TEXT)",
    };
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(ddl).await).unwrap();
    drop(conn);
    let api = Api::new(cfg, db.clone())
        .unwrap()
        .mount(Book::blueprint("/api/books/"))
        .unwrap();
    (api, db)
}

fn good() -> Value {
    json!({"title": "Dune", "isbn": "978-0-441-17271-9", "year": 1965, "price": 9.5,
           "genre": "novel", "stars": 5, "shelf": "SF-12"})
}

async fn send<S, B>(app: &S, req: test::TestRequest) -> (u16, Value)
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
    let body = test::read_body(resp).await;
    (
        status,
        if body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&body).unwrap()
        },
    )
}

/// `(pointer, detail)` of each entry of a 422's `errors`.
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

backend_tests! {
    async fn a_valid_book_is_created(t) {
        let (api, _db) = api(&t).await;
        let app = test::init_service(api.app()).await;
        let (status, body) = send(&app, test::TestRequest::post().uri("/api/books/").set_json(good())).await;
        assert_eq!(status, 201, "{body}");
        assert_eq!(body["shelf"], "SF-12");
        // The bounds are inclusive; null skips the checks of a nullable member.
        let edge = json!({"title": "Ab", "isbn": "9780441172719", "year": 2100, "price": 0,
                          "genre": "essay", "stars": null, "shelf": null});
        let (status, body) = send(&app, test::TestRequest::post().uri("/api/books/").set_json(edge)).await;
        assert_eq!(status, 201, "{body}");
    }

    async fn every_fault_is_named_in_one_answer_and_nothing_is_written(t) {
        let (api, _db) = api(&t).await;
        let app = test::init_service(api.app()).await;
        let bad = json!({"title": "D", "isbn": "978-0-441-17271-8", "year": 1200, "price": -1,
                         "genre": "comic", "stars": 6, "shelf": "sf-12"});
        let (status, p) = send(&app, test::TestRequest::post().uri("/api/books/").set_json(bad)).await;
        assert_eq!(status, 422, "{p}");
        assert_eq!(p["type"], "/errors/validation_error");
        assert_eq!(p["field"], "title", "the first member at fault, as before");
        assert_eq!(
            faults(&p),
            [
                ("/title", "at least 2 characters required"),
                ("/isbn", "wrong check digit"),
                ("/year", "must be at least 1450"),
                ("/price", "must be at least 0"),
                ("/genre", r#"must be one of "novel", "poetry", "essay""#),
                ("/stars", "must be one of -1, 1, 2, 3, 4, 5"),
                ("/shelf", r"must match the pattern ^[A-Z]{2}-\d+$"),
            ]
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
        );
        assert!(p["detail"].as_str().unwrap().starts_with("7 members are invalid: `title`, `isbn`"), "{p}");
        // One member at fault reads as before.
        let mut one = good();
        one["year"] = json!(2101);
        let (status, p) = send(&app, test::TestRequest::post().uri("/api/books/").set_json(one)).await;
        assert_eq!(status, 422);
        assert_eq!(p["detail"], "Invalid value for `year`: must be at most 2100");
        assert_eq!(faults(&p), [("/year".to_owned(), "must be at most 2100".to_owned())]);
        // `\d` means what the description's JSON Schema `pattern` says: ASCII digits only, so
        // Arabic-Indic digits do not pass.
        let mut digits = good();
        digits["shelf"] = json!("SF-\u{661}\u{662}");
        let (status, p) = send(&app, test::TestRequest::post().uri("/api/books/").set_json(digits)).await;
        assert_eq!(status, 422, "{p}");
        assert_eq!(faults(&p), [("/shelf".to_owned(), r"must match the pattern ^[A-Z]{2}-\d+$".to_owned())]);
        let (status, list) = send(&app, test::TestRequest::get().uri("/api/books/")).await;
        assert_eq!(status, 200);
        assert_eq!(list["pagination"]["total"], 0, "nothing was written: {list}");
    }

    async fn an_update_checks_the_members_it_sends(t) {
        let (api, _db) = api(&t).await;
        let app = test::init_service(api.app()).await;
        let (_, created) = send(&app, test::TestRequest::post().uri("/api/books/").set_json(good())).await;
        let uri = format!("/api/books/{}", created["id"].as_str().unwrap());
        let (status, p) = send(&app, test::TestRequest::patch().uri(&uri).set_json(json!({"year": 1000, "isbn": "12"}))).await;
        assert_eq!(status, 422, "{p}");
        assert_eq!(
            faults(&p),
            [("/isbn".to_owned(), "13 digits expected, 2 given".to_owned()), ("/year".to_owned(), "must be at least 1450".to_owned())]
        );
        let (status, now) = send(&app, test::TestRequest::get().uri(&uri)).await;
        assert_eq!(status, 200);
        assert_eq!(now["year"], 1965, "the refused update changed nothing");
        // Members left out are not checked; null clears a nullable one.
        let (status, body) = send(&app, test::TestRequest::patch().uri(&uri).set_json(json!({"title": "Dune Messiah", "stars": null}))).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["stars"], Value::Null);
        let (status, p) = send(&app, test::TestRequest::patch().uri(&uri).set_json(json!({"stars": 0}))).await;
        assert_eq!(status, 422);
        assert_eq!(p["field"], "stars");
    }

    async fn the_description_states_every_rule(t) {
        let (api, _db) = api(&t).await;
        let app = test::init_service(api.app()).await;
        let (status, spec) = send(&app, test::TestRequest::get().uri("/openapi.json")).await;
        assert_eq!(status, 200);
        if let Err(e) = crudforge_tests::tools::openapi_spec_validator(spec.to_string().as_bytes()) {
            panic!("openapi-spec-validator rejects the description: {e}");
        }
        // `errors` is sent only when there are some: a client must not require it.
        let problem = &spec["components"]["schemas"]["Problem"];
        assert!(problem["properties"]["errors"].is_object(), "{problem}");
        assert!(!problem["required"].as_array().unwrap().contains(&json!("errors")), "{problem}");
        for body in ["BookCreate", "BookUpdate"] {
            let props = &spec["components"]["schemas"][body]["properties"];
            assert_eq!(props["title"]["minLength"], 2, "{body}: {props}");
            assert_eq!(props["title"]["maxLength"], 40, "{body}");
            assert_eq!(props["year"]["minimum"], 1450.0, "{body}");
            assert_eq!(props["year"]["maximum"], 2100.0, "{body}");
            assert_eq!(props["price"]["minimum"], 0.0, "{body}");
            assert_eq!(props["price"]["maximum"], 10000.5, "{body}");
            assert_eq!(props["genre"]["enum"], json!(["novel", "poetry", "essay"]), "{body}");
            assert_eq!(props["stars"]["enum"], json!([-1, 1, 2, 3, 4, 5, null]), "{body}");
            assert_eq!(props["stars"]["nullable"], true, "{body}");
            assert_eq!(props["shelf"]["pattern"], r"^[A-Z]{2}-\d+$", "{body}");
        }
    }
}

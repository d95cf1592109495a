//! Foundation behaviour on both backends: health, errors, OpenAPI, docs page, database
//! settings, portable types, migrations and query monitoring.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::dev::Service;
use actix_web::http::StatusCode;
use actix_web::{test, web, HttpResponse};
use crudforge::config::SqliteSynchronous;
use crudforge::db::Backend;
use crudforge::openapi::ApiDoc;
use crudforge::sql_types::Portable;
use crudforge::{with_conn, Api, Config, Database, Mount};
use crudforge_tests::{backend_tests, TestDb};
use diesel::prelude::*;
use diesel_async::{RunQueryDsl, SimpleAsyncConnection};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex, OnceLock};

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    gadgets (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        name -> Text,
        doc -> Nullable<PortableJson>,
    }
}

async fn create_gadgets(db: &Database) {
    let ddl = match db.backend() {
        Backend::Sqlite => {
            "CREATE TABLE gadgets (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, name TEXT NOT NULL UNIQUE, doc TEXT)"
        }
        Backend::Postgres => {
            "CREATE TABLE gadgets (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, name TEXT NOT NULL UNIQUE, doc JSONB)"
        }
    };
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(ddl).await).unwrap();
}

#[derive(Debug, Deserialize)]
struct NewGadget {
    name: String,
    doc: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Paging {
    #[allow(dead_code)]
    page: u32,
}

/// Routes that exercise extractors and database errors.
struct Gadgets;

async fn add_gadget(
    db: web::Data<Database>,
    body: web::Json<NewGadget>,
) -> crudforge::Result<HttpResponse> {
    let id = uuid::Uuid::new_v4();
    let mut conn = db.get().await?;
    let body = body.into_inner();
    with_conn!(conn, |c| {
        diesel::insert_into(gadgets::table)
            .values((
                gadgets::id.eq(Portable(id)),
                gadgets::created_at.eq(Portable(chrono::Utc::now())),
                gadgets::name.eq(&body.name),
                gadgets::doc.eq(Portable(body.doc.clone())),
            ))
            .execute(c)
            .await
    })?;
    Ok(HttpResponse::Created().json(json!({ "id": id })))
}

async fn get_gadget(
    db: web::Data<Database>,
    id: web::Path<uuid::Uuid>,
    _q: web::Query<Paging>,
) -> crudforge::Result<HttpResponse> {
    let mut conn = db.get().await?;
    let id = id.into_inner();
    let (name, doc): (String, Option<Value>) = with_conn!(conn, |c| {
        gadgets::table
            .filter(gadgets::id.eq(Portable(id)))
            .select((gadgets::name, gadgets::doc))
            .first(c)
            .await
    })?;
    Ok(HttpResponse::Ok().json(json!({ "id": id, "name": name, "doc": doc })))
}

async fn broken_sql(db: web::Data<Database>) -> crudforge::Result<HttpResponse> {
    let mut conn = db.get().await?;
    with_conn!(conn, |c| c
        .batch_execute("SELECT * FROM no_such_table_xyz")
        .await)?;
    Ok(HttpResponse::Ok().finish())
}

async fn slow_marker(
    db: web::Data<Database>,
    marker: web::Path<String>,
) -> crudforge::Result<HttpResponse> {
    let mut conn = db.get().await?;
    let sql = format!("SELECT '{}' AS marker", marker.replace('\'', ""));
    with_conn!(conn, |c| c.batch_execute(&sql).await)?;
    with_conn!(conn, |c| c.batch_execute("SELECT 1").await)?;
    Ok(HttpResponse::Ok().finish())
}

async fn slow_query(db: web::Data<Database>) -> crudforge::Result<HttpResponse> {
    let mut conn = db.get().await?;
    let sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) FROM c";
    with_conn!(conn, |c| c.batch_execute(sql).await)?;
    Ok(HttpResponse::Ok().finish())
}

impl Mount for Gadgets {
    fn register(&self, cfg: &mut web::ServiceConfig) {
        cfg.route("/gadgets/", web::post().to(add_gadget))
            .route("/gadgets/{id}", web::get().to(get_gadget))
            .route("/broken", web::get().to(broken_sql))
            .route("/marker/{m}", web::get().to(slow_marker))
            .route("/slow", web::get().to(slow_query));
    }
    fn document(&self, _doc: &mut ApiDoc) {}
}

async fn problem<B: actix_web::body::MessageBody>(
    resp: actix_web::dev::ServiceResponse<B>,
) -> (StatusCode, Value) {
    let status = resp.status();
    let ct = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = test::read_body(resp).await;
    if status.is_client_error() || status.is_server_error() {
        assert_eq!(
            ct.as_deref(),
            Some("application/problem+json"),
            "error without problem+json: {}",
            String::from_utf8_lossy(&body)
        );
    }
    let v: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&body)));
    (status, v)
}

fn assert_problem(v: &Value, status: u16, name: &str, instance: &str) {
    assert_eq!(v["status"], status, "{v}");
    assert_eq!(v["type"], format!("/errors/{name}"), "{v}");
    assert_eq!(v["instance"], instance, "{v}");
    assert!(v["title"].as_str().is_some_and(|t| !t.is_empty()), "{v}");
    assert!(v["detail"].as_str().is_some_and(|t| !t.is_empty()), "{v}");
}

async fn gadget_api(t: &TestDb, cfg: Config) -> Api {
    let db = t.open(&cfg).await;
    create_gadgets(&db).await;
    Api::new(cfg, db).unwrap().mount(Gadgets).unwrap()
}

/// A global subscriber that keeps every formatted event, to see slow-query warnings emitted
/// on any thread.
fn captured_logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let writer = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_ansi(false)
            .with_writer(move || CaptureWriter(writer.clone()))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
        buf
    })
    .clone()
}

struct CaptureWriter(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for CaptureWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

backend_tests! {
    async fn the_data_folder_and_its_files_are_private(t) {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        // A data folder that does not exist yet, a generated key, and on SQLite the default
        // database file in that folder.
        let data = t.dir.path().join("var/data");
        let cfg = t.config().with(|c| {
            c.db.data_dir = data.clone();
            c.auth.jwt_secret_key = None;
            c.auth.secret_key = None;
            if t.backend == Backend::Sqlite {
                c.db.database_uri = None;
            }
        });
        cfg.signing_key().unwrap();
        let db = t.open(&cfg).await;
        let app = test::init_service(Api::new(cfg, db).unwrap().app()).await;
        let resp = test::call_service(&app, test::TestRequest::get().uri("/health").to_request()).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(mode(&t.dir.path().join("var")), 0o700);
        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(&data.join("jwt_secret.key")), 0o600);
        if t.backend == Backend::Sqlite {
            // Migrations wrote through the WAL, so all three files exist.
            for name in ["crudforge.db", "crudforge.db-wal", "crudforge.db-shm"] {
                assert_eq!(mode(&data.join(name)), 0o600, "{name}");
            }
        }
    }

    async fn health_reports_healthy_and_connected(t) {
        let cfg = t.config().with(|c| c.http.api_version = "9.8.7".into());
        let db = t.open(&cfg).await;
        let app = test::init_service(Api::new(cfg, db).unwrap().app()).await;
        let resp = test::call_service(&app, test::TestRequest::get().uri("/health").to_request()).await;
        assert_eq!(resp.status(), 200);
        let v: Value = test::read_body_json(resp).await;
        assert_eq!(v["status"], "healthy");
        assert_eq!(v["database"], "connected");
        assert_eq!(v["version"], "9.8.7");
        let ts = v["timestamp"].as_str().unwrap();
        let parsed = chrono::DateTime::parse_from_rfc3339(ts).unwrap();
        assert_eq!(parsed.offset().local_minus_utc(), 0);
        assert!(ts.ends_with("+00:00"), "{ts}");
    }

    async fn health_path_is_configurable_and_can_be_disabled(t) {
        let cfg = t.config().with(|c| c.ops.health_endpoint_path = "/status".into());
        let db = t.open(&cfg).await;
        let app = test::init_service(Api::new(cfg, db.clone()).unwrap().app()).await;
        let resp = test::call_service(&app, test::TestRequest::get().uri("/status").to_request()).await;
        assert_eq!(resp.status(), 200);
        let resp = test::call_service(&app, test::TestRequest::get().uri("/health").to_request()).await;
        assert_eq!(resp.status(), 404);

        let cfg = t.config().with(|c| c.ops.health_endpoint_enabled = false);
        let api = Api::new(cfg, db).unwrap();
        assert!(api.openapi().paths.paths.get("/health").is_none());
        let app = test::init_service(api.app()).await;
        let resp = test::call_service(&app, test::TestRequest::get().uri("/health").to_request()).await;
        let (status, v) = problem(resp).await;
        assert_eq!(status, 404);
        assert_problem(&v, 404, "not_found_error", "/health");
    }

    async fn routing_errors_are_problems(t) {
        let app = test::init_service(gadget_api(&t, t.config()).await.app()).await;
        let resp = test::call_service(&app, test::TestRequest::get().uri("/nowhere?x=1").to_request()).await;
        let (status, v) = problem(resp).await;
        assert_eq!(status, 404);
        assert_problem(&v, 404, "not_found_error", "/nowhere");
        assert_eq!(v["title"], "Not Found");

        let resp = test::call_service(&app, test::TestRequest::delete().uri("/health").to_request()).await;
        let (status, v) = problem(resp).await;
        assert_eq!(status, 405);
        assert_problem(&v, 405, "method_not_allowed_error", "/health");
    }

    async fn body_errors_are_problems_and_write_nothing(t) {
        let cfg = t.config().with(|c| c.http.max_body_size = 256);
        let api = gadget_api(&t, cfg).await;
        let db = api.db().clone();
        let app = test::init_service(api.app()).await;

        let bad = [
            // (content type, body, status, error name, field)
            ("application/json", "{\"name\": ", 400, "bad_request_error", None),
            ("application/json", "{\"name\": 5}", 422, "validation_error", None),
            ("application/json", "{}", 422, "validation_error", Some("name")),
            ("text/plain", "{\"name\": \"x\"}", 415, "unsupported_media_type_error", None),
        ];
        for (ct, body, status, name, field) in bad {
            let req = test::TestRequest::post()
                .uri("/gadgets/")
                .insert_header(("content-type", ct))
                .set_payload(body)
                .to_request();
            let (got, v) = problem(test::call_service(&app, req).await).await;
            assert_eq!(got.as_u16(), status, "{body}: {v}");
            assert_problem(&v, status, name, "/gadgets/");
            if let Some(f) = field {
                assert_eq!(v["field"], f, "{v}");
            }
        }
        let big = json!({ "name": "x".repeat(1000) }).to_string();
        let req = test::TestRequest::post()
            .uri("/gadgets/")
            .insert_header(("content-type", "application/json"))
            .set_payload(big)
            .to_request();
        let (got, v) = problem(test::call_service(&app, req).await).await;
        assert_eq!(got, 413);
        assert_problem(&v, 413, "payload_too_large_error", "/gadgets/");

        let mut conn = db.get().await.unwrap();
        let n: i64 = with_conn!(conn, |c| gadgets::table.count().get_result(c).await).unwrap();
        assert_eq!(n, 0, "a failed request must write nothing");
    }

    async fn path_query_and_database_errors_are_problems(t) {
        let api = gadget_api(&t, t.config()).await;
        let app = test::init_service(api.app()).await;

        let req = test::TestRequest::post()
            .uri("/gadgets/")
            .set_json(json!({ "name": "sprocket", "doc": { "teeth": 12 } }))
            .to_request();
        let resp = test::call_service(&app, req).await;
        assert_eq!(resp.status(), 201);
        let v: Value = test::read_body_json(resp).await;
        let id = v["id"].as_str().unwrap().to_owned();

        let resp = test::call_service(&app, test::TestRequest::get().uri(&format!("/gadgets/{id}?page=1")).to_request()).await;
        assert_eq!(resp.status(), 200);
        let v: Value = test::read_body_json(resp).await;
        assert_eq!(v["name"], "sprocket");
        assert_eq!(v["doc"]["teeth"], 12);

        // Unique violation.
        let req = test::TestRequest::post()
            .uri("/gadgets/")
            .set_json(json!({ "name": "sprocket" }))
            .to_request();
        let (status, v) = problem(test::call_service(&app, req).await).await;
        assert_eq!(status, 409);
        assert_problem(&v, 409, "conflict_error", "/gadgets/");

        // Missing row.
        let missing = uuid::Uuid::new_v4();
        let uri = format!("/gadgets/{missing}?page=1");
        let (status, v) = problem(test::call_service(&app, test::TestRequest::get().uri(&uri).to_request()).await).await;
        assert_eq!(status, 404);
        assert_problem(&v, 404, "not_found_error", &format!("/gadgets/{missing}"));
        assert_eq!(v["title"], "Not Found");

        // Malformed path value.
        let (status, v) = problem(test::call_service(&app, test::TestRequest::get().uri("/gadgets/not-a-uuid?page=1").to_request()).await).await;
        assert_eq!(status, 404);
        assert_problem(&v, 404, "not_found_error", "/gadgets/not-a-uuid");

        // Malformed and missing query values.
        for q in ["?page=abc", "?page=-1", ""] {
            let uri = format!("/gadgets/{id}{q}");
            let (status, v) = problem(test::call_service(&app, test::TestRequest::get().uri(&uri).to_request()).await).await;
            assert_eq!(status, 400, "{q}: {v}");
            assert_problem(&v, 400, "bad_request_error", &format!("/gadgets/{id}"));
        }

        // Anything else is a 500 that shows no SQL.
        let (status, v) = problem(test::call_service(&app, test::TestRequest::get().uri("/broken").to_request()).await).await;
        assert_eq!(status, 500);
        assert_problem(&v, 500, "internal_server_error", "/broken");
        let text = v.to_string();
        assert!(!text.contains("no_such_table_xyz"), "leaked: {text}");
        assert!(v.get("debug").is_none());
    }

    async fn debug_mode_adds_a_debug_member(t) {
        let cfg = t.config().with(|c| c.http.debug = true);
        let app = test::init_service(gadget_api(&t, cfg).await.app()).await;
        let (status, v) = problem(test::call_service(&app, test::TestRequest::get().uri("/broken").to_request()).await).await;
        assert_eq!(status, 500);
        assert!(v["debug"].as_str().unwrap().contains("no_such_table_xyz"), "{v}");
    }

    async fn sqlite_settings_and_like_semantics(t) {
        let db = t.open(&t.config()).await;
        let mut conn = db.get().await.unwrap();
        #[derive(QueryableByName)]
        struct B {
            #[diesel(sql_type = diesel::sql_types::Bool)]
            v: bool,
        }
        let like: B = with_conn!(conn, |c| diesel::sql_query("SELECT ('ABC' LIKE 'abc') AS v").get_result(c).await).unwrap();
        assert!(!like.v, "LIKE must be case-sensitive on every backend");
        let like: B = with_conn!(conn, |c| diesel::sql_query("SELECT ('ABC' LIKE 'AB%') AS v").get_result(c).await).unwrap();
        assert!(like.v);
        if t.backend == Backend::Sqlite {
            #[derive(QueryableByName)]
            struct S {
                #[diesel(sql_type = diesel::sql_types::Text)]
                journal_mode: String,
            }
            #[derive(QueryableByName)]
            struct I {
                #[diesel(sql_type = diesel::sql_types::BigInt)]
                v: i64,
            }
            let m: S = with_conn!(conn, |c| diesel::sql_query("PRAGMA journal_mode").get_result(c).await).unwrap();
            assert_eq!(m.journal_mode, "wal");
            let fk: I = with_conn!(conn, |c| diesel::sql_query("SELECT foreign_keys AS v FROM pragma_foreign_keys").get_result(c).await).unwrap();
            assert_eq!(fk.v, 1);
            let bt: I = with_conn!(conn, |c| diesel::sql_query("SELECT timeout AS v FROM pragma_busy_timeout").get_result(c).await).unwrap();
            assert_eq!(bt.v, 5000);
            let sync: I = with_conn!(conn, |c| diesel::sql_query("SELECT synchronous AS v FROM pragma_synchronous").get_result(c).await).unwrap();
            assert_eq!(sync.v, 1, "synchronous=NORMAL");
            drop(conn);
            // SQLITE_SYNCHRONOUS reaches every pooled connection.
            let full = t.open(&t.config().with(|c| c.db.sqlite_synchronous = SqliteSynchronous::Full)).await;
            let mut conn = full.get().await.unwrap();
            let sync: I = with_conn!(conn, |c| diesel::sql_query("SELECT synchronous AS v FROM pragma_synchronous").get_result(c).await).unwrap();
            assert_eq!(sync.v, 2, "synchronous=FULL");
        }
    }

    async fn portable_types_round_trip_and_sort(t) {
        let db = t.open(&t.config()).await;
        create_gadgets(&db).await;
        let mut conn = db.get().await.unwrap();
        let base = chrono::Utc::now();
        let mut ids = Vec::new();
        // Insert out of time order; read back in time order.
        for (i, offset) in [(0, 3i64), (1, 1), (2, 2)] {
            let id = uuid::Uuid::new_v4();
            ids.push(id);
            let at = base + chrono::Duration::microseconds(offset) + chrono::Duration::days(offset * 100);
            let doc = json!({ "n": i, "nested": [1, "two", null] });
            with_conn!(conn, |c| {
                diesel::insert_into(gadgets::table)
                    .values((
                        gadgets::id.eq(Portable(id)),
                        gadgets::created_at.eq(Portable(at)),
                        gadgets::name.eq(format!("g{i}")),
                        gadgets::doc.eq(Portable(Some(doc.clone()))),
                    ))
                    .execute(c)
                    .await
            })
            .unwrap();
        }
        let rows: Vec<(uuid::Uuid, chrono::DateTime<chrono::Utc>, Option<Value>)> = with_conn!(conn, |c| {
            gadgets::table
                .order(gadgets::created_at.asc())
                .select((gadgets::id, gadgets::created_at, gadgets::doc))
                .load(c)
                .await
        })
        .unwrap();
        let order: Vec<uuid::Uuid> = rows.iter().map(|r| r.0).collect();
        assert_eq!(order, vec![ids[1], ids[2], ids[0]]);
        assert!(rows.windows(2).all(|w| w[0].1 < w[1].1));
        assert_eq!(rows[0].2.as_ref().unwrap()["nested"][1], "two");
        // Timestamps keep microseconds.
        let want = base + chrono::Duration::microseconds(1) + chrono::Duration::days(100);
        assert_eq!(rows[0].1.timestamp_micros(), want.timestamp_micros());
        // Comparisons bind portable values.
        let later: i64 = with_conn!(conn, |c| {
            gadgets::table.filter(gadgets::created_at.gt(Portable(base + chrono::Duration::days(150)))).count().get_result(c).await
        })
        .unwrap();
        assert_eq!(later, 2);
        let changed = with_conn!(conn, |c| {
            diesel::update(gadgets::table.filter(gadgets::id.eq(Portable(ids[0]))))
                .set(gadgets::doc.eq(Portable(None::<Value>)))
                .execute(c)
                .await
        })
        .unwrap();
        assert_eq!(changed, 1);
        let nulls: i64 = with_conn!(conn, |c| {
            gadgets::table.filter(gadgets::doc.is_null()).count().get_result(c).await
        })
        .unwrap();
        assert_eq!(nulls, 1);
    }

    async fn migrations_are_embedded_and_idempotent(t) {
        let cfg = t.config();
        let db = Database::connect(&cfg).await.unwrap();
        let first = db.run_migrations(None).await.unwrap();
        assert!(!first.is_empty(), "the library ships migrations");
        let second = db.run_migrations(None).await.unwrap();
        assert!(second.is_empty(), "nothing is pending the second time");
        let mut conn = db.get().await.unwrap();
        for table in ["users", "user_roles", "tokens", "user_settings", "domains"] {
            let sql = format!("SELECT COUNT(*) FROM {table}");
            with_conn!(conn, |c| c.batch_execute(&sql).await).unwrap_or_else(|e| panic!("{table}: {e}"));
        }
    }

    async fn monitoring_counts_queries_and_logs_slow_ones(t) {
        let logs = captured_logs();
        let cfg = t.config().with(|c| { c.db.orm_performance_monitoring = true; c.db.orm_slow_query_threshold = 0.0; });
        let app = test::init_service(gadget_api(&t, cfg).await.app()).await;
        let marker = format!("marker{}", uuid::Uuid::new_v4().simple());
        let resp = test::call_service(&app, test::TestRequest::get().uri(&format!("/marker/{marker}")).to_request()).await;
        assert_eq!(resp.status(), 200);
        let timing = resp.headers().get("server-timing").expect("Server-Timing header").to_str().unwrap().to_owned();
        assert!(timing.starts_with("db;dur="), "{timing}");
        assert!(timing.contains("\"2 queries\""), "{timing}");
        let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
        let line = text.lines().find(|l| l.contains(&marker)).unwrap_or_else(|| panic!("no slow-query log for {marker} in:\n{text}"));
        assert!(line.contains("WARN") && line.contains("slow query") && line.contains("duration_ms"), "{line}");
    }

    async fn health_counts_its_database_probe_in_server_timing(t) {
        let cfg = t.config().with(|c| c.db.orm_performance_monitoring = true);
        let app = test::init_service(gadget_api(&t, cfg).await.app()).await;
        let resp = test::call_service(&app, test::TestRequest::get().uri("/health").to_request()).await;
        assert_eq!(resp.status(), 200);
        let timing = resp.headers().get("server-timing").expect("Server-Timing header").to_str().unwrap().to_owned();
        assert!(timing.contains("\"1 queries\""), "{timing}");
    }

    async fn monitoring_off_adds_nothing(t) {
        let app = test::init_service(gadget_api(&t, t.config()).await.app()).await;
        let resp = test::call_service(&app, test::TestRequest::get().uri("/marker/x").to_request()).await;
        assert_eq!(resp.status(), 200);
        assert!(resp.headers().get("server-timing").is_none());
    }

    async fn openapi_is_labelled_and_documents_health(t) {
        let cfg = t.config().with(|c| { c.http.api_title = "Zoo API".into(); c.http.api_version = "4.5.6".into(); });
        let db = t.open(&cfg).await;
        let app = test::init_service(Api::new(cfg, db).unwrap().app()).await;
        let resp = test::call_service(&app, test::TestRequest::get().uri("/openapi.json").to_request()).await;
        assert_eq!(resp.status(), 200);
        let v: Value = test::read_body_json(resp).await;
        assert_eq!(v["openapi"], "3.0.3");
        assert_eq!(v["info"]["title"], "Zoo API");
        assert_eq!(v["info"]["version"], "4.5.6");
        let op = &v["paths"]["/health"]["get"];
        assert_eq!(op["operationId"], "health");
        assert!(op["responses"]["200"]["content"]["application/json"]["schema"].is_object(), "{op}");
        assert!(v["components"]["schemas"]["HealthStatus"]["properties"]["database"].is_object(), "{v}");
    }

    async fn docs_page_is_served_locally(t) {
        let cfg = t.config().with(|c| c.http.api_title = "Zoo <API>".into());
        let db = t.open(&cfg).await;
        let app = test::init_service(Api::new(cfg, db).unwrap().app()).await;
        let resp = test::call_service(&app, test::TestRequest::get().uri("/docs").to_request()).await;
        assert_eq!(resp.status(), 308);
        assert_eq!(resp.headers().get("location").unwrap(), "/docs/");
        let resp = test::call_service(&app, test::TestRequest::get().uri("/docs/").to_request()).await;
        assert_eq!(resp.status(), 200);
        let html = String::from_utf8(test::read_body(resp).await.to_vec()).unwrap();
        assert!(html.contains("Zoo &lt;API&gt;"), "title must be escaped: {html}");
        assert!(!html.contains("http://") && !html.contains("https://"), "no external assets: {html}");
        for asset in ["/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css"] {
            assert!(html.contains(asset), "{asset} not referenced");
            let resp = test::call_service(&app, test::TestRequest::get().uri(asset).to_request()).await;
            assert_eq!(resp.status(), 200, "{asset}");
            assert!(test::read_body(resp).await.len() > 10_000, "{asset} is not the real asset");
        }
        let resp = test::call_service(&app, test::TestRequest::get().uri("/docs/openapi.json").to_request()).await;
        let body = test::read_body(resp).await;
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["info"]["title"], "Zoo <API>");
    }
}

#[actix_web::test]
async fn health_is_503_when_postgres_is_unreachable() {
    // Port 1 on loopback: nothing listens there, so every connection is refused.
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config::default().with(|c| {
        c.db.database_uri = Some("postgres://postgres@127.0.0.1:1/none".into());
        c.db.data_dir = dir.path().to_owned();
    });
    let db = Database::connect(&cfg).await.unwrap();
    assert!(db.run_migrations(None).await.is_err());
    let app = test::init_service(Api::new(cfg, db).unwrap().app()).await;
    let resp = test::call_service(&app, test::TestRequest::get().uri("/health").to_request()).await;
    assert_eq!(resp.status(), 503);
    let v: Value = test::read_body_json(resp).await;
    assert_eq!(v["status"], "unhealthy");
    assert_eq!(v["database"], "disconnected");
    assert!(v["timestamp"].is_string() && v["version"].is_string());
}

#[actix_web::test]
async fn unsupported_openapi_version_stops_startup() {
    let t = TestDb::sqlite().await;
    let cfg = t.config().with(|c| c.http.openapi_version = "3.1.0".into());
    let db = Database::connect(&t.config()).await.unwrap();
    let err = Api::new(cfg, db).unwrap_err().to_string();
    assert!(
        err.contains("OPENAPI_VERSION") && err.contains("3.0.3"),
        "{err}"
    );
}

#[actix_web::test]
async fn default_database_is_a_sqlite_file_in_the_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config::default().with(|c| c.db.data_dir = dir.path().join("d"));
    let db = Database::connect(&cfg).await.unwrap();
    assert_eq!(db.backend(), Backend::Sqlite);
    db.run_migrations(None).await.unwrap();
    assert!(dir.path().join("d").join("crudforge.db").exists());
    // With no secret configured, the API generates and keeps one.
    let _api = Api::new(cfg, db).unwrap();
    assert!(dir.path().join("d").join("jwt_secret.key").exists());
}

#[actix_web::test]
async fn bad_database_uri_names_the_key() {
    let err =
        crudforge::db::Target::parse(Some("mysql://x"), std::path::Path::new("d")).unwrap_err();
    assert!(err.to_string().contains("ORM_DATABASE_URI"), "{err}");
}

/// A request dropped before it finishes (a client gone away), on a database of `options`.
async fn drop_a_slow_request(options: crudforge::db::DbOptions) -> bool {
    let t = TestDb::sqlite().await;
    let cfg = t.config();
    let db = crudforge::Database::open(t.target(), options)
        .await
        .unwrap();
    db.run_migrations(None).await.unwrap();
    create_gadgets(&db).await;
    let api = Api::new(cfg, db).unwrap().mount(Gadgets).unwrap();
    let app = test::init_service(api.app()).await;
    let req = test::TestRequest::get().uri("/slow").to_request();
    let dropped = tokio::time::timeout(std::time::Duration::from_millis(20), app.call(req)).await;
    let resp = test::call_service(&app, test::TestRequest::get().uri("/health").to_request()).await;
    assert_eq!(resp.status(), 200);
    let resp = test::call_service(
        &app,
        test::TestRequest::get().uri("/marker/after").to_request(),
    )
    .await;
    assert_eq!(resp.status(), 200);
    dropped.is_err()
}

#[actix_web::test]
async fn a_request_dropped_mid_query_neither_panics_nor_breaks_the_pool() {
    // actix-web runs handlers on single-threaded runtimes, like this test. With statements on
    // Tokio's blocking pool, a request whose future is dropped while its SQLite query runs must
    // not panic the worker, and the database must stay usable.
    let options = crudforge::db::DbOptions {
        sqlite_inline: false,
        ..Default::default()
    };
    assert!(
        drop_a_slow_request(options).await,
        "the request should still be running when dropped"
    );
}

#[actix_web::test]
async fn inline_statements_finish_before_a_request_can_be_dropped() {
    // With statements run inline (the default), a statement is never abandoned midway: the
    // slow query completes before the request's future can be dropped, and nothing breaks.
    let options = crudforge::db::DbOptions::default();
    assert!(options.sqlite_inline);
    assert!(
        !drop_a_slow_request(options).await,
        "an inline statement runs to its end within one poll"
    );
}

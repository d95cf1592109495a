//! Named filters and the server's clock on both backends: `now` and `today` in the `filter`
//! expression compared with rows in the past and the future; `scope=name` (several,
//! comma-separated or repeated) ANDed with every other filter and with the owner rule, so it
//! never returns another owner's rows; an unknown name is 400 naming it; a malformed
//! declaration stops the mount; the OpenAPI description lists the names.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use chrono::{Duration, Utc};
use crudforge::perms::OwnerRules;
use crudforge::users;
use crudforge::{with_conn, Api, Resource};
use crudforge_tests::{backend_tests, Backend};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::{json, Value};
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Loans.
    loans (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Owner.
        owner_id -> PortableUuid,
        /// Title.
        title -> Text,
        /// Due time.
        due_at -> PortableTimestamp,
        /// Due day.
        due_day -> Date,
        /// Returned.
        returned_at -> Nullable<PortableTimestamp>,
    }
}

type DateTime = chrono::DateTime<chrono::Utc>;

/// A loan its owner alone reads and writes, with named filters.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = loans)]
#[resource(
    rules = OwnerRules::new("owner_id"),
    scope(overdue = "due_at < now and returned_at is null", due_today = "due_day = today"),
    scope(starts_with_a = "title like 'a%'")
)]
pub struct Loan {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Its owner.
    pub owner_id: Uuid,
    /// Its title.
    pub title: String,
    /// When it is due.
    pub due_at: DateTime,
    /// The day it is due.
    pub due_day: chrono::NaiveDate,
    /// When it came back.
    pub returned_at: Option<DateTime>,
}

/// The same table with a named filter that names no field of it.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = loans)]
#[resource(name = "Broken", scope(broken = "nope = 1"))]
pub struct Broken {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Its owner.
    pub owner_id: Uuid,
    /// Its title.
    pub title: String,
    /// When it is due.
    pub due_at: DateTime,
    /// The day it is due.
    pub due_day: chrono::NaiveDate,
    /// When it came back.
    pub returned_at: Option<DateTime>,
}

struct World {
    api: Api,
    alice: Uuid,
    bob: Uuid,
}

async fn world(t: &crudforge_tests::TestDb) -> World {
    let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
    let db = t.open(&cfg).await;
    let ddl = match db.backend() {
        Backend::Sqlite => "CREATE TABLE loans (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, owner_id TEXT NOT NULL, title TEXT NOT NULL, due_at TEXT NOT NULL, due_day TEXT NOT NULL, returned_at TEXT)",
        Backend::Postgres => "CREATE TABLE loans (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, owner_id UUID NOT NULL, title TEXT NOT NULL, due_at TIMESTAMPTZ NOT NULL, due_day DATE NOT NULL, returned_at TIMESTAMPTZ)",
    };
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(ddl).await).unwrap();
    drop(conn);
    let alice = users::create_user(&db, "alice@example.com", "some-pass", true, 4)
        .await
        .unwrap();
    let bob = users::create_user(&db, "bob@example.com", "some-pass", true, 4)
        .await
        .unwrap();
    let api = Api::new(cfg, db.clone())
        .unwrap()
        .mount(Loan::blueprint("/api/loans/"))
        .unwrap();
    World { api, alice, bob }
}

type Req = test::TestRequest;

fn auth(req: Req, api: &Api, id: Uuid) -> Req {
    req.insert_header((
        "authorization",
        format!("Bearer {}", api.state().tokens.access(id).unwrap()),
    ))
}

async fn send<S, B>(app: &S, req: Req) -> (u16, Value)
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
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// Creates a loan of `who` due `days` from now (and on the day `days` from today).
async fn lend<S, B>(app: &S, w: &World, who: Uuid, title: &str, days: i64, returned: bool)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let now = Utc::now();
    let body = json!({
        "title": title,
        "due_at": (now + Duration::days(days)).to_rfc3339(),
        "due_day": (now.date_naive() + Duration::days(days)).to_string(),
        "returned_at": returned.then(|| (now - Duration::hours(1)).to_rfc3339()),
    });
    let (s, l) = send(
        app,
        auth(Req::post().uri("/api/loans/").set_json(body), &w.api, who),
    )
    .await;
    assert_eq!(s, 201, "{l}");
}

/// The titles of the list at `uri` for `who`, in title order.
async fn titles<S, B>(app: &S, w: &World, who: Uuid, uri: &str) -> Vec<String>
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let sep = if uri.contains('?') { '&' } else { '?' };
    let (s, list) = send(
        app,
        auth(
            Req::get().uri(&format!("{uri}{sep}sort=title")),
            &w.api,
            who,
        ),
    )
    .await;
    assert_eq!(s, 200, "{uri}: {list}");
    let data = list["data"].as_array().unwrap();
    assert_eq!(list["pagination"]["total"], data.len(), "{uri}: {list}");
    data.iter()
        .map(|l| l["title"].as_str().unwrap().to_owned())
        .collect()
}

/// A `filter` expression as a query string.
fn filter(expr: &str) -> String {
    format!(
        "/api/loans/?{}",
        serde_urlencoded::to_string([("filter", expr)]).unwrap()
    )
}

backend_tests! {
    async fn now_and_today_are_the_server_clock(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        lend(&app, &w, w.alice, "past", -2, false).await;
        lend(&app, &w, w.alice, "today", 0, false).await;
        lend(&app, &w, w.alice, "future", 2, false).await;
        for (expr, expected) in [
            ("due_at < now", vec!["past", "today"]),
            ("due_at > now", vec!["future"]),
            ("due_at >= NOW", vec!["future"]),
            ("due_day = today", vec!["today"]),
            ("due_day < today", vec!["past"]),
            ("due_day >= today", vec!["future", "today"]),
            ("due_at >= today and due_at < now", vec!["today"]),
            ("not (due_day = today)", vec!["future", "past"]),
        ] {
            assert_eq!(titles(&app, &w, w.alice, &filter(expr)).await, expected, "{expr}");
        }
        // `now` is a date-time, `today` a day: other kinds refuse them, naming the field.
        for expr in ["due_day = now", "title = now", "title = today", "due_at = yesterday"] {
            let (s, p) = send(&app, auth(Req::get().uri(&filter(expr)), &w.api, w.alice)).await;
            assert_eq!(s, 400, "{expr}: {p}");
            assert_eq!(p["field"], "filter", "{expr}: {p}");
        }
    }

    async fn named_filters_combine_with_every_filter_and_the_owner_rule(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        lend(&app, &w, w.alice, "a-late", -2, false).await;
        lend(&app, &w, w.alice, "b-late-back", -2, true).await;
        lend(&app, &w, w.alice, "a-later", 3, false).await;
        lend(&app, &w, w.alice, "c-today", 0, false).await;
        lend(&app, &w, w.bob, "a-bobs-late", -1, false).await;
        let a = w.alice;
        assert_eq!(titles(&app, &w, a, "/api/loans/?scope=overdue").await, ["a-late", "c-today"]);
        assert_eq!(titles(&app, &w, w.bob, "/api/loans/?scope=overdue").await, ["a-bobs-late"]);
        assert_eq!(titles(&app, &w, a, "/api/loans/?scope=due_today").await, ["c-today"]);
        // Several names, comma-separated or repeated: all of them.
        for uri in ["/api/loans/?scope=overdue,starts_with_a", "/api/loans/?scope=starts_with_a&scope=overdue", "/api/loans/?scope=overdue,%20starts_with_a"] {
            assert_eq!(titles(&app, &w, a, uri).await, ["a-late"], "{uri}");
        }
        // With the other filters, simple and expression; the client's `or` cannot widen it.
        assert_eq!(titles(&app, &w, a, "/api/loans/?scope=starts_with_a&title=a-later").await, ["a-later"]);
        let or = format!("{}&scope=overdue", filter("title = 'zzz' or due_at > now"));
        assert!(titles(&app, &w, a, &or).await.is_empty());
        // The owner rule stays: Bob's overdue loan never shows for Alice, even when asked for.
        let bobs = format!("{}&scope=overdue", filter(&format!("owner_id = '{}' or title like 'a%'", w.bob)));
        assert_eq!(titles(&app, &w, a, &bobs).await, ["a-late"]);
        let bobs = format!("/api/loans/?scope=starts_with_a&owner_id={}", w.bob);
        assert!(titles(&app, &w, a, &bobs).await.is_empty());
        // An unknown name: 400 naming it and the declared ones; anonymous callers get 401 first.
        for uri in ["/api/loans/?scope=late", "/api/loans/?scope=overdue,late", "/api/loans/?scope="] {
            let (s, p) = send(&app, auth(Req::get().uri(uri), &w.api, a)).await;
            assert_eq!(s, 400, "{uri}: {p}");
            assert_eq!(p["field"], "scope", "{p}");
            assert!(p["detail"].as_str().unwrap().contains("`overdue`"), "{p}");
        }
        let (_, p) = send(&app, auth(Req::get().uri("/api/loans/?scope=late"), &w.api, a)).await;
        assert!(p["detail"].as_str().unwrap().contains("`late`"), "{p}");
        assert_eq!(send(&app, Req::get().uri("/api/loans/?scope=overdue")).await.0, 401);
    }

    async fn a_malformed_named_filter_stops_the_mount_and_the_names_are_documented(t) {
        let w = world(&t).await;
        let cfg = t.config();
        let db = t.open(&cfg).await;
        let err = Api::new(cfg, db).unwrap().mount(Broken::blueprint("/api/broken/")).err().unwrap();
        let err = format!("{err}");
        assert!(err.contains("broken") && err.contains("nope"), "{err}");
        let spec: Value = serde_json::from_str(&w.api.openapi_json()).unwrap();
        let params = spec["paths"]["/api/loans/"]["get"]["parameters"].as_array().unwrap();
        let scope = params.iter().find(|p| p["name"] == "scope").unwrap();
        assert_eq!(scope["in"], "query");
        assert_eq!(scope["schema"]["items"]["enum"], json!(["overdue", "due_today", "starts_with_a"]), "{scope}");
        assert!(scope["description"].as_str().unwrap().contains("due_at < now"), "{scope}");
        // The documented parameter answers.
        let (s, p) = {
            let app = test::init_service(w.api.app()).await;
            send(&app, auth(Req::get().uri("/api/loans/?scope=overdue"), &w.api, w.alice)).await
        };
        assert_eq!(s, 200, "{p}");
    }
}

//! Aggregates on both backends (`CrudBlueprint::aggregates`, `GET <prefix>aggregate/`): groups
//! by one and two members and by a timestamp truncated to an hour, day, ISO week or month;
//! every metric; the list's filters, `filter` expression and named filters applied first; an
//! owner-scoped caller's groups count its own rows only; a member the caller may not read is
//! refused as an unknown one; a metric a member does not allow is 400; pages of groups; bad
//! input is a problem; the route exists only where mounted; the description types the answer.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
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

    /// Sightings.
    sightings (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Owner.
        owner_id -> PortableUuid,
        /// Species.
        species -> Text,
        /// Weight.
        weight -> Integer,
        /// Score.
        score -> Nullable<Double>,
        /// When.
        seen_at -> PortableTimestamp,
        /// Alive.
        alive -> Bool,
        /// Staff's secret.
        secret -> Nullable<Text>,
        /// Notes.
        notes -> Nullable<Text>,
    }
}

type DateTime = chrono::DateTime<chrono::Utc>;

/// A sighting: its owner reads and writes it, administrators all.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = sightings)]
#[resource(rules = OwnerRules::new("owner_id"), scope(heavy = "weight >= 10"))]
pub struct Sighting {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Its owner.
    pub owner_id: Uuid,
    /// What was seen.
    pub species: String,
    /// How heavy, in grams.
    pub weight: i32,
    /// How well seen.
    pub score: Option<f64>,
    /// When.
    pub seen_at: DateTime,
    /// Whether alive.
    pub alive: bool,
    /// Administrators only.
    #[resource(read = admin)]
    pub secret: Option<String>,
    /// Never aggregated.
    #[resource(aggregate(none))]
    pub notes: Option<String>,
}

struct World {
    api: Api,
    admin: Uuid,
    alice: Uuid,
    bob: Uuid,
}

async fn world(t: &crudforge_tests::TestDb) -> World {
    let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
    let db = t.open(&cfg).await;
    let ddl = match db.backend() {
        Backend::Sqlite => "CREATE TABLE sightings (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, owner_id TEXT NOT NULL, species TEXT NOT NULL, weight INTEGER NOT NULL, score DOUBLE, seen_at TEXT NOT NULL, alive BOOLEAN NOT NULL, secret TEXT, notes TEXT)",
        Backend::Postgres => "CREATE TABLE sightings (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, owner_id UUID NOT NULL, species TEXT NOT NULL, weight INTEGER NOT NULL, score DOUBLE PRECISION, seen_at TIMESTAMPTZ NOT NULL, alive BOOLEAN NOT NULL, secret TEXT, notes TEXT); SET TIME ZONE 'Asia/Tokyo'; DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET timezone = %L', current_database(), 'Asia/Tokyo'); END $$",
    };
    // On PostgreSQL every session runs in Tokyo's time zone: the truncations and timestamps
    // of the answers must still be UTC's.
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(ddl).await).unwrap();
    drop(conn);
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
        .mount(Sighting::blueprint("/api/sightings/").aggregates())
        .unwrap()
        .mount(Sighting::blueprint("/plain/sightings/"))
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

/// Status, content type and body of a request.
async fn call<S, B>(app: &S, req: Req) -> (u16, String, Value)
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
    let kind = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = test::read_body(resp).await;
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).unwrap()
    };
    (status, kind, body)
}

/// Alice's five sightings and Bob's one; 2026-03-02 is a Monday, 2026-03-08 a Sunday.
async fn seed<S, B>(app: &S, w: &World)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let rows = [
        (w.alice, "cat", 4, json!(1.5), "2026-03-02T10:15:00Z", true),
        (w.alice, "cat", 6, json!(2.5), "2026-03-02T10:45:00Z", false),
        (w.alice, "dog", 20, json!(4.0), "2026-03-08T23:30:00Z", true),
        (
            w.alice,
            "dog",
            30,
            Value::Null,
            "2026-03-09T00:10:00Z",
            true,
        ),
        (w.alice, "owl", 1, json!(3.0), "2026-04-01T00:00:00Z", true),
        (w.bob, "cat", 100, json!(9.0), "2026-03-02T10:20:00Z", true),
    ];
    for (who, species, weight, score, seen_at, alive) in rows {
        let body = json!({"species": species, "weight": weight, "score": score, "seen_at": seen_at, "alive": alive});
        let (s, _, b) = call(
            app,
            auth(
                Req::post().uri("/api/sightings/").set_json(body),
                &w.api,
                who,
            ),
        )
        .await;
        assert_eq!(s, 201, "{b}");
    }
}

/// The groups of an aggregate request by `who`, which must succeed.
async fn groups<S, B>(app: &S, w: &World, who: Uuid, query: &str) -> Vec<Value>
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let uri = format!("/api/sightings/aggregate/?{query}");
    let (s, _, body) = call(app, auth(Req::get().uri(&uri), &w.api, who)).await;
    assert_eq!(s, 200, "{query}: {body}");
    body["groups"].as_array().unwrap().clone()
}

/// The problem of an aggregate request by `who`, which must be refused with `status`.
async fn refused<S, B>(app: &S, w: &World, who: Uuid, query: &str, status: u16) -> Value
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let uri = format!("/api/sightings/aggregate/?{query}");
    let (s, kind, body) = call(app, auth(Req::get().uri(&uri), &w.api, who)).await;
    assert_eq!(s, status, "{query}: {body}");
    assert_eq!(kind, "application/problem+json", "{query}");
    body
}

backend_tests! {
    async fn groups_by_members_with_every_metric_over_the_callers_own_rows(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        seed(&app, &w).await;
        let q = "group_by=species&sum=weight&avg=weight,score&min=weight&max=weight&count_distinct=alive";
        let g = groups(&app, &w, w.alice, q).await;
        assert_eq!(g, vec![
            json!({"species": "cat", "count": 2, "count_distinct_alive": 2, "sum_weight": 10, "avg_weight": 5.0, "avg_score": 2.0, "min_weight": 4, "max_weight": 6}),
            json!({"species": "dog", "count": 2, "count_distinct_alive": 1, "sum_weight": 50, "avg_weight": 25.0, "avg_score": 4.0, "min_weight": 20, "max_weight": 30}),
            json!({"species": "owl", "count": 1, "count_distinct_alive": 1, "sum_weight": 1, "avg_weight": 1.0, "avg_score": 3.0, "min_weight": 1, "max_weight": 1}),
        ]);
        // Bob's groups hold his one row; the administrator's every row.
        let g = groups(&app, &w, w.bob, "group_by=species&sum=weight").await;
        assert_eq!(g, vec![json!({"species": "cat", "count": 1, "sum_weight": 100})]);
        let g = groups(&app, &w, w.admin, "group_by=species&sum=weight").await;
        assert_eq!(g[0], json!({"species": "cat", "count": 3, "sum_weight": 110}));
        // Two members: booleans answer as booleans, false first.
        let g = groups(&app, &w, w.alice, "group_by=species,alive").await;
        assert_eq!(g, vec![
            json!({"species": "cat", "alive": false, "count": 1}),
            json!({"species": "cat", "alive": true, "count": 1}),
            json!({"species": "dog", "alive": true, "count": 2}),
            json!({"species": "owl", "alive": true, "count": 1}),
        ]);
        // No group_by: one group of every row; timestamps in the answer's RFC 3339 form.
        let g = groups(&app, &w, w.alice, "min=seen_at&max=seen_at&sum=score").await;
        assert_eq!(g, vec![json!({"count": 5, "min_seen_at": "2026-03-02T10:15:00Z", "max_seen_at": "2026-04-01T00:00:00Z", "sum_score": 11.0})]);
        // Sorted by a metric, descending; then by the groups.
        let g = groups(&app, &w, w.alice, "group_by=species&sum=weight&sort=-sum_weight").await;
        let order: Vec<&str> = g.iter().map(|x| x["species"].as_str().unwrap()).collect();
        assert_eq!(order, ["dog", "cat", "owl"]);
        let g = groups(&app, &w, w.alice, "group_by=species&sort=-count,-species").await;
        let order: Vec<&str> = g.iter().map(|x| x["species"].as_str().unwrap()).collect();
        assert_eq!(order, ["dog", "cat", "owl"]);
        // Anonymous callers are refused as the list refuses them.
        let (s, _, _) = call(&app, Req::get().uri("/api/sightings/aggregate/?group_by=species")).await;
        assert_eq!(s, 401);
    }

    async fn timestamps_group_by_hour_day_iso_week_and_month_in_utc(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        seed(&app, &w).await;
        let keyed = |g: Vec<Value>| -> Vec<(String, i64)> {
            g.iter().map(|x| (x["seen_at"].as_str().unwrap().to_owned(), x["count"].as_i64().unwrap())).collect()
        };
        let cases: [(&str, Vec<(&str, i64)>); 5] = [
            ("seen_at:hour", vec![("2026-03-02T10:00:00Z", 2), ("2026-03-08T23:00:00Z", 1), ("2026-03-09T00:00:00Z", 1), ("2026-04-01T00:00:00Z", 1)]),
            ("seen_at:day", vec![("2026-03-02T00:00:00Z", 2), ("2026-03-08T00:00:00Z", 1), ("2026-03-09T00:00:00Z", 1), ("2026-04-01T00:00:00Z", 1)]),
            // Weeks start on Monday: Sunday the 8th is in the week of the 2nd.
            ("seen_at:week", vec![("2026-03-02T00:00:00Z", 3), ("2026-03-09T00:00:00Z", 1), ("2026-03-30T00:00:00Z", 1)]),
            ("seen_at:month", vec![("2026-03-01T00:00:00Z", 4), ("2026-04-01T00:00:00Z", 1)]),
            ("seen_at", vec![("2026-03-02T10:15:00Z", 1), ("2026-03-02T10:45:00Z", 1), ("2026-03-08T23:30:00Z", 1), ("2026-03-09T00:10:00Z", 1), ("2026-04-01T00:00:00Z", 1)]),
        ];
        for (group, expected) in cases {
            let got = keyed(groups(&app, &w, w.alice, &format!("group_by={group}")).await);
            let expected: Vec<(String, i64)> = expected.into_iter().map(|(k, n)| (k.to_owned(), n)).collect();
            assert_eq!(got, expected, "{group}");
        }
        // With another member, and sorted newest first.
        let g = groups(&app, &w, w.alice, "group_by=seen_at:month,species&sort=-seen_at").await;
        assert_eq!(g[0], json!({"seen_at": "2026-04-01T00:00:00Z", "species": "owl", "count": 1}));
        assert_eq!(g.len(), 3);
    }

    async fn filters_expressions_and_named_filters_apply_first(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        seed(&app, &w).await;
        let count = |g: Vec<Value>| g[0]["count"].as_i64().unwrap();
        assert_eq!(count(groups(&app, &w, w.alice, "species=cat").await), 2);
        assert_eq!(count(groups(&app, &w, w.alice, "weight__gte=5").await), 3);
        assert_eq!(count(groups(&app, &w, w.alice, "filter=weight%20%3E%3D%205%20and%20species%20%3D%20%27dog%27").await), 2);
        assert_eq!(count(groups(&app, &w, w.alice, "scope=heavy").await), 2);
        assert_eq!(count(groups(&app, &w, w.admin, "scope=heavy").await), 3);
        // Grouped: only the groups of matching rows, an empty page when none match.
        let g = groups(&app, &w, w.alice, "group_by=species&scope=heavy&sum=weight").await;
        assert_eq!(g, vec![json!({"species": "dog", "count": 2, "sum_weight": 50})]);
        assert!(groups(&app, &w, w.alice, "group_by=species&species=zebra").await.is_empty());
        // Ungrouped over no row: one group counting none.
        let g = groups(&app, &w, w.alice, "species=zebra&sum=weight").await;
        assert_eq!(g, vec![json!({"count": 0, "sum_weight": null})]);
    }

    async fn a_hidden_member_is_refused_as_an_unknown_one(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        seed(&app, &w).await;
        // `secret` is the administrators': Alice cannot group, count or filter by it, and the
        // refusal says what it says of a member that does not exist.
        for (param, hidden) in [("group_by", "secret"), ("count_distinct", "secret"), ("min", "secret")] {
            let a = refused(&app, &w, w.alice, &format!("{param}={hidden}"), 400).await;
            let b = refused(&app, &w, w.alice, &format!("{param}=nosuch"), 400).await;
            assert_eq!(a["detail"].as_str().unwrap().replace("secret", "X"), b["detail"].as_str().unwrap().replace("nosuch", "X"), "{param}");
            assert!(!a["detail"].as_str().unwrap().contains("may not read"), "{a}");
        }
        refused(&app, &w, w.alice, "secret=x", 400).await;
        refused(&app, &w, w.alice, "filter=secret%20is%20null", 400).await;
        // The administrator reads it.
        let g = groups(&app, &w, w.admin, "group_by=secret").await;
        assert_eq!(g, vec![json!({"secret": null, "count": 6})]);
        // A member opted out, and metrics a member does not allow.
        for q in ["group_by=notes", "sum=species", "avg=seen_at", "sum=alive", "count_distinct=notes", "min=alive"] {
            refused(&app, &w, w.admin, q, 400).await;
        }
    }

    async fn pages_of_groups_bad_input_and_unmounted_routes(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        seed(&app, &w).await;
        let uri = "/api/sightings/aggregate/?group_by=species&page_size=2";
        let (s, _, body) = call(&app, auth(Req::get().uri(uri), &w.api, w.alice)).await;
        assert_eq!(s, 200, "{body}");
        assert_eq!(body["page"], 1);
        assert_eq!(body["page_size"], 2);
        assert_eq!(body["has_more"], true);
        assert_eq!(body["groups"].as_array().unwrap().len(), 2);
        let uri = "/api/sightings/aggregate/?group_by=species&page_size=2&page=2";
        let (s, _, body) = call(&app, auth(Req::get().uri(uri), &w.api, w.alice)).await;
        assert_eq!(s, 200, "{body}");
        assert_eq!(body["has_more"], false);
        assert_eq!(body["groups"], json!([{"species": "owl", "count": 1}]));
        let (_, _, body) = call(&app, auth(Req::get().uri("/api/sightings/aggregate/"), &w.api, w.alice)).await;
        assert_eq!(body["page_size"], 100);
        for q in [
            "page_size=0", "page_size=1001", "page=0", "group_by=seen_at:year", "group_by=species:day",
            "group_by=species,species", "sort=weight", "group_by=species&sort=sum_weight", "fields=species",
            "cursor=abc", "count=exact", "expand=owner", "nosuch=1", "group_by=a,b,c,d,e,f",
        ] {
            let p = refused(&app, &w, w.alice, q, 400).await;
            assert!(p["detail"].is_string(), "{q}: {p}");
        }
        // Where the blueprint does not offer aggregates, the path is not found.
        let (s, _, _) = call(&app, auth(Req::get().uri("/plain/sightings/aggregate/"), &w.api, w.alice)).await;
        assert_eq!(s, 404);
        // The description types the answer per resource.
        let (s, _, spec) = call(&app, Req::get().uri("/openapi.json")).await;
        assert_eq!(s, 200);
        let op = &spec["paths"]["/api/sightings/aggregate/"]["get"];
        assert_eq!(op["operationId"], "aggregateSighting");
        assert!(spec["paths"]["/plain/sightings/aggregate/"].is_null());
        let names: Vec<&str> = op["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
        for n in ["group_by", "count_distinct", "sum", "avg", "min", "max", "sort", "page", "page_size", "filter", "scope", "species"] {
            assert!(names.contains(&n), "{n} in {names:?}");
        }
        let group = &spec["components"]["schemas"]["SightingAggregateGroup"]["properties"];
        assert_eq!(group["count"]["type"], "integer");
        assert_eq!(group["sum_weight"]["type"], "integer");
        assert_eq!(group["avg_score"]["type"], "number");
        assert_eq!(group["alive"]["type"], "boolean");
        assert!(group["notes"].is_null() && group["sum_species"].is_null(), "{group}");
        let body = serde_json::to_vec(&spec).unwrap();
        if let Err(e) = crudforge_tests::tools::openapi_spec_validator(&body) {
            panic!("openapi-spec-validator rejects the description: {e}");
        }
    }
}

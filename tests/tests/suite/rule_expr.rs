//! Permission rules written as expressions, on both backends: the read rule is the scope of
//! every path that reads (list, count, `GET`, `expand`, filters across a relation), update and
//! delete rules are judged on the stored row, a create rule on the row as stored, and the row an
//! update leaves by the update rule and the create rule it was inside; rules cross
//! relations (one and two levels), apply the related resource's own read rule when they do,
//! know the caller (`@me`, `@role`, `@domains('ROLE')`), anonymous callers and `now`; a
//! misspelt rule fails the mount naming the member.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::crud::Operation;
use crudforge::perms::Expr;
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

    /// Sites.
    sites (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Keeper.
        keeper_id -> Nullable<PortableUuid>,
        /// Name.
        name -> Text,
        /// Hidden.
        hidden -> Bool,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Events.
    events (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Site.
        site_id -> PortableUuid,
        /// Organizer.
        organizer_id -> PortableUuid,
        /// Title.
        title -> Text,
        /// Published.
        published -> Bool,
        /// Start.
        starts_at -> PortableTimestamp,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Tickets.
    tickets (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Event.
        event_id -> PortableUuid,
        /// Holder.
        holder_id -> PortableUuid,
        /// Seat.
        seat -> Integer,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Articles.
    articles (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Domain.
        domain_id -> Nullable<PortableUuid>,
        /// Title.
        title -> Text,
    }
}

type DateTime = chrono::DateTime<chrono::Utc>;

/// An article of a domain (or of none); its rules are given to each blueprint.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = articles)]
pub struct Article {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Its domain.
    pub domain_id: Option<Uuid>,
    /// Its title.
    pub title: String,
}

/// A site: visible unless hidden, to its keeper always; keepers are chosen by administrators.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = sites)]
#[resource(rules(
    read = "hidden = false or keeper_id = @me",
    write = "keeper_id = @me",
    create = "false"
))]
pub struct Site {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Its keeper.
    pub keeper_id: Option<Uuid>,
    /// Its name.
    pub name: String,
    /// Whether only its keeper sees it.
    pub hidden: bool,
}

/// An event: published ones are public, drafts their organizer's; organizers are the
/// ORGANIZER role or the site's keeper.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = events)]
#[resource(rules(
    read = "published = true or organizer_id = @me",
    update = "organizer_id = @me",
    delete = "organizer_id = @me and published = false",
    create = "organizer_id = @me and (site.keeper_id = @me or @role = 'ORGANIZER')"
))]
pub struct Event {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Where.
    #[resource(belongs_to(Site))]
    pub site_id: Uuid,
    /// Who organizes it.
    pub organizer_id: Uuid,
    /// Its title.
    pub title: String,
    /// Whether everyone sees it.
    pub published: bool,
    /// When it starts.
    pub starts_at: DateTime,
}

/// A ticket; its rules are given to the blueprint (see [`ticket_rules`]).
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = tickets)]
pub struct Ticket {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// For which event.
    #[resource(belongs_to(Event))]
    pub event_id: Uuid,
    /// Whose.
    pub holder_id: Uuid,
    /// Which seat.
    pub seat: i32,
}

/// A ticket is its holder's, its event's organizer's and its site's keeper's (two relations
/// away); its holder changes it; holder or organizer delete it; one buys a ticket for oneself,
/// for an event that has not started.
fn ticket_rules() -> Expr {
    Expr::new()
        .read("holder_id = @me or event.organizer_id = @me or event.site.keeper_id = @me")
        .update("holder_id = @me")
        .delete("holder_id = @me or event.organizer_id = @me")
        .create("holder_id = @me and event.starts_at > now")
}

struct World {
    api: Api,
    admin: Uuid,
    /// Organizes events (ORGANIZER).
    alice: Uuid,
    /// Holds tickets.
    bob: Uuid,
    /// Keeps the site.
    carol: Uuid,
    /// Holds a ticket.
    dave: Uuid,
}

async fn world(t: &crudforge_tests::TestDb) -> World {
    let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
    let db = t.open(&cfg).await;
    let ddl = match db.backend() {
        Backend::Sqlite => "CREATE TABLE sites (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, keeper_id TEXT, name TEXT NOT NULL, hidden BOOLEAN NOT NULL); \
             CREATE TABLE events (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, site_id TEXT NOT NULL REFERENCES sites (id), organizer_id TEXT NOT NULL, title TEXT NOT NULL, published BOOLEAN NOT NULL, starts_at TEXT NOT NULL); \
             CREATE TABLE tickets (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, event_id TEXT NOT NULL REFERENCES events (id), holder_id TEXT NOT NULL, seat INTEGER NOT NULL)",
        Backend::Postgres => "CREATE TABLE sites (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, keeper_id UUID, name TEXT NOT NULL, hidden BOOLEAN NOT NULL); \
             CREATE TABLE events (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, site_id UUID NOT NULL REFERENCES sites (id), organizer_id UUID NOT NULL, title TEXT NOT NULL, published BOOLEAN NOT NULL, starts_at TIMESTAMPTZ NOT NULL); \
             CREATE TABLE tickets (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, event_id UUID NOT NULL REFERENCES events (id), holder_id UUID NOT NULL, seat INTEGER NOT NULL)",
    };
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
    users::grant_role(&db, alice, "ORGANIZER", None)
        .await
        .unwrap();
    let bob = user("bob@example.com").await;
    let carol = user("carol@example.com").await;
    let dave = user("dave@example.com").await;
    let api = Api::new(cfg, db.clone())
        .unwrap()
        .mount(Site::blueprint("/api/sites/"))
        .unwrap()
        .mount(Event::blueprint("/api/events/"))
        .unwrap()
        .mount(
            Ticket::blueprint("/api/tickets/")
                .rules(ticket_rules())
                .batch([Operation::Post, Operation::Patch]),
        )
        .unwrap();
    World {
        api,
        admin,
        alice,
        bob,
        carol,
        dave,
    }
}

type Req = test::TestRequest;

/// Sends `req` as `who` (`None`: anonymous): the status and the body.
async fn call<S, B>(app: &S, w: &World, who: Option<Uuid>, req: Req) -> (u16, Value)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let req = match who {
        Some(id) => req.insert_header((
            "authorization",
            format!("Bearer {}", w.api.state().tokens.access(id).unwrap()),
        )),
        None => req,
    };
    let resp = test::call_service(app, req.to_request()).await;
    let status = resp.status().as_u16();
    let body = test::read_body(resp).await;
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).unwrap()
    };
    (status, body)
}

/// The ids of a list's items, in order.
fn ids(v: &Value) -> Vec<String> {
    v["data"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// A row created by `who`; its id.
macro_rules! create {
    ($app:expr, $w:expr, $who:expr, $uri:expr, $body:expr) => {{
        let (s, v) = call(
            &$app,
            &$w,
            Some($who),
            Req::post().uri($uri).set_json($body),
        )
        .await;
        assert_eq!(s, 201, "{v}");
        v["id"].as_str().unwrap().to_owned()
    }};
}

fn later() -> String {
    (chrono::Utc::now() + chrono::Duration::days(30)).to_rfc3339()
}

fn earlier() -> String {
    (chrono::Utc::now() - chrono::Duration::days(30)).to_rfc3339()
}

/// The world's rows: site S (kept by carol), alice's draft E1 and published E2 there, and
/// published E3 that has started; tickets T1 (bob, E1), T2 (bob, E2), T3 (dave, E2).
struct Rows {
    site: String,
    draft: String,
    published: String,
    started: String,
    t1: String,
    t2: String,
    t3: String,
}

async fn rows<S, B>(app: &S, w: &World) -> Rows
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let site = create!(
        app,
        w,
        w.admin,
        "/api/sites/",
        json!({"name": "Hall", "hidden": false, "keeper_id": w.carol})
    );
    let event = |published: bool, starts: String| {
        json!({"site_id": site, "organizer_id": w.alice, "title": "Gig",
               "published": published, "starts_at": starts})
    };
    let draft = create!(app, w, w.alice, "/api/events/", event(false, later()));
    let published = create!(app, w, w.alice, "/api/events/", event(true, later()));
    let started = create!(app, w, w.alice, "/api/events/", event(true, earlier()));
    // Administrators pass every rule: a ticket for bob on alice's draft.
    let ticket = |event: &str, holder: Uuid, seat: i32| json!({"event_id": event, "holder_id": holder, "seat": seat});
    let t1 = create!(app, w, w.admin, "/api/tickets/", ticket(&draft, w.bob, 1));
    let t2 = create!(app, w, w.bob, "/api/tickets/", ticket(&published, w.bob, 2));
    let t3 = create!(
        app,
        w,
        w.dave,
        "/api/tickets/",
        ticket(&published, w.dave, 3)
    );
    Rows {
        site,
        draft,
        published,
        started,
        t1,
        t2,
        t3,
    }
}

backend_tests! {
    async fn the_read_rule_scopes_every_read(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let r = rows(&app, &w).await;
        // List and count: bob sees published events, alice her draft too, anonymous callers
        // the published ones (the rule has a branch without the caller).
        let list = |who| call(&app, &w, who, Req::get().uri("/api/events/"));
        let (s, v) = list(Some(w.bob)).await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(sorted(ids(&v)), sorted(vec![r.published.clone(), r.started.clone()]));
        assert_eq!(v["pagination"]["total"], 2);
        let (_, v) = list(Some(w.alice)).await;
        assert_eq!(v["pagination"]["total"], 3);
        let (s, v) = list(None).await;
        assert_eq!((s, v["pagination"]["total"].clone()), (200, json!(2)), "{v}");
        // GET: the draft is 404 to everyone but its organizer.
        let uri = format!("/api/events/{}", r.draft);
        assert_eq!(call(&app, &w, Some(w.bob), Req::get().uri(&uri)).await.0, 404);
        assert_eq!(call(&app, &w, None, Req::get().uri(&uri)).await.0, 404);
        assert_eq!(call(&app, &w, Some(w.alice), Req::get().uri(&uri)).await.0, 200);
        // Expansion: bob's ticket on the draft embeds no event.
        let (s, v) = call(&app, &w, Some(w.bob), Req::get().uri(&format!("/api/tickets/{}?expand=event", r.t1))).await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(v["event"], Value::Null, "{v}");
        let (_, v) = call(&app, &w, Some(w.bob), Req::get().uri(&format!("/api/tickets/{}?expand=event", r.t2))).await;
        assert_eq!(v["event"]["id"], json!(r.published), "{v}");
        // A filter across the relation finds nothing behind the draft.
        let (s, v) = call(&app, &w, Some(w.bob), Req::get().uri("/api/tickets/?filter=event.published%20%3D%20false")).await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(ids(&v), Vec::<String>::new());
        let (_, v) = call(&app, &w, Some(w.alice), Req::get().uri("/api/tickets/?filter=event.published%20%3D%20false")).await;
        assert_eq!(ids(&v), vec![r.t1.clone()]);
    }

    async fn rules_cross_relations_with_their_read_rules(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let r = rows(&app, &w).await;
        let tickets = |who| call(&app, &w, Some(who), Req::get().uri("/api/tickets/"));
        // One level: the organizer sees every ticket of her events.
        let (_, v) = tickets(w.alice).await;
        assert_eq!(sorted(ids(&v)), sorted(vec![r.t1.clone(), r.t2.clone(), r.t3.clone()]));
        // Holders see their own.
        let (_, v) = tickets(w.dave).await;
        assert_eq!(ids(&v), vec![r.t3.clone()]);
        // Two levels: the site's keeper sees the tickets of its events, but not through the
        // draft, which the event's own read rule hides from her.
        let (_, v) = tickets(w.carol).await;
        assert_eq!(sorted(ids(&v)), sorted(vec![r.t2.clone(), r.t3.clone()]));
        let (s, _) = call(&app, &w, Some(w.carol), Req::get().uri(&format!("/api/tickets/{}", r.t1))).await;
        assert_eq!(s, 404);
        // GET through a crossing: the organizer reads T1, the keeper T3.
        let (s, v) = call(&app, &w, Some(w.alice), Req::get().uri(&format!("/api/tickets/{}", r.t1))).await;
        assert_eq!((s, &v["id"]), (200, &json!(r.t1)), "{v}");
        let (s, v) = call(&app, &w, Some(w.carol), Req::get().uri(&format!("/api/tickets/{}", r.t3))).await;
        assert_eq!((s, &v["id"]), (200, &json!(r.t3)), "{v}");
        // Counted through the crossing too, and filterable through it.
        let (_, v) = call(&app, &w, Some(w.carol), Req::get().uri("/api/tickets/?filter=seat%20%3E%202")).await;
        assert_eq!((ids(&v), &v["pagination"]["total"]), (vec![r.t3.clone()], &json!(1)));
        // Once the site is hidden from everyone but its keeper, nothing changes for her; once
        // she no longer keeps it, its tickets are out of her reach.
        let (s, v) = call(&app, &w, Some(w.admin), Req::patch().uri(&format!("/api/sites/{}", r.site)).set_json(json!({"hidden": true}))).await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(ids(&tickets(w.carol).await.1).len(), 2);
        let (s, v) = call(&app, &w, Some(w.admin), Req::patch().uri(&format!("/api/sites/{}", r.site)).set_json(json!({"keeper_id": w.bob}))).await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(ids(&tickets(w.carol).await.1), Vec::<String>::new());
    }

    async fn update_and_delete_rules_judge_the_stored_row(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let r = rows(&app, &w).await;
        let patch = |who, id: &str| {
            call(&app, &w, Some(who), Req::patch().uri(&format!("/api/tickets/{id}")).set_json(json!({"seat": 9})))
        };
        // The organizer reads the ticket but may not change it (403); a stranger does not
        // see it (404); its holder changes it.
        assert_eq!(patch(w.alice, &r.t2).await.0, 403);
        assert_eq!(patch(w.dave, &r.t2).await.0, 404);
        let (s, v) = patch(w.bob, &r.t2).await;
        assert_eq!((s, v["seat"].clone()), (200, json!(9)), "{v}");
        // Delete has its own rule: the organizer deletes a ticket of her event.
        let delete = |who, uri: String| call(&app, &w, Some(who), Req::delete().uri(&uri));
        assert_eq!(delete(w.bob, format!("/api/tickets/{}", r.t3)).await.0, 404);
        assert_eq!(delete(w.alice, format!("/api/tickets/{}", r.t3)).await.0, 204);
        // ... and an event only while it is a draft.
        assert_eq!(delete(w.alice, format!("/api/events/{}", r.published)).await.0, 403);
        let (s, v) = call(&app, &w, Some(w.alice), Req::patch().uri(&format!("/api/events/{}", r.published)).set_json(json!({"published": false}))).await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(delete(w.alice, format!("/api/events/{}", r.started)).await.0, 403);
        // The ticket still points at the event: delete it first.
        assert_eq!(delete(w.bob, format!("/api/tickets/{}", r.t2)).await.0, 204);
        assert_eq!(delete(w.alice, format!("/api/events/{}", r.published)).await.0, 204);
        // Anonymous callers: no rule lets them write.
        let (s, _) = call(&app, &w, None, Req::patch().uri(&format!("/api/tickets/{}", r.t1)).set_json(json!({"seat": 1}))).await;
        assert_eq!(s, 401);
    }

    async fn create_rules_judge_the_row_as_stored(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let r = rows(&app, &w).await;
        let count = async |who| {
            let (_, v) = call(&app, &w, Some(who), Req::get().uri("/api/tickets/")).await;
            v["pagination"]["total"].as_i64().unwrap()
        };
        let before = count(w.admin).await;
        let post = |who, body: Value| call(&app, &w, Some(who), Req::post().uri("/api/tickets/").set_json(body));
        // A hidden parent is the same 422 as one that does not exist.
        let (s, v) = post(w.dave, json!({"event_id": r.draft, "holder_id": w.dave, "seat": 5})).await;
        assert_eq!(s, 422, "{v}");
        let (s2, v2) = post(w.dave, json!({"event_id": Uuid::new_v4(), "holder_id": w.dave, "seat": 5})).await;
        assert_eq!((s2, &v2["detail"]), (422, &v["detail"]));
        // Someone else's ticket: 403, and nothing is stored.
        let (s, v) = post(w.dave, json!({"event_id": r.published, "holder_id": w.bob, "seat": 5})).await;
        assert_eq!(s, 403, "{v}");
        // `now`: an event that has started sells no ticket.
        let (s, v) = post(w.dave, json!({"event_id": r.started, "holder_id": w.dave, "seat": 5})).await;
        assert_eq!(s, 403, "{v}");
        assert_eq!(count(w.admin).await, before);
        // Anonymous callers: 401.
        let (s, _) = call(&app, &w, None, Req::post().uri("/api/tickets/").set_json(json!({"event_id": r.published, "holder_id": w.dave, "seat": 5}))).await;
        assert_eq!(s, 401);
        // Batch creation is judged item by item, all or nothing.
        let (s, v) = call(&app, &w, Some(w.dave), Req::post().uri("/api/tickets/batch/").set_json(json!({"items": [
            {"event_id": r.published, "holder_id": w.dave, "seat": 6},
            {"event_id": r.published, "holder_id": w.bob, "seat": 7},
        ]}))).await;
        assert_eq!(s, 403, "{v}");
        assert_eq!(count(w.admin).await, before);
        let (s, v) = post(w.dave, json!({"event_id": r.published, "holder_id": w.dave, "seat": 5})).await;
        assert_eq!(s, 201, "{v}");
    }

    async fn roles_and_relations_in_a_create_rule(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let r = rows(&app, &w).await;
        let event = |organizer: Uuid| {
            json!({"site_id": r.site, "organizer_id": organizer, "title": "Talk",
                   "published": false, "starts_at": later()})
        };
        let post = |who, body| call(&app, &w, Some(who), Req::post().uri("/api/events/").set_json(body));
        // dave neither holds ORGANIZER nor keeps the site.
        assert_eq!(post(w.dave, event(w.dave)).await.0, 403);
        // carol keeps the site (a relation of the row as stored).
        assert_eq!(post(w.carol, event(w.carol)).await.0, 201);
        // alice holds ORGANIZER, but organizes only as herself.
        assert_eq!(post(w.alice, event(w.bob)).await.0, 403);
        assert_eq!(post(w.alice, event(w.alice)).await.0, 201);
        // `create = "false"`: only administrators create sites.
        let (s, _) = call(&app, &w, Some(w.carol), Req::post().uri("/api/sites/").set_json(json!({"name": "X", "hidden": false}))).await;
        assert_eq!(s, 403);
        let (s, _) = call(&app, &w, None, Req::post().uri("/api/sites/").set_json(json!({"name": "X", "hidden": false}))).await;
        assert_eq!(s, 401);
    }

    async fn anonymous_callers(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let r = rows(&app, &w).await;
        // A rule that needs the caller refuses anonymous ones (401), one that does not lets
        // them read what it allows.
        assert_eq!(call(&app, &w, None, Req::get().uri("/api/tickets/")).await.0, 401);
        assert_eq!(call(&app, &w, None, Req::get().uri(&format!("/api/tickets/{}", r.t2))).await.0, 401);
        let (s, v) = call(&app, &w, None, Req::get().uri(&format!("/api/events/{}", r.published))).await;
        assert_eq!(s, 200, "{v}");
        let (s, v) = call(&app, &w, None, Req::get().uri("/api/sites/")).await;
        assert_eq!((s, ids(&v)), (200, vec![r.site.clone()]));
    }

    async fn misspelt_rules_fail_the_mount(t) {
        let cfg = t.config();
        let db = t.open(&cfg).await;
        for (rules, want) in [
            (Expr::new().read("holder = @me"), "`holder` is not a filterable field"),
            (Expr::new().update("event.organizer = @me"), "`organizer` (in `event.organizer`) of the relation `event` is not a filterable field"),
            (Expr::new().delete("event.site.nope.keeper_id = @me"), "`event.site.nope.keeper_id` does not follow the declared relations"),
            (Expr::new().create("seat = 'x'"), "expected a number for `seat`"),
            (Expr::new().read("seat = @me"), "`@me` is a UUID"),
            (Expr::new().read("holder_id = @you"), "`@you` is not a caller value"),
        ] {
            let err = Api::new(cfg.clone(), db.clone())
                .unwrap()
                .mount(Ticket::blueprint("/api/tickets/").rules(rules))
                .err()
                .unwrap()
                .to_string();
            assert!(err.contains(want), "{want}: {err}");
            assert!(err.contains("help:"), "{err}");
        }
    }

    async fn now_in_a_rule_is_the_time_of_each_request(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let r = rows(&app, &w).await;
        // An event that starts in two seconds: bob buys a ticket before (which compiles the
        // rule), and dave tries after it has started.
        let soon = chrono::Utc::now() + chrono::Duration::seconds(2);
        let event = json!({"site_id": r.site, "organizer_id": w.alice, "title": "Soon",
                           "published": true, "starts_at": soon.to_rfc3339()});
        let soon_id = create!(app, w, w.alice, "/api/events/", event);
        let ticket = |holder: Uuid| json!({"event_id": soon_id, "holder_id": holder, "seat": 9});
        let _bought = create!(app, w, w.bob, "/api/tickets/", ticket(w.bob));
        while chrono::Utc::now() <= soon + chrono::Duration::milliseconds(100) {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let (s, v) = call(&app, &w, Some(w.dave), Req::post().uri("/api/tickets/").set_json(ticket(w.dave))).await;
        assert_eq!(s, 403, "a ticket for an event that has started: {v}");
    }

    async fn each_sentence_admits_exactly_the_callers_the_server_lets_in(t) {
        use crudforge_tests::callers::{probes, refused, CALLERS};
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let (_, spec) = call(&app, &w, None, Req::get().uri("/openapi.json")).await;
        let probes = probes(&spec);
        // Sites, events and tickets: each operation and the tickets' batches.
        assert!(probes.len() >= 15, "{probes:?}");
        for p in &probes {
            for (who, (admitted, name)) in [None, Some(w.dave), Some(w.admin)].into_iter().zip(p.admits.into_iter().zip(CALLERS)) {
                let req = Req::default().method(p.method.parse().unwrap()).uri(&p.url);
                let req = if matches!(p.method.as_str(), "POST" | "PATCH") { req.set_json(json!({})) } else { req };
                let (s, v) = call(&app, &w, who, req).await;
                assert_eq!(!refused(s), admitted, "{} {} as {name}: {s} {v}\nthe description says: {}", p.method, p.url, p.sentence);
            }
        }
    }

    async fn the_description_states_the_rules_it_enforces(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let (s, spec) = call(&app, &w, None, Req::get().uri("/openapi.json")).await;
        assert_eq!(s, 200);
        let said = |path: &str, method: &str| {
            spec["paths"][path][method]["description"].as_str().unwrap_or_else(|| panic!("{method} {path}: {spec}")).to_owned()
        };
        // `read = "published = true or organizer_id = @me"`: the organizer's own drafts too.
        let list = said("/api/events/", "get");
        assert!(list.contains("Who may call: anyone, signed in or not, on the items where `published` is true; signed-in users on the items where (`published` is true or `organizer_id` is the caller's id); administrators on every item."), "{list}");
        // A crossing says what it asks of the related row, not only that it is readable.
        let tickets = said("/api/tickets/", "get");
        assert!(tickets.contains("a `event` the caller may read, of which `organizer_id` is the caller's id"), "{tickets}");
        assert!(tickets.contains("a `event` the caller may read, of which a `site` the caller may read, of which `keeper_id` is the caller's id"), "{tickets}");
        // The create rule, judged on the stored row, with the clock as a word, not the time
        // the description was made.
        let buy = said("/api/tickets/", "post");
        assert!(buy.contains("for a signed-in user, what it creates must be an item where `holder_id` is the caller's id and a `event` the caller may read, of which `starts_at` is greater than the current time"), "{buy}");
        let organize = said("/api/events/", "post");
        assert!(organize.contains("for a signed-in user, what it creates must be an item where `organizer_id` is the caller's id and a `site` the caller may read, of which `keeper_id` is the caller's id"), "{organize}");
        // `@role = 'ORGANIZER'` frees the role's holders from keeping the site: said too.
        assert!(organize.contains("; for a holder of the role `ORGANIZER`, what it creates must be an item where `organizer_id` is the caller's id."), "{organize}");
        // `create = "false"` leaves sites to administrators.
        assert!(said("/api/sites/", "post").starts_with("Who may call: administrators only."));
    }

    async fn an_update_is_judged_on_the_row_it_leaves(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let r = rows(&app, &w).await;
        let ticket = async |id: &str| {
            let (s, v) = call(&app, &w, Some(w.admin), Req::get().uri(&format!("/api/tickets/{id}"))).await;
            assert_eq!(s, 200, "{v}");
            v
        };
        let before = ticket(&r.t2).await;
        let patch = |who, id: &str, body: Value| {
            call(&app, &w, Some(who), Req::patch().uri(&format!("/api/tickets/{id}")).set_json(body))
        };
        // `update = "holder_id = @me"`: bob may not hand his ticket to dave.
        let (s, v) = patch(w.bob, &r.t2, json!({"holder_id": w.dave})).await;
        assert_eq!(s, 403, "{v}");
        assert!(v["detail"].as_str().unwrap().contains("outside what you may change"), "{v}");
        assert_eq!(ticket(&r.t2).await, before);
        // `create = "... event.starts_at > now"`: nor move it to an event that has started.
        let (s, v) = patch(w.bob, &r.t2, json!({"event_id": r.started, "seat": 8})).await;
        assert_eq!(s, 403, "{v}");
        assert!(v["detail"].as_str().unwrap().contains("not allowed to create"), "{v}");
        assert_eq!(ticket(&r.t2).await, before);
        // The batch form judges each item's row the same way, all or nothing.
        let (s, v) = call(&app, &w, Some(w.bob), Req::patch().uri("/api/tickets/batch/").set_json(json!({"items": [
            {"id": r.t1, "changes": {"seat": 5}},
            {"id": r.t2, "changes": {"holder_id": w.dave}},
        ]}))).await;
        assert_eq!(s, 403, "{v}");
        assert_eq!(ticket(&r.t2).await, before);
        assert_eq!(ticket(&r.t1).await["seat"], 1);
        // A change that keeps the row inside both rules passes, one by one and in a batch.
        let (s, v) = patch(w.bob, &r.t2, json!({"seat": 8})).await;
        assert_eq!((s, &v["seat"]), (200, &json!(8)), "{v}");
        let (s, v) = call(&app, &w, Some(w.bob), Req::patch().uri("/api/tickets/batch/").set_json(json!({"items": [
            {"id": r.t1, "changes": {"seat": 5}},
            {"id": r.t2, "changes": {"seat": 6}},
        ]}))).await;
        assert_eq!(s, 200, "{v}");
        // T1 is on a draft bob cannot read, so outside the create rule already: he still
        // changes its seat (a row the create rule never allowed need not stay in it).
        assert_eq!(ticket(&r.t1).await["seat"], 5);
        // Administrators pass every rule.
        let (s, v) = patch(w.admin, &r.t2, json!({"holder_id": w.dave, "event_id": r.started})).await;
        assert_eq!((s, &v["holder_id"]), (200, &json!(w.dave)), "{v}");
    }

    async fn domains_of_a_named_role(t) {
        let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
        let db = t.open(&cfg).await;
        let ddl = match db.backend() {
            Backend::Sqlite => "CREATE TABLE articles (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, domain_id TEXT, title TEXT NOT NULL)",
            Backend::Postgres => "CREATE TABLE articles (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, domain_id UUID, title TEXT NOT NULL)",
        };
        let mut conn = db.get().await.unwrap();
        with_conn!(conn, |c| c.batch_execute(ddl).await).unwrap();
        let mut domain = async |name: &str| {
            let input: <users::Domain as Resource>::Create =
                serde_json::from_value(json!({ "name": name })).unwrap();
            users::Domain::insert(&mut conn, input).await.unwrap().id
        };
        let (a, b) = (domain("a").await, domain("b").await);
        drop(conn);
        let user = async |email: &str| users::create_user(&db, email, "some-pass", true, 4).await.unwrap();
        let admin = user("admin@example.com").await;
        users::grant_role(&db, admin, "ADMIN", None).await.unwrap();
        // Eve edits domain A and only views domain B; Gus edits every domain.
        let eve = user("eve@example.com").await;
        users::grant_role(&db, eve, "EDITOR", Some(a)).await.unwrap();
        users::grant_role(&db, eve, "VIEWER", Some(b)).await.unwrap();
        let gus = user("gus@example.com").await;
        users::grant_role(&db, gus, "EDITOR", None).await.unwrap();
        let api = Api::new(cfg, db.clone())
            .unwrap()
            .mount(Article::blueprint("/api/articles/").rules(Expr::new().update("domain_id in @domains('EDITOR')").create("false")))
            .unwrap()
            // The pitfall: the role and the domains are judged apart.
            .mount(Article::blueprint("/api/loose/").rules(Expr::new().update("@role = 'EDITOR' and domain_id in @domains").create("false")))
            .unwrap();
        // `call` takes the tokens from a `World`; the ticket world's names are not used here.
        let w = World { api, admin, alice: eve, bob: gus, carol: eve, dave: gus };
        let app = test::init_service(w.api.app()).await;
        let in_a = create!(app, w, admin, "/api/articles/", json!({"domain_id": a, "title": "A"}));
        let in_b = create!(app, w, admin, "/api/articles/", json!({"domain_id": b, "title": "B"}));
        let nowhere = create!(app, w, admin, "/api/articles/", json!({"domain_id": null, "title": "-"}));
        let patch = |who, prefix: &str, id: &str, body: Value| {
            call(&app, &w, Some(who), Req::patch().uri(&format!("{prefix}{id}")).set_json(body))
        };
        let edit = async |who, prefix: &str, id: &str| {
            patch(who, prefix, id, json!({"title": "edited"})).await.0
        };
        // Eve edits A's article, not B's (which she reads: 403), nor one of no domain.
        assert_eq!(edit(eve, "/api/articles/", &in_a).await, 200);
        assert_eq!(edit(eve, "/api/articles/", &in_b).await, 403);
        assert_eq!(edit(eve, "/api/articles/", &nowhere).await, 403);
        // Nor may she move A's article into B.
        let (s, v) = patch(eve, "/api/articles/", &in_a, json!({"domain_id": b})).await;
        assert_eq!(s, 403, "{v}");
        // `@role = 'EDITOR' and domain_id in @domains` lets her edit B's: her VIEWER grant
        // puts B among her domains, and she is an EDITOR somewhere.
        assert_eq!(edit(eve, "/api/loose/", &in_b).await, 200);
        // An EDITOR granted without a domain edits every domain's articles, not one of none.
        assert_eq!(edit(gus, "/api/articles/", &in_a).await, 200);
        assert_eq!(edit(gus, "/api/articles/", &in_b).await, 200);
        assert_eq!(edit(gus, "/api/articles/", &nowhere).await, 403);
    }
}

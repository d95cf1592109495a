//! Server-set and create-only members on both backends: a member declared `set = me`,
//! `set = now` or `set = path::to::function` is filled by the server before the rules, the
//! validators and the hooks see the row, and refused (422 naming it, nothing written) from every
//! client, on create, update and their batch forms; a `create_only` member is accepted on
//! create and refused on update (PATCH and batch PATCH); the OpenAPI request bodies leave out
//! what a client never sends, the members the blueprint's rules fill (`server_fields`) included,
//! and their `required` lists what a client must send.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::auth::CurrentUser;
use crudforge::crud::{HookCtx, Operation};
use crudforge::perms::{Open, OwnerRules, Rules};
use crudforge::users;
use crudforge::{with_conn, Api, Error, Resource};
use crudforge_tests::http::send as call;
use crudforge_tests::{backend_tests, Backend};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::{json, Map, Value};
use uuid::Uuid;

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
        /// Holder.
        holder_id -> PortableUuid,
        /// Sold at.
        sold_at -> PortableTimestamp,
        /// Channel.
        channel -> Text,
        /// Event.
        event_id -> PortableUuid,
        /// Seat.
        seat -> Text,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Guestbook entries.
    entries (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Author.
        author_id -> Nullable<PortableUuid>,
        /// Text.
        body -> Text,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Memos.
    memos (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Owner.
        owner_id -> PortableUuid,
        /// Text.
        body -> Text,
    }
}

type DateTime = chrono::DateTime<chrono::Utc>;

/// A ticket: its holder, sale time and channel set by the server, its event chosen once.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = tickets)]
#[resource(rules = TicketRules)]
pub struct Ticket {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Who holds it: the caller who bought it.
    #[resource(set = me)]
    pub holder_id: Uuid,
    /// When it was sold.
    #[resource(set = now)]
    pub sold_at: DateTime,
    /// Where it was sold.
    #[resource(set = sales_channel, max_len = 20)]
    pub channel: String,
    /// The event it admits to, chosen when it is bought.
    #[resource(create_only)]
    pub event_id: Uuid,
    /// The seat.
    #[resource(min_len = 1, max_len = 10)]
    pub seat: String,
}

/// The channel of a sale: the box office when the request says so.
fn sales_channel(ctx: &HookCtx) -> String {
    if ctx.flag("box_office") {
        "box office".to_owned()
    } else {
        "web".to_owned()
    }
}

/// Signed-in users; a create is judged on the row with its holder filled in.
#[derive(Debug, Clone, Copy)]
pub struct TicketRules;

impl Rules<Ticket> for TicketRules {
    fn create(
        &self,
        user: Option<&CurrentUser>,
        body: &mut Map<String, Value>,
    ) -> Result<(), Error> {
        let u = user.ok_or_else(|| Error::Unauthorized("Authentication required.".into()))?;
        if body.get("holder_id") != Some(&Value::String(u.id.to_string())) {
            return Err(Error::Forbidden("The rules saw no holder.".into()));
        }
        Ok(())
    }
}

/// A guestbook entry anyone writes; the author is the caller when there is one.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = entries)]
#[resource(rules = Open)]
pub struct Entry {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Who wrote it (null when anonymous).
    #[resource(set = me)]
    pub author_id: Option<Uuid>,
    /// What it says.
    pub body: String,
}

/// A memo owned by its creator through the library's `OwnerRules`.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = memos)]
#[resource(rules = OwnerRules::new("owner_id"))]
pub struct Memo {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Its owner, set by the rules.
    pub owner_id: Uuid,
    /// What it says.
    pub body: String,
}

struct World {
    api: Api,
    admin: Uuid,
    alice: Uuid,
}

async fn world(t: &crudforge_tests::TestDb) -> World {
    let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
    let db = t.open(&cfg).await;
    let ddl = match db.backend() {
        Backend::Sqlite => {
            "CREATE TABLE tickets (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, holder_id TEXT NOT NULL, sold_at TEXT NOT NULL, channel TEXT NOT NULL, event_id TEXT NOT NULL, seat TEXT NOT NULL);
             CREATE TABLE entries (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, author_id TEXT, body TEXT NOT NULL);
             CREATE TABLE memos (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, owner_id TEXT NOT NULL, body TEXT NOT NULL);"
        }
        Backend::Postgres => {
            "CREATE TABLE tickets (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, holder_id UUID NOT NULL, sold_at TIMESTAMPTZ NOT NULL, channel TEXT NOT NULL, event_id UUID NOT NULL, seat TEXT NOT NULL);
             CREATE TABLE entries (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, author_id UUID, body TEXT NOT NULL);
             CREATE TABLE memos (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, owner_id UUID NOT NULL, body TEXT NOT NULL);"
        }
    };
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(ddl).await).unwrap();
    drop(conn);
    let admin = users::create_user(&db, "admin@example.com", "some-pass", true, 4)
        .await
        .unwrap();
    users::grant_role(&db, admin, "ADMIN", None).await.unwrap();
    let alice = users::create_user(&db, "alice@example.com", "some-pass", true, 4)
        .await
        .unwrap();
    let api = Api::new(cfg, db)
        .unwrap()
        .mount(
            Ticket::blueprint("/api/tickets/")
                .batch([Operation::Post, Operation::Patch])
                .before_create(|ctx: HookCtx, input: TicketCreate| async move {
                    // The hooks see the members the server set.
                    let holder = ctx.user.as_ref().map(|u| u.id);
                    if Some(input.holder_id) != holder || input.channel.is_empty() {
                        return Err(Error::Forbidden("The hook saw no holder.".into()));
                    }
                    Ok(input)
                }),
        )
        .unwrap()
        .mount(Entry::blueprint("/api/entries/"))
        .unwrap()
        .mount(Memo::blueprint("/api/memos/").batch([Operation::Post, Operation::Patch]))
        .unwrap();
    World { api, admin, alice }
}

type Req = test::TestRequest;

fn auth(req: Req, api: &Api, id: Uuid) -> Req {
    req.insert_header((
        "authorization",
        format!("Bearer {}", api.state().tokens.access(id).unwrap()),
    ))
}

/// How many rows `table` holds.
async fn rows(api: &Api, table: &str) -> i64 {
    #[derive(QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let q = format!("SELECT COUNT(*) AS n FROM {table}");
    let mut conn = api.db().get().await.unwrap();
    let n: N = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(diesel::sql_query(q), c).await
    })
    .unwrap();
    n.n
}

/// A problem's 422 naming `member` (directly or within a batch item).
fn names(p: &Value, member: &str) -> bool {
    let text = p.to_string();
    text.contains(&format!("\"{member}\"")) || text.contains(&format!("`{member}`"))
}

backend_tests! {
    async fn the_server_fills_its_members_before_rules_validators_and_hooks(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let event = Uuid::new_v4();
        let before = chrono::Utc::now() - chrono::Duration::seconds(1);
        let body = json!({"event_id": event, "seat": "A1"});
        let (s, ticket) = call(&app, auth(Req::post().uri("/api/tickets/").set_json(&body), &w.api, w.alice)).await;
        assert_eq!(s, 201, "{ticket}");
        assert_eq!(ticket["holder_id"], w.alice.to_string());
        assert_eq!(ticket["channel"], "web");
        assert_eq!(ticket["event_id"], event.to_string());
        let sold: DateTime = ticket["sold_at"].as_str().unwrap().parse().unwrap();
        assert!(sold >= before && sold <= chrono::Utc::now(), "{ticket}");
        // The function sees the request: its query string here.
        let (s, ticket) = call(&app, auth(Req::post().uri("/api/tickets/?box_office=true").set_json(&body), &w.api, w.admin)).await;
        assert_eq!(s, 201, "{ticket}");
        assert_eq!((ticket["holder_id"].clone(), ticket["channel"].clone()), (json!(w.admin.to_string()), json!("box office")));
        // The batch form fills each item.
        let items = json!({"items": [{"event_id": event, "seat": "B1"}, {"event_id": event, "seat": "B2"}]});
        let (s, batch) = call(&app, auth(Req::post().uri("/api/tickets/batch/").set_json(items), &w.api, w.alice)).await;
        assert_eq!(s, 201, "{batch}");
        for item in batch["data"].as_array().unwrap() {
            assert_eq!(item["holder_id"], w.alice.to_string(), "{batch}");
            assert_eq!(item["channel"], "web", "{batch}");
        }
        // Anonymous callers: a non-null `set = me` member needs one (401, nothing written);
        // a nullable one is null.
        assert_eq!(rows(&w.api, "tickets").await, 4);
        let (s, p) = call(&app, Req::post().uri("/api/tickets/").set_json(&body)).await;
        assert_eq!(s, 401, "{p}");
        assert_eq!(rows(&w.api, "tickets").await, 4);
        let (s, entry) = call(&app, Req::post().uri("/api/entries/").set_json(json!({"body": "hi"}))).await;
        assert_eq!(s, 201, "{entry}");
        assert_eq!(entry["author_id"], Value::Null);
        let (s, entry) = call(&app, auth(Req::post().uri("/api/entries/").set_json(json!({"body": "hi"})), &w.api, w.alice)).await;
        assert_eq!(s, 201, "{entry}");
        assert_eq!(entry["author_id"], w.alice.to_string());
    }

    async fn a_client_sending_a_server_set_member_gets_422_and_nothing_is_written(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let event = Uuid::new_v4();
        let sent = [
            ("holder_id", json!(w.alice)),
            ("sold_at", json!("2020-01-01T00:00:00Z")),
            ("channel", json!("web")),
        ];
        // Administrators neither: the server always sets these.
        for who in [w.alice, w.admin] {
            for (member, value) in &sent {
                let mut body = json!({"event_id": event, "seat": "A1"});
                body[*member] = value.clone();
                let (s, p) = call(&app, auth(Req::post().uri("/api/tickets/").set_json(&body), &w.api, who)).await;
                assert_eq!(s, 422, "{member}: {p}");
                assert_eq!(p["field"], *member, "{p}");
                assert!(p["detail"].as_str().unwrap().contains("set by the server"), "{p}");
                let items = json!({"items": [{"event_id": event, "seat": "A2"}, body]});
                let (s, p) = call(&app, auth(Req::post().uri("/api/tickets/batch/").set_json(items), &w.api, who)).await;
                assert_eq!(s, 422, "{member}: {p}");
                assert!(names(&p, member), "{p}");
            }
        }
        let (s, p) = call(&app, Req::post().uri("/api/entries/").set_json(json!({"body": "hi", "author_id": w.alice}))).await;
        assert_eq!((s, p["field"].clone()), (422, json!("author_id")), "{p}");
        assert_eq!(rows(&w.api, "tickets").await, 0);
        assert_eq!(rows(&w.api, "entries").await, 0);
        // On update too, with the same answer.
        let (s, ticket) = call(&app, auth(Req::post().uri("/api/tickets/").set_json(json!({"event_id": event, "seat": "A1"})), &w.api, w.alice)).await;
        assert_eq!(s, 201, "{ticket}");
        let item = format!("/api/tickets/{}", ticket["id"].as_str().unwrap());
        for who in [w.alice, w.admin] {
            for (member, value) in &sent {
                let (s, p) = call(&app, auth(Req::patch().uri(&item).set_json(json!({ *member: value, "seat": "Z9" })), &w.api, who)).await;
                assert_eq!(s, 422, "{member}: {p}");
                assert_eq!(p["field"], *member, "{p}");
                let items = json!({"items": [{"id": ticket["id"], "changes": { *member: value }}]});
                let (s, p) = call(&app, auth(Req::patch().uri("/api/tickets/batch/").set_json(items), &w.api, who)).await;
                assert_eq!(s, 422, "{member}: {p}");
                assert!(names(&p, member), "{p}");
            }
        }
        let (s, now) = call(&app, auth(Req::get().uri(&item), &w.api, w.alice)).await;
        assert_eq!(s, 200);
        assert_eq!(now, ticket, "nothing changed");
    }

    async fn a_create_only_member_is_accepted_on_create_and_refused_on_update(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let (event, other) = (Uuid::new_v4(), Uuid::new_v4());
        // Required on create, as any non-null member without a default.
        let (s, p) = call(&app, auth(Req::post().uri("/api/tickets/").set_json(json!({"seat": "A1"})), &w.api, w.alice)).await;
        assert_eq!(s, 422, "{p}");
        let (s, ticket) = call(&app, auth(Req::post().uri("/api/tickets/").set_json(json!({"event_id": event, "seat": "A1"})), &w.api, w.alice)).await;
        assert_eq!(s, 201, "{ticket}");
        let item = format!("/api/tickets/{}", ticket["id"].as_str().unwrap());
        for who in [w.alice, w.admin] {
            let (s, p) = call(&app, auth(Req::patch().uri(&item).set_json(json!({"event_id": other})), &w.api, who)).await;
            assert_eq!(s, 422, "{p}");
            assert_eq!(p["field"], "event_id", "{p}");
            assert!(p["detail"].as_str().unwrap().contains("when the item is created"), "{p}");
            let items = json!({"items": [{"id": ticket["id"], "changes": {"seat": "C3", "event_id": other}}]});
            let (s, p) = call(&app, auth(Req::patch().uri("/api/tickets/batch/").set_json(items), &w.api, who)).await;
            assert_eq!(s, 422, "{p}");
            assert!(names(&p, "event_id"), "{p}");
        }
        // Its other members still change; the event stays.
        let (s, changed) = call(&app, auth(Req::patch().uri(&item).set_json(json!({"seat": "B7"})), &w.api, w.alice)).await;
        assert_eq!(s, 200, "{changed}");
        assert_eq!((changed["seat"].clone(), changed["event_id"].clone()), (json!("B7"), json!(event.to_string())));
        let items = json!({"items": [{"id": ticket["id"], "changes": {"seat": "C3"}}]});
        let (s, batch) = call(&app, auth(Req::patch().uri("/api/tickets/batch/").set_json(items), &w.api, w.alice)).await;
        assert_eq!(s, 200, "{batch}");
        assert_eq!(batch["data"][0]["event_id"], event.to_string());
    }

    async fn the_request_schemas_list_what_a_client_sends(t) {
        let w = world(&t).await;
        let spec: Value = serde_json::from_str(&w.api.openapi_json()).unwrap();
        let schemas = &spec["components"]["schemas"];
        // The body of an operation, its reference resolved.
        let resolve = |s: &Value| -> Value {
            match s["$ref"].as_str() {
                Some(r) => schemas[r.rsplit('/').next().unwrap()].clone(),
                None => s.clone(),
            }
        };
        let body = |path: &str, method: &str| resolve(&spec["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]);
        let batch_item = |path: &str, method: &str| {
            let items = &body(path, method)["properties"]["items"]["items"];
            let item = resolve(items);
            if method == "patch" { resolve(&item["properties"]["changes"]) } else { item }
        };
        let keys = |s: &Value| -> Vec<String> {
            let mut k: Vec<String> = s["properties"].as_object().unwrap().keys().cloned().collect();
            k.sort_unstable();
            k
        };
        let required = |s: &Value| -> Vec<String> {
            let mut r: Vec<String> = s["required"].as_array().map(|a| a.iter().map(|v| v.as_str().unwrap().to_owned()).collect()).unwrap_or_default();
            r.sort_unstable();
            r
        };
        // Tickets: the server's members in no body; the event in the create bodies only.
        for create in [body("/api/tickets/", "post"), batch_item("/api/tickets/batch/", "post")] {
            assert_eq!(keys(&create), ["event_id", "seat"], "{create}");
            assert_eq!(required(&create), ["event_id", "seat"], "{create}");
        }
        for update in [body("/api/tickets/{id}", "patch"), batch_item("/api/tickets/batch/", "patch")] {
            assert_eq!(keys(&update), ["seat"], "{update}");
            assert_eq!(required(&update), Vec::<String>::new(), "{update}");
        }
        assert_eq!(keys(&body("/api/entries/", "post")), ["body"]);
        // The rules' server member (`OwnerRules`) is in no request body, nor required.
        for create in [body("/api/memos/", "post"), batch_item("/api/memos/batch/", "post")] {
            assert_eq!(keys(&create), ["body"], "{create}");
            assert_eq!(required(&create), ["body"], "{create}");
        }
        for update in [body("/api/memos/{id}", "patch"), batch_item("/api/memos/batch/", "patch")] {
            assert_eq!(keys(&update), ["body"], "{update}");
        }
        // The answers keep every member.
        let ticket = resolve(&spec["paths"]["/api/tickets/{id}"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]);
        for member in ["holder_id", "sold_at", "channel", "event_id"] {
            assert!(ticket["properties"].get(member).is_some(), "{member}: {ticket}");
        }
    }

    async fn an_owned_row_is_created_without_its_owner(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let (s, memo) = call(&app, auth(Req::post().uri("/api/memos/").set_json(json!({"body": "milk"})), &w.api, w.alice)).await;
        assert_eq!(s, 201, "{memo}");
        assert_eq!(memo["owner_id"], w.alice.to_string());
        let (s, p) = call(&app, auth(Req::post().uri("/api/memos/").set_json(json!({"body": "milk", "owner_id": w.admin})), &w.api, w.alice)).await;
        assert_eq!((s, p["field"].clone()), (422, json!("owner_id")), "{p}");
        assert_eq!(rows(&w.api, "memos").await, 1);
    }
}

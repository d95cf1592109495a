//! Live updates (the `realtime` feature) on both backends: events recorded in the write's own
//! transaction (none for a rolled-back write, none for a resource without a feed); the feed
//! `GET <prefix>events/` as Server-Sent Events, each subscriber receiving only rows it may
//! read, rendered as its `GET` renders them (member read rules, `fields=`), under its filters,
//! named filters and the `filter` expression; rows moving into view as `created` and out of
//! it as `deleted` (key only); resume with `Last-Event-ID`, `reset` otherwise; the queries one
//! delivery costs; caps (checked before the view is read), tickets (capped per user, never
//! evicted), a slow subscriber, sessions and role changes ending streams, shutdown, pruning,
//! parked states left to their owner and bounded per user; and on PostgreSQL two instances:
//! written on A, received on B.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::ServiceResponse;
use actix_web::test;
use crudforge::users;
use crudforge::{with_conn, Api, Config, Database, Resource};
use crudforge_tests::{backend_tests, Backend, TestDb};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::{json, Value};
use std::pin::Pin;
use std::time::Duration;
use uuid::Uuid;

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
        /// Title.
        title -> Text,
        /// Shared with every signed-in user.
        shared -> Bool,
        /// Priority.
        priority -> Integer,
        /// The owner's own note.
        private_note -> Nullable<Text>,
        /// Deleted.
        deleted_at -> Nullable<PortableTimestamp>,
    }
}

type DateTime = chrono::DateTime<chrono::Utc>;

/// A memo: its owner reads and writes it; shared memos are read by everyone signed in; the
/// private note only by the owner.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = memos)]
#[resource(
    soft_delete,
    rules(
        read = "shared = true or owner_id = @me",
        write = "owner_id = @me",
        create = "owner_id = @me"
    ),
    scope(pinned = "priority >= 5"),
    search("title", "private_note")
)]
pub struct Memo {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Its owner.
    pub owner_id: Uuid,
    /// Its title.
    #[resource(max_len = 100)]
    pub title: String,
    /// Whether everyone signed in reads it.
    pub shared: bool,
    /// How important.
    pub priority: i32,
    /// Only for its owner's eyes.
    #[resource(read = owner(owner_id))]
    pub private_note: Option<String>,
    /// When it was deleted.
    pub deleted_at: Option<DateTime>,
}

struct World {
    api: Api,
    alice: Uuid,
    bob: Uuid,
}

const DDL_SQLITE: &str = "CREATE TABLE memos (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, owner_id TEXT NOT NULL, title TEXT NOT NULL UNIQUE, shared BOOLEAN NOT NULL, priority INTEGER NOT NULL, private_note TEXT, deleted_at TEXT)";
const DDL_PG: &str = "CREATE TABLE memos (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, owner_id UUID NOT NULL, title TEXT NOT NULL UNIQUE, shared BOOLEAN NOT NULL, priority INTEGER NOT NULL, private_note TEXT, deleted_at TIMESTAMPTZ)";

/// The configuration of the tests: quick session checks, short heartbeats.
fn config(t: &TestDb, tune: impl FnOnce(&mut Config)) -> Config {
    t.config().with(|c| {
        c.auth.bcrypt_cost = 4;
        c.ops.realtime_session_check = 1;
        tune(c);
    })
}

async fn world(t: &TestDb, cfg: Config) -> World {
    let db = t.open(&cfg).await;
    let ddl = match db.backend() {
        Backend::Sqlite => DDL_SQLITE,
        Backend::Postgres => DDL_PG,
    };
    let search =
        crudforge::__bench::search_index_sql("memos", Memo::SEARCH, db.backend()).join("\n");
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(ddl).await).unwrap();
    with_conn!(conn, |c| c.batch_execute(&search).await).unwrap();
    drop(conn);
    crudforge_tests::critters::create_table(&db).await;
    crudforge_tests::parts::create_table(&db).await;
    let alice = users::create_user(&db, "alice@example.com", "some-pass", true, 4)
        .await
        .unwrap();
    let bob = users::create_user(&db, "bob@example.com", "some-pass", true, 4)
        .await
        .unwrap();
    World {
        api: api(cfg, db),
        alice,
        bob,
    }
}

/// An API over `db` with the memos' feed, the parts' (whose staff note only administrators
/// read), and critters without one.
fn api(cfg: Config, db: Database) -> Api {
    Api::new(cfg, db)
        .unwrap()
        .mount(Memo::blueprint("/api/memos/").events().batch([
            crudforge::crud::Operation::Post,
            crudforge::crud::Operation::Delete,
        ]))
        .unwrap()
        .mount(crudforge_tests::parts::Part::blueprint("/api/parts/").events())
        .unwrap()
        .mount(
            // A critter named `memo:<owner>` makes a shared memo for that owner, written by the
            // hook directly, in the critter's transaction, and recorded for the memos' feed.
            crudforge_tests::critters::Critter::blueprint("/api/critters/")
                .after_create(|conn, _ctx, critter: &crudforge_tests::critters::Critter| {
                    let name = critter.name.clone();
                    Box::pin(async move {
                        let Some(owner) = name.strip_prefix("memo:") else {
                            return Ok(());
                        };
                        let owner = owner.trim_end_matches('!');
                        let input: MemoCreate = serde_json::from_value(json!({
                            "owner_id": owner, "title": name, "shared": true, "priority": 1,
                        }))
                        .unwrap();
                        let memo = Memo::insert(conn, input).await?;
                        crudforge::realtime::record_change::<Memo>(
                            conn,
                            crudforge::realtime::EventKind::Created,
                            &memo.id.to_string(),
                        )
                        .await
                    })
                })
                // A name ending in `!` is refused after the memo was written and recorded.
                .after_create(
                    |_conn, _ctx, critter: &crudforge_tests::critters::Critter| {
                        let refused = critter.name.ends_with('!');
                        Box::pin(async move {
                            if refused {
                                return Err(crudforge::Error::Conflict("no shouting".into()));
                            }
                            Ok(())
                        })
                    },
                ),
        )
        .unwrap()
}

type Req = test::TestRequest;

fn bearer(api: &Api, id: Uuid) -> String {
    format!("Bearer {}", api.state().tokens.access(id).unwrap())
}

fn auth(req: Req, api: &Api, id: Uuid) -> Req {
    req.insert_header(("authorization", bearer(api, id)))
}

/// Status and JSON body of a request.
async fn send<S, B>(app: &S, req: Req) -> (u16, Value)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: MessageBody + 'static,
{
    let resp = test::call_service(app, req.to_request()).await;
    let status = resp.status().as_u16();
    let body = test::read_body(resp).await;
    let v = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).unwrap_or(Value::Null)
    };
    (status, v)
}

/// One event of a stream.
#[derive(Debug, Clone)]
struct Ev {
    id: Option<String>,
    event: String,
    data: Value,
}

/// An open event stream.
struct Sse {
    body: BoxBody,
    buf: String,
}

impl Sse {
    /// The next event (heartbeat comments skipped); panics when none comes within 20 s or
    /// the stream ends.
    async fn next(&mut self) -> Ev {
        self.try_next().await.expect("the stream ended")
    }

    /// The next block of the stream as written (an event or a comment), or `None` when the
    /// stream ends; panics when none comes within 20 s.
    async fn next_block(&mut self) -> Option<String> {
        loop {
            if let Some(i) = self.buf.find("\n\n") {
                return Some(self.buf.drain(..i + 2).collect());
            }
            let chunk = tokio::time::timeout(
                Duration::from_secs(20),
                futures_util::future::poll_fn(|cx| Pin::new(&mut self.body).poll_next(cx)),
            )
            .await
            .expect("a block within 20 s")?;
            self.buf
                .push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        }
    }

    /// The next event, or `None` when the stream ends.
    async fn try_next(&mut self) -> Option<Ev> {
        loop {
            let block = self.next_block().await?;
            let mut ev = Ev {
                id: None,
                event: String::new(),
                data: Value::Null,
            };
            let mut comment = true;
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    ev.id = Some(v.to_owned());
                } else if let Some(v) = line.strip_prefix("event: ") {
                    ev.event = v.to_owned();
                    comment = false;
                } else if let Some(v) = line.strip_prefix("data: ") {
                    ev.data = serde_json::from_str(v).unwrap();
                }
            }
            if !comment {
                return Some(ev);
            }
        }
    }
}

/// Opens the memos' feed with `query` as `user` (anonymous: `None`), expecting 200, and reads
/// its `ready` event.
async fn subscribe<S, B>(app: &S, api: &Api, user: Option<Uuid>, query: &str) -> (Sse, Ev)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: MessageBody + 'static,
{
    subscribe_with(app, api, user, query, None).await
}

async fn subscribe_with<S, B>(
    app: &S,
    api: &Api,
    user: Option<Uuid>,
    query: &str,
    last_event_id: Option<&str>,
) -> (Sse, Ev)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: MessageBody + 'static,
{
    open_at(
        app,
        api,
        user,
        &format!("/api/memos/events/{query}"),
        last_event_id,
    )
    .await
}

/// Opens the feed at `uri` as `user`, as [`subscribe_with`] does.
async fn open_at<S, B>(
    app: &S,
    api: &Api,
    user: Option<Uuid>,
    uri: &str,
    last_event_id: Option<&str>,
) -> (Sse, Ev)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: MessageBody + 'static,
{
    let mut req = Req::get().uri(uri);
    if let Some(u) = user {
        req = auth(req, api, u);
    }
    if let Some(id) = last_event_id {
        req = req.insert_header(("last-event-id", id));
    }
    let resp = test::call_service(app, req.to_request()).await;
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.headers().get("content-type").unwrap(),
        "text/event-stream"
    );
    let mut sse = Sse {
        body: resp.map_into_boxed_body().into_body(),
        buf: String::new(),
    };
    let mut first = sse.next().await;
    if first.event == "reset" {
        // Reported to the caller through `ready`'s place: the reset comes first.
        let ready = sse.next().await;
        assert_eq!(ready.event, "ready");
        first.id = ready.id;
    } else {
        assert_eq!(first.event, "ready", "{first:?}");
    }
    (sse, first)
}

/// Creates a memo as `owner`; its id.
async fn memo<S, B>(app: &S, api: &Api, owner: Uuid, body: Value) -> String
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: MessageBody + 'static,
{
    let mut body = body;
    body["owner_id"] = json!(owner);
    if body.get("shared").is_none() {
        body["shared"] = json!(false);
    }
    if body.get("priority").is_none() {
        body["priority"] = json!(1);
    }
    let (s, v) = send(
        app,
        auth(Req::post().uri("/api/memos/").set_json(body), api, owner),
    )
    .await;
    assert_eq!(s, 201, "{v}");
    v["id"].as_str().unwrap().to_owned()
}

async fn patch<S, B>(app: &S, api: &Api, user: Uuid, id: &str, body: Value)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: MessageBody + 'static,
{
    let req = Req::patch().uri(&format!("/api/memos/{id}")).set_json(body);
    let (s, v) = send(app, auth(req, api, user)).await;
    assert_eq!(s, 200, "{v}");
}

/// The recorded events: (resource, kind, key), in order.
async fn recorded(db: &Database) -> Vec<(String, String, String)> {
    diesel::table! {
        crudforge_events (id) {
            id -> BigInt,
            resource -> Text,
            kind -> Text,
            row_key -> Text,
            created_at -> BigInt,
            tx -> BigInt,
        }
    }
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| {
        let q = crudforge_events::table
            .order(crudforge_events::id.asc())
            .select((
                crudforge_events::resource,
                crudforge_events::kind,
                crudforge_events::row_key,
            ));
        diesel_async::RunQueryDsl::load(q, c).await
    })
    .unwrap()
}

/// Runs `sql` with `{user}` replaced by `user` (a UUID literal on either backend).
async fn exec_for(db: &Database, sql: &str, user: Uuid) {
    let literal = match db.backend() {
        Backend::Sqlite => format!("'{user}'"),
        Backend::Postgres => format!("'{user}'::uuid"),
    };
    let sql = sql.replace("{user}", &literal);
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(&sql).await).unwrap();
}

/// The number of queries a `Server-Timing` header reports (`db;dur=...;desc="N queries"`).
fn queries_of(resp: &ServiceResponse<impl MessageBody>) -> u64 {
    let v = resp
        .headers()
        .get("server-timing")
        .expect("Server-Timing")
        .to_str()
        .unwrap();
    let n = v
        .split("desc=\"")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap();
    n.parse().unwrap()
}

fn members(v: &Value) -> Vec<&str> {
    let mut m: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    m.sort_unstable();
    m
}

backend_tests! {
    async fn writes_record_events_in_their_transaction(t) {
        let w = world(&t, config(&t, |_| {})).await;
        let app = test::init_service(w.api.app()).await;
        let id = memo(&app, &w.api, w.alice, json!({"title": "one"})).await;
        patch(&app, &w.api, w.alice, &id, json!({"priority": 3})).await;
        let (s, _) = send(&app, auth(Req::delete().uri(&format!("/api/memos/{id}")), &w.api, w.alice)).await;
        assert_eq!(s, 204);
        let (s, v) = send(&app, auth(Req::post().uri(&format!("/api/memos/{id}/restore/")), &w.api, w.alice)).await;
        assert_eq!(s, 200, "{v}");
        // A resource without a feed records nothing.
        let (s, _) = send(&app, Req::post().uri("/api/critters/").set_json(json!({"name": "Rex", "species": "dog"}))).await;
        assert_eq!(s, 201);
        // A batch that fails on its second item rolls back with its events.
        let items = json!({"items": [
            {"title": "two", "owner_id": w.alice, "shared": false, "priority": 1},
            {"title": "one", "owner_id": w.alice, "shared": false, "priority": 1},
        ]});
        let (s, v) = send(&app, auth(Req::post().uri("/api/memos/batch/").set_json(items), &w.api, w.alice)).await;
        assert_eq!(s, 409, "{v}");
        // A batch deletion records each row.
        let a = memo(&app, &w.api, w.alice, json!({"title": "a"})).await;
        let b = memo(&app, &w.api, w.alice, json!({"title": "b"})).await;
        let (s, v) = send(&app, auth(Req::post().uri("/api/memos/batch/delete/").set_json(json!({"items": [{"id": a}, {"id": b}]})), &w.api, w.alice)).await;
        assert_eq!(s, 204, "{v}");
        let kinds: Vec<(String, String, String)> = recorded(w.api.db()).await;
        let expected = [
            ("created", &id), ("updated", &id), ("deleted", &id), ("restored", &id),
            ("created", &a), ("created", &b), ("deleted", &a), ("deleted", &b),
        ];
        assert_eq!(kinds.len(), expected.len(), "{kinds:?}");
        for ((res, kind, key), (k, i)) in kinds.iter().zip(expected) {
            assert_eq!((res.as_str(), kind.as_str(), key), ("memos", k, i));
        }
    }

    async fn each_subscriber_sees_what_its_get_shows(t) {
        let w = world(&t, config(&t, |c| c.ops.metrics_enabled = true)).await;
        let app = test::init_service(w.api.app()).await;
        let (mut alice, _) = subscribe(&app, &w.api, Some(w.alice), "").await;
        let (mut bob, _) = subscribe(&app, &w.api, Some(w.bob), "").await;
        let (mut bob_sparse, _) = subscribe(&app, &w.api, Some(w.bob), "?fields=id,title").await;
        // Alice's private memo: hers alone.
        let private = memo(&app, &w.api, w.alice, json!({"title": "diary", "private_note": "mine"})).await;
        let ev = alice.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(private.as_str())));
        assert_eq!(ev.data["private_note"], "mine");
        assert!(ev.id.as_deref().unwrap().contains('_'), "{ev:?}");
        // A shared memo: Bob reads it without the private note, as his GET shows it.
        let shared = memo(&app, &w.api, w.alice, json!({"title": "plan", "shared": true, "private_note": "secret"})).await;
        let ev = alice.next().await;
        assert_eq!((ev.event.as_str(), ev.data["private_note"].as_str()), ("created", Some("secret")));
        let ev = bob.next().await;
        assert_eq!(ev.event, "created", "Bob heard nothing of the private memo first: {ev:?}");
        assert_eq!(ev.data["id"], shared.as_str());
        assert!(ev.data.get("private_note").is_none(), "{ev:?}");
        let (_, got) = send(&app, auth(Req::get().uri(&format!("/api/memos/{shared}")), &w.api, w.bob)).await;
        assert_eq!(ev.data, got, "the event's data is Bob's GET");
        let ev = bob_sparse.next().await;
        assert_eq!(ev.data, json!({"id": shared, "title": "plan"}));
        // A private note Bob may not read cannot be asked for.
        let resp = test::call_service(&app, auth(Req::get().uri("/api/memos/events/?fields=id,nope"), &w.api, w.bob).to_request()).await;
        assert_eq!(resp.status().as_u16(), 400);
        // Anonymous callers read nothing: the rules need a caller.
        let resp = test::call_service(&app, Req::get().uri("/api/memos/events/").to_request()).await;
        assert!(matches!(resp.status().as_u16(), 200 | 401), "{}", resp.status());
        // Updates: Alice's private memo changes, then the shared one; Bob hears the second only.
        patch(&app, &w.api, w.alice, &private, json!({"title": "diary 2"})).await;
        patch(&app, &w.api, w.alice, &shared, json!({"title": "plan 2"})).await;
        let ev = bob.next().await;
        assert_eq!((ev.event.as_str(), ev.data["title"].as_str()), ("updated", Some("plan 2")));
        let ev = alice.next().await;
        assert_eq!((ev.event.as_str(), ev.data["title"].as_str()), ("updated", Some("diary 2")));
        assert_eq!(members(&ev.data), ["created_at", "deleted_at", "id", "owner_id", "priority", "private_note", "shared", "title", "updated_at"]);
        // The process's metrics count open streams and events sent.
        let resp = test::call_service(&app, Req::get().uri("/metrics").to_request()).await;
        assert_eq!(resp.status().as_u16(), 200);
        let text = String::from_utf8(test::read_body(resp).await.to_vec()).unwrap();
        let value = |name: &str| -> f64 {
            text.lines()
                .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))
                .unwrap_or_else(|| panic!("{name} in {text}"))
        };
        assert!(value("crudforge_realtime_streams_open ") >= 3.0);
        assert!(value("crudforge_realtime_events_sent_total ") >= 6.0);
        assert!(value("crudforge_realtime_streams_dropped_total ") >= 0.0);
    }

    async fn a_search_narrows_the_feed_to_members_the_subscriber_reads(t) {
        let w = world(&t, config(&t, |_| {})).await;
        let app = test::init_service(w.api.app()).await;
        let (mut bob, _) = subscribe(&app, &w.api, Some(w.bob), "?q=walrus").await;
        let (mut alice, _) = subscribe(&app, &w.api, Some(w.alice), "?q=walrus").await;
        // The word in a private note: news to its owner only.
        let hidden = memo(&app, &w.api, w.alice, json!({"title": "notes", "shared": true, "private_note": "a walrus"})).await;
        let ev = alice.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(hidden.as_str())));
        // The word in a shared title: news to both; a memo without it to neither.
        memo(&app, &w.api, w.alice, json!({"title": "otters", "shared": true})).await;
        let found = memo(&app, &w.api, w.alice, json!({"title": "Walrus tour", "shared": true})).await;
        for feed in [&mut bob, &mut alice] {
            let ev = feed.next().await;
            assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(found.as_str())));
        }
        // Renamed away from the word: out of the search's view.
        patch(&app, &w.api, w.alice, &found, json!({"title": "Seal tour"})).await;
        let ev = bob.next().await;
        assert_eq!((ev.event.as_str(), &ev.data), ("deleted", &json!({"id": found})));
        // A search that is not one is refused before the stream opens.
        let resp = test::call_service(&app, auth(Req::get().uri("/api/memos/events/?q=%2A"), &w.api, w.bob).to_request()).await;
        assert_eq!(resp.status().as_u16(), 400);
    }

    async fn rows_move_in_and_out_of_view(t) {
        let w = world(&t, config(&t, |_| {})).await;
        let app = test::init_service(w.api.app()).await;
        let id = memo(&app, &w.api, w.alice, json!({"title": "draft"})).await;
        let (mut bob, _) = subscribe(&app, &w.api, Some(w.bob), "").await;
        let (mut pinned, _) = subscribe(&app, &w.api, Some(w.bob), "?scope=pinned").await;
        let (mut filtered, _) = subscribe(&app, &w.api, Some(w.bob), "?filter=title%20%3D%20%27draft%27").await;
        // Shared: into Bob's view, as a creation.
        patch(&app, &w.api, w.alice, &id, json!({"shared": true})).await;
        let ev = bob.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(id.as_str())));
        let ev = filtered.next().await;
        assert_eq!(ev.event, "created");
        // Unshared: out of view, as a deletion carrying the key alone.
        patch(&app, &w.api, w.alice, &id, json!({"shared": false})).await;
        let ev = bob.next().await;
        assert_eq!(ev.event, "deleted");
        assert_eq!(ev.data, json!({"id": id}));
        assert_eq!(filtered.next().await.event, "deleted");
        // Out of view, its changes and its deletion say nothing to Bob, whatever his filters
        // (the filter names the title it has): the next thing he hears is another memo.
        patch(&app, &w.api, w.alice, &id, json!({"priority": 9})).await;
        let (s, _) = send(&app, auth(Req::delete().uri(&format!("/api/memos/{id}")), &w.api, w.alice)).await;
        assert_eq!(s, 204);
        let other = memo(&app, &w.api, w.alice, json!({"title": "draft2", "shared": true, "priority": 7})).await;
        let ev = bob.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(other.as_str())));
        let ev = pinned.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(other.as_str())), "the private pinned memo was never shown");
        // A named filter's view: below the pin, out of it; the plain view keeps it.
        patch(&app, &w.api, w.alice, &other, json!({"priority": 1})).await;
        let ev = pinned.next().await;
        assert_eq!((ev.event.as_str(), &ev.data), ("deleted", &json!({"id": other})));
        assert_eq!(bob.next().await.event, "updated");
        // Soft deletion and restore of a row in view.
        let (s, _) = send(&app, auth(Req::delete().uri(&format!("/api/memos/{other}")), &w.api, w.alice)).await;
        assert_eq!(s, 204);
        assert_eq!(bob.next().await.data, json!({"id": other}));
        let (s, _) = send(&app, auth(Req::post().uri(&format!("/api/memos/{other}/restore/")), &w.api, w.alice)).await;
        assert_eq!(s, 200);
        let ev = bob.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("restored", Some(other.as_str())));
        // The filter's subscriber heard nothing of `draft2`, nor of `draft`'s changes and
        // deletion out of view: once restored and shared again, `draft` is news to it.
        let (s, v) = send(&app, auth(Req::post().uri(&format!("/api/memos/{id}/restore/")), &w.api, w.alice)).await;
        assert_eq!(s, 200, "{v}");
        patch(&app, &w.api, w.alice, &id, json!({"shared": true})).await;
        // The delivery reads rows as committed when it runs: judged in one round with the
        // sharing, the restore itself brings the row into view (`restored`); judged alone, it
        // tells nothing and the sharing does (`created`). Never an `updated` of a row the
        // subscriber was not shown.
        let ev = filtered.next().await;
        assert!(["created", "restored"].contains(&ev.event.as_str()), "{}", ev.event);
        assert_eq!(ev.data["id"].as_str(), Some(id.as_str()));
    }

    async fn out_of_view_changes_of_rows_never_shown_are_not_queued(t) {
        // A queue of one event: anything queued for Bob and not read would overflow it.
        let w = world(&t, config(&t, |c| c.ops.realtime_queue = 1)).await;
        let app = test::init_service(w.api.app()).await;
        let hidden = memo(&app, &w.api, w.alice, json!({"title": "hidden"})).await;
        let (mut bob, _) = subscribe(&app, &w.api, Some(w.bob), "").await;
        let (mut alice, _) = subscribe(&app, &w.api, Some(w.alice), "").await;
        // Changes of a row Bob cannot read, then its deletion and restore: nothing for him;
        // Alice, who reads each event as it comes, shows each was delivered.
        for i in 0..4 {
            patch(&app, &w.api, w.alice, &hidden, json!({"priority": i + 2})).await;
            assert_eq!(alice.next().await.event, "updated");
        }
        let (s, _) = send(&app, auth(Req::delete().uri(&format!("/api/memos/{hidden}")), &w.api, w.alice)).await;
        assert_eq!(s, 204);
        assert_eq!(alice.next().await.event, "deleted");
        let (s, _) = send(&app, auth(Req::post().uri(&format!("/api/memos/{hidden}/restore/")), &w.api, w.alice)).await;
        assert_eq!(s, 200);
        assert_eq!(alice.next().await.event, "restored");
        // Bob's queue held none of them: it did not overflow, and the next thing he hears is
        // a row he may read.
        let shared = memo(&app, &w.api, w.alice, json!({"title": "open", "shared": true})).await;
        let ev = bob.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(shared.as_str())), "{ev:?}");
        assert!(ev.data.get("private_note").is_none());
    }

    async fn a_stream_dropped_with_events_queued_resumes_consistently(t) {
        let w = world(&t, config(&t, |c| c.ops.realtime_resume_seconds = 300)).await;
        let app = test::init_service(w.api.app()).await;
        let a = memo(&app, &w.api, w.alice, json!({"title": "a"})).await;
        let (s, ready) = subscribe(&app, &w.api, Some(w.bob), "?shared=true").await;
        let (mut witness, _) = subscribe(&app, &w.api, Some(w.alice), "?shared=true").await;
        // `a` is shared: it enters Bob's view, as a creation queued for him (the witness,
        // delivered in the same round, shows it was), but he never reads it: the stream goes
        // away.
        patch(&app, &w.api, w.alice, &a, json!({"shared": true})).await;
        assert_eq!(witness.next().await.event, "created");
        drop(s);
        // Resumed from the last event Bob got (`ready`'s position): `a` was never shown (what
        // the unread queue added was taken back), so its update is `created`, not `updated`.
        let last = ready.id.unwrap();
        let (mut s, again) = subscribe_with(&app, &w.api, Some(w.bob), "?shared=true", Some(&last)).await;
        assert_eq!(again.id.as_deref(), Some(last.as_str()), "resumed where it was");
        let ev = s.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(a.as_str())), "{ev:?}");
        let shown = ev.id.unwrap();
        // Now shown: `a` moving out is a deletion, queued and again never read.
        patch(&app, &w.api, w.alice, &a, json!({"shared": false})).await;
        assert_eq!(witness.next().await.event, "deleted");
        drop(s);
        let (mut s, _) = subscribe_with(&app, &w.api, Some(w.bob), "?shared=true", Some(&shown)).await;
        let ev = s.next().await;
        assert_eq!((ev.event.as_str(), &ev.data), ("deleted", &json!({"id": a})), "{ev:?}");
        // Out of view and known no more: its changes say nothing; a new shared memo is next.
        patch(&app, &w.api, w.alice, &a, json!({"title": "a2"})).await;
        let b = memo(&app, &w.api, w.alice, json!({"title": "b", "shared": true})).await;
        let ev = s.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(b.as_str())), "{ev:?}");
    }

    async fn resume_gets_what_was_missed(t) {
        let w = world(&t, config(&t, |_| {})).await;
        let app = test::init_service(w.api.app()).await;
        let (mut s, ready) = subscribe(&app, &w.api, Some(w.bob), "?shared=true").await;
        let a = memo(&app, &w.api, w.alice, json!({"title": "a", "shared": true})).await;
        let ev = s.next().await;
        assert_eq!(ev.data["id"], a.as_str());
        let last = ev.id.clone().unwrap();
        assert_ne!(Some(last.clone()), ready.id);
        drop(s);
        // Missed: an update of `a`, a memo Bob cannot read, a new shared one, `a` unshared.
        patch(&app, &w.api, w.alice, &a, json!({"title": "a2"})).await;
        memo(&app, &w.api, w.alice, json!({"title": "hidden"})).await;
        let b = memo(&app, &w.api, w.alice, json!({"title": "b", "shared": true})).await;
        patch(&app, &w.api, w.alice, &a, json!({"shared": false})).await;
        let (mut s, ready) = subscribe_with(&app, &w.api, Some(w.bob), "?shared=true", Some(&last)).await;
        assert_eq!(ready.id.as_deref(), Some(last.as_str()), "resumed where it was");
        // Each missed event is judged against its row as committed now, in the events' order:
        // `a` is out of view now (the stream had shown it: `deleted`, key only), the hidden
        // memo says nothing, `b` is `created`, and `a`'s last change has nothing more to say.
        let ev = s.next().await;
        assert_eq!((ev.event.as_str(), &ev.data), ("deleted", &json!({"id": a})));
        let ev = s.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(b.as_str())));
        let c = memo(&app, &w.api, w.alice, json!({"title": "c", "shared": true})).await;
        let ev = s.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(c.as_str())), "nothing else was missed");
        // Another caller cannot take over the stream; an unknown id gets `reset`.
        let (_, ready) = subscribe_with(&app, &w.api, Some(w.alice), "?shared=true", Some(&last)).await;
        assert!(ready.id.is_some());
        let resp = test::call_service(&app, auth(Req::get().uri("/api/memos/events/").insert_header(("last-event-id", "99_nope")), &w.api, w.bob).to_request()).await;
        let mut sse = Sse { body: resp.map_into_boxed_body().into_body(), buf: String::new() };
        assert_eq!(sse.next().await.event, "reset");
        assert_eq!(sse.next().await.event, "ready");
    }

    async fn one_query_per_group_of_equal_conditions(t) {
        let cfg = config(&t, |c| {
            c.db.orm_performance_monitoring = true;
            c.db.orm_slow_query_threshold = 60.0;
        });
        let w = world(&t, cfg).await;
        let app = test::init_service(w.api.app()).await;
        // Alice twice with the same view, Bob once: two groups.
        let (mut a1, _) = subscribe(&app, &w.api, Some(w.alice), "?priority__gte=1").await;
        let (mut a2, _) = subscribe(&app, &w.api, Some(w.alice), "?priority__gte=1").await;
        let (mut b, _) = subscribe(&app, &w.api, Some(w.bob), "?priority__gte=1").await;
        let id = memo(&app, &w.api, w.alice, json!({"title": "x", "shared": true})).await;
        for s in [&mut a1, &mut a2, &mut b] {
            assert_eq!(s.next().await.data["id"], id.as_str());
        }
        // One event: the events read (1) and one query per group (2).
        assert_eq!(crudforge::__bench::realtime_last_delivery(&w.api), Some((1, 3)));
    }

    async fn caps_tickets_slow_subscribers_and_sessions(t) {
        let w = world(&t, config(&t, |c| {
            c.ops.realtime_max_streams_per_user = 2;
            c.ops.realtime_queue = 1;
        })).await;
        let app = test::init_service(w.api.app()).await;
        let (mut slow, _) = subscribe(&app, &w.api, Some(w.alice), "").await;
        let (mut slower, _) = subscribe(&app, &w.api, Some(w.alice), "").await;
        let resp = test::call_service(&app, auth(Req::get().uri("/api/memos/events/"), &w.api, w.alice).to_request()).await;
        assert_eq!(resp.status().as_u16(), 429);
        assert!(resp.headers().get("retry-after").is_some());
        // A batch of three: one delivery, more than a queue of one holds. What was queued may
        // come first; then `reset`, and the stream ends.
        let items = json!({"items": [
            {"title": "1", "owner_id": w.alice, "shared": false, "priority": 1},
            {"title": "2", "owner_id": w.alice, "shared": false, "priority": 1},
            {"title": "3", "owner_id": w.alice, "shared": false, "priority": 1},
        ]});
        let (s, v) = send(&app, auth(Req::post().uri("/api/memos/batch/").set_json(items), &w.api, w.alice)).await;
        assert_eq!(s, 201, "{v}");
        for s in [&mut slow, &mut slower] {
            let mut ev = s.next().await;
            while ev.event == "created" {
                ev = s.next().await;
            }
            assert_eq!((ev.event.as_str(), ev.data["reason"].as_str()), ("reset", Some("too_slow")));
            assert!(s.try_next().await.is_none(), "the slow stream ends");
        }
        // Their places are free again.
        let (mut alice2, _) = subscribe(&app, &w.api, Some(w.alice), "").await;
        // A ticket: obtained with the bearer token, used once in the URL.
        let (s, v) = send(&app, auth(Req::post().uri("/api/memos/events/ticket"), &w.api, w.bob)).await;
        assert_eq!(s, 200, "{v}");
        let ticket = v["ticket"].as_str().unwrap().to_owned();
        let resp = test::call_service(&app, Req::get().uri(&format!("/api/memos/events/?ticket={ticket}")).to_request()).await;
        assert_eq!(resp.status().as_u16(), 200);
        let mut by_ticket = Sse { body: resp.map_into_boxed_body().into_body(), buf: String::new() };
        assert_eq!(by_ticket.next().await.event, "ready");
        let resp = test::call_service(&app, Req::get().uri(&format!("/api/memos/events/?ticket={ticket}")).to_request()).await;
        assert_eq!(resp.status().as_u16(), 401, "a ticket is used once");
        let (s, _) = send(&app, Req::post().uri("/api/memos/events/ticket")).await;
        assert_eq!(s, 401);
        // Logging out everywhere (the credential version moves on) ends Bob's streams.
        let (mut bob, _) = subscribe(&app, &w.api, Some(w.bob), "").await;
        let mut conn = w.api.db().get().await.unwrap();
        let bump = format!("UPDATE users SET token_version = token_version + 1 WHERE id = '{}'", w.bob);
        let bump = match w.api.db().backend() {
            Backend::Sqlite => bump,
            Backend::Postgres => bump.replace("' ", "'::uuid "),
        };
        with_conn!(conn, |c| c.batch_execute(&format!("{bump};")).await).unwrap();
        drop(conn);
        for s in [&mut bob, &mut by_ticket] {
            let ev = s.next().await;
            assert_eq!((ev.event.as_str(), ev.data["reason"].as_str()), ("end", Some("session_ended")), "{ev:?}");
            assert!(s.try_next().await.is_none());
        }
        // Shutdown ends the others.
        w.api.close_event_streams();
        let ev = alice2.next().await;
        assert_eq!((ev.event.as_str(), ev.data["reason"].as_str()), ("end", Some("shutdown")));
    }

    async fn the_description_documents_the_feed(t) {
        let w = world(&t, config(&t, |_| {})).await;
        let app = test::init_service(w.api.app()).await;
        let resp = test::call_service(&app, Req::get().uri("/openapi.json").to_request()).await;
        assert_eq!(resp.status(), 200);
        let body = test::read_body(resp).await;
        let spec: Value = serde_json::from_slice(&body).unwrap();
        let feed = &spec["paths"]["/api/memos/events/"]["get"];
        assert_eq!(feed["operationId"], "streamMemoEvents");
        let stream = &feed["responses"]["200"]["content"]["text/event-stream"]["schema"];
        assert_eq!(stream["$ref"], "#/components/schemas/FeedEvent", "{feed}");
        let names: Vec<&str> = feed["parameters"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
        for name in ["ticket", "Last-Event-ID", "fields", "filter", "scope", "priority__gte"] {
            assert!(names.contains(&name), "{name} in {names:?}");
        }
        for name in ["page", "cursor", "sort", "include_deleted"] {
            assert!(!names.contains(&name), "{name} in {names:?}");
        }
        assert!(feed["responses"]["429"].is_object());
        let ticket = &spec["paths"]["/api/memos/events/ticket"]["post"];
        assert_eq!(ticket["operationId"], "createMemoStreamTicket");
        for status in ["401", "429", "503"] {
            assert!(ticket["responses"][status].is_object(), "{status}: {ticket}");
        }
        assert!(spec["components"]["schemas"]["FeedEvent"]["properties"]["event"].is_object(), "{}", spec["components"]["schemas"]["FeedEvent"]);
        // The critters offer no feed.
        assert!(spec["paths"]["/api/critters/events/"].is_null());
        if let Err(e) = crudforge_tests::tools::openapi_spec_validator(&body) {
            panic!("openapi-spec-validator rejects the description: {e}");
        }
    }

    async fn a_hooks_direct_write_is_recorded_with_its_transaction(t) {
        let w = world(&t, config(&t, |_| {})).await;
        let app = test::init_service(w.api.app()).await;
        let (mut bob, _) = subscribe(&app, &w.api, Some(w.bob), "").await;
        let name = format!("memo:{}", w.alice);
        let (s, v) = send(&app, Req::post().uri("/api/critters/").set_json(json!({"name": name, "species": "cat"}))).await;
        assert_eq!(s, 201, "{v}");
        let ev = bob.next().await;
        assert_eq!((ev.event.as_str(), ev.data["title"].as_str()), ("created", Some(name.as_str())));
        // A critter refused by a later hook rolls the memo and its event back with it.
        let before = recorded(w.api.db()).await.len();
        let shout = format!("memo:{}!", w.alice);
        let (s, v) = send(&app, Req::post().uri("/api/critters/").set_json(json!({"name": shout, "species": "cat"}))).await;
        assert_eq!(s, 409, "{v}");
        assert_eq!(recorded(w.api.db()).await.len(), before);
    }

    async fn the_process_cap_answers_503_with_retry_after(t) {
        let w = world(&t, config(&t, |c| c.ops.realtime_max_streams = 1)).await;
        let app = test::init_service(w.api.app()).await;
        let (first, _) = subscribe(&app, &w.api, Some(w.alice), "").await;
        // Another user, under the per-user cap, is refused by the process's.
        let resp = test::call_service(&app, auth(Req::get().uri("/api/memos/events/"), &w.api, w.bob).to_request()).await;
        assert_eq!(resp.status().as_u16(), 503);
        let retry = resp.headers().get("retry-after").map(|v| v.to_str().unwrap().parse::<u64>().unwrap());
        assert!(retry.is_some_and(|s| s >= 1), "{:?}", resp.headers());
        assert_eq!(resp.headers().get("content-type").unwrap(), "application/problem+json");
        // The place is free again once the stream is gone.
        drop(first);
        let (_bob, ready) = subscribe(&app, &w.api, Some(w.bob), "").await;
        assert!(ready.id.is_some());
    }

    async fn an_idle_stream_gets_heartbeats(t) {
        let w = world(&t, config(&t, |c| c.ops.realtime_heartbeat = 1)).await;
        let app = test::init_service(w.api.app()).await;
        let (mut s, _) = subscribe(&app, &w.api, Some(w.alice), "").await;
        // Nothing happens: a comment line comes (the reader gives up after 20 s).
        assert_eq!(s.next_block().await.as_deref(), Some(": heartbeat\n\n"));
        // And the stream goes on.
        let id = memo(&app, &w.api, w.alice, json!({"title": "after the beat"})).await;
        let ev = s.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(id.as_str())));
    }

    async fn a_view_larger_than_the_maximum_is_refused_or_reset(t) {
        let w = world(&t, config(&t, |c| c.ops.realtime_view_max = 2)).await;
        let app = test::init_service(w.api.app()).await;
        for i in 0..3 {
            memo(&app, &w.api, w.alice, json!({"title": format!("m{i}")})).await;
        }
        // Alice's view holds three memos: refused at subscription.
        let resp = test::call_service(&app, auth(Req::get().uri("/api/memos/events/"), &w.api, w.alice).to_request()).await;
        assert_eq!(resp.status().as_u16(), 400);
        assert_eq!(resp.headers().get("content-type").unwrap(), "application/problem+json");
        let problem: Value = serde_json::from_slice(&test::read_body(resp).await).unwrap();
        assert_eq!(problem["status"], 400, "{problem}");
        // Bob's view of the same memos is empty (he may read none of them): accepted.
        let (_bob, _) = subscribe(&app, &w.api, Some(w.bob), "").await;
        // A narrower view of Alice's is accepted; it grows to the maximum, then past it.
        let (mut s, _) = subscribe(&app, &w.api, Some(w.alice), "?priority__gte=5").await;
        for i in 0..2 {
            let id = memo(&app, &w.api, w.alice, json!({"title": format!("p{i}"), "priority": 5})).await;
            let ev = s.next().await;
            assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(id.as_str())));
        }
        memo(&app, &w.api, w.alice, json!({"title": "p2", "priority": 5})).await;
        let ev = s.next().await;
        assert_eq!((ev.event.as_str(), ev.data["reason"].as_str()), ("reset", Some("view_too_large")), "{ev:?}");
        assert!(s.try_next().await.is_none(), "the stream ends after the reset");
    }

    async fn a_stream_ends_when_its_token_expires(t) {
        let w = world(&t, config(&t, |c| c.auth.jwt_access_token_expires = 3)).await;
        let app = test::init_service(w.api.app()).await;
        let (mut by_bearer, _) = subscribe(&app, &w.api, Some(w.alice), "").await;
        // A ticket stands for the token it was obtained with, its expiry included.
        let (s, v) = send(&app, auth(Req::post().uri("/api/memos/events/ticket"), &w.api, w.bob)).await;
        assert_eq!(s, 200, "{v}");
        let uri = format!("/api/memos/events/?ticket={}", v["ticket"].as_str().unwrap());
        let resp = test::call_service(&app, Req::get().uri(&uri).to_request()).await;
        assert_eq!(resp.status().as_u16(), 200);
        let mut by_ticket = Sse { body: resp.map_into_boxed_body().into_body(), buf: String::new() };
        assert_eq!(by_ticket.next().await.event, "ready");
        for s in [&mut by_bearer, &mut by_ticket] {
            let ev = s.next().await;
            assert_eq!((ev.event.as_str(), ev.data["reason"].as_str()), ("end", Some("token_expired")), "{ev:?}");
            assert!(s.try_next().await.is_none(), "the stream ends");
        }
    }

    async fn retention_by_age_and_a_resume_from_before_it(t) {
        let w = world(&t, config(&t, |c| {
            c.ops.realtime_retention_seconds = 3600;
            c.ops.realtime_resume_seconds = 300;
        })).await;
        let app = test::init_service(w.api.app()).await;
        let (mut s, _) = subscribe(&app, &w.api, Some(w.bob), "?shared=true").await;
        memo(&app, &w.api, w.alice, json!({"title": "a", "shared": true})).await;
        let last = s.next().await.id.unwrap();
        drop(s);
        // Missed while away.
        memo(&app, &w.api, w.alice, json!({"title": "b", "shared": true})).await;
        // Nothing is old enough yet.
        assert_eq!(w.api.prune_events().await.unwrap(), 0);
        // The two events age past the retention (their times moved two hours back); a new
        // one stays.
        let mut conn = w.api.db().get().await.unwrap();
        with_conn!(conn, |c| c.batch_execute("UPDATE crudforge_events SET created_at = created_at - 7200000000;").await).unwrap();
        drop(conn);
        let c = memo(&app, &w.api, w.alice, json!({"title": "c"})).await;
        assert_eq!(w.api.prune_events().await.unwrap(), 2);
        let left = recorded(w.api.db()).await;
        assert_eq!(left, vec![("memos".to_owned(), "created".to_owned(), c)]);
        // The stream's state is still parked, but what it missed is gone: `reset`, then the
        // stream goes on from now.
        let resp = test::call_service(&app, auth(Req::get().uri("/api/memos/events/?shared=true").insert_header(("last-event-id", last.as_str())), &w.api, w.bob).to_request()).await;
        assert_eq!(resp.status().as_u16(), 200);
        let mut sse = Sse { body: resp.map_into_boxed_body().into_body(), buf: String::new() };
        let ev = sse.next().await;
        assert_eq!((ev.event.as_str(), ev.data["reason"].as_str()), ("reset", Some("resume_unavailable")), "{ev:?}");
        assert_eq!(sse.next().await.event, "ready");
        let d = memo(&app, &w.api, w.alice, json!({"title": "d", "shared": true})).await;
        let ev = sse.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(d.as_str())));
    }

    async fn retention_is_pruned(t) {
        let w = world(&t, config(&t, |c| {
            c.ops.realtime_retention_events = 2;
            c.ops.realtime_resume_seconds = 0;
        })).await;
        let app = test::init_service(w.api.app()).await;
        let mut ids = Vec::new();
        for i in 0..5 {
            ids.push(memo(&app, &w.api, w.alice, json!({"title": format!("m{i}")})).await);
        }
        // By count: the two newest stay.
        assert_eq!(w.api.prune_events().await.unwrap(), 3);
        let left: Vec<String> = recorded(w.api.db()).await.into_iter().map(|(_, _, key)| key).collect();
        assert_eq!(left, ids[3..]);
    }

    async fn a_role_granted_or_revoked_ends_the_stream(t) {
        // No heartbeats: a stream that does not end leaves the reader waiting in vain.
        let w = world(&t, config(&t, |c| c.ops.realtime_heartbeat = 3600)).await;
        users::grant_role(w.api.db(), w.alice, "ADMIN", None).await.unwrap();
        let app = test::init_service(w.api.app()).await;
        // Alice, an administrator, follows her parts: the staff note, which only
        // administrators read, is in what she is sent.
        let (mut admin_stream, _) = open_at(&app, &w.api, Some(w.alice), "/api/parts/events/", None).await;
        let body = json!({"name": "bolt", "qty": 1, "stocked": true, "staff_note": "for staff"});
        let (s, v) = send(&app, auth(Req::post().uri("/api/parts/").set_json(body), &w.api, w.alice)).await;
        assert_eq!(s, 201, "{v}");
        let ev = admin_stream.next().await;
        assert_eq!((ev.event.as_str(), ev.data["staff_note"].as_str()), ("created", Some("for staff")), "{ev:?}");
        let last = ev.id.unwrap();
        // Bob, who holds no role, follows the memos.
        let (mut plain, _) = subscribe(&app, &w.api, Some(w.bob), "").await;
        // ADMIN is revoked from Alice and a role granted to Bob: no credential version moves
        // (their tokens still work elsewhere), but each stream ends at its next session check,
        // without a resume.
        exec_for(w.api.db(), "DELETE FROM user_roles WHERE user_id = {user};", w.alice).await;
        users::grant_role(w.api.db(), w.bob, "MODERATOR", None).await.unwrap();
        for s in [&mut admin_stream, &mut plain] {
            let ev = s.next().await;
            assert_eq!((ev.event.as_str(), ev.data["reason"].as_str()), ("end", Some("rights_changed")), "{ev:?}");
            assert!(s.try_next().await.is_none(), "the stream ends");
        }
        let (s, _) = send(&app, auth(Req::get().uri("/api/parts/"), &w.api, w.alice)).await;
        assert_eq!(s, 200, "Alice's session goes on");
        // Her stream, opened again with the last id, is not resumed (`reset`), and is judged
        // for what she holds now: no staff note.
        let (mut again, first) = open_at(&app, &w.api, Some(w.alice), "/api/parts/events/", Some(&last)).await;
        assert_ne!(first.id.as_deref(), Some(last.as_str()), "not resumed");
        let body = json!({"name": "nut", "qty": 2, "stocked": true});
        let (s, v) = send(&app, auth(Req::post().uri("/api/parts/").set_json(body), &w.api, w.alice)).await;
        assert_eq!(s, 201, "{v}");
        let ev = again.next().await;
        assert_eq!((ev.event.as_str(), ev.data["name"].as_str()), ("created", Some("nut")));
        assert!(ev.data.get("staff_note").is_none(), "{ev:?}");
    }

    async fn tickets_are_capped_per_user_without_evicting_others(t) {
        let w = world(&t, config(&t, |c| c.ops.realtime_max_streams_per_user = 2)).await;
        let app = test::init_service(w.api.app()).await;
        let ticket = |who: Uuid| auth(Req::post().uri("/api/memos/events/ticket"), &w.api, who).to_request();
        let resp = test::call_service(&app, ticket(w.alice)).await;
        assert_eq!(resp.status().as_u16(), 200);
        let (_, v) = send(&app, auth(Req::post().uri("/api/memos/events/ticket"), &w.api, w.alice)).await;
        let alices = v["ticket"].as_str().unwrap().to_owned();
        // Bob asks for more tickets than he may hold unused: the third is refused, 429 with
        // Retry-After, and takes nobody's place.
        let mut bobs = Vec::new();
        for _ in 0..2 {
            let (s, v) = send(&app, auth(Req::post().uri("/api/memos/events/ticket"), &w.api, w.bob)).await;
            assert_eq!(s, 200, "{v}");
            bobs.push(v["ticket"].as_str().unwrap().to_owned());
        }
        for _ in 0..3 {
            let resp = test::call_service(&app, ticket(w.bob)).await;
            assert_eq!(resp.status().as_u16(), 429);
            assert_eq!(resp.headers().get("content-type").unwrap(), "application/problem+json");
            let retry = resp.headers().get("retry-after").map(|v| v.to_str().unwrap().parse::<u64>().unwrap());
            assert!(retry.is_some_and(|s| (1..=31).contains(&s)), "{:?}", resp.headers());
        }
        // Alice's ticket still opens her stream, and so do Bob's.
        for t in [&alices, &bobs[0]] {
            let resp = test::call_service(&app, Req::get().uri(&format!("/api/memos/events/?ticket={t}")).to_request()).await;
            assert_eq!(resp.status().as_u16(), 200);
            let mut sse = Sse { body: resp.map_into_boxed_body().into_body(), buf: String::new() };
            assert_eq!(sse.next().await.event, "ready");
        }
        // A ticket used is one fewer outstanding: Bob may ask for one again.
        let (s, v) = send(&app, auth(Req::post().uri("/api/memos/events/ticket"), &w.api, w.bob)).await;
        assert_eq!(s, 200, "{v}");
    }

    async fn a_foreign_last_event_id_leaves_the_parked_state_to_its_owner(t) {
        let w = world(&t, config(&t, |c| c.ops.realtime_resume_seconds = 300)).await;
        let app = test::init_service(w.api.app()).await;
        let (mut s, _) = subscribe(&app, &w.api, Some(w.bob), "?shared=true").await;
        memo(&app, &w.api, w.alice, json!({"title": "a", "shared": true})).await;
        let last = s.next().await.id.unwrap();
        drop(s);
        // Missed while away.
        let b = memo(&app, &w.api, w.alice, json!({"title": "b", "shared": true})).await;
        // Alice presents Bob's id, for the same view and for another, and an id of the right
        // stream with another position: each gets `reset`, none takes his state.
        for (query, id) in [("?shared=true", last.clone()), ("", last.clone())] {
            let (_, first) = open_at(&app, &w.api, Some(w.alice), &format!("/api/memos/events/{query}"), Some(&id)).await;
            assert_eq!(first.event, "reset", "{first:?}");
            assert_ne!(first.id.as_deref(), Some(id.as_str()));
        }
        let (n, token) = last.split_once('_').unwrap();
        let elsewhere = format!("{}_{token}", n.parse::<i64>().unwrap() + 1);
        let (_, first) = subscribe_with(&app, &w.api, Some(w.bob), "?shared=true", Some(&elsewhere)).await;
        assert_eq!(first.event, "reset", "{first:?}");
        assert_ne!(first.id.as_deref(), Some(last.as_str()));
        // Bob resumes and gets what he missed.
        let (mut s, ready) = subscribe_with(&app, &w.api, Some(w.bob), "?shared=true", Some(&last)).await;
        assert_eq!(ready.id.as_deref(), Some(last.as_str()), "resumed where it was");
        let ev = s.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(b.as_str())), "{ev:?}");
    }

    async fn parked_states_are_bounded_per_user(t) {
        let w = world(&t, config(&t, |c| {
            c.ops.realtime_resume_seconds = 300;
            c.ops.realtime_max_streams = 3;
            c.ops.realtime_max_streams_per_user = 1;
        })).await;
        let app = test::init_service(w.api.app()).await;
        let (mut s, _) = subscribe(&app, &w.api, Some(w.bob), "?shared=true").await;
        memo(&app, &w.api, w.alice, json!({"title": "a", "shared": true})).await;
        let last = s.next().await.id.unwrap();
        drop(s);
        // Alice opens and drops streams, more than the process keeps parked: only her own
        // oldest states make room for her newer ones.
        for _ in 0..4 {
            let (s, _) = subscribe(&app, &w.api, Some(w.alice), "").await;
            drop(s);
        }
        let b = memo(&app, &w.api, w.alice, json!({"title": "b", "shared": true})).await;
        let (mut s, ready) = subscribe_with(&app, &w.api, Some(w.bob), "?shared=true", Some(&last)).await;
        assert_eq!(ready.id.as_deref(), Some(last.as_str()), "Bob's state was kept");
        let ev = s.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(b.as_str())), "{ev:?}");
    }

    async fn concurrent_writers_are_each_delivered_once_in_commit_order(t) {
        let w = world(&t, config(&t, |_| {})).await;
        let app = test::init_service(w.api.app()).await;
        let (mut s, _) = subscribe(&app, &w.api, Some(w.bob), "?shared=true").await;
        // Forty creates at once: on PostgreSQL their transactions overlap and commit in an
        // order of their own, with no lock between them.
        let writes = (0..40).map(|i| memo(&app, &w.api, w.alice, json!({"title": format!("c{i}"), "shared": true})));
        let made: std::collections::HashSet<String> = futures_util::future::join_all(writes).await.into_iter().collect();
        let mut got = std::collections::HashSet::new();
        for _ in 0..40 {
            let ev = s.next().await;
            assert_eq!(ev.event, "created", "{ev:?}");
            assert!(got.insert(ev.data["id"].as_str().unwrap().to_owned()), "delivered twice: {ev:?}");
        }
        assert_eq!(got, made);
        // Nothing more was queued: the next event is the next write's.
        let last = memo(&app, &w.api, w.alice, json!({"title": "last", "shared": true})).await;
        let ev = s.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(last.as_str())), "{ev:?}");
    }

    async fn a_resume_takes_over_a_stream_the_server_still_holds(t) {
        let w = world(&t, config(&t, |c| c.ops.realtime_resume_seconds = 300)).await;
        let app = test::init_service(w.api.app()).await;
        let (mut old, _) = subscribe(&app, &w.api, Some(w.bob), "?shared=true").await;
        let a = memo(&app, &w.api, w.alice, json!({"title": "a", "shared": true})).await;
        let seen = old.next().await;
        assert_eq!(seen.data["id"], a.as_str());
        let last = seen.id.unwrap();
        // `b` is written into the old connection, which the client has lost already (the
        // server has not noticed: the stream is still open on its side).
        let b = memo(&app, &w.api, w.alice, json!({"title": "b", "shared": true})).await;
        assert_eq!(old.next().await.data["id"], b.as_str());
        // The client comes back at once with the last event it received: it takes the stream
        // over, gets `b` again (as new to it), and the old stream ends.
        let (mut s, ready) = subscribe_with(&app, &w.api, Some(w.bob), "?shared=true", Some(&last)).await;
        assert_eq!(ready.event, "ready", "no reset: {ready:?}");
        assert_eq!(ready.id.as_deref(), Some(last.as_str()), "resumed where it was");
        let ev = s.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(b.as_str())), "{ev:?}");
        assert!(old.try_next().await.is_none(), "the old stream ends");
        // `a` was shown before the client's last event: its change is an update.
        patch(&app, &w.api, w.alice, &a, json!({"title": "a2"})).await;
        let ev = s.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("updated", Some(a.as_str())), "{ev:?}");
        // Another caller with the same id takes nothing.
        let (_, first) = subscribe_with(&app, &w.api, Some(w.alice), "?shared=true", Some(&last)).await;
        assert_eq!(first.event, "reset", "{first:?}");
        let c = memo(&app, &w.api, w.alice, json!({"title": "c", "shared": true})).await;
        let ev = s.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(c.as_str())), "still Bob's: {ev:?}");
    }

    async fn a_prompt_reconnect_after_the_drop_gets_exactly_what_was_missed(t) {
        let w = world(&t, config(&t, |c| c.ops.realtime_resume_seconds = 300)).await;
        let app = test::init_service(w.api.app()).await;
        let (mut s, _) = subscribe(&app, &w.api, Some(w.bob), "?shared=true").await;
        let a = memo(&app, &w.api, w.alice, json!({"title": "a", "shared": true})).await;
        let last = s.next().await.id.unwrap();
        drop(s);
        let b = memo(&app, &w.api, w.alice, json!({"title": "b", "shared": true})).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (mut s, ready) = subscribe_with(&app, &w.api, Some(w.bob), "?shared=true", Some(&last)).await;
        assert_eq!(ready.event, "ready", "no reset: {ready:?}");
        let ev = s.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("created", Some(b.as_str())), "{ev:?}");
        patch(&app, &w.api, w.alice, &a, json!({"title": "a2"})).await;
        let ev = s.next().await;
        assert_eq!((ev.event.as_str(), ev.data["id"].as_str()), ("updated", Some(a.as_str())), "nothing else: {ev:?}");
    }

    async fn a_subscription_over_the_cap_reads_nothing_of_its_view(t) {
        let w = world(&t, config(&t, |c| {
            c.ops.realtime_max_streams_per_user = 1;
            c.db.orm_performance_monitoring = true;
            c.db.orm_slow_query_threshold = 60.0;
        })).await;
        let app = test::init_service(w.api.app()).await;
        for i in 0..3 {
            memo(&app, &w.api, w.alice, json!({"title": format!("m{i}")})).await;
        }
        let open = || auth(Req::get().uri("/api/memos/events/?priority__gte=1"), &w.api, w.alice).to_request();
        let first = test::call_service(&app, open()).await;
        assert_eq!(first.status().as_u16(), 200);
        let admitted = queries_of(&first);
        let refused = test::call_service(&app, open()).await;
        assert_eq!(refused.status().as_u16(), 429);
        // The refused one ran the query that found its caller, not those of the view's
        // position and rows that the admitted one ran.
        let refused = queries_of(&refused);
        assert_eq!(refused, 1, "admitted: {admitted}");
        assert!(admitted >= refused + 2, "admitted: {admitted}");
        drop(first);
    }
}

/// Two instances on one PostgreSQL database: written on A, received on B, in order (B hears
/// of A's commits through LISTEN/NOTIFY), and resumed on B after a dropped connection.
#[cfg(feature = "postgres")]
#[actix_web::test]
async fn two_instances_on_postgres() {
    let Some(t) = TestDb::postgres().await else {
        return;
    };
    let cfg = config(&t, |_| {});
    let w = world(&t, cfg.clone()).await;
    let a = test::init_service(w.api.app()).await;
    let other = api(cfg.clone(), Database::connect(&cfg).await.unwrap());
    let b = test::init_service(other.app()).await;
    let (mut sse, _) = subscribe(&b, &other, Some(w.bob), "").await;
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(
            memo(
                &a,
                &w.api,
                w.alice,
                json!({"title": format!("t{i}"), "shared": true}),
            )
            .await,
        );
    }
    let mut last = None;
    for id in &ids {
        let ev = sse.next().await;
        assert_eq!(
            (ev.event.as_str(), ev.data["id"].as_str()),
            ("created", Some(id.as_str()))
        );
        last = ev.id;
    }
    drop(sse);
    patch(&a, &w.api, w.alice, &ids[0], json!({"title": "t0 again"})).await;
    let d = memo(&a, &w.api, w.alice, json!({"title": "t3", "shared": true})).await;
    let (mut sse, _) = subscribe_with(&b, &other, Some(w.bob), "", last.as_deref()).await;
    let ev = sse.next().await;
    assert_eq!(
        (ev.event.as_str(), ev.data["title"].as_str()),
        ("updated", Some("t0 again"))
    );
    let ev = sse.next().await;
    assert_eq!(
        (ev.event.as_str(), ev.data["id"].as_str()),
        ("created", Some(d.as_str()))
    );
}

/// On PostgreSQL, writes whose commits finish out of the order of their event ids: a
/// transaction that took its event id first commits last, after a reader has already seen the
/// later one's event; and a transaction that began writing first takes its event id last.
/// Every event is delivered, once, in the order of the transactions.
#[cfg(feature = "postgres")]
#[actix_web::test]
async fn commits_out_of_id_order_are_neither_skipped_nor_repeated() {
    let Some(t) = TestDb::postgres().await else {
        return;
    };
    let w = world(&t, config(&t, |_| {})).await;
    let app = test::init_service(w.api.app()).await;
    let db = w.api.state().db.clone();
    let (mut s, _) = subscribe(&app, &w.api, Some(w.bob), "?shared=true").await;
    let insert_memo = |id: Uuid, title: &str| {
        format!(
            "INSERT INTO memos (id, created_at, updated_at, owner_id, title, shared, priority) \
             VALUES ('{id}', now(), now(), '{}', '{title}', true, 0);",
            w.alice
        )
    };
    let record = |id: Uuid| {
        format!(
            "INSERT INTO crudforge_events (resource, kind, row_key, created_at) \
             VALUES ('memos', 'created', '{id}', {});",
            chrono::Utc::now().timestamp_micros()
        )
    };
    for first_writes_first in [true, false] {
        let (early, late) = (Uuid::new_v4(), Uuid::new_v4());
        let mut one = db.get().await.unwrap();
        let mut two = db.get().await.unwrap();
        // `one` begins writing (and so gets its transaction id) before `two`.
        let mut begin = format!("BEGIN; {}", insert_memo(early, &format!("early {early}")));
        if first_writes_first {
            // ... and takes its event id first too, but commits last.
            begin.push_str(&record(early));
        }
        with_conn!(one, |c| c.batch_execute(&begin).await).unwrap();
        let sql = format!(
            "BEGIN; {} {} NOTIFY crudforge_events; COMMIT;",
            insert_memo(late, &format!("late {late}")),
            record(late)
        );
        with_conn!(two, |c| c.batch_execute(&sql).await).unwrap();
        // Time for the delivery to read what is committed (it must hold `late` back).
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut end = String::new();
        if !first_writes_first {
            end.push_str(&record(early));
        }
        end.push_str("NOTIFY crudforge_events; COMMIT;");
        with_conn!(one, |c| c.batch_execute(&end).await).unwrap();
        for want in [early, late] {
            let ev = s.next().await;
            assert_eq!(
                (ev.event.as_str(), ev.data["id"].as_str()),
                ("created", Some(want.to_string().as_str())),
                "first_writes_first: {first_writes_first}; {ev:?}"
            );
        }
    }
    // Nothing was delivered twice: the next event is the next write's.
    let next = memo(
        &app,
        &w.api,
        w.alice,
        json!({"title": "next", "shared": true}),
    )
    .await;
    let ev = s.next().await;
    assert_eq!(
        (ev.event.as_str(), ev.data["id"].as_str()),
        ("created", Some(next.as_str())),
        "{ev:?}"
    );
}

/// On PostgreSQL, a stream resumes on another instance: taken over from a live stream the
/// first instance still holds (which ends), or from a parked one; a foreign id takes nothing
/// and ends nothing.
#[cfg(feature = "postgres")]
#[actix_web::test]
async fn a_stream_resumes_on_another_instance() {
    let Some(t) = TestDb::postgres().await else {
        return;
    };
    let cfg = config(&t, |c| c.ops.realtime_resume_seconds = 300);
    let w = world(&t, cfg.clone()).await;
    let a = test::init_service(w.api.app()).await;
    let other = api(cfg.clone(), Database::connect(&cfg).await.unwrap());
    let b = test::init_service(other.app()).await;
    // A live stream on A: its client lost the connection after `m1`, the server did not
    // notice, and `m2` went into the dead connection.
    let (mut old, _) = subscribe(&a, &w.api, Some(w.bob), "?shared=true").await;
    let m1 = memo(&a, &w.api, w.alice, json!({"title": "m1", "shared": true})).await;
    let seen = old.next().await;
    assert_eq!(seen.data["id"], m1.as_str());
    let last = seen.id.unwrap();
    let m2 = memo(&a, &w.api, w.alice, json!({"title": "m2", "shared": true})).await;
    assert_eq!(old.next().await.data["id"], m2.as_str());
    // Alice, with Bob's id on B: reset, and Bob's stream on A goes on.
    let (_, first) = subscribe_with(&b, &other, Some(w.alice), "?shared=true", Some(&last)).await;
    assert_eq!(first.event, "reset", "{first:?}");
    let m3 = memo(&a, &w.api, w.alice, json!({"title": "m3", "shared": true})).await;
    assert_eq!(
        old.next().await.data["id"],
        m3.as_str(),
        "the owner's stream goes on"
    );
    // Bob reconnects to B with the last event he received: B takes the stream over from A.
    let (mut s, ready) = subscribe_with(&b, &other, Some(w.bob), "?shared=true", Some(&last)).await;
    assert_eq!(ready.event, "ready", "no reset: {ready:?}");
    assert_eq!(ready.id.as_deref(), Some(last.as_str()));
    for want in [&m2, &m3] {
        let ev = s.next().await;
        assert_eq!(
            (ev.event.as_str(), ev.data["id"].as_str()),
            ("created", Some(want.as_str())),
            "{ev:?}"
        );
    }
    assert!(old.try_next().await.is_none(), "the stream on A ends");
    patch(&a, &w.api, w.alice, &m1, json!({"title": "m1 again"})).await;
    let ev = s.next().await;
    assert_eq!(
        (ev.event.as_str(), ev.data["id"].as_str()),
        ("updated", Some(m1.as_str())),
        "{ev:?}"
    );
    let last = ev.id.unwrap();
    // Parked on B (the connection dropped), resumed on A.
    drop(s);
    let m4 = memo(&b, &other, w.alice, json!({"title": "m4", "shared": true})).await;
    let (mut s, ready) = subscribe_with(&a, &w.api, Some(w.bob), "?shared=true", Some(&last)).await;
    assert_eq!(ready.event, "ready", "no reset: {ready:?}");
    let ev = s.next().await;
    assert_eq!(
        (ev.event.as_str(), ev.data["id"].as_str()),
        ("created", Some(m4.as_str())),
        "{ev:?}"
    );
}

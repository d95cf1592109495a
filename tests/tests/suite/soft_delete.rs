//! Soft delete on both backends: a DELETE keeps the row (`deleted_at`) and every read and write
//! stops seeing it (GET, lists, counts, cursors, PATCH, DELETE); administrators see deleted rows
//! with `include_deleted=true` (others get 401/403) and restore them with the rules, hooks,
//! `If-Match` and `Idempotency-Key` of an update; a unique index scoped to live rows lets a
//! name be reused; the purge removes only rows deleted longer ago than the retention (at once,
//! and from a serving API's background task); the OpenAPI description shows the restore
//! operation and `include_deleted`.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::auth::CurrentUser;
use crudforge::condition::{Arg, Cond};
use crudforge::crud::{HookCtx, Operation};
use crudforge::perms::{Access, Rules};
use crudforge::sql_types::Portable;
use crudforge::users;
use crudforge::{with_conn, Api, Database, Error, Resource};
use crudforge_tests::{backend_tests, Backend};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use futures_util::future::LocalBoxFuture;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Notes.
    notes (id) {
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
        /// Deleted.
        deleted_at -> Nullable<PortableTimestamp>,
    }
}

type DateTime = chrono::DateTime<chrono::Utc>;

/// A note: signed-in users read every note, owners write theirs.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = notes)]
#[resource(soft_delete, rules = ReadAllWriteOwn)]
pub struct Note {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Its owner.
    pub owner_id: Uuid,
    /// Its title, unique among live notes.
    #[resource(max_len = 100)]
    pub title: String,
    /// When it was deleted.
    pub deleted_at: Option<DateTime>,
}

/// Any signed-in user reads; the owner writes; the server sets the owner.
#[derive(Debug, Clone, Copy)]
pub struct ReadAllWriteOwn;

impl Rules<Note> for ReadAllWriteOwn {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        match user {
            Some(_) => Access::All,
            None => Access::Unauthenticated,
        }
    }

    fn write(&self, user: Option<&CurrentUser>) -> Access {
        Access::owned_by(user, "owner_id")
    }

    fn create(
        &self,
        user: Option<&CurrentUser>,
        body: &mut Map<String, Value>,
    ) -> Result<(), Error> {
        let u = user.ok_or_else(|| Error::Unauthorized("Authentication required.".into()))?;
        body.insert("owner_id".to_owned(), Value::String(u.id.to_string()));
        Ok(())
    }

    fn server_fields(&self) -> &[&'static str] {
        &["owner_id"]
    }
}

/// Before update (and restore): a restored note's title says so.
async fn mark_restored(
    ctx: HookCtx,
    mut input: NoteUpdate,
    current: Arc<Note>,
) -> crudforge::Result<NoteUpdate> {
    if ctx.operation == Operation::Restore {
        input.title = Some(format!("{} (restored)", current.title));
    }
    Ok(input)
}

/// After update (and restore), in the transaction: a note titled `locked` cannot come back.
fn refuse_locked<'a>(
    _c: &'a mut crudforge::db::Conn,
    ctx: &'a HookCtx,
    row: &'a Note,
) -> LocalBoxFuture<'a, crudforge::Result<()>> {
    let locked = ctx.operation == Operation::Restore && row.title.starts_with("locked");
    Box::pin(async move {
        if locked {
            return Err(Error::Conflict("locked notes stay deleted".into()));
        }
        Ok(())
    })
}

struct World {
    api: Api,
    db: Database,
    admin: Uuid,
    alice: Uuid,
    bob: Uuid,
}

async fn world(t: &crudforge_tests::TestDb, retention: u32) -> World {
    let cfg = t.config().with(|c| {
        c.auth.bcrypt_cost = 4;
        c.db.soft_delete_retention = retention;
    });
    let db = t.open(&cfg).await;
    // The title is unique among live notes only: a partial unique index, on both backends.
    let ddl = match db.backend() {
        Backend::Sqlite => "CREATE TABLE notes (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, owner_id TEXT NOT NULL, title TEXT NOT NULL, deleted_at TEXT); CREATE UNIQUE INDEX notes_live_title ON notes (title) WHERE deleted_at IS NULL",
        Backend::Postgres => "CREATE TABLE notes (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, owner_id UUID NOT NULL, title TEXT NOT NULL, deleted_at TIMESTAMPTZ); CREATE UNIQUE INDEX notes_live_title ON notes (title) WHERE deleted_at IS NULL",
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
    let bob = users::create_user(&db, "bob@example.com", "some-pass", true, 4)
        .await
        .unwrap();
    crudforge_tests::critters::create_table(&db).await;
    let api = Api::new(cfg, db.clone())
        .unwrap()
        .mount(
            Note::blueprint("/api/notes/")
                .before_update(mark_restored)
                .after_update(refuse_locked),
        )
        .unwrap()
        .mount(crudforge_tests::critters::Critter::blueprint(
            "/api/critters/",
        ))
        .unwrap();
    World {
        api,
        db,
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
    (
        status,
        if body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&body).unwrap()
        },
    )
}

/// Every row of the table, deleted or not (no scope, no live-rows condition).
async fn stored(db: &Database) -> i64 {
    let mut conn = db.get().await.unwrap();
    Note::count(&mut conn, &[]).await.unwrap()
}

/// Moves a note's deletion back in time.
async fn deleted_ago(db: &Database, id: &str, secs: i64) {
    let id: Uuid = id.parse().unwrap();
    let at = chrono::Utc::now() - chrono::Duration::seconds(secs);
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(notes::table.filter(notes::id.eq(Portable(id))))
                .set(notes::deleted_at.eq(Portable(Some(at)))),
            c,
        )
        .await
    })
    .unwrap();
}

backend_tests! {
    async fn a_deleted_note_leaves_every_read_and_write(t) {
        let w = world(&t, 0).await;
        let app = test::init_service(w.api.app()).await;
        let mut ids = Vec::new();
        for title in ["one", "two", "three"] {
            let (s, n) = send(&app, auth(Req::post().uri("/api/notes/").set_json(json!({"title": title})), &w.api, w.alice)).await;
            assert_eq!(s, 201, "{n}");
            assert_eq!(n["deleted_at"], Value::Null);
            ids.push(n["id"].as_str().unwrap().to_owned());
        }
        let two = format!("/api/notes/{}", ids[1]);
        // Only the owner may delete; DELETE answers as always.
        assert_eq!(send(&app, auth(Req::delete().uri(&two), &w.api, w.bob)).await.0, 403);
        assert_eq!(send(&app, auth(Req::delete().uri(&two), &w.api, w.alice)).await.0, 204);
        assert_eq!(stored(&w.db).await, 3, "the row is kept");
        // Gone for GET, PATCH and DELETE, even for an administrator.
        for who in [w.alice, w.admin] {
            assert_eq!(send(&app, auth(Req::get().uri(&two), &w.api, who)).await.0, 404);
        }
        assert_eq!(send(&app, auth(Req::patch().uri(&two).set_json(json!({"title": "x"})), &w.api, w.alice)).await.0, 404);
        assert_eq!(send(&app, auth(Req::delete().uri(&two), &w.api, w.alice)).await.0, 404);
        assert_eq!(send(&app, auth(Req::delete().uri(&two), &w.api, w.admin)).await.0, 404);
        // Gone from lists, their totals and filters.
        let (s, list) = send(&app, auth(Req::get().uri("/api/notes/"), &w.api, w.admin)).await;
        assert_eq!(s, 200, "{list}");
        assert_eq!(list["pagination"]["total"], 2);
        let titles: Vec<&str> = list["data"].as_array().unwrap().iter().map(|n| n["title"].as_str().unwrap()).collect();
        assert_eq!(titles, ["one", "three"]);
        let (_, list) = send(&app, auth(Req::get().uri("/api/notes/?title=two"), &w.api, w.alice)).await;
        assert_eq!(list["pagination"]["total"], 0);
        // ... and from pages reached by cursor.
        let mut seen = Vec::new();
        let mut uri = "/api/notes/?page_size=1".to_owned();
        loop {
            let (s, page) = send(&app, auth(Req::get().uri(&uri), &w.api, w.alice)).await;
            assert_eq!(s, 200, "{page}");
            seen.extend(page["data"].as_array().unwrap().iter().map(|n| n["title"].as_str().unwrap().to_owned()));
            match page["pagination"]["next_cursor"].as_str() {
                Some(c) => uri = format!("/api/notes/?page_size=1&cursor={c}"),
                None => break,
            }
        }
        assert_eq!(seen, ["one", "three"]);
    }

    async fn estimated_counts_do_not_count_deleted_notes(t) {
        let w = world(&t, 0).await;
        let app = test::init_service(w.api.app()).await;
        // Fifty notes named Phantom, each deleted (a title is unique among live notes only),
        // and one live note.
        let mut conn = w.db.get().await.unwrap();
        for _ in 0..50 {
            let input: NoteCreate = serde_json::from_value(json!({"title": "Phantom", "owner_id": w.alice})).unwrap();
            let id = Note::insert(&mut conn, input).await.unwrap().id;
            assert!(Note::delete(&mut conn, &[Cond::eq("id", Arg::Uuid(id))]).await.unwrap());
        }
        let input: NoteCreate = serde_json::from_value(json!({"title": "kept", "owner_id": w.alice})).unwrap();
        Note::insert(&mut conn, input).await.unwrap();
        if w.db.backend() == Backend::Postgres {
            // Statistics, as autovacuum would gather them: the planner now knows the Phantoms.
            with_conn!(conn, |c| c.batch_execute("ANALYZE notes").await).unwrap();
        }
        drop(conn);
        // Whoever may not list deleted notes, administrators without `include_deleted`
        // included, gets the exact count: the estimate would count the deleted Phantoms (and
        // is never below 1, so even an unused title would answer).
        for who in [w.bob, w.alice, w.admin] {
            for (title, n) in [("Phantom", 0), ("never-used", 0), ("kept", 1)] {
                let uri = format!("/api/notes/?count=estimated&title={title}");
                let (s, list) = send(&app, auth(Req::get().uri(&uri), &w.api, who)).await;
                assert_eq!(s, 200, "{list}");
                assert_eq!(list["pagination"]["total"], n, "{uri}: {list}");
                assert_eq!(list["pagination"]["total_pages"], n, "{uri}: {list}");
            }
        }
        // An administrator's list of every row, deleted ones included, is the whole table:
        // there the estimate is the planner's (at least 1 on PostgreSQL, where the exact count
        // is 0), and exact on SQLite.
        let uri = "/api/notes/?count=estimated&include_deleted=true&title=never-used";
        let (s, list) = send(&app, auth(Req::get().uri(uri), &w.api, w.admin)).await;
        assert_eq!(s, 200, "{list}");
        let estimate = list["pagination"]["total"].as_i64().unwrap();
        match w.db.backend() {
            Backend::Sqlite => assert_eq!(estimate, 0, "{list}"),
            Backend::Postgres => assert!(estimate >= 1, "the planner's estimate: {list}"),
        }
        let (_, list) = send(&app, auth(Req::get().uri("/api/notes/?count=estimated&include_deleted=true&title=Phantom"), &w.api, w.admin)).await;
        assert!(list["pagination"]["total"].as_i64().unwrap() >= 1, "{list}");
    }

    async fn administrators_alone_see_deleted_notes(t) {
        let w = world(&t, 0).await;
        let app = test::init_service(w.api.app()).await;
        let (_, n) = send(&app, auth(Req::post().uri("/api/notes/").set_json(json!({"title": "gone"})), &w.api, w.alice)).await;
        send(&app, auth(Req::post().uri("/api/notes/").set_json(json!({"title": "kept"})), &w.api, w.alice)).await;
        let item = format!("/api/notes/{}", n["id"].as_str().unwrap());
        assert_eq!(send(&app, auth(Req::delete().uri(&item), &w.api, w.alice)).await.0, 204);
        let (s, list) = send(&app, auth(Req::get().uri("/api/notes/?include_deleted=true"), &w.api, w.admin)).await;
        assert_eq!(s, 200, "{list}");
        assert_eq!(list["pagination"]["total"], 2);
        let (_, list) = send(&app, auth(Req::get().uri("/api/notes/?include_deleted=true&deleted_at__isnull=false"), &w.api, w.admin)).await;
        assert_eq!(list["pagination"]["total"], 1);
        assert_eq!(list["data"][0]["title"], "gone");
        assert!(list["data"][0]["deleted_at"].is_string(), "{list}");
        let (s, one) = send(&app, auth(Req::get().uri(&format!("{item}?include_deleted=true")), &w.api, w.admin)).await;
        assert_eq!(s, 200, "{one}");
        assert!(one["deleted_at"].is_string());
        // `false` is the default, for anyone.
        let (s, list) = send(&app, auth(Req::get().uri("/api/notes/?include_deleted=false"), &w.api, w.alice)).await;
        assert_eq!((s, list["pagination"]["total"].clone()), (200, json!(1)));
        // Others are refused: 403 signed in (even the owner), 401 anonymous.
        for uri in ["/api/notes/?include_deleted=true".to_owned(), format!("{item}?include_deleted=true")] {
            let (s, p) = send(&app, auth(Req::get().uri(&uri), &w.api, w.alice)).await;
            assert_eq!(s, 403, "{p}");
            assert_eq!(p["type"], "/errors/forbidden_error");
            assert_eq!(send(&app, Req::get().uri(&uri)).await.0, 401);
        }
        // A malformed value, or a resource that keeps no deleted rows: 400 naming it.
        let (s, p) = send(&app, auth(Req::get().uri("/api/notes/?include_deleted=maybe"), &w.api, w.admin)).await;
        assert_eq!(s, 400, "{p}");
        assert!(p["detail"].as_str().unwrap().contains("include_deleted"), "{p}");
        let (s, p) = send(&app, auth(Req::get().uri("/api/critters/?include_deleted=true"), &w.api, w.admin)).await;
        assert_eq!(s, 400, "{p}");
    }

    async fn restore_follows_the_rules_and_hooks_of_an_update(t) {
        let w = world(&t, 0).await;
        let app = test::init_service(w.api.app()).await;
        let (_, n) = send(&app, auth(Req::post().uri("/api/notes/").set_json(json!({"title": "plan"})), &w.api, w.alice)).await;
        let item = format!("/api/notes/{}", n["id"].as_str().unwrap());
        let restore = format!("{item}/restore/");
        // Not deleted: 409 for an administrator, 404 for anyone else (even the owner); nothing
        // at that path: 404.
        assert_eq!(send(&app, auth(Req::post().uri(&restore), &w.api, w.admin)).await.0, 409);
        assert_eq!(send(&app, auth(Req::post().uri(&restore), &w.api, w.alice)).await.0, 404);
        let nowhere = format!("/api/notes/{}/restore/", Uuid::new_v4());
        assert_eq!(send(&app, auth(Req::post().uri(&nowhere), &w.api, w.admin)).await.0, 404);
        assert_eq!(send(&app, auth(Req::delete().uri(&item), &w.api, w.alice)).await.0, 204);
        // Bob may read the note but not write it: 404 (a deleted note is not his to know
        // about); anonymous: 401.
        assert_eq!(send(&app, auth(Req::post().uri(&restore), &w.api, w.bob)).await.0, 404);
        assert_eq!(send(&app, Req::post().uri(&restore)).await.0, 401);
        // If-Match is checked against the deleted row.
        let (s, p) = send(&app, auth(Req::post().uri(&restore).insert_header(("if-match", "\"nope\"")), &w.api, w.alice)).await;
        assert_eq!(s, 412, "{p}");
        // The owner restores: 200 with the item, the before-update hook ran.
        let req = Req::post().uri(&restore).insert_header(("idempotency-key", "restore-plan-1"));
        let (s, back) = send(&app, auth(req, &w.api, w.alice)).await;
        assert_eq!(s, 200, "{back}");
        assert_eq!(back["deleted_at"], Value::Null);
        assert_eq!(back["title"], "plan (restored)");
        let (s, got) = send(&app, auth(Req::get().uri(&item), &w.api, w.bob)).await;
        assert_eq!((s, &got["title"]), (200, &json!("plan (restored)")));
        // A retry with the same key gets the stored answer.
        let req = Req::post().uri(&restore).insert_header(("idempotency-key", "restore-plan-1"));
        let resp = test::call_service(&app, auth(req, &w.api, w.alice).to_request()).await;
        assert_eq!(resp.status().as_u16(), 200);
        assert_eq!(resp.headers().get("idempotent-replayed").unwrap(), "true");
        // An after-update hook's refusal rolls the restore back.
        let (_, l) = send(&app, auth(Req::post().uri("/api/notes/").set_json(json!({"title": "locked"})), &w.api, w.alice)).await;
        let locked = format!("/api/notes/{}", l["id"].as_str().unwrap());
        assert_eq!(send(&app, auth(Req::delete().uri(&locked), &w.api, w.alice)).await.0, 204);
        let (s, p) = send(&app, auth(Req::post().uri(&format!("{locked}/restore/")), &w.api, w.admin)).await;
        assert_eq!(s, 409, "{p}");
        assert_eq!(send(&app, auth(Req::get().uri(&locked), &w.api, w.admin)).await.0, 404);
    }

    async fn a_restore_does_not_tell_deleted_notes_from_live_ones_or_none(t) {
        let w = world(&t, 0).await;
        let app = test::init_service(w.api.app()).await;
        let (_, live) = send(&app, auth(Req::post().uri("/api/notes/").set_json(json!({"title": "live"})), &w.api, w.alice)).await;
        let (_, gone) = send(&app, auth(Req::post().uri("/api/notes/").set_json(json!({"title": "gone"})), &w.api, w.alice)).await;
        let path = |n: &Value| format!("/api/notes/{}", n["id"].as_str().unwrap());
        assert_eq!(send(&app, auth(Req::delete().uri(&path(&gone)), &w.api, w.alice)).await.0, 204);
        let restore = |p: String| format!("{p}/restore/");
        let targets = [
            restore(path(&gone)),
            restore(path(&live)),
            format!("/api/notes/{}/restore/", Uuid::new_v4()),
        ];
        // Bob reads every note but writes none of Alice's: a deleted note, a live one and no
        // note at all get the same 404, body and all, so he learns nothing from restores.
        let mut answers = Vec::new();
        for uri in &targets {
            answers.push(send(&app, auth(Req::post().uri(uri), &w.api, w.bob)).await);
        }
        // (The problem's `instance` and `request_id` name the request, not the note.)
        let problem = |p: &Value| (p["type"].clone(), p["title"].clone(), p["detail"].clone(), p["status"].clone());
        for (uri, (s, p)) in targets.iter().zip(&answers) {
            assert_eq!(*s, 404, "{uri}: {p}");
            assert_eq!(problem(p), problem(&answers[2].1), "{uri}");
        }
        // So does If-Match, which reads the row first.
        let (s, p) = send(&app, auth(Req::post().uri(&targets[0]).insert_header(("if-match", "\"nope\"")), &w.api, w.bob)).await;
        assert_eq!((s, problem(&p)), (404, problem(&answers[2].1)));
        // Alice, the owner, gets 404 for her live note too (she may not list deleted notes).
        assert_eq!(send(&app, auth(Req::post().uri(&targets[1]), &w.api, w.alice)).await.0, 404);
        // Administrators may list deleted notes, so they keep the detail: 409 for a live note,
        // 404 for none.
        let (s, p) = send(&app, auth(Req::post().uri(&targets[1]), &w.api, w.admin)).await;
        assert_eq!(s, 409, "{p}");
        assert!(p["detail"].as_str().unwrap().contains("not deleted"), "{p}");
        assert_eq!(send(&app, auth(Req::post().uri(&targets[2]), &w.api, w.admin)).await.0, 404);
        // Nothing was restored by any of it; the owner still can.
        let (_, list) = send(&app, auth(Req::get().uri("/api/notes/"), &w.api, w.bob)).await;
        assert_eq!(list["pagination"]["total"], 1, "{list}");
        assert_eq!(send(&app, auth(Req::post().uri(&targets[0]), &w.api, w.alice)).await.0, 200);
    }

    async fn titles_are_unique_among_live_notes_only(t) {
        let w = world(&t, 0).await;
        let app = test::init_service(w.api.app()).await;
        let post = |title: &str| auth(Req::post().uri("/api/notes/").set_json(json!({"title": title})), &w.api, w.alice);
        let (_, first) = send(&app, post("same")).await;
        assert_eq!(send(&app, post("same")).await.0, 409);
        let item = format!("/api/notes/{}", first["id"].as_str().unwrap());
        assert_eq!(send(&app, auth(Req::delete().uri(&item), &w.api, w.alice)).await.0, 204);
        assert_eq!(send(&app, post("same")).await.0, 201, "a deleted note's title is free");
        // Restoring the first would make two live notes with one title: 409, still deleted.
        let (s, p) = send(&app, auth(Req::post().uri(&format!("{item}/restore/")), &w.api, w.admin)).await;
        assert_eq!(s, 409, "{p}");
        assert_eq!(send(&app, auth(Req::get().uri(&item), &w.api, w.admin)).await.0, 404);
    }

    async fn the_purge_removes_only_rows_deleted_before_the_retention(t) {
        let w = world(&t, 3600).await;
        let app = test::init_service(w.api.app()).await;
        let mut ids = Vec::new();
        for title in ["live", "recent", "old"] {
            let (_, n) = send(&app, auth(Req::post().uri("/api/notes/").set_json(json!({"title": title})), &w.api, w.alice)).await;
            ids.push(n["id"].as_str().unwrap().to_owned());
        }
        for id in &ids[1..] {
            assert_eq!(send(&app, auth(Req::delete().uri(&format!("/api/notes/{id}")), &w.api, w.alice)).await.0, 204);
        }
        deleted_ago(&w.db, &ids[1], 3000).await;
        deleted_ago(&w.db, &ids[2], 7200).await;
        assert_eq!(w.api.purge_deleted().await.unwrap(), 1);
        assert_eq!(stored(&w.db).await, 2);
        let (_, list) = send(&app, auth(Req::get().uri("/api/notes/?include_deleted=true"), &w.api, w.admin)).await;
        let titles: Vec<&str> = list["data"].as_array().unwrap().iter().map(|n| n["title"].as_str().unwrap()).collect();
        assert_eq!(titles, ["live", "recent"]);
        assert_eq!(w.api.purge_deleted().await.unwrap(), 0, "nothing else is old enough");
        // Without a retention (the default) nothing is ever purged.
        let keep = world(&crudforge_tests::TestDb::sqlite().await, 0).await;
        assert_eq!(keep.api.purge_deleted().await.unwrap(), 0);
    }

    async fn a_serving_api_purges_in_the_background(t) {
        let w = world(&t, 3600).await;
        let mut conn = w.db.get().await.unwrap();
        let mut ids = Vec::new();
        for title in ["old", "kept"] {
            let input: NoteCreate = serde_json::from_value(json!({"title": title, "owner_id": w.alice})).unwrap();
            let id = Note::insert(&mut conn, input).await.unwrap().id;
            assert!(Note::delete(&mut conn, &[Cond::eq("id", Arg::Uuid(id))]).await.unwrap());
            ids.push(id.to_string());
        }
        drop(conn);
        deleted_ago(&w.db, &ids[0], 7200).await;
        // The server purges once it is ready, then every hour (the retention here).
        let server = w.api.server("127.0.0.1:0").unwrap();
        let handle = server.handle();
        actix_web::rt::spawn(server);
        let mut left = stored(&w.db).await;
        for _ in 0..600 {
            if left == 1 {
                break;
            }
            actix_web::rt::time::sleep(std::time::Duration::from_millis(50)).await;
            left = stored(&w.db).await;
        }
        handle.stop(false).await;
        assert_eq!(left, 1, "the note deleted two hours ago is purged, the other kept");
        let mut conn = w.db.get().await.unwrap();
        let kept = Note::select(&mut conn, &[], &[], None).await.unwrap();
        assert_eq!(kept[0].title, "kept");
    }

    async fn the_description_shows_restore_and_include_deleted(t) {
        let w = world(&t, 0).await;
        let spec = serde_json::to_value(w.api.openapi()).unwrap();
        let paths = &spec["paths"];
        let restore = &paths["/api/notes/{id}/restore/"]["post"];
        assert_eq!(restore["operationId"], "restoreNote", "{restore}");
        for status in ["200", "401", "403", "404", "409", "412"] {
            assert!(restore["responses"][status].is_object(), "{status}: {restore}");
        }
        // The description says who gets which refusal.
        let said = |status: &str| restore["responses"][status]["description"].as_str().unwrap().to_owned();
        assert!(said("404").contains("Callers other than administrators get this answer to every restore that matches nothing"), "{}", said("404"));
        assert!(said("409").contains("For administrators, the item is not deleted"), "{}", said("409"));
        let names = |op: &Value| -> Vec<String> {
            op["parameters"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str().map(str::to_owned)).collect()
        };
        assert!(names(restore).contains(&"If-Match".to_owned()));
        assert!(names(restore).contains(&"Idempotency-Key".to_owned()));
        assert!(names(&paths["/api/notes/"]["get"]).contains(&"include_deleted".to_owned()));
        assert!(names(&paths["/api/notes/{id}"]["get"]).contains(&"include_deleted".to_owned()));
        assert!(!names(&paths["/api/critters/"]["get"]).contains(&"include_deleted".to_owned()));
        assert!(paths["/api/critters/{id}/restore/"].is_null());
        let _ = w.admin;
    }
}

/// PostgreSQL gives live rows in order from an index that leads with `deleted_at`.
#[cfg(feature = "postgres")]
#[actix_web::test]
async fn postgres_gives_live_rows_in_order_from_an_index_that_leads_with_deleted_at() {
    let Some(t) = crudforge_tests::TestDb::postgres().await else {
        return;
    };
    // SQLite takes `deleted_at IS NULL` as an equality when it orders by an index;
    // PostgreSQL does not, unless `deleted_at` leads the `ORDER BY` too (the generated
    // select adds it). Without it, each page of live rows reads and sorts them all.
    let w = world(&t, 0).await;
    let mut conn = w.db.get().await.unwrap();
    let seed = format!(
        "INSERT INTO notes (id, created_at, updated_at, owner_id, title, deleted_at) \
         SELECT gen_random_uuid(), now() - make_interval(secs => 20000 - i), now(), '{}', 'note ' || i, \
                CASE WHEN i % 10 = 0 THEN now() END \
         FROM generate_series(1, 20000) i; \
         CREATE INDEX notes_live_order ON notes (deleted_at, created_at, id); ANALYZE notes; BEGIN",
        w.alice
    );
    with_conn!(conn, |c| c.batch_execute(&seed).await).unwrap();
    let live = [Cond {
        field: "deleted_at",
        op: crudforge::condition::Op::IsNull,
        arg: Arg::Bool(true),
        param: "deleted_at__isnull".into(),
    }];
    let page = crudforge::crud::Window {
        limit: 50,
        offset: 0,
    };
    #[derive(QueryableByName, Debug, PartialEq)]
    struct Scans {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        seq: i64,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        idx: i64,
    }
    // The backend's counts of the table's scans, those not yet reported included (the
    // seeding's); the select's are the difference.
    // Irrefutable when PostgreSQL is the only backend compiled in.
    #[allow(irrefutable_let_patterns)]
    async fn scans(conn: &mut crudforge::db::Conn) -> Scans {
        let crudforge::db::Conn::Postgres(c) = conn else {
            unreachable!("a PostgreSQL database");
        };
        diesel_async::RunQueryDsl::get_result(
            diesel::sql_query(
                "SELECT COALESCE(seq_scan, 0) AS seq, COALESCE(idx_scan, 0) AS idx \
                 FROM pg_stat_xact_user_tables WHERE relname = 'notes'",
            ),
            &mut **c,
        )
        .await
        .unwrap()
    }
    let before = scans(&mut conn).await;
    let rows = Note::select(&mut conn, &live[..], &[], Some(page))
        .await
        .unwrap();
    let after = scans(&mut conn).await;
    let titles: Vec<String> = rows.iter().map(|n| n.title.clone()).collect();
    let expected: Vec<String> = (1..=55)
        .filter(|i| i % 10 != 0)
        .take(50)
        .map(|i| format!("note {i}"))
        .collect();
    assert_eq!(titles, expected);
    assert_eq!(
        (after.seq - before.seq, after.idx - before.idx),
        (0, 1),
        "one index scan, no scan of the table"
    );
    with_conn!(conn, |c| c.batch_execute("ROLLBACK").await).unwrap();
}

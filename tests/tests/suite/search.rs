//! Full-text search (`#[resource(search(...))]`, `q=`) on both backends, over an index that
//! `make-migrations` writes: ranked results (a match in an earlier member first), pages that
//! continue the ranking, prefixes, the read rules (a member only its owner or administrators
//! read is never matched for anyone else), every write path kept in step (create, batch
//! create, import, update, soft delete, restore), the other doors (export, aggregates), the
//! refusals, the schema check and the description.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::{with_conn, Api, Resource};
use crudforge_tests::http::{auth, call, send, Req};
use crudforge_tests::{backend_tests, Backend};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::{json, Value};
use std::path::Path;
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
        /// Deleted.
        deleted_at -> Nullable<PortableTimestamp>,
        /// Owner.
        owner_id -> PortableUuid,
        /// Title.
        title -> Text,
        /// Body.
        body -> Nullable<Text>,
        /// Private words.
        private -> Nullable<Text>,
        /// Staff words.
        staff -> Nullable<Text>,
        /// Kind.
        kind -> Text,
    }
}

type DateTime = chrono::DateTime<chrono::Utc>;

/// A note: searchable by its title, body, its owner's private words and the staff's words.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = notes)]
#[resource(soft_delete, search("title", "body", "private", "staff"))]
pub struct Note {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Deletion time.
    pub deleted_at: Option<DateTime>,
    /// The owner: the caller.
    #[resource(set = me)]
    pub owner_id: Uuid,
    /// The title.
    pub title: String,
    /// The text.
    pub body: Option<String>,
    /// Words only the owner reads.
    #[resource(read = owner(owner_id))]
    pub private: Option<String>,
    /// Words only administrators read.
    #[resource(read = admin)]
    pub staff: Option<String>,
    /// A kind, to group by.
    pub kind: String,
}

const SQLITE_TABLE: &str = "CREATE TABLE notes (id TEXT PRIMARY KEY NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, deleted_at TEXT, owner_id TEXT NOT NULL, title TEXT NOT NULL, body TEXT, private TEXT, staff TEXT, kind TEXT NOT NULL);";
const PG_TABLE: &str = "CREATE TABLE notes (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, deleted_at TIMESTAMPTZ, owner_id UUID NOT NULL, title TEXT NOT NULL, body TEXT, private TEXT, staff TEXT, kind TEXT NOT NULL);";

struct World {
    api: Api,
    admin: Uuid,
    alice: Uuid,
    bob: Uuid,
    /// The migration folder.
    dir: tempfile::TempDir,
}

fn write(dir: &Path, backend: &str, version: &str, up: &str) {
    let at = dir.join(backend).join(version);
    std::fs::create_dir_all(&at).unwrap();
    std::fs::write(at.join("up.sql"), up).unwrap();
    std::fs::write(at.join("down.sql"), "DROP TABLE notes;").unwrap();
}

/// The API over `notes`, whose table a migration folder creates; with `index`, the search
/// index too, written by `make-migrations` (what it wrote is checked) and applied.
async fn world(t: &crudforge_tests::TestDb, index: bool) -> World {
    let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
    let db = t.open(&cfg).await;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "sqlite", "20260101000000_notes", SQLITE_TABLE);
    write(dir.path(), "postgres", "20260101000000_notes", PG_TABLE);
    let admin = crudforge_tests::user(&db, "admin@example.com").await;
    crudforge::users::grant_role(&db, admin, "ADMIN", None)
        .await
        .unwrap();
    let alice = crudforge_tests::user(&db, "alice@example.com").await;
    let bob = crudforge_tests::user(&db, "bob@example.com").await;
    let api = Api::new(cfg, db.clone())
        .unwrap()
        .mount(
            Note::blueprint("/api/notes/")
                .batch([crudforge::crud::Operation::Post])
                .export()
                .import()
                .aggregates(),
        )
        .unwrap();
    if index {
        make_index(&api, dir.path());
    }
    crudforge::migrations::run_migration_dir(&db, dir.path())
        .await
        .unwrap();
    World {
        api,
        admin,
        alice,
        bob,
        dir,
    }
}

/// Writes the search index's migration into `dir` with `make-migrations`, once.
fn make_index(api: &Api, dir: &Path) {
    let report = crudforge::migrations::make_migrations(api, dir, "note_search").unwrap();
    assert_eq!(
        report.changes,
        ["notes: search index over (title, body, private, staff)"],
        "{report}"
    );
    assert!(report.todo.is_empty(), "{report}");
    // Written once: a second run finds nothing to do.
    let again = crudforge::migrations::make_migrations(api, dir, "again").unwrap();
    assert!(again.folder.is_none(), "{again}");
}

fn post(w: &World, who: Uuid, body: Value) -> Req {
    auth(Req::post().uri("/api/notes/").set_json(body), &w.api, who)
}

fn get(w: &World, who: Uuid, uri: &str) -> Req {
    auth(Req::get().uri(uri), &w.api, who)
}

/// The titles of a list answer, in order.
fn titles(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap_or_else(|| panic!("not a page: {page}"))
        .iter()
        .map(|n| n["title"].as_str().unwrap().to_owned())
        .collect()
}

/// The titles `who` finds with the query string `query` (`q=...&...`), all pages followed.
async fn found<S, B>(app: &S, w: &World, who: Uuid, query: &str) -> Vec<String>
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let mut out = Vec::new();
    let mut uri = format!("/api/notes/?{query}");
    loop {
        let (s, page) = send(app, get(w, who, &uri)).await;
        assert_eq!(s, 200, "{uri}: {page}");
        out.extend(titles(&page));
        match page["pagination"]["next_cursor"].as_str() {
            Some(c) => uri = format!("/api/notes/?{query}&cursor={c}"),
            None => return out,
        }
    }
}

backend_tests! {
    async fn results_come_ranked_and_pages_continue_the_ranking(t) {
        let w = world(&t, true).await;
        let app = test::init_service(w.api.app()).await;
        for (title, body) in [
            ("Groceries", Some("buy bamboo for the panda")),
            ("Red panda facts", Some("small, red, fond of bamboo")),
            ("Zoo trip", None),
            ("Panda", Some("panda panda panda")),
            ("Pancakes", Some("flour, eggs")),
        ] {
            let (s, b) = send(&app, post(&w, w.alice, json!({"title": title, "body": body, "kind": "misc"}))).await;
            assert_eq!(s, 201, "{b}");
        }
        // A title match ranks above a body match; words are compared without case.
        let all = found(&app, &w, w.alice, "q=PANDA").await;
        assert_eq!(all.len(), 3, "{all:?}");
        assert_eq!(all[2], "Groceries", "{all:?}");
        assert!(all[..2].contains(&"Panda".to_owned()) && all[..2].contains(&"Red panda facts".to_owned()), "{all:?}");
        // One per page: the same ranking, each once, the total counted with the search.
        let (s, first) = send(&app, get(&w, w.alice, "/api/notes/?q=panda&page_size=1")).await;
        assert_eq!(s, 200, "{first}");
        assert_eq!(first["pagination"]["total"], 3, "{first}");
        assert_eq!(found(&app, &w, w.alice, "q=panda&page_size=1").await, all);
        // Every word must appear; a trailing `*` is a prefix.
        assert_eq!(found(&app, &w, w.alice, "q=panda%20bamboo").await.len(), 2);
        let mut pan = found(&app, &w, w.alice, "q=pan*&sort=title").await;
        assert_eq!(pan, ["Groceries", "Pancakes", "Panda", "Red panda facts"]);
        pan.sort();
        assert_eq!(found(&app, &w, w.alice, "q=pan*&sort=-title").await.len(), pan.len());
        // A search ANDs with the other filters.
        assert_eq!(found(&app, &w, w.alice, "q=bamboo&title__like=Red%25").await, ["Red panda facts"]);
        assert!(found(&app, &w, w.alice, "q=koala").await.is_empty());
        // Words are letters and digits on both backends: a host name, a number with a point
        // and a hyphenated word are found by their parts.
        let (s, b) = send(&app, post(&w, w.alice, json!({"title": "See zoo.example.org", "body": "pi is 3.14, a red-eyed tree frog", "kind": "misc"}))).await;
        assert_eq!(s, 201, "{b}");
        for q in ["example", "14", "eyed", "zoo%20org", "red-eyed", "ZOO.EXAMPLE.ORG"] {
            assert_eq!(found(&app, &w, w.alice, &format!("q={q}")).await, ["See zoo.example.org"], "{q}");
        }
        // A blank `q` is no search.
        assert_eq!(found(&app, &w, w.alice, "q=%20").await.len(), 6);
    }

    async fn a_member_the_caller_cannot_read_is_never_searched(t) {
        let w = world(&t, true).await;
        let app = test::init_service(w.api.app()).await;
        let (s, b) = send(&app, post(&w, w.alice, json!({"title": "Alice's", "private": "walrus", "kind": "a"}))).await;
        assert_eq!(s, 201, "{b}");
        let (s, b) = send(&app, post(&w, w.bob, json!({"title": "Bob's", "private": "walrus too", "kind": "b"}))).await;
        assert_eq!(s, 201, "{b}");
        let (s, b) = send(&app, post(&w, w.admin, json!({"title": "Staff", "staff": "otter", "kind": "c"}))).await;
        assert_eq!(s, 201, "{b}");
        // Each owner finds their own private words, never the other's.
        assert_eq!(found(&app, &w, w.alice, "q=walrus").await, ["Alice's"]);
        assert_eq!(found(&app, &w, w.bob, "q=walrus").await, ["Bob's"]);
        // The staff's words are the administrators' alone.
        assert!(found(&app, &w, w.alice, "q=otter").await.is_empty());
        assert_eq!(found(&app, &w, w.admin, "q=otter").await, ["Staff"]);
        let mut both = found(&app, &w, w.admin, "q=walrus").await;
        both.sort();
        assert_eq!(both, ["Alice's", "Bob's"]);
        // A word in a readable member and one in a hidden member: no match for others.
        assert!(found(&app, &w, w.bob, "q=alice%20walrus").await.is_empty());
        assert_eq!(found(&app, &w, w.alice, "q=alice%20walrus").await, ["Alice's"]);
        // Anonymous callers are refused as for any list.
        let (s, _) = call(&app, Req::get().uri("/api/notes/?q=walrus")).await;
        assert_eq!(s, 401);
    }

    async fn every_write_path_keeps_the_index_in_step(t) {
        let w = world(&t, true).await;
        let app = test::init_service(w.api.app()).await;
        let (s, note) = send(&app, post(&w, w.alice, json!({"title": "Heron", "kind": "bird"}))).await;
        assert_eq!(s, 201, "{note}");
        let id = note["id"].as_str().unwrap().to_owned();
        // Update: the old word is gone, the new one found.
        let patch = auth(Req::patch().uri(&format!("/api/notes/{id}")).set_json(json!({"title": "Egret"})), &w.api, w.alice);
        let (s, b) = send(&app, patch).await;
        assert_eq!(s, 200, "{b}");
        assert!(found(&app, &w, w.alice, "q=heron").await.is_empty());
        assert_eq!(found(&app, &w, w.alice, "q=egret").await, ["Egret"]);
        // Soft delete hides it, restore brings it back.
        let (s, _) = call(&app, auth(Req::delete().uri(&format!("/api/notes/{id}")), &w.api, w.alice)).await;
        assert_eq!(s, 204);
        assert!(found(&app, &w, w.alice, "q=egret").await.is_empty());
        assert_eq!(found(&app, &w, w.admin, "q=egret&include_deleted=true").await, ["Egret"]);
        let (s, b) = send(&app, auth(Req::post().uri(&format!("/api/notes/{id}/restore/")), &w.api, w.admin)).await;
        assert_eq!(s, 200, "{b}");
        assert_eq!(found(&app, &w, w.alice, "q=egret").await, ["Egret"]);
        // Batch create and import.
        let batch = auth(
            Req::post().uri("/api/notes/batch/").set_json(json!({"items": [{"title": "Stork", "kind": "bird"}, {"title": "Crane", "kind": "bird"}]})),
            &w.api,
            w.alice,
        );
        let (s, b) = send(&app, batch).await;
        assert_eq!(s, 201, "{b}");
        let csv = "title,kind\nPelican,bird\n";
        let import = auth(
            Req::post().uri("/api/notes/import/").insert_header(("content-type", "text/csv")).set_payload(csv),
            &w.api,
            w.alice,
        );
        let (s, b) = send(&app, import).await;
        assert!(s == 200 || s == 201, "{s} {b}");
        assert_eq!(found(&app, &w, w.alice, "q=stork").await, ["Stork"]);
        assert_eq!(found(&app, &w, w.alice, "q=pelican").await, ["Pelican"]);
    }

    async fn export_and_aggregates_search_too(t) {
        let w = world(&t, true).await;
        let app = test::init_service(w.api.app()).await;
        for (title, kind) in [("Blue whale", "sea"), ("Whale shark", "sea"), ("Orca whale", "sea"), ("Blue tit", "air")] {
            let (s, b) = send(&app, post(&w, w.alice, json!({"title": title, "kind": kind}))).await;
            assert_eq!(s, 201, "{b}");
        }
        let (s, body) = call(&app, get(&w, w.alice, "/api/notes/export/?q=blue&sort=title&fields=title")).await;
        assert_eq!(s, 200, "{}", String::from_utf8_lossy(&body));
        assert_eq!(String::from_utf8(body).unwrap().replace("\r\n", "\n"), "title\nBlue tit\nBlue whale\n");
        let (s, groups) = send(&app, get(&w, w.alice, "/api/notes/aggregate/?group_by=kind&q=whale")).await;
        assert_eq!(s, 200, "{groups}");
        assert_eq!(groups["groups"], json!([{"kind": "sea", "count": 3}]), "{groups}");
    }

    async fn a_bad_search_is_a_clear_400(t) {
        let w = world(&t, true).await;
        let app = test::init_service(w.api.app()).await;
        for (query, says) in [
            ("q=%2A%2A", "letters or digits"),
            ("q=%22%27%29%3B", "letters or digits"),
            ("sort=%40rank", "sort"),
        ] {
            let (s, problem) = send(&app, get(&w, w.alice, &format!("/api/notes/?{query}"))).await;
            assert_eq!(s, 400, "{query}: {problem}");
            assert!(problem["detail"].as_str().unwrap().contains(says), "{query}: {problem}");
        }
        // Characters with a meaning to either backend's query syntax are only separators.
        for q in ["NEAR(a%20b)", "a%20OR%20b", "x%3A*", "%7Btitle%7D%3A%20y", "'a'%20%26%20!b"] {
            let (s, page) = send(&app, get(&w, w.alice, &format!("/api/notes/?q={q}"))).await;
            assert_eq!(s, 200, "{q}: {page}");
        }
        // A cursor of a ranked list is refused with another sort.
        for n in 0..3 {
            let (s, b) = send(&app, post(&w, w.alice, json!({"title": format!("Moth {n}"), "kind": "bug"}))).await;
            assert_eq!(s, 201, "{b}");
        }
        let (_, page) = send(&app, get(&w, w.alice, "/api/notes/?q=moth&page_size=1")).await;
        let cursor = page["pagination"]["next_cursor"].as_str().unwrap();
        let (s, problem) = send(&app, get(&w, w.alice, &format!("/api/notes/?q=moth&sort=title&cursor={cursor}"))).await;
        assert_eq!(s, 400, "{problem}");
    }

    async fn the_schema_check_and_the_description_know_the_search(t) {
        let w = world(&t, false).await;
        let drift = w.api.check_schema().await.unwrap();
        let lines: Vec<String> = drift.iter().map(ToString::to_string).collect();
        assert_eq!(lines, ["notes: search index over (title, body, private, staff) missing (make-migrations writes it)"]);
        make_index(&w.api, w.dir.path());
        crudforge::migrations::run_migration_dir(w.api.db(), w.dir.path()).await.unwrap();
        assert!(w.api.check_schema().await.unwrap().is_empty());
        let app = test::init_service(w.api.app()).await;
        let (_, doc) = send(&app, Req::get().uri("/openapi.json")).await;
        for path in ["/api/notes/", "/api/notes/export/", "/api/notes/aggregate/"] {
            let params = doc["paths"][path]["get"]["parameters"].as_array().unwrap();
            let q = params.iter().find(|p| p["name"] == "q").unwrap_or_else(|| panic!("{path}: no q"));
            let text = q["description"].as_str().unwrap();
            assert!(text.contains("`title`, `body`, `private`, `staff`"), "{text}");
        }
    }
}

/// Members two different owner fields open: each searched only in the rows that field gives
/// the caller.
mod two_owners {
    use super::*;

    diesel::table! {
        use diesel::sql_types::*;
        use crudforge::sql_types::*;

        /// Reviews.
        reviews (id) {
            /// Id.
            id -> PortableUuid,
            /// Created.
            created_at -> PortableTimestamp,
            /// Updated.
            updated_at -> PortableTimestamp,
            /// Author.
            author_id -> PortableUuid,
            /// Reviewer.
            reviewer_id -> PortableUuid,
            /// Title.
            title -> Text,
            /// The author's draft.
            draft -> Nullable<Text>,
            /// The reviewer's verdict.
            verdict -> Nullable<Text>,
        }
    }

    /// A review: its draft is its author's, its verdict its reviewer's.
    #[derive(Debug, Clone, Queryable, Selectable, Resource)]
    #[diesel(table_name = reviews)]
    #[resource(search("title", "draft", "verdict"))]
    pub(super) struct Review {
        /// Identifier.
        pub id: Uuid,
        /// Creation time.
        pub created_at: DateTime,
        /// Last change.
        pub updated_at: DateTime,
        /// The author.
        pub author_id: Uuid,
        /// The reviewer.
        pub reviewer_id: Uuid,
        /// The title.
        pub title: String,
        /// Only the author reads it.
        #[resource(read = owner(author_id))]
        pub draft: Option<String>,
        /// Only the reviewer reads it.
        #[resource(read = owner(reviewer_id))]
        pub verdict: Option<String>,
    }

    backend_tests! {
        async fn each_owner_field_opens_its_own_members(t) {
            let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
            let db = t.open(&cfg).await;
            let ddl = match db.backend() {
                Backend::Sqlite => "CREATE TABLE reviews (id TEXT PRIMARY KEY NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, author_id TEXT NOT NULL, reviewer_id TEXT NOT NULL, title TEXT NOT NULL, draft TEXT, verdict TEXT);",
                Backend::Postgres => "CREATE TABLE reviews (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, author_id UUID NOT NULL, reviewer_id UUID NOT NULL, title TEXT NOT NULL, draft TEXT, verdict TEXT);",
            };
            let index = crudforge::__bench::search_index_sql("reviews", Review::SEARCH, db.backend()).join("\n");
            let mut conn = db.get().await.unwrap();
            with_conn!(conn, |c| c.batch_execute(&format!("{ddl}\n{index}")).await).unwrap();
            drop(conn);
            let ann = crudforge_tests::user(&db, "ann@example.com").await;
            let ben = crudforge_tests::user(&db, "ben@example.com").await;
            let api = Api::new(cfg, db).unwrap().mount(Review::blueprint("/api/reviews/")).unwrap();
            let app = test::init_service(api.app()).await;
            // Ann wrote one review and judges the other; Ben the other way round.
            for (author, reviewer, title, draft, verdict) in [
                (ann, ben, "first", "pelican", "heron"),
                (ben, ann, "second", "heron", "pelican"),
            ] {
                let body = json!({"author_id": author, "reviewer_id": reviewer, "title": title, "draft": draft, "verdict": verdict});
                let (s, b) = send(&app, auth(Req::post().uri("/api/reviews/").set_json(body), &api, ann)).await;
                assert_eq!(s, 201, "{b}");
            }
            let titles = |page: Value| -> Vec<String> { super::titles(&page) };
            for (who, q, expect) in [
                // Ann's draft of the first and her verdict on the second both say pelican.
                (ann, "pelican", vec!["first", "second"]),
                // Heron is in Ben's verdict on the first and his draft of the second: never Ann's.
                (ann, "heron", vec![]),
                (ben, "heron", vec!["first", "second"]),
                (ben, "pelican", vec![]),
            ] {
                let (s, page) = send(&app, auth(Req::get().uri(&format!("/api/reviews/?q={q}&sort=title")), &api, who)).await;
                assert_eq!(s, 200, "{page}");
                assert_eq!(titles(page), expect, "{q}");
            }
        }
    }
}

/// A resource with no searchable member refuses `q`.
mod not_searchable {
    use super::*;

    diesel::table! {
        use diesel::sql_types::*;
        use crudforge::sql_types::*;

        /// Plain.
        plains (id) {
            /// Id.
            id -> PortableUuid,
            /// Created.
            created_at -> PortableTimestamp,
            /// Updated.
            updated_at -> PortableTimestamp,
            /// Title.
            title -> Text,
        }
    }

    /// Nothing searchable.
    #[derive(Debug, Clone, Queryable, Selectable, Resource)]
    #[diesel(table_name = plains)]
    pub(super) struct Plain {
        /// Identifier.
        pub id: Uuid,
        /// Creation time.
        pub created_at: DateTime,
        /// Last change.
        pub updated_at: DateTime,
        /// The title.
        pub title: String,
    }

    backend_tests! {
        async fn q_is_refused(t) {
            let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
            let db = t.open(&cfg).await;
            let ddl = match db.backend() {
                Backend::Sqlite => "CREATE TABLE plains (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, title TEXT NOT NULL)",
                Backend::Postgres => "CREATE TABLE plains (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, title TEXT NOT NULL)",
            };
            let mut conn = db.get().await.unwrap();
            with_conn!(conn, |c| c.batch_execute(ddl).await).unwrap();
            drop(conn);
            let who = crudforge_tests::user(&db, "u@example.com").await;
            let api = Api::new(cfg, db).unwrap().mount(Plain::blueprint("/api/plains/")).unwrap();
            let app = test::init_service(api.app()).await;
            let (s, problem) = send(&app, auth(Req::get().uri("/api/plains/?q=x"), &api, who)).await;
            assert_eq!(s, 400, "{problem}");
            assert!(problem["detail"].as_str().unwrap().contains("no searchable members"), "{problem}");
        }
    }
}

//! Record history on both backends: every create, update, delete and restore through a
//! blueprint that keeps history writes an entry in the write's transaction (who, when, the
//! request, the members changed with old and new values, a write-only member named and never
//! its value); a rolled-back write leaves none; `GET <item>/history/` shows a row's entries,
//! newest first, paged, under the row's read rule and without the members the caller may not
//! read on the row now; bad parameters are 400.
#![allow(missing_docs, clippy::unwrap_used)]

use crudforge::auth::CurrentUser;
use crudforge::cli::{App, BoxError, Console};
use crudforge::crud::Operation;
use crudforge::perms::{Access, Rules};
use crudforge::users;
use crudforge::{with_conn, Api, Config, Database, Error, Resource};
use crudforge_tests::http::{auth, send, Req};
use crudforge_tests::{backend_tests, Backend};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::{json, Map, Value};
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Pets.
    pets (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Owner.
        owner_id -> PortableUuid,
        /// Name.
        name -> Text,
        /// Staff note.
        staff_note -> Nullable<Text>,
        /// Owner's note.
        owner_note -> Nullable<Text>,
        /// Door code.
        pin -> Nullable<Text>,
        /// Deleted.
        deleted_at -> Nullable<PortableTimestamp>,
    }
}

type DateTime = chrono::DateTime<chrono::Utc>;

/// A pet: signed-in users read every pet, owners write theirs.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = pets)]
#[resource(rules = ReadAllWriteOwn, soft_delete)]
pub struct Pet {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Its owner.
    pub owner_id: Uuid,
    /// Its name.
    pub name: String,
    /// What the staff noted.
    #[resource(read = admin)]
    pub staff_note: Option<String>,
    /// What its owner noted.
    #[resource(read = owner(owner_id))]
    pub owner_note: Option<String>,
    /// The code of its door: written, never read.
    #[resource(write_only)]
    pub pin: Option<String>,
    /// When it was deleted.
    pub deleted_at: Option<DateTime>,
}

/// Any signed-in user reads; the owner writes; the server sets the owner; only administrators
/// write the staff note.
#[derive(Debug, Clone, Copy)]
pub struct ReadAllWriteOwn;

impl Rules<Pet> for ReadAllWriteOwn {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::authenticated(user)
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

    fn admin_fields(&self) -> &[&'static str] {
        &["staff_note"]
    }
}

struct World {
    api: Api,
    cfg: Config,
    admin: Uuid,
    alice: Uuid,
    bob: Uuid,
}

async fn world(t: &crudforge_tests::TestDb) -> World {
    let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
    let db = t.open(&cfg).await;
    let ddl = match db.backend() {
        Backend::Sqlite => "CREATE TABLE pets (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, owner_id TEXT NOT NULL, name TEXT NOT NULL, staff_note TEXT, owner_note TEXT, pin TEXT, deleted_at TEXT)",
        Backend::Postgres => "CREATE TABLE pets (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, owner_id UUID NOT NULL, name TEXT NOT NULL, staff_note TEXT, owner_note TEXT, pin TEXT, deleted_at TIMESTAMPTZ)",
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
    let bob = user("bob@example.com").await;
    let api = build(cfg.clone(), db.clone()).unwrap();
    World {
        api,
        cfg,
        admin,
        alice,
        bob,
    }
}

fn build(config: Config, db: Database) -> Result<Api, BoxError> {
    Ok(Api::new(config, db)?.mount(
        Pet::blueprint("/api/pets/")
            .history()
            .batch([Operation::Post, Operation::Patch]),
    )?)
}

/// `history verify`: its exit code and what it printed.
async fn verify(w: &World) -> (u8, String) {
    let cli = App::new("pets-app", build).config(w.cfg.clone());
    let mut console = Console::captured("");
    let code = cli
        .run(vec!["pets-app", "history", "verify"], &mut console)
        .await;
    (code, format!("{}{}", console.output(), console.errors()))
}

/// `history verify` until it prints `expected` (exit 0): on PostgreSQL, entries are sealed
/// only once every transaction older than theirs has ended, and other tests' transactions
/// run on the same server.
async fn verified(w: &World, expected: &str) {
    let mut last = String::new();
    for _ in 0..600 {
        let (code, out) = verify(w).await;
        if code == 0 && out.contains(expected) {
            return;
        }
        last = out;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("`history verify` never printed {expected:?}; last: {last}");
}

/// Runs `sql` on the API's database.
async fn exec(api: &Api, sql: &str) {
    let mut conn = api.state().db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(sql).await).unwrap();
}

#[derive(QueryableByName)]
struct Id {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    id: i64,
}

/// The ids of the entries of pet `id`, oldest first.
async fn entry_ids(api: &Api, id: &str) -> Vec<i64> {
    let mut conn = api.state().db.get().await.unwrap();
    let sql = format!(
        "SELECT id FROM crudforge_history WHERE resource = 'pets' AND row_key = '{id}' ORDER BY id"
    );
    let rows: Vec<Id> = with_conn!(conn, |c| diesel_async::RunQueryDsl::load(
        diesel::sql_query(sql.as_str()),
        c
    )
    .await)
    .unwrap();
    rows.into_iter().map(|r| r.id).collect()
}

#[derive(QueryableByName)]
struct Stored {
    #[diesel(sql_type = diesel::sql_types::Text)]
    action: String,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    state: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Text)]
    changes: String,
}

/// Every stored entry of pet `id`, oldest first (the table itself, all members).
async fn stored(api: &Api, id: &str) -> Vec<Stored> {
    let mut conn = api.state().db.get().await.unwrap();
    let sql = format!(
        "SELECT action, state, changes FROM crudforge_history WHERE resource = 'pets' AND row_key = '{id}' ORDER BY id"
    );
    with_conn!(conn, |c| diesel_async::RunQueryDsl::load(
        diesel::sql_query(sql.as_str()),
        c
    )
    .await)
    .unwrap()
}

fn history(id: &str, query: &str) -> Req {
    Req::get().uri(&format!("/api/pets/{id}/history/{query}"))
}

backend_tests! {
    async fn each_write_is_recorded_and_shown_under_the_read_rules(t) {
        let w = world(&t).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let (status, pet) = send(&app, auth(Req::post().uri("/api/pets/"), &w.api, w.alice)
            .set_json(json!({"name": "Rex", "owner_note": "mine", "pin": "1234"}))).await;
        assert_eq!(status, 201, "{pet}");
        let id = pet["id"].as_str().unwrap().to_owned();
        let (status, _) = send(&app, auth(Req::patch().uri(&format!("/api/pets/{id}")), &w.api, w.alice)
            .insert_header(("x-request-id", "rename-rex-1"))
            .set_json(json!({"name": "Max", "pin": "9999"}))).await;
        assert_eq!(status, 200);
        let (status, _) = send(&app, auth(Req::patch().uri(&format!("/api/pets/{id}")), &w.api, w.admin)
            .set_json(json!({"staff_note": "checked"}))).await;
        assert_eq!(status, 200);

        // The owner: three entries, newest first; the staff note is not hers to read.
        let (status, page) = send(&app, auth(history(&id, ""), &w.api, w.alice)).await;
        assert_eq!(status, 200, "{page}");
        let data = page["data"].as_array().unwrap();
        assert_eq!(data.len(), 3, "{page}");
        assert_eq!(page["next_cursor"], Value::Null);
        let actions: Vec<&str> = data.iter().map(|e| e["action"].as_str().unwrap()).collect();
        assert_eq!(actions, ["updated", "updated", "created"]);
        assert_eq!(data[0]["actor"], json!(w.admin.to_string()));
        assert!(data[0]["changes"].get("staff_note").is_none(), "{page}");
        assert!(data[0]["changes"].get("updated_at").is_some(), "{page}");
        assert_eq!(data[1]["actor"], json!(w.alice.to_string()));
        assert_eq!(data[1]["request_id"], json!("rename-rex-1"));
        assert_eq!(data[1]["changes"]["name"], json!({"old": "Rex", "new": "Max"}));
        assert_eq!(data[1]["changes"]["pin"], json!({"redacted": true}));
        assert_eq!(data[2]["changes"]["name"], json!({"new": "Rex"}));
        assert_eq!(data[2]["changes"]["owner_note"], json!({"new": "mine"}));
        assert_eq!(data[2]["changes"]["pin"], json!({"redacted": true}));
        assert!(data[0]["at"].as_str().unwrap() >= data[2]["at"].as_str().unwrap());
        // No value of the write-only member anywhere, in the answer or the table.
        let text = page.to_string();
        assert!(!text.contains("1234") && !text.contains("9999"), "{text}");
        for e in stored(&w.api, &id).await {
            let all = format!("{} {}", e.state.unwrap_or_default(), e.changes);
            assert!(!all.contains("1234") && !all.contains("9999"), "{all}");
        }

        // Another reader: neither the staff note nor the owner's note.
        let (status, page) = send(&app, auth(history(&id, ""), &w.api, w.bob)).await;
        assert_eq!(status, 200);
        let data = page["data"].as_array().unwrap();
        assert_eq!(data.len(), 3);
        assert!(data[2]["changes"].get("owner_note").is_none(), "{page}");
        assert_eq!(data[2]["changes"]["name"], json!({"new": "Rex"}));
        assert!(!page.to_string().contains("mine") && !page.to_string().contains("checked"));

        // An administrator reads every member.
        let (_, page) = send(&app, auth(history(&id, ""), &w.api, w.admin)).await;
        assert_eq!(page["data"][0]["changes"]["staff_note"], json!({"old": null, "new": "checked"}));
        assert_eq!(page["data"][2]["changes"]["owner_note"], json!({"new": "mine"}));

        // Anonymous callers are refused as the item's GET refuses them; an unknown row is 404.
        let (status, _) = send(&app, history(&id, "")).await;
        assert_eq!(status, 401);
        let (status, _) = send(&app, auth(history(&Uuid::new_v4().to_string(), ""), &w.api, w.bob)).await;
        assert_eq!(status, 404);
    }

    async fn a_history_pages_and_refuses_bad_parameters(t) {
        let w = world(&t).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let (_, pet) = send(&app, auth(Req::post().uri("/api/pets/"), &w.api, w.alice)
            .set_json(json!({"name": "N0"}))).await;
        let id = pet["id"].as_str().unwrap().to_owned();
        for n in 1..5 {
            let (status, _) = send(&app, auth(Req::patch().uri(&format!("/api/pets/{id}")), &w.api, w.alice)
                .set_json(json!({"name": format!("N{n}")}))).await;
            assert_eq!(status, 200);
        }
        let mut names = Vec::new();
        let mut query = "?limit=2".to_owned();
        let mut pages = 0;
        loop {
            let (status, page) = send(&app, auth(history(&id, &query), &w.api, w.bob)).await;
            assert_eq!(status, 200, "{page}");
            pages += 1;
            for e in page["data"].as_array().unwrap() {
                names.push(e["changes"]["name"]["new"].as_str().unwrap().to_owned());
            }
            match page["next_cursor"].as_str() {
                Some(c) => query = format!("?limit=2&cursor={c}"),
                None => break,
            }
        }
        assert_eq!(pages, 3);
        assert_eq!(names, ["N4", "N3", "N2", "N1", "N0"]);
        for (bad, param) in [("?limit=0", "limit"), ("?limit=101", "limit"), ("?limit=x", "limit"), ("?cursor=abc", "cursor"), ("?cursor=-3", "cursor"), ("?page=2", "page")] {
            let (status, problem) = send(&app, auth(history(&id, bad), &w.api, w.bob)).await;
            assert_eq!(status, 400, "{bad}: {problem}");
            assert!(problem.to_string().contains(param), "{bad}: {problem}");
        }
    }

    async fn a_rolled_back_write_records_nothing_and_deletes_and_restores_are_recorded(t) {
        let w = world(&t).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let (_, mine) = send(&app, auth(Req::post().uri("/api/pets/"), &w.api, w.alice)
            .set_json(json!({"name": "Mine"}))).await;
        let (_, theirs) = send(&app, auth(Req::post().uri("/api/pets/"), &w.api, w.bob)
            .set_json(json!({"name": "Theirs"}))).await;
        let mine = mine["id"].as_str().unwrap().to_owned();
        let theirs = theirs["id"].as_str().unwrap().to_owned();
        // A batch whose second item Alice may not write: nothing is written, nothing recorded.
        let (status, problem) = send(&app, auth(Req::patch().uri("/api/pets/batch/"), &w.api, w.alice)
            .set_json(json!({"items": [
                {"id": mine, "changes": {"name": "Renamed"}},
                {"id": theirs, "changes": {"name": "Stolen"}},
            ]}))).await;
        assert!(status == 403 || status == 404, "{status} {problem}");
        assert_eq!(stored(&w.api, &mine).await.len(), 1);
        assert_eq!(stored(&w.api, &theirs).await.len(), 1);
        // A batch that succeeds records an entry per row.
        let (status, answer) = send(&app, auth(Req::post().uri("/api/pets/batch/"), &w.api, w.alice)
            .set_json(json!({"items": [{"name": "One"}, {"name": "Two"}]}))).await;
        assert_eq!(status, 201, "{answer}");
        for item in answer["data"].as_array().unwrap() {
            let e = stored(&w.api, item["id"].as_str().unwrap()).await;
            assert_eq!(e.len(), 1);
            assert_eq!(e[0].action, "created");
        }
        // A (soft) delete and a restore, each with the member it changed.
        let (status, _) = send(&app, auth(Req::delete().uri(&format!("/api/pets/{mine}")), &w.api, w.alice)).await;
        assert_eq!(status, 204);
        let (status, r) = send(&app, auth(Req::post().uri(&format!("/api/pets/{mine}/restore/")), &w.api, w.admin)).await;
        assert_eq!(status, 200, "{r}");
        let e = stored(&w.api, &mine).await;
        let actions: Vec<&str> = e.iter().map(|e| e.action.as_str()).collect();
        assert_eq!(actions, ["created", "deleted", "restored"]);
        let deleted: Value = serde_json::from_str(&e[1].changes).unwrap();
        assert_eq!(deleted["deleted_at"]["old"], Value::Null, "{deleted}");
        assert!(deleted["deleted_at"]["new"].is_string(), "{deleted}");
        let restored: Value = serde_json::from_str(&e[2].changes).unwrap();
        assert!(restored["deleted_at"]["old"].is_string(), "{restored}");
        assert_eq!(restored["deleted_at"]["new"], Value::Null);
        let (_, page) = send(&app, auth(history(&mine, ""), &w.api, w.alice)).await;
        assert_eq!(page["data"][0]["action"], json!("restored"));
        assert_eq!(page["data"][0]["actor"], json!(w.admin.to_string()));
    }

    async fn the_chain_holds_until_an_entry_is_changed_or_removed(t) {
        let w = world(&t).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let (code, out) = verify(&w).await;
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("no history entries"), "{out}");
        let (_, pet) = send(&app, auth(Req::post().uri("/api/pets/"), &w.api, w.alice)
            .set_json(json!({"name": "A"}))).await;
        let id = pet["id"].as_str().unwrap().to_owned();
        for name in ["B", "C", "D"] {
            let (status, _) = send(&app, auth(Req::patch().uri(&format!("/api/pets/{id}")), &w.api, w.alice)
                .set_json(json!({"name": name}))).await;
            assert_eq!(status, 200);
        }
        verified(&w, "pets: 4 entries, intact\n").await;
        let ids = entry_ids(&w.api, &id).await;
        // One more write after sealing joins the chain at the next pass.
        let (status, _) = send(&app, auth(Req::patch().uri(&format!("/api/pets/{id}")), &w.api, w.alice)
            .set_json(json!({"name": "E"}))).await;
        assert_eq!(status, 200);
        verified(&w, "pets: 5 entries, intact\n").await;

        // An entry edited in the table: its link is named, and the command fails.
        exec(&w.api, &format!("UPDATE crudforge_history SET changes = '{{}}' WHERE id = {}", ids[2])).await;
        let (code, out) = verify(&w).await;
        assert_ne!(code, 0, "{out}");
        assert!(out.contains(&format!("pets: broken at entry {} (place 3 in the chain): its contents do not match its hash", ids[2])), "{out}");
        assert!(out.contains("2 entries before it hold"), "{out}");
        // An entry removed: the one after it is named.
        exec(&w.api, &format!("DELETE FROM crudforge_history WHERE id = {}", ids[2])).await;
        let (code, out) = verify(&w).await;
        assert_ne!(code, 0, "{out}");
        assert!(out.contains(&format!("pets: broken at entry {} (place 4 in the chain): entries are missing before it", ids[3])), "{out}");
        // The oldest entries removed (as retention does): the oldest kept anchors the chain.
        exec(&w.api, &format!("DELETE FROM crudforge_history WHERE id <= {}", ids[2])).await;
        verified(&w, "pets: 2 entries, intact\n").await;
    }

    async fn retention_removes_the_oldest_sealed_entries_and_the_chain_still_holds(t) {
        use crudforge::history::Retention;
        let w = world(&t).await;
        let app = actix_web::test::init_service(w.api.app()).await;
        let (_, pet) = send(&app, auth(Req::post().uri("/api/pets/"), &w.api, w.alice)
            .set_json(json!({"name": "N0"}))).await;
        let id = pet["id"].as_str().unwrap().to_owned();
        for n in 1..6 {
            let (status, _) = send(&app, auth(Req::patch().uri(&format!("/api/pets/{id}")), &w.api, w.alice)
                .set_json(json!({"name": format!("N{n}")}))).await;
            assert_eq!(status, 200);
        }
        verified(&w, "pets: 6 entries, intact\n").await;
        let kept = |keep: Retention| {
            Api::new(w.cfg.clone(), w.api.state().db.clone())
                .unwrap()
                .mount(Pet::blueprint("/api/pets/").history().history_retention(keep))
                .unwrap()
        };
        // The newest three kept.
        assert_eq!(kept(Retention::entries(3)).prune_history().await.unwrap(), 3);
        assert_eq!(kept(Retention::entries(3)).prune_history().await.unwrap(), 0);
        verified(&w, "pets: 3 entries, intact\n").await;
        let (_, page) = send(&app, auth(history(&id, ""), &w.api, w.bob)).await;
        let names: Vec<&str> = page["data"].as_array().unwrap().iter().map(|e| e["changes"]["name"]["new"].as_str().unwrap()).collect();
        assert_eq!(names, ["N5", "N4", "N3"]);
        // Entries not sealed yet are never removed; sealed later, they start the chain.
        for n in 6..8 {
            let (status, _) = send(&app, auth(Req::patch().uri(&format!("/api/pets/{id}")), &w.api, w.alice)
                .set_json(json!({"name": format!("N{n}")}))).await;
            assert_eq!(status, 200);
        }
        assert_eq!(kept(Retention::age(std::time::Duration::ZERO)).prune_history().await.unwrap(), 3);
        assert_eq!(entry_ids(&w.api, &id).await.len(), 2);
        verified(&w, "pets: 2 entries, intact\n").await;
        // A later write's entry takes the first one's old value as its `old`: the latest kept.
        let (_, page) = send(&app, auth(history(&id, ""), &w.api, w.bob)).await;
        assert_eq!(page["data"][0]["changes"]["name"], json!({"old": "N6", "new": "N7"}));
    }
}

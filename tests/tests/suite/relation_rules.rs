//! Relations and the rules around them, on both backends: a relation's keys are members like
//! any other (their read rules apply to `expand`, filters and sorts across the relation, on the
//! belongs-to and the has-many side, as to a direct filter on the key); a relation from a
//! resource to itself filters and sorts by the related row, not the row itself; and a write
//! that sets a belongs-to key to a row the caller may not read, a soft-deleted row or no row
//! at all is refused with one and the same 422.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::crud::Operation;
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

    /// Dens.
    dens (id) {
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
        /// Deleted.
        deleted_at -> Nullable<PortableTimestamp>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Cubs.
    cubs (id) {
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
        /// Den (administrators read it).
        den_id -> Nullable<PortableUuid>,
        /// Home (its owner reads it).
        home_id -> Nullable<PortableUuid>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Twigs.
    twigs (id) {
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
        /// Parent.
        parent_id -> Nullable<PortableUuid>,
    }
}

type DateTime = chrono::DateTime<chrono::Utc>;

/// A den: each user reads and writes their own; administrators all. Deleting keeps the row.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = dens)]
#[resource(
    soft_delete,
    rules = OwnerRules::new("owner_id"),
    has_many(cubs = Cub, key = "den_id"),
    has_many(lodgers = Cub, key = "home_id")
)]
pub struct Den {
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
    /// When it was deleted.
    pub deleted_at: Option<DateTime>,
}

/// A cub: every signed-in user reads and writes every cub.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = cubs)]
pub struct Cub {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Whose it is.
    pub owner_id: Uuid,
    /// Its name.
    pub name: String,
    /// Where it was born: administrators only read it.
    #[resource(belongs_to(Den), read = admin)]
    pub den_id: Option<Uuid>,
    /// Where it lives: its owner reads it.
    #[resource(belongs_to(Den), read = owner(owner_id))]
    pub home_id: Option<Uuid>,
}

/// A twig of a tree of twigs: each user reads their own; administrators all.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = twigs)]
#[resource(
    rules = OwnerRules::new("owner_id"),
    has_many(children = Twig, key = "parent_id")
)]
pub struct Twig {
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
    /// The twig it grows on.
    #[resource(belongs_to(Twig))]
    pub parent_id: Option<Uuid>,
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
        Backend::Sqlite => "CREATE TABLE dens (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, owner_id TEXT NOT NULL, name TEXT NOT NULL, deleted_at TEXT); \
             CREATE TABLE cubs (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, owner_id TEXT NOT NULL, name TEXT NOT NULL, den_id TEXT REFERENCES dens (id), home_id TEXT REFERENCES dens (id)); \
             CREATE TABLE twigs (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, owner_id TEXT NOT NULL, name TEXT NOT NULL, parent_id TEXT REFERENCES twigs (id))",
        Backend::Postgres => "CREATE TABLE dens (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, owner_id UUID NOT NULL, name TEXT NOT NULL, deleted_at TIMESTAMPTZ); \
             CREATE TABLE cubs (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, owner_id UUID NOT NULL, name TEXT NOT NULL, den_id UUID REFERENCES dens (id), home_id UUID REFERENCES dens (id)); \
             CREATE TABLE twigs (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, owner_id UUID NOT NULL, name TEXT NOT NULL, parent_id UUID REFERENCES twigs (id))",
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
    let api = Api::new(cfg, db.clone())
        .unwrap()
        .mount(Den::blueprint("/api/dens/"))
        .unwrap()
        .mount(Cub::blueprint("/api/cubs/").batch([Operation::Post, Operation::Patch]))
        .unwrap()
        .mount(Twig::blueprint("/api/twigs/"))
        .unwrap()
        .mount(Cub::blueprint("/api/dens/{home_id}/cubs/"))
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

/// Status and body.
async fn call<S, B>(app: &S, req: Req) -> (u16, Value)
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
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).unwrap()
    };
    (status, body)
}

macro_rules! get {
    ($app:expr, $w:expr, $who:expr, $uri:expr) => {{
        let uri: String = $uri;
        call(&$app, auth(Req::get().uri(&uri), &$w.api, $who)).await
    }};
}

macro_rules! send {
    ($app:expr, $w:expr, $who:expr, $req:expr, $body:expr) => {{
        call(&$app, auth($req, &$w.api, $who).set_json($body)).await
    }};
}

/// Creates a row at `uri` as `who`; its id.
async fn made<S, B>(app: &S, w: &World, who: Uuid, uri: &str, body: Value) -> String
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let (s, v) = call(app, auth(Req::post().uri(uri), &w.api, who).set_json(body)).await;
    assert_eq!(s, 201, "{uri}: {v}");
    v["id"].as_str().unwrap().to_owned()
}

fn names(list: &Value) -> Vec<String> {
    let mut names: Vec<String> = list["data"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

fn in_order(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A problem without its `request_id`, which differs from request to request.
fn without_request_id(mut problem: Value) -> Value {
    problem.as_object_mut().unwrap().remove("request_id");
    problem
}

/// Percent-encodes a `filter` expression for a query string.
fn enc(expr: &str) -> String {
    serde_urlencoded::to_string([("filter", expr)]).unwrap()
}

backend_tests! {
    async fn a_key_only_administrators_read_is_refused_across_its_relation(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let alpha = made(&app, &w, w.alice, "/api/dens/", json!({"name": "Alpha"})).await;
        let cub = made(&app, &w, w.admin, "/api/cubs/", json!({"name": "kit", "owner_id": w.alice, "den_id": alpha})).await;
        // A direct filter on the key is refused for alice; so is every way through the
        // relation, on the belongs-to side ...
        let direct = format!("den_id={alpha}");
        let through = [
            direct.clone(),
            "den.name=Alpha".to_owned(),
            format!("den.id={alpha}"),
            "den.name__ne=Beta".to_owned(),
            enc("den.name = 'Alpha'"),
            enc("not (den.name = 'Beta') or name = 'x'"),
            "sort=den.name".to_owned(),
            "sort=-den.name".to_owned(),
            "expand=den".to_owned(),
            "expand=den&fields=name,den.name".to_owned(),
        ];
        for q in &through {
            let (s, e) = get!(app, w, w.alice, format!("/api/cubs/?{q}"));
            assert_eq!(s, 400, "{q}: {e}");
            assert!(e["detail"].as_str().unwrap().contains("den_id"), "{q}: {e}");
        }
        let (s, e) = get!(app, w, w.alice, format!("/api/cubs/{cub}?expand=den"));
        assert_eq!(s, 400, "{e}");
        // ... and on the has-many side (the dens whose cubs ..., the cubs of a den).
        for q in ["cubs.name=kit", &format!("cubs.id={cub}"), &enc("not (cubs.name = 'x')"), "expand=cubs"] {
            let (s, e) = get!(app, w, w.alice, format!("/api/dens/?{q}"));
            assert_eq!(s, 400, "{q}: {e}");
            assert!(e["detail"].as_str().unwrap().contains("den_id"), "{q}: {e}");
        }
        let (s, e) = get!(app, w, w.alice, format!("/api/dens/{alpha}?expand=cubs"));
        assert_eq!(s, 400, "{e}");
        // Nested under another relation too.
        let (s, e) = get!(app, w, w.alice, "/api/cubs/?expand=home.cubs".to_owned());
        assert_eq!(s, 400, "{e}");
        // Administrators read the key: everything works for them.
        for q in &through {
            let (s, list) = get!(app, w, w.admin, format!("/api/cubs/?{q}"));
            assert_eq!(s, 200, "{q}: {list}");
        }
        let (_, list) = get!(app, w, w.admin, "/api/cubs/?den.name=Alpha&expand=den".to_owned());
        assert_eq!(names(&list), ["kit"]);
        assert_eq!(list["data"][0]["den"]["name"], "Alpha", "{list}");
        let (_, list) = get!(app, w, w.admin, "/api/dens/?cubs.name=kit&expand=cubs".to_owned());
        assert_eq!(names(&list), ["Alpha"]);
        assert_eq!(list["data"][0]["cubs"][0]["name"], "kit", "{list}");
        // Without the relation, alice reads the cub and the den as before.
        let (s, _) = get!(app, w, w.alice, format!("/api/cubs/{cub}"));
        assert_eq!(s, 200);
        let (s, _) = get!(app, w, w.alice, "/api/dens/?expand=lodgers".to_owned());
        assert_eq!(s, 200);
    }

    async fn an_owners_key_links_the_callers_own_rows_only(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        // Alice's den Alpha houses her cub `mine` and bob's cub `theirs`: bob's cub's home is
        // his to read, not alice's, though the den is hers.
        let alpha = made(&app, &w, w.alice, "/api/dens/", json!({"name": "Alpha"})).await;
        let beta = made(&app, &w, w.bob, "/api/dens/", json!({"name": "Beta"})).await;
        let mine = made(&app, &w, w.admin, "/api/cubs/", json!({"name": "mine", "owner_id": w.alice, "home_id": alpha})).await;
        let theirs = made(&app, &w, w.admin, "/api/cubs/", json!({"name": "theirs", "owner_id": w.bob, "home_id": alpha})).await;
        made(&app, &w, w.admin, "/api/cubs/", json!({"name": "away", "owner_id": w.bob, "home_id": beta})).await;
        // A direct filter on the key finds alice's own cub only; so does every filter through
        // the relation.
        let (s, list) = get!(app, w, w.alice, format!("/api/cubs/?home_id={alpha}"));
        assert_eq!(s, 200, "{list}");
        assert_eq!(names(&list), ["mine"]);
        for q in [
            "home.name=Alpha".to_owned(),
            format!("home.id={alpha}"),
            enc("home.name = 'Alpha'"),
            enc("home.name = 'Alpha' or name = 'nobody'"),
        ] {
            let (s, list) = get!(app, w, w.alice, format!("/api/cubs/?{q}"));
            assert_eq!(s, 200, "{q}: {list}");
            assert_eq!(names(&list), ["mine"], "{q}");
            assert_eq!(list["pagination"]["total"], 1, "{q}");
        }
        // Under `not`, bob's cubs match whatever their home: it says nothing of them.
        let (_, list) = get!(app, w, w.alice, format!("/api/cubs/?{}", enc("not (home.name = 'Alpha')")));
        assert_eq!(names(&list), ["away", "theirs"]);
        let (_, list) = get!(app, w, w.alice, format!("/api/cubs/?{}", enc("not (home.name = 'Nowhere')")));
        assert_eq!(names(&list), ["away", "mine", "theirs"]);
        // Sorting by it is refused, as a sort by the key itself.
        for q in ["sort=home_id", "sort=home.name"] {
            let (s, e) = get!(app, w, w.alice, format!("/api/cubs/?{q}"));
            assert_eq!(s, 400, "{q}: {e}");
        }
        // `expand` embeds the home of alice's own cubs only.
        let (s, one) = get!(app, w, w.alice, format!("/api/cubs/{theirs}?expand=home"));
        assert_eq!(s, 200, "{one}");
        assert_eq!(one["home"], Value::Null, "{one}");
        assert!(one.get("home_id").is_none(), "{one}");
        let (_, one) = get!(app, w, w.alice, format!("/api/cubs/{mine}?expand=home"));
        assert_eq!(one["home"]["name"], "Alpha", "{one}");
        let (_, list) = get!(app, w, w.alice, "/api/cubs/?expand=home&sort=name".to_owned());
        let homes: Vec<&Value> = list["data"].as_array().unwrap().iter().map(|c| &c["home"]).collect();
        assert_eq!(homes[0], &Value::Null, "away: {list}");
        assert_eq!(homes[1]["name"], "Alpha", "mine: {list}");
        assert_eq!(homes[2], &Value::Null, "theirs: {list}");
        // The has-many side: alice's den lists her own lodgers only, and is found by them only.
        let (s, den) = get!(app, w, w.alice, format!("/api/dens/{alpha}?expand=lodgers"));
        assert_eq!(s, 200, "{den}");
        let lodgers: Vec<&str> = den["lodgers"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(lodgers, ["mine"], "{den}");
        let (_, list) = get!(app, w, w.alice, "/api/dens/?lodgers.name=theirs".to_owned());
        assert_eq!(names(&list), Vec::<String>::new());
        let (_, list) = get!(app, w, w.alice, format!("/api/dens/?lodgers.id={theirs}"));
        assert_eq!(names(&list), Vec::<String>::new());
        let (_, list) = get!(app, w, w.alice, "/api/dens/?lodgers.name=mine".to_owned());
        assert_eq!(names(&list), ["Alpha"]);
        // Administrators see every lodger.
        let (_, den) = get!(app, w, w.admin, format!("/api/dens/{alpha}?expand=lodgers"));
        assert_eq!(den["lodgers"].as_array().unwrap().len(), 2, "{den}");
        let (_, list) = get!(app, w, w.admin, "/api/dens/?lodgers.name=theirs".to_owned());
        assert_eq!(names(&list), ["Alpha"]);
        let (s, list) = get!(app, w, w.admin, "/api/cubs/?sort=home.name".to_owned());
        assert_eq!(s, 200, "{list}");
    }

    async fn a_relation_to_the_resource_itself_filters_and_sorts_by_the_related_row(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let twig = |name: &str, owner: Uuid, parent: Option<&str>| json!({"name": name, "owner_id": owner, "parent_id": parent});
        let oak = made(&app, &w, w.admin, "/api/twigs/", twig("oak", w.alice, None)).await;
        let branch = made(&app, &w, w.admin, "/api/twigs/", twig("branch", w.alice, Some(&oak))).await;
        made(&app, &w, w.admin, "/api/twigs/", twig("leaf", w.alice, Some(&branch))).await;
        made(&app, &w, w.admin, "/api/twigs/", twig("bud", w.alice, Some(&branch))).await;
        // Bob's secret twig grows on alice's leaf-less oak, and carries alice's `graft`.
        let secret = made(&app, &w, w.admin, "/api/twigs/", twig("secret", w.bob, Some(&oak))).await;
        made(&app, &w, w.admin, "/api/twigs/", twig("graft", w.alice, Some(&secret))).await;
        let cases: [(String, Vec<&str>); 7] = [
            ("parent.name=oak".to_owned(), vec!["branch"]),
            ("parent.name=branch".to_owned(), vec!["bud", "leaf"]),
            (format!("parent.id={branch}"), vec!["bud", "leaf"]),
            ("children.name=leaf".to_owned(), vec!["branch"]),
            (enc("not (parent.name = 'branch')"), vec!["branch", "graft", "oak"]),
            // Bob's twig is not alice's to read: as absent through the relation as elsewhere.
            ("parent.name=secret".to_owned(), vec![]),
            ("children.name=secret".to_owned(), vec![]),
        ];
        for (q, want) in cases {
            let (s, list) = get!(app, w, w.alice, format!("/api/twigs/?{q}"));
            assert_eq!(s, 200, "{q}: {list}");
            assert_eq!(names(&list), want, "{q}");
        }
        let (_, list) = get!(app, w, w.admin, "/api/twigs/?parent.name=secret".to_owned());
        assert_eq!(names(&list), ["graft"]);
        let (_, list) = get!(app, w, w.admin, "/api/twigs/?children.name=graft".to_owned());
        assert_eq!(names(&list), ["secret"]);
        // Sorted by the parent's name (nulls last, then by id): the leaf and the bud (branch),
        // the branch (oak), then the graft (its parent hidden from alice) and the oak.
        let (s, list) = get!(app, w, w.alice, "/api/twigs/?sort=parent.name,name".to_owned());
        assert_eq!(s, 200, "{list}");
        assert_eq!(in_order(&list), ["bud", "leaf", "branch", "graft", "oak"]);
        let (s, list) = get!(app, w, w.admin, "/api/twigs/?sort=-parent.name,name".to_owned());
        assert_eq!(s, 200, "{list}");
        assert_eq!(in_order(&list), ["oak", "graft", "branch", "secret", "bud", "leaf"]);
        // Expanding works as before.
        let (_, one) = get!(app, w, w.alice, format!("/api/twigs/{branch}?expand=parent,children"));
        assert_eq!(one["parent"]["name"], "oak", "{one}");
        assert_eq!(one["children"].as_array().unwrap().len(), 2, "{one}");
    }

    async fn a_key_set_to_a_row_the_writer_may_not_read_is_refused_like_a_missing_one(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let own = made(&app, &w, w.alice, "/api/dens/", json!({"name": "Own"})).await;
        let gone = made(&app, &w, w.alice, "/api/dens/", json!({"name": "Gone"})).await;
        let (s, _) = call(&app, auth(Req::delete().uri(&format!("/api/dens/{gone}")), &w.api, w.alice)).await;
        assert_eq!(s, 204);
        let theirs = made(&app, &w, w.bob, "/api/dens/", json!({"name": "Theirs"})).await;
        let missing = Uuid::new_v4().to_string();
        let cub = made(&app, &w, w.alice, "/api/cubs/", json!({"name": "kit", "owner_id": w.alice, "home_id": own})).await;
        // Bob's den, a deleted den and no den at all: one answer, naming the member.
        let mut answers = Vec::new();
        for den in [&theirs, &gone, &missing] {
            let (s, e) = send!(app, w, w.alice, Req::post().uri("/api/cubs/"), json!({"name": "x", "owner_id": w.alice, "home_id": den}));
            assert_eq!(s, 422, "{e}");
            assert_eq!(e["field"], "home_id", "{e}");
            answers.push(without_request_id(e));
            for member in ["home_id", "den_id"] {
                let (s, e) = send!(app, w, w.alice, Req::patch().uri(&format!("/api/cubs/{cub}")), json!({ member: den }));
                assert_eq!(s, 422, "{e}");
                assert_eq!(e["field"], member, "{e}");
                if member == "home_id" {
                    answers.push(without_request_id(e));
                }
            }
            let (s, e) = send!(app, w, w.alice, Req::post().uri("/api/cubs/batch/"), json!({"items": [{"name": "y", "owner_id": w.alice}, {"name": "z", "owner_id": w.alice, "home_id": den}]}));
            assert_eq!(s, 422, "{e}");
            assert_eq!(e["errors"][0]["pointer"], "/items/1/home_id", "{e}");
            answers.push(json!({"batch create": e["errors"][0]["detail"]}));
            let (s, e) = send!(app, w, w.alice, Req::patch().uri("/api/cubs/batch/"), json!({"items": [{"id": cub, "changes": {"home_id": den}}]}));
            assert_eq!(s, 422, "{e}");
            assert_eq!(e["errors"][0]["pointer"], "/items/0/changes/home_id", "{e}");
            answers.push(json!({"batch update": e["errors"][0]["detail"]}));
        }
        // A nested prefix's parent from the path is a key the write sets too.
        for den in [&theirs, &gone, &missing] {
            let (s, e) = send!(app, w, w.alice, Req::post().uri(&format!("/api/dens/{den}/cubs/")), json!({"name": "x", "owner_id": w.alice}));
            assert_eq!(s, 422, "{e}");
            assert_eq!(e["field"], "home_id", "{e}");
            assert_eq!(e["detail"], answers[0]["detail"], "{e}");
        }
        let n = answers.len() / 3;
        assert_eq!(answers[..n], answers[n..2 * n], "bob's den and a deleted den answer alike");
        assert_eq!(answers[..n], answers[2 * n..], "and like a den that does not exist");
        // Nothing was written.
        let (_, list) = get!(app, w, w.admin, "/api/cubs/".to_owned());
        assert_eq!(names(&list), ["kit"]);
        assert_eq!(list["data"][0]["home_id"], own.as_str());
        assert_eq!(list["pagination"]["total"], 1);
        assert_eq!(list["data"][0]["den_id"], Value::Null);
        // Her own live den, or none, is accepted.
        let (s, c) = send!(app, w, w.alice, Req::post().uri(&format!("/api/dens/{own}/cubs/")), json!({"name": "nested", "owner_id": w.alice}));
        assert_eq!(s, 201, "{c}");
        let (s, c) = send!(app, w, w.alice, Req::patch().uri(&format!("/api/cubs/{cub}")), json!({"den_id": own, "home_id": null}));
        assert_eq!(s, 200, "{c}");
        let (s, c) = send!(app, w, w.alice, Req::post().uri("/api/cubs/batch/"), json!({"items": [{"name": "y", "owner_id": w.alice, "home_id": own}]}));
        assert_eq!(s, 201, "{c}");
        // Administrators read every live den: bob's is theirs to name; a deleted or missing
        // one is refused alike.
        let (s, c) = send!(app, w, w.admin, Req::post().uri("/api/cubs/"), json!({"name": "adm", "owner_id": w.alice, "home_id": theirs, "den_id": own}));
        assert_eq!(s, 201, "{c}");
        for den in [&gone, &missing] {
            let (s, e) = send!(app, w, w.admin, Req::post().uri("/api/cubs/"), json!({"name": "x", "owner_id": w.alice, "home_id": den}));
            assert_eq!(s, 422, "{e}");
            assert_eq!(e["field"], "home_id", "{e}");
        }
    }
}

//! Declared relations on both backends: `expand` embeds the related item (belongs-to) or a
//! capped list (has-many), one query per relation whatever the page; the related resource's
//! read scope applies everywhere a relation reaches (a hidden row embeds as null, filtering by
//! its fields finds nothing, sorting by them does not reveal its order, `fields` and ETags
//! show nothing of it); filters (parameters and the `filter` expression) and sorts cross
//! relations within the cap; unknown or unreadable relations are 400 naming them; the OpenAPI
//! description documents `expand` and the embedded members.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
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

    /// Zones.
    zones (id) {
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
        /// Climate.
        climate -> Text,
        /// Administrators' notes.
        notes -> Nullable<Text>,
    }
}

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
        /// Name.
        name -> Text,
        /// Zone.
        zone_id -> Nullable<PortableUuid>,
        /// Keeper.
        keeper_id -> Nullable<PortableUuid>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Keepers (never mounted).
    keepers (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Name.
        name -> Text,
    }
}

type DateTime = chrono::DateTime<chrono::Utc>;

/// A zone: each user reads and writes their own; administrators all.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = zones)]
#[resource(
    rules = crudforge::perms::OwnerRules::new("owner_id"),
    has_many(pets = Pet, key = "zone_id")
)]
pub struct Zone {
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
    /// Its climate.
    pub climate: String,
    /// Notes only administrators read.
    #[resource(read = admin)]
    pub notes: Option<String>,
}

/// A pet: every signed-in user reads and writes every pet.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = pets)]
pub struct Pet {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Its name.
    pub name: String,
    /// Where it lives.
    #[resource(belongs_to(Zone))]
    pub zone_id: Option<Uuid>,
    /// Who keeps it (a resource that is not mounted).
    #[resource(belongs_to(Keeper))]
    pub keeper_id: Option<Uuid>,
}

/// A keeper; never mounted, so relations to it are unreadable.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = keepers)]
pub struct Keeper {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Name.
    pub name: String,
}

struct World {
    api: Api,
    admin: Uuid,
    alice: Uuid,
    bob: Uuid,
}

async fn world(t: &crudforge_tests::TestDb) -> World {
    let cfg = t.config().with(|c| {
        c.auth.bcrypt_cost = 4;
        c.db.orm_performance_monitoring = true;
        c.db.orm_slow_query_threshold = 60.0;
    });
    let db = t.open(&cfg).await;
    let ddl = match db.backend() {
        Backend::Sqlite => "CREATE TABLE zones (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, owner_id TEXT NOT NULL, name TEXT NOT NULL, climate TEXT NOT NULL, notes TEXT); \
             CREATE TABLE keepers (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, name TEXT NOT NULL); \
             CREATE TABLE pets (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, name TEXT NOT NULL, zone_id TEXT REFERENCES zones (id), keeper_id TEXT REFERENCES keepers (id))",
        Backend::Postgres => "CREATE TABLE zones (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, owner_id UUID NOT NULL, name TEXT NOT NULL, climate TEXT NOT NULL, notes TEXT); \
             CREATE TABLE keepers (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, name TEXT NOT NULL); \
             CREATE TABLE pets (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, name TEXT NOT NULL, zone_id UUID REFERENCES zones (id), keeper_id UUID REFERENCES keepers (id))",
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
        .mount(Zone::blueprint("/api/zones/"))
        .unwrap()
        .mount(Pet::blueprint("/api/pets/"))
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

/// Status, body, ETag and the number of database queries (from `Server-Timing`).
async fn call<S, B>(app: &S, req: Req) -> (u16, Value, String, u64)
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
    let etag = resp
        .headers()
        .get("etag")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let queries = resp
        .headers()
        .get("server-timing")
        .and_then(|h| {
            let h = h.to_str().unwrap().to_owned();
            h.split("desc=\"").nth(1)?.split(' ').next()?.parse().ok()
        })
        .unwrap_or(0);
    let body = test::read_body(resp).await;
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).unwrap()
    };
    (status, body, etag, queries)
}

macro_rules! get {
    ($app:expr, $w:expr, $who:expr, $uri:expr) => {{
        let uri: String = $uri;
        let (s, b, _, _) = call(&$app, auth(Req::get().uri(&uri), &$w.api, $who)).await;
        (s, b)
    }};
}

/// Creates a zone as `owner`; its id.
async fn zone<S, B>(app: &S, w: &World, owner: Uuid, name: &str) -> String
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let req = auth(Req::post().uri("/api/zones/"), &w.api, owner)
        .set_json(json!({"name": name, "climate": format!("{name} climate")}));
    let (s, z, _, _) = call(app, req).await;
    assert_eq!(s, 201, "{z}");
    z["id"].as_str().unwrap().to_owned()
}

/// Creates a pet in `zone`; its id.
async fn pet<S, B>(app: &S, w: &World, name: &str, zone: Option<&str>) -> String
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    // As an administrator, who may place a pet in anyone's zone (alice may only place pets in
    // the zones she reads).
    let req = auth(Req::post().uri("/api/pets/"), &w.api, w.admin)
        .set_json(json!({"name": name, "zone_id": zone}));
    let (s, p, _, _) = call(app, req).await;
    assert_eq!(s, 201, "{p}");
    p["id"].as_str().unwrap().to_owned()
}

fn names(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect()
}

backend_tests! {
    async fn expand_embeds_what_the_caller_may_read_and_null_otherwise(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let mine = zone(&app, &w, w.alice, "Meadow").await;
        let theirs = zone(&app, &w, w.bob, "Burrow").await;
        let p1 = pet(&app, &w, "one", Some(&mine)).await;
        let p2 = pet(&app, &w, "two", Some(&theirs)).await;
        let p3 = pet(&app, &w, "three", None).await;
        // GET one: the related item as its own GET shows it.
        let (s, one) = get!(app, w, w.alice, format!("/api/pets/{p1}?expand=zone"));
        assert_eq!(s, 200, "{one}");
        let (_, own) = get!(app, w, w.alice, format!("/api/zones/{mine}"));
        assert_eq!(one["zone"], own, "{one}");
        assert_eq!(one["name"], "one");
        // A zone alice may not read embeds as null, exactly like a pet without a zone.
        let (s, two) = get!(app, w, w.alice, format!("/api/pets/{p2}?expand=zone"));
        assert_eq!(s, 200, "{two}");
        assert_eq!(two["zone"], Value::Null, "{two}");
        assert_eq!(two["zone_id"], theirs.as_str());
        let (_, three) = get!(app, w, w.alice, format!("/api/pets/{p3}?expand=zone"));
        assert_eq!(three["zone"], Value::Null);
        // Bob (and the administrator) see it.
        let (_, two_bob) = get!(app, w, w.bob, format!("/api/pets/{p2}?expand=zone"));
        assert_eq!(two_bob["zone"]["name"], "Burrow");
        let (_, two_admin) = get!(app, w, w.admin, format!("/api/pets/{p2}?expand=zone"));
        assert_eq!(two_admin["zone"]["name"], "Burrow");
        // Without `expand`, the answer is unchanged.
        let (_, plain) = get!(app, w, w.alice, format!("/api/pets/{p1}"));
        assert!(plain.get("zone").is_none(), "{plain}");
        // Lists embed per item.
        let (s, list) = get!(app, w, w.alice, "/api/pets/?expand=zone".to_owned());
        assert_eq!(s, 200, "{list}");
        let zones: Vec<Value> = list["data"].as_array().unwrap().iter().map(|p| p["zone"]["name"].clone()).collect();
        assert_eq!(zones, [json!("Meadow"), Value::Null, Value::Null]);
        let (_, list) = get!(app, w, w.bob, "/api/pets/?expand=zone".to_owned());
        let zones: Vec<Value> = list["data"].as_array().unwrap().iter().map(|p| p["zone"]["name"].clone()).collect();
        assert_eq!(zones, [Value::Null, json!("Burrow"), Value::Null]);
    }

    async fn etags_and_fields_show_nothing_of_a_hidden_row(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let theirs = zone(&app, &w, w.bob, "Burrow").await;
        let p = pet(&app, &w, "two", Some(&theirs)).await;
        let uri = format!("/api/pets/{p}");
        let (_, _, plain_tag, _) = call(&app, auth(Req::get().uri(&uri), &w.api, w.alice)).await;
        let (_, alice_body, alice_tag, _) = call(&app, auth(Req::get().uri(&format!("{uri}?expand=zone")), &w.api, w.alice)).await;
        let (_, _, bob_tag, _) = call(&app, auth(Req::get().uri(&format!("{uri}?expand=zone")), &w.api, w.bob)).await;
        assert_ne!(plain_tag, alice_tag, "an expanded answer has its own tag");
        assert_ne!(alice_tag, bob_tag, "the tag follows what each caller sees");
        // The tag is the body's: another pet with no zone at all has the tag of its own body,
        // and alice's expanded answer works with If-None-Match.
        assert_eq!(alice_body["zone"], Value::Null);
        let (s, _, _, _) = call(&app, auth(Req::get().uri(&format!("{uri}?expand=zone")).insert_header(("if-none-match", alice_tag.clone())), &w.api, w.alice)).await;
        assert_eq!(s, 304);
        let (s, _, _, _) = call(&app, auth(Req::get().uri(&format!("{uri}?expand=zone")).insert_header(("if-none-match", alice_tag.clone())), &w.api, w.bob)).await;
        assert_eq!(s, 200, "bob's answer differs from alice's");
        // `fields` names embedded members; a hidden row stays null.
        let (s, trimmed) = get!(app, w, w.bob, format!("{uri}?expand=zone&fields=name,zone.name"));
        assert_eq!(s, 200, "{trimmed}");
        assert_eq!(trimmed, json!({"name": "two", "zone": {"name": "Burrow"}}));
        let (_, trimmed) = get!(app, w, w.alice, format!("{uri}?expand=zone&fields=name,zone.name"));
        assert_eq!(trimmed, json!({"name": "two", "zone": null}));
        let (_, list) = get!(app, w, w.bob, "/api/pets/?expand=zone&fields=zone.climate".to_owned());
        assert_eq!(list["data"], json!([{"zone": {"climate": "Burrow climate"}}]));
        // Fields of a relation that is not expanded, or that the relation does not have: 400.
        for bad in ["fields=zone.name", "expand=zone&fields=zone.nope", "fields=zone"] {
            let (s, p) = get!(app, w, w.bob, format!("{uri}?{bad}"));
            assert_eq!(s, 400, "{bad}: {p}");
            assert!(p["detail"].as_str().unwrap().contains("fields"), "{p}");
        }
    }

    async fn unknown_or_unreadable_relations_are_400_naming_them(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let p = pet(&app, &w, "one", None).await;
        for uri in [format!("/api/pets/{p}?expand=zone,nope,other"), "/api/pets/?expand=zone,nope,other".to_owned()] {
            let (s, e) = get!(app, w, w.alice, uri.clone());
            assert_eq!(s, 400, "{e}");
            let d = e["detail"].as_str().unwrap();
            assert!(d.contains("`nope`") && d.contains("`other`") && !d.contains("`zone`"), "{d}");
        }
        // Keepers are not mounted: nobody may read them through a relation.
        for uri in [format!("/api/pets/{p}?expand=keeper"), "/api/pets/?expand=keeper".to_owned(), "/api/pets/?keeper.name=x".to_owned(), "/api/pets/?sort=keeper.name".to_owned()] {
            let (s, e) = get!(app, w, w.admin, uri.clone());
            assert_eq!(s, 400, "{uri}: {e}");
            assert!(e["detail"].as_str().unwrap().contains("keeper"), "{e}");
        }
        // Too deep, unknown nested relation, unknown related field.
        for q in ["expand=zone.pets.zone", "expand=zone.nope", "zone.nope=1", "sort=zone.nope", "filter=zone.nope%20%3D%201"] {
            let (s, e) = get!(app, w, w.alice, format!("/api/pets/?{q}"));
            assert_eq!(s, 400, "{q}: {e}");
        }
        // A resource without relations.
        let (s, _) = get!(app, w, w.alice, "/api/zones/?expand=pets.nope".to_owned());
        assert_eq!(s, 400);
    }

    async fn one_query_per_relation_whatever_the_page(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let mut zones = Vec::new();
        for n in ["a", "b", "c", "d"] {
            zones.push(zone(&app, &w, w.alice, n).await);
        }
        for (i, z) in zones.iter().enumerate() {
            pet(&app, &w, &format!("p{i}"), Some(z)).await;
            pet(&app, &w, &format!("q{i}"), Some(z)).await;
        }
        let count = |uri: String| {
            let req = auth(Req::get().uri(&uri), &w.api, w.alice);
            let app = &app;
            async move {
                let (s, b, _, q) = call(app, req).await;
                assert_eq!(s, 200, "{b}");
                q
            }
        };
        let plain_one = count("/api/pets/?page_size=1".to_owned()).await;
        let plain_all = count("/api/pets/?page_size=8".to_owned()).await;
        let one = count("/api/pets/?page_size=1&expand=zone".to_owned()).await;
        let all = count("/api/pets/?page_size=8&expand=zone".to_owned()).await;
        assert_eq!(plain_one, plain_all);
        assert_eq!(one, plain_one + 1, "one query for the relation");
        assert_eq!(all, plain_all + 1, "one query for the relation, not one per item");
        // Has-many, and one level of nesting: one more query each.
        let zones_all = count("/api/zones/?expand=pets".to_owned()).await;
        let zones_plain = count("/api/zones/".to_owned()).await;
        assert_eq!(zones_all, zones_plain + 1);
        let nested = count("/api/pets/?expand=zone.pets".to_owned()).await;
        assert_eq!(nested, plain_all + 2);
        let (_, list) = get!(app, w, w.alice, "/api/pets/?page_size=2&expand=zone.pets".to_owned());
        let inner: Vec<&str> = list["data"][0]["zone"]["pets"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert_eq!(inner, ["p0", "q0"]);
    }

    async fn has_many_embeds_a_capped_list_of_readable_rows(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let big = zone(&app, &w, w.alice, "Big").await;
        let small = zone(&app, &w, w.alice, "Small").await;
        let empty = zone(&app, &w, w.alice, "Empty").await;
        for i in 0..12 {
            pet(&app, &w, &format!("b{i:02}"), Some(&big)).await;
        }
        pet(&app, &w, "s0", Some(&small)).await;
        let (s, z) = get!(app, w, w.alice, format!("/api/zones/{big}?expand=pets"));
        assert_eq!(s, 200, "{z}");
        let got: Vec<&str> = z["pets"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
        let want: Vec<String> = (0..10).map(|i| format!("b{i:02}")).collect();
        assert_eq!(got, want, "the first 10 (the documented cap) by creation");
        // In a list, every zone gets its own capped list: the big one does not crowd out the others.
        let (_, list) = get!(app, w, w.alice, "/api/zones/?expand=pets".to_owned());
        let sizes: Vec<usize> = list["data"].as_array().unwrap().iter().map(|z| z["pets"].as_array().unwrap().len()).collect();
        assert_eq!(sizes, [10, 1, 0]);
        let (_, e) = get!(app, w, w.alice, format!("/api/zones/{empty}?expand=pets"));
        assert_eq!(e["pets"], json!([]));
        // Bob cannot read alice's zones at all: 404 for the zone; has-many needs no more.
        let (s, _) = get!(app, w, w.bob, format!("/api/zones/{small}?expand=pets"));
        assert_eq!(s, 404);
    }

    async fn filters_across_a_relation_apply_its_read_rules(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let mine = zone(&app, &w, w.alice, "Savanna").await;
        let theirs = zone(&app, &w, w.bob, "Secret Savanna").await;
        pet(&app, &w, "lion", Some(&mine)).await;
        pet(&app, &w, "mole", Some(&theirs)).await;
        pet(&app, &w, "stray", None).await;
        let cases = [
            ("zone.name=Savanna", vec!["lion"], vec![]),
            ("zone.name=Secret%20Savanna", vec![], vec!["mole"]),
            ("zone.name__ilike=%25savanna%25", vec!["lion"], vec!["mole"]),
            ("filter=zone.name%20ilike%20'%25SAVANNA%25'", vec!["lion"], vec!["mole"]),
            ("filter=zone.name%20%3D%20'Secret%20Savanna'%20or%20name%20%3D%20'stray'", vec!["stray"], vec!["mole", "stray"]),
            ("filter=not%20(zone.climate%20like%20'Secret%25')&zone.name__ilike=%25a%25", vec!["lion"], vec![]),
        ];
        for (q, alice, bob) in cases {
            let (s, list) = get!(app, w, w.alice, format!("/api/pets/?{q}"));
            assert_eq!(s, 200, "{q}: {list}");
            assert_eq!(names(&list), alice, "alice: {q}");
            assert_eq!(list["pagination"]["total"], alice.len(), "the total counts the same rows");
            let (_, list) = get!(app, w, w.bob, format!("/api/pets/?{q}"));
            assert_eq!(names(&list), bob, "bob: {q}");
        }
        // Has-many: zones with a pet named lion.
        let (s, list) = get!(app, w, w.alice, "/api/zones/?pets.name=lion".to_owned());
        assert_eq!(s, 200, "{list}");
        assert_eq!(names(&list), ["Savanna"]);
        // The cap on relations crossed per request.
        let (s, e) = get!(app, w, w.alice, "/api/pets/?zone.name=a&zone.climate=b&zone.name__ne=c&filter=zone.name%20%3D%20'd'".to_owned());
        assert_eq!(s, 400, "{e}");
        assert!(e["detail"].as_str().unwrap().contains("at most 3 relations"), "{e}");
        let (s, _) = get!(app, w, w.alice, "/api/pets/?zone.name=a&zone.climate=b&sort=zone.name".to_owned());
        assert_eq!(s, 200);
    }

    async fn related_members_the_caller_may_not_read_stay_hidden(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let mine = zone(&app, &w, w.alice, "Marsh").await;
        let req = auth(Req::patch().uri(&format!("/api/zones/{mine}")), &w.api, w.admin)
            .set_json(json!({"notes": "flooded"}));
        let (s, z, _, _) = call(&app, req).await;
        assert_eq!(s, 200, "{z}");
        let p = pet(&app, &w, "frog", Some(&mine)).await;
        // Embedded as the zone's own GET shows it: without the notes for its owner.
        let (s, one) = get!(app, w, w.alice, format!("/api/pets/{p}?expand=zone"));
        assert_eq!(s, 200, "{one}");
        assert_eq!(one["zone"]["name"], "Marsh");
        assert!(one["zone"].get("notes").is_none(), "{one}");
        let (_, list) = get!(app, w, w.alice, "/api/pets/?expand=zone".to_owned());
        assert_eq!(list["data"][0]["zone"]["name"], "Marsh", "{list}");
        assert!(list["data"][0]["zone"].get("notes").is_none(), "{list}");
        let (_, one) = get!(app, w, w.admin, format!("/api/pets/{p}?expand=zone"));
        assert_eq!(one["zone"]["notes"], "flooded", "{one}");
        // Filtering, sorting or selecting by it across the relation is 400 for the others,
        // whatever the form (no oracle for the hidden value) ...
        for q in [
            "zone.notes=flooded",
            "zone.notes__ne=dry",
            "filter=not%20(zone.notes%20%3D%20'dry')",
            "sort=zone.notes",
            "expand=zone&fields=name,zone.notes",
        ] {
            let (s, e) = get!(app, w, w.alice, format!("/api/pets/?{q}"));
            assert_eq!(s, 400, "{q}: {e}");
            assert!(e["detail"].as_str().unwrap().contains("notes"), "{q}: {e}");
        }
        let (s, e) = get!(app, w, w.alice, format!("/api/pets/{p}?expand=zone&fields=name,zone.notes"));
        assert_eq!(s, 400, "{e}");
        // ... and works for an administrator.
        let (s, list) = get!(app, w, w.admin, "/api/pets/?zone.notes=flooded".to_owned());
        assert_eq!(s, 200, "{list}");
        assert_eq!(names(&list), ["frog"]);
        let (s, one) = get!(app, w, w.admin, format!("/api/pets/{p}?expand=zone&fields=name,zone.notes"));
        assert_eq!(s, 200, "{one}");
        assert_eq!(one["zone"]["notes"], "flooded", "{one}");
    }

    async fn sorting_by_a_related_field_does_not_reveal_hidden_rows(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        // Bob's zones "Alpha" and "Zulu", alice's "Mike".
        let zulu = zone(&app, &w, w.bob, "Zulu").await;
        let mike = zone(&app, &w, w.alice, "Mike").await;
        let alpha = zone(&app, &w, w.bob, "Alpha").await;
        let mut ids = Vec::new();
        for (name, z) in [("z", &zulu), ("m", &mike), ("a", &alpha)] {
            ids.push((pet(&app, &w, name, Some(z)).await, name));
        }
        pet(&app, &w, "none", None).await;
        let (s, list) = get!(app, w, w.bob, "/api/pets/?sort=zone.name".to_owned());
        assert_eq!(s, 200, "{list}");
        assert_eq!(names(&list)[..2], ["a".to_owned(), "z".to_owned()], "bob sees Alpha, Zulu; Mike is hidden");
        // Descending, nulls come first (as for the resource's own nullable fields).
        let (_, list) = get!(app, w, w.bob, "/api/pets/?sort=-zone.name".to_owned());
        assert_eq!(names(&list)[2..], ["z".to_owned(), "a".to_owned()]);
        // For alice, bob's zones are as absent as no zone: after Mike, in id order (the
        // tie-breaker), never in Alpha/Zulu order.
        let (_, list) = get!(app, w, w.alice, "/api/pets/?sort=zone.name".to_owned());
        let got = names(&list);
        assert_eq!(got[0], "m");
        let mut rest: Vec<(String, String)> = list["data"].as_array().unwrap()[1..].iter().map(|p| (p["id"].as_str().unwrap().to_owned(), p["name"].as_str().unwrap().to_owned())).collect();
        let shown = rest.clone();
        rest.sort();
        assert_eq!(shown, rest, "hidden zones sort like none: by id");
        // A sort by a list relation is refused.
        let (s, _) = get!(app, w, w.alice, "/api/zones/?sort=pets.name".to_owned());
        assert_eq!(s, 400);
    }

    async fn openapi_documents_expand_and_the_embedded_members(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let (_, doc) = get!(app, w, w.alice, "/openapi.json".to_owned());
        for path in ["/api/pets/", "/api/pets/{id}"] {
            let params = doc["paths"][path]["get"]["parameters"].as_array().unwrap();
            let expand = params.iter().find(|p| p["name"] == "expand").unwrap_or_else(|| panic!("{path}"));
            let d = expand["description"].as_str().unwrap();
            assert!(d.contains("zone"), "{d}");
        }
        // `expand`'s pattern admits exactly the relations the server knows: each value it
        // admits is accepted, each it refuses is a 400. (`keeper` is in the pattern too, but
        // its resource is not mounted, so it is a 400 to everyone: a refusal of this API's
        // mounts that the model's description cannot know.)
        let params = doc["paths"]["/api/pets/"]["get"]["parameters"].as_array().unwrap();
        let expand = params.iter().find(|p| p["name"] == "expand").unwrap();
        let pattern = regex::Regex::new(expand["schema"]["pattern"].as_str().unwrap()).unwrap();
        for (value, known) in [
            ("zone", true),
            ("zone,zone", true),
            (" zone , zone.pets ,", true),
            ("", true),
            ("bogus", false),
            ("zone.bogus", false),
            ("zone.pets.zone", false),
            ("zone\u{0}", false),
        ] {
            assert_eq!(pattern.is_match(value), known, "{value:?} against {pattern}");
            let uri = format!("/api/pets/?expand={}", value.replace(' ', "%20").replace('\u{0}', "%00"));
            let (s, _) = get!(app, w, w.alice, uri);
            assert_eq!(s, if known { 200 } else { 400 }, "{value:?}");
        }
        // The answers of GET and INDEX (`PartialPet`) gain optional members typed by the
        // related resources' response schemas; POST and PATCH answers (`Pet`) do not.
        let pet = &doc["components"]["schemas"]["PartialPet"]["properties"];
        assert_eq!(pet["zone"]["allOf"][0]["$ref"], "#/components/schemas/Zone", "{pet}");
        assert!(doc["components"]["schemas"]["Pet"]["properties"].get("zone").is_none());
        let zone = &doc["components"]["schemas"]["PartialZone"]["properties"];
        assert_eq!(zone["pets"]["type"], "array", "{zone}");
        assert_eq!(zone["pets"]["items"]["$ref"], "#/components/schemas/Pet", "{zone}");
        assert_eq!(zone["pets"]["maxItems"], 10, "the documented cap");
        // `fields` and `sort` accept related members.
        let params = doc["paths"]["/api/pets/"]["get"]["parameters"].as_array().unwrap();
        let fields = params.iter().find(|p| p["name"] == "fields").unwrap();
        assert!(fields["schema"]["items"]["enum"].as_array().unwrap().contains(&json!("zone.name")), "{fields}");
        let sort = params.iter().find(|p| p["name"] == "sort").unwrap();
        let pattern = sort["schema"]["pattern"].as_str().unwrap();
        assert!(pattern.contains("zone\\.name"), "{pattern}");
        let required = doc["components"]["schemas"]["PartialPet"]["required"].as_array().cloned().unwrap_or_default();
        assert!(!required.contains(&json!("zone")));
    }
}

//! Field-level read rules on both backends: a member readable by administrators only
//! (`read = admin`), by the row's owner (`read = owner(owner_id)`) or by the callers a function
//! accepts (`read = vip_only`) is absent for everyone else from items, lists, `fields` and write
//! answers; sorting or filtering by it (simple filters and the `filter` expression) is 400, or,
//! for an owner's member, confined to the caller's own rows; `ETag`s are computed on what the
//! caller sees; the OpenAPI description says who reads each member; a custom route's
//! `<Name>Filter` judges its parameters as INDEX does for the request's caller.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::{test, web, HttpResponse};
use crudforge::auth::CurrentUser;
use crudforge::crud::{CustomRoute, Operation, OperationType};
use crudforge::perms::{Access, Rules};
use crudforge::users;
use crudforge::{with_conn, Api, Error, Resource};
use crudforge_tests::{backend_tests, Backend};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::{json, Map, Value};
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
        /// Staff note.
        staff_note -> Nullable<Text>,
        /// Owner's note.
        owner_note -> Nullable<Text>,
        /// VIP note.
        vip_note -> Nullable<Text>,
    }
}

type DateTime = chrono::DateTime<chrono::Utc>;

/// A loan: signed-in users read every loan, owners write theirs.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = loans)]
#[resource(rules = ReadAllWriteOwn, scope(noted = "staff_note is not null"))]
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
    /// What the staff noted.
    #[resource(read = admin)]
    pub staff_note: Option<String>,
    /// What its owner noted.
    #[resource(read = owner(owner_id))]
    pub owner_note: Option<String>,
    /// For VIP eyes.
    #[resource(read = vip_only)]
    pub vip_note: Option<String>,
}

/// Holders of the VIP role.
fn vip_only(user: Option<&CurrentUser>) -> bool {
    user.is_some_and(|u| u.has_role("VIP", None))
}

/// Any signed-in user reads; the owner writes; the server sets the owner; only administrators
/// write the staff note.
#[derive(Debug, Clone, Copy)]
pub struct ReadAllWriteOwn;

impl Rules<Loan> for ReadAllWriteOwn {
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
    admin: Uuid,
    alice: Uuid,
    bob: Uuid,
    vip: Uuid,
}

async fn world(t: &crudforge_tests::TestDb) -> World {
    let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
    let db = t.open(&cfg).await;
    let ddl = match db.backend() {
        Backend::Sqlite => "CREATE TABLE loans (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, owner_id TEXT NOT NULL, title TEXT NOT NULL, staff_note TEXT, owner_note TEXT, vip_note TEXT)",
        Backend::Postgres => "CREATE TABLE loans (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, owner_id UUID NOT NULL, title TEXT NOT NULL, staff_note TEXT, owner_note TEXT, vip_note TEXT)",
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
    let vip = user("vip@example.com").await;
    users::grant_role(&db, vip, "VIP", None).await.unwrap();
    let count = CustomRoute::new(OperationType::Get, "count/", || web::get().to(count_loans))
        .operation_id("countLoans");
    let api = Api::new(cfg, db.clone())
        .unwrap()
        .mount(
            Loan::blueprint("/api/loans/")
                .batch([Operation::Post, Operation::Patch])
                .route(count),
        )
        .unwrap();
    World {
        api,
        admin,
        alice,
        bob,
        vip,
    }
}

/// A custom route taking the INDEX parameters through the generated extractor: how many loans
/// match them.
async fn count_loans(
    filter: LoanFilter,
    db: web::Data<crudforge::Database>,
) -> crudforge::Result<HttpResponse> {
    let mut conn = db.get().await?;
    let n = Loan::count(&mut conn, &filter.query.condition()).await?;
    Ok(HttpResponse::Ok().json(json!({ "count": n })))
}

type Req = test::TestRequest;

fn auth(req: Req, api: &Api, id: Uuid) -> Req {
    req.insert_header((
        "authorization",
        format!("Bearer {}", api.state().tokens.access(id).unwrap()),
    ))
}

/// Status, body and `ETag` of a request.
async fn call<S, B>(app: &S, req: Req) -> (u16, Value, Option<String>)
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
        .map(|v| v.to_str().unwrap().to_owned());
    let body = test::read_body(resp).await;
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).unwrap()
    };
    (status, body, etag)
}

/// The members of a JSON object, sorted.
fn members(v: &Value) -> Vec<&str> {
    let mut m: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    m.sort_unstable();
    m
}

const PLAIN: [&str; 5] = ["created_at", "id", "owner_id", "title", "updated_at"];

/// `PLAIN` and `more`, sorted.
fn with(more: &[&'static str]) -> Vec<&'static str> {
    let mut m: Vec<&str> = PLAIN.iter().chain(more).copied().collect();
    m.sort_unstable();
    m
}

/// Alice's loan with all three notes set (the staff note by an administrator); its path.
async fn alices_loan<S, B>(app: &S, w: &World) -> String
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let body = json!({"title": "Dune", "owner_note": "mine", "vip_note": "gold"});
    let (s, created, _) = call(
        app,
        auth(
            Req::post().uri("/api/loans/").set_json(body),
            &w.api,
            w.alice,
        ),
    )
    .await;
    assert_eq!(s, 201, "{created}");
    // The write answer shows the owner's note to its owner, never the others.
    assert_eq!(members(&created), with(&["owner_note"]), "{created}");
    let item = format!("/api/loans/{}", created["id"].as_str().unwrap());
    // Only administrators write the staff note; the admin's answer shows every member.
    let (s, p, _) = call(
        app,
        auth(
            Req::patch()
                .uri(&item)
                .set_json(json!({"staff_note": "late twice"})),
            &w.api,
            w.alice,
        ),
    )
    .await;
    assert_eq!(s, 403, "{p}");
    let (s, changed, _) = call(
        app,
        auth(
            Req::patch()
                .uri(&item)
                .set_json(json!({"staff_note": "late twice"})),
            &w.api,
            w.admin,
        ),
    )
    .await;
    assert_eq!(s, 200, "{changed}");
    assert_eq!(
        members(&changed),
        with(&["owner_note", "staff_note", "vip_note"])
    );
    assert_eq!(changed["staff_note"], "late twice");
    item
}

backend_tests! {
    async fn hidden_members_are_absent_from_items_lists_fields_and_write_answers(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let item = alices_loan(&app, &w).await;
        let sees = [
            (w.admin, with(&["owner_note", "staff_note", "vip_note"])),
            (w.alice, with(&["owner_note"])),
            (w.bob, with(&[])),
            (w.vip, with(&["vip_note"])),
        ];
        for (who, expected) in &sees {
            let (s, one, _) = call(&app, auth(Req::get().uri(&item), &w.api, *who)).await;
            assert_eq!(s, 200, "{one}");
            assert_eq!(&members(&one), expected, "{one}");
            let (s, list, _) = call(&app, auth(Req::get().uri("/api/loans/"), &w.api, *who)).await;
            assert_eq!(s, 200, "{list}");
            assert_eq!(&members(&list["data"][0]), expected, "{list}");
        }
        // `fields` naming a member the caller never reads: 400, on GET and INDEX.
        for uri in [format!("{item}?fields=id,staff_note"), "/api/loans/?fields=id,staff_note".to_owned()] {
            let (s, p, _) = call(&app, auth(Req::get().uri(&uri), &w.api, w.bob)).await;
            assert_eq!(s, 400, "{p}");
            assert!(p["detail"].as_str().unwrap().contains("staff_note"), "{p}");
            let (s, one, _) = call(&app, auth(Req::get().uri(&uri), &w.api, w.admin)).await;
            assert_eq!(s, 200, "{one}");
        }
        let (s, p, _) = call(&app, auth(Req::get().uri(&format!("{item}?fields=vip_note")), &w.api, w.alice)).await;
        assert_eq!(s, 400, "{p}");
        let (s, one, _) = call(&app, auth(Req::get().uri(&format!("{item}?fields=id,vip_note")), &w.api, w.vip)).await;
        assert_eq!((s, members(&one)), (200, vec!["id", "vip_note"]));
        // An owner's member may be asked for: it shows on the caller's own rows only.
        let (s, list, _) = call(&app, auth(Req::get().uri("/api/loans/?fields=id,owner_note"), &w.api, w.bob)).await;
        assert_eq!(s, 200, "{list}");
        assert_eq!(members(&list["data"][0]), vec!["id"], "{list}");
        let (_, list, _) = call(&app, auth(Req::get().uri("/api/loans/?fields=id,owner_note"), &w.api, w.alice)).await;
        assert_eq!(list["data"][0]["owner_note"], "mine", "{list}");
        // The owner's own write answers keep hiding the administrators' member.
        let (s, changed, _) = call(&app, auth(Req::patch().uri(&item).set_json(json!({"title": "Dune II"})), &w.api, w.alice)).await;
        assert_eq!(s, 200, "{changed}");
        assert_eq!(members(&changed), with(&["owner_note"]), "{changed}");
        // Batch answers too: each item as its caller may read it.
        let items = json!({"items": [{"title": "Kim", "owner_note": "n", "vip_note": "v"}]});
        let (s, batch, _) = call(&app, auth(Req::post().uri("/api/loans/batch/").set_json(items), &w.api, w.bob)).await;
        assert_eq!(s, 201, "{batch}");
        assert_eq!(members(&batch["data"][0]), with(&["owner_note"]), "{batch}");
        let id = batch["data"][0]["id"].clone();
        let changes = json!({"items": [{"id": id, "changes": {"title": "Kim II"}}]});
        let (s, batch, _) = call(&app, auth(Req::patch().uri("/api/loans/batch/").set_json(changes.clone()), &w.api, w.vip)).await;
        assert_eq!(s, 403, "Bob's loan is Bob's to write: {batch}");
        let (s, batch, _) = call(&app, auth(Req::patch().uri("/api/loans/batch/").set_json(changes), &w.api, w.bob)).await;
        assert_eq!(s, 200, "{batch}");
        assert_eq!(members(&batch["data"][0]), with(&["owner_note"]), "{batch}");
        // Anonymous callers never get this far: reads need an account.
        assert_eq!(call(&app, Req::get().uri(&item)).await.0, 401);
    }

    async fn hidden_members_cannot_be_sorted_or_filtered_by(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let _ = alices_loan(&app, &w).await;
        let (s, bobs, _) = call(&app, auth(Req::post().uri("/api/loans/").set_json(json!({"title": "Emma", "owner_note": "mine"})), &w.api, w.bob)).await;
        assert_eq!(s, 201, "{bobs}");
        // A member the caller never reads: 400 naming the parameter, whatever the value.
        for (uri, param) in [
            ("/api/loans/?sort=staff_note", "sort"),
            ("/api/loans/?sort=-vip_note", "sort"),
            ("/api/loans/?staff_note=late%20twice", "staff_note"),
            ("/api/loans/?staff_note__isnull=true", "staff_note__isnull"),
            ("/api/loans/?filter=staff_note%20%3D%20%27late%20twice%27", "filter"),
            ("/api/loans/?filter=not%20(staff_note%20is%20null)%20or%20title%20%3D%20%27x%27", "filter"),
            ("/api/loans/?filter=vip_note%20like%20%27g%25%27", "filter"),
        ] {
            let (s, p, _) = call(&app, auth(Req::get().uri(uri), &w.api, w.bob)).await;
            assert_eq!(s, 400, "{uri}: {p}");
            assert_eq!(p["field"], param, "{uri}: {p}");
            assert!(p["detail"].as_str().unwrap().contains("may not read"), "{p}");
            // Administrators read everything: the same requests answer.
            let (s, list, _) = call(&app, auth(Req::get().uri(uri), &w.api, w.admin)).await;
            assert_eq!(s, 200, "{uri}: {list}");
        }
        // The admin's filter on the staff note finds Alice's loan.
        let (_, list, _) = call(&app, auth(Req::get().uri("/api/loans/?staff_note=late%20twice"), &w.api, w.admin)).await;
        assert_eq!(list["pagination"]["total"], 1);
        // The VIP reads and filters the VIP note.
        let (s, list, _) = call(&app, auth(Req::get().uri("/api/loans/?vip_note=gold&sort=vip_note"), &w.api, w.vip)).await;
        assert_eq!((s, list["pagination"]["total"].clone()), (200, json!(1)), "{list}");
        // An owner's member filters the caller's own rows only: both loans say "mine", and
        // every comparison on it is false on Alice's row for Bob, whatever her note holds, so
        // a negation includes her row whether her note matches or not.
        for (uri, titles) in [
            ("/api/loans/?owner_note=mine", vec!["Emma"]),
            ("/api/loans/?filter=owner_note%20%3D%20%27mine%27", vec!["Emma"]),
            ("/api/loans/?filter=owner_note%20is%20null", vec![]),
            ("/api/loans/?filter=not%20(owner_note%20%3D%20%27zzz%27)", vec!["Dune", "Emma"]),
            ("/api/loans/?filter=not%20(owner_note%20%3D%20%27mine%27)", vec!["Dune"]),
            ("/api/loans/?filter=not%20(owner_note%20is%20null)", vec!["Dune", "Emma"]),
        ] {
            let (s, list, _) = call(&app, auth(Req::get().uri(uri), &w.api, w.bob)).await;
            assert_eq!(s, 200, "{uri}: {list}");
            let got: Vec<&str> = list["data"].as_array().unwrap().iter().map(|l| l["title"].as_str().unwrap()).collect();
            assert_eq!(got, titles, "{uri}: {list}");
        }
        // The same filters see both loans for an administrator.
        let (_, list, _) = call(&app, auth(Req::get().uri("/api/loans/?owner_note=mine"), &w.api, w.admin)).await;
        assert_eq!(list["pagination"]["total"], 2);
        // An estimated count of a filter on an owner's member would draw on every row's
        // hidden value (the planner's statistics): non-administrators get the exact count.
        let mut conn = w.api.db().get().await.unwrap();
        if w.api.db().backend() == Backend::Postgres {
            with_conn!(conn, |c| c.batch_execute("ANALYZE loans").await).unwrap();
        }
        drop(conn);
        for (who, n) in [(w.bob, 0), (w.alice, 1)] {
            let (s, list, _) = call(&app, auth(Req::get().uri("/api/loans/?count=estimated&owner_note=mine&title=Dune"), &w.api, who)).await;
            assert_eq!((s, list["pagination"]["total"].clone()), (200, json!(n)), "{list}");
        }
        // Sorting by an owner's member would order other rows by their hidden values: 400.
        let (s, p, _) = call(&app, auth(Req::get().uri("/api/loans/?sort=owner_note"), &w.api, w.bob)).await;
        assert_eq!((s, p["field"].clone()), (400, json!("sort")), "{p}");
        assert_eq!(call(&app, auth(Req::get().uri("/api/loans/?sort=owner_note"), &w.api, w.admin)).await.0, 200);
    }

    async fn the_filter_extractor_of_custom_routes_follows_the_read_rules(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let _ = alices_loan(&app, &w).await;
        let (s, bobs, _) = call(&app, auth(Req::post().uri("/api/loans/").set_json(json!({"title": "Emma", "owner_note": "mine"})), &w.api, w.bob)).await;
        assert_eq!(s, 201, "{bobs}");
        // A member the caller never reads: 400 naming the parameter, as the generated INDEX
        // answers; administrators get the count.
        for (uri, param) in [
            ("/api/loans/count/?staff_note=late%20twice", "staff_note"),
            ("/api/loans/count/?sort=staff_note", "sort"),
            ("/api/loans/count/?filter=staff_note%20is%20null", "filter"),
            ("/api/loans/count/?fields=id,staff_note", "fields"),
            ("/api/loans/count/?vip_note=gold", "vip_note"),
        ] {
            let (s, p, _) = call(&app, auth(Req::get().uri(uri), &w.api, w.bob)).await;
            assert_eq!(s, 400, "{uri}: {p}");
            assert_eq!(p["field"], param, "{uri}: {p}");
            assert!(p["detail"].as_str().unwrap().contains("may not read"), "{p}");
            let (s, p, _) = call(&app, Req::get().uri(uri)).await;
            assert_eq!(s, 400, "anonymous: {uri}: {p}");
            let (s, v, _) = call(&app, auth(Req::get().uri(uri), &w.api, w.admin)).await;
            assert_eq!(s, 200, "{uri}: {v}");
        }
        let (_, v, _) = call(&app, auth(Req::get().uri("/api/loans/count/?staff_note=late%20twice"), &w.api, w.admin)).await;
        assert_eq!(v["count"], 1, "the admin's filter applies: {v}");
        // The VIP reads the VIP note, so filters by it.
        let (s, v, _) = call(&app, auth(Req::get().uri("/api/loans/count/?vip_note=gold"), &w.api, w.vip)).await;
        assert_eq!((s, v["count"].clone()), (200, json!(1)), "{v}");
        // An owner's member filters the caller's own rows only, as in INDEX.
        for (who, n) in [(w.bob, 1), (w.alice, 1), (w.admin, 2)] {
            let (s, v, _) = call(&app, auth(Req::get().uri("/api/loans/count/?owner_note=mine"), &w.api, who)).await;
            assert_eq!((s, v["count"].clone()), (200, json!(n)), "{v}");
            let (s, v, _) = call(&app, auth(Req::get().uri("/api/loans/count/?filter=not%20(owner_note%20%3D%20%27mine%27)"), &w.api, who)).await;
            assert_eq!((s, v["count"].clone()), (200, json!(2 - n)), "{v}");
        }
        let (s, p, _) = call(&app, auth(Req::get().uri("/api/loans/count/?sort=owner_note"), &w.api, w.bob)).await;
        assert_eq!((s, p["field"].clone()), (400, json!("sort")), "{p}");
        // Named filters apply as in INDEX (they are the resource's own, so they may compare
        // members the caller cannot read); an unknown name is 400.
        for (who, n) in [(w.bob, 1), (w.admin, 1)] {
            let (s, v, _) = call(&app, auth(Req::get().uri("/api/loans/count/?scope=noted"), &w.api, who)).await;
            assert_eq!((s, v["count"].clone()), (200, json!(n)), "{v}");
            let (_, list, _) = call(&app, auth(Req::get().uri("/api/loans/?scope=noted"), &w.api, who)).await;
            assert_eq!(list["pagination"]["total"], n, "INDEX agrees: {list}");
        }
        let (s, v, _) = call(&app, auth(Req::get().uri("/api/loans/count/?scope=noted&title=Emma"), &w.api, w.bob)).await;
        assert_eq!((s, v["count"].clone()), (200, json!(0)), "ANDed with the other filters: {v}");
        let (s, p, _) = call(&app, auth(Req::get().uri("/api/loans/count/?scope=nope"), &w.api, w.bob)).await;
        assert_eq!((s, p["field"].clone()), (400, json!("scope")), "{p}");
        // An invalid token is 401, as everywhere.
        let (s, _, _) = call(&app, Req::get().uri("/api/loans/count/?title=Dune").insert_header(("authorization", "Bearer nope"))).await;
        assert_eq!(s, 401);
    }

    async fn etags_are_computed_on_what_the_caller_sees(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let item = alices_loan(&app, &w).await;
        let mut tags = Vec::new();
        for who in [w.admin, w.alice, w.bob, w.vip] {
            let (s, _, tag) = call(&app, auth(Req::get().uri(&item), &w.api, who)).await;
            assert_eq!(s, 200);
            tags.push(tag.unwrap());
        }
        let mut distinct = tags.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), 4, "each view has its own tag: {tags:?}");
        // Bob's tag matches for Bob (304), not for Alice, who sees more.
        let (s, _, _) = call(&app, auth(Req::get().uri(&item).insert_header(("if-none-match", tags[2].as_str())), &w.api, w.bob)).await;
        assert_eq!(s, 304);
        let (s, _, _) = call(&app, auth(Req::get().uri(&item).insert_header(("if-none-match", tags[2].as_str())), &w.api, w.alice)).await;
        assert_eq!(s, 200);
        // A write's If-Match is judged by the writer's own view: the administrator's tag is
        // not Alice's (412), her own is (200), and her answer's tag is the one her next GET gets.
        let (s, _, _) = call(&app, auth(Req::patch().uri(&item).insert_header(("if-match", tags[0].as_str())).set_json(json!({"title": "Dune"})), &w.api, w.alice)).await;
        assert_eq!(s, 412);
        let (s, changed, tag) = call(&app, auth(Req::patch().uri(&item).insert_header(("if-match", tags[1].as_str())).set_json(json!({"title": "Dune"})), &w.api, w.alice)).await;
        assert_eq!(s, 200, "{changed}");
        let (_, _, again) = call(&app, auth(Req::get().uri(&item), &w.api, w.alice)).await;
        assert_eq!(tag, again);
        // Bob's tag after the change is the tag of the body he gets: the same body, the same tag.
        let (_, first, t1) = call(&app, auth(Req::get().uri(&item), &w.api, w.bob)).await;
        let (_, second, t2) = call(&app, auth(Req::get().uri(&item), &w.api, w.bob)).await;
        assert_eq!((first, t1), (second, t2));
    }

    async fn the_description_says_who_reads_each_member(t) {
        let w = world(&t).await;
        let spec: Value = serde_json::from_str(&w.api.openapi_json()).unwrap();
        let schemas = &spec["components"]["schemas"];
        let response = &schemas["Loan"];
        assert!(response.is_object(), "{}", schemas.as_object().unwrap().keys().cloned().collect::<Vec<_>>().join(", "));
        let props = &response["properties"];
        for (member, ext, words) in [
            ("staff_note", "admin", "administrators only"),
            ("owner_note", "owner:owner_id", "`owner_id`"),
            ("vip_note", "rule", "read rule"),
        ] {
            assert_eq!(props[member]["x-crudforge-read"], ext, "{member}: {response}");
            let d = props[member]["description"].as_str().unwrap();
            assert!(d.contains(words) && d.contains("absent for other callers"), "{member}: {d}");
            let required = response["required"].as_array().cloned().unwrap_or_default();
            assert!(!required.contains(&json!(member)), "{member} must stay optional: {response}");
        }
        assert!(props["title"].get("x-crudforge-read").is_none());
    }
}

/// The standard base64 alphabets, read leniently (either alphabet, with or without padding):
/// what anyone holding a cursor could do to look inside it.
fn base64_bytes(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'-' | b'+' => Some(62),
        b'_' | b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0u32);
    for v in text.bytes().filter_map(value) {
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

backend_tests! {
    async fn an_administrators_cursor_does_not_carry_hidden_members_in_clear(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        // Four loans whose staff notes (administrators only) are the sort key.
        let notes = ["note-alpha-1111", "note-bravo-2222", "note-charlie-3333", "note-delta-4444"];
        for (i, note) in notes.iter().enumerate() {
            let (s, l, _) = call(&app, auth(Req::post().uri("/api/loans/").set_json(json!({"title": format!("L{i}")})), &w.api, w.alice)).await;
            assert_eq!(s, 201, "{l}");
            let item = format!("/api/loans/{}", l["id"].as_str().unwrap());
            let (s, p, _) = call(&app, auth(Req::patch().uri(&item).set_json(json!({"staff_note": note})), &w.api, w.admin)).await;
            assert_eq!(s, 200, "{p}");
        }
        // The administrator walks the list by staff note, one loan a page.
        let mut seen = Vec::new();
        let mut cursors = Vec::new();
        let mut uri = "/api/loans/?sort=-staff_note&page_size=1".to_owned();
        loop {
            let (s, page, _) = call(&app, auth(Req::get().uri(&uri), &w.api, w.admin)).await;
            assert_eq!(s, 200, "{uri}: {page}");
            seen.extend(page["data"].as_array().unwrap().iter().map(|l| l["staff_note"].as_str().unwrap().to_owned()));
            match page["pagination"]["next_cursor"].as_str() {
                Some(c) => {
                    cursors.push(c.to_owned());
                    uri = format!("/api/loans/?sort=-staff_note&page_size=1&cursor={c}");
                }
                None => break,
            }
        }
        let mut expected: Vec<String> = notes.iter().map(|n| (*n).to_owned()).collect();
        expected.reverse();
        assert_eq!(seen, expected, "the walk pages in order, none repeated or skipped");
        assert_eq!(cursors.len(), 3);
        // Whoever sees the URL learns nothing of the notes: not in the cursor's text, not in
        // its bytes read as base64 (from any offset), not even six letters of one. (Random
        // bytes spell six given letters about once in 10^10 tries.)
        let mut pieces: Vec<&str> = vec!["staff_note"];
        for n in &notes {
            pieces.extend((0..=n.len() - 6).map(|i| &n[i..i + 6]));
        }
        for c in &cursors {
            let mut views = vec![c.as_bytes().to_vec()];
            for skip in 0..4 {
                views.push(base64_bytes(&c[skip..]));
            }
            for view in &views {
                let text = String::from_utf8_lossy(view);
                for hidden in &pieces {
                    assert!(!text.contains(hidden), "{hidden} shows in the cursor {c}");
                }
            }
        }
        // Bob may not sort by the staff note, so the administrator's cursor gets him nothing;
        // with his own sort it belongs to another order (400 naming `cursor`).
        let (s, p, _) = call(&app, auth(Req::get().uri(&format!("/api/loans/?sort=-staff_note&cursor={}", cursors[0])), &w.api, w.bob)).await;
        assert_eq!((s, p["field"].clone()), (400, json!("sort")), "{p}");
        let (s, p, _) = call(&app, auth(Req::get().uri(&format!("/api/loans/?cursor={}", cursors[0])), &w.api, w.bob)).await;
        assert_eq!((s, p["field"].clone()), (400, json!("cursor")), "{p}");
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Tags, whose `type` column is a Rust keyword.
    tags (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Kind.
        r#type -> Text,
    }
}

/// A member named with a raw identifier, readable by administrators only.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = tags)]
pub struct Tag {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Its kind.
    #[resource(read = admin)]
    pub r#type: String,
}

/// A raw identifier's member is named as it is serialized (`type`, not `r#type`): in the
/// fields that filters, `sort` and `fields` accept, and in the read rules, which hide members
/// by that name (under the other name the member would reach every caller).
#[actix_web::test]
async fn a_raw_identifier_is_named_as_serialized() {
    let tag = Tag {
        id: Uuid::nil(),
        created_at: DateTime::default(),
        updated_at: DateTime::default(),
        r#type: "secret kind".into(),
    };
    let body = serde_json::to_value(TagResponse::from(tag)).unwrap();
    assert_eq!(body["type"], "secret kind");
    let names: Vec<&str> = Tag::FIELDS.iter().map(|f| f.name).collect();
    assert_eq!(names, ["id", "created_at", "updated_at", "type"]);
    let hidden: Vec<&str> = <Tag as crudforge::__private::Generated>::READ_RULES
        .iter()
        .map(|(name, _)| *name)
        .collect();
    assert_eq!(hidden, ["type"]);
}

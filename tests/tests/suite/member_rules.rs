//! Member rules (`update(members) = "..."`, `create(members) = "..."`), on both backends, on a
//! small classifieds service: an offer's `state` is the listing's seller's to change, and
//! only from `pending` to `accepted` or `declined`; its `message` and `amount_cents` are the
//! buyer's while it is pending, and the amount may only go up; a new offer is pending. A
//! refused member is named in a 403 (an import's 422 names the line too) and nothing is
//! written, through PATCH, batch PATCH, POST, batch POST and import; a member sent back unchanged is no change; administrators pass;
//! the description says the rules; a member rule that names no member, or reads a sent value
//! in a row rule, fails the mount.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::perms::Expr;
use crudforge::users;
use crudforge::{with_conn, Api, Resource};
use crudforge_tests::http::{auth, send, Req};
use crudforge_tests::{backend_tests, Backend};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::{json, Value};
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Listings.
    listings (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Seller.
        seller_id -> PortableUuid,
        /// Title.
        title -> Text,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Offers.
    offers (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Listing.
        listing_id -> PortableUuid,
        /// Buyer.
        buyer_id -> PortableUuid,
        /// State.
        state -> Text,
        /// Message.
        message -> Text,
        /// Amount.
        amount_cents -> Integer,
    }
}

diesel::allow_tables_to_appear_in_same_query!(listings, offers);

type DateTime = chrono::DateTime<chrono::Utc>;

/// A listing: everyone signed in reads it; its seller writes it.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = listings)]
#[resource(rules(read = "@signed_in", write = "seller_id = @me"))]
pub struct Listing {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// The seller: the caller.
    #[resource(set = me)]
    pub seller_id: Uuid,
    /// What is sold.
    pub title: String,
}

/// An offer on a listing, read and changed by its buyer and the listing's seller, each
/// changing only their own members.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = offers)]
#[resource(rules(
    read = "buyer_id = @me or listing.seller_id = @me",
    update = "buyer_id = @me or listing.seller_id = @me",
    delete = "buyer_id = @me",
    update(state) = "listing.seller_id = @me and state = 'pending' and @new.state in ('accepted', 'declined')",
    update(message, amount_cents) = "buyer_id = @me and state = 'pending' and amount_cents <= @new.amount_cents",
    create(state) = "@new.state = 'pending'"
))]
pub struct Offer {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// The listing.
    #[resource(belongs_to(Listing), create_only)]
    pub listing_id: Uuid,
    /// The buyer: the caller.
    #[resource(set = me)]
    pub buyer_id: Uuid,
    /// `pending`, `accepted` or `declined`.
    #[resource(one_of = ["pending", "accepted", "declined"], default = "pending")]
    pub state: String,
    /// A word to the seller.
    pub message: String,
    /// The amount offered.
    pub amount_cents: i32,
}

struct World {
    api: Api,
    admin: Uuid,
    seller: Uuid,
    buyer: Uuid,
    other: Uuid,
}

async fn world(t: &crudforge_tests::TestDb) -> World {
    let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
    let db = t.open(&cfg).await;
    let ddl = match db.backend() {
        Backend::Sqlite => "CREATE TABLE listings (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, seller_id TEXT NOT NULL, title TEXT NOT NULL); \
             CREATE TABLE offers (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, listing_id TEXT NOT NULL REFERENCES listings (id), buyer_id TEXT NOT NULL, state TEXT NOT NULL, message TEXT NOT NULL, amount_cents INTEGER NOT NULL)",
        Backend::Postgres => "CREATE TABLE listings (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, seller_id UUID NOT NULL, title TEXT NOT NULL); \
             CREATE TABLE offers (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, listing_id UUID NOT NULL REFERENCES listings (id), buyer_id UUID NOT NULL, state TEXT NOT NULL, message TEXT NOT NULL, amount_cents INTEGER NOT NULL)",
    };
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(ddl).await).unwrap();
    drop(conn);
    let admin = crudforge_tests::user(&db, "admin@example.com").await;
    users::grant_role(&db, admin, "ADMIN", None).await.unwrap();
    let seller = crudforge_tests::user(&db, "seller@example.com").await;
    let buyer = crudforge_tests::user(&db, "buyer@example.com").await;
    let other = crudforge_tests::user(&db, "other@example.com").await;
    let api = Api::new(cfg, db)
        .unwrap()
        .mount(Listing::blueprint("/api/listings/"))
        .unwrap()
        .mount(
            Offer::blueprint("/api/offers/")
                .batch([
                    crudforge::crud::Operation::Post,
                    crudforge::crud::Operation::Patch,
                ])
                .import(),
        )
        .unwrap();
    World {
        api,
        admin,
        seller,
        buyer,
        other,
    }
}

fn patch(api: &Api, who: Uuid, id: &str, body: Value) -> Req {
    auth(
        Req::patch()
            .uri(&format!("/api/offers/{id}"))
            .set_json(body),
        api,
        who,
    )
}

fn post(api: &Api, who: Uuid, uri: &str, body: Value) -> Req {
    auth(Req::post().uri(uri).set_json(body), api, who)
}

/// The problem's detail.
fn detail(body: &Value) -> &str {
    body["detail"].as_str().unwrap_or_default()
}

backend_tests! {
    async fn each_party_changes_only_its_own_members(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let (s, listing) = send(&app, post(&w.api, w.seller, "/api/listings/", json!({"title": "bike"}))).await;
        assert_eq!(s, 201, "{listing}");
        let (s, offer) = send(&app, post(&w.api, w.buyer, "/api/offers/", json!({"listing_id": listing["id"], "message": "hi", "amount_cents": 100}))).await;
        assert_eq!(s, 201, "{offer}");
        assert_eq!(offer["state"], "pending");
        let id = offer["id"].as_str().unwrap().to_owned();
        let get = |who: Uuid| auth(Req::get().uri(&format!("/api/offers/{id}")), &w.api, who);

        // The buyer may not change the state; nothing is written.
        let (s, body) = send(&app, patch(&w.api, w.buyer, &id, json!({"state": "accepted", "message": "please"}))).await;
        assert_eq!(s, 403, "{body}");
        assert!(detail(&body).contains("`state`"), "{body}");
        assert!(!detail(&body).contains("`message`"), "{body}");
        let (_, now) = send(&app, get(w.buyer)).await;
        assert_eq!((now["state"].as_str(), now["message"].as_str()), (Some("pending"), Some("hi")));
        // The seller may not change the buyer's members.
        let (s, body) = send(&app, patch(&w.api, w.seller, &id, json!({"message": "no"}))).await;
        assert_eq!(s, 403, "{body}");
        assert!(detail(&body).contains("`message`"), "{body}");
        // The buyer raises the amount and rewords the message; lowering it is refused.
        let (s, body) = send(&app, patch(&w.api, w.buyer, &id, json!({"message": "more", "amount_cents": 150}))).await;
        assert_eq!((s, body["amount_cents"].as_i64()), (200, Some(150)), "{body}");
        let (s, body) = send(&app, patch(&w.api, w.buyer, &id, json!({"amount_cents": 120}))).await;
        assert_eq!(s, 403, "{body}");
        assert!(detail(&body).contains("`amount_cents`"), "{body}");
        // Sending a member back unchanged is no change: the buyer sends the whole item.
        let (s, body) = send(&app, patch(&w.api, w.buyer, &id, json!({"state": "pending", "message": "more!", "amount_cents": 150}))).await;
        assert_eq!((s, body["message"].as_str()), (200, Some("more!")), "{body}");
        // The seller may accept or decline, and only from pending; not to another value.
        let (s, body) = send(&app, patch(&w.api, w.seller, &id, json!({"state": "pending"}))).await;
        assert_eq!(s, 200, "unchanged: {body}");
        let (s, body) = send(&app, patch(&w.api, w.seller, &id, json!({"state": "accepted"}))).await;
        assert_eq!((s, body["state"].as_str()), (200, Some("accepted")), "{body}");
        let (s, body) = send(&app, patch(&w.api, w.seller, &id, json!({"state": "declined"}))).await;
        assert_eq!(s, 403, "no longer pending: {body}");
        // Once accepted, the buyer's members are closed too.
        let (s, body) = send(&app, patch(&w.api, w.buyer, &id, json!({"message": "late"}))).await;
        assert_eq!(s, 403, "{body}");
        // Someone else: the row rule's 404 (the offer is not theirs to read) comes first.
        let (s, _) = send(&app, patch(&w.api, w.other, &id, json!({"message": "x"}))).await;
        assert_eq!(s, 404);
        // Administrators pass every member rule.
        let (s, body) = send(&app, patch(&w.api, w.admin, &id, json!({"state": "pending", "amount_cents": 1}))).await;
        assert_eq!((s, body["amount_cents"].as_i64()), (200, Some(1)), "{body}");
        // A new offer is pending: a buyer who sends another state is refused, nothing made.
        let (s, body) = send(&app, post(&w.api, w.buyer, "/api/offers/", json!({"listing_id": listing["id"], "message": "x", "amount_cents": 5, "state": "accepted"}))).await;
        assert_eq!(s, 403, "{body}");
        assert!(detail(&body).contains("`state`"), "{body}");
        let (_, page) = send(&app, auth(Req::get().uri("/api/offers/"), &w.api, w.buyer)).await;
        assert_eq!(page["pagination"]["total"], 1, "{page}");
    }

    async fn batches_and_imports_obey_the_member_rules(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let (_, listing) = send(&app, post(&w.api, w.seller, "/api/listings/", json!({"title": "lamp"}))).await;
        let lid = listing["id"].as_str().unwrap().to_owned();
        let (s, made) = send(&app, post(&w.api, w.buyer, "/api/offers/batch/", json!({"items": [
            {"listing_id": lid, "message": "a", "amount_cents": 10},
            {"listing_id": lid, "message": "b", "amount_cents": 20, "state": "pending"},
        ]}))).await;
        assert_eq!(s, 201, "{made}");
        let ids: Vec<String> = made["data"].as_array().unwrap().iter().map(|o| o["id"].as_str().unwrap().to_owned()).collect();
        // A batch create with one item in another state: refused whole, naming the item.
        let (s, body) = send(&app, post(&w.api, w.buyer, "/api/offers/batch/", json!({"items": [
            {"listing_id": lid, "message": "c", "amount_cents": 30},
            {"listing_id": lid, "message": "d", "amount_cents": 40, "state": "declined"},
        ]}))).await;
        assert_eq!(s, 403, "{body}");
        assert!(body.to_string().contains("`state`"), "{body}");
        // A batch update: one item the seller may change, one member he may not.
        let batch = |who: Uuid, items: Value| auth(Req::patch().uri("/api/offers/batch/").set_json(json!({"items": items})), &w.api, who);
        let (s, body) = send(&app, batch(w.seller, json!([
            {"id": ids[0], "changes": {"state": "accepted"}},
            {"id": ids[1], "changes": {"amount_cents": 999}},
        ]))).await;
        assert_eq!(s, 403, "{body}");
        assert!(body.to_string().contains("`amount_cents`"), "{body}");
        let (_, page) = send(&app, auth(Req::get().uri("/api/offers/?sort=message"), &w.api, w.seller)).await;
        let states: Vec<&str> = page["data"].as_array().unwrap().iter().map(|o| o["state"].as_str().unwrap()).collect();
        assert_eq!(states, ["pending", "pending"], "nothing written: {page}");
        let (s, body) = send(&app, batch(w.seller, json!([
            {"id": ids[0], "changes": {"state": "accepted"}},
            {"id": ids[1], "changes": {"state": "declined"}},
        ]))).await;
        assert_eq!(s, 200, "{body}");
        // An import is a batch of creates: a row in another state refuses the file.
        let csv = "listing_id,message,amount_cents,state\n".to_owned()
            + &format!("{lid},e,50,pending\n{lid},f,60,accepted\n");
        let import = |csv: String| auth(Req::post().uri("/api/offers/import/").insert_header(("content-type", "text/csv")).set_payload(csv), &w.api, w.buyer);
        let (s, body) = send(&app, import(csv)).await;
        assert_eq!(s, 422, "{body}");
        assert!(detail(&body).contains("line 3: You may not set `state`"), "{body}");
        let (s, body) = send(&app, import(format!("listing_id,message,amount_cents\n{lid},e,50\n"))).await;
        assert_eq!(s, 201, "{body}");
        let (_, page) = send(&app, auth(Req::get().uri("/api/offers/"), &w.api, w.buyer)).await;
        assert_eq!(page["pagination"]["total"], 3, "{page}");
    }

    async fn the_description_says_the_member_rules(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let (_, spec) = send(&app, Req::get().uri("/openapi.json")).await;
        let text = |method: &str, path: &str| spec["paths"][path][method]["description"].as_str().unwrap().to_owned();
        let update = text("patch", "/api/offers/{id}");
        assert!(update.contains("`state` only where `listing.seller_id = @me and state = 'pending' and @new.state in ('accepted', 'declined')`"), "{update}");
        assert!(update.contains("`message`, `amount_cents` only where"), "{update}");
        let create = text("post", "/api/offers/");
        assert!(create.contains("may set `state` only where `@new.state = 'pending'`"), "{create}");
        assert!(!create.contains("`message`"), "{create}");
    }

    async fn a_member_rule_that_does_not_fit_fails_the_mount(t) {
        let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
        let db = t.open(&cfg).await;
        let mount = |rules: Expr| {
            Api::new(cfg.clone(), db.clone())
                .unwrap()
                .mount(Listing::blueprint("/api/listings/"))
                .unwrap()
                .mount(Offer::blueprint("/api/offers/").rules(rules))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let e = mount(Expr::new().update_members(["colour"], "buyer_id = @me"));
        assert!(e.contains("`colour` is not a member"), "{e}");
        let e = mount(Expr::new().update_members(Vec::<String>::new(), "buyer_id = @me"));
        assert!(e.contains("names no member"), "{e}");
        let e = mount(Expr::new().update("@new.state = 'x'"));
        assert!(e.contains("belongs to member rules"), "{e}");
        let e = mount(Expr::new().update_members(["state"], "message = @new.state"));
        assert!(e.contains("`@new.state` is compared with `state` itself"), "{e}");
        let e = mount(Expr::new().update_members(["state"], "@new.state like 'a%'"));
        assert!(e.contains("not matched with a pattern"), "{e}");
        let e = mount(Expr::new().update_members(["state"], "@new.colour = 'a'"));
        assert!(e.contains("`colour` is not a filterable field"), "{e}");
        assert_eq!(mount(Expr::new().update_members(["state"], "@new.state != 'x' and amount_cents < @new.amount_cents")), "");
    }
}

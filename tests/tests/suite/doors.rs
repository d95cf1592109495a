//! Access per door (`CrudBlueprint::door`) on both backends: an import for administrators
//! only, an export narrowed by an expression to some of the rows the list gives, aggregates
//! for a role, the feed for administrators; each door refuses whom its access excludes while
//! the operation it follows still lets them in, administrators pass every door, the
//! description tells each door's access (and the callers it admits are the callers let in),
//! and an expression that names no member of the resource fails the mount.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::perms::{Door, DoorAccess};
use crudforge::users;
use crudforge::{Api, CrudBlueprint, Resource};
use crudforge_tests::backend_tests;
use crudforge_tests::http::{auth, call, json_of, Req};
use crudforge_tests::parts::Part;
use serde_json::Value;
use uuid::Uuid;

struct World {
    api: Api,
    admin: Uuid,
    alice: Uuid,
    analyst: Uuid,
}

/// The parts' blueprint with every door, and each door's own access.
fn blueprint() -> CrudBlueprint<Part> {
    Part::blueprint("/api/parts/")
        .export()
        .import()
        .aggregates()
        .events()
        .door(Door::Import, DoorAccess::Admins)
        .door(Door::Export, DoorAccess::expr("stocked = true"))
        .door(Door::Aggregate, DoorAccess::expr("@role = 'ANALYST'"))
        .door(Door::Feed, DoorAccess::Admins)
}

async fn world(t: &crudforge_tests::TestDb) -> World {
    let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
    let db = t.open(&cfg).await;
    crudforge_tests::parts::create_table(&db).await;
    let admin = crudforge_tests::user(&db, "admin@example.com").await;
    users::grant_role(&db, admin, "ADMIN", None).await.unwrap();
    let alice = crudforge_tests::user(&db, "alice@example.com").await;
    let analyst = crudforge_tests::user(&db, "analyst@example.com").await;
    users::grant_role(&db, analyst, "ANALYST", None)
        .await
        .unwrap();
    let api = Api::new(cfg, db).unwrap().mount(blueprint()).unwrap();
    World {
        api,
        admin,
        alice,
        analyst,
    }
}

fn import(api: &Api, who: Option<Uuid>, csv: &str) -> Req {
    let req = Req::post()
        .uri("/api/parts/import/")
        .insert_header(("content-type", "text/csv"))
        .set_payload(csv.to_owned());
    match who {
        Some(id) => auth(req, api, id),
        None => req,
    }
}

/// The names in an NDJSON export, in order.
fn exported(body: &[u8]) -> Vec<String> {
    std::str::from_utf8(body)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["name"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// The "Who may call" sentence of an operation in the description.
fn who_may_call(spec: &Value, path: &str, method: &str) -> String {
    let text = spec["paths"][path][method]["description"]
        .as_str()
        .unwrap_or_else(|| panic!("{method} {path} has no description"));
    text.split("Who may call: ")
        .nth(1)
        .unwrap_or_else(|| panic!("{method} {path}: {text}"))
        .to_owned()
}

backend_tests! {
    async fn each_door_lets_in_whom_its_access_says(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        // Alice may create parts, one at a time or in a batch, but not import them.
        let (s, body) = call(&app, auth(Req::post().uri("/api/parts/").set_json(serde_json::json!({"name": "bolt", "qty": 3, "stocked": true})), &w.api, w.alice)).await;
        assert_eq!(s, 201, "{}", String::from_utf8_lossy(&body));
        let csv = "name,qty,stocked\nnut,5,false\nwasher,1,true\n";
        assert_eq!(call(&app, import(&w.api, Some(w.alice), csv)).await.0, 403);
        assert_eq!(call(&app, import(&w.api, None, csv)).await.0, 401);
        let (s, body) = call(&app, auth(Req::get().uri("/api/parts/"), &w.api, w.alice)).await;
        assert_eq!((s, json_of(&body)["pagination"]["total"].as_u64()), (200, Some(1)));
        // An administrator imports (the rows are the administrator's own).
        let (s, body) = call(&app, import(&w.api, Some(w.admin), csv)).await;
        assert_eq!(s, 201, "{}", String::from_utf8_lossy(&body));
        // Alice's second part is not in stock: her list shows both, her export the stocked one.
        let (s, _) = call(&app, auth(Req::post().uri("/api/parts/").set_json(serde_json::json!({"name": "spring", "qty": 2, "stocked": false})), &w.api, w.alice)).await;
        assert_eq!(s, 201);
        let (_, body) = call(&app, auth(Req::get().uri("/api/parts/?sort=name"), &w.api, w.alice)).await;
        let page = json_of(&body);
        let listed: Vec<&str> = page["data"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert_eq!(listed, ["bolt", "spring"]);
        let (s, body) = call(&app, auth(Req::get().uri("/api/parts/export/?format=ndjson&sort=name"), &w.api, w.alice)).await;
        assert_eq!(s, 200, "{}", String::from_utf8_lossy(&body));
        assert_eq!(exported(&body), ["bolt"]);
        // Administrators pass every door: the whole table.
        let (s, body) = call(&app, auth(Req::get().uri("/api/parts/export/?format=ndjson&sort=name"), &w.api, w.admin)).await;
        assert_eq!(s, 200);
        assert_eq!(exported(&body), ["bolt", "nut", "spring", "washer"]);
        assert_eq!(call(&app, Req::get().uri("/api/parts/export/")).await.0, 401);
        // Aggregates: the role's holders (over their own rows, as the list's rules say).
        let aggregate = "/api/parts/aggregate/?group_by=stocked";
        assert_eq!(call(&app, auth(Req::get().uri(aggregate), &w.api, w.alice)).await.0, 403);
        assert_eq!(call(&app, Req::get().uri(aggregate)).await.0, 401);
        let (s, body) = call(&app, auth(Req::get().uri(aggregate), &w.api, w.analyst)).await;
        assert_eq!(s, 200, "{}", String::from_utf8_lossy(&body));
        assert_eq!(json_of(&body)["groups"], serde_json::json!([]));
        let (s, body) = call(&app, auth(Req::get().uri(aggregate), &w.api, w.admin)).await;
        assert_eq!(s, 200, "{}", String::from_utf8_lossy(&body));
        assert_eq!(
            json_of(&body)["groups"],
            serde_json::json!([{"stocked": false, "count": 2}, {"stocked": true, "count": 2}])
        );
        // The feed: administrators only (refused before the stream opens).
        assert_eq!(call(&app, auth(Req::get().uri("/api/parts/events/"), &w.api, w.alice)).await.0, 403);
        assert_eq!(call(&app, Req::get().uri("/api/parts/events/")).await.0, 401);
    }

    async fn the_description_tells_each_doors_access(t) {
        let w = world(&t).await;
        let spec: Value = serde_json::to_value(w.api.openapi()).unwrap();
        let import = &spec["paths"]["/api/parts/import/"]["post"];
        assert_eq!(who_may_call(&spec, "/api/parts/import/", "post"), "administrators only.");
        assert_eq!(import["x-admin-only"], true);
        // The create the import follows is not.
        assert_ne!(who_may_call(&spec, "/api/parts/", "post"), "administrators only.");
        let export = who_may_call(&spec, "/api/parts/export/", "get");
        assert!(export.contains("`owner_id` is the caller's id and `stocked` is true"), "{export}");
        let list = who_may_call(&spec, "/api/parts/", "get");
        assert!(!list.contains("stocked"), "{list}");
        // A role: its holders, on the rows the list's rule gives them.
        assert_eq!(
            who_may_call(&spec, "/api/parts/aggregate/", "get"),
            "administrators on every item; holders of the role `ANALYST` on the items where `owner_id` is the caller's id."
        );
        assert_eq!(who_may_call(&spec, "/api/parts/events/", "get"), "administrators only.");
        assert_eq!(spec["paths"]["/api/parts/events/"]["get"]["x-admin-only"], true);
    }

    async fn a_signed_in_door_of_a_public_list_and_an_import_narrowed_to_rows(t) {
        let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
        let db = t.open(&cfg).await;
        crudforge_tests::parts::create_table(&db).await;
        let alice = crudforge_tests::user(&db, "alice@example.com").await;
        let parts = Part::blueprint("/api/parts/")
            .public([crudforge::crud::Operation::Index])
            .export()
            .import()
            .door(Door::Export, DoorAccess::SignedIn)
            .door(Door::Import, DoorAccess::expr("qty < 10"));
        let api = Api::new(cfg, db).unwrap().mount(parts).unwrap();
        let app = test::init_service(api.app()).await;
        // The list is public; its export asks for a signed-in caller all the same.
        assert_eq!(call(&app, Req::get().uri("/api/parts/")).await.0, 200);
        assert_eq!(call(&app, Req::get().uri("/api/parts/export/")).await.0, 401);
        assert_eq!(call(&app, auth(Req::get().uri("/api/parts/export/"), &api, alice)).await.0, 200);
        // An import creates only rows the expression admits: one row outside refuses the file.
        let (s, body) = call(&app, import(&api, Some(alice), "name,qty,stocked\nnut,5,true\nbeam,50,true\n")).await;
        // (An import names each refused line: 422, the line of the row outside.)
        assert_eq!(s, 422, "{}", String::from_utf8_lossy(&body));
        assert_eq!(json_of(&body)["errors"][0]["pointer"], "/lines/3");
        let (_, body) = call(&app, Req::get().uri("/api/parts/")).await;
        assert_eq!(json_of(&body)["pagination"]["total"], 0);
        let (s, body) = call(&app, import(&api, Some(alice), "name,qty,stocked\nnut,5,true\nbolt,9,true\n")).await;
        assert_eq!(s, 201, "{}", String::from_utf8_lossy(&body));
        let (_, body) = call(&app, Req::get().uri("/api/parts/")).await;
        assert_eq!(json_of(&body)["pagination"]["total"], 2);
        // The description says both.
        let spec: Value = serde_json::to_value(api.openapi()).unwrap();
        assert_eq!(who_may_call(&spec, "/api/parts/", "get"), "anyone, without a token.");
        let export = who_may_call(&spec, "/api/parts/export/", "get");
        assert!(export.starts_with("any signed-in user"), "{export}");
        let import = who_may_call(&spec, "/api/parts/import/", "post");
        assert!(import.contains("what it creates must be an item where `qty` is"), "{import}");
    }

    async fn an_access_that_does_not_fit_the_resource_fails_the_mount(t) {
        let cfg = t.config();
        let db = t.open(&cfg).await;
        let err = Api::new(cfg, db)
            .unwrap()
            .mount(Part::blueprint("/api/parts/").export().door(Door::Export, DoorAccess::expr("colour = 'red'")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`export` rule of Part"), "{err}");
        assert!(err.contains("colour"), "{err}");
    }
}

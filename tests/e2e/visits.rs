//! Visits and their rules (expressions on the model), over HTTP on both backends: a visit is
//! read by its visitor, by the keeper of its critter's habitat and by administrators, through
//! every path (list, count, `GET`, `expand` from the critter, filters across the relation);
//! only its visitor changes or deletes it; the server sets the visitor, `critter_id` is
//! create-only, a visit for a deleted critter is the same 422 as for a made-up one, and a
//! keeper cannot move someone's critter into her habitat to read its visits.

use super::{backends, data, keys, App};
use serde_json::{json, Value};

fn notes(page: &Value) -> Vec<&str> {
    let mut n: Vec<&str> = data(page)
        .iter()
        .map(|v| v["note"].as_str().unwrap())
        .collect();
    n.sort_unstable();
    n
}

fn id(v: &Value) -> &str {
    v["id"].as_str().unwrap()
}

#[test]
fn visits_are_read_by_visitor_keeper_and_admins_and_written_by_their_visitor() {
    for b in backends() {
        b.user("admin@example.com", &["--admin"]);
        let bob_id = b.user("bob@example.com", &[]);
        b.user("carl@example.com", &[]);
        let kate_id = b.user("kate@example.com", &[]);
        b.user("dave@example.com", &[]);
        let app = App::start(b);
        let at = app.login("admin@example.com");
        let bt = app.login("bob@example.com");
        let ct = app.login("carl@example.com");
        let kt = app.login("kate@example.com");
        let dt = app.login("dave@example.com");

        // Administrators name a habitat's keeper; others cannot.
        let habitats = "/api/habitats/";
        let body = json!({"name": "Savanna", "climate": "dry", "keeper_id": kate_id});
        app.problem(&app.post(habitats, Some(&kt), body.clone()), 403, habitats);
        let savanna = app.json(&app.post(habitats, Some(&at), body), 201);
        assert_eq!(savanna["keeper_id"], kate_id.as_str());
        let tundra = app.json(
            &app.post(
                habitats,
                Some(&at),
                json!({"name": "Tundra", "climate": "cold"}),
            ),
            201,
        );
        assert_eq!(tundra["keeper_id"], Value::Null);
        let tundra_item = format!("{habitats}{}", id(&tundra));
        let r = app.patch(&tundra_item, Some(&kt), json!({"keeper_id": kate_id}));
        app.problem(&r, 403, &tundra_item);

        let critters = "/api/critters/";
        let critter = |name: &str, habitat: &Value| {
            app.json(
                &app.post(
                    critters,
                    Some(&bt),
                    json!({"name": name, "species": "cat", "habitat_id": habitat["id"]}),
                ),
                201,
            )
        };
        let leo = critter("Leo", &savanna);
        let yuki = critter("Yuki", &tundra);
        let gone = critter("Gone", &savanna);

        // Any signed-in user creates a visit; the server sets its visitor.
        let list = "/api/visits/";
        app.problem(
            &app.post(list, None, json!({"critter_id": id(&leo), "note": "x"})),
            401,
            list,
        );
        let visit = |token: &str, critter: &Value, note: &str| {
            app.json(
                &app.post(
                    list,
                    Some(token),
                    json!({"critter_id": id(critter), "note": note}),
                ),
                201,
            )
        };
        let bob_leo = visit(&bt, &leo, "bob fed Leo");
        assert_eq!(
            keys(&bob_leo),
            [
                "created_at",
                "critter_id",
                "id",
                "note",
                "updated_at",
                "visitor_id"
            ]
        );
        assert_eq!(bob_leo["visitor_id"], bob_id.as_str());
        let bob_yuki = visit(&bt, &yuki, "bob fed Yuki");
        let carl_leo = visit(&ct, &leo, "carl fed Leo");
        // The visitor is never sent, administrators included; a note is at most 500
        // characters.
        for token in [&bt, &at] {
            let r = app.post(
                list,
                Some(token),
                json!({"critter_id": id(&leo), "note": "x", "visitor_id": kate_id}),
            );
            assert_eq!(app.problem(&r, 422, list)["field"], "visitor_id");
        }
        let r = app.post(
            list,
            Some(&bt),
            json!({"critter_id": id(&leo), "note": "x".repeat(501)}),
        );
        assert_eq!(app.problem(&r, 422, list)["field"], "note");
        // A deleted critter is the same 422 as one that never existed, for its creator too.
        let gone_item = format!("{critters}{}", id(&gone));
        assert_eq!(app.delete(&gone_item, Some(&at)).status, 204);
        let made_up = "00000000-0000-4000-8000-000000000001";
        let mut refusals = Vec::new();
        for critter in [id(&gone), made_up] {
            let r = app.post(list, Some(&bt), json!({"critter_id": critter, "note": "x"}));
            let mut p = app.problem(&r, 422, list);
            p.as_object_mut().unwrap().remove("request_id");
            refusals.push(p);
        }
        assert_eq!(refusals[0], refusals[1]);
        assert_eq!(refusals[0]["field"], "critter_id");

        // Lists and counts: each caller sees what the read rule allows.
        app.problem(&app.get(list, None), 401, list);
        for (token, expect) in [
            (&bt, vec!["bob fed Leo", "bob fed Yuki"]),
            (&ct, vec!["carl fed Leo"]),
            (&kt, vec!["bob fed Leo", "carl fed Leo"]),
            (&dt, vec![]),
            (&at, vec!["bob fed Leo", "bob fed Yuki", "carl fed Leo"]),
        ] {
            let page = app.json(&app.get(list, Some(token)), 200);
            assert_eq!(notes(&page), expect);
            assert_eq!(page["pagination"]["total"], expect.len());
        }
        // GET: someone else's visit is a 404 unless the caller keeps its critter's habitat.
        let item = |v: &Value| format!("{list}{}", id(v));
        for (token, v, status) in [
            (&bt, &bob_yuki, 200),
            (&kt, &bob_leo, 200),
            (&kt, &bob_yuki, 404),
            (&ct, &bob_leo, 404),
            (&dt, &carl_leo, 404),
            (&at, &bob_yuki, 200),
        ] {
            let r = app.get(&item(v), Some(token));
            if status == 200 {
                assert_eq!(app.json(&r, 200)["note"], v["note"]);
            } else {
                app.problem(&r, status, &item(v));
            }
        }
        // A keeper may not pull someone's critter into her habitat to read its visits: only
        // administrators move a critter (403, one by one or in a batch), and nothing changes.
        let yuki_item = format!("{critters}{}", id(&yuki));
        let into_savanna = json!({"habitat_id": id(&savanna)});
        app.problem(
            &app.patch(&yuki_item, Some(&kt), into_savanna.clone()),
            403,
            &yuki_item,
        );
        let batch = format!("{critters}batch/");
        let r = app.patch(
            &batch,
            Some(&kt),
            json!({"items": [{"id": id(&yuki), "changes": into_savanna}]}),
        );
        app.problem(&r, 403, &batch);
        let stored = app.json(&app.get(&yuki_item, Some(&kt)), 200);
        assert_eq!(stored["habitat_id"], id(&tundra));
        app.problem(&app.get(&item(&bob_yuki), Some(&kt)), 404, &item(&bob_yuki));
        // Creating a critter in a habitat, and other changes to it, stay open to every
        // signed-in user.
        let r = app.patch(&yuki_item, Some(&kt), json!({"cuteness_level": 11}));
        assert_eq!(app.json(&r, 200)["cuteness_level"], 11);

        // Filters across the relation see no more.
        let by_habitat = format!("{list}?critter.habitat_id={}", id(&savanna));
        for (token, expect) in [
            (&kt, vec!["bob fed Leo", "carl fed Leo"]),
            (&dt, vec![]),
            (&ct, vec!["carl fed Leo"]),
        ] {
            let page = app.json(&app.get(&by_habitat, Some(token)), 200);
            assert_eq!(notes(&page), expect);
            assert_eq!(page["pagination"]["total"], expect.len());
        }
        let by_name = format!("{list}?filter=critter.name%20%3D%20'Leo'");
        assert_eq!(
            notes(&app.json(&app.get(&by_name, Some(&dt)), 200)),
            Vec::<&str>::new()
        );
        assert_eq!(
            notes(&app.json(&app.get(&by_name, Some(&bt)), 200)),
            ["bob fed Leo"]
        );
        // A visit embeds its critter; a critter embeds the visits the caller may read.
        let page = app.json(&app.get(&format!("{list}?expand=critter"), Some(&kt)), 200);
        assert!(data(&page).iter().all(|v| v["critter"]["name"] == "Leo"));
        let leo_visits = format!("{critters}{}?expand=visits", id(&leo));
        for (token, expect) in [
            (&bt, vec!["bob fed Leo"]),
            (&kt, vec!["bob fed Leo", "carl fed Leo"]),
            (&dt, vec![]),
            (&at, vec!["bob fed Leo", "carl fed Leo"]),
        ] {
            let c = app.json(&app.get(&leo_visits, Some(token)), 200);
            let mut inner: Vec<&str> = c["visits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["note"].as_str().unwrap())
                .collect();
            inner.sort_unstable();
            assert_eq!(inner, expect);
        }

        // Only the visitor changes or deletes a visit: its keeper reads it but is refused,
        // others do not see it.
        let bob_leo_item = item(&bob_leo);
        let change = json!({"note": "bob fed Leo twice"});
        app.problem(
            &app.patch(&bob_leo_item, Some(&kt), change.clone()),
            403,
            &bob_leo_item,
        );
        app.problem(
            &app.patch(&bob_leo_item, Some(&dt), change.clone()),
            404,
            &bob_leo_item,
        );
        app.problem(&app.delete(&bob_leo_item, Some(&kt)), 403, &bob_leo_item);
        app.problem(&app.delete(&bob_leo_item, Some(&ct)), 404, &bob_leo_item);
        let changed = app.json(&app.patch(&bob_leo_item, Some(&bt), change), 200);
        assert_eq!(changed["note"], "bob fed Leo twice");
        // The critter is chosen on create only, the visitor never: 422 naming them, for the
        // visitor and administrators alike, and nothing changes.
        for token in [&bt, &at] {
            let r = app.patch(&bob_leo_item, Some(token), json!({"critter_id": id(&yuki)}));
            assert_eq!(app.problem(&r, 422, &bob_leo_item)["field"], "critter_id");
            let r = app.patch(&bob_leo_item, Some(token), json!({"visitor_id": kate_id}));
            assert_eq!(app.problem(&r, 422, &bob_leo_item)["field"], "visitor_id");
        }
        let stored = app.json(&app.get(&bob_leo_item, Some(&bt)), 200);
        assert_eq!(stored["critter_id"], id(&leo));
        assert_eq!(stored["visitor_id"], bob_id.as_str());
        assert_eq!(app.delete(&bob_leo_item, Some(&bt)).status, 204);
        app.problem(&app.get(&bob_leo_item, Some(&bt)), 404, &bob_leo_item);

        // A keeper no longer: the habitat's visits are out of sight at once.
        let savanna_item = format!("{habitats}{}", id(&savanna));
        let r = app.patch(&savanna_item, Some(&at), json!({"keeper_id": null}));
        assert_eq!(app.json(&r, 200)["keeper_id"], Value::Null);
        let page = app.json(&app.get(list, Some(&kt)), 200);
        assert_eq!(page["pagination"]["total"], 0);
        app.problem(&app.get(&item(&carl_leo), Some(&kt)), 404, &item(&carl_leo));
    }
}

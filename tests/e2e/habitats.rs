//! Habitats and the critters' relation to them, over HTTP on both backends: signed-in users
//! read habitats, administrators write them and a keeper changes the climate of theirs; `expand=habitat` embeds a critter's habitat,
//! `expand=critters` a habitat's critters; `habitat.name=...` (and the `filter` expression)
//! filters critters, `sort=habitat.name` sorts them; a habitat that critters name, deleted
//! critters included, is not deleted (409).

use super::{backends, data, keys, App};
use serde_json::{json, Value};

fn names(page: &Value) -> Vec<&str> {
    data(page)
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect()
}

#[test]
fn habitats_and_expanded_critters() {
    for b in backends() {
        b.user("admin@example.com", &["--admin"]);
        b.user("bob@example.com", &[]);
        let app = App::start(b);
        let bt = app.login("bob@example.com");
        let at = app.login("admin@example.com");
        let list = "/api/habitats/";

        // Signed-in users read; administrators write.
        app.problem(&app.get(list, None), 401, list);
        let body = json!({"name": "Savanna", "climate": "dry"});
        app.problem(&app.post(list, Some(&bt), body.clone()), 403, list);
        let savanna = app.json(&app.post(list, Some(&at), body.clone()), 201);
        assert_eq!(
            keys(&savanna),
            [
                "climate",
                "created_at",
                "id",
                "keeper_id",
                "name",
                "updated_at"
            ]
        );
        app.problem(&app.post(list, Some(&at), body), 409, list);
        let tundra = app.json(
            &app.post(
                list,
                Some(&at),
                json!({"name": "Tundra", "climate": "cold"}),
            ),
            201,
        );
        let empty = app.json(
            &app.post(list, Some(&at), json!({"name": "Empty", "climate": "none"})),
            201,
        );
        assert_eq!(data(&app.json(&app.get(list, Some(&bt)), 200)).len(), 3);
        let sid = savanna["id"].as_str().unwrap();
        let tid = tundra["id"].as_str().unwrap();

        // Critters name their habitat.
        let critters = "/api/critters/";
        let mut made = Vec::new();
        for (name, habitat) in [
            ("Leo", Some(sid)),
            ("Yuki", Some(tid)),
            ("Stray", None),
            ("Zara", Some(sid)),
        ] {
            let c = app.json(
                &app.post(
                    critters,
                    Some(&bt),
                    json!({"name": name, "species": "cat", "habitat_id": habitat}),
                ),
                201,
            );
            made.push(c);
        }
        let leo = format!("{critters}{}", made[0]["id"].as_str().unwrap());
        // Without `expand`, the answer is what it always was (with `habitat_id`).
        let plain = app.json(&app.get(&leo, Some(&bt)), 200);
        assert!(plain.get("habitat").is_none());
        assert_eq!(plain["habitat_id"], sid);
        // `expand=habitat` embeds the habitat as its own GET shows it.
        let expanded = app.json(&app.get(&format!("{leo}?expand=habitat"), Some(&bt)), 200);
        let own = app.json(&app.get(&format!("{list}{sid}"), Some(&bt)), 200);
        assert_eq!(expanded["habitat"], own);
        let stray = format!("{critters}{}", made[2]["id"].as_str().unwrap());
        let expanded = app.json(&app.get(&format!("{stray}?expand=habitat"), Some(&bt)), 200);
        assert_eq!(expanded["habitat"], Value::Null);
        let trimmed = app.json(
            &app.get(
                &format!("{leo}?expand=habitat&fields=name,habitat.name"),
                Some(&bt),
            ),
            200,
        );
        assert_eq!(
            trimmed,
            json!({"name": "Leo", "habitat": {"name": "Savanna"}})
        );
        // Lists expand too, filter and sort across the relation.
        let page = app.json(
            &app.get(&format!("{critters}?expand=habitat"), Some(&bt)),
            200,
        );
        let habitats: Vec<Value> = data(&page)
            .iter()
            .map(|c| c["habitat"]["name"].clone())
            .collect();
        assert_eq!(
            habitats,
            [
                json!("Savanna"),
                json!("Tundra"),
                Value::Null,
                json!("Savanna")
            ]
        );
        let page = app.json(
            &app.get(&format!("{critters}?habitat.name=Savanna"), Some(&bt)),
            200,
        );
        assert_eq!(names(&page), ["Leo", "Zara"]);
        assert_eq!(page["pagination"]["total"], 2);
        let page = app.json(
            &app.get(
                &format!("{critters}?habitat.name__ilike=%25UND%25"),
                Some(&bt),
            ),
            200,
        );
        assert_eq!(names(&page), ["Yuki"]);
        let page = app.json(&app.get(&format!("{critters}?filter=habitat.climate%20%3D%20'cold'%20or%20habitat_id%20is%20null"), Some(&bt)), 200);
        assert_eq!(names(&page), ["Yuki", "Stray"]);
        let page = app.json(
            &app.get(&format!("{critters}?sort=-habitat.name,name"), Some(&bt)),
            200,
        );
        assert_eq!(names(&page), ["Stray", "Yuki", "Leo", "Zara"]);
        let r = app.get(&format!("{critters}?expand=owner"), Some(&bt));
        let p = app.problem(&r, 400, critters);
        assert!(p["detail"].as_str().unwrap().contains("`owner`"), "{p}");
        // A habitat embeds its live critters.
        let h = app.json(
            &app.get(&format!("{list}{sid}?expand=critters"), Some(&bt)),
            200,
        );
        let inner: Vec<&str> = h["critters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(inner, ["Leo", "Zara"]);
        let zara = format!("{critters}{}", made[3]["id"].as_str().unwrap());
        assert_eq!(app.delete(&zara, Some(&at)).status, 204);
        let h = app.json(
            &app.get(&format!("{list}{sid}?expand=critters"), Some(&bt)),
            200,
        );
        assert_eq!(
            h["critters"].as_array().unwrap().len(),
            1,
            "deleted critters are left out"
        );
        // Deleting a habitat that critters name is refused; a deleted critter still names its
        // habitat (a restore brings it back there).
        let tundra_item = format!("{list}{tid}");
        app.problem(&app.delete(&tundra_item, Some(&bt)), 403, &tundra_item);
        app.problem(&app.delete(&tundra_item, Some(&at)), 409, &tundra_item);
        let yuki = format!("{critters}{}", made[1]["id"].as_str().unwrap());
        assert_eq!(app.delete(&yuki, Some(&at)).status, 204);
        app.problem(&app.delete(&tundra_item, Some(&at)), 409, &tundra_item);
        let empty_item = format!("{list}{}", empty["id"].as_str().unwrap());
        assert_eq!(app.delete(&empty_item, Some(&at)).status, 204);
    }
}

/// The habitats' member rule: a keeper changes the climate of the habitat they keep, and not
/// its name or keeper (403 naming the member, nothing written); sending the stored name back is
/// no change; another user changes nothing; administrators change everything.
#[test]
fn a_keeper_changes_only_the_climate() {
    for b in backends() {
        b.user("admin@example.com", &["--admin"]);
        let kate_id = b.user("kate@example.com", &[]);
        b.user("bob@example.com", &[]);
        let app = App::start(b);
        let at = app.login("admin@example.com");
        let kt = app.login("kate@example.com");
        let bt = app.login("bob@example.com");
        let list = "/api/habitats/";
        let body = json!({"name": "Marsh", "climate": "wet", "keeper_id": kate_id});
        let marsh = app.json(&app.post(list, Some(&at), body), 201);
        let item = format!("{list}{}", marsh["id"].as_str().unwrap());

        let changed = app.json(
            &app.patch(&item, Some(&kt), json!({"climate": "humid"})),
            200,
        );
        assert_eq!(changed["climate"], "humid");
        let same_name = json!({"name": "Marsh", "climate": "misty"});
        let changed = app.json(&app.patch(&item, Some(&kt), same_name), 200);
        assert_eq!(changed["climate"], "misty");
        for (member, value) in [("name", json!("Bog")), ("keeper_id", Value::Null)] {
            let mut change = json!({"climate": "dry"});
            change[member] = value;
            let r = app.patch(&item, Some(&kt), change);
            let problem = app.problem(&r, 403, &item);
            let detail = problem["detail"].as_str().unwrap();
            assert!(detail.contains(&format!("`{member}`")), "{detail}");
        }
        app.problem(
            &app.patch(&item, Some(&bt), json!({"climate": "dry"})),
            403,
            &item,
        );
        let now = app.json(&app.get(&item, Some(&bt)), 200);
        assert_eq!(
            (&now["name"], &now["climate"]),
            (&json!("Marsh"), &json!("misty"))
        );
        let renamed = app.json(&app.patch(&item, Some(&at), json!({"name": "Bog"})), 200);
        assert_eq!(renamed["name"], "Bog");
    }
}

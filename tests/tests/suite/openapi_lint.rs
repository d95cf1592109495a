//! The description of a library user's own resource (every field kind, a presenter, hooks, a
//! nested blueprint with owner rules, a query flag and custom routes) passes Redocly CLI's
//! recommended lint with no error and no warning left untreated (skipped with a message where
//! the tool is missing, mandatory with `CRUDFORGE_REQUIRE_TOOLS=1`), and has what generated
//! clients need: no request-body `default`, no Rust names or links, partial list items, and
//! who may call each operation.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::{test, web, HttpResponse};
use crudforge::crud::{CustomRoute, Operation, OperationType, Present};
use crudforge::perms::OwnerRules;
use crudforge::{Api, Database, Error, Resource};
use crudforge_tests::critters::{create_table, Critter};
use serde_json::Value;

/// A presenter: each critter as a card.
struct Cards;

/// A critter shown as a card.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct CritterCard {
    /// Identifier.
    id: uuid::Uuid,
    /// Its name.
    name: String,
    /// Its name and species, for a list.
    label: String,
}

impl Present<Critter> for Cards {
    type Output = CritterCard;

    async fn present(_db: &Database, items: Vec<Critter>) -> Result<Vec<CritterCard>, Error> {
        Ok(items
            .into_iter()
            .map(|c| CritterCard {
                label: format!("{} ({})", c.name, c.species),
                id: c.id,
                name: c.name,
            })
            .collect())
    }
}

/// Body of the custom `rename/` route.
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct Rename {
    /// The new name of every critter called `from`.
    to: String,
    /// The name to replace.
    from: String,
}

/// Answer of the custom `stats/` route.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Stats {
    /// How many critters there are.
    count: i64,
}

async fn api(t: &crudforge_tests::TestDb) -> Api {
    let db = t.open(&t.config()).await;
    create_table(&db).await;
    Api::new(t.config(), db)
        .unwrap()
        .mount(
            Critter::blueprint("/api/critters/")
                .aggregates()
                .with(Operation::Index, |o| o.present::<Cards>())
                .admin_only([Operation::Delete])
                .before_create(|_ctx, input| async move { Ok(input) })
                .after_commit(|_ctx, _row| async move { Ok(()) })
                .query_flag(
                    Operation::Delete,
                    "force",
                    "`true`: delete even when tagged.",
                )
                .route(
                    CustomRoute::new(OperationType::Get, "stats/", || {
                        web::get().to(|| async { HttpResponse::Ok().json(Stats { count: 0 }) })
                    })
                    .operation_id("critterStats")
                    .summary("How many critters there are")
                    .responds::<Stats>()
                    .public(),
                )
                .route(
                    CustomRoute::new(OperationType::Post, "rename/", || {
                        web::post().to(|| async { HttpResponse::NoContent().finish() })
                    })
                    .operation_id("renameCritters")
                    .summary("Rename critters")
                    .body::<Rename>()
                    .status(204)
                    .errors(&[401, 403, 422]),
                ),
        )
        .unwrap()
        .mount(
            Critter::blueprint("/api/keepers/<uuid:keeper_id>/critters/")
                .rules(OwnerRules::new("keeper_id"))
                .aggregates(),
        )
        .unwrap()
}

fn walk<'a>(v: &'a Value, path: String, out: &mut Vec<(String, &'a Value)>) {
    out.push((path.clone(), v));
    match v {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, x)| walk(x, format!("{path}/{k}"), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| walk(x, format!("{path}/{i}"), out)),
        _ => {}
    }
}

// The description does not depend on the backend: SQLite alone.
#[actix_web::test]
async fn a_library_users_description_lints_clean() {
    {
        let t = crudforge_tests::TestDb::sqlite().await;
        let api = api(&t).await;
        let app = test::init_service(api.app()).await;
        let resp = test::call_service(
            &app,
            test::TestRequest::get().uri("/openapi.json").to_request(),
        )
        .await;
        assert_eq!(resp.status(), 200);
        let body = test::read_body(resp).await;
        let spec: Value = serde_json::from_slice(&body).unwrap();

        let mut all = Vec::new();
        walk(&spec, String::new(), &mut all);
        for (path, v) in &all {
            if let Value::String(s) = v {
                if path.ends_with("/description") || path.ends_with("/summary") {
                    assert!(
                        !s.contains("](crate::") && !s.contains("[`"),
                        "a Rust link at {path}: {s}"
                    );
                    assert!(!s.contains("<prefix>"), "a placeholder at {path}: {s}");
                    assert!(!s.contains("   "), "a run of spaces at {path}: {s}");
                }
            }
            if let Value::Object(m) = v {
                if m.contains_key("nullable") {
                    assert!(
                        m.contains_key("type") || m.contains_key("allOf") || m.contains_key("$ref"),
                        "nullable without a type at {path}"
                    );
                }
            }
        }
        // No `default` in request bodies or component schemas (parameters may keep theirs).
        for (path, v) in &all {
            if (path.starts_with("/components/schemas") || path.contains("/requestBody"))
                && path.ends_with("/default")
            {
                panic!("a default at {path}: {v}");
            }
        }
        let ops = &spec["paths"];
        // Items of INDEX and GET may lack any member (`fields`); POST answers the full item.
        let list = &ops["/api/critters/"]["get"];
        assert_eq!(
            list["responses"]["200"]["content"]["application/json"]["schema"]["properties"]["data"]
                ["items"]["$ref"],
            "#/components/schemas/PartialCritterCard"
        );
        assert!(spec["components"]["schemas"]["PartialCritterCard"]
            .get("required")
            .is_none());
        assert!(spec["components"]["schemas"]["Critter"]["required"]
            .as_array()
            .is_some_and(|r| !r.is_empty()));
        // `fields` of the presented list: the resource's fields the card has.
        let fields = list["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "fields")
            .unwrap();
        assert_eq!(
            fields["schema"]["items"]["enum"],
            serde_json::json!(["id", "name"])
        );
        // Who may call, from the rules and options.
        let who = |path: &str, method: &str| {
            ops[path][method]["description"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        };
        assert!(
            who("/api/critters/", "get").contains("Who may call: anyone, signed in or not."),
            "{}",
            who("/api/critters/", "get")
        );
        assert!(who("/api/critters/{id}", "delete").contains("Who may call: administrators only."));
        assert!(
            who("/api/keepers/{keeper_id}/critters/", "get")
                .contains("`keeper_id` is the caller's id"),
            "{}",
            who("/api/keepers/{keeper_id}/critters/", "get")
        );
        assert!(who("/api/critters/stats/", "get").contains("anyone, without a token"));
        // Every operation says who may call it.
        for (path, item) in ops.as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let d = op["description"].as_str().unwrap_or("");
                assert!(d.contains("Who may call: "), "{method} {path}: {d}");
            }
        }
        // The hook's flag is a documented query parameter of DELETE.
        assert!(ops["/api/critters/{id}"]["delete"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "force" && p["in"] == "query"));
        // Every operation has a default problem answer; 201s name their Location.
        assert_eq!(
            ops["/api/critters/"]["post"]["responses"]["default"]["content"]
                ["application/problem+json"]["schema"]["$ref"],
            "#/components/schemas/Problem"
        );
        assert_eq!(
            ops["/api/critters/"]["post"]["responses"]["201"]["headers"]["Location"]["required"],
            true
        );

        match crudforge_tests::tools::redocly_lint(&body) {
            Ok(Some(warnings)) => assert!(
                warnings.is_empty(),
                "warnings not turned down in tests/tools/redocly.yaml:\n{}",
                warnings.join("\n")
            ),
            Ok(None) => {}
            Err(e) => panic!("redocly lint:\n{e}"),
        }
    }
}

//! The OpenAPI description passes `openapi-spec-validator` (skipped with a message where Python
//! or the validator is missing, mandatory with `CRUDFORGE_REQUIRE_TOOLS=1`), declares no
//! `default: null` on a member that cannot be null, and documents 403 on role grants.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::users::{guard_roles, UserBlueprint, UserRole, DEFAULT_ROLES};
use crudforge::{Api, Operation, Resource};
use crudforge_tests::backend_tests;
use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

fn no_null_default_on_non_nullable(path: &str, v: &Value, bad: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if m.get("default") == Some(&Value::Null)
                && m.get("nullable") != Some(&Value::Bool(true))
            {
                bad.push(path.to_owned());
            }
            for (k, x) in m {
                no_null_default_on_non_nullable(&format!("{path}/{k}"), x, bad);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                no_null_default_on_non_nullable(&format!("{path}/{i}"), x, bad);
            }
        }
        _ => {}
    }
}

backend_tests! {
    async fn the_description_is_valid(t) {
        let cfg = t.config();
        let db = t.open(&cfg).await;
        let api = Api::new(cfg, db).unwrap()
            .mount(UserBlueprint::default()).unwrap()
            .mount(guard_roles(UserRole::blueprint("/api/users/<uuid:user_id>/role/")
                .methods([Operation::Index, Operation::Post, Operation::Delete]), DEFAULT_ROLES)).unwrap();
        let app = test::init_service(api.app()).await;
        let resp = test::call_service(&app, test::TestRequest::get().uri("/openapi.json").to_request()).await;
        assert_eq!(resp.status(), 200);
        let body = test::read_body(resp).await;
        let spec: Value = serde_json::from_slice(&body).unwrap();
        let mut bad = Vec::new();
        no_null_default_on_non_nullable("", &spec, &mut bad);
        assert!(bad.is_empty(), "default: null on non-nullable schemas: {bad:?}");
        assert!(spec["paths"]["/api/users/{user_id}/role/"]["post"]["responses"]["403"].is_object());
        assert_eq!(spec["paths"]["/api/users/"]["get"]["summary"], "List users");

        let require = std::env::var("CRUDFORGE_REQUIRE_TOOLS").is_ok_and(|v| v == "1");
        let child = Command::new("python3")
            .args(["-c", "import sys, json\nfrom openapi_spec_validator import validate\nvalidate(json.load(sys.stdin))\nprint('valid')"])
            .stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped())
            .spawn();
        let Ok(mut child) = child else {
            assert!(!require, "python3 is required (CRUDFORGE_REQUIRE_TOOLS=1)");
            eprintln!("skipped: python3 is not installed");
            return;
        };
        child.stdin.take().unwrap().write_all(&body).unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains("ModuleNotFoundError") {
            assert!(!require, "openapi-spec-validator is required (CRUDFORGE_REQUIRE_TOOLS=1): pip install openapi-spec-validator");
            eprintln!("skipped: openapi-spec-validator is not installed (pip install openapi-spec-validator)");
            return;
        }
        assert!(out.status.success(), "openapi-spec-validator rejects the description: {stderr}");
    }
}

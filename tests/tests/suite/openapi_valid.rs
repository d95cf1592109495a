//! The OpenAPI description passes `openapi-spec-validator` (skipped with a message where Python
//! or the validator is missing, mandatory with `CRUDFORGE_REQUIRE_TOOLS=1`), declares no
//! `default: null` on a member that cannot be null, and documents 403 on role grants.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::crud::Operation;
use crudforge::users::{guard_roles, UserBlueprint, UserRole, DEFAULT_ROLES};
use crudforge::{Api, Resource};
use crudforge_tests::backend_tests;
use serde_json::Value;

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
        // With sign-in providers (feature `providers`), whose routes are described too.
        let cfg = t.config().with(|c| {
            let mut corp = crudforge::config::ProviderSettings::new("corp_sso", "id", "secret");
            corp.issuer = Some("https://sso.example.com".to_owned());
            c.providers.push(corp);
            c.auth.auth_return_origins = vec!["https://app.example.com".to_owned()];
            // And passkeys (feature `passkeys`), whose routes are served and described only
            // when origins are set.
            c.auth.auth_passkey_origins = vec!["https://app.example.com".to_owned()];
        });
        let db = t.open(&cfg).await;
        let api = Api::new(cfg, db).unwrap()
            .mount(UserBlueprint::default()).unwrap()
            .mount(guard_roles(UserRole::blueprint("/api/users/<uuid:user_id>/role/")
                .methods([Operation::Index, Operation::Post, Operation::Delete])
                // The export and the import (feature `export`), under a parent parameter.
                .export().import(), DEFAULT_ROLES)).unwrap();
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
        let callback = &spec["paths"]["/api/users/providers/corp_sso/callback/"]["post"];
        assert_eq!(callback["operationId"], "finishUserSignInWithCorpSso");
        assert!(callback["responses"]["401"].is_object(), "{callback}");
        assert!(spec["paths"]["/api/users/me/identities/unlink/"]["post"]["responses"]["409"].is_object());
        let verify = &spec["paths"]["/api/users/factors/passkey/verify/"]["post"];
        assert_eq!(verify["operationId"], "verifyUserPasskey", "{verify}");
        assert!(spec["paths"]["/api/users/me/factors/passkey/{factor_id}/"]["post"]["responses"]["409"].is_object());

        if let Err(e) = crudforge_tests::tools::openapi_spec_validator(&body) {
            panic!("openapi-spec-validator rejects the description: {e}");
        }
    }
}

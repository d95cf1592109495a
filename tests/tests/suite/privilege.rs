//! Privilege on both backends: a domain-scoped ADMIN is no global admin, only a SUPERADMIN
//! grants SUPERADMIN or unscoped ADMIN, nobody changes a user who outranks them, role names
//! come from the application's set, a (role, domain) is held once, and domains are written by
//! admins only (a referenced domain is deleted only with `?cascade=true`, and its roles only
//! when the caller could delete each of them), and a PATCH of a role row is judged as the
//! removal of the old grant plus the grant of the new one.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::test;
use crudforge::crud::Operation;
use crudforge::users::{
    self, guard_domain_delete, guard_roles, Domain, UserBlueprint, UserRole, DEFAULT_ROLES,
};
use crudforge::{Api, Database, Resource};
use crudforge_tests::{backend_tests, TestDb};
use serde_json::{json, Value};
use uuid::Uuid;

const COST: u32 = 4;

struct World {
    api: Api,
    db: Database,
    sup: Uuid,
    admin: Uuid,
    dadmin: Uuid,
    alice: Uuid,
    bob: Uuid,
    d: Uuid,
    e: Uuid,
}

async fn user(db: &Database, email: &str) -> Uuid {
    users::create_user(db, email, "some-pass", true, COST)
        .await
        .unwrap()
}

async fn domain(db: &Database, name: &str) -> Uuid {
    let mut conn = db.get().await.unwrap();
    let input: <Domain as Resource>::Create =
        serde_json::from_value(json!({ "name": name })).unwrap();
    Domain::insert(&mut conn, input).await.unwrap().id
}

async fn world(t: &TestDb) -> World {
    let cfg = t.config().with(|c| c.auth.bcrypt_cost = COST);
    let db = t.open(&cfg).await;
    let d = domain(&db, "d").await;
    let e = domain(&db, "e").await;
    let sup = user(&db, "sup@example.com").await;
    users::grant_role(&db, sup, "SUPERADMIN", None)
        .await
        .unwrap();
    let admin = user(&db, "admin@example.com").await;
    users::grant_role(&db, admin, "ADMIN", None).await.unwrap();
    let dadmin = user(&db, "dadmin@example.com").await;
    users::grant_role(&db, dadmin, "ADMIN", Some(d))
        .await
        .unwrap();
    let alice = user(&db, "alice@example.com").await;
    let bob = user(&db, "bob@example.com").await;
    let api = Api::new(cfg, db.clone())
        .unwrap()
        .mount(
            UserBlueprint::default().crud(|bp| bp.admin_only([Operation::Index, Operation::Post])),
        )
        .unwrap()
        .mount(guard_roles(
            UserRole::blueprint("/api/user/<uuid:user_id>/role/").methods([
                Operation::Index,
                Operation::Post,
                Operation::Delete,
            ]),
            DEFAULT_ROLES,
        ))
        .unwrap()
        .mount(guard_domain_delete(Domain::blueprint("/api/domains/")))
        .unwrap()
        // Role rows as an application may also mount them: unnested, with the default
        // methods (PATCH included).
        .mount(guard_roles(
            UserRole::blueprint("/api/roles/"),
            DEFAULT_ROLES,
        ))
        .unwrap();
    World {
        api,
        db,
        sup,
        admin,
        dadmin,
        alice,
        bob,
        d,
        e,
    }
}

async fn send<S, B>(app: &S, req: test::TestRequest) -> (StatusCode, Value)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let resp = test::call_service(app, req.to_request()).await;
    let status = resp.status();
    let bytes = test::read_body(resp).await;
    if bytes.is_empty() {
        return (status, Value::Null);
    }
    (status, serde_json::from_slice(&bytes).unwrap())
}

fn as_user(req: test::TestRequest, api: &Api, id: Uuid) -> test::TestRequest {
    req.insert_header((
        "authorization",
        format!("Bearer {}", api.state().tokens.access(id).unwrap()),
    ))
}

fn grant(api: &Api, by: Uuid, to: Uuid, role: &str, domain: Option<Uuid>) -> test::TestRequest {
    as_user(
        test::TestRequest::post()
            .uri(&format!("/api/user/{to}/role/"))
            .set_json(json!({ "role": role, "domain_id": domain })),
        api,
        by,
    )
}

/// The role row of `user` holding `role` in `domain`, as stored.
async fn role_row(db: &Database, user: Uuid, role: &str, domain: Option<Uuid>) -> Option<UserRole> {
    use crudforge::condition::{Arg, Cond};
    let mut conn = db.get().await.unwrap();
    let rows = UserRole::select(
        &mut conn,
        &[Cond::eq("user_id", Arg::Uuid(user))],
        &[],
        None,
    )
    .await
    .unwrap();
    rows.into_iter()
        .find(|r| r.role == role && r.domain_id == domain)
}

fn patch_role(api: &Api, by: Uuid, id: Uuid, body: Value) -> test::TestRequest {
    as_user(
        test::TestRequest::patch()
            .uri(&format!("/api/roles/{id}"))
            .set_json(body),
        api,
        by,
    )
}

backend_tests! {
    async fn a_role_blueprint_is_guarded_unless_the_application_says_otherwise(t) {
        let w = world(&t).await;
        // The same world, plus role rows mounted without `guard_roles`, and once more with the
        // checks left out in code.
        let api = Api::new((*w.api.state().config).clone(), w.db.clone())
            .unwrap()
            .mount(UserRole::blueprint("/api/plain-roles/"))
            .unwrap()
            .mount(users::unguarded_roles(UserRole::blueprint("/api/unguarded-roles/")))
            .unwrap();
        let app = test::init_service(api.app()).await;
        let own = role_row(&w.db, w.dadmin, "ADMIN", Some(w.d)).await.unwrap();
        let patch = |prefix: &str, body: Value| {
            as_user(test::TestRequest::patch().uri(&format!("{prefix}{}", own.id)).set_json(body), &api, w.dadmin)
        };
        // A domain ADMIN rewriting its own row into SUPERADMIN: judged by default.
        for body in [json!({"role": "SUPERADMIN", "domain_id": null}), json!({"domain_id": null})] {
            let (s, b) = send(&app, patch("/api/plain-roles/", body.clone())).await;
            assert_eq!(s, 403, "{body}: {b}");
        }
        let after = role_row(&w.db, w.dadmin, "ADMIN", Some(w.d)).await.unwrap();
        assert_eq!(after.updated_at, own.updated_at, "the row is unchanged");
        // A grant of a user who outranks the caller, and its removal, are judged too.
        users::grant_role(&w.db, w.sup, "MODERATOR", Some(w.d)).await.unwrap();
        let sup_mod = role_row(&w.db, w.sup, "MODERATOR", Some(w.d)).await.unwrap();
        let (s, b) = send(&app, as_user(test::TestRequest::delete().uri(&format!("/api/plain-roles/{}", sup_mod.id)), &api, w.dadmin)).await;
        assert_eq!(s, 403, "{b}");
        assert!(role_row(&w.db, w.sup, "MODERATOR", Some(w.d)).await.is_some());
        // Legitimate changes pass; without the application's set, any role name is accepted.
        let (s, b) = send(&app, as_user(test::TestRequest::post().uri("/api/plain-roles/").set_json(json!({"user_id": w.alice, "role": "EDITOR", "domain_id": w.d})), &api, w.dadmin)).await;
        assert_eq!(s, 201, "{b}");
        // Left out in code: the rules alone judge. They keep the row in the caller's domains
        // (the row as written is judged by the update rule too), but not its role: the
        // escalation the guard stops.
        let (s, b) = send(&app, patch("/api/unguarded-roles/", json!({"role": "SUPERADMIN", "domain_id": null}))).await;
        assert_eq!(s, 403, "{b}");
        let (s, b) = send(&app, patch("/api/unguarded-roles/", json!({"role": "SUPERADMIN"}))).await;
        assert_eq!(s, 200, "{b}");
        let me = crudforge::auth::load_user(&w.db, w.dadmin).await.unwrap().unwrap();
        assert!(me.is_superadmin(), "{me:?}");
    }

    async fn a_domain_admin_is_no_global_admin(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        // Admin-only operations of the contract.
        let (s, _) = send(&app, as_user(test::TestRequest::get().uri("/api/users/"), &w.api, w.dadmin)).await;
        assert_eq!(s, 403, "INDEX of users is for global admins");
        let (s, _) = send(&app, as_user(test::TestRequest::post().uri("/api/users/")
            .set_json(json!({"email": "x@example.com", "password": "x-pass-123"})), &w.api, w.dadmin)).await;
        assert_eq!(s, 403, "POST of users is for global admins");
        // No row check skipped: another user is out of reach.
        let (s, _) = send(&app, as_user(test::TestRequest::patch().uri(&format!("/api/users/{}", w.bob))
            .set_json(json!({"is_enabled": false})), &w.api, w.dadmin)).await;
        assert_eq!(s, 403);
        let (s, _) = send(&app, as_user(test::TestRequest::delete().uri(&format!("/api/users/{}", w.bob)), &w.api, w.dadmin)).await;
        assert_eq!(s, 404, "bob is not even readable for a domain admin");
        // The escalation paths of a domain admin.
        for (role, domain) in [("SUPERADMIN", None), ("ADMIN", None), ("SUPERADMIN", Some(w.d)),
                               ("MODERATOR", None), ("MODERATOR", Some(w.e)), ("ADMIN", Some(w.e))] {
            let (s, b) = send(&app, grant(&w.api, w.dadmin, w.dadmin, role, domain)).await;
            assert_eq!(s, 403, "{role} {domain:?}: {b}");
        }
        // What it may do: the roles of its own domain.
        let (s, b) = send(&app, grant(&w.api, w.dadmin, w.bob, "MODERATOR", Some(w.d))).await;
        assert_eq!(s, 201, "{b}");
        let role_id = b["id"].as_str().unwrap().to_owned();
        let (s, b) = send(&app, as_user(test::TestRequest::get().uri(&format!("/api/user/{}/role/", w.bob)), &w.api, w.dadmin)).await;
        assert_eq!(s, 200);
        assert_eq!(b["data"].as_array().unwrap().len(), 1, "the domain's roles are readable to its admin: {b}");
        let (s, _) = send(&app, as_user(test::TestRequest::delete().uri(&format!("/api/user/{}/role/{role_id}", w.bob)), &w.api, w.dadmin)).await;
        assert_eq!(s, 204);
        // A role outside its domain cannot be removed by it.
        let (_, b) = send(&app, grant(&w.api, w.admin, w.bob, "MODERATOR", Some(w.e))).await;
        let other = b["id"].as_str().unwrap().to_owned();
        let (s, _) = send(&app, as_user(test::TestRequest::delete().uri(&format!("/api/user/{}/role/{other}", w.bob)), &w.api, w.dadmin)).await;
        assert!(s == 403 || s == 404, "{s}");
    }

    async fn only_a_superadmin_grants_the_top_roles(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        for (role, domain) in [("SUPERADMIN", None), ("ADMIN", None), ("SUPERADMIN", Some(w.d))] {
            let (s, b) = send(&app, grant(&w.api, w.admin, w.alice, role, domain)).await;
            assert_eq!(s, 403, "an ADMIN grants no {role}: {b}");
            let (s, _) = send(&app, grant(&w.api, w.admin, w.admin, role, domain)).await;
            assert_eq!(s, 403, "nor to itself");
        }
        let (s, b) = send(&app, grant(&w.api, w.admin, w.alice, "ADMIN", Some(w.d))).await;
        assert_eq!(s, 201, "a global admin grants a domain ADMIN: {b}");
        let (s, _) = send(&app, grant(&w.api, w.alice, w.alice, "ADMIN", None)).await;
        assert_eq!(s, 403, "a plain user grants nothing");
        let (s, b) = send(&app, grant(&w.api, w.sup, w.alice, "ADMIN", None)).await;
        assert_eq!(s, 201, "{b}");
        let (s, b) = send(&app, grant(&w.api, w.sup, w.bob, "SUPERADMIN", None)).await;
        assert_eq!(s, 201, "{b}");
        // Removing a top role is a superadmin's matter too.
        let roles = crudforge::auth::load_user(&w.db, w.alice).await.unwrap().unwrap();
        assert!(roles.is_admin());
        let (_, list) = send(&app, as_user(test::TestRequest::get().uri(&format!("/api/user/{}/role/", w.alice)), &w.api, w.sup)).await;
        let unscoped = list["data"].as_array().unwrap().iter()
            .find(|r| r["role"] == "ADMIN" && r["domain_id"].is_null()).unwrap()["id"].as_str().unwrap().to_owned();
        let (s, _) = send(&app, as_user(test::TestRequest::delete().uri(&format!("/api/user/{}/role/{unscoped}", w.alice)), &w.api, w.admin)).await;
        assert_eq!(s, 403, "an ADMIN removes no unscoped ADMIN");
        let (s, _) = send(&app, as_user(test::TestRequest::delete().uri(&format!("/api/user/{}/role/{unscoped}", w.alice)), &w.api, w.sup)).await;
        assert_eq!(s, 204);
    }

    async fn nobody_changes_a_user_who_outranks_them(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let sup = format!("/api/users/{}", w.sup);
        for body in [json!({"password": "taken-over-1"}), json!({"is_enabled": false}), json!({"email": "mine@example.com"})] {
            let (s, b) = send(&app, as_user(test::TestRequest::patch().uri(&sup).set_json(body.clone()), &w.api, w.admin)).await;
            assert_eq!(s, 403, "{body}: {b}");
        }
        let (s, _) = send(&app, as_user(test::TestRequest::delete().uri(&sup), &w.api, w.admin)).await;
        assert_eq!(s, 403);
        assert!(crudforge::auth::load_user(&w.db, w.sup).await.unwrap().unwrap().is_enabled, "nothing was changed");
        let (s, _) = send(&app, grant(&w.api, w.admin, w.sup, "MODERATOR", None)).await;
        assert_eq!(s, 403, "nor its roles");
        let (s, _) = send(&app, grant(&w.api, w.dadmin, w.admin, "MODERATOR", Some(w.d))).await;
        assert_eq!(s, 403, "a domain admin changes no global admin's roles");
        // Downwards and sideways it works.
        let (s, b) = send(&app, as_user(test::TestRequest::patch().uri(&format!("/api/users/{}", w.admin))
            .set_json(json!({"is_enabled": false})), &w.api, w.sup)).await;
        assert_eq!(s, 200, "{b}");
        let (s, b) = send(&app, as_user(test::TestRequest::patch().uri(&format!("/api/users/{}", w.bob))
            .set_json(json!({"password": "new-pass-123"})), &w.api, w.sup)).await;
        assert_eq!(s, 200, "{b}");
    }

    async fn role_names_and_duplicates(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let (s, b) = send(&app, grant(&w.api, w.admin, w.bob, "EMPEROR", None)).await;
        assert_eq!(s, 422, "{b}");
        assert!(b.to_string().contains("role"), "{b}");
        let (s, _) = send(&app, grant(&w.api, w.admin, w.bob, "MODERATOR", None)).await;
        assert_eq!(s, 201);
        let (s, b) = send(&app, grant(&w.api, w.admin, w.bob, "MODERATOR", None)).await;
        assert_eq!(s, 409, "the same unscoped grant twice: {b}");
        let (s, _) = send(&app, grant(&w.api, w.admin, w.bob, "MODERATOR", Some(w.d))).await;
        assert_eq!(s, 201, "another domain is another grant");
        let (s, _) = send(&app, grant(&w.api, w.admin, w.bob, "MODERATOR", Some(w.d))).await;
        assert_eq!(s, 409);
        assert!(users::grant_role(&w.db, w.bob, "MODERATOR", Some(w.d)).await.is_err());
    }

    async fn domains_are_written_by_admins_only(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let (s, _) = send(&app, test::TestRequest::get().uri("/api/domains/")).await;
        assert_eq!(s, 200, "reads stay public");
        let (s, _) = send(&app, test::TestRequest::get().uri(&format!("/api/domains/{}", w.d))).await;
        assert_eq!(s, 200);
        for who in [w.alice, w.dadmin] {
            let (s, _) = send(&app, as_user(test::TestRequest::post().uri("/api/domains/").set_json(json!({"name": "x"})), &w.api, who)).await;
            assert_eq!(s, 403);
            let (s, _) = send(&app, as_user(test::TestRequest::patch().uri(&format!("/api/domains/{}", w.d)).set_json(json!({"name": "mine"})), &w.api, who)).await;
            assert_eq!(s, 403);
            let (s, _) = send(&app, as_user(test::TestRequest::delete().uri(&format!("/api/domains/{}", w.d)), &w.api, who)).await;
            assert_eq!(s, 403);
        }
        let (s, _) = send(&app, test::TestRequest::post().uri("/api/domains/").set_json(json!({"name": "x"}))).await;
        assert_eq!(s, 401);
        let (s, b) = send(&app, as_user(test::TestRequest::post().uri("/api/domains/").set_json(json!({"name": "new"})), &w.api, w.admin)).await;
        assert_eq!(s, 201, "{b}");
        let (s, _) = send(&app, as_user(test::TestRequest::delete().uri(&format!("/api/domains/{}", b["id"].as_str().unwrap())), &w.api, w.admin)).await;
        assert_eq!(s, 204, "an unreferenced domain goes at once");
        // d is referenced by the domain admin's role.
        let (s, b) = send(&app, as_user(test::TestRequest::delete().uri(&format!("/api/domains/{}", w.d)), &w.api, w.admin)).await;
        assert_eq!(s, 409, "{b}");
        assert!(b["detail"].as_str().unwrap().contains("cascade"), "{b}");
        assert!(crudforge::auth::load_user(&w.db, w.dadmin).await.unwrap().unwrap().administers_domain(w.d), "the role is kept");
        let (s, _) = send(&app, as_user(test::TestRequest::delete().uri(&format!("/api/domains/{}?cascade=true", w.d)), &w.api, w.admin)).await;
        assert_eq!(s, 204);
        assert!(crudforge::auth::load_user(&w.db, w.dadmin).await.unwrap().unwrap().roles.is_empty(), "the cascade removed the role");
    }

    async fn a_role_row_is_not_rewritten_into_a_higher_one(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        let own = role_row(&w.db, w.dadmin, "ADMIN", Some(w.d)).await.unwrap();
        // The escalation of the issue, and its smaller variants, on its own row.
        for body in [json!({"role": "SUPERADMIN", "domain_id": null}), json!({"domain_id": null}),
                     json!({"role": "SUPERADMIN"}), json!({"domain_id": w.e}),
                     json!({"user_id": w.admin})] {
            let (s, b) = send(&app, patch_role(&w.api, w.dadmin, own.id, body.clone())).await;
            assert_eq!(s, 403, "{body}: {b}");
            assert_eq!(b["type"], "/errors/forbidden_error", "{b}");
        }
        let after = role_row(&w.db, w.dadmin, "ADMIN", Some(w.d)).await.unwrap();
        assert_eq!(after.updated_at, own.updated_at, "the row is unchanged");
        let me = crudforge::auth::load_user(&w.db, w.dadmin).await.unwrap().unwrap();
        assert!(!me.is_superadmin() && !me.is_admin() && me.administers_domain(w.d), "{me:?}");

        // A global admin: neither a grant above it, nor a grant of a user above it, nor taking
        // away a superadmin's grant by moving it.
        users::grant_role(&w.db, w.alice, "MODERATOR", Some(w.d)).await.unwrap();
        users::grant_role(&w.db, w.sup, "MODERATOR", Some(w.d)).await.unwrap();
        let alice_mod = role_row(&w.db, w.alice, "MODERATOR", Some(w.d)).await.unwrap();
        let sup_mod = role_row(&w.db, w.sup, "MODERATOR", Some(w.d)).await.unwrap();
        for (id, body) in [(alice_mod.id, json!({"role": "ADMIN", "domain_id": null})),
                           (alice_mod.id, json!({"role": "SUPERADMIN"})),
                           (alice_mod.id, json!({"user_id": w.sup})),
                           (sup_mod.id, json!({"domain_id": w.e})),
                           (sup_mod.id, json!({"user_id": w.bob}))] {
            let (s, b) = send(&app, patch_role(&w.api, w.admin, id, body.clone())).await;
            assert_eq!(s, 403, "{body}: {b}");
        }
        assert!(role_row(&w.db, w.sup, "MODERATOR", Some(w.d)).await.is_some(), "the superadmin keeps its grant");
        assert_eq!(role_row(&w.db, w.alice, "MODERATOR", Some(w.d)).await.unwrap().updated_at, alice_mod.updated_at);
        // A role name outside the application's set.
        let (s, b) = send(&app, patch_role(&w.api, w.admin, alice_mod.id, json!({"role": "EMPEROR"}))).await;
        assert_eq!(s, 422, "{b}");
        assert_eq!(b["field"], "role", "{b}");

        // Legitimate rewrites: both the old and the new grant are the caller's to give.
        let (s, b) = send(&app, patch_role(&w.api, w.dadmin, alice_mod.id, json!({"role": "USER"}))).await;
        assert_eq!(s, 200, "a domain admin changes a role of its domain within it: {b}");
        assert_eq!((b["role"].as_str(), b["domain_id"].as_str()), (Some("USER"), Some(w.d.to_string().as_str())));
        let (s, b) = send(&app, patch_role(&w.api, w.admin, alice_mod.id, json!({"domain_id": w.e, "user_id": w.bob}))).await;
        assert_eq!(s, 200, "a global admin moves it to another domain and user: {b}");
        assert!(role_row(&w.db, w.bob, "USER", Some(w.e)).await.is_some());
        assert!(role_row(&w.db, w.alice, "USER", Some(w.d)).await.is_none());
        // Out of the domain admin's reach again once moved to `e`.
        let moved = role_row(&w.db, w.bob, "USER", Some(w.e)).await.unwrap();
        let (s, _) = send(&app, patch_role(&w.api, w.dadmin, moved.id, json!({"domain_id": w.d}))).await;
        assert!(s == 403 || s == 404, "{s}");
        let (s, b) = send(&app, patch_role(&w.api, w.sup, own.id, json!({"role": "MODERATOR"}))).await;
        assert_eq!(s, 200, "a superadmin rewrites anything: {b}");
        assert!(!crudforge::auth::load_user(&w.db, w.dadmin).await.unwrap().unwrap().administers_domain(w.d));
    }

    async fn a_domain_cascade_removes_only_roles_the_caller_may_remove(t) {
        let w = world(&t).await;
        let app = test::init_service(w.api.app()).await;
        users::grant_role(&w.db, w.sup, "MODERATOR", Some(w.e)).await.unwrap();
        users::grant_role(&w.db, w.bob, "MODERATOR", Some(w.e)).await.unwrap();
        let sup_role = role_row(&w.db, w.sup, "MODERATOR", Some(w.e)).await.unwrap();
        // Deleting the superadmin's grant directly is refused ...
        let (s, _) = send(&app, as_user(test::TestRequest::delete().uri(&format!("/api/user/{}/role/{}", w.sup, sup_role.id)), &w.api, w.admin)).await;
        assert_eq!(s, 403);
        // ... and so is deleting it through the domain's cascade: as a whole, nothing deleted.
        let (s, b) = send(&app, as_user(test::TestRequest::delete().uri(&format!("/api/domains/{}?cascade=true", w.e)), &w.api, w.admin)).await;
        assert_eq!(s, 403, "{b}");
        assert_eq!(b["type"], "/errors/forbidden_error");
        assert!(b["detail"].as_str().unwrap().contains("outranks"), "the reason is named: {b}");
        let (s, _) = send(&app, test::TestRequest::get().uri(&format!("/api/domains/{}", w.e))).await;
        assert_eq!(s, 200, "the domain is kept");
        assert!(role_row(&w.db, w.sup, "MODERATOR", Some(w.e)).await.is_some());
        assert!(role_row(&w.db, w.bob, "MODERATOR", Some(w.e)).await.is_some(), "no role of the domain was deleted");

        // A role the caller may not grant (a domain-scoped SUPERADMIN) stops the cascade too.
        let f = domain(&w.db, "f").await;
        users::grant_role(&w.db, w.alice, "SUPERADMIN", Some(f)).await.unwrap();
        let (s, b) = send(&app, as_user(test::TestRequest::delete().uri(&format!("/api/domains/{f}?cascade=true")), &w.api, w.admin)).await;
        assert_eq!(s, 403, "{b}");
        assert!(b["detail"].as_str().unwrap().contains("SUPERADMIN"), "{b}");
        assert!(role_row(&w.db, w.alice, "SUPERADMIN", Some(f)).await.is_some());

        // Without those grants the admin's cascade goes through; the superadmin's always.
        let (s, _) = send(&app, as_user(test::TestRequest::delete().uri(&format!("/api/user/{}/role/{}", w.sup, sup_role.id)), &w.api, w.sup)).await;
        assert_eq!(s, 204);
        let (s, b) = send(&app, as_user(test::TestRequest::delete().uri(&format!("/api/domains/{}?cascade=true", w.e)), &w.api, w.admin)).await;
        assert_eq!(s, 204, "{b}");
        assert!(role_row(&w.db, w.bob, "MODERATOR", Some(w.e)).await.is_none());
        let (s, b) = send(&app, as_user(test::TestRequest::delete().uri(&format!("/api/domains/{f}?cascade=true")), &w.api, w.sup)).await;
        assert_eq!(s, 204, "{b}");
        assert!(role_row(&w.db, w.alice, "SUPERADMIN", Some(f)).await.is_none());
    }

    async fn a_role_row_changed_under_a_judged_patch_is_not_overwritten(t) {
        use crudforge_tests::Backend;
        use diesel_async::SimpleAsyncConnection;
        use std::sync::{Arc, Mutex};
        let w = world(&t).await;
        users::grant_role(&w.db, w.alice, "MODERATOR", Some(w.d)).await.unwrap();
        let row = role_row(&w.db, w.alice, "MODERATOR", Some(w.d)).await.unwrap();
        // While the admin's PATCH is judged (after guard_roles read the row), another request
        // (a superadmin's, say) makes the row an unscoped SUPERADMIN grant and commits.
        let concurrent: Arc<Mutex<Option<bool>>> = Arc::default();
        let seen = concurrent.clone();
        let id = row.id;
        let bp = guard_roles(UserRole::blueprint("/api/racy-roles/"), DEFAULT_ROLES).before_update(
            move |ctx: crudforge::crud::HookCtx, input, _now| {
                let seen = seen.clone();
                async move {
                    let mut conn = ctx.db.get().await?;
                    let sqlite = ctx.db.backend() == Backend::Sqlite;
                    let sql = format!(
                        "{}UPDATE user_roles SET role = 'SUPERADMIN', domain_id = NULL WHERE id = '{id}'",
                        if sqlite { "PRAGMA busy_timeout = 0; " } else { "" }
                    );
                    let ok = crudforge::with_conn!(conn, |c| c.batch_execute(&sql).await).is_ok();
                    #[cfg(feature = "sqlite")]
                    if sqlite {
                        let restore = format!("PRAGMA busy_timeout = {};", crudforge::__bench::BUSY_TIMEOUT_MS);
                        crudforge::with_conn!(conn, |c| c.batch_execute(&restore).await).unwrap();
                    }
                    *seen.lock().unwrap() = Some(ok);
                    Ok(input)
                }
            },
        );
        let api = Api::new(t.config().with(|c| c.auth.bcrypt_cost = COST), w.db.clone()).unwrap().mount(bp).unwrap();
        let app = test::init_service(api.app()).await;
        let (s, b) = send(&app, as_user(test::TestRequest::patch().uri(&format!("/api/racy-roles/{id}"))
            .set_json(json!({"domain_id": w.e})), &api, w.admin)).await;
        let wrote = concurrent.lock().unwrap().expect("the hook ran");
        match t.backend {
            // SQLite: the PATCH holds the write lock from the start; nothing changes the row
            // between the check and the write.
            Backend::Sqlite => {
                assert!(!wrote, "no concurrent write while the PATCH is judged");
                assert_eq!(s, 200, "{b}");
                assert!(role_row(&w.db, w.alice, "MODERATOR", Some(w.e)).await.is_some());
            }
            // PostgreSQL: the concurrent write commits; the PATCH, judged on the row before it,
            // is refused instead of overwriting a grant the admin may not remove.
            Backend::Postgres => {
                assert!(wrote, "the concurrent write commits");
                assert_eq!(s, 412, "{b}");
                assert!(role_row(&w.db, w.alice, "SUPERADMIN", None).await.is_some(), "the concurrent grant stands");
            }
        }
    }
}

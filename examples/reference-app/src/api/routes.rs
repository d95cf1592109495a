//! The reference application's routes: the `/api/user/` blueprint with its extra endpoints,
//! nested roles, domains and critters, and the admin page at `/admin/`.

use super::critters::{self, Critter};
use super::domains::RefDomain;
use super::habitats::Habitat;
use super::invites::{self, Invite};
use super::profile::{self, PublicUsers};
use super::recovery::{self, RecoverySettings};
use super::users::AppUser;
use super::visits::Visit;
use super::{login, settings, user_path};
use actix_web::web;
use crudforge::prelude::*;
use crudforge::users::{guard_domain_delete, guard_roles, Token, UserRole, DEFAULT_ROLES};
use crudforge::MountError;

/// Mounts every reference endpoint on `api`.
///
/// # Errors
///
/// A blueprint is misconfigured (a bug).
pub fn mount(api: Api, recovery_settings: RecoverySettings) -> Result<Api, MountError> {
    let users = UserBlueprint::<AppUser>::new("/api/user/")
        .name("User")
        .login_hook(login::login_hook)
        // The hook answers 404 for a domain name that names no domain.
        .login_errors(&[404])
        // `me/` shows the caller as the user list shows users: the public schema.
        .me_present::<PublicUsers>()
        .crud(|bp| {
            bp.admin_only([Operation::Index, Operation::Post])
                // DELETE keeps the row (soft delete) and disables the account.
                .after_delete(super::users::disable_deleted)
                .with(Operation::Index, |o| o.present::<PublicUsers>())
                // POST answers with the public user schema too.
                .with(Operation::Post, |o| o.present::<PublicUsers>())
                .route(
                    // `<prefix>/me`: the same answer as the blueprint's `me/`
                    // (`getCurrentUser`), which alone is documented.
                    CustomRoute::new(OperationType::Get, "me", || web::get().to(profile::me))
                        .undocumented(),
                )
                .route(
                    CustomRoute::new(OperationType::Post, "token_login", || {
                        web::post().to(login::token_login)
                    })
                    .operation_id("tokenLogin")
                    .summary("Exchange a stored token for an access token")
                    .body::<login::TokenLogin>()
                    .responds::<login::AccessToken>()
                    .errors(&[401, 404, 422, 429])
                    .tag("User")
                    .public(),
                )
                .route(
                    CustomRoute::new(OperationType::Post, "send_recovery_token", move || {
                        web::post().to(move |req, body| {
                            recovery::send_recovery_token(req, body, recovery_settings)
                        })
                    })
                    .operation_id("sendRecoveryToken")
                    .summary("Issue a password-recovery token (returned only in DEBUG mode)")
                    .body::<recovery::RecoveryRequest>()
                    .responds::<recovery::RecoveryTokenIssued>()
                    .responds_text()
                    .errors(&[401, 422, 429])
                    .tag("User")
                    .public(),
                )
                .route(
                    CustomRoute::new(OperationType::Post, "reset_password", move || {
                        web::post().to(move |req, body| {
                            recovery::reset_password(req, body, recovery_settings)
                        })
                    })
                    .operation_id("resetPassword")
                    .summary("Set a new password with a recovery token")
                    .body::<recovery::ResetRequest>()
                    .password_members(&["new_password"])
                    .responds::<login::AccessToken>()
                    .errors(&[401, 422, 429])
                    .tag("User")
                    .public(),
                )
                .route(
                    CustomRoute::new(OperationType::Get, "{user_id}/settings/", || {
                        web::get().to(settings::list_settings)
                    })
                    .operation_id("listUserSetting")
                    .callers(user_path::MAY_WRITE)
                    .summary("A user's settings (the user itself or an admin)")
                    .responds::<Vec<settings::SettingBody>>()
                    .errors(&[401, 403, 404])
                    .tag("User"),
                )
                .route(
                    CustomRoute::new(OperationType::Post, "{user_id}/settings/", || {
                        web::post().to(settings::put_setting)
                    })
                    .operation_id("setUserSetting")
                    .callers(user_path::MAY_WRITE)
                    .summary("Create or update one setting; returns all of them")
                    .body::<settings::SettingBody>()
                    .responds::<Vec<settings::SettingBody>>()
                    .errors(&[401, 403, 404, 422])
                    .tag("User"),
                )
                .route(
                    CustomRoute::new(OperationType::Get, "{user_id}/invite/", || {
                        web::get().to(invites::list_invites)
                    })
                    .operation_id("listUserInvite")
                    .callers(user_path::MAY_WRITE)
                    .summary("Invites sent by a user (the user itself or an admin)")
                    .responds::<Vec<<Invite as Resource>::Response>>()
                    .errors(&[401, 403, 404])
                    .tag("User"),
                )
                .route(
                    CustomRoute::new(OperationType::Post, "{user_id}/invite/", || {
                        web::post().to(invites::create_invite)
                    })
                    .operation_id("createUserInvite")
                    .callers(user_path::MAY_WRITE)
                    .summary("Send an invite as that user")
                    .status(201)
                    .body::<invites::InviteBody>()
                    .responds::<<Invite as Resource>::Response>()
                    .errors(&[401, 403, 404, 422])
                    .tag("User"),
                )
        });
    api.mount(users)?
        .mount(
            // Role names are checked against the application's set; nobody grants a role
            // above their own or changes the roles of a user who outranks them.
            guard_roles(
                UserRole::blueprint("/api/user/<uuid:user_id>/role/").methods([
                    Operation::Index,
                    Operation::Post,
                    Operation::Delete,
                ]),
                DEFAULT_ROLES,
            ),
        )?
        // Writes are admin-only; a domain that roles reference is deleted only with
        // `?cascade=true`.
        .mount(guard_domain_delete(RefDomain::blueprint("/api/domains/")))?
        // API keys (and the refresh tokens of sessions): each user lists, creates and revokes
        // their own, administrators everyone's. A key may be limited to scopes (`read`,
        // `Critter`, `Critter:read`) and given an expiry; `token_login` exchanges it.
        .mount(Token::blueprint("/api/tokens/"))?
        .mount(
            // Every item answer carries an ETag; PATCH and DELETE honour If-Match, POST and
            // PATCH honour Idempotency-Key (all built into generated blueprints). Batch writes
            // at `batch/` (create, update) and `batch/delete/`, each item judged like a single
            // write. DELETE keeps the row; administrators list deleted critters
            // (`include_deleted=true`) and restore them. Live updates at `events/`
            // (Server-Sent Events of the critters each subscriber may read; docs/realtime.md).
            // Aggregates at `aggregate/` (critters per species with the average cuteness:
            // `?group_by=species&avg=cuteness_level`; docs/aggregates.md), the list as CSV or
            // NDJSON at `export/`, and a CSV or NDJSON file of new critters at `import/`
            // (docs/data.md), which only administrators may use (a door's own access; every
            // signed-in user may create critters one at a time or in a batch). An export
            // costs 20 units of 200 an hour per caller: ten exports an hour each
            // (docs/configuration.md, "Limits per operation"). Every write keeps an entry
            // of who changed what, shown at `<id>/history/` under the same read rules
            // (docs/history.md). Webhook subscriptions may name critters; those of the
            // configuration (`WEBHOOKS`, docs/webhooks.md) are declared below.
            Critter::blueprint("/api/critters/")
                .events()
                .history()
                .webhooks()
                .aggregates()
                .export()
                .import()
                .door(Door::Import, DoorAccess::Admins)
                .limit(Door::Export, Limit::per_hour(200))
                .admin_only([Operation::Delete, Operation::Restore])
                .batch([Operation::Post, Operation::Patch, Operation::Delete])
                .before_create(critters::tidy_new)
                .before_update_input(critters::tidy_change)
                .after_commit(critters::announce),
        )?
        // Signed-in users read habitats; administrators create and delete them; a habitat's
        // keeper changes its climate (the model's rules). A habitat that critters name is not
        // deleted (409).
        .mount(
            Habitat::blueprint("/api/habitats/").admin_only([Operation::Post, Operation::Delete]),
        )?
        // Visits: the model's rules (expressions) say who reads and writes each one.
        .mount(
            // What the admin page shows of visits: its name, its list's columns, a label.
            Visit::blueprint("/api/visits/")
                .admin_label("Vet visits")
                .admin_columns(["note", "critter_id"])
                .admin_member_label("critter_id", "Critter"),
        )
        // The admin page (docs/admin.md): it works through the endpoints above only, with
        // the signed-in user's rights.
        .map(|api| api.admin("/admin/"))
        // Administrators' jobs API (docs/jobs.md): the admin page's Jobs view uses it.
        .map(|api| api.jobs_api("/api/jobs/"))
        // Administrators' webhooks API (docs/webhooks.md): subscriptions, their messages and
        // dead letters, replays.
        .map(|api| api.webhooks_api("/api/webhooks/"))?
        // Webhook subscriptions declared in the configuration (`WEBHOOKS`, docs/webhooks.md):
        // none unless the deployment names some.
        .webhooks_from_config()
}

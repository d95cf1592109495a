//! The reference application's routes: the `/api/user/` blueprint with its extra endpoints,
//! nested roles, domains and critters.

use super::handlers;
use super::models::{AppUser, Critter, PublicUser, PublicUsers, RefDomain};
use actix_web::web;
use apistos::paths::OperationType;
use crudforge::crud::blueprint::CustomRoute;
use crudforge::users::{UserBlueprint, UserRole};
use crudforge::{Api, MountError, Operation, Resource};

/// Mounts every reference endpoint on `api`.
///
/// # Errors
///
/// A blueprint is misconfigured (a bug).
pub fn mount(api: Api) -> Result<Api, MountError> {
    let users = UserBlueprint::<AppUser>::new("/api/user/")
        .name("user")
        .login_hook(handlers::login_hook)
        .crud(|bp| {
            bp.admin_only([Operation::Index, Operation::Post])
                .with(Operation::Index, |o| o.present::<PublicUsers>())
                .route(
                    CustomRoute::new(OperationType::Get, "me", || web::get().to(handlers::me))
                        .operation_id("getCurrentUser")
                        .summary("The current user's public profile")
                        .responds::<PublicUser>()
                        .errors(&[401])
                        .tag("user"),
                )
                .route(
                    CustomRoute::new(OperationType::Post, "token_login", || {
                        web::post().to(handlers::token_login)
                    })
                    .operation_id("tokenLogin")
                    .summary("Exchange a stored token for an access token")
                    .body::<handlers::TokenLogin>()
                    .responds::<handlers::AccessToken>()
                    .errors(&[401, 404, 422])
                    .tag("user")
                    .public(),
                )
                .route(
                    CustomRoute::new(OperationType::Post, "send_recovery_token", || {
                        web::post().to(handlers::send_recovery_token)
                    })
                    .operation_id("sendRecoveryToken")
                    .summary("Issue a password-recovery token (returned only in DEBUG mode)")
                    .body::<handlers::RecoveryRequest>()
                    .responds::<handlers::DebugRecoveryToken>()
                    .responds_text()
                    .errors(&[401, 422])
                    .tag("user")
                    .public(),
                )
                .route(
                    CustomRoute::new(OperationType::Post, "reset_password", || {
                        web::post().to(handlers::reset_password)
                    })
                    .operation_id("resetPassword")
                    .summary("Set a new password with a recovery token")
                    .body::<handlers::ResetRequest>()
                    .responds::<handlers::AccessToken>()
                    .errors(&[401, 422])
                    .tag("user")
                    .public(),
                )
                .route(
                    CustomRoute::new(OperationType::Get, "{user_id}/settings/", || {
                        web::get().to(handlers::list_settings)
                    })
                    .operation_id("listUserSettings")
                    .summary("A user's settings (the user itself or an admin)")
                    .responds::<Vec<handlers::SettingBody>>()
                    .errors(&[401, 403, 404])
                    .tag("user"),
                )
                .route(
                    CustomRoute::new(OperationType::Post, "{user_id}/settings/", || {
                        web::post().to(handlers::put_setting)
                    })
                    .operation_id("putUserSetting")
                    .summary("Create or update one setting; returns all of them")
                    .body::<handlers::SettingBody>()
                    .responds::<Vec<handlers::SettingBody>>()
                    .errors(&[401, 403, 404, 422])
                    .tag("user"),
                )
                .route(
                    CustomRoute::new(OperationType::Get, "{user_id}/invite/", || {
                        web::get().to(handlers::list_invites)
                    })
                    .operation_id("listUserInvites")
                    .summary("Invites sent by a user (the user itself or an admin)")
                    .responds::<Vec<<super::models::Invite as Resource>::Response>>()
                    .errors(&[401, 403, 404])
                    .tag("user"),
                )
                .route(
                    CustomRoute::new(OperationType::Post, "{user_id}/invite/", || {
                        web::post().to(handlers::create_invite)
                    })
                    .operation_id("createUserInvite")
                    .summary("Send an invite as that user")
                    .status(201)
                    .body::<handlers::InviteBody>()
                    .responds::<<super::models::Invite as Resource>::Response>()
                    .errors(&[401, 403, 404, 422])
                    .tag("user"),
                )
        });
    api.mount(users)?
        .mount(
            UserRole::blueprint("/api/user/<uuid:user_id>/role/").methods([
                Operation::Index,
                Operation::Post,
                Operation::Delete,
            ]),
        )?
        .mount(RefDomain::blueprint("/api/domains/"))?
        .mount(Critter::blueprint("/api/critters/").admin_only([Operation::Delete]))
}

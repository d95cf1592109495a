//! The permission rules of the built-in user resources.

use crate::auth::CurrentUser;
use crate::error::Error;
use crate::perms::{Access, Rules};

/// Rules of users: a user reads and writes itself, administrators everyone; only
/// administrators create users (unless the model allows public registration), change
/// `is_enabled`, and set a password through PATCH (a user changes its own through
/// `me/password/`, proving the current one).
#[derive(Debug, Clone, Copy, Default)]
pub struct UserRules;

impl<U> Rules<U> for UserRules {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::owned_by(user, "id")
    }
    fn write(&self, user: Option<&CurrentUser>) -> Access {
        Access::owned_by(user, "id")
    }
    fn create(
        &self,
        user: Option<&CurrentUser>,
        _body: &mut serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), Error> {
        Access::admins(user).into_conds().map(|_| ())
    }
    fn admin_fields(&self) -> &[&'static str] {
        &["is_enabled"]
    }
    fn admin_update_fields(&self) -> &[&'static str] {
        &["password"]
    }
}

/// Rules of roles: users read their own roles; global administrators grant and remove any
/// role (SUPERADMIN and unscoped ADMIN only when they are SUPERADMIN themselves); an ADMIN
/// scoped to a domain reads, grants and removes the roles of that domain only. The checks
/// that need the database (the target's rank, the application's role set) are
/// [`super::guard_roles`], which alone judges what a PATCH would turn a row into; a blueprint
/// of [`UserRole`](super::UserRole) mounted without it gets the same checks (see
/// [`super::unguarded_roles`]). Its rules are implemented beside those checks, in `guards`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoleRules;

/// Rules of Token records (refresh tokens and API keys): those of
/// [`OwnerRules::USER_ID`](crate::perms::OwnerRules::USER_ID), the owner and administrators,
/// the server setting `user_id`. A blueprint of [`Token`](super::Token) also checks a new
/// API key's `scopes` against the resources the API mounts (422 naming `scopes`, nothing
/// stored), whatever rules the application gives it. Its rules are implemented beside that
/// check, in `keys`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokenRules;

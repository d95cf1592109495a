//! The permission rules of the built-in user resources.

use crate::auth::CurrentUser;
use crate::condition::{Arg, Cond, Condition};
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
/// [`super::guard_roles`], which alone judges what a PATCH would turn a row into:
/// mount role rows that offer PATCH through it.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoleRules;

/// The condition "the role's domain is one the caller administers".
fn in_admin_domains(user: &CurrentUser) -> Option<Condition> {
    let domains = user.admin_domains();
    if domains.is_empty() {
        return None;
    }
    Some(Condition::Any(
        domains
            .into_iter()
            .map(|d| Condition::Is(Cond::eq("domain_id", Arg::Uuid(d))))
            .collect(),
    ))
}

impl<U> Rules<U> for RoleRules {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        match (user, user.and_then(in_admin_domains)) {
            (Some(u), Some(domains)) => Access::Rows(Condition::Any(vec![
                Condition::Is(Cond::eq("user_id", Arg::Uuid(u.id))),
                domains,
            ])),
            _ => Access::owned_by(user, "user_id"),
        }
    }
    fn write(&self, user: Option<&CurrentUser>) -> Access {
        match user {
            None => Access::Unauthenticated,
            Some(u) if u.is_admin() => Access::All,
            Some(u) => in_admin_domains(u).map_or(Access::Forbidden, Access::Rows),
        }
    }
    fn create(
        &self,
        user: Option<&CurrentUser>,
        body: &mut serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), Error> {
        let u = user.ok_or_else(|| Error::Unauthorized("Authentication required.".into()))?;
        let role = body.get("role").and_then(|v| v.as_str());
        let domain = body
            .get("domain_id")
            .and_then(|v| v.as_str())
            .and_then(|v| v.parse::<uuid::Uuid>().ok());
        super::privilege::may_grant(u, role.unwrap_or_default(), domain)
    }
}

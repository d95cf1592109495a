//! Privilege: who may grant which role, and the rule that nobody changes a user who outranks
//! them. Used by [`super::rules::RoleRules`] and by the hooks of [`super::guards`].
//!
//! | Caller | May |
//! |---|---|
//! | SUPERADMIN | everything, including granting SUPERADMIN and unscoped ADMIN |
//! | unscoped ADMIN (global admin) | grant and remove any other role; change users not above them |
//! | ADMIN scoped to domain D | read, grant and remove roles scoped to D (never SUPERADMIN) |
//! | anyone else | read their own roles |

use crate::auth::CurrentUser;
use crate::error::Error;
use uuid::Uuid;

/// The role names of the built-in [`super::Role`] set.
pub const DEFAULT_ROLES: &[&str] = &["SUPERADMIN", "ADMIN", "MODERATOR", "USER"];

/// Whether `caller` may grant (or remove) `role` in `domain` (`None`: every domain).
///
/// Only a SUPERADMIN grants SUPERADMIN or unscoped ADMIN; a global admin grants any other
/// role; an ADMIN scoped to a domain grants roles scoped to that domain.
///
/// # Errors
///
/// 403 when the caller may not.
pub fn may_grant(caller: &CurrentUser, role: &str, domain: Option<Uuid>) -> Result<(), Error> {
    let top = role == "SUPERADMIN" || (role == "ADMIN" && domain.is_none());
    if top {
        return if caller.is_superadmin() {
            Ok(())
        } else {
            Err(Error::Forbidden(
                "Only a SUPERADMIN grants or removes SUPERADMIN or unscoped ADMIN.".into(),
            ))
        };
    }
    match domain {
        _ if caller.is_admin() => Ok(()),
        Some(d) if caller.administers_domain(d) => Ok(()),
        _ => Err(Error::Forbidden(
            "Only administrators grant or remove roles (domain administrators: in their domain)."
                .into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::may_grant;
    use crate::auth::{CurrentUser, RoleGrant};
    use uuid::Uuid;

    fn user(roles: &[(&str, Option<Uuid>)]) -> CurrentUser {
        CurrentUser {
            id: Uuid::new_v4(),
            email: "a@b.c".into(),
            is_enabled: true,
            second_factor: false,
            roles: roles
                .iter()
                .map(|(r, d)| RoleGrant {
                    role: (*r).into(),
                    domain_id: *d,
                })
                .collect(),
        }
    }

    #[test]
    fn grants() {
        let d = Uuid::new_v4();
        let e = Uuid::new_v4();
        let domain_admin = user(&[("ADMIN", Some(d))]);
        assert!(may_grant(&domain_admin, "SUPERADMIN", None).is_err());
        assert!(may_grant(&domain_admin, "SUPERADMIN", Some(d)).is_err());
        assert!(may_grant(&domain_admin, "ADMIN", None).is_err());
        assert!(may_grant(&domain_admin, "MODERATOR", None).is_err());
        assert!(may_grant(&domain_admin, "MODERATOR", Some(e)).is_err());
        assert!(may_grant(&domain_admin, "MODERATOR", Some(d)).is_ok());
        assert!(may_grant(&domain_admin, "ADMIN", Some(d)).is_ok());
        let admin = user(&[("ADMIN", None)]);
        assert!(may_grant(&admin, "SUPERADMIN", None).is_err());
        assert!(may_grant(&admin, "ADMIN", None).is_err());
        assert!(may_grant(&admin, "ADMIN", Some(e)).is_ok());
        assert!(may_grant(&admin, "USER", None).is_ok());
        let sup = user(&[("SUPERADMIN", None)]);
        assert!(may_grant(&sup, "SUPERADMIN", None).is_ok());
        assert!(may_grant(&sup, "ADMIN", None).is_ok());
    }
}

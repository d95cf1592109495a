//! The authenticated caller: its id, e-mail and roles, and the role checks rules use.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// One role a user holds, optionally scoped to a domain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleGrant {
    /// The role name (`ADMIN`).
    pub role: String,
    /// The domain it is limited to; `None` means every domain.
    pub domain_id: Option<Uuid>,
}

/// The authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentUser {
    /// User id.
    pub id: Uuid,
    /// E-mail address.
    pub email: String,
    /// Always true for an authenticated user (disabled users cannot authenticate).
    pub is_enabled: bool,
    /// Roles held.
    pub roles: Vec<RoleGrant>,
}

impl CurrentUser {
    /// Whether the user holds `role` (in any domain when `domain` is `None`; in `domain` or
    /// unscoped otherwise).
    pub fn has_role(&self, role: &str, domain: Option<Uuid>) -> bool {
        self.roles.iter().any(|g| {
            g.role == role && (domain.is_none() || g.domain_id.is_none() || g.domain_id == domain)
        })
    }

    /// Whether the user holds at least one role.
    pub fn has_any_role(&self) -> bool {
        !self.roles.is_empty()
    }

    /// ADMIN or SUPERADMIN, in any domain.
    pub fn is_admin(&self) -> bool {
        self.roles
            .iter()
            .any(|g| g.role == "ADMIN" || g.role == "SUPERADMIN")
    }

    /// Domain access: true for no domain, or when a role has that domain or none.
    pub fn has_domain_access(&self, domain: Option<Uuid>) -> bool {
        match domain {
            None => true,
            Some(d) => self
                .roles
                .iter()
                .any(|g| g.domain_id.is_none() || g.domain_id == Some(d)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    #[test]
    fn roles() {
        let d = Uuid::new_v4();
        let u = CurrentUser {
            id: Uuid::new_v4(),
            email: "a@b.c".into(),
            is_enabled: true,
            roles: vec![RoleGrant {
                role: "MODERATOR".into(),
                domain_id: Some(d),
            }],
        };
        assert!(u.has_role("MODERATOR", None));
        assert!(u.has_role("MODERATOR", Some(d)));
        assert!(!u.has_role("MODERATOR", Some(Uuid::new_v4())));
        assert!(!u.is_admin());
        assert!(u.has_any_role());
        assert!(u.has_domain_access(Some(d)) && u.has_domain_access(None));
        assert!(!u.has_domain_access(Some(Uuid::new_v4())));
    }
}

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

/// Global rank, ordered: `User < Admin < SuperAdmin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Rank {
    /// No global administration rights (domain-scoped administrators included).
    User,
    /// An unscoped ADMIN.
    Admin,
    /// A SUPERADMIN.
    SuperAdmin,
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
    /// Whether this session passed a second factor (its token's assurance level is 2): what
    /// a rule's `@second_factor` asks.
    pub second_factor: bool,
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

    /// A global administrator: an unscoped ADMIN, or a SUPERADMIN. An ADMIN scoped to a
    /// domain is not one (see [`CurrentUser::administers_domain`]).
    pub fn is_admin(&self) -> bool {
        self.roles
            .iter()
            .any(|g| g.role == "SUPERADMIN" || (g.role == "ADMIN" && g.domain_id.is_none()))
    }

    /// A super administrator: holds SUPERADMIN (scoped or not).
    pub fn is_superadmin(&self) -> bool {
        self.roles.iter().any(|g| g.role == "SUPERADMIN")
    }

    /// Whether the user administers the roles of `domain`: a global administrator, or an
    /// ADMIN scoped to that domain.
    pub fn administers_domain(&self, domain: Uuid) -> bool {
        self.is_admin()
            || self
                .roles
                .iter()
                .any(|g| g.role == "ADMIN" && g.domain_id == Some(domain))
    }

    /// The domains the user administers through domain-scoped ADMIN roles.
    pub fn admin_domains(&self) -> Vec<Uuid> {
        self.roles
            .iter()
            .filter(|g| g.role == "ADMIN")
            .filter_map(|g| g.domain_id)
            .collect()
    }

    /// The user's global rank: SUPERADMIN above global ADMIN above everyone else. Nobody
    /// changes a user whose rank is above their own.
    pub(crate) fn rank(&self) -> Rank {
        if self.is_superadmin() {
            Rank::SuperAdmin
        } else if self.is_admin() {
            Rank::Admin
        } else {
            Rank::User
        }
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
            second_factor: false,
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

    #[test]
    fn a_domain_admin_is_no_global_admin() {
        let d = Uuid::new_v4();
        let grant = |role: &str, domain_id| RoleGrant {
            role: role.into(),
            domain_id,
        };
        let mut u = CurrentUser {
            id: Uuid::new_v4(),
            email: "a@b.c".into(),
            is_enabled: true,
            second_factor: false,
            roles: vec![grant("ADMIN", Some(d))],
        };
        assert!(!u.is_admin() && !u.is_superadmin() && u.rank() == Rank::User);
        assert!(u.administers_domain(d) && !u.administers_domain(Uuid::new_v4()));
        assert_eq!(u.admin_domains(), vec![d]);
        u.roles.push(grant("ADMIN", None));
        assert!(u.is_admin() && u.rank() == Rank::Admin);
        u.roles.push(grant("SUPERADMIN", None));
        assert!(u.rank() == Rank::SuperAdmin && Rank::SuperAdmin > Rank::Admin);
    }
}

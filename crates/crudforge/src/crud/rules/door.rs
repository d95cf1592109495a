//! The access of a blueprint's other doors (export, import, aggregates, the feed, file
//! downloads): each compiled once, at mount, into a [`Gate`] that every request folds with its
//! caller into what the door adds to the rules of the operation it follows.

use super::expr::{compile, Rule};
use crate::auth::CurrentUser;
use crate::crud::Resource;
use crate::perms::{Access, Door, DoorAccess};

/// A door's own access, compiled for one resource.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Gate {
    /// Signed-in callers only.
    SignedIn,
    /// Global administrators only.
    Admins,
    /// An expression's rule.
    Rule(Rule),
}

impl Gate {
    /// The roles the gate's expression names.
    pub(crate) fn roles(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Gate::Rule(rule) = self {
            rule.roles(&mut out);
        }
        out
    }

    /// What the gate gives `user` (administrators pass every gate).
    pub(crate) fn access(&self, user: Option<&CurrentUser>) -> Access {
        if user.is_some_and(CurrentUser::is_admin) {
            return Access::All;
        }
        match self {
            Gate::SignedIn => Access::authenticated(user),
            Gate::Admins => Access::admins(user),
            Gate::Rule(rule) => rule.access(user),
        }
    }
}

/// The gates of a blueprint's doors (a door without one follows its operation alone).
#[derive(Debug, Default)]
pub(crate) struct Gates(Vec<(Door, Gate)>);

impl Gates {
    /// Compiles the doors' access for `R`, or says what is wrong with each that does not
    /// compile; a door given twice keeps the last.
    pub(crate) fn compile<R: Resource>(doors: &[(Door, DoorAccess)]) -> Result<Gates, Vec<String>> {
        let mut gates: Vec<(Door, Gate)> = Vec::new();
        let mut problems = Vec::new();
        for (door, access) in doors {
            gates.retain(|(d, _)| d != door);
            let gate = match access {
                DoorAccess::AsOperation => continue,
                DoorAccess::SignedIn => Gate::SignedIn,
                DoorAccess::Admins => Gate::Admins,
                DoorAccess::Expr(src) => match compile::<R>(door.name(), src) {
                    Ok(rule) => Gate::Rule(rule),
                    Err(e) => {
                        problems.push(e);
                        continue;
                    }
                },
            };
            gates.push((*door, gate));
        }
        if problems.is_empty() {
            Ok(Gates(gates))
        } else {
            Err(problems)
        }
    }

    /// The gate of `door`, when it has one.
    pub(crate) fn get(&self, door: Door) -> Option<&Gate> {
        self.0.iter().find(|(d, _)| *d == door).map(|(_, g)| g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::RoleGrant;
    use crate::crud::query::filter_expr::CallerTerm;

    fn user(role: Option<&str>) -> CurrentUser {
        CurrentUser {
            id: uuid::Uuid::new_v4(),
            email: String::new(),
            is_enabled: true,
            second_factor: false,
            roles: role
                .map(|r| RoleGrant {
                    role: r.to_owned(),
                    domain_id: None,
                })
                .into_iter()
                .collect(),
        }
    }

    #[test]
    fn each_gate_lets_in_whom_it_says_and_administrators_pass_them_all() {
        let (plain, admin) = (user(None), user(Some("ADMIN")));
        let never = Gate::Rule(Rule::Caller(CallerTerm::Const(false)));
        for (gate, anonymous, signed_in) in [
            (Gate::SignedIn, Access::Unauthenticated, Access::All),
            (Gate::Admins, Access::Unauthenticated, Access::Forbidden),
            (never, Access::Unauthenticated, Access::Forbidden),
        ] {
            assert_eq!(gate.access(None), anonymous, "{gate:?}");
            assert_eq!(gate.access(Some(&plain)), signed_in, "{gate:?}");
            assert_eq!(gate.access(Some(&admin)), Access::All, "{gate:?}");
        }
    }
}

//! Which account a provider's sign-in is: the identity's, the signed-in account that links
//! it, the account with the same address when both sides verified it, or a new one; the
//! defence against an account made beforehand with someone else's address; the roles the
//! provider's claims give, re-read at every sign-in.

use super::provider::{Person, Provider};
use super::store;
use crate::db::Conn;
use crate::error::Error;
use crate::schema::{domains, user_roles, users};
use crate::sql_types::Portable;
use crate::state::ApiState;
use crate::users::addresses;
use crate::with_conn;
use diesel::prelude::*;
use uuid::Uuid;

/// The account `person` signs in to through `provider` (or links to `link`, the signed-in
/// account that asked), on `conn` in the caller's transaction: the identity linked or
/// noted, the address recorded as verified when the provider verified it, and the roles
/// its claims give.
///
/// # Errors
///
/// 409 when the identity is another account's than the one linking, or an account has the
/// address and the provider did not verify it; 401 without a usable address; database errors.
pub(crate) async fn settle(
    st: &ApiState,
    conn: &mut Conn,
    provider: &Provider,
    person: &Person,
    link: Option<Uuid>,
) -> Result<Uuid, Error> {
    let email = match person.email.as_deref() {
        Some(e) => {
            let e = crate::auth::normalize_email(e.trim());
            crate::__private::check_email("email", &e)
                .map_err(|_| refused("The provider gave an address that is not one."))?;
            Some(e)
        }
        None => None,
    };
    let name = provider.name.as_str();
    let subject = person.subject.as_str();
    let user = match (store::owner(conn, name, subject).await?, link) {
        (Some(owner), Some(linking)) if owner != linking => {
            return Err(Error::Conflict(
                "This identity at the provider already signs another account in.".into(),
            ))
        }
        (Some(owner), _) => owner,
        (None, Some(linking)) => linking,
        (None, None) => by_address(st, conn, email.as_deref(), person.email_verified).await?,
    };
    store::link(conn, name, subject, user, email.as_deref()).await?;
    if let (Some(e), true) = (email.as_deref(), person.email_verified) {
        if addresses::email_of(conn, user).await?.as_deref() == Some(e) {
            addresses::record(conn, user, e, true).await?;
        }
    }
    roles(conn, user, provider, person).await?;
    Ok(user)
}

/// The account for a first sign-in with an identity: the account with the address, linked
/// only when the provider verified it (the account's password cleared, and its sessions
/// ended, when the account's own address was never verified: it may have been made by
/// someone else before the owner came); a new account (without a password) when none has it.
async fn by_address(
    st: &ApiState,
    conn: &mut Conn,
    email: Option<&str>,
    verified: bool,
) -> Result<Uuid, Error> {
    let Some(email) = email else {
        return Err(refused(
            "The provider gave no e-mail address, and an account needs one.",
        ));
    };
    let found: Option<Uuid> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            users::table
                .filter(users::email.eq(email))
                .select(users::id),
            c,
        )
        .await
        .optional()
    })?;
    match found {
        Some(_) if !verified => Err(Error::Conflict(
            "An account has this address, and the provider does not say it is verified: \
             sign in to the account, then link the provider."
                .into(),
        )),
        Some(user) => {
            if addresses::verified(conn, user).await? != Some(true) {
                store::clear_password(conn, user).await?;
            }
            Ok(user)
        }
        None => {
            let user = crate::users::create_user_in(conn, email, None, true).await?;
            if !verified {
                for surface in crate::SURFACES {
                    if let Some(work) = surface.account_created(st, conn, user, email) {
                        work.await?;
                    }
                }
            }
            Ok(user)
        }
    }
}

/// A refused sign-in (401).
pub(crate) fn refused(why: &str) -> Error {
    Error::Unauthorized(format!("The sign-in with the provider was refused: {why}").into())
}

/// Gives `user` each role of `provider`'s rules that `person`'s claims give, and takes away
/// each one they no longer give: a role a rule names is the provider's to decide.
async fn roles(
    conn: &mut Conn,
    user: Uuid,
    provider: &Provider,
    person: &Person,
) -> Result<(), Error> {
    let mut decided: Vec<(String, Option<Uuid>, bool)> = Vec::new();
    for rule in &provider.roles {
        let domain = match rule.domain.as_deref() {
            Some(name) => match domain_id(conn, name).await? {
                Some(id) => Some(id),
                None => {
                    tracing::warn!(
                        provider = %provider.name,
                        domain = name,
                        "a role rule names a domain that does not exist; skipped"
                    );
                    continue;
                }
            },
            None => None,
        };
        let holds = rule.holds(&person.claims);
        match decided
            .iter_mut()
            .find(|(r, d, _)| *r == rule.role && *d == domain)
        {
            Some(entry) => entry.2 |= holds,
            None => decided.push((rule.role.clone(), domain, holds)),
        }
    }
    for (role, domain, holds) in decided {
        let held = holds_role(conn, user, &role, domain).await?;
        if holds && !held {
            crate::users::grant_role_in(conn, user, &role, domain).await?;
        } else if !holds && held {
            take_role(conn, user, &role, domain).await?;
        }
    }
    Ok(())
}

/// The id of the domain named `name`.
async fn domain_id(conn: &mut Conn, name: &str) -> Result<Option<Uuid>, Error> {
    let found: Option<Uuid> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            domains::table
                .filter(domains::name.eq(name))
                .select(domains::id),
            c,
        )
        .await
        .optional()
    })?;
    Ok(found)
}

/// Whether `user` holds `role` in `domain` (`None`: globally).
async fn holds_role(
    conn: &mut Conn,
    user: Uuid,
    role: &str,
    domain: Option<Uuid>,
) -> Result<bool, Error> {
    let n: i64 = with_conn!(conn, |c| {
        let q = user_roles::table
            .filter(user_roles::user_id.eq(Portable(user)))
            .filter(user_roles::role.eq(role))
            .into_boxed();
        let q = match domain {
            Some(d) => q.filter(user_roles::domain_id.eq(Portable(d))),
            None => q.filter(user_roles::domain_id.is_null()),
        };
        diesel_async::RunQueryDsl::get_result(q.count(), c).await
    })?;
    Ok(n > 0)
}

/// Takes `role` in `domain` from `user`.
async fn take_role(
    conn: &mut Conn,
    user: Uuid,
    role: &str,
    domain: Option<Uuid>,
) -> Result<(), Error> {
    with_conn!(conn, |c| {
        let mine = user_roles::user_id
            .eq(Portable(user))
            .and(user_roles::role.eq(role));
        match domain {
            Some(d) => {
                diesel_async::RunQueryDsl::execute(
                    diesel::delete(
                        user_roles::table
                            .filter(mine)
                            .filter(user_roles::domain_id.eq(Portable(d))),
                    ),
                    c,
                )
                .await
            }
            None => {
                diesel_async::RunQueryDsl::execute(
                    diesel::delete(
                        user_roles::table
                            .filter(mine)
                            .filter(user_roles::domain_id.is_null()),
                    ),
                    c,
                )
                .await
            }
        }
    })?;
    Ok(())
}

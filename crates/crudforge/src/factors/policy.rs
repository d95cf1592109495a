//! Who must give a second factor and when: an account with a confirmed factor gives it at
//! every sign-in (the sign-in answers a challenge with a ticket instead of tokens); an
//! account that must have one (`AUTH_FACTOR_ROLES`, `AUTH_FACTOR_DOMAINS`) and has none signs
//! in as before until its grace period ends, then only to enroll one.

use super::ticket::{Purpose, Ticket, SECONDS};
use super::{store, Settings};
use crate::db::Conn;
use crate::error::{Challenge, Error};
use crate::state::ApiState;
use crate::users::session::Entry;
use uuid::Uuid;

/// The surface's refusal of a session for `user` at `entry`, if it has one (see
/// `Surface::admits`).
///
/// # Errors
///
/// 401 with a challenge: give the second factor; 403 with a challenge: enroll one first; 401
/// for a refresh of a session without a factor that now needs one; database errors.
pub(super) async fn admits(st: &ApiState, user: Uuid, entry: Entry) -> Result<(), Error> {
    if matches!(
        entry,
        Entry::Refresh {
            second_factor: true
        } | Entry::SignIn {
            second_factor: true
        }
    ) {
        return Ok(());
    }
    let settings = Settings::of(st)?;
    let mut conn = st.db.get().await?;
    let has_factor = store::count_confirmed(&mut conn, user).await? > 0;
    if !has_factor && !required(&mut conn, settings, user).await? {
        return Ok(());
    }
    if !has_factor {
        let since = store::asked_since(&mut conn, user).await?;
        let ends = since.saturating_add(settings.grace.saturating_mul(1_000_000));
        if store::now() < ends {
            return Ok(());
        }
    }
    drop(conn);
    if !matches!(entry, Entry::SignIn { .. }) {
        // A refresh holds no proof of the password: the owner signs in again, and is then
        // asked for the factor or to enroll one.
        return Err(Error::Unauthorized(
            "This account now needs a second factor: sign in again.".into(),
        ));
    }
    let purpose = if has_factor {
        Purpose::Verify
    } else {
        Purpose::Enroll
    };
    Err(challenge(st, user, purpose).await?)
}

/// Whether `user` must have a second factor: they hold a role of `AUTH_FACTOR_ROLES` (or it
/// is `*`), or a role in a domain of `AUTH_FACTOR_DOMAINS`.
pub(super) async fn required(
    conn: &mut Conn,
    settings: &Settings,
    user: Uuid,
) -> Result<bool, Error> {
    if settings.roles.iter().any(|r| r == "*") {
        return Ok(true);
    }
    if !settings.roles.is_empty() {
        let roles = crate::auth::load_user_on(conn, user)
            .await?
            .map(|u| u.roles)
            .unwrap_or_default();
        if roles.iter().any(|g| settings.roles.contains(&g.role)) {
            return Ok(true);
        }
    }
    if !settings.domains.is_empty() {
        let names = store::domain_names(conn, user).await?;
        if names.iter().any(|n| settings.domains.contains(n)) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The challenge a sign-in of `user` answers: a ticket for `purpose`, bound to the account's
/// credential version.
async fn challenge(st: &ApiState, user: Uuid, purpose: Purpose) -> Result<Error, Error> {
    let version = crate::users::token_version(&st.db, user).await?;
    let ticket = Ticket {
        user,
        purpose,
        version,
        expires: chrono::Utc::now().timestamp().saturating_add(SECONDS),
    }
    .seal(st.signing_key.expose())?;
    let (forbidden, kind, detail, factors) = match purpose {
        Purpose::Verify => {
            let mut conn = st.db.get().await?;
            let mut kinds = store::kinds(&mut conn, user).await?;
            kinds.push("recovery_code".to_owned());
            (
                false,
                "second_factor",
                "The password was right; now give a second factor: send the ticket with a code \
                 to factors/verify/ (or begin a passkey's ceremony at factors/passkey/challenge/).",
                kinds,
            )
        }
        Purpose::Enroll => (
            true,
            "second_factor_enrollment",
            "This account must have a second factor: enroll one with the ticket \
             (me/factors/totp/ or me/factors/passkey/), then sign in with it.",
            super::enrollable(st),
        ),
    };
    Ok(Error::Incomplete {
        forbidden,
        detail: detail.into(),
        challenge: Box::new(Challenge {
            kind: kind.to_owned(),
            ticket,
            factors,
            expires_in: SECONDS,
        }),
    })
}

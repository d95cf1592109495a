//! The flows' rows: the links' tokens (kept as digests, used once) and the accounts'
//! addresses with whether they are verified (the library's migration `crudforge_mail_flows`).

use crate::db::functions::digest_hex;
use crate::db::Conn;
use crate::error::Error;
use crate::sql_types::Portable;
use crate::with_conn;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crate::sql_types::*;

    /// The mailed links' tokens.
    crudforge_mail_tokens (digest) {
        /// The SHA-256 of the token, hex.
        digest -> Text,
        /// The flow (`verify`, `email_change`, `email_revert`, `sign_in`, `password_reset`).
        flow -> Text,
        /// The account.
        user_id -> PortableUuid,
        /// The address the flow is about.
        email -> Text,
        /// When it was made (microseconds since 1970, UTC).
        created_at -> BigInt,
        /// When it stops being valid.
        expires_at -> BigInt,
        /// When it was used.
        used_at -> Nullable<BigInt>,
    }
}

use crate::users::addresses::crudforge_addresses as ad;
use crudforge_mail_tokens as mt;

/// What a link is for; each endpoint takes only its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Verifies an account's address.
    Verify,
    /// Confirms a new address (sent to it).
    EmailChange,
    /// Puts the old address back (sent to it after a change).
    EmailRevert,
    /// Signs in without a password.
    SignIn,
    /// Sets a new password (a forgotten one).
    Reset,
}

impl Flow {
    /// Its stored name, which is also its templates' name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Flow::Verify => "verify",
            Flow::EmailChange => "email_change",
            Flow::EmailRevert => "email_revert",
            Flow::SignIn => "sign_in",
            Flow::Reset => "password_reset",
        }
    }
}

/// Stores a new token of `flow` for `user` about `email`, valid for `seconds`, on `conn` (in
/// the caller's transaction); the token itself, which only the mail carries.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn issue(
    conn: &mut Conn,
    flow: Flow,
    user: Uuid,
    email: &str,
    seconds: u64,
) -> Result<String, Error> {
    let token = crate::seal::random_token()?;
    let now = crate::jobs::now_micros();
    let life = i64::try_from(seconds.saturating_mul(1_000_000)).unwrap_or(i64::MAX / 2);
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::insert_into(mt::table).values((
                mt::digest.eq(digest_hex(&token)),
                mt::flow.eq(flow.as_str()),
                mt::user_id.eq(Portable(user)),
                mt::email.eq(email),
                mt::created_at.eq(now),
                mt::expires_at.eq(now.saturating_add(life)),
            )),
            c,
        )
        .await
    })?;
    Ok(token)
}

/// Uses `token` of `flow`: the one statement that marks it used, if it is of that flow,
/// unused and unexpired; its account and address. `None` for anything else (unknown, used,
/// expired, another flow's), all alike.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn take(
    conn: &mut Conn,
    flow: Flow,
    token: &str,
) -> Result<Option<(Uuid, String)>, Error> {
    let now = crate::jobs::now_micros();
    let digest = digest_hex(token.trim());
    let row: Option<(Uuid, String)> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            diesel::update(
                mt::table
                    .filter(mt::digest.eq(digest.clone()))
                    .filter(mt::flow.eq(flow.as_str()))
                    .filter(mt::used_at.is_null())
                    .filter(mt::expires_at.gt(now)),
            )
            .set(mt::used_at.eq(Some(now)))
            .returning((mt::user_id, mt::email)),
            c,
        )
        .await
        .optional()
    })?;
    Ok(row)
}

/// Ends the unused tokens of `flows` for `user` (a new link replaces the old ones; a changed
/// address ends the links about the old one).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn end_unused(conn: &mut Conn, user: Uuid, flows: &[Flow]) -> Result<(), Error> {
    let now = crate::jobs::now_micros();
    let names: Vec<&str> = flows.iter().map(|f| f.as_str()).collect();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(
                mt::table
                    .filter(mt::user_id.eq(Portable(user)))
                    .filter(mt::flow.eq_any(names.clone()))
                    .filter(mt::used_at.is_null()),
            )
            .set(mt::used_at.eq(Some(now))),
            c,
        )
        .await
    })?;
    Ok(())
}

/// Marks `user`'s recorded address verified, if it is still `email`; whether it was.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn verify(conn: &mut Conn, user: Uuid, email: &str) -> Result<bool, Error> {
    let now = crate::jobs::now_micros();
    let n = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(
                ad::table
                    .filter(ad::user_id.eq(Portable(user)))
                    .filter(ad::email.eq(email)),
            )
            .set(ad::verified_at.eq(Some(now))),
            c,
        )
        .await
    })?;
    Ok(n > 0)
}

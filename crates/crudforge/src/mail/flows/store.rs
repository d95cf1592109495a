//! The flows' rows: the links' tokens (kept as digests, used once) and the accounts'
//! addresses with whether they are verified (the library's migration `crudforge_mail_flows`).

use crate::db::functions::digest_hex;
use crate::db::Conn;
use crate::error::Error;
use crate::sql_types::Portable;
use crate::with_conn;
use base64::Engine as _;
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

diesel::table! {
    use diesel::sql_types::*;
    use crate::sql_types::*;

    /// The addresses of accounts made while verification was on.
    crudforge_addresses (user_id) {
        /// The account.
        user_id -> PortableUuid,
        /// Its address when it was recorded.
        email -> Text,
        /// When it was verified (`None`: not yet).
        verified_at -> Nullable<BigInt>,
    }
}

use crudforge_addresses as ad;
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

/// A new token of 256 random bits, as it goes in a link (URL-safe base64, 43 characters).
fn new_token() -> Result<String, Error> {
    let mut raw = [0_u8; 32];
    getrandom::fill(&mut raw).map_err(|e| Error::Internal(format!("randomness: {e}")))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw))
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
    let token = new_token()?;
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

/// Records `user`'s address `email`, verified now or not yet (replacing what was recorded).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn record(
    conn: &mut Conn,
    user: Uuid,
    email: &str,
    verified: bool,
) -> Result<(), Error> {
    let at = verified.then(crate::jobs::now_micros);
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::insert_into(ad::table)
                .values((
                    ad::user_id.eq(Portable(user)),
                    ad::email.eq(email),
                    ad::verified_at.eq(at),
                ))
                .on_conflict(ad::user_id)
                .do_update()
                .set((ad::email.eq(email), ad::verified_at.eq(at))),
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

/// Whether `user`'s address is verified: `None` for an account without a record (made while
/// verification was off), else whether the recorded address is verified and still its own.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn verified(
    conn: &mut Conn,
    user: Uuid,
    current: &str,
) -> Result<Option<bool>, Error> {
    let row: Option<(String, Option<i64>)> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            ad::table
                .filter(ad::user_id.eq(Portable(user)))
                .select((ad::email, ad::verified_at)),
            c,
        )
        .await
        .optional()
    })?;
    Ok(row.map(|(email, at)| at.is_some() && email == current))
}

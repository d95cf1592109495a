//! Stored tokens and sessions: API keys and one-time tokens, refresh records and their
//! families, the per-user token version that ends sessions, and the row lock a refresh or a
//! revocation takes first.

use crate::auth::Claims;
use crate::db::functions::digest_hex;
use crate::db::tx;
use crate::db::{Conn, Database};
use crate::error::Error;
use crate::schema::{tokens, users};
use crate::sql_types::Portable;
use crate::with_conn;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use subtle::ConstantTimeEq;
use uuid::Uuid;

/// What a Token record is; each endpoint accepts only its own kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenRecord {
    /// An API key, accepted by token login.
    ApiKey,
    /// The id of a refresh token, accepted by refresh.
    Refresh,
    /// The id of a used single-use recovery token.
    Recovery,
}

impl TokenRecord {
    /// The stored `kind`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TokenRecord::ApiKey => "api_key",
            TokenRecord::Refresh => "refresh",
            TokenRecord::Recovery => "recovery",
        }
    }
}

/// The shortest API key accepted: 32 characters (for example 24 random bytes in base64).
pub const MIN_API_KEY_LEN: usize = 32;

/// Stores a Token record of `kind`. The database keeps only the SHA-256 of `value` (a trigger
/// replaces it, whatever path writes it), so a copy of the table holds no usable secret.
///
/// # Errors
///
/// Database errors (409 for a duplicate value or an unknown user).
pub async fn store_token(
    db: &Database,
    kind: TokenRecord,
    user_id: Uuid,
    value: &str,
    description: Option<&str>,
    expires_at: Option<DateTime<Utc>>,
) -> Result<Uuid, Error> {
    let mut conn = db.get().await?;
    store_token_in(&mut conn, kind, user_id, value, description, expires_at).await
}

/// [`store_token`] on `conn` (inside the caller's transaction, if any). A refresh record
/// stored this way starts a refresh-token family of its own (`tokens.family_id`, see
/// [auth.md](https://github.com/crudforge/crudforge/blob/main/docs/auth.md)).
///
/// # Errors
///
/// Database errors (409 for a duplicate value or an unknown user).
pub(crate) async fn store_token_in(
    conn: &mut Conn,
    kind: TokenRecord,
    user_id: Uuid,
    value: &str,
    description: Option<&str>,
    expires_at: Option<DateTime<Utc>>,
) -> Result<Uuid, Error> {
    insert_token(conn, kind, user_id, value, description, expires_at, None).await
}

/// Stores a refresh token's id in the refresh-token family `family` (see
/// [`refresh_record_in`]).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn store_refresh_in(
    conn: &mut Conn,
    user_id: Uuid,
    jti: &str,
    expires_at: Option<DateTime<Utc>>,
    family: Uuid,
) -> Result<Uuid, Error> {
    insert_token(
        conn,
        TokenRecord::Refresh,
        user_id,
        jti,
        Some("refresh token"),
        expires_at,
        Some(family),
    )
    .await
}

/// Inserts a Token record. A refresh record without a family starts its own (its id).
async fn insert_token(
    conn: &mut Conn,
    kind: TokenRecord,
    user_id: Uuid,
    value: &str,
    description: Option<&str>,
    expires_at: Option<DateTime<Utc>>,
    family: Option<Uuid>,
) -> Result<Uuid, Error> {
    let now = crate::timestamp::now();
    let id = Uuid::new_v4();
    let family = match kind {
        TokenRecord::Refresh => Some(family.unwrap_or(id)),
        TokenRecord::ApiKey | TokenRecord::Recovery => None,
    };
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::insert_into(tokens::table).values((
                tokens::id.eq(Portable(id)),
                tokens::created_at.eq(Portable(now)),
                tokens::updated_at.eq(Portable(now)),
                tokens::user_id.eq(Portable(user_id)),
                tokens::token.eq(value.to_owned()),
                tokens::description.eq(description.map(str::to_owned)),
                tokens::expires_at.eq(Portable(expires_at)),
                tokens::revoked.eq(false),
                tokens::kind.eq(kind.as_str()),
                tokens::family_id.eq(Portable(family)),
            )),
            c,
        )
        .await
    })?;
    Ok(id)
}

/// A stored refresh token as [`refresh_record_in`] finds it, usable or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RefreshRecord {
    /// The record's id.
    pub(crate) id: Uuid,
    /// Its owner.
    pub(crate) user_id: Uuid,
    /// Revoked: used at `refresh/`, logged out, or ended with the user's sessions.
    pub(crate) revoked: bool,
    /// Past its expiry.
    pub(crate) expired: bool,
    /// Its family: every refresh token rotated from one login's carries the login's family
    /// id, so that the reuse of a rotated one can revoke them all (see [`revoke_family_in`]).
    pub(crate) family: Uuid,
}

/// The stored refresh token whose id (a refresh JWT's `jti`) is `jti`, whether usable or not.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn refresh_record_in(
    conn: &mut Conn,
    jti: &str,
) -> Result<Option<RefreshRecord>, Error> {
    type Row = (
        Uuid,
        Uuid,
        String,
        bool,
        Option<DateTime<Utc>>,
        Option<Uuid>,
    );
    let digest = digest_hex(jti);
    let row: Option<Row> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            tokens::table
                .filter(tokens::token.eq(digest.clone()))
                .filter(tokens::kind.eq(TokenRecord::Refresh.as_str()))
                .select((
                    tokens::id,
                    tokens::user_id,
                    tokens::token,
                    tokens::revoked,
                    tokens::expires_at,
                    tokens::family_id,
                )),
            c,
        )
        .await
        .optional()
    })?;
    let now = crate::timestamp::now();
    // The index found the row; compare the digests once more in constant time.
    Ok(row
        .filter(|(_, _, stored, ..)| bool::from(stored.as_bytes().ct_eq(digest.as_bytes())))
        .map(
            |(id, user_id, _, revoked, expires_at, family)| RefreshRecord {
                id,
                user_id,
                revoked,
                expired: expires_at.is_some_and(|e| e <= now),
                family: family.unwrap_or(id),
            },
        ))
}

/// The assignments that revoke a Token record at `now` (every revoking `UPDATE` sets the same
/// three columns).
macro_rules! revoked_at {
    ($now:expr) => {
        (
            tokens::revoked.eq(true),
            tokens::revoked_at.eq(Portable(Some($now))),
            tokens::updated_at.eq(Portable($now)),
        )
    };
}

/// Revokes the usable refresh tokens of `user_id` in `family`; returns how many.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn revoke_family_in(
    conn: &mut Conn,
    user_id: Uuid,
    family: Uuid,
) -> Result<usize, Error> {
    let now = crate::timestamp::now();
    Ok(with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(
                tokens::table
                    .filter(tokens::family_id.eq(Portable(family)))
                    .filter(tokens::user_id.eq(Portable(user_id)))
                    .filter(tokens::kind.eq(TokenRecord::Refresh.as_str()))
                    .filter(tokens::revoked.eq(false)),
            )
            .set(revoked_at!(now)),
            c,
        )
        .await
    })?)
}

/// Revokes the Token record with this id; false when it was not usable any more.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn revoke_record_in(conn: &mut Conn, id: Uuid) -> Result<bool, Error> {
    let now = crate::timestamp::now();
    let n = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(
                tokens::table
                    .filter(tokens::id.eq(Portable(id)))
                    .filter(tokens::revoked.eq(false)),
            )
            .set(revoked_at!(now)),
            c,
        )
        .await
    })?;
    Ok(n > 0)
}

/// The credential version and enabled flag of a user (`None` for an unknown user), read on
/// `conn` inside the caller's write transaction with the user's row locked until it ends:
/// `SELECT ... FOR UPDATE` on PostgreSQL; on SQLite the transaction's write lock (taken at
/// `BEGIN IMMEDIATE`, see [`tx::begin`]) already keeps every other writer out. A password
/// change, a disable or a logout everywhere updates that row, so it runs either wholly before
/// or wholly after the caller's transaction.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn lock_user_in(
    conn: &mut Conn,
    user_id: Uuid,
) -> Result<Option<(i64, bool)>, Error> {
    let query = users::table
        .filter(users::id.eq(Portable(user_id)))
        .select((users::token_version, users::is_enabled));
    let row = crate::__by_backend!(*conn, |c| sqlite => {
        diesel_async::RunQueryDsl::get_result(query, c).await.optional()
    }, postgres => {
        diesel_async::RunQueryDsl::get_result(query.for_update(), c).await.optional()
    })?;
    Ok(row)
}

/// Whether a verified token (see [`Tokens::verify`](crate::auth::Tokens::verify)) is
/// still current for its user: the user exists, is enabled, and its credential version is the
/// one the token was issued at ([`Claims::ver`]). A password change, a reset, a disable and a
/// logout everywhere raise the version, so each ends every token issued before it. Handlers
/// that accept a token of their own kind (a recovery token, say) call this before acting on
/// it; issue such tokens at the user's current version ([`token_version`] and
/// [`Tokens::issue_versioned`](crate::auth::Tokens::issue_versioned)).
///
/// Call it on `conn` inside the write transaction
/// ([`Conn::begin`](crate::db::Conn::begin)) that does what the token allows: the user's row
/// stays locked until that transaction ends (on PostgreSQL `SELECT ... FOR UPDATE`; SQLite's
/// write transactions already run one at a time), so a concurrent credential change either
/// commits first, and the token is refused, or waits until the transaction has committed.
///
/// # Errors
///
/// 500 when `conn` is not inside a transaction; database errors.
pub async fn claims_current_in(conn: &mut Conn, claims: &Claims) -> Result<bool, Error> {
    if !tx::in_transaction(conn) {
        return Err(Error::Internal(
            "claims_current_in needs a write transaction on its connection".into(),
        ));
    }
    Ok(lock_user_in(conn, claims.sub)
        .await?
        .is_some_and(|(version, enabled)| enabled && claims.ver.unwrap_or(0) == version))
}

/// The owner of a usable (not revoked, not expired) Token record of `kind` with this value
/// (an API key: [`TokenRecord::ApiKey`]). An API key limited to scopes is not found here: an
/// access token made for its owner alone would have the owner's full access. To log in with
/// a key, use [`exchange_api_key`](super::exchange_api_key), which carries its scopes, bounds
/// the token by its expiry and records its use.
///
/// # Errors
///
/// Database errors.
pub async fn token_owner(
    db: &Database,
    kind: TokenRecord,
    value: &str,
) -> Result<Option<Uuid>, Error> {
    let mut conn = db.get().await?;
    let now = Portable(crate::timestamp::now());
    let digest = digest_hex(value);
    let row: Option<(Uuid, String)> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            tokens::table
                .filter(tokens::token.eq(digest.clone()))
                .filter(tokens::kind.eq(kind.as_str()))
                .filter(tokens::revoked.eq(false))
                .filter(tokens::expires_at.is_null().or(tokens::expires_at.gt(now)))
                .filter(tokens::scopes.is_null())
                .select((tokens::user_id, tokens::token)),
            c,
        )
        .await
        .optional()
    })?;
    // The index found the row; compare the digests once more in constant time.
    Ok(row
        .filter(|(_, stored)| bool::from(stored.as_bytes().ct_eq(digest.as_bytes())))
        .map(|(owner, _)| owner))
}

/// A usable API key as [`usable_key`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyRecord {
    /// The record's id.
    pub(crate) id: Uuid,
    /// Its owner.
    pub(crate) user_id: Uuid,
    /// When it stops working.
    pub(crate) expires_at: Option<DateTime<Utc>>,
    /// What it is limited to (`None`: its owner's full access).
    pub(crate) scopes: Option<String>,
}

/// The usable (not revoked, not expired) API key whose value is `value`.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn usable_key(db: &Database, value: &str) -> Result<Option<KeyRecord>, Error> {
    type Row = (Uuid, Uuid, String, Option<DateTime<Utc>>, Option<String>);
    let mut conn = db.get().await?;
    let now = Portable(crate::timestamp::now());
    let digest = digest_hex(value);
    let row: Option<Row> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            tokens::table
                .filter(tokens::token.eq(digest.clone()))
                .filter(tokens::kind.eq(TokenRecord::ApiKey.as_str()))
                .filter(tokens::revoked.eq(false))
                .filter(tokens::expires_at.is_null().or(tokens::expires_at.gt(now)))
                .select((
                    tokens::id,
                    tokens::user_id,
                    tokens::token,
                    tokens::expires_at,
                    tokens::scopes,
                )),
            c,
        )
        .await
        .optional()
    })?;
    // The index found the row; compare the digests once more in constant time.
    Ok(row
        .filter(|(_, _, stored, ..)| bool::from(stored.as_bytes().ct_eq(digest.as_bytes())))
        .map(|(id, user_id, _, expires_at, scopes)| KeyRecord {
            id,
            user_id,
            expires_at,
            scopes,
        }))
}

/// Records that the API key `id` was exchanged now (`last_used_at`), if it is still usable;
/// false when it was revoked or expired meanwhile. Its `updated_at` stays: a use is not a
/// change of the record.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn mark_key_used(db: &Database, id: Uuid) -> Result<bool, Error> {
    let mut conn = db.get().await?;
    let now = crate::timestamp::now();
    let n = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(
                tokens::table
                    .filter(tokens::id.eq(Portable(id)))
                    .filter(tokens::kind.eq(TokenRecord::ApiKey.as_str()))
                    .filter(tokens::revoked.eq(false))
                    .filter(
                        tokens::expires_at
                            .is_null()
                            .or(tokens::expires_at.gt(Portable(now))),
                    ),
            )
            .set(tokens::last_used_at.eq(Portable(Some(now)))),
            c,
        )
        .await
    })?;
    Ok(n > 0)
}

/// The credential version of a user (0 for an unknown user); access tokens carry it.
///
/// # Errors
///
/// Database errors.
pub async fn token_version(db: &Database, user_id: Uuid) -> Result<i64, Error> {
    let mut conn = db.get().await?;
    token_version_in(&mut conn, user_id).await
}

/// [`token_version`] on `conn`.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn token_version_in(conn: &mut Conn, user_id: Uuid) -> Result<i64, Error> {
    let v: Option<i64> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            users::table
                .filter(users::id.eq(Portable(user_id)))
                .select(users::token_version),
            c,
        )
        .await
        .optional()
    })?;
    Ok(v.unwrap_or(0))
}

/// Ends every session of a user: raises the credential version (older access tokens stop
/// working) and revokes every refresh token.
///
/// # Errors
///
/// Database errors.
pub async fn end_sessions(db: &Database, user_id: Uuid) -> Result<(), Error> {
    let mut conn = db.get().await?;
    end_sessions_in(&mut conn, user_id).await
}

/// [`end_sessions`] on `conn` (inside the caller's transaction, so that the sessions end
/// with the write that ends them, a second factor enrolled or removed).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn end_sessions_in(conn: &mut Conn, user_id: Uuid) -> Result<(), Error> {
    let now = crate::timestamp::now();
    // One statement: a database trigger revokes the refresh tokens when the version rises.
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(users::table.filter(users::id.eq(Portable(user_id)))).set((
                users::token_version.eq(users::token_version + 1),
                users::updated_at.eq(Portable(now)),
            )),
            c,
        )
        .await
    })?;
    Ok(())
}

/// Revokes the Token record with this value; false when none was usable.
///
/// # Errors
///
/// Database errors.
pub async fn revoke_token(db: &Database, value: &str) -> Result<bool, Error> {
    let mut conn = db.get().await?;
    revoke_token_in(&mut conn, value).await
}

/// [`revoke_token`] on `conn` (inside the caller's transaction, if any).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn revoke_token_in(conn: &mut Conn, value: &str) -> Result<bool, Error> {
    let now = crate::timestamp::now();
    let n = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(
                tokens::table
                    .filter(tokens::token.eq(digest_hex(value)))
                    .filter(tokens::revoked.eq(false)),
            )
            .set(revoked_at!(now)),
            c,
        )
        .await
    })?;
    Ok(n > 0)
}

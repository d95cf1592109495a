//! The second factors' rows (the library's migration `crudforge_factors`): each account's
//! factors with their sealed secrets and the last time step accepted, its recovery codes by
//! digest, and when a factor was first asked of it.

use crate::db::functions::digest_hex;
use crate::db::Conn;
use crate::error::Error;
use crate::schema::{domains, user_roles};
use crate::sql_types::Portable;
use crate::with_conn;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crate::sql_types::*;

    /// The accounts' second factors.
    crudforge_factors (id) {
        /// Its id.
        id -> PortableUuid,
        /// The account.
        user_id -> PortableUuid,
        /// `totp` or `passkey`.
        kind -> Text,
        /// The owner's name for it (`phone`).
        label -> Nullable<Text>,
        /// A TOTP secret, sealed; a passkey's public key and counter (JSON), or the state of
        /// its registration while unconfirmed.
        secret -> Text,
        /// The last time step a code was accepted at.
        last_step -> BigInt,
        /// When it was added (microseconds since 1970, UTC).
        created_at -> BigInt,
        /// When a first code confirmed it; `NULL` until then.
        confirmed_at -> Nullable<BigInt>,
        /// When a code of it was last accepted.
        last_used_at -> Nullable<BigInt>,
        /// A passkey's credential id (base64url), unique.
        credential_id -> Nullable<Text>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::sql_types::*;

    /// The accounts' recovery codes, by digest.
    crudforge_recovery_codes (user_id, digest) {
        /// The account.
        user_id -> PortableUuid,
        /// The SHA-256 of the code, in hex.
        digest -> Text,
        /// When it was used; `NULL` while it may be.
        used_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::sql_types::*;

    /// When a second factor was first asked of an account without one.
    crudforge_factor_grace (user_id) {
        /// The account.
        user_id -> PortableUuid,
        /// When (microseconds since 1970, UTC).
        since -> BigInt,
    }
}

use crudforge_factor_grace as fg;
use crudforge_factors as f;
use crudforge_recovery_codes as rc;

/// Now, in microseconds since 1970 (UTC).
pub(super) fn now() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

/// A time in microseconds since 1970 as a date.
fn time(us: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_micros(us).unwrap_or_default()
}

/// One factor of an account, as `me/factors/` lists it.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct Listed {
    /// Its id.
    pub(crate) id: Uuid,
    /// `totp` or `passkey`.
    pub(crate) kind: String,
    /// The name given to it.
    pub(crate) label: Option<String>,
    /// Whether a first code confirmed it (only a confirmed factor is asked for).
    pub(crate) confirmed: bool,
    /// When it was added.
    pub(crate) created_at: chrono::DateTime<chrono::Utc>,
    /// When a code of it was last accepted.
    pub(crate) last_used_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// A factor's secret as stored, and what a check of it needs.
#[derive(Debug, Clone)]
pub(super) struct Stored {
    /// Its id.
    pub(super) id: Uuid,
    /// `totp` or `passkey`.
    #[cfg_attr(not(feature = "passkeys"), allow(dead_code))]
    pub(super) kind: String,
    /// The sealed secret (a passkey's JSON).
    pub(super) secret: String,
    /// Whether it is confirmed.
    pub(super) confirmed: bool,
}

/// Adds an unconfirmed factor of `kind` to `user` with its sealed secret; any other
/// unconfirmed factor of the account goes (one enrollment at a time).
///
/// # Errors
///
/// Database errors.
pub(super) async fn add(
    conn: &mut Conn,
    id: Uuid,
    user: Uuid,
    kind: &str,
    label: Option<&str>,
    sealed: &str,
) -> Result<(), Error> {
    let at = now();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::delete(
                f::table
                    .filter(f::user_id.eq(Portable(user)))
                    .filter(f::confirmed_at.is_null()),
            ),
            c,
        )
        .await?;
        diesel_async::RunQueryDsl::execute(
            diesel::insert_into(f::table).values((
                f::id.eq(Portable(id)),
                f::user_id.eq(Portable(user)),
                f::kind.eq(kind),
                f::label.eq(label),
                f::secret.eq(sealed),
                f::last_step.eq(0_i64),
                f::created_at.eq(at),
            )),
            c,
        )
        .await
    })?;
    Ok(())
}

/// `user`'s factor `id`.
///
/// # Errors
///
/// Database errors.
pub(super) async fn factor(conn: &mut Conn, user: Uuid, id: Uuid) -> Result<Option<Stored>, Error> {
    let row: Option<(Uuid, String, String, Option<i64>)> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            f::table
                .filter(f::id.eq(Portable(id)))
                .filter(f::user_id.eq(Portable(user)))
                .select((f::id, f::kind, f::secret, f::confirmed_at)),
            c,
        )
        .await
        .optional()
    })?;
    Ok(row.map(|(id, kind, secret, confirmed)| Stored {
        id,
        kind,
        secret,
        confirmed: confirmed.is_some(),
    }))
}

/// `user`'s confirmed factors of `kind`.
///
/// # Errors
///
/// Database errors.
pub(super) async fn confirmed(
    conn: &mut Conn,
    user: Uuid,
    kind: &str,
) -> Result<Vec<Stored>, Error> {
    let rows: Vec<(Uuid, String)> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::load(
            f::table
                .filter(f::user_id.eq(Portable(user)))
                .filter(f::kind.eq(kind))
                .filter(f::confirmed_at.is_not_null())
                .order(f::created_at)
                .select((f::id, f::secret)),
            c,
        )
        .await
    })?;
    Ok(rows
        .into_iter()
        .map(|(id, secret)| Stored {
            id,
            kind: kind.to_owned(),
            secret,
            confirmed: true,
        })
        .collect())
}

/// The kinds of `user`'s confirmed factors (`passkey`, `totp`), each once, sorted.
///
/// # Errors
///
/// Database errors.
pub(super) async fn kinds(conn: &mut Conn, user: Uuid) -> Result<Vec<String>, Error> {
    let kinds: Vec<String> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::load(
            f::table
                .filter(f::user_id.eq(Portable(user)))
                .filter(f::confirmed_at.is_not_null())
                .select(f::kind)
                .distinct()
                .order(f::kind),
            c,
        )
        .await
    })?;
    Ok(kinds)
}

/// The confirmed passkey whose credential id is `credential` (base64url), and its account.
///
/// # Errors
///
/// Database errors.
#[cfg(feature = "passkeys")]
pub(super) async fn by_credential(
    conn: &mut Conn,
    credential: &str,
) -> Result<Option<(Uuid, Stored)>, Error> {
    let row: Option<(Uuid, Uuid, String)> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            f::table
                .filter(f::credential_id.eq(credential))
                .filter(f::kind.eq("passkey"))
                .filter(f::confirmed_at.is_not_null())
                .select((f::id, f::user_id, f::secret)),
            c,
        )
        .await
        .optional()
    })?;
    Ok(row.map(|(id, user, secret)| {
        (
            user,
            Stored {
                id,
                kind: "passkey".to_owned(),
                secret,
                confirmed: true,
            },
        )
    }))
}

/// Whether some factor already holds the passkey credential `credential` (base64url).
///
/// # Errors
///
/// Database errors.
#[cfg(feature = "passkeys")]
pub(super) async fn credential_taken(conn: &mut Conn, credential: &str) -> Result<bool, Error> {
    let n: i64 = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            f::table.filter(f::credential_id.eq(credential)).count(),
            c,
        )
        .await
    })?;
    Ok(n > 0)
}

/// Stores the passkey `secret` (its JSON) of factor `id` with its credential id, and marks
/// it confirmed.
///
/// # Errors
///
/// Database errors.
#[cfg(feature = "passkeys")]
pub(super) async fn confirm_passkey(
    conn: &mut Conn,
    id: Uuid,
    credential: &str,
    secret: &str,
) -> Result<(), Error> {
    let at = now();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(f::table.filter(f::id.eq(Portable(id)))).set((
                f::secret.eq(secret),
                f::credential_id.eq(Some(credential)),
                f::confirmed_at.eq(Some(at)),
            )),
            c,
        )
        .await
    })?;
    Ok(())
}

/// Stores the passkey `secret` (its JSON, with the counter the last use moved) of factor
/// `id`, used now.
///
/// # Errors
///
/// Database errors.
#[cfg(feature = "passkeys")]
pub(super) async fn used_passkey(conn: &mut Conn, id: Uuid, secret: &str) -> Result<(), Error> {
    let at = now();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(f::table.filter(f::id.eq(Portable(id))))
                .set((f::secret.eq(secret), f::last_used_at.eq(Some(at)))),
            c,
        )
        .await
    })?;
    Ok(())
}

/// How many confirmed factors `user` has.
///
/// # Errors
///
/// Database errors.
pub(super) async fn count_confirmed(conn: &mut Conn, user: Uuid) -> Result<i64, Error> {
    let n: i64 = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            f::table
                .filter(f::user_id.eq(Portable(user)))
                .filter(f::confirmed_at.is_not_null())
                .count(),
            c,
        )
        .await
    })?;
    Ok(n)
}

/// Takes the time step `step` of factor `id`: false when a code of that step or a later one
/// was already accepted (a code is good once).
///
/// # Errors
///
/// Database errors.
pub(super) async fn take_step(conn: &mut Conn, id: Uuid, step: u64) -> Result<bool, Error> {
    let step = i64::try_from(step).unwrap_or(i64::MAX);
    let at = now();
    let n = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(
                f::table
                    .filter(f::id.eq(Portable(id)))
                    .filter(f::last_step.lt(step)),
            )
            .set((f::last_step.eq(step), f::last_used_at.eq(Some(at)))),
            c,
        )
        .await
    })?;
    Ok(n == 1)
}

/// Marks factor `id` confirmed (a first code proved the authenticator holds its secret).
///
/// # Errors
///
/// Database errors.
pub(super) async fn confirm(conn: &mut Conn, id: Uuid) -> Result<(), Error> {
    let at = now();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(f::table.filter(f::id.eq(Portable(id))))
                .set(f::confirmed_at.eq(Some(at))),
            c,
        )
        .await
    })?;
    Ok(())
}

/// Removes `user`'s factor `id`: false when there was none.
///
/// # Errors
///
/// Database errors.
pub(super) async fn remove(conn: &mut Conn, user: Uuid, id: Uuid) -> Result<bool, Error> {
    let n = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::delete(
                f::table
                    .filter(f::id.eq(Portable(id)))
                    .filter(f::user_id.eq(Portable(user))),
            ),
            c,
        )
        .await
    })?;
    Ok(n == 1)
}

/// `user`'s factors, oldest first.
///
/// # Errors
///
/// Database errors.
pub(super) async fn list(conn: &mut Conn, user: Uuid) -> Result<Vec<Listed>, Error> {
    type Row = (Uuid, String, Option<String>, i64, Option<i64>, Option<i64>);
    let rows: Vec<Row> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::load(
            f::table
                .filter(f::user_id.eq(Portable(user)))
                .order(f::created_at)
                .select((
                    f::id,
                    f::kind,
                    f::label,
                    f::created_at,
                    f::confirmed_at,
                    f::last_used_at,
                )),
            c,
        )
        .await
    })?;
    Ok(rows
        .into_iter()
        .map(|(id, kind, label, created, confirmed, used)| Listed {
            id,
            kind,
            label,
            confirmed: confirmed.is_some(),
            created_at: time(created),
            last_used_at: used.map(time),
        })
        .collect())
}

/// Replaces `user`'s recovery codes with `codes` (by digest).
///
/// # Errors
///
/// Database errors.
pub(super) async fn replace_codes(
    conn: &mut Conn,
    user: Uuid,
    codes: &[String],
) -> Result<(), Error> {
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::delete(rc::table.filter(rc::user_id.eq(Portable(user)))),
            c,
        )
        .await
    })?;
    // One row at a time: ten rows, and SQLite takes no batch through this connection.
    for code in codes {
        let digest = digest_hex(code);
        with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::execute(
                diesel::insert_into(rc::table).values((
                    rc::user_id.eq(Portable(user)),
                    rc::digest.eq(digest.clone()),
                )),
                c,
            )
            .await
        })?;
    }
    Ok(())
}

/// Removes `user`'s recovery codes (the last factor went).
///
/// # Errors
///
/// Database errors.
pub(super) async fn drop_codes(conn: &mut Conn, user: Uuid) -> Result<(), Error> {
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::delete(rc::table.filter(rc::user_id.eq(Portable(user)))),
            c,
        )
        .await
    })?;
    Ok(())
}

/// Uses `user`'s recovery code `code` (as normalized): false when it is not one of theirs or
/// was used.
///
/// # Errors
///
/// Database errors.
pub(super) async fn use_code(conn: &mut Conn, user: Uuid, code: &str) -> Result<bool, Error> {
    let digest = digest_hex(code);
    let at = now();
    let n = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(
                rc::table
                    .filter(rc::user_id.eq(Portable(user)))
                    .filter(rc::digest.eq(digest.clone()))
                    .filter(rc::used_at.is_null()),
            )
            .set(rc::used_at.eq(Some(at))),
            c,
        )
        .await
    })?;
    Ok(n == 1)
}

/// How many of `user`'s recovery codes are left.
///
/// # Errors
///
/// Database errors.
pub(super) async fn codes_left(conn: &mut Conn, user: Uuid) -> Result<i64, Error> {
    let n: i64 = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            rc::table
                .filter(rc::user_id.eq(Portable(user)))
                .filter(rc::used_at.is_null())
                .count(),
            c,
        )
        .await
    })?;
    Ok(n)
}

/// When a second factor was first asked of `user`, recorded now if it never was.
///
/// # Errors
///
/// Database errors.
pub(super) async fn asked_since(conn: &mut Conn, user: Uuid) -> Result<i64, Error> {
    let at = now();
    let since: i64 = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::insert_into(fg::table)
                .values((fg::user_id.eq(Portable(user)), fg::since.eq(at)))
                .on_conflict_do_nothing(),
            c,
        )
        .await?;
        diesel_async::RunQueryDsl::get_result(
            fg::table
                .filter(fg::user_id.eq(Portable(user)))
                .select(fg::since),
            c,
        )
        .await
    })?;
    Ok(since)
}

/// The names of the domains `user` holds a role in.
///
/// # Errors
///
/// Database errors.
pub(super) async fn domain_names(conn: &mut Conn, user: Uuid) -> Result<Vec<String>, Error> {
    let names: Vec<String> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::load(
            user_roles::table
                .inner_join(domains::table.on(user_roles::domain_id.eq(domains::id.nullable())))
                .filter(user_roles::user_id.eq(Portable(user)))
                .select(domains::name),
            c,
        )
        .await
    })?;
    Ok(names)
}

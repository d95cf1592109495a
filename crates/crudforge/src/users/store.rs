//! The user store: queries on the library's tables for passwords, accounts and roles (tokens
//! and sessions are in [`super::tokens`]).

use crate::auth::{hash_password, hash_password_for, PasswordPolicy};
use crate::db::{Conn, Database};
use crate::error::Error;
use crate::schema::{user_roles, users};
use crate::sql_types::Portable;
use crate::with_conn;
use diesel::prelude::*;
use uuid::Uuid;

pub(crate) async fn users_password(db: &Database, id: Uuid) -> Result<Option<String>, Error> {
    let mut conn = db.get().await?;
    Ok(with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            users::table
                .filter(users::id.eq(Portable(id)))
                .select(users::password),
            c,
        )
        .await
    })?)
}

/// Hashes and stores a new password for a user, checked against `policy` (pass
/// [`Config::password_policy`](crate::Config::password_policy); a bare cost means the default
/// minimum length). Every older session of the user ends.
///
/// # Errors
///
/// 422 for a password the policy refuses; 404 for an unknown user.
pub async fn set_password(
    db: &Database,
    user_id: Uuid,
    password: &str,
    policy: impl Into<PasswordPolicy>,
) -> Result<(), Error> {
    hash_and_set_password(db, user_id, "password", password.to_owned(), policy).await
}

/// Like [`set_password`], naming `field` in errors.
///
/// # Errors
///
/// 422 naming `field` for a password the policy refuses; 404 for an unknown user.
pub(crate) async fn hash_and_set_password(
    db: &Database,
    user_id: Uuid,
    field: &str,
    password: String,
    policy: impl Into<PasswordPolicy>,
) -> Result<(), Error> {
    let hash = hash_password_for(field, password, policy).await?;
    let mut conn = db.get().await?;
    set_password_hash_in(&mut conn, user_id, &hash).await
}

/// Stores an already hashed password on `conn` (inside the caller's transaction, if any).
/// Every older session of the user ends (a database trigger).
///
/// # Errors
///
/// 404 for an unknown user; database errors.
pub async fn set_password_hash_in(conn: &mut Conn, user_id: Uuid, hash: &str) -> Result<(), Error> {
    let n = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(users::table.filter(users::id.eq(Portable(user_id)))).set((
                users::password.eq(hash),
                users::updated_at.eq(Portable(crate::timestamp::now())),
            )),
            c,
        )
        .await
    })?;
    if n == 0 {
        return Err(Error::NotFound("No such user.".into()));
    }
    Ok(())
}

/// Replaces a user's stored hash by a new hash of the same password (made at a higher
/// cost), if the stored hash is still `old`. The write raises `password_rehashes`, which tells
/// the credentials trigger that the password itself did not change: the user's sessions
/// continue. False when the hash changed meanwhile (a password change won; nothing is written).
///
/// Only ever pass a hash of the password `old` was verified against: sessions survive it.
pub(crate) async fn store_rehash(
    db: &Database,
    user_id: Uuid,
    old: &str,
    new: &str,
) -> Result<bool, Error> {
    let mut conn = db.get().await?;
    let n = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(
                users::table
                    .filter(users::id.eq(Portable(user_id)))
                    .filter(users::password.eq(old.to_owned())),
            )
            .set((
                users::password.eq(Some(new.to_owned())),
                users::password_rehashes.eq(users::password_rehashes + 1),
            )),
            c,
        )
        .await
    })?;
    Ok(n > 0)
}

/// The id, password hash and enabled flag of the user with `email`, compared in its
/// [normalized](crate::auth::normalize_email) form (so case-insensitively, on both backends).
///
/// # Errors
///
/// Database errors.
pub async fn find_by_email(
    db: &Database,
    email: &str,
) -> Result<Option<(Uuid, Option<String>, bool)>, Error> {
    let mut conn = db.get().await?;
    // Stored addresses are normalized, so `lower()` leaves them as they are on both backends;
    // comparing through it uses the unique index on `lower(email)`.
    let email = crate::auth::normalize_email(email);
    let row = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            users::table
                .filter(crate::db::functions::lower_text(users::email).eq(email.clone()))
                .select((users::id, users::password, users::is_enabled)),
            c,
        )
        .await
        .optional()
    })?;
    Ok(row)
}

/// Creates a user in the `users` table with a bcrypt-hashed password checked against
/// `policy` (see [`set_password`]); the e-mail is stored [normalized](crate::auth::normalize_email).
/// Returns the user's id.
///
/// # Errors
///
/// 422 for a malformed e-mail or a password the policy refuses; 409 when the e-mail is taken.
pub async fn create_user(
    db: &Database,
    email: &str,
    password: &str,
    enabled: bool,
    policy: impl Into<PasswordPolicy>,
) -> Result<Uuid, Error> {
    let hash = new_user_hash(email, password, policy).await?;
    let mut conn = db.get().await?;
    create_user_in(&mut conn, email, Some(&hash), enabled).await
}

/// Checks a new user's e-mail and hashes its password (off the request threads), ready for
/// [`create_user_in`]; done before a transaction opens, so that no lock is held while hashing.
///
/// # Errors
///
/// 422 for a malformed e-mail or a password the policy refuses.
pub(crate) async fn new_user_hash(
    email: &str,
    password: &str,
    policy: impl Into<PasswordPolicy>,
) -> Result<String, Error> {
    crate::__private::check_email("email", &crate::auth::normalize_email(email))?;
    hash_password(password.to_owned(), policy).await
}

/// Inserts a user with an already hashed password (see [`new_user_hash`]), or none (an
/// account that signs in through a provider), on `conn`, which may be inside a transaction; the e-mail is stored [normalized](crate::auth::normalize_email).
/// Returns the user's id.
///
/// # Errors
///
/// 409 when the e-mail is taken; database errors.
pub(crate) async fn create_user_in(
    conn: &mut Conn,
    email: &str,
    hash: Option<&str>,
    enabled: bool,
) -> Result<Uuid, Error> {
    let now = crate::timestamp::now();
    let id = Uuid::new_v4();
    let email = crate::auth::normalize_email(email);
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::insert_into(users::table).values((
                users::id.eq(Portable(id)),
                users::created_at.eq(Portable(now)),
                users::updated_at.eq(Portable(now)),
                users::email.eq(email.clone()),
                users::password.eq(hash),
                users::is_enabled.eq(enabled),
            )),
            c,
        )
        .await
    })?;
    Ok(id)
}

/// Enables or disables a user.
///
/// # Errors
///
/// Database errors; 404 for an unknown user.
pub async fn set_enabled(db: &Database, user_id: Uuid, enabled: bool) -> Result<(), Error> {
    let mut conn = db.get().await?;
    let n = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(users::table.filter(users::id.eq(Portable(user_id)))).set((
                users::is_enabled.eq(enabled),
                users::updated_at.eq(Portable(crate::timestamp::now())),
            )),
            c,
        )
        .await
    })?;
    if n == 0 {
        return Err(Error::NotFound("No such user.".into()));
    }
    Ok(())
}

/// Grants a role to a user.
///
/// # Errors
///
/// Database errors (409 when the user does not exist or already holds the role).
pub async fn grant_role(
    db: &Database,
    user_id: Uuid,
    role: &str,
    domain_id: Option<Uuid>,
) -> Result<(), Error> {
    let mut conn = db.get().await?;
    grant_role_in(&mut conn, user_id, role, domain_id)
        .await
        .map(|_| ())
}

/// Grants a role to a user on `conn`, which may be inside a transaction; the id of the
/// grant's row.
///
/// # Errors
///
/// Database errors (409 when the user does not exist or already holds the role).
pub(crate) async fn grant_role_in(
    conn: &mut Conn,
    user_id: Uuid,
    role: &str,
    domain_id: Option<Uuid>,
) -> Result<Uuid, Error> {
    let now = crate::timestamp::now();
    let id = Uuid::new_v4();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::insert_into(user_roles::table).values((
                user_roles::id.eq(Portable(id)),
                user_roles::created_at.eq(Portable(now)),
                user_roles::updated_at.eq(Portable(now)),
                user_roles::user_id.eq(Portable(user_id)),
                user_roles::role.eq(role.to_owned()),
                user_roles::domain_id.eq(Portable(domain_id)),
            )),
            c,
        )
        .await
    })?;
    Ok(id)
}

//! The providers' rows (the library's migration `crudforge_identities`): the identities that
//! sign accounts in; and the password of an account a provider
//! takes over.

use crate::db::Conn;
use crate::error::Error;
use crate::schema::users;
use crate::sql_types::Portable;
use crate::with_conn;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crate::sql_types::*;

    /// The identities accounts sign in with.
    crudforge_identities (provider, subject) {
        /// The provider's name.
        provider -> Text,
        /// The provider's id of the person.
        subject -> Text,
        /// The account.
        user_id -> PortableUuid,
        /// The address the provider gave at the last sign-in.
        email -> Nullable<Text>,
        /// When it was linked (microseconds since 1970, UTC).
        created_at -> BigInt,
        /// When it last signed in.
        signed_in_at -> BigInt,
    }
}

use crudforge_identities as id;

/// Now, in microseconds since 1970 (UTC).
fn now() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

/// One identity of an account.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct Identity {
    /// The provider's name.
    pub(crate) provider: String,
    /// The provider's id of the person.
    pub(crate) subject: String,
    /// The address it gave at the last sign-in.
    pub(crate) email: Option<String>,
    /// When it was linked.
    pub(crate) linked_at: chrono::DateTime<chrono::Utc>,
    /// When it last signed in.
    pub(crate) signed_in_at: chrono::DateTime<chrono::Utc>,
}

/// The account the identity (`provider`, `subject`) signs in.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn owner(
    conn: &mut Conn,
    provider: &str,
    subject: &str,
) -> Result<Option<Uuid>, Error> {
    let found: Option<Uuid> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            id::table
                .filter(id::provider.eq(provider).and(id::subject.eq(subject)))
                .select(id::user_id),
            c,
        )
        .await
        .optional()
    })?;
    Ok(found)
}

/// Links the identity (`provider`, `subject`) to `user`, or notes its sign-in when it is.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn link(
    conn: &mut Conn,
    provider: &str,
    subject: &str,
    user: Uuid,
    email: Option<&str>,
) -> Result<(), Error> {
    let at = now();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::insert_into(id::table)
                .values((
                    id::provider.eq(provider),
                    id::subject.eq(subject),
                    id::user_id.eq(Portable(user)),
                    id::email.eq(email),
                    id::created_at.eq(at),
                    id::signed_in_at.eq(at),
                ))
                .on_conflict((id::provider, id::subject))
                .do_update()
                .set((id::email.eq(email), id::signed_in_at.eq(at))),
            c,
        )
        .await
    })?;
    Ok(())
}

/// `user`'s identities.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn identities(conn: &mut Conn, user: Uuid) -> Result<Vec<Identity>, Error> {
    type Row = (String, String, Option<String>, i64, i64);
    let rows: Vec<Row> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::load(
            id::table
                .filter(id::user_id.eq(Portable(user)))
                .order((id::provider, id::subject))
                .select((
                    id::provider,
                    id::subject,
                    id::email,
                    id::created_at,
                    id::signed_in_at,
                )),
            c,
        )
        .await
    })?;
    let time = |us: i64| chrono::DateTime::from_timestamp_micros(us).unwrap_or_default();
    Ok(rows
        .into_iter()
        .map(|(provider, subject, email, linked, signed)| Identity {
            provider,
            subject,
            email,
            linked_at: time(linked),
            signed_in_at: time(signed),
        })
        .collect())
}

/// Removes `user`'s identities at `provider`: how many.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn unlink(conn: &mut Conn, user: Uuid, provider: &str) -> Result<u64, Error> {
    let n = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::delete(
                id::table.filter(
                    id::user_id
                        .eq(Portable(user))
                        .and(id::provider.eq(provider)),
                ),
            ),
            c,
        )
        .await
    })?;
    Ok(n as u64)
}

/// Whether `user` has a password.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn has_password(conn: &mut Conn, user: Uuid) -> Result<bool, Error> {
    let password: Option<Option<String>> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            users::table
                .filter(users::id.eq(Portable(user)))
                .select(users::password),
            c,
        )
        .await
        .optional()
    })?;
    Ok(password.flatten().is_some())
}

/// Clears `user`'s password and ends every session of it (its credential version rises, so
/// its tokens stop working and a trigger revokes its refresh tokens).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn clear_password(conn: &mut Conn, user: Uuid) -> Result<(), Error> {
    let at = crate::timestamp::now();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(users::table.filter(users::id.eq(Portable(user)))).set((
                users::password.eq(None::<String>),
                users::token_version.eq(users::token_version + 1),
                users::updated_at.eq(Portable(at)),
            )),
            c,
        )
        .await
    })?;
    Ok(())
}

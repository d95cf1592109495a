//! The accounts' recorded addresses and whether each was verified (the library's table
//! `crudforge_addresses`), which the mail flows (a mailed link proves an address) and the
//! sign-in providers (a provider vouches for one) both write and read.

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

    /// The addresses of accounts, recorded with whether they are verified.
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

/// Records `user`'s address `email`, verified now or not yet (replacing what was recorded).
///
/// # Errors
///
/// Database errors.
#[allow(
    dead_code,
    reason = "a door of the seam: a build without the mail or providers feature leaves it unused"
)]
pub(crate) async fn record(
    conn: &mut Conn,
    user: Uuid,
    email: &str,
    verified: bool,
) -> Result<(), Error> {
    let at = verified.then(|| chrono::Utc::now().timestamp_micros());
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

/// An account's address now, if the account exists.
///
/// # Errors
///
/// Database errors.
#[allow(
    dead_code,
    reason = "a door of the seam: a build without the mail or providers feature leaves it unused"
)]
pub(crate) async fn email_of(conn: &mut Conn, user: Uuid) -> Result<Option<String>, Error> {
    Ok(with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            users::table
                .filter(users::id.eq(Portable(user)))
                .select(users::email),
            c,
        )
        .await
        .optional()
    })?)
}

/// Whether `user`'s address is verified: `None` for an account without a record (made while
/// nothing recorded addresses), else whether the address it has now is the one recorded and
/// that one was verified.
///
/// # Errors
///
/// Database errors.
#[allow(
    dead_code,
    reason = "a door of the seam: a build without the mail or providers feature leaves it unused"
)]
pub(crate) async fn verified(conn: &mut Conn, user: Uuid) -> Result<Option<bool>, Error> {
    let Some(current) = email_of(conn, user).await? else {
        return Ok(None);
    };
    verified_as(conn, user, &current).await
}

/// Whether `user`'s recorded address is `email` and verified: `None` without a record.
///
/// # Errors
///
/// Database errors.
#[allow(
    dead_code,
    reason = "a door of the seam: a build without the mail or providers feature leaves it unused"
)]
pub(crate) async fn verified_as(
    conn: &mut Conn,
    user: Uuid,
    email: &str,
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
    Ok(row.map(|(recorded, at)| at.is_some() && recorded == email))
}

//! The reference application's user: the library's user model extended with profile fields
//! and soft delete (`#[resource(soft_delete)]`, plus the disabling of a deleted account), and
//! its display name.

use super::schema::app_users;
use chrono::{DateTime, Utc};
use crudforge::crud::Window;
use crudforge::prelude::*;
use crudforge::users::{UserModel, UserRules};
use diesel::prelude::*;
use uuid::Uuid;

/// The reference application's user: the library's user plus profile fields and soft delete.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = app_users)]
#[resource(name = "User", rules = UserRules, soft_delete)]
pub struct AppUser {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// E-mail address.
    #[resource(email, max_len = 320)]
    pub email: String,
    /// Password (write-only; stored as a bcrypt hash).
    #[resource(password)]
    pub password: Option<String>,
    /// Disabled users cannot log in; only administrators change it.
    #[resource(default = true)]
    pub is_enabled: bool,
    /// First name.
    #[resource(max_len = 255)]
    pub first_name: Option<String>,
    /// Last name.
    #[resource(max_len = 255)]
    pub last_name: Option<String>,
    /// Picture.
    #[resource(max_len = 2048)]
    pub avatar_url: Option<String>,
    /// Phone number.
    #[resource(max_len = 64)]
    pub phone: Option<String>,
    /// Street address.
    #[resource(max_len = 255)]
    pub address: Option<String>,
    /// City.
    #[resource(max_len = 255)]
    pub city: Option<String>,
    /// State or region.
    #[resource(max_len = 255)]
    pub state: Option<String>,
    /// Postal code.
    #[resource(max_len = 32)]
    pub postal_code: Option<String>,
    /// Country.
    #[resource(max_len = 255)]
    pub country: Option<String>,
    /// When the account was soft-deleted (set by DELETE, cleared by restore).
    pub deleted_at: Option<DateTime<Utc>>,
    /// Whether the account is soft-deleted: read as `deleted_at IS NOT NULL`, so it always
    /// agrees with `deleted_at`.
    #[diesel(select_expression = app_users::deleted_at.is_not_null())]
    #[diesel(select_expression_type = diesel::dsl::IsNotNull<app_users::deleted_at>)]
    #[resource(read_only, filter = false)]
    pub is_deleted: bool,
}

impl UserModel for AppUser {}

/// `display_name`, as the reference computes it: the first name plus the initials of the
/// last name's words (as written, case kept) and a dot ("Ada BL." for Ada Byron Lovelace,
/// "Bob vdB." for Bob van der Berg), else the first name, else the last name, else the
/// e-mail's local part. Empty names count as absent.
pub fn display_name(first: Option<&str>, last: Option<&str>, email: &str) -> String {
    let first = first.filter(|s| !s.is_empty());
    let last = last.filter(|s| !s.is_empty());
    match (first, last) {
        (Some(f), Some(l)) => {
            let initials: String = l.split(' ').filter_map(|w| w.chars().next()).collect();
            format!("{f} {initials}.")
        }
        (Some(f), None) => f.to_owned(),
        (None, Some(l)) => l.to_owned(),
        (None, None) => email.split('@').next().unwrap_or(email).to_owned(),
    }
}

impl AppUser {
    /// This user's display name (see [`display_name`]).
    pub fn display_name(&self) -> String {
        display_name(
            self.first_name.as_deref(),
            self.last_name.as_deref(),
            &self.email,
        )
    }

    /// Soft-deletes the account, as `DELETE /api/user/<id>` does: `deleted_at` now (so
    /// `is_deleted`), through the resource's soft delete, and `is_enabled` false, so the user
    /// can no longer log in. Nothing happens to an account already deleted.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn soft_delete(&mut self, db: &Database) -> Result<(), Error> {
        let mut conn = db.get().await?;
        if <AppUser as Resource>::delete(&mut conn, &self.key()).await? {
            disable(&mut conn, self.id).await?;
        }
        self.reload(&mut conn).await
    }

    /// Restores a soft-deleted account, as `POST /api/user/<id>/restore/` does: clears
    /// `deleted_at` (so `is_deleted`). `is_enabled` stays false until an administrator
    /// enables the account again.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn restore(&mut self, db: &Database) -> Result<(), Error> {
        let mut conn = db.get().await?;
        <AppUser as Resource>::restore(&mut conn, &self.key()).await?;
        self.reload(&mut conn).await
    }

    /// The condition of this user's id.
    fn key(&self) -> [Cond; 1] {
        [Cond::eq("id", Arg::Uuid(self.id))]
    }

    /// Reads this user's row again.
    async fn reload(&mut self, conn: &mut Conn) -> Result<(), Error> {
        let row = AppUser::select(conn, &self.key(), &[], None).await?.pop();
        *self = row.ok_or_else(|| Error::NotFound("No User exists at this path.".into()))?;
        Ok(())
    }

    /// Loads a user by id.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn find(db: &Database, id: Uuid) -> Result<Option<AppUser>, Error> {
        let mut conn = db.get().await?;
        let conds = [Cond::eq("id", Arg::Uuid(id))];
        Ok(
            AppUser::select(&mut conn, &conds, &[], Some(Window::first(1)))
                .await?
                .pop(),
        )
    }

    /// Loads a user by e-mail (case-insensitive).
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn find_by_email(db: &Database, email: &str) -> Result<Option<AppUser>, Error> {
        let Some((id, _, _)) = crudforge::users::find_by_email(db, email).await? else {
            return Ok(None);
        };
        AppUser::find(db, id).await
    }

    /// Sets the profile names.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn set_names(
        conn: &mut Conn,
        id: Uuid,
        first: Option<String>,
        last: Option<String>,
    ) -> Result<(), Error> {
        with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::execute(
                diesel::update(app_users::table.filter(app_users::id.eq(Portable(id)))).set((
                    app_users::first_name.eq(first.clone()),
                    app_users::last_name.eq(last.clone()),
                )),
                c,
            )
            .await
        })?;
        Ok(())
    }
}

/// After a DELETE of a user (inside its transaction): disables the account, so that it cannot
/// log in nor use its tokens while the row is kept (soft delete).
///
/// # Errors
///
/// Database errors.
pub fn disable_deleted<'a>(
    conn: &'a mut Conn,
    _ctx: &'a HookCtx,
    user: &'a AppUser,
) -> futures_util::future::LocalBoxFuture<'a, Result<(), Error>> {
    Box::pin(disable(conn, user.id))
}

/// Sets `is_enabled` false on user `id`.
async fn disable(conn: &mut Conn, id: Uuid) -> Result<(), Error> {
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(app_users::table.filter(app_users::id.eq(Portable(id))))
                .set(app_users::is_enabled.eq(false)),
            c,
        )
        .await
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::display_name;

    #[test]
    fn display_names() {
        assert_eq!(
            display_name(Some("Ada"), Some("Byron Lovelace"), "a@x.io"),
            "Ada BL."
        );
        assert_eq!(
            display_name(Some("Ada"), Some("lovelace"), "a@x.io"),
            "Ada l."
        );
        assert_eq!(
            display_name(Some("Bob"), Some("van der  Berg"), "b@x.io"),
            "Bob vdB."
        );
        assert_eq!(display_name(Some("Ada"), None, "a@x.io"), "Ada");
        assert_eq!(display_name(None, Some("Lovelace"), "a@x.io"), "Lovelace");
        assert_eq!(display_name(Some(""), Some(""), "ada.l@x.io"), "ada.l");
        assert_eq!(display_name(None, None, "ada.l@x.io"), "ada.l");
    }
}

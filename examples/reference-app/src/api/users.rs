//! The reference application's models: its user (profile and soft delete), domains, invites
//! and the Critter demo resource.

use chrono::{DateTime, Utc};
use crudforge::crud::Present;
use crudforge::perms::{Access, PublicRead, Rules};
use crudforge::sql_types::Portable;
use crudforge::users::{UserModel, UserRules};
use crudforge::{with_conn, Database, Error, Resource};
use diesel::prelude::*;
use serde::Serialize;
use std::collections::HashMap;
use uuid::Uuid;

/// Tables of the reference application (the library's `users` and `domains` with the
/// columns this application's migration adds).
pub mod schema {
    diesel::table! {
        use diesel::sql_types::*;
        use crudforge::sql_types::*;

        /// The library's users table with profile and soft-delete columns.
        #[sql_name = "users"]
        app_users (id) {
            /// Id.
            id -> PortableUuid,
            /// Created.
            created_at -> PortableTimestamp,
            /// Updated.
            updated_at -> PortableTimestamp,
            /// E-mail.
            email -> Text,
            /// bcrypt hash.
            password -> Nullable<Text>,
            /// Enabled.
            is_enabled -> Bool,
            /// First name.
            first_name -> Nullable<Text>,
            /// Last name.
            last_name -> Nullable<Text>,
            /// Avatar.
            avatar_url -> Nullable<Text>,
            /// Phone.
            phone -> Nullable<Text>,
            /// Address.
            address -> Nullable<Text>,
            /// City.
            city -> Nullable<Text>,
            /// State.
            state -> Nullable<Text>,
            /// Postal code.
            postal_code -> Nullable<Text>,
            /// Country.
            country -> Nullable<Text>,
            /// Soft-delete time.
            deleted_at -> Nullable<PortableTimestamp>,
            /// Soft-deleted.
            is_deleted -> Bool,
        }
    }

    diesel::table! {
        use diesel::sql_types::*;
        use crudforge::sql_types::*;

        /// The library's domains table with the reference application's fields.
        #[sql_name = "domains"]
        app_domains (id) {
            /// Id.
            id -> PortableUuid,
            /// Created.
            created_at -> PortableTimestamp,
            /// Updated.
            updated_at -> PortableTimestamp,
            /// Name.
            name -> Text,
            /// Active.
            active -> Bool,
            /// Kind of domain.
            domain_type -> Nullable<Text>,
            /// Latitude.
            lat -> Nullable<Double>,
            /// Longitude.
            lon -> Nullable<Double>,
            /// Area.
            area_geojson -> Nullable<PortableJson>,
        }
    }

    diesel::table! {
        use diesel::sql_types::*;
        use crudforge::sql_types::*;

        /// Invitations sent by users.
        invites (id) {
            /// Id.
            id -> PortableUuid,
            /// Created.
            created_at -> PortableTimestamp,
            /// Updated.
            updated_at -> PortableTimestamp,
            /// Recipient, when known.
            recipient_user_id -> Nullable<PortableUuid>,
            /// Recipient address.
            recipient_email -> Text,
            /// Sender.
            sender_user_id -> PortableUuid,
            /// Invitation token.
            token -> Nullable<Text>,
            /// Whether the token was used.
            token_used -> Bool,
        }
    }

    diesel::table! {
        use diesel::sql_types::*;
        use crudforge::sql_types::*;

        /// The demo resource.
        critters (id) {
            /// Id.
            id -> PortableUuid,
            /// Created.
            created_at -> PortableTimestamp,
            /// Updated.
            updated_at -> PortableTimestamp,
            /// Name.
            name -> Text,
            /// Species.
            species -> Text,
            /// Cuteness.
            cuteness_level -> Integer,
        }
    }
}

use schema::{app_domains, app_users, critters};

/// The reference application's user: the library's user plus profile fields and soft delete.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = app_users)]
#[resource(name = "User", rules = UserRules)]
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
    /// When the account was soft-deleted.
    #[resource(read_only)]
    pub deleted_at: Option<DateTime<Utc>>,
    /// Whether the account is soft-deleted.
    #[resource(read_only)]
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

    /// Soft-deletes the account: `is_deleted`, `deleted_at` now, and `is_enabled` false, so
    /// the user can no longer log in.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn soft_delete(&mut self, db: &Database) -> Result<(), Error> {
        let now = crudforge::crud::now();
        let id = self.id;
        let mut conn = db.get().await?;
        with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::execute(
                diesel::update(app_users::table.filter(app_users::id.eq(Portable(id)))).set((
                    app_users::is_deleted.eq(true),
                    app_users::deleted_at.eq(Portable(Some(now))),
                    app_users::is_enabled.eq(false),
                    app_users::updated_at.eq(Portable(now)),
                )),
                c,
            )
            .await
        })?;
        self.is_deleted = true;
        self.deleted_at = Some(now);
        self.is_enabled = false;
        self.updated_at = now;
        Ok(())
    }

    /// Restores a soft-deleted account: clears `deleted_at` and `is_deleted`. `is_enabled`
    /// stays false until an administrator enables the account again.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn restore(&mut self, db: &Database) -> Result<(), Error> {
        let now = crudforge::crud::now();
        let id = self.id;
        let mut conn = db.get().await?;
        with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::execute(
                diesel::update(app_users::table.filter(app_users::id.eq(Portable(id)))).set((
                    app_users::is_deleted.eq(false),
                    app_users::deleted_at.eq(Portable(None::<DateTime<Utc>>)),
                    app_users::updated_at.eq(Portable(now)),
                )),
                c,
            )
            .await
        })?;
        self.is_deleted = false;
        self.deleted_at = None;
        self.updated_at = now;
        Ok(())
    }

    /// Loads a user by id.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn find(db: &Database, id: Uuid) -> Result<Option<AppUser>, Error> {
        let mut conn = db.get().await?;
        let conds = [crudforge::crud::Cond::eq(
            "id",
            crudforge::crud::Arg::Uuid(id),
        )];
        Ok(AppUser::select(&mut conn, &conds, &[], Some((1, 0)))
            .await?
            .pop())
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
        db: &Database,
        id: Uuid,
        first: Option<String>,
        last: Option<String>,
    ) -> Result<(), Error> {
        let mut conn = db.get().await?;
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

/// SPEC's public user schema.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(rename = "PublicUser")]
pub struct PublicUser {
    /// E-mail address.
    pub email: String,
    /// Whether the account is soft-deleted.
    pub is_deleted: bool,
    /// Display name.
    pub display_name: String,
    /// Names of the roles held.
    pub roles: Vec<String>,
}

/// Builds public user bodies for a page of users with one query for all their roles.
#[derive(Debug)]
pub struct PublicUsers;

impl Present<AppUser> for PublicUsers {
    type Output = PublicUser;

    async fn present(db: &Database, items: Vec<AppUser>) -> Result<Vec<PublicUser>, Error> {
        let ids: Vec<Portable<Uuid>> = items.iter().map(|u| Portable(u.id)).collect();
        let mut roles: HashMap<Uuid, Vec<String>> = HashMap::new();
        if !ids.is_empty() {
            use crudforge::users::schema::user_roles;
            let mut conn = db.get().await?;
            let rows: Vec<(Uuid, String)> = with_conn!(conn, |c| {
                diesel_async::RunQueryDsl::load(
                    user_roles::table
                        .filter(user_roles::user_id.eq_any(ids.clone()))
                        .order((user_roles::user_id, user_roles::role))
                        .select((user_roles::user_id, user_roles::role)),
                    c,
                )
                .await
            })?;
            for (user, role) in rows {
                roles.entry(user).or_default().push(role);
            }
        }
        Ok(items
            .into_iter()
            .map(|u| PublicUser {
                display_name: u.display_name(),
                roles: roles.remove(&u.id).unwrap_or_default(),
                email: u.email,
                is_deleted: u.is_deleted,
            })
            .collect())
    }
}

/// A domain (tenant) with the reference application's optional fields. Anyone may read
/// domains; signed-in users create and change them.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = app_domains)]
#[resource(name = "Domain", rules = PublicRead)]
pub struct RefDomain {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Unique name, used at login.
    #[resource(max_len = 255)]
    pub name: String,
    /// Whether the domain is in use.
    #[resource(default = true)]
    pub active: bool,
    /// Kind of domain, at most 16 characters.
    #[resource(max_len = 16)]
    pub domain_type: Option<String>,
    /// Latitude.
    pub lat: Option<f64>,
    /// Longitude.
    pub lon: Option<f64>,
    /// Area as GeoJSON.
    pub area_geojson: Option<serde_json::Value>,
}

impl RefDomain {
    /// The domain with this name.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn by_name(db: &Database, name: &str) -> Result<Option<RefDomain>, Error> {
        let mut conn = db.get().await?;
        let conds = [crudforge::crud::Cond::eq(
            "name",
            crudforge::crud::Arg::Text(name.to_owned()),
        )];
        Ok(RefDomain::select(&mut conn, &conds, &[], Some((1, 0)))
            .await?
            .pop())
    }
}

/// Invite rules: the sender or an administrator.
#[derive(Debug, Clone, Copy, Default)]
pub struct InviteRules;

impl Rules<Invite> for InviteRules {
    fn read(&self, user: Option<&crudforge::auth::CurrentUser>) -> Access {
        Access::owned_by(user, "sender_user_id")
    }
    fn write(&self, user: Option<&crudforge::auth::CurrentUser>) -> Access {
        Access::owned_by(user, "sender_user_id")
    }
}

/// An invitation sent by a user.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = schema::invites)]
#[resource(rules = InviteRules)]
pub struct Invite {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// The recipient's account, when known.
    pub recipient_user_id: Option<Uuid>,
    /// Where the invitation goes.
    #[resource(max_len = 1024)]
    pub recipient_email: String,
    /// Who sent it (always the user in the URL).
    pub sender_user_id: Uuid,
    /// Invitation token.
    #[resource(max_len = 1024)]
    pub token: Option<String>,
    /// Whether the token was used.
    #[resource(default = false)]
    pub token_used: bool,
}

/// The Critter demo resource: every generic CRUD feature on a small model.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = critters)]
pub struct Critter {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Its name.
    #[resource(max_len = 100)]
    pub name: String,
    /// Its species.
    #[resource(max_len = 50)]
    pub species: String,
    /// How cute (default 10).
    #[resource(default = 10)]
    pub cuteness_level: i32,
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

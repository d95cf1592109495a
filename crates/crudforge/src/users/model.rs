//! The user system's models: the role names, users, roles, tokens, settings and domains.

use super::rules::{RoleRules, TokenRules, UserRules};
use super::store::{set_password, users_password};
use crate::auth::verify_password;
use crate::crud::Resource;
use crate::db::Database;
use crate::error::Error;
use crate::perms::{OwnerRules, PublicReadAdminWrite};
use crate::schema;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The default roles. Applications may use any other role names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Role {
    /// Super administrator.
    SuperAdmin,
    /// Administrator.
    Admin,
    /// Moderator.
    Moderator,
    /// Regular user.
    User,
}

impl Role {
    /// The stored and serialized name: `SUPERADMIN`, `ADMIN`, `MODERATOR`, `USER`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::SuperAdmin => "SUPERADMIN",
            Role::Admin => "ADMIN",
            Role::Moderator => "MODERATOR",
            Role::User => "USER",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A user account.
#[derive(Debug, Clone, Queryable, Selectable, crudforge_derive::Resource)]
#[diesel(table_name = schema::users)]
#[resource(rules = UserRules)]
pub struct User {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// E-mail address: unique, stored and compared in its normalized form (see
    /// [`crate::auth::normalize_email`]).
    #[resource(email, unique, max_len = 320)]
    pub email: String,
    /// bcrypt hash; written as plaintext `password`, never returned.
    #[resource(password)]
    pub password: Option<String>,
    /// Disabled accounts cannot log in or authenticate. Only administrators change it.
    #[resource(default = true)]
    pub is_enabled: bool,
}

/// A role held by a user, in one domain or (domain `null`) in every domain.
#[derive(Debug, Clone, Queryable, Selectable, crudforge_derive::Resource)]
#[diesel(table_name = schema::user_roles)]
#[resource(rules = RoleRules)]
pub struct UserRole {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// The user holding the role.
    pub user_id: Uuid,
    /// Role name, such as `ADMIN`.
    #[resource(max_len = 64)]
    pub role: String,
    /// Domain the role is limited to; `null` means every domain.
    pub domain_id: Option<Uuid>,
}

/// A refresh token or API key of a user. Its rules mirror the owning user's
/// ([`TokenRules`]).
#[derive(Debug, Clone, Queryable, Selectable, crudforge_derive::Resource)]
#[diesel(table_name = schema::tokens)]
#[resource(rules = TokenRules)]
pub struct Token {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Owner (set by the server).
    pub user_id: Uuid,
    /// The secret value; never returned.
    #[resource(write_only, max_len = 1024)]
    pub token: String,
    /// What it is for.
    #[resource(max_len = 255)]
    pub description: Option<String>,
    /// When it stops working.
    pub expires_at: Option<DateTime<Utc>>,
    /// Revoked tokens never work again.
    #[resource(default = false)]
    pub revoked: bool,
    /// When it was revoked.
    pub revoked_at: Option<DateTime<Utc>>,
    /// What the token is: `api_key` (the only kind clients create), `refresh` or `recovery`.
    /// Each endpoint accepts only its own kind.
    #[resource(read_only)]
    pub kind: String,
    /// What an API key is limited to, entries separated by spaces: `read` (every read of every
    /// resource), a resource's name (`Critter`: everything on it), or a name and an operation
    /// (`Critter:read`, `Critter:create`, `Critter:update`, `Critter:delete`). Null: the
    /// owner's full access. A scope only narrows the owner's rights; it never writes users or
    /// keys. Checked against the resources of the API when the key is created (422), and
    /// never changed after.
    #[resource(create_only, max_len = 1024)]
    pub scopes: Option<String>,
    /// When the API key was last exchanged for an access token (null: never). Requests made
    /// with that access token do not change it.
    #[resource(read_only)]
    pub last_used_at: Option<DateTime<Utc>>,
}

/// A per-user setting; one value per user and key.
#[derive(Debug, Clone, Queryable, Selectable, crudforge_derive::Resource)]
#[diesel(table_name = schema::user_settings)]
#[resource(rules = OwnerRules::USER_ID)]
pub struct UserSetting {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Owner (set by the server).
    pub user_id: Uuid,
    /// Setting name.
    #[resource(max_len = 255)]
    pub key: String,
    /// Setting value.
    pub value: Option<String>,
}

/// A domain (tenant). Anyone may read domains; only global administrators create, change and
/// delete them (mount it with [`super::guard_domain_delete`] to keep referenced domains).
#[derive(Debug, Clone, Queryable, Selectable, crudforge_derive::Resource)]
#[diesel(table_name = schema::domains)]
#[resource(rules = PublicReadAdminWrite)]
pub struct Domain {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Unique name, used at login.
    #[resource(unique, max_len = 255)]
    pub name: String,
    /// Whether the domain is in use.
    #[resource(default = true)]
    pub active: bool,
}

impl User {
    /// Sets a new password (checked against `policy`, hashed off the async workers; see
    /// [`super::set_password`]) and stores it.
    ///
    /// # Errors
    ///
    /// 422 for a password the policy refuses; database errors.
    pub async fn set_password(
        &mut self,
        db: &Database,
        password: &str,
        policy: impl Into<crate::auth::PasswordPolicy>,
    ) -> Result<(), Error> {
        set_password(db, self.id, password, policy).await?;
        self.password = users_password(db, self.id).await?;
        Ok(())
    }

    /// Whether `password` matches the stored hash (false when none is set).
    ///
    /// # Errors
    ///
    /// The blocking task failed.
    pub async fn check_password(&self, password: &str, cost: u32) -> Result<bool, Error> {
        verify_password(password.to_owned(), self.password.clone(), cost).await
    }
}

/// A model that can serve as the application's user: a derived resource over the `users`
/// table (the built-in [`User`], or an application's own struct mapping `users` with extra
/// columns added by the application's migrations).
pub trait UserModel: Resource {
    /// When true, `POST <prefix>` (registration) is public.
    const PUBLIC_REGISTRATION: bool = false;
}

impl UserModel for User {}

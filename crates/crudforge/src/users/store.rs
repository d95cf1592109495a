//! The user system: users, roles, tokens, settings and domains, and the user blueprint with
//! login, refresh and the current user's profile.

use crate::api::{ApiState, IntoMount, Mount};
use crate::auth::{
    hash_password, require_user, verify_password, CurrentUser, RoleGrant, TokenKind,
};
use crate::crud::blueprint::CustomRoute;
use crate::crud::{Arg, Cond, CrudBlueprint, Operation, Resource};
use crate::db::sql_types::Portable;
use crate::db::Database;
use crate::error::Error;
use crate::perms::{Access, OwnerRules, PublicRead, Rules};
use crate::with_conn;
use actix_web::{web, HttpRequest, HttpResponse};
use apistos::paths::OperationType;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use futures_util::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use uuid::Uuid;

/// The library's tables.
pub mod schema {
    diesel::table! {
        use diesel::sql_types::*;
        use crate::sql_types::*;

        /// Users.
        users (id) {
            /// Id.
            id -> PortableUuid,
            /// Created.
            created_at -> PortableTimestamp,
            /// Updated.
            updated_at -> PortableTimestamp,
            /// E-mail (unique, case-insensitively).
            email -> Text,
            /// bcrypt hash.
            password -> Nullable<Text>,
            /// Enabled.
            is_enabled -> Bool,
        }
    }

    diesel::table! {
        use diesel::sql_types::*;
        use crate::sql_types::*;

        /// Roles held by users.
        user_roles (id) {
            /// Id.
            id -> PortableUuid,
            /// Created.
            created_at -> PortableTimestamp,
            /// Updated.
            updated_at -> PortableTimestamp,
            /// Owner.
            user_id -> PortableUuid,
            /// Role name.
            role -> Text,
            /// Domain scope.
            domain_id -> Nullable<PortableUuid>,
        }
    }

    diesel::table! {
        use diesel::sql_types::*;
        use crate::sql_types::*;

        /// Refresh tokens and API keys.
        tokens (id) {
            /// Id.
            id -> PortableUuid,
            /// Created.
            created_at -> PortableTimestamp,
            /// Updated.
            updated_at -> PortableTimestamp,
            /// Owner.
            user_id -> PortableUuid,
            /// Token value.
            token -> Text,
            /// Description.
            description -> Nullable<Text>,
            /// Expiry.
            expires_at -> Nullable<PortableTimestamp>,
            /// Revoked.
            revoked -> Bool,
            /// Revocation time.
            revoked_at -> Nullable<PortableTimestamp>,
        }
    }

    diesel::table! {
        use diesel::sql_types::*;
        use crate::sql_types::*;

        /// Per-user settings.
        user_settings (id) {
            /// Id.
            id -> PortableUuid,
            /// Created.
            created_at -> PortableTimestamp,
            /// Updated.
            updated_at -> PortableTimestamp,
            /// Owner.
            user_id -> PortableUuid,
            /// Key.
            key -> Text,
            /// Value.
            value -> Nullable<Text>,
        }
    }

    diesel::table! {
        use diesel::sql_types::*;
        use crate::sql_types::*;

        /// Domains (tenants).
        domains (id) {
            /// Id.
            id -> PortableUuid,
            /// Created.
            created_at -> PortableTimestamp,
            /// Updated.
            updated_at -> PortableTimestamp,
            /// Unique name.
            name -> Text,
            /// Active.
            active -> Bool,
        }
    }

    diesel::joinable!(user_roles -> users (user_id));
    diesel::joinable!(tokens -> users (user_id));
    diesel::joinable!(user_settings -> users (user_id));
    diesel::allow_tables_to_appear_in_same_query!(
        users,
        user_roles,
        tokens,
        user_settings,
        domains
    );
}

use schema::{tokens, user_roles, users};

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

/// Rules of users: a user reads and writes itself, administrators everyone; only
/// administrators create users (unless the model allows public registration) and change
/// `is_enabled`.
#[derive(Debug, Clone, Copy, Default)]
pub struct UserRules;

impl<U> Rules<U> for UserRules {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::owned_by(user, "id")
    }
    fn write(&self, user: Option<&CurrentUser>) -> Access {
        Access::owned_by(user, "id")
    }
    fn create(
        &self,
        user: Option<&CurrentUser>,
        _body: &mut serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), Error> {
        Access::admins(user).into_conds().map(|_| ())
    }
    fn admin_fields(&self) -> &[&'static str] {
        &["is_enabled"]
    }
}

/// Rules of roles: users read their own roles; only administrators grant or remove roles.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoleRules;

impl<U> Rules<U> for RoleRules {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::owned_by(user, "user_id")
    }
    fn write(&self, user: Option<&CurrentUser>) -> Access {
        Access::admins(user)
    }
    fn create(
        &self,
        user: Option<&CurrentUser>,
        _body: &mut serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), Error> {
        Access::admins(user).into_conds().map(|_| ())
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
    /// E-mail address: unique, compared case-insensitively.
    #[resource(email, max_len = 320)]
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

/// A refresh token or API key of a user. Its rules mirror the owning user's.
#[derive(Debug, Clone, Queryable, Selectable, crudforge_derive::Resource)]
#[diesel(table_name = schema::tokens)]
#[resource(rules = OwnerRules::USER_ID)]
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

/// A domain (tenant). Anyone may read domains; signed-in users may create and change them.
#[derive(Debug, Clone, Queryable, Selectable, crudforge_derive::Resource)]
#[diesel(table_name = schema::domains)]
#[resource(rules = PublicRead)]
pub struct Domain {
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
}

impl User {
    /// Sets a new password (bcrypt at `cost`, off the async workers) and stores it.
    ///
    /// # Errors
    ///
    /// 422 for an empty or over-long password; database errors.
    pub async fn set_password(
        &mut self,
        db: &Database,
        password: &str,
        cost: u32,
    ) -> Result<(), Error> {
        set_password(db, self.id, password, cost).await?;
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

/// Loads a user and its roles in one query; `None` when no such user exists.
///
/// # Errors
///
/// Database errors.
pub async fn load_user(db: &Database, id: Uuid) -> Result<Option<CurrentUser>, Error> {
    let mut conn = db.get().await?;
    type Row = (Uuid, String, bool, Option<String>, Option<Uuid>);
    let rows: Vec<Row> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::load(
            users::table
                .left_join(user_roles::table)
                .filter(users::id.eq(Portable(id)))
                .select((
                    users::id,
                    users::email,
                    users::is_enabled,
                    user_roles::role.nullable(),
                    user_roles::domain_id.nullable(),
                )),
            c,
        )
        .await
    })?;
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let mut user = CurrentUser {
        id: first.0,
        email: first.1.clone(),
        is_enabled: first.2,
        roles: Vec::new(),
    };
    for (_, _, _, role, domain_id) in rows {
        if let Some(role) = role {
            user.roles.push(RoleGrant { role, domain_id });
        }
    }
    Ok(Some(user))
}

async fn users_password(db: &Database, id: Uuid) -> Result<Option<String>, Error> {
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

/// Hashes and stores a new password for a user.
///
/// # Errors
///
/// 422 for an empty or over-long password; 404 for an unknown user.
pub async fn set_password(
    db: &Database,
    user_id: Uuid,
    password: &str,
    cost: u32,
) -> Result<(), Error> {
    let hash = hash_password(password.to_owned(), cost).await?;
    let mut conn = db.get().await?;
    let n = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(users::table.filter(users::id.eq(Portable(user_id)))).set((
                users::password.eq(Some(hash.clone())),
                users::updated_at.eq(Portable(crate::crud::now())),
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

/// The id, password hash and enabled flag of the user with `email` (case-insensitive).
///
/// # Errors
///
/// Database errors.
pub async fn find_by_email(
    db: &Database,
    email: &str,
) -> Result<Option<(Uuid, Option<String>, bool)>, Error> {
    let mut conn = db.get().await?;
    let email = email.to_lowercase();
    let row = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            users::table
                .filter(crate::crud::sql::lower_text(users::email).eq(email.clone()))
                .select((users::id, users::password, users::is_enabled)),
            c,
        )
        .await
        .optional()
    })?;
    Ok(row)
}

/// Creates a user in the `users` table with a bcrypt-hashed password; returns its id.
///
/// # Errors
///
/// 422 for a malformed e-mail or a bad password; 409 when the e-mail is taken.
pub async fn create_user(
    db: &Database,
    email: &str,
    password: &str,
    enabled: bool,
    cost: u32,
) -> Result<Uuid, Error> {
    crate::crud::check_email("email", email)?;
    let hash = hash_password(password.to_owned(), cost).await?;
    let mut conn = db.get().await?;
    let now = crate::crud::now();
    let id = Uuid::new_v4();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::insert_into(users::table).values((
                users::id.eq(Portable(id)),
                users::created_at.eq(Portable(now)),
                users::updated_at.eq(Portable(now)),
                users::email.eq(email.to_owned()),
                users::password.eq(Some(hash.clone())),
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
                users::updated_at.eq(Portable(crate::crud::now())),
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
/// Database errors (409 when the user does not exist).
pub async fn grant_role(
    db: &Database,
    user_id: Uuid,
    role: &str,
    domain_id: Option<Uuid>,
) -> Result<(), Error> {
    let mut conn = db.get().await?;
    let now = crate::crud::now();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::insert_into(user_roles::table).values((
                user_roles::id.eq(Portable(Uuid::new_v4())),
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
    Ok(())
}

/// Stores a Token record (a refresh token id or an API key) for a user.
///
/// # Errors
///
/// Database errors (409 for a duplicate value or an unknown user).
pub async fn store_token(
    db: &Database,
    user_id: Uuid,
    value: &str,
    description: Option<&str>,
    expires_at: Option<DateTime<Utc>>,
) -> Result<Uuid, Error> {
    let mut conn = db.get().await?;
    let now = crate::crud::now();
    let id = Uuid::new_v4();
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
            )),
            c,
        )
        .await
    })?;
    Ok(id)
}

/// The owner of a usable (not revoked, not expired) Token record with this value.
///
/// # Errors
///
/// Database errors.
pub async fn token_owner(db: &Database, value: &str) -> Result<Option<Uuid>, Error> {
    let mut conn = db.get().await?;
    let now = Portable(crate::crud::now());
    let row: Option<Uuid> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            tokens::table
                .filter(tokens::token.eq(value.to_owned()))
                .filter(tokens::revoked.eq(false))
                .filter(tokens::expires_at.is_null().or(tokens::expires_at.gt(now)))
                .select(tokens::user_id),
            c,
        )
        .await
        .optional()
    })?;
    Ok(row)
}

/// Revokes the Token record with this value; false when none was usable.
///
/// # Errors
///
/// Database errors.
pub async fn revoke_token(db: &Database, value: &str) -> Result<bool, Error> {
    let mut conn = db.get().await?;
    let now = crate::crud::now();
    let n = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(
                tokens::table
                    .filter(tokens::token.eq(value.to_owned()))
                    .filter(tokens::revoked.eq(false)),
            )
            .set((
                tokens::revoked.eq(true),
                tokens::revoked_at.eq(Portable(Some(now))),
                tokens::updated_at.eq(Portable(now)),
            )),
            c,
        )
        .await
    })?;
    Ok(n > 0)
}

// ---- the user blueprint ----

/// What a login-validation hook sees.
#[derive(Debug)]
pub struct LoginContext<'a> {
    /// The user whose password matched (enabled, with roles).
    pub user: &'a CurrentUser,
    /// The `domain` member of the login body, if any.
    pub domain: Option<&'a str>,
    /// The database.
    pub db: &'a Database,
    /// The request.
    pub request: &'a HttpRequest,
}

/// Extra checks at login, after the password and `is_enabled`, before tokens are issued
/// (for example domain access). Return an error (usually 401) to refuse the login.
pub trait LoginHook: Send + Sync + 'static {
    /// The check.
    fn validate<'a>(&'a self, ctx: &'a LoginContext<'a>) -> LocalBoxFuture<'a, Result<(), Error>>;
}

impl<F> LoginHook for F
where
    F: for<'a> Fn(&'a LoginContext<'a>) -> LocalBoxFuture<'a, Result<(), Error>>
        + Send
        + Sync
        + 'static,
{
    fn validate<'a>(&'a self, ctx: &'a LoginContext<'a>) -> LocalBoxFuture<'a, Result<(), Error>> {
        self(ctx)
    }
}

/// Login body.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct LoginRequest {
    /// E-mail address.
    pub email: String,
    /// Password.
    pub password: String,
    /// Domain name (optional; the application's hook decides what it means).
    #[serde(default)]
    pub domain: Option<String>,
}

/// Refresh body.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct RefreshRequest {
    /// A refresh token from login or an earlier refresh.
    pub refresh_token: String,
}

/// Tokens issued at login and refresh.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct LoginResponse {
    /// Access token for `Authorization: Bearer`.
    pub access_token: String,
    /// Refresh token for `POST <prefix>refresh/`.
    pub refresh_token: String,
    /// Always `bearer`.
    pub token_type: String,
    /// Access token lifetime in seconds.
    pub expires_in: i64,
}

/// The user endpoints: the five CRUD operations on a user model plus `login/`, `refresh/`
/// and `me/`. Defaults: name `users`, prefix `/api/users/`, [`UserRules`].
pub struct UserBlueprint<U: UserModel> {
    crud: CrudBlueprint<U>,
    hook: Option<Arc<dyn LoginHook>>,
    name: String,
}

impl<U: UserModel> std::fmt::Debug for UserBlueprint<U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserBlueprint")
            .field("name", &self.name)
            .field("crud", &self.crud)
            .finish_non_exhaustive()
    }
}

impl Default for UserBlueprint<User> {
    fn default() -> Self {
        UserBlueprint::new("/api/users/")
    }
}

impl<U: UserModel> UserBlueprint<U> {
    /// The user endpoints of `U` at `prefix`.
    pub fn new(prefix: &str) -> Self {
        let mut crud = CrudBlueprint::<U>::new(prefix);
        if U::PUBLIC_REGISTRATION {
            crud = crud.public([Operation::Post]);
        }
        UserBlueprint {
            crud,
            hook: None,
            name: "users".to_owned(),
        }
    }

    /// The blueprint's name (default `users`); used as the OpenAPI tag of its extra routes.
    #[must_use]
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.to_owned();
        self
    }

    /// Adjusts the CRUD part with the same options as any blueprint.
    #[must_use]
    pub fn crud(mut self, f: impl FnOnce(CrudBlueprint<U>) -> CrudBlueprint<U>) -> Self {
        self.crud = f(self.crud);
        self
    }

    /// Sets the login-validation hook.
    #[must_use]
    pub fn login_hook(mut self, hook: impl LoginHook) -> Self {
        self.hook = Some(Arc::new(hook));
        self
    }
}

impl<U: UserModel> IntoMount for UserBlueprint<U> {
    fn into_mount(self) -> Result<Box<dyn Mount>, String> {
        let hook = self.hook.clone();
        let tag = self.name.clone();
        let login = CustomRoute::new(OperationType::Post, "login/", move || {
            let hook = hook.clone();
            web::post().to(move |req: HttpRequest, body: crate::Json<LoginRequest>| {
                let hook = hook.clone();
                async move { login(req, body.into_inner(), hook.as_deref()).await }
            })
        })
        .operation_id(&format!("login{}", U::NAME))
        .summary("Log in with e-mail and password")
        .body::<LoginRequest>()
        .responds::<LoginResponse>()
        .errors(&[400, 401, 422])
        .tag(&tag)
        .public();
        let refresh = CustomRoute::new(OperationType::Post, "refresh/", || {
            web::post().to(
                |req: HttpRequest, body: crate::Json<RefreshRequest>| async move {
                    refresh(req, body.into_inner()).await
                },
            )
        })
        .operation_id(&format!("refresh{}", U::NAME))
        .summary("Exchange a refresh token for new tokens")
        .body::<RefreshRequest>()
        .responds::<LoginResponse>()
        .errors(&[400, 401, 422])
        .tag(&tag)
        .public();
        let me = CustomRoute::new(OperationType::Get, "me/", || web::get().to(me::<U>))
            .operation_id(&format!("me{}", U::NAME))
            .summary("The current user")
            .responds::<U::Response>()
            .errors(&[401])
            .tag(&tag);
        IntoMount::into_mount(self.crud.route(login).route(refresh).route(me))
    }
}

fn bad_login() -> Error {
    Error::Unauthorized("Invalid e-mail or password.".into())
}

/// Issues an access token and a stored refresh token for a user.
///
/// # Errors
///
/// Database errors.
pub async fn issue_tokens(st: &ApiState, user: Uuid) -> Result<LoginResponse, Error> {
    let access = st.tokens.access(user)?;
    let (refresh, claims) = st
        .tokens
        .issue(user, TokenKind::Refresh, st.tokens.refresh_ttl)?;
    let expires = DateTime::from_timestamp(claims.exp, 0);
    store_token(
        &st.db,
        user,
        &claims.jti.to_string(),
        Some("refresh token"),
        expires,
    )
    .await?;
    Ok(LoginResponse {
        access_token: access,
        refresh_token: refresh,
        token_type: "bearer".to_owned(),
        expires_in: st.tokens.access_ttl,
    })
}

async fn login(
    req: HttpRequest,
    body: LoginRequest,
    hook: Option<&dyn LoginHook>,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let cost = st.config.bcrypt_cost;
    let found = find_by_email(&st.db, &body.email).await?;
    let (id, hash, enabled) = match found {
        Some((id, hash, enabled)) => (Some(id), hash, enabled),
        None => (None, None, false),
    };
    // Same work whether or not the e-mail exists: verify against a dummy hash.
    if !verify_password(body.password, hash, cost).await? {
        return Err(bad_login());
    }
    let id = id.ok_or_else(bad_login)?;
    if !enabled {
        return Err(bad_login());
    }
    let user = load_user(&st.db, id).await?.ok_or_else(bad_login)?;
    if let Some(h) = hook {
        let ctx = LoginContext {
            user: &user,
            domain: body.domain.as_deref(),
            db: &st.db,
            request: &req,
        };
        h.validate(&ctx).await?;
    }
    Ok(HttpResponse::Ok().json(issue_tokens(st, id).await?))
}

async fn refresh(req: HttpRequest, body: RefreshRequest) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let claims = st.tokens.verify(&body.refresh_token, TokenKind::Refresh)?;
    let jti = claims.jti.to_string();
    let owner = token_owner(&st.db, &jti).await?;
    if owner != Some(claims.sub) {
        return Err(Error::Unauthorized(
            "Invalid, revoked or expired refresh token.".into(),
        ));
    }
    let user = load_user(&st.db, claims.sub).await?;
    if !user.is_some_and(|u| u.is_enabled) {
        return Err(Error::Unauthorized(
            "The token's user does not exist or is disabled.".into(),
        ));
    }
    // Rotation: the presented refresh token is used up.
    if !revoke_token(&st.db, &jti).await? {
        return Err(Error::Unauthorized(
            "Invalid, revoked or expired refresh token.".into(),
        ));
    }
    Ok(HttpResponse::Ok().json(issue_tokens(st, claims.sub).await?))
}

async fn me<U: UserModel>(req: HttpRequest) -> Result<HttpResponse, Error> {
    let user = require_user(&req).await?;
    let st = ApiState::of(&req)?;
    let mut conn = st.db.get().await?;
    let found = U::select(
        &mut conn,
        &[Cond::eq("id", Arg::Uuid(user.id))],
        &[],
        Some((1, 0)),
    )
    .await?;
    let u = found
        .into_iter()
        .next()
        .ok_or_else(|| Error::Unauthorized("The token's user does not exist.".into()))?;
    Ok(HttpResponse::Ok().json(U::Response::from(u)))
}

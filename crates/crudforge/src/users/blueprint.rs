//! The user blueprint: the CRUD operations of a user model plus `login/`, `refresh/` and `me/`
//! (the caller with the roles it holds).

use super::model::{User, UserModel};
use super::sign_up::{check_members as check_sign_up_members, Accounts, SignUpRules, UserMount};
use super::store::{find_by_email, set_password_hash_in, store_rehash, users_password};
use super::tokens::{
    end_sessions, lock_user_in, refresh_record_in, revoke_family_in, revoke_record_in,
    revoke_token, store_refresh_in, token_version, token_version_in,
};
use crate::auth::password::{hash_cost, hash_unchecked};
use crate::auth::throttle::{Account, Attempt};
use crate::auth::{
    hash_password_for, load_user, require_user, verify_password, Claims, CurrentUser, TokenKind,
};
use crate::crud::conditional::{if_none_match, tag_of};
use crate::crud::options::{output_schema, present_with, PresentFn, SchemaFn};
use crate::crud::query::sparse::members_of;
use crate::crud::{Arg, Cond, CrudBlueprint, CustomRoute, Operation, Present};
use crate::db::tx::{self, TxMode};
use crate::db::{Conn, Database};
use crate::error::Error;
use crate::mount::{IntoMount, Mount};
use crate::state::ApiState;
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use apistos::paths::OperationType;
use chrono::DateTime;
use futures_util::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use uuid::Uuid;

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
pub(crate) struct RefreshRequest {
    /// A refresh token from login or an earlier refresh.
    pub refresh_token: String,
}

/// Logout body.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub(crate) struct LogoutRequest {
    /// The refresh token of this session, to revoke.
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// End every session of the caller: every refresh token is revoked and every access
    /// token issued so far (this one included) stops working.
    #[serde(default)]
    pub all: bool,
}

/// Password change body.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct PasswordChange {
    /// The password the account has now.
    pub current_password: String,
    /// The new password.
    pub new_password: String,
}

/// Tokens issued at login and refresh.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct LoginResponse {
    /// Access token for `Authorization: Bearer`.
    pub access_token: String,
    /// Refresh token for the `refresh/` endpoint beside the login endpoint that issued it.
    pub refresh_token: String,
    /// Always `bearer`.
    pub token_type: String,
    /// Access token lifetime in seconds.
    pub expires_in: i64,
}

/// The user endpoints: the five CRUD operations on a user model plus `login/`, `refresh/`
/// and `me/`. Defaults: name the model's (`User`), prefix `/api/users/`, [`UserRules`](crate::users::UserRules).
pub struct UserBlueprint<U: UserModel> {
    crud: CrudBlueprint<U>,
    hook: Option<Arc<dyn LoginHook>>,
    /// Statuses the login hook may answer with, documented on `login/`.
    hook_errors: Vec<u16>,
    /// How `me/` renders the user, when not as `U::Response`.
    me: Option<(SchemaFn, PresentFn<U>)>,
    name: String,
    /// With sign-up: the members a self-registering caller may send besides e-mail and
    /// password.
    sign_up: Option<Vec<&'static str>>,
    /// Sign-ups are answered uniformly (see [`UserBlueprint::uniform_sign_up`]).
    uniform: bool,
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
        // E-mail addresses are stored normalized (see `identity`), and nobody changes a user
        // who outranks them (see `privilege`).
        let crud = super::identity::normalize_on_write(CrudBlueprint::<U>::new(prefix));
        let mut crud = super::guards::guard_users(crud);
        if U::PUBLIC_REGISTRATION {
            crud = crud.public([Operation::Post]);
        }
        UserBlueprint {
            crud,
            hook: None,
            hook_errors: Vec::new(),
            me: None,
            name: U::NAME.to_owned(),
            sign_up: None,
            uniform: false,
        }
    }

    /// Opens `POST <prefix>` to everyone: sign-up (public registration) with the library's
    /// user model or any other. A caller who is not an administrator may send `email`,
    /// `password` and the `members` listed here, nothing else: any other member is refused
    /// with 422 naming it (members only administrators may set, such as `is_enabled`, are
    /// refused as on every operation: 401 without a token, 403 with one). The account is
    /// created with no role, enabled as the model's default says. Administrators still create
    /// users with every member. The model's rules keep deciding every other operation.
    ///
    /// Sign-ups by callers who are not administrators are counted per client address: past
    /// `SIGN_UP_MAX_PER_ADDRESS` in `SIGN_UP_WINDOW` seconds the answer is 429 with
    /// `Retry-After` (as for a public `POST` of [`UserModel::PUBLIC_REGISTRATION`]). An address
    /// already taken, by an account soft-deleted or not, is 409 (`conflict_error`), unless
    /// the answer is [uniform](UserBlueprint::uniform_sign_up).
    ///
    /// Mounting fails when a listed member is not one clients may send on create, or is one
    /// only administrators or the server set, and when the batch form of `POST` is mounted
    /// too (one request would create many accounts). It replaces the public `POST` of
    /// [`UserModel::PUBLIC_REGISTRATION`].
    #[must_use]
    pub fn sign_up(mut self, members: &[&'static str]) -> Self {
        self.sign_up = Some(members.to_vec());
        self
    }

    /// Answers every sign-up by a caller who is not an administrator with the same 202 and
    /// body (`{"detail": "The sign-up has been received."}`, no `Location`, no `ETag`, no id)
    /// whether the account was created or its address was already taken (nothing is created
    /// then), instead of 201 with the new user or 409 (every 409 of a sign-up is answered so):
    /// the answer does not tell who has an account. Refusals that do not depend on the address (422 for a member or a password,
    /// 429) stay as they are, and administrators keep 201 and 409.
    ///
    /// The answer alone hides nothing if the caller can tell otherwise: a new account that can
    /// log in at once tells by logging in (create accounts disabled and enable them once the
    /// address is confirmed, for example from an `after_commit` hook that mails a link), and
    /// whatever an application does for new accounts only (a welcome e-mail) tells the
    /// address's owner. See [auth.md](https://github.com/crudforge/crudforge/blob/main/docs/auth.md) ("Sign-up"). Mounting fails without
    /// [`sign_up`](UserBlueprint::sign_up) or `PUBLIC_REGISTRATION`.
    #[must_use]
    pub fn uniform_sign_up(mut self) -> Self {
        self.uniform = true;
        self
    }

    /// The blueprint's name (default: the model's name, as its CRUD operations are tagged);
    /// used as the OpenAPI tag of its extra routes.
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

    /// Error statuses the login hook answers with besides 401 (for example 404 for an unknown
    /// domain), so that the description of `login/` declares them.
    #[must_use]
    pub fn login_errors(mut self, statuses: &[u16]) -> Self {
        self.hook_errors.extend_from_slice(statuses);
        self
    }

    /// Answers `me/` with `P::Output`, built by `P` with database access, instead of the
    /// model's response schema: the same presenter as a list's
    /// ([`OpOptions::present`](crate::crud::OpOptions::present)) shows the current user as
    /// lists show users.
    #[must_use]
    pub fn me_present<P: Present<U>>(mut self) -> Self {
        self.me = Some((output_schema::<U, P>, present_with::<U, P>));
        self
    }
}

impl<U: UserModel> IntoMount for UserBlueprint<U> {
    fn into_mount(mut self) -> Result<Box<dyn Mount>, String> {
        // Anyone may create an account: with sign-up, or a public POST of a model with
        // PUBLIC_REGISTRATION.
        let open = self.sign_up.is_some()
            || (U::PUBLIC_REGISTRATION
                && self
                    .crud
                    .ops
                    .get(&Operation::Post)
                    .is_some_and(|o| o.public));
        if self.uniform && !open {
            return Err(format!(
                "uniform_sign_up of {}: there is no sign-up (call sign_up)",
                U::NAME
            ));
        }
        if let Some(members) = self.sign_up.take() {
            self.crud = with_sign_up(self.crud, members)?;
        }
        if open {
            if self.crud.batch.contains(&Operation::Post) {
                return Err(format!(
                    "sign_up of {}: the batch form of POST cannot be mounted with sign-up (one \
                     request would create many accounts); create accounts in bulk on another \
                     blueprint without sign-up, for administrators",
                    U::NAME
                ));
            }
            self.crud.hooks.around_post = Some(super::sign_up::around(self.uniform));
        }
        // A new account is told to the surfaces in its transaction (mail asks to verify it).
        self.crud
            .hooks
            .after_create
            .push(Arc::new(account_created::<U>));
        let path = self.crud.prefix().to_owned();
        let uniform = self.uniform;
        let tag = self.name.clone();
        let login = self.login_route();
        let me = self.me_route();
        let inner = IntoMount::into_mount(
            self.crud
                .route(login)
                .route(refresh_route::<U>(&tag))
                .route(logout_route::<U>(&tag))
                .route(password_route::<U>(&tag))
                .route(me),
        )?;
        Ok(Box::new(UserMount {
            inner,
            face: Accounts {
                prefix: path.clone(),
                tag,
                name: U::NAME,
            },
            path,
            open,
            uniform,
        }))
    }
}

/// The blueprint's last `after_create` hook: the surfaces write what goes with a new account
/// (its id and address) in its transaction.
fn account_created<'a, U: UserModel>(
    conn: &'a mut Conn,
    ctx: &'a crate::crud::HookCtx,
    row: &'a U,
) -> LocalBoxFuture<'a, Result<(), Error>> {
    Box::pin(async move {
        let Some(state) = ctx.state.as_deref() else {
            return Ok(());
        };
        let id = row.key_of(U::ID_FIELD).and_then(|k| k.parse::<Uuid>().ok());
        let (Some(id), Some(email)) = (id, row.key_of("email")) else {
            return Ok(());
        };
        for surface in crate::SURFACES {
            if let Some(work) = surface.account_created(state, conn, id, &email) {
                work.await?;
            }
        }
        Ok(())
    })
}

/// The surfaces' refusals of a login whose password matched (see `Surface::admits`).
pub(crate) async fn admitted(st: &ApiState, user: Uuid) -> Result<(), Error> {
    for surface in crate::SURFACES {
        if let Some(check) = surface.admits(st, user) {
            check.await?;
        }
    }
    Ok(())
}

impl<U: UserModel> UserBlueprint<U> {
    /// `POST login/`, public, with the login hook; its documented errors include the
    /// statuses the hook may answer with.
    fn login_route(&self) -> CustomRoute {
        let hook = self.hook.clone();
        let mut errors = vec![400, 401, 422, 429];
        for status in &self.hook_errors {
            if !errors.contains(status) {
                errors.push(*status);
            }
        }
        CustomRoute::new(OperationType::Post, "login/", move || {
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
        .errors(&errors)
        .tag(&self.name)
        .public()
    }

    /// `GET me/`: the model's response with the caller's roles ([`WithRoles`]), or the
    /// blueprint's presentation when it has one.
    fn me_route(&self) -> CustomRoute {
        let present = self.me.map(|(_, p)| p);
        // A model with a member called `roles` keeps its own (see `WithRoles`).
        let own_roles = members_of::<U::Response>().iter().any(|m| m == ROLES);
        let mut me = CustomRoute::new(OperationType::Get, "me/", move || {
            web::get().to(move |req: HttpRequest| me::<U>(req, present, own_roles))
        })
        .operation_id(&format!("getCurrent{}", U::NAME))
        .summary("The current user, with the roles it holds")
        .responds::<WithRoles<U::Response>>()
        .errors(&[401])
        .etag()
        .tag(&self.name);
        if let Some((schema, _)) = self.me {
            me.doc.response = Some(schema);
        }
        me
    }
}

/// `POST refresh/`, public: a refresh token exchanged for new tokens.
fn refresh_route<U: UserModel>(tag: &str) -> CustomRoute {
    CustomRoute::new(OperationType::Post, "refresh/", || {
        web::post().to(
            |req: HttpRequest, body: crate::Json<RefreshRequest>| async move {
                refresh(req, body.into_inner()).await
            },
        )
    })
    .operation_id(&format!("refresh{}Tokens", U::NAME))
    .summary("Exchange a refresh token for new tokens")
    .body::<RefreshRequest>()
    .responds::<LoginResponse>()
    .errors(&[400, 401, 422, 429])
    .tag(tag)
    .public()
}

/// `POST logout/`: one refresh token revoked, or every session ended.
fn logout_route<U: UserModel>(tag: &str) -> CustomRoute {
    CustomRoute::new(OperationType::Post, "logout/", || {
        web::post().to(
            |req: HttpRequest, body: crate::Json<LogoutRequest>| async move {
                logout(req, body.into_inner()).await
            },
        )
    })
    .operation_id(&format!("logout{}", U::NAME))
    .summary("Log out: revoke a refresh token, or end every session")
    .body::<LogoutRequest>()
    .status(204)
    .errors(&[400, 401, 422])
    .tag(tag)
}

/// `POST me/password/`: one's own password changed, the current one required.
fn password_route<U: UserModel>(tag: &str) -> CustomRoute {
    CustomRoute::new(OperationType::Post, "me/password/", || {
        web::post().to(
            |req: HttpRequest, body: crate::Json<PasswordChange>| async move {
                change_password(req, body.into_inner()).await
            },
        )
    })
    .operation_id(&format!("change{}Password", U::NAME))
    .summary("Change one's own password (the current one is required)")
    .body::<PasswordChange>()
    .password_members(&["new_password"])
    .responds::<LoginResponse>()
    .errors(&[400, 401, 422, 429])
    .tag(tag)
}

/// The user CRUD with sign-up: `POST` judged by [`SignUpRules`] (not public in the sense of
/// skipping rules, which would skip the sign-up members' check too).
fn with_sign_up<U: UserModel>(
    mut crud: CrudBlueprint<U>,
    members: Vec<&'static str>,
) -> Result<CrudBlueprint<U>, String> {
    match crud.ops.get(&Operation::Post) {
        None => return Err(format!("sign_up of {}: POST is not enabled", U::NAME)),
        Some(o) if o.admin_only => {
            return Err(format!("sign_up of {}: POST is admin_only", U::NAME))
        }
        Some(_) => {}
    }
    check_sign_up_members::<U>(&members, crud.rules.as_ref())?;
    crud.rules = Arc::new(SignUpRules {
        inner: Arc::clone(&crud.rules),
        members,
    });
    Ok(crud.with(Operation::Post, |o| o.public(false)))
}

fn bad_login() -> Error {
    Error::Unauthorized("Invalid e-mail or password.".into())
}

/// An access token for a user at its current credential version (for handlers that log a
/// user in some other way, such as an API key or a password reset).
///
/// # Errors
///
/// Database errors.
pub async fn access_token(st: &ApiState, user: Uuid) -> Result<String, Error> {
    let version = token_version(&st.db, user).await?;
    st.tokens
        .issue_versioned(user, TokenKind::Access, st.tokens.access_ttl, version)
        .map(|(t, _)| t)
}

/// Issues an access token and a stored refresh token for a user.
///
/// # Errors
///
/// Database errors.
pub async fn issue_tokens(st: &ApiState, user: Uuid) -> Result<LoginResponse, Error> {
    let mut conn = st.db.get().await?;
    issue_tokens_in(st, &mut conn, user).await
}

/// [`issue_tokens`] on `conn`, so that it can share a transaction with the write that goes
/// with it (a password change, say). The refresh token starts a new refresh-token family
/// (a new session; see [auth.md](https://github.com/crudforge/crudforge/blob/main/docs/auth.md)).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn issue_tokens_in(
    st: &ApiState,
    conn: &mut Conn,
    user: Uuid,
) -> Result<LoginResponse, Error> {
    let version = token_version_in(conn, user).await?;
    issue_in_family(st, conn, user, version, Uuid::new_v4()).await
}

/// Issues an access token and a refresh token at credential version `version`, the refresh
/// token stored in the refresh-token family `family`.
async fn issue_in_family(
    st: &ApiState,
    conn: &mut Conn,
    user: Uuid,
    version: i64,
    family: Uuid,
) -> Result<LoginResponse, Error> {
    let (access, _) =
        st.tokens
            .issue_versioned(user, TokenKind::Access, st.tokens.access_ttl, version)?;
    let (refresh, claims) =
        st.tokens
            .issue_versioned(user, TokenKind::Refresh, st.tokens.refresh_ttl, version)?;
    let expires = DateTime::from_timestamp(claims.exp, 0);
    store_refresh_in(conn, user, &claims.jti.to_string(), expires, family).await?;
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
    let cost = st.config.auth.bcrypt_cost;
    let email = crate::auth::normalize_email(&body.email);
    let found = find_by_email(&st.db, &email).await?;
    let (id, hash, enabled) = match found {
        Some((id, hash, enabled)) => (Some(id), hash, enabled),
        None => (None, None, false),
    };
    // Throttled before bcrypt; a failure below stays counted (see auth::throttle).
    let account = id.map_or(Account::Email(&email), Account::User);
    let attempt = Attempt::begin(&req, account).await?;
    let stored = hash.clone();
    // Same work whether or not the e-mail exists: verify against a dummy hash. A check that
    // could not be made (503 with a full bcrypt queue) counts towards no lockout.
    let verified = match verify_password(body.password.clone(), hash, cost).await {
        Ok(v) => v,
        Err(e) => return attempt.not_checked(e).await,
    };
    if !verified {
        return Err(bad_login());
    }
    let id = id.ok_or_else(bad_login)?;
    attempt.succeeded().await?;
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
    admitted(st, id).await?;
    if let Some(stored) = stored {
        rehash_if_weaker(st, id, &stored, body.password).await;
    }
    Ok(HttpResponse::Ok().json(issue_tokens(st, id).await?))
}

/// After a successful login: when the stored hash was made at a lower cost than
/// `BCRYPT_COST` (the cost was raised since), stores a new hash of the same password at the
/// current cost. The user's sessions continue (see [`store_rehash`]); a password changed
/// meanwhile is never overwritten. A failure is logged: the login itself succeeded.
async fn rehash_if_weaker(st: &ApiState, user: Uuid, stored: &str, password: String) {
    let cost = st.config.auth.bcrypt_cost;
    if hash_cost(stored).is_none_or(|c| c >= cost) {
        return;
    }
    let outcome = async {
        let new = hash_unchecked(password, cost).await?;
        store_rehash(&st.db, user, stored, &new).await
    }
    .await;
    if let Err(e) = outcome {
        tracing::warn!(%user, error = %e, "the password could not be rehashed at the current cost");
    }
}

/// What a refresh came to, decided inside its transaction.
enum Rotation {
    /// The presented token was used up; these replace it.
    Issued(LoginResponse),
    /// The user does not exist any more or is disabled.
    NoUser,
    /// No such token, or expired, or issued before the user's credentials last changed.
    Refused,
    /// An already used (revoked) token: its whole family has been revoked.
    Reused,
}

async fn refresh(req: HttpRequest, body: RefreshRequest) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    // Throttled by client address first; a refused token whose subject is known also counts
    // against that account (see auth::throttle).
    let attempt = Attempt::begin(&req, Account::Unknown).await?;
    let claims = st.tokens.verify(&body.refresh_token, TokenKind::Refresh)?;
    // Checked and rotated in one transaction: a failure in between leaves the old token
    // usable, and a family revoked for reuse stays revoked although the answer is 401.
    let mut conn = st.db.get().await?;
    tx::begin(&mut conn, TxMode::Write).await?;
    let outcome = rotate(st, &mut conn, &claims).await;
    let outcome = tx::finish(&mut conn, outcome).await?;
    drop(conn);
    let refused = || Error::Unauthorized("Invalid, revoked or expired refresh token.".into());
    match outcome {
        Rotation::Issued(tokens) => {
            attempt.succeeded().await?;
            Ok(HttpResponse::Ok().json(tokens))
        }
        Rotation::NoUser => Err(Error::Unauthorized(
            "The token's user does not exist or is disabled.".into(),
        )),
        Rotation::Refused | Rotation::Reused => {
            attempt.failed_for(Account::User(claims.sub)).await?;
            Err(refused())
        }
    }
}

/// The refresh itself, on `conn` inside a write transaction. The user's row is locked first
/// (see `lock_user_in`): a password change, a disable or a logout everywhere updates that row,
/// so it either commits before (the version read here is the raised one and the token is
/// refused) or waits until this rotation has committed (and then revokes the refresh token
/// issued here, which it can now see). Without the lock, on PostgreSQL, the revoking `UPDATE`
/// could miss the new token of a rotation still in progress, and a stolen refresh token used
/// in a loop would outlive the password change.
async fn rotate(st: &ApiState, conn: &mut Conn, claims: &Claims) -> Result<Rotation, Error> {
    let Some((version, enabled)) = lock_user_in(conn, claims.sub).await? else {
        return Ok(Rotation::NoUser);
    };
    if !enabled {
        return Ok(Rotation::NoUser);
    }
    let record = refresh_record_in(conn, &claims.jti.to_string())
        .await?
        .filter(|r| r.user_id == claims.sub);
    let Some(record) = record else {
        return Ok(Rotation::Refused);
    };
    if record.revoked {
        // Reuse of a rotated (or otherwise ended) token: whoever holds its successors may
        // have stolen it, so the whole family ends (OAuth 2.0 Security BCP, section 4.14).
        revoke_family_in(conn, claims.sub, record.family).await?;
        return Ok(Rotation::Reused);
    }
    if record.expired || claims.ver.unwrap_or(0) != version {
        return Ok(Rotation::Refused);
    }
    if !revoke_record_in(conn, record.id).await? {
        return Ok(Rotation::Refused);
    }
    let tokens = issue_in_family(st, conn, claims.sub, version, record.family).await?;
    Ok(Rotation::Issued(tokens))
}

/// One role the caller holds, as `me/` lists it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(rename = "HeldRole")]
struct HeldRole {
    /// The role name, such as `ADMIN`.
    role: String,
    /// The domain the role is limited to; `null`: every domain.
    domain_id: Option<Uuid>,
}

/// The schema of `me/` without a presenter: the model's response `R` with a required member
/// `roles`, the caller's roles (`[{"role": "ADMIN", "domain_id": null}]`), unless `R` has a
/// member of that name itself (it is then left alone, in the body as in the schema). Named
/// `Current<R>` (`CurrentUser`).
struct WithRoles<R>(std::marker::PhantomData<R>);

impl<R: schemars::JsonSchema> schemars::JsonSchema for WithRoles<R> {
    fn schema_name() -> String {
        format!("Current{}", R::schema_name())
    }

    fn json_schema(gen: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        let mut schema = R::json_schema(gen);
        let roles = gen.subschema_for::<Vec<HeldRole>>();
        if let schemars::schema::Schema::Object(o) = &mut schema {
            o.metadata().description = Some(
                "The signed-in user, as the service returns users, with the roles it holds."
                    .to_owned(),
            );
            let object = o.object();
            if !object.properties.contains_key(ROLES) {
                object.properties.insert(ROLES.to_owned(), roles);
                object.required.insert(ROLES.to_owned());
            }
        }
        schema
    }
}

/// The member of `me/` that lists the caller's roles.
const ROLES: &str = "roles";

/// The body of `me/` without a presenter: the model's response, its members in their order,
/// then `roles`.
#[derive(Serialize)]
struct WithRolesBody<R> {
    #[serde(flatten)]
    user: R,
    roles: Vec<HeldRole>,
}

/// The body of `me/` for `user` (the model's response `response`): with `roles`, the caller's
/// roles ordered by name then domain (so that the body, and its tag, do not depend on the
/// order rows are read in), unless the model has a member of that name (`own_roles`).
fn with_roles(
    response: impl Serialize,
    user: &CurrentUser,
    own_roles: bool,
) -> Result<Vec<u8>, Error> {
    let internal = |e: serde_json::Error| Error::Internal(format!("serializing a response: {e}"));
    if own_roles {
        return serde_json::to_vec(&response).map_err(internal);
    }
    let mut roles: Vec<HeldRole> = user
        .roles
        .iter()
        .map(|g| HeldRole {
            role: g.role.clone(),
            domain_id: g.domain_id,
        })
        .collect();
    roles.sort_by(|a, b| (&a.role, a.domain_id).cmp(&(&b.role, b.domain_id)));
    serde_json::to_vec(&WithRolesBody {
        user: response,
        roles,
    })
    .map_err(internal)
}

async fn me<U: UserModel>(
    req: HttpRequest,
    present: Option<PresentFn<U>>,
    own_roles: bool,
) -> Result<HttpResponse, Error> {
    let user = require_user(&req).await?;
    let st = ApiState::of(&req)?;
    let mut conn = st.db.get().await?;
    let found = U::select(
        &mut conn,
        &[Cond::eq("id", Arg::Uuid(user.id))],
        &[],
        Some(crate::crud::Window::first(1)),
    )
    .await?;
    let u = found
        .into_iter()
        .next()
        .ok_or_else(|| Error::Unauthorized("The token's user does not exist.".into()))?;
    // The presenter takes its own connection.
    drop(conn);
    let body = match present {
        None => with_roles(U::Response::from(u), &user, own_roles)?,
        Some(present) => present(&st.db, vec![u])
            .await?
            .pop()
            .ok_or_else(|| Error::Internal("the presenter returned no item".into()))?,
    };
    // The strong tag of the representation sent, as an item's GET gives it.
    let etag = tag_of(&body);
    if if_none_match(req.headers())?.is_some_and(|p| p.matches_weak(&etag)) {
        return Ok(HttpResponse::NotModified()
            .insert_header((header::ETAG, etag))
            .finish());
    }
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .insert_header((header::ETAG, etag))
        .body(body))
}

async fn logout(req: HttpRequest, body: LogoutRequest) -> Result<HttpResponse, Error> {
    let user = require_user(&req).await?;
    let st = ApiState::of(&req)?;
    if let Some(token) = &body.refresh_token {
        let claims = st.tokens.verify(token, TokenKind::Refresh)?;
        if claims.sub != user.id {
            return Err(Error::Unauthorized(
                "This refresh token belongs to another user.".into(),
            ));
        }
        revoke_token(&st.db, &claims.jti.to_string()).await?;
    }
    if body.all {
        end_sessions(&st.db, user.id).await?;
    }
    Ok(HttpResponse::NoContent().finish())
}

async fn change_password(req: HttpRequest, body: PasswordChange) -> Result<HttpResponse, Error> {
    let user = require_user(&req).await?;
    let st = ApiState::of(&req)?;
    let policy = st.config.password_policy();
    let cost = policy.cost;
    // By id: an address shared with another account (an unresolved collision, see
    // `identity`) must not lead to that account's hash.
    let hash = users_password(&st.db, user.id).await?;
    // Guessing the current password with a stolen access token is throttled like a login.
    let attempt = Attempt::begin(&req, Account::User(user.id)).await?;
    let verified = match verify_password(body.current_password, hash, cost).await {
        Ok(v) => v,
        Err(e) => return attempt.not_checked(e).await,
    };
    if !verified {
        return Err(Error::Unauthorized(
            "The current password is not correct.".into(),
        ));
    }
    attempt.succeeded().await?;
    // The new password ends every older session (a database trigger raises the credential
    // version and revokes the refresh tokens); this one continues with new tokens.
    // The new password and this session's tokens are written in one transaction.
    let hash = hash_password_for("new_password", body.new_password, policy).await?;
    let mut conn = st.db.get().await?;
    tx::begin(&mut conn, TxMode::Write).await?;
    let outcome = async {
        set_password_hash_in(&mut conn, user.id, &hash).await?;
        issue_tokens_in(st, &mut conn, user.id).await
    }
    .await;
    let tokens = tx::finish(&mut conn, outcome).await?;
    Ok(HttpResponse::Ok().json(tokens))
}

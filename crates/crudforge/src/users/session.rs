//! A user blueprint's sessions: `login/`, `refresh/`, `logout/` and `me/password/`, the
//! tokens they issue (access and refresh, a refresh token's family and its rotation), and the
//! login hook an application adds.

use super::model::UserModel;
use super::store::{find_by_email, set_password_hash_in, store_rehash, users_password};
use super::tokens::{
    end_sessions, lock_user_in, refresh_record_in, revoke_family_in, revoke_record_in,
    revoke_token, store_refresh_in, token_version, token_version_in,
};
pub(crate) use crate::api::Entry;
use crate::auth::password::{hash_cost, hash_unchecked};
use crate::auth::throttle::{Account, Attempt};
use crate::auth::{
    hash_password_for, load_user, require_user, verify_password, Claims, CurrentUser, TokenKind,
};
use crate::crud::CustomRoute;
use crate::db::tx::{self, TxMode};
use crate::db::{Conn, Database};
use crate::error::Error;
use crate::state::ApiState;
use actix_web::{web, HttpRequest, HttpResponse};
use apistos::paths::OperationType;
use chrono::DateTime;
use futures_util::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};
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

/// `POST refresh/`, public: a refresh token exchanged for new tokens.
pub(super) fn refresh_route<U: UserModel>(tag: &str) -> CustomRoute {
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
pub(super) fn logout_route<U: UserModel>(tag: &str) -> CustomRoute {
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
pub(super) fn password_route<U: UserModel>(tag: &str) -> CustomRoute {
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

/// The surfaces' refusals of a login whose password matched (see `Surface::admits`), of a
/// sign-in some other way (a provider's, a mailed link's), or of a refresh.
pub(crate) async fn admitted(st: &ApiState, user: Uuid, entry: Entry) -> Result<(), Error> {
    for surface in crate::SURFACES {
        if let Some(check) = surface.admits(st, user, entry) {
            check.await?;
        }
    }
    Ok(())
}

/// The checks a sign-in passes after its credentials matched and before tokens are issued:
/// the optional surfaces' (an address verified first, with mail's `MAIL_VERIFICATION`; a
/// second factor, with the `factors` feature, answered as a 401 whose problem carries a
/// `challenge`). The library's own sign-ins (`login/`, a provider, a mailed link) make them;
/// a sign-in an application writes itself (a password recovery that issues a token) calls
/// this before it issues one.
///
/// # Errors
///
/// The surfaces' refusal; database errors.
pub async fn admit_sign_in(st: &ApiState, user: Uuid) -> Result<(), Error> {
    admitted(st, user, Entry::SIGN_IN).await
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
    issue_tokens_at(st, conn, user, None).await
}

/// [`issue_tokens_in`] at the assurance level `aal` (2: the sign-in passed a second factor;
/// see [`Claims::aal`]).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn issue_tokens_at(
    st: &ApiState,
    conn: &mut Conn,
    user: Uuid,
    aal: Option<u8>,
) -> Result<LoginResponse, Error> {
    let version = token_version_in(conn, user).await?;
    issue_in_family(st, conn, user, version, Uuid::new_v4(), aal).await
}

/// Issues an access token and a refresh token at credential version `version` and assurance
/// level `aal`, the refresh token stored in the refresh-token family `family`.
async fn issue_in_family(
    st: &ApiState,
    conn: &mut Conn,
    user: Uuid,
    version: i64,
    family: Uuid,
    aal: Option<u8>,
) -> Result<LoginResponse, Error> {
    let tokens = &st.tokens;
    let (access, _) =
        tokens.issue_assured(user, TokenKind::Access, tokens.access_ttl, version, aal)?;
    let (refresh, claims) =
        tokens.issue_assured(user, TokenKind::Refresh, tokens.refresh_ttl, version, aal)?;
    let expires = DateTime::from_timestamp(claims.exp, 0);
    store_refresh_in(conn, user, &claims.jti.to_string(), expires, family).await?;
    Ok(LoginResponse {
        access_token: access,
        refresh_token: refresh,
        token_type: "bearer".to_owned(),
        expires_in: st.tokens.access_ttl,
    })
}

pub(super) async fn login(
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
    admitted(st, id, Entry::SIGN_IN).await?;
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
    // The surfaces may refuse a session to go on (a second factor now required of it).
    let entry = Entry::Refresh {
        second_factor: claims.second_factor(),
    };
    admitted(st, claims.sub, entry).await?;
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
    let family = record.family;
    let tokens = issue_in_family(st, conn, claims.sub, version, family, claims.aal).await?;
    Ok(Rotation::Issued(tokens))
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

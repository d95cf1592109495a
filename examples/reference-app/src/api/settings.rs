//! Handlers of the reference application's own endpoints: the public profile, token login,
//! settings, invites, password recovery, and the login domain check.

use super::models::{AppUser, Invite, InviteCreate, PublicUser, PublicUsers, RefDomain};
use actix_web::{web, HttpRequest, HttpResponse};
use crudforge::auth::{Auth, CurrentUser, TokenKind};
use crudforge::crud::{Arg, Cond, Present, Resource};
use crudforge::sql_types::Portable;
use crudforge::users::{schema::user_settings, LoginContext};
use crudforge::{with_conn, ApiState, Database, Error};
use diesel::prelude::*;
use futures_util::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// How long a recovery token lives: two hours.
pub const RECOVERY_TTL_SECONDS: i64 = 7200;

/// The user named in the path; a malformed id names nobody (404).
fn path_user(raw: &str) -> Result<Uuid, Error> {
    Uuid::parse_str(raw).map_err(|_| Error::NotFound("No such user.".into()))
}

/// SPEC's domain access rule, with the domain looked up by name: an unknown domain is 404,
/// a user without access 401.
async fn check_domain(
    db: &Database,
    user: &CurrentUser,
    domain: Option<&str>,
) -> Result<(), Error> {
    let Some(name) = domain else {
        return Ok(());
    };
    let d = RefDomain::by_name(db, name)
        .await?
        .ok_or_else(|| Error::NotFound(format!("No domain named {name:?}.").into()))?;
    if user.has_domain_access(Some(d.id)) {
        Ok(())
    } else {
        Err(Error::Unauthorized("No access to this domain.".into()))
    }
}

/// The login-validation hook: domain access when the login names a domain.
pub fn login_hook<'a>(ctx: &'a LoginContext<'a>) -> LocalBoxFuture<'a, Result<(), Error>> {
    Box::pin(check_domain(ctx.db, ctx.user, ctx.domain))
}

/// `GET /api/user/me`: the public user schema of the caller.
pub async fn me(Auth(user): Auth, req: HttpRequest) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let found = AppUser::find(&st.db, user.id)
        .await?
        .ok_or_else(|| Error::Unauthorized("No current user.".into()))?;
    let mut out = PublicUsers::present(&st.db, vec![found]).await?;
    let body: PublicUser = out
        .pop()
        .ok_or_else(|| Error::Internal("no profile".into()))?;
    Ok(HttpResponse::Ok().json(body))
}

/// `POST /api/user/token_login` body.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct TokenLogin {
    /// A stored token (API key).
    pub token: String,
    /// Domain name to log in to.
    #[serde(default)]
    pub domain: Option<String>,
}

/// An access token.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct AccessToken {
    /// The token.
    pub access_token: String,
    /// Always `bearer`.
    pub token_type: String,
}

/// `POST /api/user/token_login`: exchanges a stored token for an access token.
pub async fn token_login(
    req: HttpRequest,
    body: crudforge::Json<TokenLogin>,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let owner = crudforge::users::token_owner(&st.db, &body.token)
        .await?
        .ok_or_else(|| Error::Unauthorized("invalid token".into()))?;
    let user = crudforge::users::load_user(&st.db, owner)
        .await?
        .filter(|u| u.is_enabled)
        .ok_or_else(|| Error::Unauthorized("The token's owner cannot log in.".into()))?;
    check_domain(&st.db, &user, body.domain.as_deref()).await?;
    Ok(HttpResponse::Ok().json(AccessToken {
        access_token: st.tokens.access(user.id)?,
        token_type: "bearer".to_owned(),
    }))
}

/// Whether the caller may write the user `target` (the user itself or an admin).
fn may_write(caller: &CurrentUser, target: Uuid) -> Result<(), Error> {
    if caller.id == target || caller.is_admin() {
        Ok(())
    } else {
        Err(Error::Forbidden(
            "You may not access this user's data.".into(),
        ))
    }
}

/// One setting on the wire.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema, PartialEq, Eq)]
pub struct SettingBody {
    /// Setting name (1 to 255 characters).
    #[schemars(length(min = 1, max = 255))]
    pub key: String,
    /// Setting value.
    #[serde(default)]
    pub value: Option<String>,
}

async fn settings_of(db: &Database, user: Uuid) -> Result<Vec<SettingBody>, Error> {
    let mut conn = db.get().await?;
    let rows: Vec<(String, Option<String>)> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::load(
            user_settings::table
                .filter(user_settings::user_id.eq(Portable(user)))
                .order(user_settings::key)
                .select((user_settings::key, user_settings::value)),
            c,
        )
        .await
    })?;
    Ok(rows
        .into_iter()
        .map(|(key, value)| SettingBody { key, value })
        .collect())
}

async fn user_exists(db: &Database, id: Uuid) -> Result<(), Error> {
    AppUser::find(db, id)
        .await?
        .map(|_| ())
        .ok_or_else(|| Error::NotFound("No such user.".into()))
}

/// `GET /api/user/{user_id}/settings/`.
pub async fn list_settings(
    Auth(caller): Auth,
    req: HttpRequest,
    path: web::Path<String>,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let user = path_user(&path)?;
    may_write(&caller, user)?;
    user_exists(&st.db, user).await?;
    Ok(HttpResponse::Ok().json(settings_of(&st.db, user).await?))
}

/// `POST /api/user/{user_id}/settings/`: creates or updates one key; returns every setting.
pub async fn put_setting(
    Auth(caller): Auth,
    req: HttpRequest,
    path: web::Path<String>,
    body: crudforge::Json<SettingBody>,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let user = path_user(&path)?;
    may_write(&caller, user)?;
    let SettingBody { key, value } = body.into_inner();
    if key.is_empty() {
        return Err(Error::invalid_field("key", "must not be empty"));
    }
    crudforge::crud::check_max_len("key", &key, 255)?;
    user_exists(&st.db, user).await?;
    let now = crudforge::crud::now();
    let mut conn = st.db.get().await?;
    let changed = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(
                user_settings::table
                    .filter(user_settings::user_id.eq(Portable(user)))
                    .filter(user_settings::key.eq(key.clone())),
            )
            .set((
                user_settings::value.eq(value.clone()),
                user_settings::updated_at.eq(Portable(now)),
            )),
            c,
        )
        .await
    })?;
    if changed == 0 {
        with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::execute(
                diesel::insert_into(user_settings::table).values((
                    user_settings::id.eq(Portable(Uuid::new_v4())),
                    user_settings::created_at.eq(Portable(now)),
                    user_settings::updated_at.eq(Portable(now)),
                    user_settings::user_id.eq(Portable(user)),
                    user_settings::key.eq(key.clone()),
                    user_settings::value.eq(value.clone()),
                )),
                c,
            )
            .await
        })?;
    }
    drop(conn);
    Ok(HttpResponse::Ok().json(settings_of(&st.db, user).await?))
}

/// `POST /api/user/{user_id}/invite/` body.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InviteBody {
    /// Where to send the invitation (at most 1024 characters).
    #[schemars(email, length(max = 1024))]
    pub recipient_email: String,
    /// The recipient's account, when known.
    #[serde(default)]
    pub recipient_user_id: Option<Uuid>,
    /// Invitation token (at most 1024 characters).
    #[serde(default)]
    #[schemars(length(max = 1024))]
    pub token: Option<String>,
}

/// `GET /api/user/{user_id}/invite/`: invites sent by that user.
pub async fn list_invites(
    Auth(caller): Auth,
    req: HttpRequest,
    path: web::Path<String>,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let user = path_user(&path)?;
    may_write(&caller, user)?;
    user_exists(&st.db, user).await?;
    let mut conn = st.db.get().await?;
    let conds = [Cond::eq("sender_user_id", Arg::Uuid(user))];
    let items = Invite::select(&mut conn, &conds, &[], None).await?;
    let out: Vec<<Invite as Resource>::Response> = items.into_iter().map(Into::into).collect();
    Ok(HttpResponse::Ok().json(out))
}

/// `POST /api/user/{user_id}/invite/`: the sender is always the user in the path.
pub async fn create_invite(
    Auth(caller): Auth,
    req: HttpRequest,
    path: web::Path<String>,
    body: crudforge::Json<InviteBody>,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let user = path_user(&path)?;
    may_write(&caller, user)?;
    let body = body.into_inner();
    crudforge::crud::check_email("recipient_email", &body.recipient_email)?;
    crudforge::crud::check_max_len("recipient_email", &body.recipient_email, 1024)?;
    if let Some(t) = &body.token {
        crudforge::crud::check_max_len("token", t, 1024)?;
    }
    user_exists(&st.db, user).await?;
    if let Some(r) = body.recipient_user_id {
        if AppUser::find(&st.db, r).await?.is_none() {
            return Err(Error::invalid_field("recipient_user_id", "no such user"));
        }
    }
    let mut conn = st.db.get().await?;
    let invite = Invite::insert(
        &mut conn,
        InviteCreate {
            recipient_user_id: body.recipient_user_id,
            recipient_email: body.recipient_email,
            sender_user_id: user,
            token: body.token,
            token_used: false,
        },
    )
    .await?;
    Ok(HttpResponse::Created().json(<Invite as Resource>::Response::from(invite)))
}

/// `POST /api/user/send_recovery_token` body.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct RecoveryRequest {
    /// The account's e-mail address.
    pub email: String,
    /// The account's first name (compared case-insensitively).
    pub first_name: String,
}

/// The recovery token, returned only in debug mode.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct DebugRecoveryToken {
    /// A token for `reset_password`, valid for two hours.
    pub debug_recovery_token: String,
}

/// `POST /api/user/send_recovery_token`.
pub async fn send_recovery_token(
    req: HttpRequest,
    body: crudforge::Json<RecoveryRequest>,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let refused = || Error::Unauthorized("Unknown e-mail address or name.".into());
    let user = AppUser::find_by_email(&st.db, &body.email)
        .await?
        .ok_or_else(refused)?;
    // As the reference does: a missing first name compares as "".
    let matches =
        user.first_name.as_deref().unwrap_or("").to_lowercase() == body.first_name.to_lowercase();
    if !matches {
        return Err(refused());
    }
    let (token, _) = st
        .tokens
        .issue(user.id, TokenKind::Recovery, RECOVERY_TTL_SECONDS)?;
    if st.config.debug {
        Ok(HttpResponse::Ok().json(DebugRecoveryToken {
            debug_recovery_token: token,
        }))
    } else {
        // Sending the e-mail is outside the contract; the token is not shown.
        Ok(HttpResponse::Ok()
            .content_type("text/plain; charset=utf-8")
            .body("A recovery token has been issued."))
    }
}

/// `POST /api/user/reset_password` body.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct ResetRequest {
    /// A token from `send_recovery_token`.
    pub recovery_token: String,
    /// The new password.
    pub new_password: String,
}

/// `POST /api/user/reset_password`: sets the password of the token's subject.
pub async fn reset_password(
    req: HttpRequest,
    body: crudforge::Json<ResetRequest>,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let claims = st
        .tokens
        .verify(&body.recovery_token, TokenKind::Recovery)
        .map_err(|_| Error::Unauthorized("Invalid recovery token.".into()))?;
    crudforge::users::set_password(
        &st.db,
        claims.sub,
        &body.new_password,
        st.config.bcrypt_cost,
    )
    .await
    .map_err(|e| match e {
        Error::NotFound(_) => Error::Unauthorized("Invalid recovery token.".into()),
        other => other,
    })?;
    Ok(HttpResponse::Ok().json(AccessToken {
        access_token: st.tokens.access(claims.sub)?,
        token_type: "bearer".to_owned(),
    }))
}

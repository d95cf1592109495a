//! Password recovery: `POST /api/user/send_recovery_token` and
//! `POST /api/user/reset_password`.

use super::login::AccessToken;
use super::users::AppUser;
use actix_web::{HttpRequest, HttpResponse};
use crudforge::auth::throttle::{Account, Attempt};
use crudforge::auth::TokenKind;
use crudforge::{ApiState, Error};
use serde::{Deserialize, Serialize};

/// How long a recovery token lives: two hours.
pub const RECOVERY_TTL_SECONDS: i64 = 7200;

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
    let user = AppUser::find_by_email(&st.db, &body.email).await?;
    // Throttled per account and client address: guessing names is guessing credentials.
    let account = user
        .as_ref()
        .map_or(Account::Email(&body.email), |u| Account::User(u.id));
    let attempt = Attempt::begin(&req, account).await?;
    let user = user.ok_or_else(refused)?;
    // As the reference does: a missing first name compares as "".
    let matches =
        user.first_name.as_deref().unwrap_or("").to_lowercase() == body.first_name.to_lowercase();
    if !matches {
        return Err(refused());
    }
    attempt.succeeded().await?;
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
    // Throttled by client address; a token that does not decode counts as a failure.
    let attempt = Attempt::begin(&req, Account::Unknown).await?;
    let claims = st
        .tokens
        .verify(&body.recovery_token, TokenKind::Recovery)
        .map_err(|_| Error::Unauthorized("Invalid recovery token.".into()))?;
    attempt.succeeded().await?;
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

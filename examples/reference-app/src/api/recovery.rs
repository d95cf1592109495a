//! Password recovery: `POST /api/user/send_recovery_token` and
//! `POST /api/user/reset_password`.

use super::login::AccessToken;
use super::users::AppUser;
use actix_web::{HttpRequest, HttpResponse};
use crudforge::auth::{self, Account, Attempt, TokenKind};
use crudforge::prelude::*;
use crudforge::users::{self, TokenRecord};
use serde::{Deserialize, Serialize};

/// How long a recovery token lives: two hours.
pub const RECOVERY_TTL_SECONDS: i64 = 7200;

crudforge::settings! {
    /// Stricter recovery than the default, each turned on by a setting (see
    /// `docs/configuration.md`), read with the library's grammar: `RECOVERY_SINGLE_USE=yes`
    /// reads as `DEBUG=yes` does, and a malformed value stops start-up naming the key.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub struct RecoverySettings {
        /// An account without a first name may be recovered with an empty `first_name` (a
        /// missing name compares as ""). Off by default: with it on, anyone who knows such an
        /// account's e-mail address can recover it.
        RECOVERY_ALLOW_NO_FIRST_NAME => allow_no_first_name: bool = false, boolean, plain;
        /// A used recovery token's id is recorded, and a second use is refused by that record.
        /// Every token already stops at the first reset it makes (the reset changes the
        /// password it was issued for; see `reset_password`), so this only adds the record.
        /// Off (the default): a token may be used any number of times until it expires.
        RECOVERY_SINGLE_USE => single_use: bool = false, boolean, plain;
        /// Without `DEBUG`, an unknown e-mail address or a wrong name gets the same 200 answer
        /// as a match, so the endpoint tells nobody which addresses have accounts (off: 401).
        RECOVERY_UNIFORM_ANSWER => uniform_answer: bool = false, boolean, plain;
    }
}

/// `POST /api/user/send_recovery_token` body.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct RecoveryRequest {
    /// The account's e-mail address.
    pub email: String,
    /// The account's first name (compared case-insensitively).
    pub first_name: String,
}

/// The JSON answer of `send_recovery_token`: with `DEBUG`, and without it to a client that
/// asks for JSON (`Accept: application/json`); other clients get a plain-text message when
/// `DEBUG` is off.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[schemars(rename = "RecoveryTokenIssued")]
pub struct RecoveryTokenIssued {
    /// What happened: `A recovery token has been issued.`
    pub detail: String,
    /// Only with `DEBUG=true`: the token itself, for `reset_password`, valid for two hours.
    /// Absent otherwise (with `MAIL_TRANSPORT` set, the token is mailed to the account).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub debug_recovery_token: Option<String>,
}

/// The text of [`RecoveryTokenIssued::detail`].
const ISSUED: &str = "A recovery token has been issued.";

/// `POST /api/user/send_recovery_token`.
pub async fn send_recovery_token(
    req: HttpRequest,
    body: Json<RecoveryRequest>,
    settings: RecoverySettings,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    // Without DEBUG the answer is a plain-text message; a client that asks for JSON by
    // name (`Accept: application/json`, as generated clients do) gets the JSON shape instead.
    let json = wants_json(&req);
    let issued = || {
        if json {
            HttpResponse::Ok().json(RecoveryTokenIssued {
                detail: ISSUED.to_owned(),
                debug_recovery_token: None,
            })
        } else {
            HttpResponse::Ok()
                .content_type("text/plain; charset=utf-8")
                .body(ISSUED)
        }
    };
    // An unknown address or a wrong name is a failed guess: counted, and refused (or, with
    // RECOVERY_UNIFORM_ANSWER and DEBUG off, answered like a match).
    let refused = || {
        if settings.uniform_answer && !st.config.http.debug {
            Ok(issued())
        } else {
            Err(Error::Unauthorized(
                "Unknown e-mail address or name.".into(),
            ))
        }
    };
    // With mail, the limits of the recovery mail are counted for every address asked for,
    // with an account or not (429 past the client address's budget; at most one a minute to
    // an address, the answer alike).
    let mail_allowed = if crudforge::mail::configured(st) {
        crudforge::mail::allowed(&req, "recovery", &body.email).await?
    } else {
        false
    };
    let user = AppUser::find_by_email(&st.db, &body.email).await?;
    // Throttled per account and client address: guessing names is guessing credentials.
    let account = user
        .as_ref()
        .map_or(Account::Email(&body.email), |u| Account::User(u.id));
    let attempt = Attempt::begin(&req, account).await?;
    let Some(user) = user else {
        return refused();
    };
    // A missing first name compares as ""; that would hand a nameless account to whoever
    // knows its address, so it takes a setting.
    let first_name = user.first_name.as_deref().unwrap_or("");
    if first_name.is_empty() && !settings.allow_no_first_name {
        return refused();
    }
    if first_name.to_lowercase() != body.first_name.to_lowercase() {
        return refused();
    }
    attempt.succeeded().await?;
    // Issued at the user's credential version: a password change (a reset with this token
    // included), a disable or a logout everywhere ends it (see `reset_password`).
    let version = users::token_version(&st.db, user.id).await?;
    let (token, _) =
        st.tokens
            .issue_versioned(user.id, TokenKind::Recovery, RECOVERY_TTL_SECONDS, version)?;
    // With mail configured (MAIL_TRANSPORT), the token goes to the account's address, as a
    // link under MAIL_LINK_BASE and as itself, whatever DEBUG says: a job enqueued in its own
    // INSERT, sent by the jobs' workers (retried until the server takes it).
    if mail_allowed {
        let link = crudforge::mail::link(st, &format!("/reset-password?token={token}"));
        let values = serde_json::json!({
            "email": user.email,
            "token": token,
            "link": link,
            "minutes": RECOVERY_TTL_SECONDS / 60,
        });
        let mail = crudforge::mail::flow(st, "recovery", None, &user.email, &values)?;
        mail.enqueue(&mut st.db.get().await?).await?;
    }
    // The token is shown in the answer only in DEBUG mode.
    if st.config.http.debug {
        Ok(HttpResponse::Ok().json(RecoveryTokenIssued {
            detail: ISSUED.to_owned(),
            debug_recovery_token: Some(token),
        }))
    } else {
        Ok(issued())
    }
}

/// Whether the request's `Accept` names `application/json` (with or without parameters).
fn wants_json(req: &HttpRequest) -> bool {
    req.headers()
        .get(actix_web::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| {
            accept.split(',').any(|range| {
                range
                    .split(';')
                    .next()
                    .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
            })
        })
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
    body: Json<ResetRequest>,
    settings: RecoverySettings,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let invalid = || Error::Unauthorized("Invalid recovery token.".into());
    // Throttled by client address; a token that does not decode counts as a failure.
    let attempt = Attempt::begin(&req, Account::Unknown).await?;
    let claims = st
        .tokens
        .verify(&body.recovery_token, TokenKind::Recovery)
        .map_err(|_| invalid())?;
    // Hashed first (a password the rules refuse consumes nothing); then, in one transaction
    // that locks the user's row, the token is checked against the user's current credential
    // version (a password changed since it was issued, by this token or otherwise, a disable
    // or a logout everywhere ends it), and its use and the new password are written.
    // The token decoded, so a refusal here (a password the policy refuses, a full bcrypt
    // queue) is no guess and counts towards no lockout.
    let hashed = auth::hash_password_for(
        "new_password",
        body.new_password.clone(),
        st.config.password_policy(),
    )
    .await;
    let hash = match hashed {
        Ok(h) => h,
        Err(e) => return attempt.not_checked(e).await,
    };
    let mut conn = st.db.get().await?;
    conn.begin(TxMode::Write).await?;
    let outcome = async {
        if !users::claims_current_in(&mut conn, &claims).await? {
            return Ok(false);
        }
        users::set_password_hash_in(&mut conn, claims.sub, &hash).await?;
        Ok(true)
    }
    .await;
    match conn.finish(outcome).await {
        Ok(true) => {}
        // Not current any more (used, or the credentials changed since): a failed attempt
        // against its user, like a reuse.
        Ok(false) => {
            drop(conn);
            attempt.failed_for(Account::User(claims.sub)).await?;
            return Err(invalid());
        }
        Err(e) if e.problem().status == 409 => {
            drop(conn);
            attempt.failed_for(Account::User(claims.sub)).await?;
            return Err(invalid());
        }
        Err(Error::NotFound(_)) => return Err(invalid()),
        Err(e) => return Err(e),
    }
    drop(conn);
    if settings.single_use {
        // The token's id is recorded once the password changed; a second use finds it (and
        // counts as a failed attempt against its user).
        users::store_token(
            &st.db,
            TokenRecord::Recovery,
            claims.sub,
            &claims.jti.to_string(),
            Some("used recovery token"),
            chrono::DateTime::from_timestamp(claims.exp, 0),
        )
        .await?;
    }
    attempt.succeeded().await?;
    // The new password is set; a sign-in with it passes the same checks as a login (a second
    // factor, when the account has one).
    users::admit_sign_in(st, claims.sub).await?;
    Ok(HttpResponse::Ok().json(AccessToken {
        access_token: users::access_token(st, claims.sub).await?,
        token_type: "bearer".to_owned(),
    }))
}

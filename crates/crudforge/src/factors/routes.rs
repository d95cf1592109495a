//! The factors' routes beside every user blueprint: a sign-in's second step
//! (`factors/verify/`), and the signed-in account's factors: the list, a TOTP enrolled and
//! confirmed, a factor removed, new recovery codes.

use super::recovery::{new_codes, normalize};
use super::ticket::{Purpose, Ticket};
use super::{policy, store, totp, Settings};
use crate::auth::throttle::{Account, Attempt};
use crate::auth::{require_user, CurrentUser};
use crate::crud::CustomRoute;
use crate::db::Conn;
use crate::error::Error;
use crate::state::ApiState;
use crate::users::session::issue_tokens_at;
use crate::users::tokens::end_sessions_in;
use crate::users::{Accounts, LoginResponse};
use actix_web::{web, HttpRequest, HttpResponse};
use apistos::paths::OperationType;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The assurance level of a session that passed a second factor.
pub(super) const SECOND_FACTOR: Option<u8> = Some(2);

/// Who may enroll or confirm a factor ([`enroller`]), in the description's words.
pub(super) const ENROLLERS: &str =
    "the holder of an enrollment ticket (a sign-in's challenge gives it), or \
    any signed-in user; an account that has a second factor adds another only from a session \
    that passed one";

/// Who may renew recovery codes ([`needs_second_factor`]), in the description's words.
const PASSED: &str = "a signed-in user whose session passed a second factor";

/// Who may remove a factor ([`remove`]), in the description's words.
const REMOVERS: &str = "any signed-in user, of their own factors; a confirmed one only from a \
    session that passed a second factor";

/// `factors/verify/`'s body: the ticket of the sign-in's challenge and one second factor.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct VerifyBody {
    /// The challenge's ticket.
    factor_ticket: String,
    /// A code of the authenticator app (six digits).
    #[serde(default)]
    code: Option<String>,
    /// Or one of the recovery codes, used up by this sign-in.
    #[serde(default)]
    recovery_code: Option<String>,
}

/// `me/factors/`'s answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct FactorList {
    /// The account's factors, oldest first.
    factors: Vec<store::Listed>,
    /// How many recovery codes are left.
    recovery_codes_left: i64,
    /// Whether the account must have a second factor (`AUTH_FACTOR_ROLES`,
    /// `AUTH_FACTOR_DOMAINS`).
    required: bool,
}

/// `me/factors/totp/`'s body (and `me/factors/passkey/`'s).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EnrollBody {
    /// A name for it (`phone`).
    #[serde(default)]
    pub(super) label: Option<String>,
    /// The ticket of a sign-in refused until the account enrolls a factor (instead of an
    /// access token).
    #[serde(default)]
    pub(super) factor_ticket: Option<String>,
}

/// `me/factors/totp/`'s answer: what the authenticator app needs. Shown once.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Enrolled {
    /// The new factor's id, to confirm.
    id: Uuid,
    /// The secret in base32, to type into the app by hand.
    secret: String,
    /// The `otpauth://totp/` URL, to show as a QR code the app scans.
    otpauth_url: String,
}

/// `me/factors/{factor_id}/confirm/`'s body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConfirmBody {
    /// A code the app shows now.
    code: String,
    /// As for `me/factors/totp/`: the enrollment ticket, instead of an access token.
    #[serde(default)]
    factor_ticket: Option<String>,
}

/// A confirmed factor's answer: new tokens (every other session ended) and, for the
/// account's first factor, its recovery codes, shown once.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Confirmed {
    /// The session's new tokens, at assurance level 2.
    #[serde(flatten)]
    tokens: LoginResponse,
    /// The recovery codes, when this is the account's first factor: each signs in once in
    /// place of a code. Keep them somewhere safe.
    #[serde(skip_serializing_if = "Option::is_none")]
    recovery_codes: Option<Vec<String>>,
}

/// `me/factors/recovery_codes/`'s answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct RecoveryCodes {
    /// The new codes; the old ones no longer work.
    recovery_codes: Vec<String>,
}

/// The routes beside the user blueprint `face`.
pub(crate) fn routes(face: &Accounts) -> Vec<CustomRoute> {
    let (model, tag) = (face.name, face.tag.as_str());
    vec![
        CustomRoute::new(OperationType::Post, "factors/verify/", || {
            web::post().to(|req: HttpRequest, body: crate::Json<VerifyBody>| async move {
                verify(req, body.into_inner()).await
            })
        })
        .operation_id(&format!("verify{model}SecondFactor"))
        .summary("Finish a sign-in with a second factor: the challenge's ticket and a code for tokens")
        .body::<VerifyBody>()
        .responds::<LoginResponse>()
        .errors(&[401, 422, 429])
        .tag(tag)
        .public(),
        CustomRoute::new(OperationType::Get, "me/factors/", || web::get().to(list))
            .operation_id(&format!("list{model}Factors"))
            .summary("One's own second factors")
            .responds::<FactorList>()
            .errors(&[401])
            .tag(tag),
        CustomRoute::new(OperationType::Post, "me/factors/totp/", || {
            web::post().to(|req: HttpRequest, body: crate::Json<EnrollBody>| async move {
                enroll(req, body.into_inner()).await
            })
        })
        .operation_id(&format!("enroll{model}Totp"))
        .summary("Add an authenticator app (TOTP): its secret, to confirm with a first code")
        .body::<EnrollBody>()
        .responds::<Enrolled>()
        .status(201)
        .errors(&[401, 403, 422])
        .tag(tag)
        .callers(ENROLLERS)
        .public(),
        // Before the routes of `{factor_id}`, which would take its path.
        CustomRoute::new(OperationType::Post, "me/factors/recovery_codes/", || {
            web::post().to(renew_codes)
        })
        .operation_id(&format!("renew{model}RecoveryCodes"))
        .summary("New recovery codes (from a session that passed a second factor)")
        .responds::<RecoveryCodes>()
        .errors(&[401, 403, 409])
        .tag(tag)
        .callers(PASSED),
        CustomRoute::new(
            OperationType::Post,
            "me/factors/{factor_id}/confirm/",
            || {
                web::post().to(
                    |req: HttpRequest, id: web::Path<String>, body: crate::Json<ConfirmBody>| async move {
                        confirm(req, &id, body.into_inner()).await
                    },
                )
            },
        )
        .operation_id(&format!("confirm{model}Factor"))
        .summary("Confirm a new factor with a code: new tokens, and recovery codes for the first")
        .body::<ConfirmBody>()
        .responds::<Confirmed>()
        .errors(&[401, 404, 409, 422, 429])
        .tag(tag)
        .callers(ENROLLERS)
        .public(),
        CustomRoute::new(OperationType::Delete, "me/factors/{factor_id}/", || {
            web::delete().to(|req: HttpRequest, id: web::Path<String>| async move {
                remove(req, &id).await
            })
        })
        .operation_id(&format!("remove{model}Factor"))
        .summary("Remove one's own factor (from a session that passed one); other sessions end")
        .responds::<LoginResponse>()
        .errors(&[401, 403, 404, 409])
        .tag(tag)
        .callers(REMOVERS),
    ]
}

pub(super) fn bad_ticket() -> Error {
    Error::Unauthorized("The ticket is not valid or has expired: sign in again.".into())
}

fn bad_code() -> Error {
    Error::Unauthorized("The code is not right, or was already used.".into())
}

/// The user of a ticket for `purpose`, if it is valid, the account enabled and its
/// credentials unchanged since.
pub(super) async fn ticket_user(
    st: &ApiState,
    text: &str,
    purpose: Purpose,
) -> Result<Option<Uuid>, Error> {
    let now = chrono::Utc::now().timestamp();
    let Some(ticket) = Ticket::open(st.signing_key.expose(), purpose, text, now)? else {
        return Ok(None);
    };
    let Some((user, version)) = crate::auth::load_session(&st.db, ticket.user).await? else {
        return Ok(None);
    };
    Ok((user.is_enabled && version == ticket.version).then_some(ticket.user))
}

/// `POST factors/verify/`.
async fn verify(req: HttpRequest, body: VerifyBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let user = ticket_user(st, &body.factor_ticket, Purpose::Verify).await?;
    // Guessing codes is throttled like guessing passwords, per account and address.
    let account = user.map_or(Account::Unknown, Account::User);
    let attempt = Attempt::begin(&req, account).await?;
    let Some(user) = user else {
        return Err(bad_ticket());
    };
    let key = st.signing_key.expose();
    let settings = Settings::of(st)?;
    let tokens = st
        .db
        .in_tx(async |conn| {
            let passed = match (&body.code, &body.recovery_code) {
                (Some(code), None) => totp_passes(conn, key, settings, user, code).await?,
                (None, Some(code)) => store::use_code(conn, user, &normalize(code)).await?,
                _ => {
                    return Err(Error::Validation {
                        detail: "Send either `code` or `recovery_code`.".into(),
                        field: Some("code".into()),
                    })
                }
            };
            if !passed {
                return Ok(None);
            }
            issue_tokens_at(st, conn, user, SECOND_FACTOR)
                .await
                .map(Some)
        })
        .await?;
    let Some(tokens) = tokens else {
        return Err(bad_code());
    };
    attempt.succeeded().await?;
    Ok(HttpResponse::Ok().json(tokens))
}

/// Whether `code` is a code of one of `user`'s confirmed TOTP factors at a step not used
/// yet (the step is then taken).
async fn totp_passes(
    conn: &mut Conn,
    key: &[u8],
    settings: &Settings,
    user: Uuid,
    code: &str,
) -> Result<bool, Error> {
    let now = u64::try_from(chrono::Utc::now().timestamp()).unwrap_or(0);
    for factor in store::confirmed(conn, user, "totp").await? {
        let secret = totp::open(key, factor.id, &factor.secret)?;
        let t = totp::totp(secret, &settings.issuer, "")?;
        if let Some(step) = totp::step_of(&t, code, now) {
            return store::take_step(conn, factor.id, step).await;
        }
    }
    Ok(false)
}

/// `GET me/factors/`.
async fn list(req: HttpRequest) -> Result<HttpResponse, Error> {
    let user = require_user(&req).await?;
    let st = ApiState::of(&req)?;
    let settings = Settings::of(st)?;
    let mut conn = st.db.get().await?;
    let answer = FactorList {
        factors: store::list(&mut conn, user.id).await?,
        recovery_codes_left: store::codes_left(&mut conn, user.id).await?,
        required: policy::required(&mut conn, settings, user.id).await?,
    };
    Ok(HttpResponse::Ok().json(answer))
}

/// Who enrolls: the holder of an enrollment ticket, or the signed-in caller. An account that
/// has a factor adds another only from a session that passed one.
pub(super) async fn enroller(req: &HttpRequest, ticket: Option<&str>) -> Result<Uuid, Error> {
    let st = ApiState::of(req)?;
    if let Some(text) = ticket {
        return ticket_user(st, text, Purpose::Enroll)
            .await?
            .ok_or_else(bad_ticket);
    }
    let user = require_user(req).await?;
    let mut conn = st.db.get().await?;
    if store::count_confirmed(&mut conn, user.id).await? > 0 {
        needs_second_factor(&user)?;
    }
    Ok(user.id)
}

/// 403 unless `user`'s session passed a second factor.
fn needs_second_factor(user: &CurrentUser) -> Result<(), Error> {
    if user.second_factor {
        Ok(())
    } else {
        Err(Error::Forbidden(
            "This needs a session that passed a second factor: sign in with it first.".into(),
        ))
    }
}

/// A factor's label as given: trimmed, none when blank.
///
/// # Errors
///
/// 422 for a label longer than 100 characters.
pub(super) fn label_of(label: Option<String>) -> Result<Option<String>, Error> {
    let label = label.map(|l| l.trim().to_owned()).filter(|l| !l.is_empty());
    if label.as_ref().is_some_and(|l| l.chars().count() > 100) {
        return Err(Error::invalid_field(
            "label",
            "is longer than 100 characters",
        ));
    }
    Ok(label)
}

/// `POST me/factors/totp/`.
async fn enroll(req: HttpRequest, body: EnrollBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let user = enroller(&req, body.factor_ticket.as_deref()).await?;
    let label = label_of(body.label)?;
    let settings = Settings::of(st)?;
    let email = crate::auth::load_user(&st.db, user)
        .await?
        .map(|u| u.email)
        .unwrap_or_default();
    let id = Uuid::new_v4();
    let secret = totp::new_secret()?;
    let sealed = totp::seal(st.signing_key.expose(), id, &secret)?;
    let t = totp::totp(secret, &settings.issuer, &email)?;
    let mut conn = st.db.get().await?;
    store::add(&mut conn, id, user, "totp", label.as_deref(), &sealed).await?;
    Ok(HttpResponse::Created().json(Enrolled {
        id,
        secret: totp::base32(&t),
        otpauth_url: totp::url(&t)?,
    }))
}

/// A factor id of a path: 404 when it is not one.
pub(super) fn factor_id(text: &str) -> Result<Uuid, Error> {
    Uuid::parse_str(text).map_err(|_| Error::NotFound("No such factor.".into()))
}

/// `POST me/factors/{factor_id}/confirm/`.
async fn confirm(req: HttpRequest, id: &str, body: ConfirmBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let id = factor_id(id)?;
    let user = enroller(&req, body.factor_ticket.as_deref()).await?;
    let attempt = Attempt::begin(&req, Account::User(user)).await?;
    let settings = Settings::of(st)?;
    let key = st.signing_key.expose();
    let now = u64::try_from(chrono::Utc::now().timestamp()).unwrap_or(0);
    let confirmed = st
        .db
        .in_tx(async |conn| {
            let factor = store::factor(conn, user, id)
                .await?
                .ok_or_else(|| Error::NotFound("No such factor.".into()))?;
            if factor.confirmed {
                return Err(Error::Conflict("This factor is already confirmed.".into()));
            }
            if factor.kind != "totp" {
                return Err(Error::Conflict(
                    "This factor is a passkey: confirm it with the authenticator's credential \
                 (me/factors/passkey/{factor_id}/)."
                        .into(),
                ));
            }
            let t = totp::totp(totp::open(key, id, &factor.secret)?, &settings.issuer, "")?;
            let Some(step) = totp::step_of(&t, &body.code, now) else {
                return Ok(None);
            };
            if !store::take_step(conn, id, step).await? {
                return Ok(None);
            }
            let first = store::count_confirmed(conn, user).await? == 0;
            store::confirm(conn, id).await?;
            confirmed_now(st, conn, user, first).await.map(Some)
        })
        .await?;
    let Some(confirmed) = confirmed else {
        return Err(bad_code());
    };
    attempt.succeeded().await?;
    Ok(HttpResponse::Ok().json(confirmed))
}

/// The answer to a factor of `user`'s just confirmed (the account's `first`): new recovery
/// codes for a first factor, the account's other sessions ended, and tokens for this one at
/// assurance level 2.
///
/// # Errors
///
/// Database errors.
pub(super) async fn confirmed_now(
    st: &ApiState,
    conn: &mut Conn,
    user: Uuid,
    first: bool,
) -> Result<Confirmed, Error> {
    let codes = if first {
        let codes = new_codes()?;
        let digests: Vec<String> = codes.iter().map(|c| normalize(c)).collect();
        store::replace_codes(conn, user, &digests).await?;
        Some(codes)
    } else {
        None
    };
    // Sessions begun without this factor end; this one goes on, with it.
    end_sessions_in(conn, user).await?;
    let tokens = issue_tokens_at(st, conn, user, SECOND_FACTOR).await?;
    Ok(Confirmed {
        tokens,
        recovery_codes: codes,
    })
}

/// `DELETE me/factors/{factor_id}/`.
async fn remove(req: HttpRequest, id: &str) -> Result<HttpResponse, Error> {
    let user = require_user(&req).await?;
    let st = ApiState::of(&req)?;
    let id = factor_id(id)?;
    let settings = Settings::of(st)?;
    let tokens = st
        .db
        .in_tx(async |conn| {
            let factor = store::factor(conn, user.id, id)
                .await?
                .ok_or_else(|| Error::NotFound("No such factor.".into()))?;
            if factor.confirmed {
                needs_second_factor(&user)?;
                let last = store::count_confirmed(conn, user.id).await? == 1;
                if last && policy::required(conn, settings, user.id).await? {
                    return Err(Error::Conflict(
                        "This account must have a second factor: add another before removing this \
                     one."
                            .into(),
                    ));
                }
                if last {
                    store::drop_codes(conn, user.id).await?;
                }
            }
            store::remove(conn, user.id, id).await?;
            // Every other session ends; this one goes on with new tokens.
            end_sessions_in(conn, user.id).await?;
            let aal = user.second_factor.then_some(2);
            issue_tokens_at(st, conn, user.id, aal).await
        })
        .await?;
    Ok(HttpResponse::Ok().json(tokens))
}

/// `POST me/factors/recovery_codes/`.
async fn renew_codes(req: HttpRequest) -> Result<HttpResponse, Error> {
    let user = require_user(&req).await?;
    needs_second_factor(&user)?;
    let st = ApiState::of(&req)?;
    let codes = new_codes()?;
    let digests: Vec<String> = codes.iter().map(|c| normalize(c)).collect();
    st.db
        .in_tx(async |conn| {
            if store::count_confirmed(conn, user.id).await? == 0 {
                return Err(Error::Conflict(
                    "Recovery codes go with a second factor; this account has none.".into(),
                ));
            }
            store::replace_codes(conn, user.id, &digests).await
        })
        .await?;
    Ok(HttpResponse::Ok().json(RecoveryCodes {
        recovery_codes: codes,
    }))
}

//! The account flows by mail, beside every user blueprint once mail is configured, with no
//! application code: verification of a new account's address (`MAIL_VERIFICATION`), a new
//! verification link, an e-mail change confirmed on the new address with a notice and a
//! revert link to the old one, a forgotten password set from a link, and sign-in links
//! (`MAIL_SIGN_IN`). Links carry 256-bit
//! tokens kept as digests and used once ([`store`]); every request that mails is limited per
//! recipient and flow and per client address, in the shared throttle table; an address with
//! an account and one without get the same answer.
//!
//! | Module | Owns |
//! |---|---|
//! | `routes` | which routes the settings turn on, their bodies and descriptions |
//! | `verify` | the verification link of a new account, its resend, the login refusal |
//! | `address` | the e-mail change, its confirmation and its revert |
//! | `access` | sign-in links and the forgotten password |
//! | `store` | the links' tokens (digests, used once) and the accounts' addresses |

mod access;
mod address;
mod routes;
mod store;
mod verify;

pub(crate) use routes::routes;
use routes::{Detail, EmailBody, EmailChange, PasswordReset, TokenBody};
pub(crate) use verify::{account_created, admits};

use super::Mailer;
use crate::auth::throttle::{address_range, email_key, take};
use crate::auth::{normalize_email, require_user, verify_password, Account, Attempt};
use crate::crud::CustomRoute;
use crate::db::Conn;
use crate::error::Error;
use crate::schema::users;
use crate::sql_types::Portable;
use crate::state::ApiState;
use crate::users::session::{admitted, Entry};
use crate::users::{issue_tokens, LoginResponse};
use crate::with_conn;
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use apistos::paths::OperationType;
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use store::Flow;
use uuid::Uuid;

/// Whether new accounts verify their address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verification {
    /// No verification mail.
    Off,
    /// A link is mailed; logging in does not wait for it.
    Optional,
    /// A link is mailed; logging in is refused until it is followed.
    Required,
}

impl Verification {
    /// `MAIL_VERIFICATION`'s value; `None` for one it does not know.
    pub(crate) fn parse(value: Option<&str>) -> Option<Verification> {
        match value.map(str::trim) {
            None | Some("off") => Some(Verification::Off),
            Some("optional") => Some(Verification::Optional),
            Some("required") => Some(Verification::Required),
            Some(_) => None,
        }
    }
}

/// Whether `user`'s address is verified: `None` for an account made while verification was
/// off (it has no record), else whether the address it has now was verified (by its link, a
/// sign-in link or a confirmed change).
///
/// # Errors
///
/// Database errors.
pub async fn verified(conn: &mut Conn, user: Uuid) -> Result<Option<bool>, Error> {
    crate::users::addresses::verified(conn, user).await
}

/// The mailer, when mail is configured.
fn mailer(st: &ApiState) -> Option<&Arc<Mailer>> {
    st.ext.get::<Arc<Mailer>>()
}

fn answer(status: StatusCode, detail: &str) -> HttpResponse {
    HttpResponse::build(status).json(Detail {
        detail: detail.to_owned(),
    })
}

/// The refusal of a token that is unknown, used, expired or another flow's.
fn invalid() -> Error {
    Error::Unauthorized("Invalid or expired token.".into())
}

/// The flows' state: the mailer (404 when mail is not configured, as if the route did not
/// exist; it is not registered then).
fn flows(st: &ApiState) -> Result<&Arc<Mailer>, Error> {
    mailer(st).ok_or_else(|| Error::NotFound("Not found.".into()))
}

/// The budget of the request's client address: one more mail asked for, or 429.
async fn client_budget(req: &HttpRequest, st: &ApiState) -> Result<(), Error> {
    let ops = &st.config.ops;
    if ops.mail_max_per_address == 0 {
        return Ok(());
    }
    let key = format!("mail:{}", address_range(req));
    match take(
        &st.db,
        &key,
        ops.mail_max_per_address,
        ops.mail_address_window,
    )
    .await?
    {
        None => Ok(()),
        Some(retry_after) => {
            crate::metrics::global().throttled();
            Err(Error::TooManyRequests {
                detail: "Too many mails asked for from this address. Try again later.".into(),
                retry_after,
            })
        }
    }
}

/// The limits of a mail of `flow` to `to` that a request asks for (an application's own flow,
/// such as `recovery`): past `MAIL_MAX_PER_ADDRESS` mails asked for from the request's client
/// address in `MAIL_ADDRESS_WINDOW` seconds, 429; and `false` when `to` got a mail of this flow
/// less than a minute ago (send nothing then, and answer as if it was sent). Call it whether
/// or not the address has an account, so that both are counted alike.
///
/// # Errors
///
/// The 429, or a database error.
pub async fn allowed(req: &HttpRequest, flow: &str, to: &str) -> Result<bool, Error> {
    let st = ApiState::of(req)?;
    client_budget(req, st).await?;
    let key = format!("mail:{flow}:{}", email_key(&normalize_email(to.trim())));
    Ok(take(&st.db, &key, 1, 60).await?.is_none())
}

/// Whether `email` may get a mail of `flow` now: at most one a minute (a refusal sends
/// nothing and is answered like a mail sent).
async fn recipient_allows(st: &ApiState, flow: Flow, email: &str) -> Result<bool, Error> {
    let key = format!("mail:{}:{}", flow.as_str(), email_key(email));
    Ok(take(&st.db, &key, 1, 60).await?.is_none())
}

/// Issues a token of `flow` for `user` about `about`, valid `seconds`, and enqueues the flow's
/// mail to `to` with its link (`MAIL_LINK_BASE` + `path` + `?token=`), on `conn`: two
/// `INSERT`s. A caller that replaces earlier links ends them first ([`store::end_unused`]).
#[allow(clippy::too_many_arguments, reason = "one call per flow, each named")]
async fn send(
    st: &ApiState,
    conn: &mut Conn,
    flow: Flow,
    user: Uuid,
    about: &str,
    to: &str,
    seconds: u64,
    path: &str,
    extra: serde_json::Value,
) -> Result<(), Error> {
    let token = store::issue(conn, flow, user, about, seconds).await?;
    let link = super::link(st, &format!("{path}?token={token}"));
    let mut values = serde_json::json!({
        "email": to,
        "token": token,
        "link": link,
        "minutes": seconds / 60,
        "hours": seconds.div_ceil(3600),
    });
    if let (Some(v), serde_json::Value::Object(more)) = (values.as_object_mut(), extra) {
        v.extend(more);
    }
    super::flow(st, flow.as_str(), None, to, &values)?
        .enqueue(conn)
        .await?;
    Ok(())
}

/// Whether `user` is enabled and its address is still `email` (a link went to it).
async fn still_enabled_at(conn: &mut Conn, user: Uuid, email: &str) -> Result<bool, Error> {
    let found: Option<(String, bool)> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            users::table
                .filter(users::id.eq(Portable(user)))
                .select((users::email, users::is_enabled)),
            c,
        )
        .await
        .optional()
    })?;
    Ok(found.is_some_and(|(now, enabled)| enabled && now == email))
}

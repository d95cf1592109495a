//! The account flows by mail, beside every user blueprint once mail is configured, with no
//! application code: verification of a new account's address (`MAIL_VERIFICATION`), a new
//! verification link, an e-mail change confirmed on the new address with a notice and a
//! revert link to the old one, and sign-in links (`MAIL_SIGN_IN`). Links carry 256-bit
//! tokens kept as digests and used once ([`store`]); every request that mails is limited per
//! recipient and flow and per client address, in the shared throttle table; an address with
//! an account and one without get the same answer.

mod store;

use super::Mailer;
use crate::auth::throttle::{address_range, email_key, take};
use crate::auth::{normalize_email, require_user, verify_password, Account, Attempt};
use crate::crud::CustomRoute;
use crate::db::{Conn, TxMode};
use crate::error::Error;
use crate::schema::users;
use crate::sql_types::Portable;
use crate::state::ApiState;
use crate::users::{issue_tokens, Accounts, LoginResponse};
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
    let Some(current) = address_of(conn, user).await? else {
        return Ok(None);
    };
    store::verified(conn, user, &current).await
}

/// The mailer, when mail is configured.
fn mailer(st: &ApiState) -> Option<&Arc<Mailer>> {
    st.ext.get::<Arc<Mailer>>()
}

/// The user blueprints mounted on `api`.
pub(crate) fn accounts(api: &crate::Api) -> Vec<Accounts> {
    api.mounts()
        .iter()
        .flat_map(|m| {
            m.faces()
                .into_iter()
                .filter_map(|f| f.downcast_ref::<Accounts>().cloned())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A `POST` route at `path` whose JSON body goes to `handler`, with its description's
/// operation id, summary, success status and errors, tagged `tag`, open to anyone unless
/// `signed_in`.
#[allow(
    clippy::too_many_arguments,
    reason = "each route's description, named at the call"
)]
fn post<B, Fut>(
    path: &str,
    handler: fn(HttpRequest, B) -> Fut,
    id: String,
    summary: &str,
    status: u16,
    errors: &[u16],
    tag: &str,
    signed_in: bool,
) -> CustomRoute
where
    B: serde::de::DeserializeOwned + schemars::JsonSchema + 'static,
    Fut: std::future::Future<Output = Result<HttpResponse, Error>> + 'static,
{
    let route = CustomRoute::new(OperationType::Post, path, move || {
        web::post()
            .to(move |req: HttpRequest, body: crate::Json<B>| handler(req, body.into_inner()))
    })
    .operation_id(&id)
    .summary(summary)
    .body::<B>()
    .status(status)
    .errors(errors)
    .tag(tag);
    if signed_in {
        route
    } else {
        route.public()
    }
}

/// The flows' routes beside the user blueprint `face`, as the settings turn them on
/// (`links`: sign-in links).
pub(crate) fn routes(face: &Accounts, mailer: &Mailer, links: bool) -> Vec<CustomRoute> {
    let (name, tag) = (face.name, face.tag.as_str());
    let mut out = Vec::new();
    if mailer.verification != Verification::Off {
        out.push(
            post(
                "verify/",
                verify,
                format!("verify{name}Email"),
                "Verify the address with the token of the mailed link",
                200,
                &[401, 422, 429],
                tag,
                false,
            )
            .responds::<Detail>(),
        );
        out.push(
            post(
                "verify/resend/",
                resend,
                format!("resend{name}Verification"),
                "Mail a new verification link (the same answer for every address)",
                202,
                &[422, 429],
                tag,
                false,
            )
            .responds::<Detail>(),
        );
    }
    out.push(
        post(
            "me/email/",
            change,
            format!("change{name}Email"),
            "Ask to change one's address: a link to confirm it is mailed to the new one",
            202,
            &[401, 422, 429],
            tag,
            true,
        )
        .responds::<Detail>(),
    );
    out.push(
        post(
            "email/confirm/",
            confirm,
            format!("confirm{name}Email"),
            "Confirm a new address with the token mailed to it",
            200,
            &[401, 409, 422, 429],
            tag,
            false,
        )
        .responds::<Detail>(),
    );
    out.push(
        post(
            "email/revert/",
            revert,
            format!("revert{name}Email"),
            "Put the old address back with the token mailed to it; every session ends",
            200,
            &[401, 409, 422, 429],
            tag,
            false,
        )
        .responds::<Detail>(),
    );
    out.push(
        post(
            "password/forgot/",
            forgot,
            format!("mail{name}PasswordReset"),
            "Mail a link to set a new password (the same answer for every address)",
            202,
            &[422, 429],
            tag,
            false,
        )
        .responds::<Detail>(),
    );
    out.push(
        post(
            "password/reset/",
            reset,
            format!("reset{name}Password"),
            "Set a new password with the token of the mailed link; every other session ends",
            200,
            &[401, 422, 429],
            tag,
            false,
        )
        .password_members(&["new_password"])
        .responds::<LoginResponse>(),
    );
    if links {
        out.push(
            post(
                "sign_in/link/",
                sign_in_link,
                format!("mail{name}SignInLink"),
                "Mail a sign-in link (the same answer for every address)",
                202,
                &[422, 429],
                tag,
                false,
            )
            .responds::<Detail>(),
        );
        out.push(
            post(
                "sign_in/",
                sign_in,
                format!("signIn{name}WithLink"),
                "Sign in with the token of a mailed sign-in link",
                200,
                &[401, 422, 429],
                tag,
                false,
            )
            .responds::<LoginResponse>(),
        );
    }
    out
}

/// A body with the token of a mailed link.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[schemars(rename = "MailedToken")]
pub(crate) struct TokenBody {
    /// The token the link carries (`?token=`).
    pub(crate) token: String,
}

/// A body with an e-mail address.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[schemars(rename = "MailAddress")]
pub(crate) struct EmailBody {
    /// The account's address.
    pub(crate) email: String,
}

/// `me/email/`'s body.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub(crate) struct EmailChange {
    /// The new address.
    pub(crate) email: String,
    /// The current password.
    pub(crate) password: String,
}

/// `password/reset/`'s body.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub(crate) struct PasswordReset {
    /// The token the mailed link carries (`?token=`).
    pub(crate) token: String,
    /// The new password.
    pub(crate) new_password: String,
}

/// What happened, in words.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[schemars(rename = "MailFlowAnswer")]
pub(crate) struct Detail {
    /// What happened.
    pub(crate) detail: String,
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

/// An account's address now, if it exists.
async fn address_of(conn: &mut Conn, user: Uuid) -> Result<Option<String>, Error> {
    Ok(with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            users::table
                .filter(users::id.eq(Portable(user)))
                .select(users::email),
            c,
        )
        .await
        .optional()
    })?)
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

/// In the transaction that creates an account: its address recorded as not yet verified, and
/// the mail with its verification link.
pub(crate) async fn account_created(
    st: &ApiState,
    conn: &mut Conn,
    user: Uuid,
    email: &str,
) -> Result<(), Error> {
    if mailer(st).is_none_or(|m| m.verification == Verification::Off) {
        return Ok(());
    }
    store::record(conn, user, email, false).await?;
    let seconds = st.config.ops.mail_verify_seconds;
    let extra = serde_json::Value::Null;
    send(
        st,
        conn,
        Flow::Verify,
        user,
        email,
        email,
        seconds,
        "/verify",
        extra,
    )
    .await
}

/// Refuses a login of an account whose address is not verified while verification is
/// required.
pub(crate) async fn admits(st: &ApiState, user: Uuid) -> Result<(), Error> {
    if mailer(st).is_none_or(|m| m.verification != Verification::Required) {
        return Ok(());
    }
    let mut conn = st.db.get().await?;
    if verified(&mut conn, user).await? == Some(false) {
        return Err(Error::Forbidden(
            "The e-mail address is not verified yet: follow the link mailed to it, or ask for \
             a new one (verify/resend/)."
                .into(),
        ));
    }
    Ok(())
}

/// Runs the block in a write transaction on a connection of its own, with `$conn` the
/// connection: committed when it gives `Ok`, rolled back otherwise.
macro_rules! in_tx {
    ($st:expr, |$conn:ident| $body:block) => {{
        let mut held = $st.db.get().await?;
        held.begin(TxMode::Write).await?;
        let outcome: Result<_, Error> = async {
            let $conn = &mut held;
            $body
        }
        .await;
        held.finish(outcome).await
    }};
}

/// `POST verify/`.
async fn verify(req: HttpRequest, body: TokenBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    flows(st)?;
    let attempt = Attempt::begin(&req, Account::Unknown).await?;
    let done = in_tx!(st, |conn| {
        let Some((user, email)) = store::take(conn, Flow::Verify, &body.token).await? else {
            return Ok(false);
        };
        store::verify(conn, user, &email).await
    })?;
    if !done {
        return Err(invalid());
    }
    attempt.succeeded().await?;
    Ok(answer(StatusCode::OK, "The address is verified."))
}

/// The answer of `verify/resend/`, whatever the address.
const RESENT: &str =
    "If an account with this address waits for verification, a new link has been mailed to it.";

/// `POST verify/resend/`.
async fn resend(req: HttpRequest, body: EmailBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    flows(st)?;
    client_budget(&req, st).await?;
    let email = normalize_email(body.email.trim());
    let Some((user, _, true)) = crate::users::find_by_email(&st.db, &email).await? else {
        return Ok(answer(StatusCode::ACCEPTED, RESENT));
    };
    let mut conn = st.db.get().await?;
    if store::verified(&mut conn, user, &email).await? != Some(false) {
        return Ok(answer(StatusCode::ACCEPTED, RESENT));
    }
    drop(conn);
    if !recipient_allows(st, Flow::Verify, &email).await? {
        return Ok(answer(StatusCode::ACCEPTED, RESENT));
    }
    let seconds = st.config.ops.mail_verify_seconds;
    in_tx!(st, |conn| {
        store::record(conn, user, &email, false).await?;
        store::end_unused(conn, user, &[Flow::Verify]).await?;
        let extra = serde_json::Value::Null;
        send(
            st,
            conn,
            Flow::Verify,
            user,
            &email,
            &email,
            seconds,
            "/verify",
            extra,
        )
        .await
    })?;
    Ok(answer(StatusCode::ACCEPTED, RESENT))
}

/// The answer of `me/email/`, whether or not the new address was free.
const CHANGE_ASKED: &str =
    "A link to confirm the new address has been mailed to it, unless it belongs to an account.";

/// `POST me/email/`: the current password, then a link mailed to the new address.
async fn change(req: HttpRequest, body: EmailChange) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    flows(st)?;
    let me = require_user(&req).await?;
    let new = normalize_email(body.email.trim());
    if new.parse::<lettre::Address>().is_err() {
        return Err(Error::invalid_field("email", "not an e-mail address"));
    }
    if new == me.email {
        return Err(Error::invalid_field("email", "the address the account has"));
    }
    // The password is checked as at login, throttled against the account.
    let attempt = Attempt::begin(&req, Account::User(me.id)).await?;
    let hash = crate::users::store::users_password(&st.db, me.id).await?;
    let cost = st.config.auth.bcrypt_cost;
    let matched = match verify_password(body.password, hash, cost).await {
        Ok(v) => v,
        Err(e) => return attempt.not_checked(e).await,
    };
    if !matched {
        return Err(Error::Unauthorized("Wrong password.".into()));
    }
    attempt.succeeded().await?;
    client_budget(&req, st).await?;
    if crate::users::find_by_email(&st.db, &new).await?.is_some()
        || !recipient_allows(st, Flow::EmailChange, &new).await?
    {
        return Ok(answer(StatusCode::ACCEPTED, CHANGE_ASKED));
    }
    let seconds = st.config.ops.mail_email_change_seconds;
    in_tx!(st, |conn| {
        store::end_unused(conn, me.id, &[Flow::EmailChange]).await?;
        let extra = serde_json::json!({ "old_email": me.email });
        send(
            st,
            conn,
            Flow::EmailChange,
            me.id,
            &new,
            &new,
            seconds,
            "/confirm-email",
            extra,
        )
        .await
    })?;
    Ok(answer(StatusCode::ACCEPTED, CHANGE_ASKED))
}

/// Sets `user`'s address to `email` (409 when another account has it).
async fn set_address(conn: &mut Conn, user: Uuid, email: &str) -> Result<(), Error> {
    let now = crate::timestamp::now();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(users::table.filter(users::id.eq(Portable(user))))
                .set((users::email.eq(email), users::updated_at.eq(Portable(now)))),
            c,
        )
        .await
    })
    .map_err(|e| match Error::from(e) {
        e if e.problem().status == 409 => {
            Error::Conflict("Another account has this address now.".into())
        }
        e => e,
    })?;
    Ok(())
}

/// `POST email/confirm/`: the new address set and verified, and a notice with a revert link
/// mailed to the old one, in one transaction.
async fn confirm(req: HttpRequest, body: TokenBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    flows(st)?;
    let attempt = Attempt::begin(&req, Account::Unknown).await?;
    let seconds = st.config.ops.mail_revert_seconds;
    let done = in_tx!(st, |conn| {
        let Some((user, new)) = store::take(conn, Flow::EmailChange, &body.token).await? else {
            return Ok(false);
        };
        let Some(old) = address_of(conn, user).await? else {
            return Ok(false);
        };
        set_address(conn, user, &new).await?;
        store::record(conn, user, &new, true).await?;
        store::end_unused(conn, user, &[Flow::Verify, Flow::SignIn]).await?;
        let extra = serde_json::json!({ "new_email": new });
        send(
            st,
            conn,
            Flow::EmailRevert,
            user,
            &old,
            &old,
            seconds,
            "/revert-email",
            extra,
        )
        .await?;
        Ok(true)
    })?;
    if !done {
        return Err(invalid());
    }
    attempt.succeeded().await?;
    Ok(answer(StatusCode::OK, "The new address is confirmed."))
}

/// `POST email/revert/`: the old address back (verified), the other links ended, and every
/// session of the account ended.
async fn revert(req: HttpRequest, body: TokenBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    flows(st)?;
    let attempt = Attempt::begin(&req, Account::Unknown).await?;
    let user = in_tx!(st, |conn| {
        let Some((user, old)) = store::take(conn, Flow::EmailRevert, &body.token).await? else {
            return Ok(None);
        };
        set_address(conn, user, &old).await?;
        store::record(conn, user, &old, true).await?;
        let others = [Flow::Verify, Flow::EmailChange, Flow::SignIn];
        store::end_unused(conn, user, &others).await?;
        Ok(Some(user))
    })?;
    let Some(user) = user else {
        return Err(invalid());
    };
    crate::users::end_sessions(&st.db, user).await?;
    attempt.succeeded().await?;
    Ok(answer(
        StatusCode::OK,
        "The old address is back and every session has ended: sign in again, and change the \
         password if someone else changed the address.",
    ))
}

/// The answer of `sign_in/link/`, whatever the address.
const LINK_SENT: &str = "If an account has this address, a sign-in link has been mailed to it.";

/// `POST sign_in/link/`.
async fn sign_in_link(req: HttpRequest, body: EmailBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    flows(st)?;
    client_budget(&req, st).await?;
    let email = normalize_email(body.email.trim());
    let Some((user, _, true)) = crate::users::find_by_email(&st.db, &email).await? else {
        return Ok(answer(StatusCode::ACCEPTED, LINK_SENT));
    };
    if !recipient_allows(st, Flow::SignIn, &email).await? {
        return Ok(answer(StatusCode::ACCEPTED, LINK_SENT));
    }
    let seconds = st.config.ops.mail_sign_in_seconds;
    in_tx!(st, |conn| {
        store::end_unused(conn, user, &[Flow::SignIn]).await?;
        let extra = serde_json::Value::Null;
        send(
            st,
            conn,
            Flow::SignIn,
            user,
            &email,
            &email,
            seconds,
            "/sign-in",
            extra,
        )
        .await
    })?;
    Ok(answer(StatusCode::ACCEPTED, LINK_SENT))
}

/// `POST sign_in/`: the token used, the address verified (the link proved it), tokens issued.
async fn sign_in(req: HttpRequest, body: TokenBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    flows(st)?;
    let attempt = Attempt::begin(&req, Account::Unknown).await?;
    let user = in_tx!(st, |conn| {
        let Some((user, email)) = store::take(conn, Flow::SignIn, &body.token).await? else {
            return Ok(None);
        };
        // The link went to the address the account still has, and the account may log in.
        if !still_enabled_at(conn, user, &email).await? {
            return Ok(None);
        }
        store::verify(conn, user, &email).await?;
        Ok(Some(user))
    })?;
    let Some(user) = user else {
        return Err(invalid());
    };
    attempt.succeeded().await?;
    Ok(HttpResponse::Ok().json(issue_tokens(st, user).await?))
}

/// The answer of `password/forgot/`, whatever the address.
const RESET_SENT: &str =
    "If an account has this address, a link to set a new password has been mailed to it.";

/// `POST password/forgot/`: a link to set a new password, mailed to an enabled account's
/// address.
async fn forgot(req: HttpRequest, body: EmailBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    flows(st)?;
    client_budget(&req, st).await?;
    let email = normalize_email(body.email.trim());
    let Some((user, _, true)) = crate::users::find_by_email(&st.db, &email).await? else {
        return Ok(answer(StatusCode::ACCEPTED, RESET_SENT));
    };
    if !recipient_allows(st, Flow::Reset, &email).await? {
        return Ok(answer(StatusCode::ACCEPTED, RESET_SENT));
    }
    let seconds = st.config.ops.mail_reset_seconds;
    in_tx!(st, |conn| {
        store::end_unused(conn, user, &[Flow::Reset]).await?;
        let extra = serde_json::Value::Null;
        send(
            st,
            conn,
            Flow::Reset,
            user,
            &email,
            &email,
            seconds,
            "/new-password",
            extra,
        )
        .await
    })?;
    Ok(answer(StatusCode::ACCEPTED, RESET_SENT))
}

/// `POST password/reset/`: the new password (checked by the password policy and hashed before
/// the token is used, so that a refused password uses nothing), the token used and the
/// password set in one transaction (every older session ends), the address verified (the link
/// proved it), and new tokens.
async fn reset(req: HttpRequest, body: PasswordReset) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    flows(st)?;
    let attempt = Attempt::begin(&req, Account::Unknown).await?;
    let policy = st.config.password_policy();
    let hash = match crate::auth::hash_password_for("new_password", body.new_password, policy).await
    {
        Ok(h) => h,
        Err(e) => return attempt.not_checked(e).await,
    };
    let user = in_tx!(st, |conn| {
        let Some((user, email)) = store::take(conn, Flow::Reset, &body.token).await? else {
            return Ok(None);
        };
        // The link went to the address the account still has, and the account may log in.
        if !still_enabled_at(conn, user, &email).await? {
            return Ok(None);
        }
        crate::users::set_password_hash_in(conn, user, &hash).await?;
        store::verify(conn, user, &email).await?;
        Ok(Some(user))
    })?;
    let Some(user) = user else {
        return Err(invalid());
    };
    attempt.succeeded().await?;
    Ok(HttpResponse::Ok().json(issue_tokens(st, user).await?))
}

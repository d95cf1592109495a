//! Access without the password: sign-in links, and a forgotten password set from a mailed
//! link.

use super::*;

/// The answer of `sign_in/link/`, whatever the address.
const LINK_SENT: &str = "If an account has this address, a sign-in link has been mailed to it.";

/// `POST sign_in/link/`.
pub(super) async fn sign_in_link(req: HttpRequest, body: EmailBody) -> Result<HttpResponse, Error> {
    let seconds = ApiState::of(&req)?.config.ops.mail_sign_in_seconds;
    mail_link(
        &req,
        &body.email,
        Flow::SignIn,
        seconds,
        "/sign-in",
        LINK_SENT,
    )
    .await
}

/// Mails a link of `flow` (valid `seconds`, to `MAIL_LINK_BASE` + `path`) to the enabled
/// account with address `email`, ending its earlier unused ones; answers `sent` (202) whatever
/// the address, after counting the ask against the client's budget.
async fn mail_link(
    req: &HttpRequest,
    email: &str,
    flow: Flow,
    seconds: u64,
    path: &str,
    sent: &str,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(req)?;
    flows(st)?;
    client_budget(req, st).await?;
    let email = normalize_email(email.trim());
    let Some((user, _, true)) = crate::users::find_by_email(&st.db, &email).await? else {
        return Ok(answer(StatusCode::ACCEPTED, sent));
    };
    if !recipient_allows(st, flow, &email).await? {
        return Ok(answer(StatusCode::ACCEPTED, sent));
    }
    st.db
        .in_tx(async |conn| {
            store::end_unused(conn, user, &[flow]).await?;
            let extra = serde_json::Value::Null;
            send(st, conn, flow, user, &email, &email, seconds, path, extra).await
        })
        .await?;
    Ok(answer(StatusCode::ACCEPTED, sent))
}

/// `POST sign_in/`: the token used, the address verified (the link proved it), tokens issued.
pub(super) async fn sign_in(req: HttpRequest, body: TokenBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    flows(st)?;
    let attempt = Attempt::begin(&req, Account::Unknown).await?;
    let user = st
        .db
        .in_tx(async |conn| {
            let Some((user, email)) = take_at_address(conn, Flow::SignIn, &body.token).await?
            else {
                return Ok(None);
            };
            store::verify(conn, user, &email).await?;
            Ok(Some(user))
        })
        .await?;
    let Some(user) = user else {
        return Err(invalid());
    };
    attempt.succeeded().await?;
    // The link proved the address, not a second factor: the surfaces may ask for one.
    admitted(st, user, Entry::SIGN_IN).await?;
    Ok(HttpResponse::Ok().json(issue_tokens(st, user).await?))
}

/// The answer of `password/forgot/`, whatever the address.
const RESET_SENT: &str =
    "If an account has this address, a link to set a new password has been mailed to it.";

/// `POST password/forgot/`: a link to set a new password, mailed to an enabled account's
/// address.
pub(super) async fn forgot(req: HttpRequest, body: EmailBody) -> Result<HttpResponse, Error> {
    let seconds = ApiState::of(&req)?.config.ops.mail_reset_seconds;
    mail_link(
        &req,
        &body.email,
        Flow::Reset,
        seconds,
        "/new-password",
        RESET_SENT,
    )
    .await
}

/// `POST password/reset/`: the new password (checked by the password policy and hashed before
/// the token is used, so that a refused password uses nothing), the token used and the
/// password set in one transaction (every older session ends), the address verified (the link
/// proved it), and new tokens.
pub(super) async fn reset(req: HttpRequest, body: PasswordReset) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    flows(st)?;
    let attempt = Attempt::begin(&req, Account::Unknown).await?;
    let policy = st.config.password_policy();
    let hash = match crate::auth::hash_password_for("new_password", body.new_password, policy).await
    {
        Ok(h) => h,
        Err(e) => return attempt.not_checked(e).await,
    };
    let user = st
        .db
        .in_tx(async |conn| {
            let Some((user, email)) = take_at_address(conn, Flow::Reset, &body.token).await? else {
                return Ok(None);
            };
            crate::users::set_password_hash_in(conn, user, &hash).await?;
            store::verify(conn, user, &email).await?;
            Ok(Some(user))
        })
        .await?;
    let Some(user) = user else {
        return Err(invalid());
    };
    attempt.succeeded().await?;
    // The link proved the address, not a second factor: the surfaces may ask for one.
    admitted(st, user, Entry::SIGN_IN).await?;
    Ok(HttpResponse::Ok().json(issue_tokens(st, user).await?))
}

/// Uses `token` of `flow` (see [`store::take`]) if the link went to the address its enabled
/// account still has: the account and the address; `None` for anything else, all alike.
async fn take_at_address(
    conn: &mut Conn,
    flow: Flow,
    token: &str,
) -> Result<Option<(Uuid, String)>, Error> {
    let Some((user, email)) = store::take(conn, flow, token).await? else {
        return Ok(None);
    };
    Ok(still_enabled_at(conn, user, &email)
        .await?
        .then_some((user, email)))
}

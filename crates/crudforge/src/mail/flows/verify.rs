//! Address verification: the link mailed with a new account, its resend, and the refusal
//! of a login while verification is required and the address is not verified.

use super::*;

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
    crate::users::addresses::record(conn, user, email, false).await?;
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

/// `POST verify/`.
pub(super) async fn verify(req: HttpRequest, body: TokenBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    flows(st)?;
    let attempt = Attempt::begin(&req, Account::Unknown).await?;
    let done = st
        .db
        .in_tx(async |conn| {
            let Some((user, email)) = store::take(conn, Flow::Verify, &body.token).await? else {
                return Ok(false);
            };
            store::verify(conn, user, &email).await
        })
        .await?;
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
pub(super) async fn resend(req: HttpRequest, body: EmailBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    flows(st)?;
    client_budget(&req, st).await?;
    let email = normalize_email(body.email.trim());
    let Some((user, _, true)) = crate::users::find_by_email(&st.db, &email).await? else {
        return Ok(answer(StatusCode::ACCEPTED, RESENT));
    };
    let mut conn = st.db.get().await?;
    if crate::users::addresses::verified_as(&mut conn, user, &email).await? != Some(false) {
        return Ok(answer(StatusCode::ACCEPTED, RESENT));
    }
    drop(conn);
    if !recipient_allows(st, Flow::Verify, &email).await? {
        return Ok(answer(StatusCode::ACCEPTED, RESENT));
    }
    let seconds = st.config.ops.mail_verify_seconds;
    st.db
        .in_tx(async |conn| {
            crate::users::addresses::record(conn, user, &email, false).await?;
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
        })
        .await?;
    Ok(answer(StatusCode::ACCEPTED, RESENT))
}

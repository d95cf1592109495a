//! E-mail change: asked with the current password, confirmed from a link mailed to the new
//! address, which mails the old one a notice with a link that puts it back.

use super::*;

/// The answer of `me/email/`, whether or not the new address was free.
const CHANGE_ASKED: &str =
    "A link to confirm the new address has been mailed to it, unless it belongs to an account.";

/// `POST me/email/`: the current password, then a link mailed to the new address.
pub(super) async fn change(req: HttpRequest, body: EmailChange) -> Result<HttpResponse, Error> {
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
    st.db
        .in_tx(async |conn| {
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
        })
        .await?;
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
pub(super) async fn confirm(req: HttpRequest, body: TokenBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    flows(st)?;
    let attempt = Attempt::begin(&req, Account::Unknown).await?;
    let seconds = st.config.ops.mail_revert_seconds;
    let done = st
        .db
        .in_tx(async |conn| {
            let Some((user, new)) = store::take(conn, Flow::EmailChange, &body.token).await? else {
                return Ok(false);
            };
            let Some(old) = crate::users::addresses::email_of(conn, user).await? else {
                return Ok(false);
            };
            set_address(conn, user, &new).await?;
            crate::users::addresses::record(conn, user, &new, true).await?;
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
        })
        .await?;
    if !done {
        return Err(invalid());
    }
    attempt.succeeded().await?;
    Ok(answer(StatusCode::OK, "The new address is confirmed."))
}

/// `POST email/revert/`: the old address back (verified), the other links ended, and every
/// session of the account ended.
pub(super) async fn revert(req: HttpRequest, body: TokenBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    flows(st)?;
    let attempt = Attempt::begin(&req, Account::Unknown).await?;
    let user = st
        .db
        .in_tx(async |conn| {
            let Some((user, old)) = store::take(conn, Flow::EmailRevert, &body.token).await? else {
                return Ok(None);
            };
            set_address(conn, user, &old).await?;
            crate::users::addresses::record(conn, user, &old, true).await?;
            let others = [Flow::Verify, Flow::EmailChange, Flow::SignIn];
            store::end_unused(conn, user, &others).await?;
            Ok(Some(user))
        })
        .await?;
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

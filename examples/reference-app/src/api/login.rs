//! Logging in: the login hook that checks domain access, and token login
//! (`POST /api/user/token_login`).

use super::domains::RefDomain;
use actix_web::{HttpRequest, HttpResponse};
use crudforge::auth::{self, Account, Attempt};
use crudforge::prelude::*;
use crudforge::users::{self, LoginContext, TokenRecord};
use futures_util::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};

/// Whether a user may sign in to a domain, looked up by name: an unknown domain is 404, a user
/// without access to it 401.
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
pub async fn token_login(req: HttpRequest, body: Json<TokenLogin>) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    // Throttled by client address; an unknown token counts as a failure of the address, a
    // disabled owner also as one of the owner's account.
    let attempt = Attempt::begin(&req, Account::Unknown).await?;
    let owner = users::token_owner(&st.db, TokenRecord::ApiKey, &body.token)
        .await?
        .ok_or_else(|| Error::Unauthorized("invalid token".into()))?;
    let Some(user) = auth::load_user(&st.db, owner)
        .await?
        .filter(|u| u.is_enabled)
    else {
        attempt.failed_for(Account::User(owner)).await?;
        return Err(Error::Unauthorized(
            "The token's owner cannot log in.".into(),
        ));
    };
    attempt.succeeded().await?;
    check_domain(&st.db, &user, body.domain.as_deref()).await?;
    Ok(HttpResponse::Ok().json(AccessToken {
        access_token: users::access_token(st, user.id).await?,
        token_type: "bearer".to_owned(),
    }))
}

//! Logging in: the login hook that checks domain access, and token login
//! (`POST /api/user/token_login`).

use super::domains::RefDomain;
use actix_web::{HttpRequest, HttpResponse};
use crudforge::prelude::*;
use crudforge::users::{self, LoginContext, LoginHook};
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

/// `POST /api/user/token_login`: exchanges a stored token (an API key) for an access token,
/// through the library's exchange (`users::exchange_api_key`: throttled by address, the key
/// usable and its owner enabled, the key's scope carried by the token, which ends no later
/// than the key, and the key's last use recorded), with the domain check of the login hook.
pub async fn token_login(req: HttpRequest, body: Json<TokenLogin>) -> Result<HttpResponse, Error> {
    let hook: &dyn LoginHook = &login_hook;
    let access =
        users::exchange_api_key(&req, &body.token, body.domain.as_deref(), Some(hook)).await?;
    Ok(HttpResponse::Ok().json(AccessToken {
        access_token: access.access_token,
        token_type: access.token_type,
    }))
}

//! The providers' routes beside every user blueprint: the list of providers, a sign-in's
//! start and its callback for each, and the signed-in account's identities and their
//! unlinking.

use super::accounts::{refused, settle};
use super::ticket::{random, Ticket};
use super::{store, Registry};
use crate::auth::require_user;
use crate::auth::throttle::{Account, Attempt};
use crate::crud::CustomRoute;
use crate::error::Error;
use crate::state::ApiState;
use crate::users::{issue_tokens, Accounts, LoginResponse};
use actix_web::{web, HttpRequest, HttpResponse};
use apistos::paths::OperationType;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use subtle::ConstantTimeEq as _;

/// `POST providers/<name>/start/`'s body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StartBody {
    /// The page of yours the provider sends the browser back to, with `code` and `state`
    /// (the redirect URI registered at the provider); its origin must be one of
    /// `AUTH_RETURN_ORIGINS`.
    return_to: String,
    /// Link the provider to the signed-in account (the request then needs its token)
    /// instead of signing in.
    #[serde(default)]
    link: bool,
}

/// `POST providers/<name>/start/`'s answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Started {
    /// Where to send the browser: the provider's sign-in page.
    authorization_url: String,
    /// Keep it (in the page's session storage) and send it to `callback/` with what the
    /// provider sends back; it is sealed, used once, and valid for `expires_in` seconds.
    ticket: String,
    /// Seconds the ticket is valid.
    expires_in: u64,
}

/// `POST providers/<name>/callback/`'s body: the ticket, and the query the provider sent the
/// browser back with.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct CallbackBody {
    /// The ticket `start/` gave.
    ticket: String,
    /// The provider's `code`.
    #[serde(default)]
    code: Option<String>,
    /// The provider's `state`.
    state: String,
    /// The provider's `iss`, when it sent one.
    #[serde(default)]
    iss: Option<String>,
    /// The provider's `error`, when it refused.
    #[serde(default)]
    error: Option<String>,
}

/// A configured provider, as `providers/` lists it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Listed {
    /// Its name, in its routes.
    name: String,
    /// Whether it is an OpenID provider (else OAuth 2.0 with its user-info answer).
    openid: bool,
}

/// `POST me/identities/unlink/`'s body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UnlinkBody {
    /// The provider's name.
    provider: String,
}

/// The routes beside the user blueprint `face`.
pub(crate) fn routes(face: &Accounts, registry: &Arc<Registry>) -> Vec<CustomRoute> {
    let (model, tag) = (face.name, face.tag.as_str());
    let mut out = vec![
        CustomRoute::new(OperationType::Get, "providers/", || web::get().to(list))
            .operation_id(&format!("list{model}Providers"))
            .summary("The sign-in providers")
            .responds::<Vec<Listed>>()
            .tag(tag)
            .public(),
    ];
    for p in &registry.providers {
        let name = p.name.clone();
        let id = pascal(&name);
        let n = name.clone();
        out.push(
            CustomRoute::new(
                OperationType::Post,
                &format!("providers/{name}/start/"),
                move || {
                    let n = n.clone();
                    web::post().to(move |req: HttpRequest, body: crate::Json<StartBody>| {
                        let n = n.clone();
                        async move { start(req, body.into_inner(), &n).await }
                    })
                },
            )
            .operation_id(&format!("start{model}SignInWith{id}"))
            .summary(&format!("Start a sign-in with {name}"))
            .body::<StartBody>()
            .responds::<Started>()
            .errors(&[401, 422, 503])
            .tag(tag)
            .public(),
        );
        let n = name.clone();
        out.push(
            CustomRoute::new(
                OperationType::Post,
                &format!("providers/{name}/callback/"),
                move || {
                    let n = n.clone();
                    web::post().to(move |req: HttpRequest, body: crate::Json<CallbackBody>| {
                        let n = n.clone();
                        async move { callback(req, body.into_inner(), &n).await }
                    })
                },
            )
            .operation_id(&format!("finish{model}SignInWith{id}"))
            .summary(&format!(
                "Finish a sign-in with {name}: the provider's answer for tokens"
            ))
            .body::<CallbackBody>()
            .responds::<LoginResponse>()
            .errors(&[401, 409, 422, 429])
            .tag(tag)
            .public(),
        );
    }
    out.push(
        CustomRoute::new(OperationType::Get, "me/identities/", || {
            web::get().to(identities)
        })
        .operation_id(&format!("list{model}Identities"))
        .summary("The signed-in account's identities at providers")
        .responds::<Vec<store::Identity>>()
        .errors(&[401])
        .tag(tag),
    );
    out.push(
        CustomRoute::new(OperationType::Post, "me/identities/unlink/", || {
            web::post().to(|req: HttpRequest, body: crate::Json<UnlinkBody>| {
                unlink(req, body.into_inner())
            })
        })
        .operation_id(&format!("unlink{model}Identity"))
        .summary("Unlink a provider from the signed-in account (not its last way to sign in)")
        .body::<UnlinkBody>()
        .status(204)
        .errors(&[401, 404, 409, 422])
        .tag(tag),
    );
    out
}

/// `google_work` as `GoogleWork`, for operation ids.
fn pascal(name: &str) -> String {
    name.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// `GET providers/`.
async fn list(req: HttpRequest) -> Result<HttpResponse, Error> {
    let registry = Registry::of(ApiState::of(&req)?)?;
    let listed: Vec<Listed> = registry
        .providers
        .iter()
        .map(|p| Listed {
            name: p.name.clone(),
            openid: p.is_openid(),
        })
        .collect();
    Ok(HttpResponse::Ok().json(listed))
}

/// `POST providers/<name>/start/`: a ticket, and the provider's URL to send the browser to.
async fn start(req: HttpRequest, body: StartBody, name: &str) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let registry = Registry::of(st)?;
    let provider = registry.provider(name)?;
    let return_to = registry.return_to(&body.return_to)?;
    let link = if body.link {
        Some(require_user(&req).await?.id)
    } else {
        None
    };
    let seconds = st.config.auth.auth_provider_ticket_seconds;
    let ticket = Ticket {
        id: random()?,
        provider: name.to_owned(),
        state: random()?,
        nonce: random()?,
        verifier: random()?,
        return_to,
        expires: chrono::Utc::now()
            .timestamp()
            .saturating_add(i64::try_from(seconds).unwrap_or(i64::MAX / 2)),
        link,
    };
    let authorization_url = provider
        .authorization_url(&registry.http, &ticket)
        .await
        .map_err(|r| {
            tracing::warn!(provider = name, reason = %r.0, "a sign-in could not start");
            Error::Unavailable(format!("The provider cannot be reached now: {}", r.0))
        })?;
    Ok(HttpResponse::Ok().json(Started {
        authorization_url,
        ticket: ticket.seal(st.signing_key.expose())?,
        expires_in: seconds,
    }))
}

/// `POST providers/<name>/callback/`: the provider's answer checked, the account found,
/// linked or made, and tokens issued; throttled like a password login.
async fn callback(req: HttpRequest, body: CallbackBody, name: &str) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let registry = Registry::of(st)?;
    let provider = registry.provider(name)?;
    let attempt = Attempt::begin(&req, Account::Unknown).await?;
    let refuse = |why: &str| {
        tracing::info!(
            provider = name,
            reason = why,
            "a sign-in with a provider was refused"
        );
        refused(why)
    };
    let now = chrono::Utc::now().timestamp();
    let Some(ticket) = Ticket::open(st.signing_key.expose(), name, &body.ticket, now)? else {
        return Err(refuse(
            "the ticket is not one of this provider's, or it expired.",
        ));
    };
    if let Some(error) = &body.error {
        return Err(refuse(&format!("the provider answered `{error}`.")));
    }
    if !bool::from(ticket.state.as_bytes().ct_eq(body.state.as_bytes())) {
        return Err(refuse("the state is not the ticket's."));
    }
    provider
        .check_iss(&registry.http, body.iss.as_deref())
        .await
        .map_err(|r| refuse(&r.0))?;
    let Some(code) = body.code.as_deref().filter(|c| !c.is_empty()) else {
        return Err(refuse("the provider sent no code."));
    };
    {
        let mut conn = st.db.get().await?;
        if crate::spent::spent(&mut conn, &ticket.id).await? {
            return Err(refuse("the ticket was used already."));
        }
    }
    let person = provider
        .person(&registry.http, &ticket, code)
        .await
        .map_err(|r| refuse(&r.0))?;
    let user = st
        .db
        .in_tx(async |conn| {
            if !crate::spent::spend(conn, &ticket.id, ticket.expires).await? {
                return Err(refuse("the ticket was used already."));
            }
            settle(st, conn, provider, &person, ticket.link).await
        })
        .await?;
    let enabled = crate::auth::load_user(&st.db, user)
        .await?
        .is_some_and(|u| u.is_enabled);
    if !enabled {
        return Err(refuse("the account is disabled."));
    }
    crate::users::session::admitted(st, user, crate::users::session::Entry::SIGN_IN).await?;
    attempt.succeeded().await?;
    Ok(HttpResponse::Ok().json(issue_tokens(st, user).await?))
}

/// `GET me/identities/`.
async fn identities(req: HttpRequest) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let user = require_user(&req).await?;
    let mut conn = st.db.get().await?;
    Ok(HttpResponse::Ok().json(store::identities(&mut conn, user.id).await?))
}

/// `POST me/identities/unlink/`: refused (409) when it would leave the account no way to
/// sign in (no password, no other identity).
async fn unlink(req: HttpRequest, body: UnlinkBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let user = require_user(&req).await?;
    st.db
        .in_tx(async |conn| {
            crate::users::tokens::lock_user_in(conn, user.id).await?;
            let all = store::identities(conn, user.id).await?;
            if !all.iter().any(|i| i.provider == body.provider) {
                return Err(Error::NotFound(
                    "The account has no identity at this provider.".into(),
                ));
            }
            let others = all.iter().filter(|i| i.provider != body.provider).count();
            if others == 0 && !store::has_password(conn, user.id).await? {
                return Err(Error::Conflict(
                    "This is the account's last way to sign in: set a password or link another \
                 provider first."
                        .into(),
                ));
            }
            store::unlink(conn, user.id, &body.provider).await?;
            Ok(())
        })
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

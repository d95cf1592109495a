//! Second factors beside every user blueprint: TOTP codes with each step accepted once, and
//! single-use recovery codes. A sign-in whose credentials were right, of an account with a
//! factor, answers a challenge (a sealed ticket) instead of tokens; the ticket and a code
//! then give tokens whose assurance level is 2, which rules ask for with `@second_factor`.
//! Roles and domains may require a factor, with a grace period; enrolling or removing one
//! ends the account's other sessions.
//!
//! | Module | Owns |
//! |---|---|
//! | `totp` | TOTP secrets (new, sealed at rest), their `otpauth://` URL, a code's time step |
//! | `recovery` | recovery codes: new ones, a code as typed |
//! | `ticket` | the sealed ticket of a sign-in waiting for its factor, or for an enrollment |
//! | `policy` | who must have a factor, the grace period, the challenge a sign-in answers |
//! | `store` | the factors, recovery codes and grace rows |
//! | `routes` | the routes: verify, list, enroll, confirm, remove, new recovery codes |
//! | `passkey` | passkeys (the `passkeys` feature): the relying party, its ceremonies and routes |

#[cfg(feature = "passkeys")]
mod passkey;
mod policy;
mod recovery;
mod routes;
mod store;
mod ticket;
mod totp;

use crate::api::{Api, Surface};
use crate::config::{Config, ConfigError};
use crate::error::Error;
use crate::state::{ApiState, Extensions};
use crate::users::session::Entry;
use futures_util::future::LocalBoxFuture;
use std::sync::Arc;

/// The factors' settings, from the configuration.
#[derive(Debug)]
pub(crate) struct Settings {
    /// `AUTH_FACTOR_ROLES`: roles whose holders must have a factor (`*`: every account).
    roles: Vec<String>,
    /// `AUTH_FACTOR_DOMAINS`: domains whose members must have one.
    domains: Vec<String>,
    /// `AUTH_FACTOR_GRACE_SECONDS`.
    grace: i64,
    /// `AUTH_FACTOR_ISSUER`, else `API_TITLE`: the name authenticator apps show.
    issuer: String,
}

impl Settings {
    /// The API's factor settings.
    fn of(st: &ApiState) -> Result<&Arc<Settings>, Error> {
        st.ext
            .get::<Arc<Settings>>()
            .ok_or_else(|| Error::Internal("the factors surface did not start".into()))
    }
}

/// The second factors' side of the whole API.
pub(crate) struct Factors;

impl Surface for Factors {
    fn start(&self, config: &Config, ext: &mut Extensions) -> Result<(), ConfigError> {
        let auth = &config.auth;
        let grace =
            i64::try_from(auth.auth_factor_grace_seconds).map_err(|_| ConfigError::Invalid {
                key: "AUTH_FACTOR_GRACE_SECONDS",
                expected: "a whole number of seconds",
                value: auth.auth_factor_grace_seconds.to_string(),
            })?;
        let issuer = auth
            .auth_factor_issuer
            .clone()
            .filter(|i| !i.trim().is_empty())
            .unwrap_or_else(|| config.http.api_title.clone());
        #[cfg(feature = "passkeys")]
        passkey::start(config, &issuer, ext)?;
        ext.insert(Arc::new(Settings {
            roles: auth.auth_factor_roles.clone(),
            domains: auth.auth_factor_domains.clone(),
            grace,
            issuer,
        }));
        Ok(())
    }

    fn register(&self, api: &Api, cfg: &mut actix_web::web::ServiceConfig) {
        for face in crate::users::accounts(api) {
            for route in all_routes(api.state(), &face) {
                let path = format!("{}{}", face.prefix, route.path);
                cfg.service(actix_web::web::resource(path).route((route.route)()));
            }
        }
    }

    fn document(&self, api: &Api, doc: &mut crate::openapi::ApiDoc) {
        for face in crate::users::accounts(api) {
            let routes = all_routes(api.state(), &face);
            crate::crud::mount::docs::custom::document_routes(
                doc,
                &face.prefix,
                &face.tag,
                &routes,
            );
        }
    }

    fn admits<'a>(
        &self,
        state: &'a ApiState,
        user: uuid::Uuid,
        entry: Entry,
    ) -> Option<LocalBoxFuture<'a, Result<(), Error>>> {
        Some(Box::pin(policy::admits(state, user, entry)))
    }
}

/// The factors' routes beside the user blueprint `face`: the passkeys' first when they are on
/// (`me/factors/{factor_id}/` would take `me/factors/passkey/`), then the others.
fn all_routes(st: &ApiState, face: &crate::users::Accounts) -> Vec<crate::crud::CustomRoute> {
    let mut out = Vec::new();
    #[cfg(feature = "passkeys")]
    if passkey::Relying::of(st).is_some() {
        out.extend(passkey::routes::routes(face));
    }
    let _ = st;
    out.extend(routes::routes(face));
    out
}

/// The kinds of factor an account may enroll: an authenticator app, and passkeys when they
/// are on.
fn enrollable(st: &ApiState) -> Vec<String> {
    #[cfg(feature = "passkeys")]
    if passkey::Relying::of(st).is_some() {
        return vec!["totp".to_owned(), "passkey".to_owned()];
    }
    let _ = st;
    vec!["totp".to_owned()]
}

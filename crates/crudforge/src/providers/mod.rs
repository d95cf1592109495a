//! Sign-in through OpenID Connect and OAuth 2.0 providers (`AUTH_PROVIDERS`), beside every
//! user blueprint, with no application code: any OpenID provider from its issuer, presets
//! for common ones, the authorization code flow with PKCE, `state` and `nonce`, its state in
//! a sealed single-use ticket the client holds (the callback may reach any instance), ID
//! tokens checked against the provider's keys, accounts linked by (provider, subject) and by
//! a verified address, roles from claims; the API's own tokens issued, throttled like a
//! password login.
//!
//! | Module | Owns |
//! |---|---|
//! | `presets` | the common providers' issuers, endpoints, scopes and user-info shapes |
//! | `http` | the providers' HTTP client (`reqwest`), its limits, which URLs it accepts |
//! | `provider` | one provider's protocol: the authorization URL, the code exchanged, the ID token and user info checked |
//! | `ticket` | the sealed ticket of a sign-in in progress |
//! | `accounts` | which account a sign-in is, linking, the pre-hijacking defence, roles from claims |
//! | `store` | identities, used tickets, addresses a provider proved |
//! | `routes` | the routes: providers, start, callback, identities, unlink |

mod accounts;
mod http;
mod presets;
mod provider;
mod routes;
mod store;
mod ticket;

use crate::api::{Api, Surface};
use crate::config::{Config, ConfigError};
use crate::error::Error;
use crate::state::{ApiState, Extensions};
use provider::Provider;
use std::sync::Arc;

/// The configured providers and what they share.
pub(crate) struct Registry {
    /// The providers, in `AUTH_PROVIDERS` order.
    providers: Vec<Provider>,
    /// The origins `return_to` may have.
    origins: Vec<String>,
    /// Their HTTP client.
    http: http::Http,
}

impl Registry {
    /// The API's providers, when any is configured.
    fn of(st: &ApiState) -> Result<&Arc<Registry>, Error> {
        st.ext
            .get::<Arc<Registry>>()
            .ok_or_else(|| Error::NotFound("No sign-in provider is configured.".into()))
    }

    /// The provider named `name`.
    fn provider(&self, name: &str) -> Result<&Provider, Error> {
        self.providers
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| Error::NotFound("No such sign-in provider.".into()))
    }

    /// `return_to`, if it is an absolute `http(s)` URL without a fragment or credentials on one
    /// of the configured origins.
    fn return_to(&self, text: &str) -> Result<String, Error> {
        let bad = |why: &str| Error::invalid_field("return_to", why);
        let url = url::Url::parse(text.trim()).map_err(|_| bad("is not an absolute URL"))?;
        if !matches!(url.scheme(), "https" | "http")
            || url.fragment().is_some()
            || !url.username().is_empty()
            || url.password().is_some()
        {
            return Err(bad(
                "must be an http(s) URL without a fragment or credentials",
            ));
        }
        let origin = url.origin().ascii_serialization();
        if !self.origins.contains(&origin) {
            return Err(bad("is not on an origin of AUTH_RETURN_ORIGINS"));
        }
        Ok(url.to_string())
    }
}

/// The providers' side of the whole API.
pub(crate) struct Providers;

impl Surface for Providers {
    fn start(&self, config: &Config, ext: &mut Extensions) -> Result<(), ConfigError> {
        if config.providers.is_empty() {
            return Ok(());
        }
        let invalid = |expected: &'static str, value: String| ConfigError::Invalid {
            key: "AUTH_PROVIDERS",
            expected,
            value,
        };
        let mut providers: Vec<Provider> = Vec::new();
        for settings in &config.providers {
            if providers.iter().any(|p| p.name == settings.name) {
                return Err(invalid("distinct names", settings.name.clone()));
            }
            let provider = Provider::new(settings).map_err(|why| {
                invalid(
                    "providers whose AUTH_PROVIDER_<NAME>_* keys are complete and valid",
                    format!("{}: {why}", settings.name),
                )
            })?;
            providers.push(provider);
        }
        let origins = config.auth.auth_return_origins.clone();
        if origins.is_empty() || origins.iter().any(|o| o == "*") {
            return Err(ConfigError::Invalid {
                key: "AUTH_RETURN_ORIGINS",
                expected: "the origins of the pages providers send the browser back to (not *)",
                value: origins.join(","),
            });
        }
        let http = http::Http::new().map_err(|e| invalid("an HTTP client", e))?;
        ext.insert(Arc::new(Registry {
            providers,
            origins,
            http,
        }));
        Ok(())
    }

    fn register(&self, api: &Api, cfg: &mut actix_web::web::ServiceConfig) {
        let Some(registry) = api.state().ext.get::<Arc<Registry>>() else {
            return;
        };
        for face in crate::users::accounts(api) {
            for route in routes::routes(&face, registry) {
                let path = format!("{}{}", face.prefix, route.path);
                cfg.service(actix_web::web::resource(path).route((route.route)()));
            }
        }
    }

    fn document(&self, api: &Api, doc: &mut crate::openapi::ApiDoc) {
        let Some(registry) = api.state().ext.get::<Arc<Registry>>() else {
            return;
        };
        for face in crate::users::accounts(api) {
            let routes = routes::routes(&face, registry);
            crate::crud::mount::docs::custom::document_routes(
                doc,
                &face.prefix,
                &face.tag,
                &routes,
            );
        }
    }
}

//! Passkeys (WebAuthn, through `webauthn-rs`): registered as a second factor beside TOTP, then
//! asked for after a password like a code, or used alone to sign in (a passkey is something
//! held and something known or been, a second factor by itself). The relying party is set by
//! `AUTH_PASSKEY_ORIGINS` and `AUTH_PASSKEY_RP_ID`; a ceremony's state travels sealed in a
//! single-use ticket, so that its two requests may land on any instance.
//!
//! | Module | Owns |
//! |---|---|
//! | `ceremony` | the sealed, single-use ticket of a ceremony under way |
//! | `routes` | the routes: register, confirm, challenge, verify |

mod ceremony;
pub(super) mod routes;

use crate::config::{Config, ConfigError};
use crate::state::{ApiState, Extensions};
use std::sync::Arc;
use webauthn_rs::prelude::{Url, Webauthn, WebauthnBuilder};

/// The relying party passkeys are registered with and checked against.
pub(crate) struct Relying {
    /// The ceremonies' checks.
    webauthn: Webauthn,
}

impl std::fmt::Debug for Relying {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relying").finish_non_exhaustive()
    }
}

impl Relying {
    /// The API's relying party, if passkeys are on (`AUTH_PASSKEY_ORIGINS`).
    pub(super) fn of(st: &ApiState) -> Option<&Arc<Relying>> {
        st.ext.get::<Arc<Relying>>()
    }
}

/// A bad value of `key`.
fn invalid(key: &'static str, expected: &'static str, value: &str) -> ConfigError {
    ConfigError::Invalid {
        key,
        expected,
        value: value.to_owned(),
    }
}

/// Sets the relying party up from the configuration, when `AUTH_PASSKEY_ORIGINS` names any.
///
/// # Errors
///
/// `*` among the origins, an origin that is not a URL, or a relying party id the origins are
/// not under.
pub(super) fn start(config: &Config, name: &str, ext: &mut Extensions) -> Result<(), ConfigError> {
    let auth = &config.auth;
    let Some(first) = auth.auth_passkey_origins.first() else {
        return Ok(());
    };
    const ORIGINS: &str = "AUTH_PASSKEY_ORIGINS";
    const EXPECTED: &str = "origins such as https://app.example.com (not *)";
    let mut urls = Vec::new();
    for origin in &auth.auth_passkey_origins {
        let url = Url::parse(origin)
            .ok()
            .filter(|u| u.host_str().is_some())
            .ok_or_else(|| invalid(ORIGINS, EXPECTED, origin))?;
        urls.push(url);
    }
    let rp_id = match &auth.auth_passkey_rp_id {
        Some(id) if !id.trim().is_empty() => id.trim().to_owned(),
        _ => urls[0]
            .host_str()
            .map(str::to_owned)
            .ok_or_else(|| invalid(ORIGINS, EXPECTED, first))?,
    };
    let under = |u: &Url| {
        u.host_str()
            .is_some_and(|h| h == rp_id || h.ends_with(&format!(".{rp_id}")))
    };
    if !urls.iter().all(under) {
        return Err(invalid(
            "AUTH_PASSKEY_RP_ID",
            "a domain every origin of AUTH_PASSKEY_ORIGINS is or is under",
            &rp_id,
        ));
    }
    let mut builder = WebauthnBuilder::new(&rp_id, &urls[0])
        .map_err(|_| invalid("AUTH_PASSKEY_RP_ID", "a domain name", &rp_id))?
        .rp_name(name);
    for url in &urls[1..] {
        builder = builder.append_allowed_origin(url);
    }
    let webauthn = builder
        .build()
        .map_err(|_| invalid(ORIGINS, EXPECTED, first))?;
    ext.insert(Arc::new(Relying { webauthn }));
    Ok(())
}

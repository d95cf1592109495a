//! The ticket of a sign-in started at a provider: what the callback needs (the provider, the
//! `state` and `nonce` sent, the PKCE verifier, where the provider sends the browser back,
//! the account being linked), sealed by the API and held by the client between the two
//! requests, so that no instance keeps it and the callback may reach any; short-lived, and
//! used once (its id is recorded when it comes back, [`crate::spent::spend`]).

use crate::error::Error;
pub(crate) use crate::seal::random_token as random;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What the ticket key is derived under (HKDF's `info`): no other key of the API uses it.
const LABEL: &[u8] = b"crudforge sign-in ticket key v1";

/// A sign-in in progress.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Ticket {
    /// Its id, recorded when it is used.
    pub(crate) id: String,
    /// The provider's name.
    pub(crate) provider: String,
    /// The `state` sent to the provider, which must come back.
    pub(crate) state: String,
    /// The `nonce` sent to an OpenID provider, which its ID token must carry.
    pub(crate) nonce: String,
    /// The PKCE verifier whose S256 challenge was sent.
    pub(crate) verifier: String,
    /// The page the provider sends the browser back to (the redirect URI).
    pub(crate) return_to: String,
    /// When it stops being valid, in seconds since 1970.
    pub(crate) expires: i64,
    /// The signed-in account that asked to link the provider; `None` for a sign-in.
    pub(crate) link: Option<Uuid>,
}

/// The associated data of `provider`'s tickets: a ticket is good only for its provider.
fn associated(provider: &str) -> Vec<u8> {
    [b"crudforge-ticket\0".as_slice(), provider.as_bytes()].concat()
}

impl Ticket {
    /// The ticket sealed with the API's signing key `key`.
    pub(crate) fn seal(&self, key: &[u8]) -> Result<String, Error> {
        let json = serde_json::to_vec(self).map_err(|e| Error::Internal(e.to_string()))?;
        crate::seal::seal(key, LABEL, &associated(&self.provider), &json)
    }

    /// The ticket `text` of `provider`, if this API sealed it and it is still valid at `now`
    /// (seconds since 1970); `Ok(None)` for anything else.
    pub(crate) fn open(
        key: &[u8],
        provider: &str,
        text: &str,
        now: i64,
    ) -> Result<Option<Ticket>, Error> {
        let Some(json) = crate::seal::open(key, LABEL, &associated(provider), text)? else {
            return Ok(None);
        };
        Ok(serde_json::from_slice::<Ticket>(&json)
            .ok()
            .filter(|t| t.provider == provider && now < t.expires))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket() -> Ticket {
        Ticket {
            id: "i".into(),
            provider: "google".into(),
            state: "s".into(),
            nonce: "n".into(),
            verifier: "v".into(),
            return_to: "https://app.example.com/back".into(),
            expires: 1000,
            link: None,
        }
    }

    #[test]
    fn a_ticket_opens_for_its_provider_until_it_expires() {
        let key = [3u8; 32];
        let t = ticket().seal(&key).unwrap();
        assert_eq!(
            Ticket::open(&key, "google", &t, 999)
                .unwrap()
                .unwrap()
                .state,
            "s"
        );
        assert!(Ticket::open(&key, "google", &t, 1000).unwrap().is_none());
        assert!(Ticket::open(&key, "github", &t, 999).unwrap().is_none());
        assert!(Ticket::open(&[4u8; 32], "google", &t, 999)
            .unwrap()
            .is_none());
        assert!(!t.contains("app.example.com"), "the ticket shows nothing");
    }
}

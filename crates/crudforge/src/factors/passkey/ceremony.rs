//! The ticket of a passkey ceremony under way: the state `webauthn-rs` needs to check the
//! authenticator's answer (its challenge among it), the account when it is known, sealed by
//! the API and held by the client between the two requests; short-lived, and taken once (its
//! id is recorded when it comes back, [`crate::spent::spend`]).

use crate::error::Error;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What the ceremony key is derived under (HKDF's `info`): no other key of the API uses it.
const LABEL: &[u8] = b"crudforge passkey ceremony key v1";

/// The associated data of every ceremony ticket.
const ASSOCIATED: &[u8] = b"crudforge-passkey-ceremony";

/// Seconds a ceremony may take: the options' own timeout is five minutes.
pub(super) const SECONDS: i64 = 300;

/// A passkey sign-in under way.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Ceremony {
    /// Its id, random: recorded as used when it comes back.
    pub(super) id: String,
    /// The account, for a second factor after a password; `None` for a sign-in by a passkey
    /// alone, whose account the passkey names.
    pub(super) user: Option<Uuid>,
    /// The account's credential version when it began (0 without an account).
    pub(super) version: i64,
    /// `webauthn-rs`'s state of the ceremony.
    pub(super) state: serde_json::Value,
    /// When it stops being valid, in seconds since 1970.
    pub(super) expires: i64,
}

impl Ceremony {
    /// A ceremony of `user` at credential `version` with `state`, from now.
    pub(super) fn new(
        user: Option<Uuid>,
        version: i64,
        state: &impl Serialize,
    ) -> Result<Ceremony, Error> {
        Ok(Ceremony {
            id: crate::seal::random_token()?,
            user,
            version,
            state: serde_json::to_value(state).map_err(|e| Error::Internal(e.to_string()))?,
            expires: chrono::Utc::now().timestamp().saturating_add(SECONDS),
        })
    }

    /// The ceremony sealed with the API's signing key `key`.
    pub(super) fn seal(&self, key: &[u8]) -> Result<String, Error> {
        let json = serde_json::to_vec(self).map_err(|e| Error::Internal(e.to_string()))?;
        crate::seal::seal(key, LABEL, ASSOCIATED, &json)
    }

    /// The ceremony `text`, if this API sealed it and it is still valid at `now` (seconds
    /// since 1970); `Ok(None)` for anything else.
    pub(super) fn open(key: &[u8], text: &str, now: i64) -> Result<Option<Ceremony>, Error> {
        let Some(json) = crate::seal::open(key, LABEL, ASSOCIATED, text.trim())? else {
            return Ok(None);
        };
        Ok(serde_json::from_slice::<Ceremony>(&json)
            .ok()
            .filter(|c| now < c.expires))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ceremony_opens_with_its_key_until_it_expires() {
        let key = [5u8; 32];
        let user = Uuid::new_v4();
        let mut c = Ceremony::new(Some(user), 3, &serde_json::json!({"challenge": "x"})).unwrap();
        c.expires = 1000;
        let sealed = c.seal(&key).unwrap();
        let opened = Ceremony::open(&key, &sealed, 999).unwrap().unwrap();
        assert_eq!(
            (opened.user, opened.version, opened.id),
            (Some(user), 3, c.id)
        );
        assert_eq!(opened.state["challenge"], "x");
        assert!(Ceremony::open(&key, &sealed, 1000).unwrap().is_none());
        assert!(Ceremony::open(&[6u8; 32], &sealed, 999).unwrap().is_none());
        assert!(Ceremony::open(&key, "garbage", 999).unwrap().is_none());
    }
}

//! The ticket of a sign-in that still needs a second factor (or must enroll one first): the
//! account, what the ticket is for, the account's credential version, sealed by the API and
//! held by the client between the two requests; short-lived. It signs nothing in by itself:
//! a code must come with it, and a password change (a new credential version) voids it.

use crate::error::Error;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What the ticket key is derived under (HKDF's `info`): no other key of the API uses it.
const LABEL: &[u8] = b"crudforge factor ticket key v1";

/// Seconds a ticket is valid: time to open an authenticator app and type a code.
pub(super) const SECONDS: i64 = 300;

/// What a ticket lets its holder do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Purpose {
    /// Give a second factor (`factors/verify/`).
    Verify,
    /// Enroll one (`me/factors/totp/` and its confirmation), the account having none
    /// though it must.
    Enroll,
}

impl Purpose {
    /// The associated data of the purpose's tickets: a ticket is good only for its purpose.
    fn associated(self) -> &'static [u8] {
        match self {
            Purpose::Verify => b"crudforge-factor-ticket\0verify",
            Purpose::Enroll => b"crudforge-factor-ticket\0enroll",
        }
    }
}

/// A sign-in waiting for its second factor.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Ticket {
    /// The account.
    pub(super) user: Uuid,
    /// What it is for.
    pub(super) purpose: Purpose,
    /// The account's credential version when it was issued.
    pub(super) version: i64,
    /// When it stops being valid, in seconds since 1970.
    pub(super) expires: i64,
}

impl Ticket {
    /// The ticket sealed with the API's signing key `key`.
    pub(super) fn seal(&self, key: &[u8]) -> Result<String, Error> {
        let json = serde_json::to_vec(self).map_err(|e| Error::Internal(e.to_string()))?;
        crate::seal::seal(key, LABEL, self.purpose.associated(), &json)
    }

    /// The ticket `text` for `purpose`, if this API sealed it and it is still valid at `now`
    /// (seconds since 1970); `Ok(None)` for anything else.
    pub(super) fn open(
        key: &[u8],
        purpose: Purpose,
        text: &str,
        now: i64,
    ) -> Result<Option<Ticket>, Error> {
        let Some(json) = crate::seal::open(key, LABEL, purpose.associated(), text.trim())? else {
            return Ok(None);
        };
        Ok(serde_json::from_slice::<Ticket>(&json)
            .ok()
            .filter(|t| t.purpose == purpose && now < t.expires))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_opens_for_its_purpose_until_it_expires() {
        let key = [3u8; 32];
        let user = Uuid::new_v4();
        let t = Ticket {
            user,
            purpose: Purpose::Verify,
            version: 2,
            expires: 1000,
        }
        .seal(&key)
        .unwrap();
        let opened = Ticket::open(&key, Purpose::Verify, &t, 999)
            .unwrap()
            .unwrap();
        assert_eq!((opened.user, opened.version), (user, 2));
        assert!(Ticket::open(&key, Purpose::Verify, &t, 1000)
            .unwrap()
            .is_none());
        assert!(Ticket::open(&key, Purpose::Enroll, &t, 999)
            .unwrap()
            .is_none());
        assert!(Ticket::open(&[4u8; 32], Purpose::Verify, &t, 999)
            .unwrap()
            .is_none());
        assert!(Ticket::open(&key, Purpose::Verify, "garbage", 999)
            .unwrap()
            .is_none());
    }
}

//! Tokens whose signature and claims were checked, remembered (a bounded number of them) so a
//! client's next requests with the same token skip decoding and the HMAC.
//!
//! Only what cannot change for one token text is remembered: that its signature is right and
//! what its claims say. Everything that depends on the time (expiry, `nbf`, `iat`) and on the
//! use (the token's kind) is checked again on every request by [`Tokens::verify`], and the
//! user's state (enabled, `token_version`) is read from the database as before. Only tokens
//! that passed every check enter; the map's keys are hashed with a per-process random key, so a
//! client cannot aim requests at one entry.
//!
//! [`Tokens::verify`]: super::tokens::Tokens::verify

use super::Claims;
use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

/// How many tokens are remembered at most.
pub(crate) const CAPACITY: usize = 4096;

/// A bounded map from token text to its checked claims.
#[derive(Debug)]
pub(crate) struct Verified {
    seen: RwLock<HashMap<Box<str>, Claims>>,
    capacity: usize,
}

impl Default for Verified {
    fn default() -> Self {
        Verified::new(CAPACITY)
    }
}

impl Verified {
    /// Remembers at most `capacity` tokens.
    pub(crate) fn new(capacity: usize) -> Verified {
        Verified {
            seen: RwLock::default(),
            capacity,
        }
    }

    /// The claims of `token`, if it was checked before.
    pub(crate) fn get(&self, token: &str) -> Option<Claims> {
        // Entries are whole once inserted, so a panic elsewhere leaves nothing half-written.
        self.seen
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(token)
            .cloned()
    }

    /// Remembers that `token` passed every check with `claims`. When full, tokens expired by
    /// `now` are dropped first, and everything if that frees nothing.
    pub(crate) fn insert(&self, token: &str, claims: Claims, now: i64) {
        let mut seen = self.seen.write().unwrap_or_else(PoisonError::into_inner);
        if seen.len() >= self.capacity {
            seen.retain(|_, c| c.exp > now);
            if seen.len() >= self.capacity {
                seen.clear();
            }
        }
        if self.capacity > 0 {
            seen.insert(token.into(), claims);
        }
    }

    /// How many tokens are remembered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.seen
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether no token is remembered.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jwt::TokenKind;
    use uuid::Uuid;

    fn claims(exp: i64) -> Claims {
        Claims {
            sub: Uuid::new_v4(),
            exp,
            iat: 0,
            jti: Uuid::new_v4(),
            kind: TokenKind::Access,
            nbf: None,
            ver: None,
            scope: None,
            aal: None,
        }
    }

    #[test]
    fn remembers_up_to_its_capacity_dropping_expired_tokens_first() {
        let v = Verified::new(3);
        assert!(v.is_empty());
        v.insert("a", claims(10), 0);
        v.insert("b", claims(100), 0);
        v.insert("c", claims(100), 0);
        assert_eq!(v.get("a").map(|c| c.exp), Some(10));
        assert_eq!(v.get("z"), None);
        // Full at time 50: "a" has expired and makes room.
        v.insert("d", claims(100), 50);
        assert_eq!(v.len(), 3);
        assert_eq!(v.get("a"), None);
        assert!(v.get("b").is_some() && v.get("d").is_some());
        // Full and nothing expired: it starts again, never grows past its capacity.
        v.insert("e", claims(100), 50);
        assert_eq!(v.len(), 1);
        assert!(v.get("e").is_some());
        let none = Verified::new(0);
        none.insert("a", claims(10), 0);
        assert!(none.is_empty());
    }
}

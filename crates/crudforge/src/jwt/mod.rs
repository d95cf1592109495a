//! JSON Web Tokens: the claims crudforge signs and their verification (HS256, pinned).

mod verified;

use crate::config::Secret;
use crate::error::Error;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use uuid::Uuid;
use verified::Verified;

/// What a JWT may be used for. Only access tokens authenticate requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum TokenKind {
    /// Authenticates requests (`Authorization: Bearer`).
    Access,
    /// Exchanged for a new access token; stored as a Token record so it can be revoked.
    Refresh,
    /// Lets its subject set a new password.
    Recovery,
}

/// The claims crudforge signs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Claims {
    /// The user's id.
    pub sub: Uuid,
    /// Expiry, seconds since the epoch.
    pub exp: i64,
    /// Issue time, seconds since the epoch.
    pub iat: i64,
    /// Unique token id.
    pub jti: Uuid,
    /// The token kind.
    #[serde(rename = "type")]
    pub kind: TokenKind,
    /// Not valid before, seconds since the epoch (optional; checked when present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<i64>,
    /// The user's credential version when the token was issued: a token whose version is not
    /// the user's current one (the password changed, the account was disabled, the user
    /// logged out everywhere) no longer authenticates. Absent means version 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ver: Option<i64>,
    /// What the token may reach, when it was issued for an API key limited to scopes: the
    /// key's scope, entries separated by spaces (`read`, `Critter`, `Critter:delete`; the
    /// `scope` claim of RFC 8693). Every request made with the token is judged against it
    /// before the rules. Absent for ordinary logins and keys without scopes: the owner's full
    /// access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The assurance level of the sign-in the token comes from: 2 after a second factor (a
    /// TOTP code, a recovery code), absent (1) for a password, a provider, a mailed link or
    /// an API key alone. Carried unchanged through refreshes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aal: Option<u8>,
}

impl Claims {
    /// Whether the sign-in this token comes from passed a second factor (`aal` 2 or more).
    pub(crate) fn second_factor(&self) -> bool {
        self.aal.is_some_and(|a| a >= 2)
    }
}

/// How far in the future an `iat` may lie, in seconds, to allow for clocks of several
/// instances that differ slightly.
pub(crate) const IAT_LEEWAY: i64 = 5;

/// Signs and verifies tokens with the service's key (HS256, algorithm pinned on verify).
#[derive(Clone)]
pub struct Tokens {
    encoding: EncodingKey,
    decoding: DecodingKey,
    /// The checks `verify` asks of `jsonwebtoken`, built once (building them allocates).
    validation: Validation,
    /// Tokens already checked (shared by clones).
    verified: Arc<Verified>,
    /// Access token lifetime in seconds.
    pub access_ttl: i64,
    /// Refresh token lifetime in seconds.
    pub refresh_ttl: i64,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("access_ttl", &self.access_ttl)
            .field("refresh_ttl", &self.refresh_ttl)
            .finish_non_exhaustive()
    }
}

/// HS256 only, no leeway, `nbf` checked when present, `exp`, `sub` and `iat` required.
fn validation() -> Validation {
    let mut v = Validation::new(Algorithm::HS256);
    v.leeway = 0;
    v.validate_nbf = true;
    v.set_required_spec_claims(&["exp", "sub", "iat"]);
    v
}

fn invalid_token() -> Error {
    Error::Unauthorized("Invalid or expired token.".into())
}

impl Tokens {
    /// Token handling with `key` and lifetimes in seconds.
    pub fn new(key: &Secret, access_ttl: u64, refresh_ttl: u64) -> Self {
        Tokens {
            encoding: EncodingKey::from_secret(key.expose()),
            decoding: DecodingKey::from_secret(key.expose()),
            validation: validation(),
            verified: Arc::default(),
            access_ttl: i64::try_from(access_ttl).unwrap_or(i64::MAX / 2),
            refresh_ttl: i64::try_from(refresh_ttl).unwrap_or(i64::MAX / 2),
        }
    }

    /// Signs a token of `kind` for `user`, valid for `ttl` seconds (negative: already expired).
    ///
    /// # Errors
    ///
    /// Signing failed (never expected with an HMAC key).
    pub fn issue(&self, user: Uuid, kind: TokenKind, ttl: i64) -> Result<(String, Claims), Error> {
        self.issue_versioned(user, kind, ttl, 0)
    }

    /// Like [`Tokens::issue`], for the user's credential version `ver` (see [`Claims::ver`]).
    ///
    /// # Errors
    ///
    /// Signing failed.
    pub fn issue_versioned(
        &self,
        user: Uuid,
        kind: TokenKind,
        ttl: i64,
        ver: i64,
    ) -> Result<(String, Claims), Error> {
        self.issue_assured(user, kind, ttl, ver, None)
    }

    /// Like [`Tokens::issue_versioned`], at the assurance level `aal` (see [`Claims::aal`]).
    ///
    /// # Errors
    ///
    /// Signing failed.
    pub(crate) fn issue_assured(
        &self,
        user: Uuid,
        kind: TokenKind,
        ttl: i64,
        ver: i64,
        aal: Option<u8>,
    ) -> Result<(String, Claims), Error> {
        let now = chrono::Utc::now().timestamp();
        self.sign(Claims {
            sub: user,
            exp: now.saturating_add(ttl),
            iat: now,
            jti: Uuid::new_v4(),
            kind,
            nbf: None,
            ver: (ver != 0).then_some(ver),
            scope: None,
            aal,
        })
    }

    /// An access token that an API key was exchanged for: for `user` at credential version
    /// `ver`, with the configured lifetime cut short at `not_after` (the key's expiry, seconds
    /// since the epoch) when that comes first, carrying the key's `scope`.
    ///
    /// # Errors
    ///
    /// 401 when `not_after` has passed; signing failed.
    pub(crate) fn issue_for_key(
        &self,
        user: Uuid,
        ver: i64,
        not_after: Option<i64>,
        scope: Option<String>,
    ) -> Result<(String, Claims), Error> {
        let now = chrono::Utc::now().timestamp();
        let exp = now
            .saturating_add(self.access_ttl)
            .min(not_after.unwrap_or(i64::MAX));
        if exp <= now {
            return Err(invalid_token());
        }
        self.sign(Claims {
            sub: user,
            exp,
            iat: now,
            jti: Uuid::new_v4(),
            kind: TokenKind::Access,
            nbf: None,
            ver: (ver != 0).then_some(ver),
            scope,
            aal: None,
        })
    }

    /// Signs `claims`.
    fn sign(&self, claims: Claims) -> Result<(String, Claims), Error> {
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .map_err(|e| Error::Internal(format!("signing a token: {e}")))?;
        Ok((token, claims))
    }

    /// An access token for `user` with the configured lifetime, at credential version 0 (a
    /// user that never changed its password nor logged out everywhere). Handlers should use
    /// `users::access_token`, which reads the user's current version.
    ///
    /// # Errors
    ///
    /// Signing failed.
    pub fn access(&self, user: Uuid) -> Result<String, Error> {
        self.issue(user, TokenKind::Access, self.access_ttl)
            .map(|t| t.0)
    }

    /// Verifies the signature (HS256 only) and every registered claim the token carries:
    /// `exp` (required, a number, in the future), `iat` (required, a number, not in the future
    /// beyond `IAT_LEEWAY`, not after `exp`), `nbf` (a number, not in the future, when
    /// present), `sub` (required, a UUID), `jti` (required, a UUID) and `type` (required, the
    /// expected kind). A claim of the wrong JSON type fails like a missing one.
    ///
    /// # Errors
    ///
    /// 401 for a malformed, wrongly signed, expired, not-yet-valid or wrong-kind token.
    pub fn verify(&self, token: &str, kind: TokenKind) -> Result<Claims, Error> {
        // A token seen before skips decoding and the signature (see `verified`); the checks
        // below, which depend on the time and the use, run every time.
        let (c, checked_before) = match self.verified.get(token) {
            Some(c) => (c, true),
            None => {
                let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
                    .map_err(|_| invalid_token())?;
                (data.claims, false)
            }
        };
        let now = chrono::Utc::now().timestamp();
        let in_window = c.exp > now
            && c.iat <= now.saturating_add(IAT_LEEWAY)
            && c.iat <= c.exp
            && c.nbf.is_none_or(|nbf| nbf <= now)
            && c.ver.is_none_or(|v| v >= 0);
        if !in_window || c.kind != kind {
            return Err(invalid_token());
        }
        if !checked_before {
            self.verified.insert(token, c.clone(), now);
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens() -> Tokens {
        Tokens::new(&Secret::new(vec![7u8; 32]), 60, 120)
    }

    #[test]
    fn round_trip_and_kind_check() {
        let t = tokens();
        let id = Uuid::new_v4();
        let (tok, claims) = t.issue(id, TokenKind::Access, 60).unwrap();
        assert_eq!(t.verify(&tok, TokenKind::Access).unwrap(), claims);
        assert!(t.verify(&tok, TokenKind::Refresh).is_err());
        let (expired, _) = t.issue(id, TokenKind::Access, -5).unwrap();
        assert!(t.verify(&expired, TokenKind::Access).is_err());
        let other = Tokens::new(&Secret::new(vec![8u8; 32]), 60, 60);
        assert!(other.verify(&tok, TokenKind::Access).is_err(), "wrong key");
        assert!(t.verify("not.a.jwt", TokenKind::Access).is_err());
    }

    #[test]
    fn a_token_checked_before_is_still_checked_for_time_and_kind() {
        let t = tokens();
        let (tok, claims) = t.issue(Uuid::new_v4(), TokenKind::Access, 60).unwrap();
        assert_eq!(t.verify(&tok, TokenKind::Access).unwrap(), claims);
        assert_eq!(t.verified.len(), 1);
        assert_eq!(t.verify(&tok, TokenKind::Access).unwrap(), claims);
        assert_eq!(t.verified.len(), 1, "the second check found the first");
        assert!(
            t.verify(&tok, TokenKind::Refresh).is_err(),
            "kind, on a remembered token"
        );
        // Same claims, another signature: a different text, checked in full and refused.
        let (head, _) = tok.rsplit_once('.').unwrap();
        let forged = format!("{head}.{}", "A".repeat(43));
        assert!(t.verify(&forged, TokenKind::Access).is_err());
        // A remembered token whose time has passed is refused.
        let now = chrono::Utc::now().timestamp();
        let expired = Claims {
            exp: now - 1,
            ..claims
        };
        t.verified.insert(&tok, expired, now);
        assert!(t.verify(&tok, TokenKind::Access).is_err());
        // Refused tokens are not remembered.
        let fresh = tokens();
        let (old, _) = fresh.issue(Uuid::new_v4(), TokenKind::Access, -5).unwrap();
        assert!(fresh.verify(&old, TokenKind::Access).is_err());
        assert!(fresh.verify(&forged, TokenKind::Access).is_err());
        assert!(fresh.verify(&tok, TokenKind::Refresh).is_err());
        assert!(fresh.verified.is_empty());
    }

    #[test]
    fn other_algorithms_are_refused() {
        let t = tokens();
        let claims = Claims {
            sub: Uuid::new_v4(),
            exp: chrono::Utc::now().timestamp() + 60,
            iat: 0,
            jti: Uuid::new_v4(),
            kind: TokenKind::Access,
            nbf: None,
            ver: None,
            scope: None,
            aal: None,
        };
        let tok = jsonwebtoken::encode(
            &Header::new(Algorithm::HS512),
            &claims,
            &EncodingKey::from_secret(&[7u8; 32]),
        )
        .unwrap();
        assert!(t.verify(&tok, TokenKind::Access).is_err());
    }

    /// Signs arbitrary claims with the test key, as an attacker holding a leaked key could not
    /// but a buggy issuer might.
    fn signed(claims: &serde_json::Value) -> String {
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            claims,
            &EncodingKey::from_secret(&[7u8; 32]),
        )
        .unwrap()
    }

    fn good() -> serde_json::Value {
        let now = chrono::Utc::now().timestamp();
        serde_json::json!({
            "sub": Uuid::new_v4().to_string(),
            "exp": now + 60,
            "iat": now,
            "jti": Uuid::new_v4().to_string(),
            "type": "access",
        })
    }

    fn with(key: &str, value: serde_json::Value) -> serde_json::Value {
        let mut c = good();
        c[key] = value;
        c
    }

    fn without(key: &str) -> serde_json::Value {
        let mut c = good();
        c.as_object_mut().unwrap().remove(key);
        c
    }

    #[test]
    fn a_well_formed_token_passes() {
        assert!(tokens().verify(&signed(&good()), TokenKind::Access).is_ok());
        let now = chrono::Utc::now().timestamp();
        assert!(tokens()
            .verify(&signed(&with("nbf", now.into())), TokenKind::Access)
            .is_ok());
    }

    #[test]
    fn exp_is_required_numeric_and_in_the_future() {
        let t = tokens();
        let now = chrono::Utc::now().timestamp();
        for bad in [
            without("exp"),
            with("exp", "soon".into()),
            with("exp", (now - 1).into()),
            with("exp", serde_json::Value::Null),
        ] {
            assert!(t.verify(&signed(&bad), TokenKind::Access).is_err(), "{bad}");
        }
    }

    #[test]
    fn nbf_is_numeric_and_not_in_the_future() {
        let t = tokens();
        let now = chrono::Utc::now().timestamp();
        for bad in [
            with("nbf", (now + 30).into()),
            with("nbf", "0".into()),
            with("nbf", serde_json::json!({})),
        ] {
            assert!(t.verify(&signed(&bad), TokenKind::Access).is_err(), "{bad}");
        }
    }

    #[test]
    fn iat_is_required_numeric_and_not_in_the_future() {
        let t = tokens();
        let now = chrono::Utc::now().timestamp();
        for bad in [
            without("iat"),
            with("iat", "yesterday".into()),
            with("iat", (now + IAT_LEEWAY + 30).into()),
            with("iat", (now + 120).into()),
        ] {
            assert!(t.verify(&signed(&bad), TokenKind::Access).is_err(), "{bad}");
        }
    }

    #[test]
    fn sub_and_jti_are_required_uuids() {
        let t = tokens();
        for bad in [
            without("sub"),
            with("sub", "admin".into()),
            with("sub", 1.into()),
            without("jti"),
            with("jti", "x".into()),
        ] {
            assert!(t.verify(&signed(&bad), TokenKind::Access).is_err(), "{bad}");
        }
    }

    #[test]
    fn type_is_required_and_must_match() {
        let t = tokens();
        for bad in [
            without("type"),
            with("type", "refresh".into()),
            with("type", "ACCESS".into()),
            with("type", 0.into()),
        ] {
            assert!(t.verify(&signed(&bad), TokenKind::Access).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_keys_token_carries_its_scope_and_ends_with_the_key() {
        let t = tokens();
        let user = Uuid::new_v4();
        let now = chrono::Utc::now().timestamp();
        let (tok, claims) = t
            .issue_for_key(user, 2, Some(now + 20), Some("Critter:read".to_owned()))
            .unwrap();
        assert!(claims.exp <= now + 20 && claims.exp > now, "{claims:?}");
        let back = t.verify(&tok, TokenKind::Access).unwrap();
        assert_eq!(back.scope.as_deref(), Some("Critter:read"));
        assert_eq!(back.ver, Some(2));
        // Without an expiry, the configured lifetime; an expiry past is refused.
        let (_, c) = t.issue_for_key(user, 0, None, None).unwrap();
        assert!(c.exp >= now + 60 && c.scope.is_none());
        assert!(t.issue_for_key(user, 0, Some(now), None).is_err());
        // A login's token has no scope claim at all; one of the wrong type is refused.
        let (plain, _) = t.issue(user, TokenKind::Access, 60).unwrap();
        let payload = plain.split('.').nth(1).unwrap();
        use base64::Engine as _;
        let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap();
        assert!(!String::from_utf8(json).unwrap().contains("scope"));
        assert!(t
            .verify(&signed(&with("scope", 7.into())), TokenKind::Access)
            .is_err());
    }

    #[test]
    fn ver_is_a_number_when_present() {
        let t = tokens();
        assert!(t
            .verify(&signed(&with("ver", 3.into())), TokenKind::Access)
            .is_ok());
        for bad in [with("ver", "3".into()), with("ver", (-1).into())] {
            assert!(t.verify(&signed(&bad), TokenKind::Access).is_err(), "{bad}");
        }
    }
}

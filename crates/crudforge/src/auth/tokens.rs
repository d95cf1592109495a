//! JSON Web Tokens: the claims crudforge signs and their verification (HS256, pinned).

use crate::config::Secret;
use crate::error::Error;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What a JWT may be used for. Only access tokens authenticate requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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
}

/// Signs and verifies tokens with the service's key (HS256, algorithm pinned on verify).
#[derive(Clone)]
pub struct Tokens {
    encoding: EncodingKey,
    decoding: DecodingKey,
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

fn invalid_token() -> Error {
    Error::Unauthorized("Invalid or expired token.".into())
}

impl Tokens {
    /// Token handling with `key` and lifetimes in seconds.
    pub fn new(key: &Secret, access_ttl: u64, refresh_ttl: u64) -> Self {
        Tokens {
            encoding: EncodingKey::from_secret(key.expose()),
            decoding: DecodingKey::from_secret(key.expose()),
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
        let now = chrono::Utc::now().timestamp();
        let claims = Claims {
            sub: user,
            exp: now.saturating_add(ttl),
            iat: now,
            jti: Uuid::new_v4(),
            kind,
        };
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .map_err(|e| Error::Internal(format!("signing a token: {e}")))?;
        Ok((token, claims))
    }

    /// An access token for `user` with the configured lifetime.
    ///
    /// # Errors
    ///
    /// Signing failed.
    pub fn access(&self, user: Uuid) -> Result<String, Error> {
        self.issue(user, TokenKind::Access, self.access_ttl)
            .map(|t| t.0)
    }

    /// Verifies signature (HS256 only), expiry and kind.
    ///
    /// # Errors
    ///
    /// 401 for a malformed, wrongly signed, expired or wrong-kind token.
    pub fn verify(&self, token: &str, kind: TokenKind) -> Result<Claims, Error> {
        let mut v = Validation::new(Algorithm::HS256);
        v.leeway = 0;
        v.set_required_spec_claims(&["exp", "sub", "iat"]);
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &v)
            .map_err(|_| invalid_token())?;
        if data.claims.kind != kind {
            return Err(invalid_token());
        }
        Ok(data.claims)
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
    fn other_algorithms_are_refused() {
        let t = tokens();
        let claims = Claims {
            sub: Uuid::new_v4(),
            exp: chrono::Utc::now().timestamp() + 60,
            iat: 0,
            jti: Uuid::new_v4(),
            kind: TokenKind::Access,
        };
        let tok = jsonwebtoken::encode(
            &Header::new(Algorithm::HS512),
            &claims,
            &EncodingKey::from_secret(&[7u8; 32]),
        )
        .unwrap();
        assert!(t.verify(&tok, TokenKind::Access).is_err());
    }
}

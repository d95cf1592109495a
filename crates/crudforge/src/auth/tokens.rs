//! Authentication: JWTs (access, refresh, recovery), bcrypt passwords hashed off the async
//! workers, and the current user, loaded with its roles in one query.

use crate::api::ApiState;
use crate::config::Secret;
use crate::error::Error;
use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpMessage, HttpRequest};
use futures_util::future::LocalBoxFuture;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;
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

// ---- passwords ----

/// bcrypt's limit; longer passwords are refused rather than silently cut.
pub const MAX_PASSWORD_BYTES: usize = 72;

/// Hashes a password with bcrypt at `cost`, on a blocking thread.
///
/// # Errors
///
/// 400 naming the `password` member for an empty password or one over 72 bytes (bcrypt
/// would silently ignore the rest); see [`hash_password_for`] to name another member.
pub async fn hash_password(password: String, cost: u32) -> Result<String, Error> {
    hash_password_for("password", password, cost).await
}

/// Like [`hash_password`], naming `field` in errors.
///
/// # Errors
///
/// 400 for an empty password or one over 72 bytes.
pub async fn hash_password_for(field: &str, password: String, cost: u32) -> Result<String, Error> {
    if password.is_empty() {
        return Err(Error::bad_param(field, "must not be empty"));
    }
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(Error::bad_param(
            field,
            format!("at most {MAX_PASSWORD_BYTES} bytes; longer passwords are refused, not cut"),
        ));
    }
    // bcrypt reads 72 bytes; the length check above guarantees none of the password's own
    // bytes are dropped (only the terminator `non_truncating_hash` would count).
    tokio::task::spawn_blocking(move || bcrypt::hash(password, cost))
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
        .map_err(|e| Error::Internal(e.to_string()))
}

/// A hash to verify against when there is none, made once (on a blocking thread: callers
/// run inside `spawn_blocking`).
fn dummy_hash(cost: u32) -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| bcrypt::hash("crudforge-dummy-password", cost).unwrap_or_default())
}

/// Verifies `password` against `hash` on a blocking thread. With no hash (unknown user, no
/// password set) it verifies against a dummy hash, so the answer takes the same time.
///
/// # Errors
///
/// The blocking task failed.
pub async fn verify_password(
    password: String,
    hash: Option<String>,
    cost: u32,
) -> Result<bool, Error> {
    let known = hash.is_some();
    let ok = tokio::task::spawn_blocking(move || {
        let hash = hash.as_deref().unwrap_or_else(|| dummy_hash(cost));
        if password.len() > MAX_PASSWORD_BYTES {
            // Still spend the time, then refuse.
            let _ = bcrypt::verify(&password.as_bytes()[..MAX_PASSWORD_BYTES], hash);
            return false;
        }
        bcrypt::verify(password, hash).unwrap_or(false)
    })
    .await
    .map_err(|e| Error::Internal(e.to_string()))?;
    Ok(ok && known)
}

// ---- the current user ----

/// One role a user holds, optionally scoped to a domain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleGrant {
    /// The role name (`ADMIN`).
    pub role: String,
    /// The domain it is limited to; `None` means every domain.
    pub domain_id: Option<Uuid>,
}

/// The authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentUser {
    /// User id.
    pub id: Uuid,
    /// E-mail address.
    pub email: String,
    /// Always true for an authenticated user (disabled users cannot authenticate).
    pub is_enabled: bool,
    /// Roles held.
    pub roles: Vec<RoleGrant>,
}

impl CurrentUser {
    /// Whether the user holds `role` (in any domain when `domain` is `None`; in `domain` or
    /// unscoped otherwise).
    pub fn has_role(&self, role: &str, domain: Option<Uuid>) -> bool {
        self.roles.iter().any(|g| {
            g.role == role && (domain.is_none() || g.domain_id.is_none() || g.domain_id == domain)
        })
    }

    /// Whether the user holds at least one role.
    pub fn has_any_role(&self) -> bool {
        !self.roles.is_empty()
    }

    /// ADMIN or SUPERADMIN, in any domain.
    pub fn is_admin(&self) -> bool {
        self.roles
            .iter()
            .any(|g| g.role == "ADMIN" || g.role == "SUPERADMIN")
    }

    /// SPEC's domain access: true for no domain, or when a role has that domain or none.
    pub fn has_domain_access(&self, domain: Option<Uuid>) -> bool {
        match domain {
            None => true,
            Some(d) => self
                .roles
                .iter()
                .any(|g| g.domain_id.is_none() || g.domain_id == Some(d)),
        }
    }
}

/// Outcome of reading the `Authorization` header, cached per request.
#[derive(Clone)]
struct Authenticated(Result<Option<CurrentUser>, (u16, String)>);

/// The caller, from `Authorization: Bearer <access token>`: `None` without the header.
/// Loads the user with its roles in one query and caches it for the request.
///
/// # Errors
///
/// 401 for a malformed header, an invalid, expired or non-access token, or a user that no
/// longer exists or is disabled.
pub async fn current_user(req: &HttpRequest) -> Result<Option<CurrentUser>, Error> {
    if let Some(Authenticated(r)) = req.extensions().get::<Authenticated>().cloned() {
        return r.map_err(|(_, m)| Error::Unauthorized(m.into()));
    }
    // The lookup runs as a task of its own. Actix polls a handler's extractors together and
    // drops the others as soon as one fails (a malformed JSON body next to `Auth`); dropping
    // an unfinished SQLite query panics on actix's single-threaded workers (diesel-async waits
    // for the blocking task with `block_in_place`). A detached task is never dropped midway.
    if req
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .is_none()
    {
        return Ok(None);
    }
    let r = req.clone();
    // The task keeps counting its query towards the request's statistics.
    let stats = crate::db::monitor::QueryStats::current();
    let result = actix_web::rt::spawn(async move {
        match stats {
            Some(s) => crate::db::monitor::QueryStats::scope(s, authenticate(&r)).await,
            None => authenticate(&r).await,
        }
    })
    .await
    .unwrap_or_else(|e| Err(Error::Internal(format!("authentication task: {e}"))));
    let cached = match &result {
        Ok(u) => Ok(u.clone()),
        Err(e) => Err((401, e.to_string())),
    };
    req.extensions_mut().insert(Authenticated(cached));
    result
}

/// Like [`current_user`], but anonymous callers get 401.
///
/// # Errors
///
/// 401.
pub async fn require_user(req: &HttpRequest) -> Result<CurrentUser, Error> {
    current_user(req)
        .await?
        .ok_or_else(|| Error::Unauthorized("Authentication required.".into()))
}

async fn authenticate(req: &HttpRequest) -> Result<Option<CurrentUser>, Error> {
    let Some(header) = req.headers().get(actix_web::http::header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = header
        .to_str()
        .map_err(|_| Error::Unauthorized("Malformed Authorization header.".into()))?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| Error::Unauthorized("Expected `Authorization: Bearer <token>`.".into()))?;
    let st = ApiState::of(req)?;
    let claims = st.tokens.verify(token, TokenKind::Access)?;
    let user = crate::users::load_user(&st.db, claims.sub)
        .await?
        .filter(|u| u.is_enabled)
        .ok_or_else(|| {
            Error::Unauthorized("The token's user does not exist or is disabled.".into())
        })?;
    Ok(Some(user))
}

/// Extractor for handlers that need a signed-in user (401 otherwise).
#[derive(Debug, Clone)]
pub struct Auth(pub CurrentUser);

impl FromRequest for Auth {
    type Error = Error;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { require_user(&req).await.map(Auth) })
    }
}

/// Extractor for handlers that accept anonymous callers but use the user when there is one
/// (an invalid token is still a 401).
#[derive(Debug, Clone)]
pub struct MaybeAuth(pub Option<CurrentUser>);

impl FromRequest for MaybeAuth {
    type Error = Error;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { current_user(&req).await.map(MaybeAuth) })
    }
}

/// Extractor for administrators (401 anonymous, 403 others).
#[derive(Debug, Clone)]
pub struct Admin(pub CurrentUser);

impl FromRequest for Admin {
    type Error = Error;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let u = require_user(&req).await?;
            if u.is_admin() {
                Ok(Admin(u))
            } else {
                Err(Error::Forbidden("Administrators only.".into()))
            }
        })
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

    #[actix_web::test]
    async fn passwords_hash_and_verify_without_truncation() {
        let h = hash_password("correct horse".into(), 4).await.unwrap();
        assert!(h.starts_with("$2"));
        assert!(verify_password("correct horse".into(), Some(h.clone()), 4)
            .await
            .unwrap());
        assert!(!verify_password("wrong".into(), Some(h), 4).await.unwrap());
        assert!(!verify_password("x".into(), None, 4).await.unwrap());
        let long = "a".repeat(73);
        assert!(matches!(
            hash_password(long, 4).await,
            Err(Error::BadRequest { .. })
        ));
        let exactly = "b".repeat(72);
        let h = hash_password(exactly.clone(), 4).await.unwrap();
        assert!(verify_password(exactly.clone() + "c", Some(h.clone()), 4)
            .await
            .is_ok_and(|ok| !ok));
        assert!(verify_password(exactly, Some(h), 4).await.unwrap());
    }

    #[test]
    fn roles() {
        let d = Uuid::new_v4();
        let u = CurrentUser {
            id: Uuid::new_v4(),
            email: "a@b.c".into(),
            is_enabled: true,
            roles: vec![RoleGrant {
                role: "MODERATOR".into(),
                domain_id: Some(d),
            }],
        };
        assert!(u.has_role("MODERATOR", None));
        assert!(u.has_role("MODERATOR", Some(d)));
        assert!(!u.has_role("MODERATOR", Some(Uuid::new_v4())));
        assert!(!u.is_admin());
        assert!(u.has_any_role());
        assert!(u.has_domain_access(Some(d)) && u.has_domain_access(None));
        assert!(!u.has_domain_access(Some(Uuid::new_v4())));
    }
}

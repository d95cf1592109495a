//! Passwords: bcrypt hashing and verification on blocking threads, never truncated.

use crate::error::Error;
use std::sync::OnceLock;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}

//! Passwords: bcrypt hashing and verification on crudforge's own low-priority threads, in
//! steps that give way to request workers ([`super::yielding_bcrypt`]), never truncated.
//!
//! bcrypt reads at most 72 bytes. A password that fits is hashed as it is (so hashes made
//! before longer passwords were accepted still verify); a longer one (64 characters of most
//! non-Latin scripts take 128 to 256 bytes) is first reduced to the hex SHA-256 of all its
//! bytes, and the stored hash carries [`PREHASH_TAG`] so verification knows. No byte of any
//! password is ever ignored.

use super::yielding_bcrypt;
use crate::error::Error;
use std::sync::OnceLock;

/// How many bytes bcrypt itself reads.
pub const MAX_PASSWORD_BYTES: usize = 72;

/// The longest password accepted, in bytes (a bound on the work one request can ask for).
pub const MAX_PASSWORD_LEN: usize = 1024;

/// Prefix of stored hashes whose password was longer than [`MAX_PASSWORD_BYTES`] and went
/// through SHA-256 before bcrypt.
pub const PREHASH_TAG: &str = "$sha256";

/// Hashes a password with bcrypt at `cost`, on a bcrypt thread.
///
/// # Errors
///
/// 400 naming the `password` member for an empty password or one over
/// [`MAX_PASSWORD_LEN`] bytes; see [`hash_password_for`] to name another member.
pub async fn hash_password(password: String, cost: u32) -> Result<String, Error> {
    hash_password_for("password", password, cost).await
}

/// Like [`hash_password`], naming `field` in errors.
///
/// # Errors
///
/// 400 for an empty password or one over [`MAX_PASSWORD_LEN`] bytes.
pub async fn hash_password_for(field: &str, password: String, cost: u32) -> Result<String, Error> {
    if password.is_empty() {
        return Err(Error::bad_param(field, "must not be empty"));
    }
    if password.len() > MAX_PASSWORD_LEN {
        return Err(Error::bad_param(
            field,
            format!("at most {MAX_PASSWORD_LEN} bytes; longer passwords are refused, not cut"),
        ));
    }
    bounded(move || {
        if password.len() <= MAX_PASSWORD_BYTES {
            yielding_bcrypt::hash(password.as_bytes(), cost)
        } else {
            yielding_bcrypt::hash(prehash(&password).as_bytes(), cost)
                .map(|h| format!("{PREHASH_TAG}{h}"))
        }
    })
    .await?
    .map_err(|e| Error::Internal(e.to_string()))
}

/// The hex SHA-256 of a password: 64 bytes, which bcrypt reads whole.
fn prehash(password: &str) -> String {
    crate::db::functions::digest_hex(password)
}

/// Runs bcrypt work on one of the [bcrypt threads](super::workers), below the request
/// workers' priority, so that a burst of logins queues instead of slowing other requests.
async fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Error> {
    super::workers::run(f).await
}

/// A hash to verify against when there is none, made once (on a bcrypt thread: callers run
/// inside [`bounded`]).
fn dummy_hash(cost: u32) -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| {
        yielding_bcrypt::hash(b"crudforge-dummy-password", cost).unwrap_or_default()
    })
}

/// Verifies `password` against `hash` on a bcrypt thread. With no hash (unknown user, no
/// password set) it verifies against a dummy hash, so the answer takes the same time.
///
/// # Errors
///
/// The bcrypt job failed.
pub async fn verify_password(
    password: String,
    hash: Option<String>,
    cost: u32,
) -> Result<bool, Error> {
    let known = hash.is_some();
    let ok = bounded(move || {
        let hash = hash.as_deref().unwrap_or_else(|| dummy_hash(cost));
        if password.len() > MAX_PASSWORD_LEN {
            // Still spend the time, then refuse.
            let _ = yielding_bcrypt::verify(prehash(&password).as_bytes(), dummy_hash(cost));
            return false;
        }
        match hash.strip_prefix(PREHASH_TAG) {
            Some(inner) => {
                yielding_bcrypt::verify(prehash(&password).as_bytes(), inner).unwrap_or(false)
            }
            None if password.len() > MAX_PASSWORD_BYTES => {
                // A plain bcrypt hash can only come from a password bcrypt read whole.
                let _ = yielding_bcrypt::verify(prehash(&password).as_bytes(), hash);
                false
            }
            None => yielding_bcrypt::verify(password.as_bytes(), hash).unwrap_or(false),
        }
    })
    .await?;
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
        let long = "a".repeat(MAX_PASSWORD_LEN + 1);
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

    #[actix_web::test]
    async fn long_passwords_in_any_script_are_whole() {
        // 64 characters of CJK (192 bytes), Devanagari and emoji (256 bytes): accepted, and
        // a change in the last character is noticed.
        for c in ['漢', 'क', '😀'] {
            let pw: String = std::iter::repeat_n(c, 64).collect();
            assert!(pw.len() > MAX_PASSWORD_BYTES);
            let h = hash_password(pw.clone(), 4).await.unwrap();
            assert!(h.starts_with(PREHASH_TAG));
            assert!(verify_password(pw.clone(), Some(h.clone()), 4)
                .await
                .unwrap());
            let mut other = pw.clone();
            other.pop();
            other.push('x');
            assert!(!verify_password(other, Some(h), 4).await.unwrap());
        }
        // A hash made by plain bcrypt (as before long passwords were accepted) still verifies.
        let old = ::bcrypt::hash("legacy password", 4).unwrap();
        assert!(verify_password("legacy password".into(), Some(old), 4)
            .await
            .unwrap());
    }
}

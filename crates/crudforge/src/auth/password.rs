//! Passwords: bcrypt hashing and verification on crudforge's own low-priority threads, in
//! steps that give way to request workers ([`super::yielding_bcrypt`]), never truncated.
//!
//! bcrypt reads at most 72 bytes. A password that fits is hashed as it is (so hashes made
//! before longer passwords were accepted still verify); a longer one (64 characters of most
//! non-Latin scripts take 128 to 256 bytes) is first reduced to the hex SHA-256 of all its
//! bytes, and the stored hash carries [`PREHASH_TAG`] so verification knows. No byte of any
//! password is ever ignored.

use super::yielding_bcrypt;
use crate::config::Config;
use crate::error::Error;
use std::sync::OnceLock;

/// How many bytes bcrypt itself reads.
pub(crate) const MAX_PASSWORD_BYTES: usize = 72;

/// The longest password accepted, in bytes (a bound on the work one request can ask for).
pub(crate) const MAX_PASSWORD_LEN: usize = 1024;

/// Prefix of stored hashes whose password was longer than [`MAX_PASSWORD_BYTES`] and went
/// through SHA-256 before bcrypt.
pub(crate) const PREHASH_TAG: &str = "$sha256";

/// The shortest password accepted by default, and the most a minimum length may ask for
/// (every password of 64 characters fits [`MAX_PASSWORD_LEN`] whatever its script), in
/// characters; they bound `PASSWORD_MIN_LENGTH`, so the configuration declares them.
pub(crate) use crate::config::{DEFAULT_MIN_PASSWORD_CHARS, MAX_MIN_PASSWORD_CHARS};

/// What a new password must satisfy and how it is hashed: the bcrypt cost
/// (`BCRYPT_COST`) and the shortest length accepted (`PASSWORD_MIN_LENGTH`, in characters).
///
/// Build it from the configuration with [`Config::password_policy`].
/// A bare cost converts into a policy with the default minimum of
/// 8 characters, so `hash_password(pw, 12)` still reads well; code that
/// has a [`Config`](crate::Config) should pass its policy, so that `PASSWORD_MIN_LENGTH` applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PasswordPolicy {
    /// bcrypt work factor of new hashes (4 to 31).
    pub cost: u32,
    /// The shortest password accepted, in characters (Unicode scalar values), from 1 to 64.
    pub min_chars: usize,
}

impl PasswordPolicy {
    /// A policy hashing at `cost` with the default minimum length.
    pub fn new(cost: u32) -> Self {
        PasswordPolicy {
            cost,
            min_chars: DEFAULT_MIN_PASSWORD_CHARS,
        }
    }

    /// The same policy with another minimum length (kept within 1 to 64).
    #[must_use]
    pub(crate) fn with_min_chars(self, min_chars: usize) -> Self {
        PasswordPolicy {
            min_chars: min_chars.clamp(1, MAX_MIN_PASSWORD_CHARS),
            ..self
        }
    }

    /// Checks a new password against the policy, naming `field` in the error.
    ///
    /// # Errors
    ///
    /// 422 naming `field` for a password shorter than the minimum (an empty one included)
    /// or longer than 1024 bytes.
    pub fn check(&self, field: &str, password: &str) -> Result<(), Error> {
        if password.len() > MAX_PASSWORD_LEN {
            return Err(Error::invalid_field(
                field,
                format!("at most {MAX_PASSWORD_LEN} bytes; longer passwords are refused, not cut"),
            ));
        }
        let min = self.min_chars.max(1);
        if password.chars().count() < min {
            return Err(Error::invalid_field(
                field,
                format!("a password needs at least {min} characters"),
            ));
        }
        Ok(())
    }
}

impl Config {
    /// The password policy of new passwords: `BCRYPT_COST` and `PASSWORD_MIN_LENGTH`.
    pub fn password_policy(&self) -> PasswordPolicy {
        PasswordPolicy::new(self.auth.bcrypt_cost).with_min_chars(self.auth.password_min_length)
    }
}

impl From<u32> for PasswordPolicy {
    fn from(cost: u32) -> Self {
        PasswordPolicy::new(cost)
    }
}

/// Hashes a new password with bcrypt on a bcrypt thread, after checking it against the
/// policy (a bare cost means the default minimum length, see [`PasswordPolicy`]).
///
/// # Errors
///
/// 422 naming the `password` member for a password the policy refuses; see
/// [`hash_password_for`] to name another member.
pub async fn hash_password(
    password: String,
    policy: impl Into<PasswordPolicy>,
) -> Result<String, Error> {
    hash_password_for("password", password, policy).await
}

/// Like [`hash_password`], naming `field` in errors.
///
/// # Errors
///
/// 422 naming `field` for a password shorter than the policy's minimum or longer than 1024
/// bytes.
pub async fn hash_password_for(
    field: &str,
    password: String,
    policy: impl Into<PasswordPolicy>,
) -> Result<String, Error> {
    let policy = policy.into();
    policy.check(field, &password)?;
    hash_unchecked(password, policy.cost).await
}

/// Hashes a password that is already stored in another form (a rehash at a new cost): no
/// policy applies, the password was accepted when it was set.
pub(crate) async fn hash_unchecked(password: String, cost: u32) -> Result<String, Error> {
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

/// The bcrypt cost a stored hash was made at (`$2b$12$…`, also behind [`PREHASH_TAG`]);
/// `None` for anything else.
pub(crate) fn hash_cost(hash: &str) -> Option<u32> {
    let bcrypt = hash.strip_prefix(PREHASH_TAG).unwrap_or(hash);
    let mut parts = bcrypt.split('$');
    // "", "2b", "12", salt and digest
    if !parts.next()?.is_empty() || !parts.next()?.starts_with('2') {
        return None;
    }
    let cost = parts.next()?;
    if cost.len() != 2 {
        return None;
    }
    cost.parse().ok()
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

/// A hash at `cost` to verify against when there is none, made once per cost (on a bcrypt
/// thread: callers run inside [`bounded`]); so an unknown e-mail costs what a known one does
/// at the configured cost, also after `BCRYPT_COST` changed.
fn dummy_hash(cost: u32) -> &'static str {
    const COSTS: usize = yielding_bcrypt::MAX_COST as usize + 1;
    static DUMMIES: [OnceLock<String>; COSTS] = [const { OnceLock::new() }; COSTS];
    let cost = cost.clamp(yielding_bcrypt::MIN_COST, yielding_bcrypt::MAX_COST);
    DUMMIES[cost as usize].get_or_init(|| {
        yielding_bcrypt::hash(b"crudforge-dummy-password", cost).unwrap_or_default()
    })
}

/// Verifies `password` against `hash` on a bcrypt thread. With no hash (unknown user, no
/// password set) it verifies against a dummy hash made at `cost` (the configured cost, which
/// stored hashes reach as their users log in), so the answer takes the same time.
///
/// # Errors
///
/// The bcrypt job failed.
pub(crate) async fn verify_password(
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
            Err(Error::Validation { .. })
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

    #[actix_web::test]
    async fn the_policy_counts_characters_and_names_the_field() {
        let policy = PasswordPolicy::new(4);
        assert_eq!(policy.min_chars, DEFAULT_MIN_PASSWORD_CHARS);
        for short in ["", "x", "seven77"] {
            match hash_password_for("new_password", short.into(), policy).await {
                Err(Error::Validation { field, .. }) => {
                    assert_eq!(field.as_deref(), Some("new_password"));
                }
                other => panic!("{short:?} was not refused: {other:?}"),
            }
        }
        // Eight characters of a script that takes three bytes each: accepted. Seven are not,
        // although they take 21 bytes.
        assert!(policy.check("password", &"漢".repeat(8)).is_ok());
        assert!(policy.check("password", &"漢".repeat(7)).is_err());
        let strict = policy.with_min_chars(12);
        assert!(strict.check("password", "elevenchars").is_err());
        assert!(strict.check("password", "twelve chars").is_ok());
        assert_eq!(policy.with_min_chars(0).min_chars, 1);
        assert_eq!(policy.with_min_chars(500).min_chars, MAX_MIN_PASSWORD_CHARS);
        // A bare cost is the default policy at that cost.
        assert_eq!(PasswordPolicy::from(5), PasswordPolicy::new(5));
    }

    #[test]
    fn the_configuration_gives_the_policy() {
        let config = Config::default().with(|c| {
            c.auth.bcrypt_cost = 5;
            c.auth.password_min_length = 12;
        });
        let policy = config.password_policy();
        assert_eq!((policy.cost, policy.min_chars), (5, 12));
        assert_eq!(
            Config::default().password_policy().min_chars,
            DEFAULT_MIN_PASSWORD_CHARS
        );
    }

    #[actix_web::test]
    async fn stored_costs_are_read_and_dummies_follow_the_cost() {
        let h = hash_password("correct horse".into(), 5).await.unwrap();
        assert_eq!(hash_cost(&h), Some(5));
        let long = hash_password("長".repeat(64), 4).await.unwrap();
        assert!(long.starts_with(PREHASH_TAG));
        assert_eq!(hash_cost(&long), Some(4));
        assert_eq!(hash_cost(&::bcrypt::hash("x", 6).unwrap()), Some(6));
        for bad in [
            "",
            "plain",
            "$argon2id$v=19$m=1",
            "$2b$x$abc",
            "$2b$123$abc",
        ] {
            assert_eq!(hash_cost(bad), None, "{bad}");
        }
        // One dummy hash per cost, each at its own cost.
        let (d4, d5) = bounded(|| (dummy_hash(4).to_owned(), dummy_hash(5).to_owned()))
            .await
            .unwrap();
        assert_eq!(hash_cost(&d4), Some(4));
        assert_eq!(hash_cost(&d5), Some(5));
    }
}

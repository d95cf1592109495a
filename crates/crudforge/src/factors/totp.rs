//! TOTP (RFC 6238) through `totp-rs`: a new secret, sealed at rest under a key of its own use
//! with the factor's id bound in; the `otpauth://` URL an authenticator app scans; and a code
//! checked at the current step or one either side, giving the step it matched so that the
//! caller accepts each step once.

use crate::error::Error;
use totp_rs::{Algorithm, Builder, Totp};
use uuid::Uuid;

/// What the secrets' key is derived under (HKDF's `info`): no other key of the API uses it.
const LABEL: &[u8] = b"crudforge factor secret key v1";

/// Bytes of a new secret: 160 bits, as RFC 4226 recommends.
const SECRET_BYTES: usize = 20;

/// The associated data of factor `id`'s secret: a sealed secret opens only in its own row.
fn associated(id: Uuid) -> Vec<u8> {
    [b"crudforge-totp\0".as_slice(), id.as_bytes()].concat()
}

/// A new random secret.
pub(super) fn new_secret() -> Result<Vec<u8>, Error> {
    let mut secret = vec![0u8; SECRET_BYTES];
    getrandom::fill(&mut secret)
        .map_err(|e| Error::Internal(format!("no random bytes for a TOTP secret: {e}")))?;
    Ok(secret)
}

/// `secret` sealed for factor `id` with the API's signing key `key`.
pub(super) fn seal(key: &[u8], id: Uuid, secret: &[u8]) -> Result<String, Error> {
    crate::seal::seal(key, LABEL, &associated(id), secret)
}

/// The secret of factor `id` from its sealed text (an error if it does not open: the signing
/// key changed, or the row was edited).
pub(super) fn open(key: &[u8], id: Uuid, sealed: &str) -> Result<Vec<u8>, Error> {
    crate::seal::open(key, LABEL, &associated(id), sealed)?.ok_or_else(|| {
        Error::Internal(format!(
            "the secret of second factor {id} does not open with the signing key"
        ))
    })
}

/// The TOTP of `secret` (SHA-1, 6 digits, 30-second steps, one step of skew either side: what
/// every authenticator app reads), named for `account` at `issuer`.
pub(super) fn totp(secret: Vec<u8>, issuer: &str, account: &str) -> Result<Totp, Error> {
    Builder::new()
        .with_algorithm(Algorithm::SHA1)
        .with_digits(6)
        .with_skew(1)
        .with_step_duration(30)
        .with_secret(secret)
        .with_issuer(Some(issuer.replace(':', " ")))
        .with_account_name(account.replace(':', " "))
        .build()
        .map_err(|e| Error::Internal(format!("a TOTP cannot be built: {e}")))
}

/// The secret in base32, as typed into an authenticator app by hand.
pub(super) fn base32(totp: &Totp) -> String {
    totp.secret().to_base32()
}

/// The `otpauth://totp/...` URL of `totp` (shown as a QR code by the application's page).
pub(super) fn url(totp: &Totp) -> Result<String, Error> {
    totp.to_url()
        .map_err(|e| Error::Internal(format!("a TOTP URL cannot be made: {e}")))
}

/// The time step `code` matches at `now` (seconds since 1970), the current one or one either
/// side; `None` when it matches none or is not six digits.
pub(super) fn step_of(totp: &Totp, code: &str, now: u64) -> Option<u64> {
    let code = code.trim();
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    totp.check(code, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_matches_its_step_and_its_neighbours_only() {
        let t = totp(vec![7u8; 20], "Shop", "ann@example.com").unwrap();
        let now = 1_700_000_000_u64;
        let step = now / 30;
        let code = t.generate(now);
        let code = code.to_string();
        assert_eq!(step_of(&t, &code, now), Some(step));
        assert_eq!(step_of(&t, &code, now + 30), Some(step));
        assert_eq!(step_of(&t, &code, now - 30), Some(step));
        assert_eq!(step_of(&t, &code, now + 90), None);
        assert_eq!(step_of(&t, "12345", now), None);
        assert_eq!(step_of(&t, "12345a", now), None);
        assert_eq!(step_of(&t, "", now), None);
    }

    #[test]
    fn a_sealed_secret_opens_only_for_its_factor_and_key() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let key = [5u8; 32];
        let sealed = seal(&key, a, b"0123456789abcdefghij").unwrap();
        assert_eq!(open(&key, a, &sealed).unwrap(), b"0123456789abcdefghij");
        assert!(open(&key, b, &sealed).is_err());
        assert!(open(&[6u8; 32], a, &sealed).is_err());
    }

    #[test]
    fn the_url_names_the_issuer_and_account() {
        let t = totp(vec![7u8; 20], "My: Shop", "ann@example.com").unwrap();
        let url = url(&t).unwrap();
        assert!(url.starts_with("otpauth://totp/"), "{url}");
        assert!(url.contains(&format!("secret={}", base32(&t))), "{url}");
        assert!(url.contains("issuer=My"), "{url}");
    }
}

//! Recovery codes: ten random codes shown once when a first factor is confirmed (or when the
//! owner asks for new ones), each good for one sign-in in place of a code, stored as SHA-256
//! digests (they are random, so a digest is as good as a slow hash).

use crate::error::Error;

/// How many codes an account gets.
pub(super) const COUNT: usize = 10;

/// The letters of a code: lower-case, without `0`/`o`, `1`/`l`/`i`, easy to copy by hand.
const ALPHABET: &[u8] = b"23456789abcdefghjkmnpqrstuvwxyz";

/// Ten new codes, `xxxxx-xxxxx` (10 letters of 31: 49 bits each).
pub(super) fn new_codes() -> Result<Vec<String>, Error> {
    let mut raw = [0u8; COUNT * 10];
    let mut codes = Vec::with_capacity(COUNT);
    // Rejection sampling keeps every letter equally likely.
    let mut letters = Vec::with_capacity(COUNT * 10);
    while letters.len() < COUNT * 10 {
        getrandom::fill(&mut raw)
            .map_err(|e| Error::Internal(format!("no random bytes for recovery codes: {e}")))?;
        let limit = 256 - 256 % ALPHABET.len();
        letters.extend(
            raw.iter()
                .filter(|b| usize::from(**b) < limit)
                .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()]),
        );
    }
    for chunk in letters.chunks(10).take(COUNT) {
        let text = String::from_utf8_lossy(chunk);
        codes.push(format!("{}-{}", &text[..5], &text[5..]));
    }
    Ok(codes)
}

/// A code as typed, the way it is stored: lower case, without spaces or dashes.
pub(super) fn normalize(code: &str) -> String {
    code.chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_normalize_as_typed() {
        let codes = new_codes().unwrap();
        assert_eq!(codes.len(), COUNT);
        for c in &codes {
            assert_eq!(c.len(), 11);
            assert_eq!(&c[5..6], "-");
            assert!(normalize(c).bytes().all(|b| ALPHABET.contains(&b)));
        }
        let mut unique = codes.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), COUNT);
        assert_eq!(normalize(" ABCDE-fghjk "), "abcdefghjk");
    }
}

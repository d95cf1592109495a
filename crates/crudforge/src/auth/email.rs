//! E-mail identity: the one normalization of e-mail addresses that storage, uniqueness, lookup
//! and throttling keys share on both backends.
//!
//! SQL cannot be trusted with this: SQLite's `lower()` folds ASCII letters only and
//! PostgreSQL's depends on the database's collation. So addresses are normalized in Rust,
//! stored normalized (the unique index on `lower(email)` then compares normalized values, the
//! same on both backends) and looked up normalized.

use unicode_normalization::UnicodeNormalization;

/// The normalized form of an e-mail address, as it is stored and compared: Unicode NFC (a
/// letter typed precomposed or with a combining mark is one letter), then every character in
/// lowercase, one at a time (`JÖRG@Example.com` and `jörg@example.com` are one account on
/// both backends).
///
/// Nothing else changes: surrounding whitespace is not removed (an address with whitespace
/// is refused where accounts are created and matches no account at login), and the local
/// part is lowercased too, as the user system always compared it case-insensitively.
pub fn normalize_email(email: &str) -> String {
    let composed: String = email.nfc().collect();
    // Character by character (not `str::to_lowercase`, whose final-sigma rule depends on the
    // neighbours): the same letter always becomes the same lowercase letter.
    let lower: String = composed.chars().flat_map(char::to_lowercase).collect();
    lower.nfc().collect()
}

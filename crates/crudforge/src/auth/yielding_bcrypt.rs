//! bcrypt that offers its core to other threads every [`STEP`] of work, so that a login in
//! progress never holds a waiting request worker off a shared core for a whole time slice.
//!
//! A bcrypt verification is one long computation: 2^cost rounds of Blowfish's expensive key
//! schedule. Run in one piece on a core that a request worker shares, it keeps the core until
//! the scheduler's next tick whenever the worker cannot preempt it (the worker has just used
//! its share, or it was preempted by a thread it woke itself), which is up to 4 ms at 250 Hz:
//! a `/health` probe's p99 during logins grew several-fold that way. Here, at the end of the
//! first round that completes a [`STEP`] of work since the last offer (a round is about 46 µs
//! on the benchmark machine), the thread calls `sched_yield`: a worker waiting for the core is
//! due its share again after a few microseconds of bcrypt's work, so it runs then. With nothing
//! else to run the yield returns at once, so an idle machine hashes at bcrypt's own rate, and
//! under a full request load bcrypt keeps the share its priority gives it.
//!
//! Why not the `bcrypt` crate (measured 2026-11-25, [the benchmarks' journal](https://github.com/crudforge/crudforge/blob/main/benches/JOURNAL.md), "the `bcrypt` crate
//! under `SCHED_IDLE`, tried and not kept"): the crate hashes in one piece, and no scheduling
//! policy of the hashing threads gives the waiting worker its core back before the tick. With
//! the crate under `SCHED_IDLE`, `/health` p99 during a login storm was 4.4x its idle value
//! (2.6–3.2 ms), against 1.3–1.4x here, and under a full request load a login would take about
//! 90 s instead of 2.8 s. The crate stays the reference these hashes are tested against.
//!
//! The hash is standard bcrypt (`$2b$`, the Blowfish primitives of the `blowfish` crate):
//! hashes made here verify anywhere and hashes made elsewhere (`$2a$`, `$2b$`, `$2x$`, `$2y$`)
//! verify here.

use base64::alphabet::BCRYPT;
use base64::engine::general_purpose::NO_PAD;
use base64::engine::GeneralPurpose;
use base64::Engine as _;
use blowfish::Blowfish;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq as _;

/// The work done between two offers of the core: the core is offered at the end of the first
/// round that completes it.
pub(crate) const STEP: Duration = Duration::from_micros(50);

/// The lowest and the highest cost bcrypt defines; they bound `BCRYPT_COST`, so the
/// configuration declares them.
pub(crate) use crate::config::{MAX_BCRYPT_COST as MAX_COST, MIN_BCRYPT_COST as MIN_COST};

/// How many bytes of key bcrypt reads: the password and its terminating zero byte, cut here.
const KEY_BYTES: usize = 72;

/// bcrypt's own base64: its alphabet, no padding.
const CODEC: GeneralPurpose = GeneralPurpose::new(&BCRYPT, NO_PAD);

/// Why a hash could not be made or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BcryptError {
    /// The cost is outside [`MIN_COST`]..=[`MAX_COST`].
    #[error("bcrypt cost {0} is outside {MIN_COST}..={MAX_COST}")]
    Cost(u32),
    /// The stored hash is not a bcrypt hash.
    #[error("not a bcrypt hash")]
    Malformed,
    /// The operating system gave no random bytes for the salt.
    #[error("no random salt: {0}")]
    Salt(String),
}

/// Hashes `password` at `cost` with a fresh random salt, in `$2b$` form.
///
/// bcrypt reads at most 72 bytes of key (the password and a zero byte); callers pass longer
/// passwords through a digest first (see [`super::password`]).
///
/// # Errors
///
/// The cost is out of range, or no random salt could be drawn.
pub(crate) fn hash(password: &[u8], cost: u32) -> Result<String, BcryptError> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| BcryptError::Salt(e.to_string()))?;
    hash_with_salt(password, cost, salt)
}

/// Hashes `password` at `cost` with the given salt, in `$2b$` form.
///
/// # Errors
///
/// The cost is out of range.
pub(crate) fn hash_with_salt(
    password: &[u8],
    cost: u32,
    salt: [u8; 16],
) -> Result<String, BcryptError> {
    let digest = digest(password, cost, &salt)?;
    Ok(format!(
        "$2b${cost:02}${}{}",
        CODEC.encode(salt),
        CODEC.encode(&digest[..23])
    ))
}

/// Whether `password` is the one `hash` was made from, compared in constant time.
///
/// # Errors
///
/// `hash` is not a bcrypt hash of a cost in range.
pub(crate) fn verify(password: &[u8], hash: &str) -> Result<bool, BcryptError> {
    let stored = Stored::parse(hash)?;
    let digest = digest(password, stored.cost, &stored.salt)?;
    Ok(digest[..23].ct_eq(&stored.digest).into())
}

/// The parts of a stored hash: `$<version>$<cost>$<22 characters of salt><31 of digest>`.
struct Stored {
    cost: u32,
    salt: [u8; 16],
    digest: [u8; 23],
}

impl Stored {
    fn parse(hash: &str) -> Result<Self, BcryptError> {
        let mut parts = hash.split('$');
        let (Some(""), Some(version), Some(cost), Some(rest), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(BcryptError::Malformed);
        };
        if !matches!(version, "2a" | "2b" | "2x" | "2y")
            || cost.is_empty()
            || !cost.bytes().all(|b| b.is_ascii_digit())
            || rest.len() != 53
            || !rest.is_ascii()
        {
            return Err(BcryptError::Malformed);
        }
        let cost = cost.parse().map_err(|_| BcryptError::Malformed)?;
        let (salt, digest) = rest.split_at(22);
        Ok(Self {
            cost,
            salt: decode(salt)?,
            digest: decode(digest)?,
        })
    }
}

/// Decodes bcrypt base64 into exactly `N` bytes.
fn decode<const N: usize>(text: &str) -> Result<[u8; N], BcryptError> {
    let bytes = CODEC.decode(text).map_err(|_| BcryptError::Malformed)?;
    bytes.try_into().map_err(|_| BcryptError::Malformed)
}

/// The 24-byte bcrypt digest of `password` (cut to bcrypt's 72-byte key) under `salt`.
fn digest(password: &[u8], cost: u32, salt: &[u8; 16]) -> Result<[u8; 24], BcryptError> {
    if !(MIN_COST..=MAX_COST).contains(&cost) {
        return Err(BcryptError::Cost(cost));
    }
    let mut key = zeroize::Zeroizing::new(Vec::with_capacity(password.len() + 1));
    key.extend_from_slice(password);
    key.push(0);
    key.truncate(KEY_BYTES);
    let mut pacer = Pacer::new(Instant::now());
    let state = expensive_key_schedule(cost, salt, &key, || {
        if pacer.due(Instant::now()) {
            std::thread::yield_now();
        }
    });
    Ok(encrypt_magic(&state))
}

/// Blowfish's key schedule as bcrypt runs it: the salted expansion, then 2^cost rounds of
/// expansion by the key and by the salt, calling `between_rounds` after each round.
fn expensive_key_schedule(
    cost: u32,
    salt: &[u8; 16],
    key: &[u8],
    mut between_rounds: impl FnMut(),
) -> Blowfish {
    let mut state = Blowfish::bc_init_state();
    state.salted_expand_key(salt, key);
    for _ in 0..1u64 << cost {
        state.bc_expand_key(key);
        state.bc_expand_key(salt);
        between_rounds();
    }
    state
}

/// Encrypts the 24 bytes "OrpheanBeholderScryDoubt" 64 times with `state`.
fn encrypt_magic(state: &Blowfish) -> [u8; 24] {
    let mut words = [0u32; 6];
    for (word, chunk) in words
        .iter_mut()
        .zip(b"OrpheanBeholderScryDoubt".chunks_exact(4))
    {
        *word = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
    }
    for pair in words.chunks_exact_mut(2) {
        let mut block = [pair[0], pair[1]];
        for _ in 0..64 {
            block = state.bc_encrypt(block);
        }
        pair.copy_from_slice(&block);
    }
    let mut out = [0u8; 24];
    for (bytes, word) in out.chunks_exact_mut(4).zip(words) {
        bytes.copy_from_slice(&word.to_be_bytes());
    }
    out
}

/// Says when a [`STEP`] of work has passed since the last offer of the core.
struct Pacer {
    last: Instant,
}

impl Pacer {
    fn new(now: Instant) -> Self {
        Self { last: now }
    }

    /// Whether the core should be offered at `now`; if so, the next step starts at `now`.
    fn due(&mut self, now: Instant) -> bool {
        if now.saturating_duration_since(self.last) < STEP {
            return false;
        }
        self.last = now;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_equal_the_reference_implementation_for_the_same_salt() {
        let passwords: [&[u8]; 6] = [
            b"",
            b"correct horse",
            "pässwörd 漢字 😀".as_bytes(),
            &[b'x'; 71],
            &[b'y'; 72],
            &[b'z'; 100],
        ];
        for (i, password) in passwords.into_iter().enumerate() {
            let salt: [u8; 16] = std::array::from_fn(|j| (i * 37 + j * 11) as u8);
            for cost in [4, 5] {
                let ours = hash_with_salt(password, cost, salt).expect("hash");
                let reference = bcrypt::hash_with_salt(password, cost, salt)
                    .expect("reference hash")
                    .format_for_version(bcrypt::Version::TwoB);
                assert_eq!(ours, reference, "password #{i} at cost {cost}");
            }
        }
    }

    #[test]
    fn each_side_verifies_the_others_hashes() {
        let ours = hash(b"swordfish", 4).expect("hash");
        assert!(ours.starts_with("$2b$04$") && ours.len() == 60, "{ours}");
        assert!(bcrypt::verify("swordfish", &ours).expect("reference verify"));
        assert!(!bcrypt::verify("swordfisH", &ours).expect("reference verify"));

        for version in [
            bcrypt::Version::TwoA,
            bcrypt::Version::TwoB,
            bcrypt::Version::TwoX,
            bcrypt::Version::TwoY,
        ] {
            let theirs = bcrypt::hash_with_result("open sesame", 5)
                .expect("reference hash")
                .format_for_version(version);
            assert_eq!(verify(b"open sesame", &theirs), Ok(true), "{theirs}");
            assert_eq!(verify(b"open sesamE", &theirs), Ok(false), "{theirs}");
        }
    }

    #[test]
    fn a_published_vector_verifies() {
        // The empty password at cost 6 from the OpenBSD test set.
        let hash = "$2a$06$DCq7YPn5Rq63x1Lad4cll.TV4S6ytwfsfvkgY8jIucDrjc8deX1s.";
        assert_eq!(verify(b"", hash), Ok(true));
        assert_eq!(verify(b" ", hash), Ok(false));
    }

    #[test]
    fn two_hashes_of_one_password_differ_in_salt() {
        let a = hash(b"same", 4).expect("hash");
        let b = hash(b"same", 4).expect("hash");
        assert_ne!(a[7..29], b[7..29]);
        assert_eq!(verify(b"same", &a), Ok(true));
        assert_eq!(verify(b"same", &b), Ok(true));
    }

    #[test]
    fn malformed_hashes_and_costs_are_errors_not_panics() {
        let good = hash_with_salt(b"pw", 4, [7; 16]).expect("hash");
        assert_eq!(verify(b"pw", &good), Ok(true));
        let body = &good[7..];
        let cases = [
            String::new(),
            "$2b$04$".to_owned(),
            format!("$3b$04${body}"),
            format!("2b$04${body}"),
            format!("$2b$$04${body}"),
            format!("$2b$+4${body}"),
            format!("$2b$04${body}$"),
            format!("$2b$04${}", &body[1..]),
            format!("$2b$04${body}x"),
            format!("$2b$04$!{}", &body[1..]),
            format!("$2b$04$é{}", &body[2..]),
            format!("$2b$99999999999${body}"),
        ];
        for case in &cases {
            assert_eq!(verify(b"pw", case), Err(BcryptError::Malformed), "{case:?}");
        }
        assert_eq!(
            verify(b"pw", &format!("$2b$03${body}")),
            Err(BcryptError::Cost(3))
        );
        assert_eq!(
            verify(b"pw", &format!("$2b$32${body}")),
            Err(BcryptError::Cost(32))
        );
        assert_eq!(hash(b"pw", 3), Err(BcryptError::Cost(3)));
        assert_eq!(hash(b"pw", 32), Err(BcryptError::Cost(32)));
    }

    #[test]
    fn the_key_schedule_pauses_after_every_round() {
        let key = b"pw\0";
        let salt = [9u8; 16];
        let mut pauses = 0u32;
        let paused = expensive_key_schedule(5, &salt, key, || pauses += 1);
        assert_eq!(pauses, 32);
        // Pausing does not change the result.
        let unpaused = expensive_key_schedule(5, &salt, key, || {});
        assert_eq!(encrypt_magic(&paused), encrypt_magic(&unpaused));
    }

    #[test]
    fn the_core_is_offered_once_a_step_has_passed() {
        let start = Instant::now();
        let mut pacer = Pacer::new(start);
        assert!(!pacer.due(start));
        assert!(!pacer.due(start + STEP / 2));
        assert!(pacer.due(start + STEP));
        // The next step counts from the offer.
        assert!(!pacer.due(start + STEP + STEP / 2));
        assert!(pacer.due(start + STEP * 2));
        // A clock that seems to go back never offers early.
        assert!(!pacer.due(start));
    }
}

//! Places among the tasks of one kind an API runs at once (imports, thumbnail decodes): counted
//! per API and per holder (every task of the kind, or one user's), taken before the work and
//! given back when dropped.

use crate::state::ApiState;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

/// Whose count a place is taken in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Holder {
    /// Every task of the kind.
    All,
    /// One user's tasks (`None`: all anonymous callers together). Imports count them;
    /// thumbnail decodes do not.
    #[allow(
        dead_code,
        reason = "imports count by user; a build without them leaves it unused"
    )]
    User(Option<uuid::Uuid>),
}

/// An API (the address of its state), a kind of task, a holder.
type Key = (usize, &'static str, Holder);

/// The places taken, by key; a key leaves with its last place.
static TAKEN: LazyLock<Mutex<HashMap<Key, u32>>> = LazyLock::new(Mutex::default);

fn taken() -> MutexGuard<'static, HashMap<Key, u32>> {
    TAKEN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The API `st` belongs to, as the places count it: one entry per running API, so that the
/// APIs of one process (tests run many) keep counts of their own.
pub(crate) fn api_of(st: &ApiState) -> usize {
    std::ptr::from_ref(st) as usize
}

/// One place, given back when dropped.
#[derive(Debug)]
pub(crate) struct Place {
    key: Key,
}

impl Place {
    /// A place among the `max` of `kind` that `holder` may hold at once in API `api`, or
    /// `None` when all are taken.
    pub(crate) fn take(api: usize, kind: &'static str, holder: Holder, max: u32) -> Option<Place> {
        let key = (api, kind, holder);
        let mut taken = taken();
        let n = taken.get(&key).copied().unwrap_or(0);
        if n >= max {
            return None;
        }
        taken.insert(key, n + 1);
        Some(Place { key })
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut taken = taken();
        if let Some(n) = taken.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                taken.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_bounded_per_api_and_given_back() {
        let a = Place::take(1, "test", Holder::All, 1).unwrap();
        assert!(Place::take(1, "test", Holder::All, 1).is_none());
        // Another API has places of its own.
        let b = Place::take(2, "test", Holder::All, 1).unwrap();
        drop(a);
        let again = Place::take(1, "test", Holder::All, 1).unwrap();
        drop((again, b));
        assert!(!taken().keys().any(|k| k.0 == 1 && k.1 == "test"));
    }

    #[test]
    fn a_users_places_are_counted_apart() {
        let me = Holder::User(Some(uuid::Uuid::new_v4()));
        let other = Holder::User(Some(uuid::Uuid::new_v4()));
        let mine = Place::take(3, "test", me, 1).unwrap();
        assert!(Place::take(3, "test", me, 1).is_none());
        assert!(Place::take(3, "test", other, 1).is_some());
        assert!(Place::take(3, "test", Holder::User(None), 1).is_some());
        drop(mine);
        assert!(Place::take(3, "test", me, 1).is_some());
    }
}

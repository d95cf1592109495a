//! API keys limited to scopes: the grammar of a key's scopes, what a request addresses (a
//! resource and an action, labelled by the generated routes before their handler runs), and
//! the one check, made where the caller is authenticated, that an access token carrying a
//! scope ([`Claims::scope`](crate::jwt::Claims::scope)) may make the request at all.
//!
//! A scope is a list of entries separated by spaces:
//!
//! | Entry | Allows |
//! |---|---|
//! | `read` | every read (list, get, aggregates, export, the feed, downloads, `me/`) of every resource |
//! | `Critter` | every operation on the resource named `Critter` |
//! | `Critter:read`, `Critter:create`, `Critter:update`, `Critter:delete` | that operation on it |
//!
//! A resource is named as the description names it (its operation ids' suffix: `listCritter`).
//! Restores count as updates, batch forms as their operation, an import as a create, the feed,
//! export, aggregates and file downloads as reads. A scope only narrows: the access token is
//! still its owner's, and every rule of the owner applies after it. Routes that no generated
//! operation serves (hand-written routes, `me/password/`, `logout/`, the jobs' API) are closed
//! to a token with a scope, and so are writes of a resource that holds secrets (a `password`
//! member, or the Token records): a key limited to scopes never changes a password nor mints
//! another key.

use crate::error::Error;
use actix_web::{HttpMessage, HttpRequest};
use std::sync::Arc;

/// The most entries a scope may have.
pub(crate) const MAX_ENTRIES: usize = 32;

/// What a request does to a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// List, get, count, export, aggregate, follow the feed, download a file.
    Read,
    /// Create (one, a batch, an import).
    Create,
    /// Update (one, a batch, a restore, a file member's change).
    Update,
    /// Delete (one or a batch).
    Delete,
}

impl Action {
    const ALL: [Action; 4] = [Action::Read, Action::Create, Action::Update, Action::Delete];

    /// The action's name in the grammar.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Action::Read => "read",
            Action::Create => "create",
            Action::Update => "update",
            Action::Delete => "delete",
        }
    }

    fn parse(s: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|a| a.name() == s)
    }
}

/// What one request addresses: a resource (by name), the action, and whether the resource
/// holds secrets (a password member, or the Token records), which a key with a scope never
/// writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Target {
    /// The resource's name (`Critter`).
    pub(crate) resource: &'static str,
    /// What the request does to it.
    pub(crate) action: Action,
    /// The resource holds secrets.
    pub(crate) secret: bool,
}

/// One entry of a scope.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// `read`: every read of every resource.
    Read,
    /// `Critter`: every operation on one resource.
    Resource(String),
    /// `Critter:delete`: one operation on one resource.
    Op(String, Action),
}

impl Entry {
    fn parse(text: &str) -> Result<Entry, String> {
        if text == "read" {
            return Ok(Entry::Read);
        }
        let (name, action) = match text.split_once(':') {
            Some((name, op)) => {
                let action = Action::parse(op).ok_or_else(|| {
                    format!(
                        "`{text}`: the operation after `:` is one of read, create, update, delete"
                    )
                })?;
                (name, Some(action))
            }
            None => (text, None),
        };
        let well_formed = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !well_formed {
            return Err(format!(
                "`{text}` is not a scope: write `read`, a resource name (`Critter`), or a \
                 resource name and an operation (`Critter:read`)"
            ));
        }
        Ok(match action {
            Some(a) => Entry::Op(name.to_owned(), a),
            None => Entry::Resource(name.to_owned()),
        })
    }

    /// The resource the entry names (none for `read`).
    fn resource(&self) -> Option<&str> {
        match self {
            Entry::Read => None,
            Entry::Resource(r) | Entry::Op(r, _) => Some(r),
        }
    }

    fn text(&self) -> String {
        match self {
            Entry::Read => "read".to_owned(),
            Entry::Resource(r) => r.clone(),
            Entry::Op(r, a) => format!("{r}:{}", a.name()),
        }
    }

    fn allows(&self, t: &Target) -> bool {
        match self {
            Entry::Read => t.action == Action::Read,
            Entry::Resource(r) => r == t.resource,
            Entry::Op(r, a) => r == t.resource && *a == t.action,
        }
    }
}

/// A key's scope, parsed: the entries, at least one, no two alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyScope(Vec<Entry>);

impl KeyScope {
    /// Parses `text` (entries separated by white space), checking its syntax only; repeated
    /// entries count once.
    ///
    /// # Errors
    ///
    /// What is wrong, for a 422's detail.
    pub(crate) fn parse(text: &str) -> Result<KeyScope, String> {
        let mut entries: Vec<Entry> = Vec::new();
        for word in text.split_ascii_whitespace() {
            let entry = Entry::parse(word)?;
            if !entries.contains(&entry) {
                entries.push(entry);
            }
        }
        if entries.is_empty() {
            return Err(
                "a scope needs at least one entry; leave `scopes` out (null) for a key \
                 with its owner's full access"
                    .to_owned(),
            );
        }
        if entries.len() > MAX_ENTRIES {
            return Err(format!("at most {MAX_ENTRIES} entries"));
        }
        Ok(KeyScope(entries))
    }

    /// The scope as stored and carried in tokens: its entries, one space between them.
    pub(crate) fn text(&self) -> String {
        self.0.iter().map(Entry::text).collect::<Vec<_>>().join(" ")
    }

    /// Whether the scope allows the request that addresses `t`.
    pub(crate) fn allows(&self, t: &Target) -> bool {
        if t.secret && t.action != Action::Read {
            return false;
        }
        self.0.iter().any(|e| e.allows(t))
    }
}

/// The resources an API mounts, with whether each holds secrets: what a key's scope may name.
/// An application datum of every [`Api`](crate::Api).
#[derive(Debug, Default)]
pub(crate) struct Resources(Vec<(&'static str, bool)>);

impl Resources {
    /// The mounted resources' names and whether each holds secrets (a resource mounted twice
    /// counts once).
    pub(crate) fn new(mounted: impl IntoIterator<Item = (&'static str, bool)>) -> Resources {
        let mut out: Vec<(&'static str, bool)> = Vec::new();
        for (name, secret) in mounted {
            match out.iter_mut().find(|(n, _)| *n == name) {
                Some((_, s)) => *s |= secret,
                None => out.push((name, secret)),
            }
        }
        Resources(out)
    }

    /// Checks a scope given for a new key: its syntax, that every resource it names is
    /// mounted, and that it asks no write of a resource holding secrets. The scope as it is
    /// stored (entries once each, one space between them).
    ///
    /// # Errors
    ///
    /// 422 naming `field`.
    pub(crate) fn check(&self, field: &str, text: &str) -> Result<String, Error> {
        let scope = KeyScope::parse(text).map_err(|why| Error::invalid_field(field, why))?;
        for entry in &scope.0 {
            let Some(name) = entry.resource() else {
                continue;
            };
            let Some((_, secret)) = self.0.iter().find(|(n, _)| *n == name) else {
                let mut known: Vec<&str> = self.0.iter().map(|(n, _)| *n).collect();
                known.sort_unstable();
                return Err(Error::invalid_field(
                    field,
                    format!(
                        "`{}` names no resource of this API (known: {})",
                        entry.text(),
                        known.join(", ")
                    ),
                ));
            };
            let writes = !matches!(entry, Entry::Op(_, Action::Read));
            if *secret && writes {
                return Err(Error::invalid_field(
                    field,
                    format!(
                        "`{}`: a key limited to scopes never writes {name} (it holds passwords \
                         or keys); `{name}:read` is the scope it may have",
                        entry.text()
                    ),
                ));
            }
        }
        Ok(scope.text())
    }
}

/// The scope of the request's access token, once its caller is authenticated.
#[derive(Debug, Clone)]
struct Held(Arc<KeyScope>);

/// Labels `req` as addressing `target`. The generated routes do it before their handler, so
/// that the caller's authentication can judge a key's scope.
pub(crate) fn address(req: &HttpRequest, target: Target) {
    req.extensions_mut().insert(target);
}

/// The refusal of a request outside a key's scope (403).
fn outside(why: String) -> Error {
    Error::Forbidden(why.into())
}

/// Judges a request made with an access token whose scope is `scope` (the claim's text),
/// when its caller is authenticated: the request must address a target (a generated
/// operation) that the scope allows. Remembers the scope for the rest of the request
/// ([`may_read`]).
///
/// # Errors
///
/// 403 when the scope does not allow the request, or does not parse.
pub(crate) fn admit(req: &HttpRequest, scope: &str) -> Result<(), Error> {
    let Ok(scope) = KeyScope::parse(scope) else {
        return Err(outside(
            "This access token's scope cannot be read; exchange the key again.".to_owned(),
        ));
    };
    let target = req.extensions().get::<Target>().copied();
    req.extensions_mut().insert(Held(Arc::new(scope.clone())));
    let Some(t) = target else {
        return Err(outside(
            "This endpoint is not open to an API key limited to scopes.".to_owned(),
        ));
    };
    if scope.allows(&t) {
        return Ok(());
    }
    Err(outside(if t.secret && t.action != Action::Read {
        format!(
            "An API key limited to scopes never writes {} (it holds passwords or keys).",
            t.resource
        )
    } else {
        format!(
            "This API key's scope does not allow this request (it needs `{}:{}`).",
            t.resource,
            t.action.name()
        )
    }))
}

/// Whether the request's caller may read `resource` through another one (`expand`, filters
/// across relations): true unless its access token carries a scope that does not allow it.
pub(crate) fn may_read(req: &HttpRequest, resource: &'static str) -> bool {
    let held = req.extensions().get::<Held>().cloned();
    held.is_none_or(|Held(scope)| {
        scope.allows(&Target {
            resource,
            action: Action::Read,
            secret: false,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(resource: &'static str, action: Action) -> Target {
        Target {
            resource,
            action,
            secret: false,
        }
    }

    #[test]
    fn the_grammar() {
        let s = KeyScope::parse("  read Critter:delete  Visit read ").unwrap();
        assert_eq!(s.text(), "read Critter:delete Visit");
        for bad in [
            "",
            "   ",
            "Critter:write",
            "Critter:",
            ":read",
            "9lives",
            "a-b",
            "Critter:read:x",
            "café",
            "read\u{a0}Critter",
        ] {
            assert!(KeyScope::parse(bad).is_err(), "{bad:?}");
        }
        let many = (0..=MAX_ENTRIES)
            .map(|i| format!("R{i}"))
            .collect::<Vec<_>>();
        assert!(KeyScope::parse(&many.join(" ")).is_err());
        assert!(KeyScope::parse(&many[1..].join(" ")).is_ok());
    }

    #[test]
    fn what_each_entry_allows() {
        let s = KeyScope::parse("read Critter:delete Visit").unwrap();
        assert!(s.allows(&t("Habitat", Action::Read)));
        assert!(!s.allows(&t("Habitat", Action::Create)));
        assert!(s.allows(&t("Critter", Action::Delete)));
        assert!(!s.allows(&t("Critter", Action::Update)));
        for a in Action::ALL {
            assert!(s.allows(&t("Visit", a)));
        }
        let only = KeyScope::parse("Critter:read").unwrap();
        assert!(only.allows(&t("Critter", Action::Read)));
        assert!(!only.allows(&t("Visit", Action::Read)));
        // Resources that hold secrets: read at most.
        let secret = |action| Target {
            resource: "Token",
            action,
            secret: true,
        };
        let all = KeyScope::parse("Token read").unwrap();
        assert!(all.allows(&secret(Action::Read)));
        assert!(!all.allows(&secret(Action::Create)));
        assert!(!all.allows(&secret(Action::Update)));
    }

    #[test]
    fn scopes_are_checked_against_the_mounted_resources() {
        let r = Resources::new([("Critter", false), ("User", true), ("Critter", false)]);
        assert_eq!(
            r.check("scopes", "Critter:read read User:read").unwrap(),
            "Critter:read read User:read"
        );
        for (bad, says) in [
            ("Habitat", "names no resource"),
            ("critter:read", "names no resource"),
            ("User", "never writes User"),
            ("User:update", "never writes User"),
            ("Critter:write", "one of read"),
        ] {
            let e = r.check("scopes", bad).unwrap_err();
            let p = e.problem();
            assert_eq!(p.status, 422, "{bad}");
            assert!(e.to_string().contains(says), "{bad}: {e}");
        }
    }
}

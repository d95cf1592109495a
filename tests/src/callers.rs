//! The description's "Who may call" sentences read back as who is let in, so that a test can
//! hold each sentence to what the server answers: every operation of a description, with a
//! path whose parameters name nothing, probed as an anonymous caller, a user without roles and
//! an administrator.

use serde_json::Value;

/// Who a "Who may call" sentence admits to the operation at all, in the order anonymous, a
/// signed-in user without roles, a global administrator (none of whom passed a second factor);
/// `None` for a sentence in other words (a hand-written route's).
pub fn admitted_by(sentence: &str) -> Option<[bool; 3]> {
    if sentence.starts_with("anyone") {
        Some([true, true, true])
    } else if sentence.starts_with("any signed-in user") || sentence.starts_with("signed-in users")
    {
        Some([false, true, true])
    } else if sentence.starts_with("administrators") {
        Some([false, false, true])
    } else if sentence.starts_with("a signed-in user whose session passed a second factor") {
        // None of the three signed in with one.
        Some([false, false, false])
    } else {
        None
    }
}

/// An operation of a description to probe: its method (upper case), its path with every
/// parameter set to an id that names nothing, its sentence and whom it admits.
#[derive(Debug, Clone)]
pub struct Probe {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path, its parameters filled.
    pub url: String,
    /// The "Who may call" sentence.
    pub sentence: String,
    /// Whom it admits ([`admitted_by`]).
    pub admits: [bool; 3],
}

/// The operations of `spec` whose sentence says whom they admit, but those that end the
/// caller's sessions (logout, password) and event streams (which stay open).
pub fn probes(spec: &Value) -> Vec<Probe> {
    let mut out = Vec::new();
    let Some(paths) = spec["paths"].as_object() else {
        return out;
    };
    for (path, item) in paths {
        if path.contains("logout") || path.contains("password") {
            continue;
        }
        let url = path
            .split('/')
            .map(|seg| {
                if seg.starts_with('{') {
                    "6d6f6e65-7920-4f6e-8c65-000000000000"
                } else {
                    seg
                }
            })
            .collect::<Vec<_>>()
            .join("/");
        for (method, op) in item.as_object().into_iter().flatten() {
            if op["responses"]["200"]["content"]["text/event-stream"].is_object() {
                continue;
            }
            let text = op["description"].as_str().unwrap_or("");
            let Some(sentence) = text.split("Who may call: ").nth(1) else {
                continue;
            };
            let Some(admits) = admitted_by(sentence) else {
                continue;
            };
            out.push(Probe {
                method: method.to_uppercase(),
                url: url.clone(),
                sentence: sentence.to_owned(),
                admits,
            });
        }
    }
    out
}

/// Whether an answer's status refuses the caller (401, 403); any other status (200, 404 for
/// the id that names nothing, 4xx for the empty body) lets it in.
pub fn refused(status: u16) -> bool {
    matches!(status, 401 | 403)
}

/// The callers' names, in the order of [`admitted_by`].
pub const CALLERS: [&str; 3] = ["anonymous", "a user without roles", "an administrator"];

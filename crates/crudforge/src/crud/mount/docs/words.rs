//! Resource names as a person writes them in summaries: `UserRole` → `user role`, with its
//! article (`a user role`) or plural (`user roles`).

/// A resource name as words a person writes in a summary: `UserRole` → `user role`.
pub(crate) fn words(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_uppercase() && prev_lower {
            out.push(' ');
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        out.extend(c.to_lowercase());
    }
    out
}

/// A noun phrase with its indefinite article: `a user`, `an invite`.
pub(crate) fn article(noun: &str) -> String {
    // "a user", "a unit" (a consonant sound) but "an umbrella".
    let you_sound = ["use", "usu", "uni", "uti", "ura", "ure"]
        .iter()
        .any(|p| noun.starts_with(p));
    if noun.starts_with(['a', 'e', 'i', 'o']) || (noun.starts_with('u') && !you_sound) {
        format!("an {noun}")
    } else {
        format!("a {noun}")
    }
}

/// The plural of a noun phrase (its last word): `user role` → `user roles`, `entry` →
/// `entries`, `box` → `boxes`.
pub(crate) fn plural(noun: &str) -> String {
    let consonant_y =
        noun.ends_with('y') && !noun[..noun.len() - 1].ends_with(['a', 'e', 'i', 'o', 'u']);
    if consonant_y {
        format!("{}ies", &noun[..noun.len() - 1])
    } else if noun.ends_with(['s', 'x', 'z']) || noun.ends_with("ch") || noun.ends_with("sh") {
        format!("{noun}es")
    } else {
        format!("{noun}s")
    }
}

#[cfg(test)]
mod summary_tests {
    use super::{plural, words};

    #[test]
    fn summaries_read_as_written_by_a_person() {
        assert_eq!(plural(&words("User")), "users");
        assert_eq!(plural(&words("UserRole")), "user roles");
        assert_eq!(plural(&words("Entry")), "entries");
        assert_eq!(plural(&words("Key")), "keys");
        assert_eq!(plural(&words("Box")), "boxes");
        assert_eq!(words("Critter"), "critter");
        assert_eq!(super::article("invite"), "an invite");
        assert_eq!(super::article("user role"), "a user role");
    }
}

//! The field validators the derive's `Validate` impls call: each check returns what is wrong
//! with a value, and [`Invalid`] gathers the findings of every member into one 422.

use crate::error::{Error, Violation};
use schemars::gen::SchemaGenerator;
use schemars::schema::Schema;
use std::fmt::Display;
use std::sync::OnceLock;

/// What a check found wrong with a value.
pub type Found = Result<(), String>;

/// The members at fault found so far in one body.
#[derive(Debug, Default)]
pub struct Invalid {
    found: Vec<Violation>,
}

impl Invalid {
    /// Records the outcome of a built-in check of `field`.
    pub fn check(&mut self, field: &'static str, found: Found) {
        if let Err(detail) = found {
            self.found.push(Violation::new(field, detail));
        }
    }

    /// Records the outcome of an application's own check of `field` (`validate = path`).
    pub fn custom<E: Display>(&mut self, field: &'static str, found: Result<(), E>) {
        if let Err(e) = found {
            self.found.push(Violation::new(field, e.to_string()));
        }
    }

    /// `Ok` when nothing was found, else one 422 listing every member at fault.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] with the findings, in the order of the fields.
    pub fn finish(self) -> Result<(), Error> {
        if self.found.is_empty() {
            Ok(())
        } else {
            Err(Error::Invalid(self.found))
        }
    }
}

/// At most `max` characters.
///
/// # Errors
///
/// A longer string.
pub fn max_len(value: &str, max: usize) -> Found {
    if value.chars().count() > max {
        return Err(format!("at most {max} characters allowed"));
    }
    Ok(())
}

/// At least `min` characters.
///
/// # Errors
///
/// A shorter string.
pub fn min_len(value: &str, min: usize) -> Found {
    if value.chars().count() < min {
        return Err(if min == 1 {
            "must not be empty".to_owned()
        } else {
            format!("at least {min} characters required")
        });
    }
    Ok(())
}

/// Looks like an e-mail address (`local@domain.tld`, no spaces).
///
/// # Errors
///
/// Anything else.
pub fn email(value: &str) -> Found {
    let ok = value.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty()
            && domain.contains('.')
            && !domain.starts_with('.')
            && !domain.ends_with('.')
            && !value.chars().any(char::is_whitespace)
            && value.matches('@').count() == 1
    });
    if ok {
        Ok(())
    } else {
        Err("not a valid e-mail address".to_owned())
    }
}

/// At least `min`.
///
/// # Errors
///
/// A smaller value.
pub fn at_least<T: PartialOrd + Display>(value: T, min: T) -> Found {
    if value < min {
        return Err(format!("must be at least {min}"));
    }
    Ok(())
}

/// At most `max`.
///
/// # Errors
///
/// A larger value.
pub fn at_most<T: PartialOrd + Display>(value: T, max: T) -> Found {
    if value > max {
        return Err(format!("must be at most {max}"));
    }
    Ok(())
}

/// One of `allowed`.
///
/// # Errors
///
/// Any other value; the message lists the allowed ones.
pub fn one_of<T: PartialEq + std::fmt::Debug>(value: T, allowed: &[T]) -> Found {
    if allowed.contains(&value) {
        return Ok(());
    }
    let list = allowed
        .iter()
        .map(|v| format!("{v:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    Err(format!("must be one of {list}"))
}

/// A `pattern = ".."` of a field: compiled on first use, then kept (one per field, in a
/// `static` of the expansion).
#[derive(Debug)]
pub struct Pattern {
    source: &'static str,
    ecma: &'static str,
    compiled: OnceLock<Result<regex::Regex, String>>,
}

impl Pattern {
    /// The pattern written in the attribute (`source`, as the description publishes it and
    /// messages name it), and the same pattern as JSON Schema's readers (ECMA-262) read it,
    /// written for the `regex` crate (`ecma`: `\d` as `[0-9]` and so on), which is checked.
    /// The derive has checked that both parse.
    pub const fn new(source: &'static str, ecma: &'static str) -> Pattern {
        Pattern {
            source,
            ecma,
            compiled: OnceLock::new(),
        }
    }

    /// Whether `value` matches (anywhere in it, unless the pattern is anchored), as JSON
    /// Schema's `pattern` does.
    ///
    /// # Errors
    ///
    /// A value that does not match. A pattern the `regex` crate refuses (over its size limit)
    /// refuses every value, and says so in the message.
    pub fn check(&self, value: &str) -> Found {
        let re = self
            .compiled
            .get_or_init(|| regex::Regex::new(self.ecma).map_err(|e| e.to_string()));
        match re {
            Ok(re) if re.is_match(value) => Ok(()),
            Ok(_) => Err(format!("must match the pattern {}", self.source)),
            Err(e) => Err(format!(
                "cannot be checked: the pattern does not compile ({e})"
            )),
        }
    }
}

/// The schema of `T` with `enum` set to `values` (and `null` when the schema is nullable), for
/// a `one_of` field.
pub fn one_of_schema<T: schemars::JsonSchema>(
    generator: &mut SchemaGenerator,
    mut values: Vec<serde_json::Value>,
) -> Schema {
    let mut schema = generator.subschema_for::<T>();
    if let Schema::Object(o) = &mut schema {
        if o.extensions.get("nullable") == Some(&serde_json::Value::Bool(true)) {
            values.push(serde_json::Value::Null);
        }
        o.enum_values = Some(values);
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_count_characters_not_bytes() {
        assert!(max_len("ééé", 3).is_ok());
        assert_eq!(
            max_len("éééé", 3).unwrap_err(),
            "at most 3 characters allowed"
        );
        assert!(min_len("ab", 2).is_ok());
        assert_eq!(
            min_len("é", 2).unwrap_err(),
            "at least 2 characters required"
        );
        assert_eq!(min_len("", 1).unwrap_err(), "must not be empty");
    }

    #[test]
    fn bounds_are_inclusive() {
        assert!(at_least(0_i64, 0).is_ok());
        assert_eq!(at_least(-1_i64, 0).unwrap_err(), "must be at least 0");
        assert!(at_most(10.0_f64, 10.0).is_ok());
        assert_eq!(at_most(10.5_f64, 10.0).unwrap_err(), "must be at most 10");
    }

    #[test]
    fn one_of_lists_the_allowed_values() {
        assert!(one_of("cat", &["cat", "dog"]).is_ok());
        assert_eq!(
            one_of("cow", &["cat", "dog"]).unwrap_err(),
            r#"must be one of "cat", "dog""#
        );
        assert!(one_of(2_i64, &[1, 2]).is_ok());
        assert_eq!(one_of(3_i64, &[1, 2]).unwrap_err(), "must be one of 1, 2");
    }

    #[test]
    fn a_pattern_matches_anywhere_unless_anchored() {
        static LOOSE: Pattern = Pattern::new("[0-9]", "[0-9]");
        static ANCHORED: Pattern = Pattern::new("^[0-9]+$", "^[0-9]+$");
        assert!(LOOSE.check("ab3").is_ok());
        assert!(ANCHORED.check("123").is_ok());
        assert_eq!(
            ANCHORED.check("12a").unwrap_err(),
            "must match the pattern ^[0-9]+$"
        );
    }

    #[test]
    fn the_checked_form_is_the_ecma_one() {
        // What the derive writes for `^\d{4}\b`: ASCII digits and an ASCII word boundary.
        static YEAR: Pattern = Pattern::new(r"^\d{4}\b", r"^[0-9]{4}(?-u:\b)");
        assert!(YEAR.check("2024").is_ok());
        assert!(YEAR.check("2024 AD").is_ok());
        assert_eq!(
            YEAR.check("\u{664}\u{660}\u{662}\u{664}").unwrap_err(),
            r"must match the pattern ^\d{4}\b",
            "Arabic-Indic digits are not `\\d` in JSON Schema"
        );
    }

    #[test]
    fn every_finding_is_kept_in_field_order() {
        let mut invalid = Invalid::default();
        invalid.check("name", max_len("abcd", 3));
        invalid.check("species", Ok(()));
        invalid.custom("year", Err::<(), _>("not a year"));
        let Err(Error::Invalid(found)) = invalid.finish() else {
            panic!("expected Error::Invalid")
        };
        let fields: Vec<_> = found
            .iter()
            .map(|v| (v.pointer.as_str(), v.detail.as_str()))
            .collect();
        assert_eq!(
            fields,
            [
                ("/name", "at most 3 characters allowed"),
                ("/year", "not a year")
            ]
        );
        assert!(Invalid::default().finish().is_ok());
    }
}

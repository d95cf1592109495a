//! CSV cells: a member's JSON value written as a cell (formulas neutralized, as OWASP advises
//! for CSV injection) and a cell read back as the member's JSON value, by the member's kind.

use crate::field::{FieldInfo, Kind};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;

/// The first characters that make a spreadsheet read a cell as a formula (or, for tab and
/// carriage return, that some spreadsheets strip before doing so).
const FORMULA: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// Whether `text` would be read as a formula, or is a neutralized one: its first character,
/// after any leading `'`, is one of [`FORMULA`].
fn formula_like(text: &str) -> bool {
    text.trim_start_matches('\'')
        .chars()
        .next()
        .is_some_and(|c| FORMULA.contains(&c))
}

/// `text` as a cell a spreadsheet shows as text: prefixed with `'` when it starts with `=`,
/// `+`, `-`, `@`, a tab or a carriage return (and, so that [`unneutralize`] gives back exactly
/// what was written, when it is such a text already prefixed with `'`).
pub(crate) fn neutralize(text: &str) -> Cow<'_, str> {
    if formula_like(text) {
        Cow::Owned(format!("'{text}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// The text [`neutralize`] was given: one leading `'` removed from a neutralized formula.
pub(crate) fn unneutralize(text: &str) -> &str {
    match text.strip_prefix('\'') {
        Some(rest) if formula_like(rest) => rest,
        _ => text,
    }
}

/// Writes the cell of a member's rendered value (its raw JSON text) into `out` (cleared first):
/// text as it is (neutralized), numbers, `true` / `false`, nothing for null or an absent
/// member, and the JSON text of arrays, objects and of every value of a JSON member (`json`),
/// so that it reads back as it was.
///
/// # Errors
///
/// A string value that is not valid JSON text (a renderer's fault).
pub(crate) fn write(value: Option<&RawValue>, json: bool, out: &mut String) -> Result<(), String> {
    out.clear();
    let Some(raw) = value.map(RawValue::get) else {
        return Ok(());
    };
    if raw == "null" {
        return Ok(());
    }
    if json || !raw.starts_with('"') {
        // Numbers, booleans, arrays, objects and JSON members: their JSON text, as rendered.
        out.push_str(raw);
        return Ok(());
    }
    // A string: borrowed when it has no escapes.
    let text: Cow<'_, str> = match serde_json::from_str::<&str>(raw) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => Cow::Owned(serde_json::from_str::<String>(raw).map_err(|e| e.to_string())?),
    };
    out.push_str(&neutralize(&text));
    Ok(())
}

/// Whether a member's cells hold JSON text: JSON members (file members among them).
pub(crate) fn is_json(field: Option<&FieldInfo>) -> bool {
    field.is_some_and(|f| matches!(f.kind, Kind::Json) || f.file.is_some())
}

/// The member value of a cell, by the member's kind: `None` for an empty cell (the member is
/// absent from the row, as if not sent); integers, floats, booleans (`true`, `false`, `1`,
/// `0`), JSON text for JSON members, text otherwise (a neutralized formula given back).
///
/// # Errors
///
/// Why the cell is not a value of the member.
pub(crate) fn read(field: &FieldInfo, cell: &str) -> Result<Option<Value>, String> {
    if cell.is_empty() {
        return Ok(None);
    }
    if is_json(Some(field)) {
        return serde_json::from_str(cell)
            .map(Some)
            .map_err(|_| "is not valid JSON".to_owned());
    }
    let value = match field.kind {
        Kind::Integer => cell
            .trim()
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "is not an integer".to_owned())?,
        Kind::Float => cell
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| "is not a number".to_owned())?,
        Kind::Bool => match cell.trim() {
            t if t.eq_ignore_ascii_case("true") || t == "1" => Value::Bool(true),
            t if t.eq_ignore_ascii_case("false") || t == "0" => Value::Bool(false),
            _ => return Err("is not a boolean (true, false, 1 or 0)".to_owned()),
        },
        _ => Value::String(unneutralize(cell).to_owned()),
    };
    Ok(Some(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_are_neutralized_and_given_back_exactly() {
        for (text, cell) in [
            ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"),
            ("+1", "'+1"),
            ("-1", "'-1"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\tx", "'\tx"),
            ("\rx", "'\rx"),
            ("'=x", "''=x"),
            ("plain", "plain"),
            ("'quoted", "'quoted"),
            ("", ""),
        ] {
            assert_eq!(neutralize(text), cell, "{text:?}");
            assert_eq!(unneutralize(cell), text, "{cell:?}");
        }
    }

    #[test]
    fn cells_are_read_by_kind() {
        let int = FieldInfo::new("n", Kind::Integer);
        assert_eq!(read(&int, "42"), Ok(Some(Value::from(42))));
        assert!(read(&int, "4x").is_err());
        assert_eq!(read(&int, ""), Ok(None));
        let b = FieldInfo::new("b", Kind::Bool);
        assert_eq!(read(&b, "1"), Ok(Some(Value::Bool(true))));
        assert_eq!(read(&b, "FALSE"), Ok(Some(Value::Bool(false))));
        assert!(read(&b, "yes").is_err());
        let f = FieldInfo::new("f", Kind::Float);
        assert_eq!(read(&f, "1.5"), Ok(Some(Value::from(1.5))));
        assert!(read(&f, "NaN").is_err());
        let j = FieldInfo::new("j", Kind::Json);
        assert_eq!(read(&j, "[1,2]"), Ok(Some(serde_json::json!([1, 2]))));
        assert!(read(&j, "[1,").is_err());
        let t = FieldInfo::new("t", Kind::Text);
        assert_eq!(read(&t, "'=1"), Ok(Some(Value::from("=1"))));
    }

    #[test]
    fn cells_are_written_from_rendered_values() {
        let cell = |raw: &str, json: bool| {
            let raw = RawValue::from_string(raw.to_owned()).unwrap();
            let mut out = String::from("left over");
            write(Some(&raw), json, &mut out).unwrap();
            out
        };
        assert_eq!(cell(r#""=1""#, false), "'=1");
        assert_eq!(cell(r#""=1""#, true), r#""=1""#);
        assert_eq!(cell(r#""a \"b\"\nc""#, false), "a \"b\"\nc");
        assert_eq!(cell(r#""\u003dx""#, false), "'=x");
        assert_eq!(cell("null", false), "");
        assert_eq!(cell("-3", false), "-3");
        assert_eq!(cell("1.5e300", false), "1.5e300");
        assert_eq!(cell("true", false), "true");
        assert_eq!(cell(r#"[1,"a"]"#, false), r#"[1,"a"]"#);
        let mut out = String::from("left over");
        write(None, false, &mut out).unwrap();
        assert_eq!(out, "");
    }
}

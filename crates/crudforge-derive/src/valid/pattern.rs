//! A field's `pattern`, read the way the OpenAPI description's readers read it: JSON Schema's
//! `pattern` is an ECMA-262 regular expression, where `\d` is `[0-9]`, `\w` is
//! `[0-9A-Za-z_]` and `\b` a boundary of those, while the `regex` crate reads the same escapes
//! as Unicode classes (`\d` would accept Arabic-Indic digits). The server checks the
//! pattern's ECMA meaning, written out for the `regex` crate here; Unicode property classes
//! (`\p{..}`), which ECMA-262 reads as a plain `p` without its `u` flag, are refused.

use super::first_line;
use regex_syntax::ast::{
    self, Assertion, AssertionKind, Ast, ClassPerl, ClassPerlKind, ClassSetItem, Span,
};

/// ECMA-262's white space and line terminators (`\s`), as a `regex` class body.
const ECMA_SPACE: &str = r"\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";

/// `source` with its Perl classes and word boundaries written out as ECMA-262 reads them, for
/// the `regex` crate.
///
/// # Errors
///
/// What to write instead: the pattern does not parse, or uses what ECMA-262 reads otherwise
/// and cannot be written out (a Unicode property class).
pub(crate) fn ecma(source: &str) -> Result<String, String> {
    let parsed = ast::parse::Parser::new().parse(source).map_err(|e| {
        format!(
            "this regular expression does not compile: {}",
            first_line(&e.to_string())
        )
    })?;
    let edits = ast::visit(&parsed, Edits::default())?;
    let mut out = source.to_owned();
    // Back to front, so that earlier offsets stay right.
    for (span, text) in edits.0.into_iter().rev() {
        out.replace_range(span.start.offset..span.end.offset, &text);
    }
    Ok(out)
}

/// The replacements, in the order the visitor meets them (left to right, not overlapping).
#[derive(Default)]
struct Edits(Vec<(Span, String)>);

impl Edits {
    fn perl(&mut self, class: &ClassPerl) {
        let body = match class.kind {
            ClassPerlKind::Digit => "0-9",
            ClassPerlKind::Word => "0-9A-Za-z_",
            ClassPerlKind::Space => ECMA_SPACE,
        };
        let not = if class.negated { "^" } else { "" };
        // A bracketed class stands alone and, nested, inside another bracketed class.
        self.0.push((class.span, format!("[{not}{body}]")));
    }

    fn assertion(&mut self, a: &Assertion) {
        let text = match a.kind {
            AssertionKind::WordBoundary => r"(?-u:\b)",
            AssertionKind::NotWordBoundary => r"(?-u:\B)",
            _ => return,
        };
        self.0.push((a.span, text.to_owned()));
    }
}

const UNICODE_CLASS: &str = "`\\p{..}` and `\\P{..}` are Unicode classes here but a plain `p` in JSON Schema's `pattern` (ECMA-262)\nhelp: list the characters in a class instead, e.g. `[a-zA-Zà-ÿ]`";

impl ast::Visitor for Edits {
    type Output = Edits;
    type Err = String;

    fn finish(self) -> Result<Edits, String> {
        Ok(self)
    }

    fn visit_pre(&mut self, node: &Ast) -> Result<(), String> {
        match node {
            Ast::ClassPerl(class) => self.perl(class),
            Ast::Assertion(a) => self.assertion(a),
            Ast::ClassUnicode(_) => return Err(UNICODE_CLASS.to_owned()),
            _ => {}
        }
        Ok(())
    }

    fn visit_class_set_item_pre(&mut self, item: &ClassSetItem) -> Result<(), String> {
        match item {
            ClassSetItem::Perl(class) => self.perl(class),
            ClassSetItem::Unicode(_) => return Err(UNICODE_CLASS.to_owned()),
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn perl_classes_and_boundaries_are_written_out() {
        assert_eq!(ecma(r"^\d{4}$").unwrap(), "^[0-9]{4}$");
        assert_eq!(ecma(r"\w+\D").unwrap(), "[0-9A-Za-z_]+[^0-9]");
        assert_eq!(ecma(r"[\d_-]").unwrap(), "[[0-9]_-]");
        assert_eq!(ecma(r"[^\W]").unwrap(), "[^[^0-9A-Za-z_]]");
        assert_eq!(ecma(r"\bx\B").unwrap(), r"(?-u:\b)x(?-u:\B)");
        assert_eq!(ecma(r"a\s").unwrap(), format!("a[{ECMA_SPACE}]"));
        // Escaped backslashes and other escapes are left as they are.
        assert_eq!(ecma(r"\\d\.[a-z]").unwrap(), r"\\d\.[a-z]");
        assert_eq!(ecma("é+").unwrap(), "é+");
    }

    #[test]
    fn unicode_classes_and_bad_syntax_are_refused() {
        assert!(ecma(r"\p{L}").unwrap_err().contains("ECMA-262"));
        assert!(ecma(r"[\pN]").unwrap_err().contains("ECMA-262"));
        assert!(ecma("(")
            .unwrap_err()
            .starts_with("this regular expression does not compile"));
    }
}

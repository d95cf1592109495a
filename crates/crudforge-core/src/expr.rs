//! The lexer of `filter` expressions and permission rules (`published = true or organizer_id =
//! @me`), and the outline of a rule that the derive checks at compile time: the expression
//! parses, its `@` names are known, and the paths its comparisons start with.
//!
//! The runtime parses the tokens into typed conditions against a resource's fields
//! (`crud::filter_expr`); the outline here knows no fields, only the grammar.

/// One token of an expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// A name or keyword; dotted names (`event.organizer_id`) are one token.
    Ident(String),
    /// A caller value (`@me`), without its `@`.
    Caller(String),
    /// A quoted string, its doubled quotes undone.
    Str(String),
    /// A number as written.
    Num(String),
    /// `(`.
    LParen,
    /// `)`.
    RParen,
    /// `,`.
    Comma,
    /// A comparison operator (`=`, `!=`, `<`, `<=`, `>`, `>=`; `<>` is read as `!=`).
    Cmp(&'static str),
    /// The end of the expression.
    End,
}

impl Tok {
    /// The token as error messages name it.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Caller(s) => format!("`@{s}`"),
            Tok::Str(_) => "a quoted string".to_owned(),
            Tok::Num(n) => format!("the number {n}"),
            Tok::LParen => "`(`".to_owned(),
            Tok::RParen => "`)`".to_owned(),
            Tok::Comma => "`,`".to_owned(),
            Tok::Cmp(c) => format!("`{c}`"),
            Tok::End => "the end of the expression".to_owned(),
        }
    }

    /// Whether the token is the word `w` (any case).
    pub fn is_word(&self, w: &str) -> bool {
        matches!(self, Tok::Ident(s) if s.eq_ignore_ascii_case(w))
    }
}

/// A token and the 1-based character position where it starts.
pub type Spanned = (Tok, usize);

/// An error at a 1-based character position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExprError {
    /// Where (1-based, in characters).
    pub pos: usize,
    /// What was expected.
    pub message: String,
}

fn error(pos: usize, msg: impl std::fmt::Display) -> ExprError {
    ExprError {
        pos,
        message: msg.to_string(),
    }
}

/// The caller values a rule may name, as written after `@`, and what each one is.
pub const CALLER_VALUES: &[(&str, &str)] = &[
    ("me", "the caller's id: `owner_id = @me`"),
    (
        "domains",
        "the domains the caller holds a role in: `domain_id in @domains`; those in which they \
         hold one of these roles: `domain_id in @domains('EDITOR')` (every domain for a role \
         granted without one)",
    ),
    (
        "role",
        "a role the caller holds: `@role = 'EDITOR'`, `@role in ('EDITOR', 'OWNER')`",
    ),
    ("admin", "whether the caller is a global administrator"),
    ("signed_in", "whether the caller is signed in"),
    (
        "second_factor",
        "whether the caller's session passed a second factor (a TOTP code or a recovery code): \
         `@admin and @second_factor`",
    ),
    (
        "new.<member>",
        "in a member rule, the value the write sends for a member (its stored value when the \
         write leaves it out): `@new.state = 'accepted'`, `amount_cents >= @new.amount_cents`",
    ),
];

/// Whether `name` (after `@`) is a known caller value.
pub fn is_caller_value(name: &str) -> bool {
    new_member(name).is_some() || CALLER_VALUES.iter().any(|(n, _)| *n == name)
}

/// The member `name` (after `@`) names when it is `new.<member>`: the value a write sends.
pub fn new_member(name: &str) -> Option<&str> {
    name.strip_prefix("new.")
        .filter(|m| !m.is_empty() && !m.contains('.'))
}

/// The caller values, as help lines list them (`@me, @domains, ...`).
pub fn caller_values_list() -> String {
    CALLER_VALUES
        .iter()
        .map(|(n, _)| format!("@{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The tokens of an expression as a parser reads them, front to back. The lexer ends the list
/// with [`Tok::End`], and reading never moves past it, so a parser may peek at any time.
#[derive(Debug, Clone)]
pub struct Tokens {
    toks: Vec<Spanned>,
    at: usize,
}

impl Tokens {
    /// The tokens of `src`, ready to read from the first.
    ///
    /// # Errors
    ///
    /// As [`lex`].
    pub fn new(src: &str) -> Result<Tokens, ExprError> {
        Ok(Tokens {
            toks: lex(src)?,
            at: 0,
        })
    }

    /// The token to be read next (the final [`Tok::End`] once all are read).
    pub fn peek(&self) -> &Spanned {
        &self.toks[self.at.min(self.toks.len().saturating_sub(1))]
    }

    /// Reads the next token.
    pub fn advance(&mut self) -> Spanned {
        let t = self.peek().clone();
        if self.at + 1 < self.toks.len() {
            self.at += 1;
        }
        t
    }
}

/// The tokens of an expression, each with its position (1-based, in characters), ending with
/// [`Tok::End`].
///
/// # Errors
///
/// A character no token starts with, an unclosed string, a lone `@`.
pub fn lex(src: &str) -> Result<Vec<Spanned>, ExprError> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let pos = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let (tok, next) = if let Some(found) = punctuation(&chars, i) {
            found
        } else if c == '\'' {
            quoted(&chars, i)?
        } else if starts_number(&chars, i) {
            number(&chars, i)
        } else if c.is_alphabetic() || c == '_' {
            word(&chars, i)
        } else if c == '@' && chars.get(i + 1).is_some_and(|d| d.is_alphabetic()) {
            let (Tok::Ident(name), next) = word(&chars, i + 1) else {
                unreachable!("`word` makes identifiers")
            };
            (Tok::Caller(name), next)
        } else {
            return Err(error(
                pos,
                format!(
                    "expected a field name, a value, an operator or a parenthesis, found {c:?}"
                ),
            ));
        };
        out.push((tok, pos));
        i = next;
    }
    out.push((Tok::End, chars.len() + 1));
    Ok(out)
}

/// A parenthesis, a comma or a comparison operator at `i`, and where the next token starts.
fn punctuation(chars: &[char], i: usize) -> Option<(Tok, usize)> {
    let next = chars.get(i + 1).copied();
    let (tok, len) = match (chars[i], next) {
        ('(', _) => (Tok::LParen, 1),
        (')', _) => (Tok::RParen, 1),
        (',', _) => (Tok::Comma, 1),
        ('=', _) => (Tok::Cmp("="), 1),
        ('!', Some('=')) | ('<', Some('>')) => (Tok::Cmp("!="), 2),
        ('<', Some('=')) => (Tok::Cmp("<="), 2),
        ('>', Some('=')) => (Tok::Cmp(">="), 2),
        ('<', _) => (Tok::Cmp("<"), 1),
        ('>', _) => (Tok::Cmp(">"), 1),
        _ => return None,
    };
    Some((tok, i + len))
}

/// The string quoted from `i` (a quote is written twice inside), and where the next token
/// starts.
fn quoted(chars: &[char], start: usize) -> Result<(Tok, usize), ExprError> {
    let mut s = String::new();
    let mut i = start + 1;
    loop {
        match chars.get(i) {
            None => {
                return Err(error(
                    start + 1,
                    "expected a closing quote `'` for the string that starts here",
                ))
            }
            Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                s.push('\'');
                i += 2;
            }
            Some('\'') => return Ok((Tok::Str(s), i + 1)),
            Some(ch) => {
                s.push(*ch);
                i += 1;
            }
        }
    }
}

/// Whether a number starts at `i`: a digit, or a sign or a point before one.
fn starts_number(chars: &[char], i: usize) -> bool {
    let c = chars[i];
    c.is_ascii_digit()
        || ((c == '-' || c == '.') && chars.get(i + 1).is_some_and(char::is_ascii_digit))
}

/// The number from `start` (its exponent's sign included), and where the next token starts;
/// whether it is a valid number is for the field's kind to say.
fn number(chars: &[char], start: usize) -> (Tok, usize) {
    let mut i = start + 1;
    while let Some(&d) = chars.get(i) {
        let exp_sign = (d == '+' || d == '-') && matches!(chars.get(i - 1), Some('e' | 'E'));
        if d.is_ascii_alphanumeric() || d == '.' || exp_sign {
            i += 1;
        } else {
            break;
        }
    }
    (Tok::Num(chars[start..i].iter().collect()), i)
}

/// The word from `start` (a field name, a keyword, or a path across relations: a dot followed
/// by a letter joins them, as in `habitat.name` or `critter.habitat.keeper_id`), and where the
/// next token starts.
fn word(chars: &[char], start: usize) -> (Tok, usize) {
    let mut i = start;
    while chars.get(i).is_some_and(|d| {
        d.is_alphanumeric()
            || *d == '_'
            || (*d == '.' && chars.get(i + 1).is_some_and(|n| n.is_alphabetic()))
    }) {
        i += 1;
    }
    (Tok::Ident(chars[start..i].iter().collect()), i)
}

/// The words that are not field names.
pub fn is_keyword(w: &str) -> bool {
    [
        "and", "or", "not", "like", "ilike", "in", "is", "null", "true", "false",
    ]
    .iter()
    .any(|k| k.eq_ignore_ascii_case(w))
}

/// What a rule names, for the derive's checks: each path a comparison starts with and each
/// caller value, with their positions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outline {
    /// The paths (`organizer_id`, `event.organizer_id`) and their positions.
    pub paths: Vec<(String, usize)>,
    /// The caller values (`me`), without `@`, and their positions.
    pub callers: Vec<(String, usize)>,
    /// The members whose sent values the rule reads (`@new.state`: `state`), and their
    /// positions.
    pub sent: Vec<(String, usize)>,
}

/// The outline of a rule: checks the grammar (not the fields, which the caller knows) and
/// gathers what the rule names. Nesting deeper than `max_depth` is refused.
///
/// # Errors
///
/// Where the rule stops parsing, and what was expected there.
pub fn outline(src: &str, max_depth: usize) -> Result<Outline, ExprError> {
    let mut p = Outliner {
        toks: Tokens::new(src)?,
        out: Outline::default(),
        max_depth,
    };
    if p.peek().0 == Tok::End {
        return Err(error(1, "expected a condition, found an empty expression"));
    }
    p.or(0)?;
    let (t, pos) = p.peek().clone();
    if t != Tok::End {
        return Err(error(
            pos,
            format!(
                "expected `and`, `or` or the end of the expression, found {}",
                t.describe()
            ),
        ));
    }
    Ok(p.out)
}

struct Outliner {
    toks: Tokens,
    out: Outline,
    max_depth: usize,
}

impl Outliner {
    fn peek(&self) -> &Spanned {
        self.toks.peek()
    }

    fn next(&mut self) -> Spanned {
        self.toks.advance()
    }

    fn or(&mut self, depth: usize) -> Result<(), ExprError> {
        self.and(depth)?;
        while self.peek().0.is_word("or") {
            self.next();
            self.and(depth)?;
        }
        Ok(())
    }

    fn and(&mut self, depth: usize) -> Result<(), ExprError> {
        self.not(depth)?;
        while self.peek().0.is_word("and") {
            self.next();
            self.not(depth)?;
        }
        Ok(())
    }

    fn not(&mut self, depth: usize) -> Result<(), ExprError> {
        let (t, pos) = self.peek().clone();
        if t.is_word("not") || t == Tok::LParen {
            if depth >= self.max_depth {
                return Err(error(
                    pos,
                    format!(
                        "the expression nests deeper than {} levels of parentheses and `not`",
                        self.max_depth
                    ),
                ));
            }
            self.next();
            if t == Tok::LParen {
                self.or(depth + 1)?;
                let (t, pos) = self.next();
                if t != Tok::RParen {
                    return Err(error(
                        pos,
                        format!("expected `)`, `and` or `or`, found {}", t.describe()),
                    ));
                }
                return Ok(());
            }
            return self.not(depth + 1);
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<(), ExprError> {
        let (t, pos) = self.next();
        match t {
            Tok::Ident(w) if w.eq_ignore_ascii_case("true") || w.eq_ignore_ascii_case("false") => {
                Ok(())
            }
            Tok::Caller(name) => {
                self.caller(&name, pos)?;
                match name.as_str() {
                    "admin" | "signed_in" => Ok(()),
                    "role" => self.role(),
                    n if new_member(n).is_some() => self.comparison(),
                    _ => Err(error(
                        pos,
                        format!("`@{name}` is a value: compare a field with it (`owner_id = @me`)"),
                    )),
                }
            }
            Tok::Ident(path) if !is_keyword(&path) => {
                self.out.paths.push((path, pos));
                self.comparison()
            }
            other => Err(error(
                pos,
                format!(
                    "expected a field name, `not` or `(`, found {}",
                    other.describe()
                ),
            )),
        }
    }

    fn caller(&mut self, name: &str, pos: usize) -> Result<(), ExprError> {
        if !is_caller_value(name) {
            return Err(error(
                pos,
                format!(
                    "`@{name}` is not a caller value; known ones: {}",
                    caller_values_list()
                ),
            ));
        }
        match new_member(name) {
            Some(member) => self.out.sent.push((member.to_owned(), pos)),
            None => self.out.callers.push((name.to_owned(), pos)),
        }
        Ok(())
    }

    /// The rest of `@role = 'X'`, `@role != 'X'` or `@role in ('X', 'Y')`.
    fn role(&mut self) -> Result<(), ExprError> {
        let (t, pos) = self.next();
        match t {
            Tok::Cmp("=" | "!=") => self.string(),
            t if t.is_word("in") => self.list(true),
            t => Err(error(
                pos,
                format!(
                    "expected `=`, `!=` or `in` after `@role`, found {}",
                    t.describe()
                ),
            )),
        }
    }

    fn string(&mut self) -> Result<(), ExprError> {
        let (t, pos) = self.next();
        match t {
            Tok::Str(_) => Ok(()),
            t => Err(error(
                pos,
                format!("expected a quoted role name, found {}", t.describe()),
            )),
        }
    }

    fn comparison(&mut self) -> Result<(), ExprError> {
        let (t, pos) = self.next();
        match t {
            Tok::Cmp(_) => self.value(),
            t if t.is_word("is") => {
                if self.peek().0.is_word("not") {
                    self.next();
                }
                let (t, pos) = self.next();
                if t.is_word("null") {
                    Ok(())
                } else {
                    Err(error(
                        pos,
                        format!(
                            "expected `null` or `not null` after `is`, found {}",
                            t.describe()
                        ),
                    ))
                }
            }
            t if t.is_word("in") => {
                if let (Tok::Caller(name), pos) = self.peek().clone() {
                    self.next();
                    self.caller(&name, pos)?;
                    // `@domains('EDITOR', ...)`: the domains of these roles.
                    if name == "domains" && self.peek().0 == Tok::LParen {
                        return self.list(true);
                    }
                    return Ok(());
                }
                self.list(false)
            }
            t if t.is_word("like") || t.is_word("ilike") => self.value(),
            t => Err(error(
                pos,
                format!(
                    "expected an operator after the field, found {}",
                    t.describe()
                ),
            )),
        }
    }

    fn list(&mut self, strings: bool) -> Result<(), ExprError> {
        let (t, pos) = self.next();
        if t != Tok::LParen {
            return Err(error(
                pos,
                format!("expected `(` after `in`, found {}", t.describe()),
            ));
        }
        loop {
            if strings {
                self.string()?;
            } else {
                self.value()?;
            }
            let (t, pos) = self.next();
            match t {
                Tok::Comma => {}
                Tok::RParen => return Ok(()),
                t => {
                    return Err(error(
                        pos,
                        format!("expected `,` or `)` in the list, found {}", t.describe()),
                    ))
                }
            }
        }
    }

    fn value(&mut self) -> Result<(), ExprError> {
        let (t, pos) = self.next();
        match t {
            Tok::Str(_) | Tok::Num(_) => Ok(()),
            Tok::Caller(name) => self.caller(&name, pos),
            Tok::Ident(w)
                if ["true", "false", "now", "today"]
                    .iter()
                    .any(|k| w.eq_ignore_ascii_case(k)) =>
            {
                Ok(())
            }
            t => Err(error(
                pos,
                format!("expected a value, found {}", t.describe()),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexes_callers_and_paths() {
        let toks = lex("critter.habitat.keeper_id = @me").unwrap();
        assert_eq!(toks[0].0, Tok::Ident("critter.habitat.keeper_id".into()));
        assert_eq!(toks[2].0, Tok::Caller("me".into()));
        assert!(lex("a = @").is_err());
    }

    #[test]
    fn outlines_rules() {
        let o = outline(
            "published = true or (organizer_id = @me and not @admin) or @role in ('A', 'B')",
            16,
        )
        .unwrap();
        assert_eq!(
            o.paths.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
            ["published", "organizer_id"]
        );
        assert_eq!(o.callers.len(), 3);
        assert!(outline("domain_id in @domains and event.start > now", 16).is_ok());
        let o = outline("domain_id in @domains('EDITOR', 'OWNER') and seat > 1", 16).unwrap();
        assert_eq!(o.callers, [("domains".to_owned(), 14)]);
        assert_eq!(
            o.paths.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
            ["domain_id", "seat"]
        );
        for (src, want) in [
            ("owner_id = @you", "`@you` is not a caller value"),
            ("@me = owner_id", "`@me` is a value"),
            ("owner_id =", "expected a value"),
            ("(a = 1", "expected `)`"),
            ("@role > 'A'", "after `@role`"),
            ("", "empty expression"),
            ("domain_id in @domains()", "expected a quoted role name"),
            (
                "domain_id in @domains(EDITOR)",
                "expected a quoted role name",
            ),
            ("domain_id in @domains('A' 'B')", "expected `,` or `)`"),
            ("domain_id in @domains('A'", "expected `,` or `)`"),
        ] {
            let e = outline(src, 16).unwrap_err();
            assert!(e.message.contains(want), "{src}: {}", e.message);
        }
    }

    /// `@new.<member>`: a sent value, on either side of a comparison; not a path.
    #[test]
    fn outlines_sent_values() {
        let o = outline(
            "@new.state in ('a', 'b') or (amount >= @new.amount and @new.note is null)",
            16,
        )
        .unwrap();
        let names = |v: &[(String, usize)]| v.iter().map(|p| p.0.clone()).collect::<Vec<_>>();
        assert_eq!(names(&o.sent), ["state", "amount", "note"]);
        assert_eq!(names(&o.paths), ["amount"]);
        assert!(o.callers.is_empty());
        assert_eq!(new_member("new.state"), Some("state"));
        for not_sent in ["new", "new.", "new.a.b", "me"] {
            assert_eq!(new_member(not_sent), None, "{not_sent}");
        }
        let e = outline("@new.a.b = 1", 16).unwrap_err();
        assert!(e.message.contains("not a caller value"), "{}", e.message);
    }
}

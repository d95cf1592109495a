//! The `filter` list parameter: a SQL-like expression (`(species = 'cat' or species = 'dog')
//! and cuteness_level >= 5`) parsed by hand into a [`Condition`] tree of typed [`Cond`]s.
//!
//! The operators come from the one table ([`OPERATORS`](crate::condition::OPERATORS)), looked
//! up by the suffix the equivalent `field__suffix=value` parameter uses, and values are parsed
//! by [`parse_arg`], so an expression accepts exactly what the plain parameters accept. The
//! parser never recurses deeper than the configured depth and refuses input over the
//! configured length before reading it, so no input overflows the stack.

use crate::condition::{
    operator, parse_arg, text_arg, Arg, Cond, Condition, Op, Operator, OPERATORS,
};
use crate::crud::query::relation_names::{related_param, RelFields};
use crate::error::Error;
use crate::field::{FieldInfo, Kind};
use crudforge_core::expr::{is_keyword, Spanned, Tok, Tokens};
use crudforge_core::operator_spelled;

mod sent;
/// The name of the parameter, as errors name it.
pub(crate) const PARAM: &str = "filter";

/// How long and how deep an expression may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExprLimits {
    /// Longest expression, in characters.
    pub(crate) max_length: usize,
    /// Deepest nesting of parentheses and `not`.
    pub(crate) max_depth: usize,
}

impl Default for ExprLimits {
    fn default() -> Self {
        ExprLimits {
            max_length: 2000,
            max_depth: 16,
        }
    }
}

fn error(pos: usize, msg: impl std::fmt::Display) -> Error {
    Error::bad_param(PARAM, format!("at character {pos}: {msg}"))
}

/// The tokens of an expression (the lexer is shared with the derive, in `crudforge-core`).
fn lex(src: &str) -> Result<Tokens, Error> {
    Tokens::new(src).map_err(|e| error(e.pos, e.message))
}

/// What the parser builds: a [`Condition`] for the `filter` parameter, a rule's template for
/// permission rules (which may also name the caller).
pub(crate) trait Tree: Sized {
    /// All of these.
    fn all(v: Vec<Self>) -> Self;
    /// At least one of these.
    fn any(v: Vec<Self>) -> Self;
    /// Not this.
    fn not(c: Self) -> Self;
    /// One comparison.
    fn is(c: Cond) -> Self;
    /// A condition on the rows of the relation `rel`.
    fn related(rel: &'static str, c: Self) -> Self;
    /// A term on the caller; `None` where expressions have no caller (the `filter` parameter).
    fn caller(t: CallerTerm) -> Option<Self>;
}

impl Tree for Condition {
    fn all(v: Vec<Self>) -> Self {
        Condition::All(v)
    }
    fn any(v: Vec<Self>) -> Self {
        Condition::Any(v)
    }
    fn not(c: Self) -> Self {
        Condition::Not(Box::new(c))
    }
    fn is(c: Cond) -> Self {
        Condition::Is(c)
    }
    fn related(rel: &'static str, c: Self) -> Self {
        crate::condition::Related::pending(rel, c)
    }
    fn caller(_: CallerTerm) -> Option<Self> {
        None
    }
}

/// A term of a permission rule on the caller.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CallerTerm {
    /// `field = @me` (`eq`) or `field != @me`: false without a caller.
    Me { field: &'static str, eq: bool },
    /// `field in @domains` (`roles`: `None`), the domains of any of the caller's roles, or
    /// `field in @domains('X', 'Y')`, those in which the caller holds one of these roles (every
    /// domain for such a role granted without a domain); false without a caller.
    Domains {
        field: &'static str,
        nullable: bool,
        roles: Option<Vec<String>>,
    },
    /// `@role = 'X'`, `@role in ('X', 'Y')`: the caller holds one of these roles.
    Role(Vec<String>),
    /// `@admin`: the caller is a global administrator.
    Admin,
    /// `@signed_in`: there is a caller.
    SignedIn,
    /// `@second_factor`: the caller's session passed a second factor.
    SecondFactor,
    /// `true` or `false`.
    Const(bool),
    /// `@new.member <op> value` (member rules only): the value the write sends for the member,
    /// compared with a value; the stored value when the write leaves the member out.
    Sent {
        field: &'static str,
        kind: Kind,
        op: Op,
        arg: Arg,
    },
    /// `member <op> @new.member` (member rules only): the stored value compared with the one
    /// the write sends; the stored value with itself when the write leaves the member out.
    Against {
        field: &'static str,
        kind: Kind,
        op: Op,
    },
    /// `field < now` (or `today`, any comparison but `in`): the server's clock, read each
    /// time the rule is judged rather than once when it is compiled.
    Clock {
        field: &'static str,
        kind: Kind,
        op: Op,
        word: &'static str,
    },
}

/// Resolves a dotted path (`critter.habitat.keeper_id`) into the relations it crosses, the
/// last relation's fields and the member's name; `None` for a name that is not such a path.
pub(crate) type Resolve<'r> =
    &'r dyn Fn(&str) -> Option<(Vec<&'static str>, &'static [FieldInfo], String)>;

/// Parses a `filter` expression against `fields`.
///
/// # Errors
///
/// A 400 naming `filter`: the expression is too long or too deep, malformed (the detail says
/// what was expected at which character), names a field that cannot be filtered, applies an
/// operator the field's type does not support, or holds a value of the wrong type.
pub(crate) fn parse_filter_expr(
    fields: &'static [FieldInfo],
    src: &str,
    limits: ExprLimits,
) -> Result<Condition, Error> {
    parse_filter_expr_rel(fields, &[], src, limits)
}

/// Parses a `filter` expression against `fields`, where a comparison may also name a field of
/// one of the relations `rels` (`habitat.name = 'Savanna'`): it becomes an unlinked
/// [`Condition::Related`].
///
/// # Errors
///
/// A 400 naming `filter`, as `parse_filter_expr`.
pub(crate) fn parse_filter_expr_rel(
    fields: &'static [FieldInfo],
    rels: RelFields<'_>,
    src: &str,
    limits: ExprLimits,
) -> Result<Condition, Error> {
    let resolve = |name: &str| {
        related_param(rels, name).map(|(rel, target, rest)| (vec![rel], target, rest.to_owned()))
    };
    parse(fields, &resolve, Grammar::Filter, src, limits)
}

/// Parses a permission rule against `fields`: the `filter` grammar, where a comparison may
/// cross any number of relations (`resolve`) and name the caller (`@me`, [`CallerTerm`]).
///
/// # Errors
///
/// A 400 naming `filter` whose detail says what is wrong at which character.
pub(crate) fn parse_rule<T: Tree>(
    fields: &'static [FieldInfo],
    resolve: Resolve<'_>,
    src: &str,
    limits: ExprLimits,
) -> Result<T, Error> {
    parse(fields, resolve, Grammar::Rule, src, limits)
}

/// Parses a member rule: a permission rule that may also read the values a write sends
/// (`@new.state`, [`CallerTerm::Sent`], [`CallerTerm::Against`]).
///
/// # Errors
///
/// As [`parse_rule`].
pub(crate) fn parse_member_rule<T: Tree>(
    fields: &'static [FieldInfo],
    resolve: Resolve<'_>,
    src: &str,
    limits: ExprLimits,
) -> Result<T, Error> {
    parse(fields, resolve, Grammar::MemberRule, src, limits)
}

/// Which expressions a parser reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grammar {
    /// The `filter` parameter: no caller.
    Filter,
    /// A row rule: the caller's values.
    Rule,
    /// A member rule: the caller's values and the sent ones (`@new.member`).
    MemberRule,
}

fn parse<T: Tree>(
    fields: &'static [FieldInfo],
    resolve: Resolve<'_>,
    grammar: Grammar,
    src: &str,
    limits: ExprLimits,
) -> Result<T, Error> {
    let len = src.chars().count();
    if len > limits.max_length {
        return Err(Error::bad_param(
            PARAM,
            format!(
                "the expression is {len} characters long; at most {} are allowed",
                limits.max_length
            ),
        ));
    }
    let mut p = Parser {
        toks: lex(src)?,
        fields,
        resolve,
        rules: grammar != Grammar::Filter,
        sent: grammar == Grammar::MemberRule,
        max_depth: limits.max_depth,
        tree: std::marker::PhantomData,
    };
    if p.peek().0 == Tok::End {
        return Err(error(1, "expected a condition, found an empty expression"));
    }
    let c = p.or(0)?;
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
    Ok(c)
}

struct Parser<'r, T> {
    toks: Tokens,
    fields: &'static [FieldInfo],
    resolve: Resolve<'r>,
    /// Whether this is a permission rule (caller values, `true`, `false`).
    rules: bool,
    /// Whether this is a member rule (`@new.member`).
    sent: bool,
    max_depth: usize,
    tree: std::marker::PhantomData<T>,
}

impl<T: Tree> Parser<'_, T> {
    fn peek(&self) -> &Spanned {
        self.toks.peek()
    }

    fn next(&mut self) -> Spanned {
        self.toks.advance()
    }

    fn deeper(&self, depth: usize, pos: usize) -> Result<usize, Error> {
        if depth >= self.max_depth {
            return Err(error(
                pos,
                format!(
                    "the expression nests deeper than {} levels of parentheses and `not`",
                    self.max_depth
                ),
            ));
        }
        Ok(depth + 1)
    }

    fn or(&mut self, depth: usize) -> Result<T, Error> {
        let mut items = vec![self.and(depth)?];
        while self.peek().0.is_word("or") {
            self.next();
            items.push(self.and(depth)?);
        }
        Ok(if items.len() == 1 {
            items.remove(0)
        } else {
            T::any(items)
        })
    }

    fn and(&mut self, depth: usize) -> Result<T, Error> {
        let mut items = vec![self.not(depth)?];
        while self.peek().0.is_word("and") {
            self.next();
            items.push(self.not(depth)?);
        }
        Ok(if items.len() == 1 {
            items.remove(0)
        } else {
            T::all(items)
        })
    }

    fn not(&mut self, depth: usize) -> Result<T, Error> {
        let (t, pos) = self.peek().clone();
        if t.is_word("not") {
            self.next();
            let d = self.deeper(depth, pos)?;
            return Ok(T::not(self.not(d)?));
        }
        if t == Tok::LParen {
            self.next();
            let d = self.deeper(depth, pos)?;
            let inner = self.or(d)?;
            let (t, pos) = self.next();
            if t != Tok::RParen {
                return Err(error(
                    pos,
                    format!("expected `)`, `and` or `or`, found {}", t.describe()),
                ));
            }
            return Ok(inner);
        }
        if let Some(term) = self.caller_atom()? {
            return Ok(term);
        }
        self.comparison()
    }

    /// A term of a rule that stands alone: `true`, `false`, `@admin`, `@signed_in`,
    /// `@second_factor`, or a
    /// comparison of `@role`.
    fn caller_atom(&mut self) -> Result<Option<T>, Error> {
        let (t, pos) = self.peek().clone();
        let term = match &t {
            Tok::Ident(w) if self.rules && w.eq_ignore_ascii_case("true") => {
                CallerTerm::Const(true)
            }
            Tok::Ident(w) if self.rules && w.eq_ignore_ascii_case("false") => {
                CallerTerm::Const(false)
            }
            Tok::Caller(name) => {
                self.check_caller(name, pos)?;
                match name.as_str() {
                    "admin" => CallerTerm::Admin,
                    "signed_in" => CallerTerm::SignedIn,
                    "second_factor" => CallerTerm::SecondFactor,
                    "role" => {
                        self.next();
                        return self.role().map(Some);
                    }
                    n if crudforge_core::expr::new_member(n).is_some() => {
                        self.next();
                        return self.sent_value(n, pos).map(Some);
                    }
                    _ => {
                        return Err(error(
                            pos,
                            format!(
                                "`@{name}` is a value: compare a field with it (`owner_id = @me`)"
                            ),
                        ))
                    }
                }
            }
            _ => return Ok(None),
        };
        self.next();
        Ok(Some(self.term(term, pos)?))
    }

    /// The tree of a caller term (refused outside rules).
    fn term(&self, term: CallerTerm, pos: usize) -> Result<T, Error> {
        T::caller(term).ok_or_else(|| {
            error(
                pos,
                "caller values (`@me`) belong to permission rules, not to filters",
            )
        })
    }

    /// Refuses an unknown caller value, and any outside rules.
    fn check_caller(&self, name: &str, pos: usize) -> Result<(), Error> {
        if !self.rules {
            return Err(error(
                pos,
                "caller values (`@me`) belong to permission rules, not to filters",
            ));
        }
        if !crudforge_core::expr::is_caller_value(name) {
            return Err(error(
                pos,
                format!(
                    "`@{name}` is not a caller value; known ones: {}",
                    crudforge_core::expr::caller_values_list()
                ),
            ));
        }
        Ok(())
    }

    /// The rest of `@role = 'X'`, `@role != 'X'`, `@role in ('X', 'Y')`.
    fn role(&mut self) -> Result<T, Error> {
        let (t, pos) = self.next();
        let (names, negated) = match t {
            Tok::Cmp(c @ ("=" | "!=")) => (vec![self.role_name()?], c == "!="),
            t if t.is_word("in") => {
                let (t, p) = self.next();
                if t != Tok::LParen {
                    return Err(error(
                        p,
                        format!("expected `(` after `in`, found {}", t.describe()),
                    ));
                }
                (self.role_names()?, false)
            }
            t => {
                return Err(error(
                    pos,
                    format!(
                        "expected `=`, `!=` or `in` after `@role`, found {}",
                        t.describe()
                    ),
                ))
            }
        };
        let held = self.term(CallerTerm::Role(names), pos)?;
        Ok(if negated { T::not(held) } else { held })
    }

    /// The quoted role names of a list after its `(`, and its `)`.
    fn role_names(&mut self) -> Result<Vec<String>, Error> {
        let mut names = vec![self.role_name()?];
        loop {
            let (t, p) = self.next();
            match t {
                Tok::Comma => names.push(self.role_name()?),
                Tok::RParen => return Ok(names),
                other => {
                    return Err(error(
                        p,
                        format!(
                            "expected `,` or `)` in the list, found {}",
                            other.describe()
                        ),
                    ))
                }
            }
        }
    }

    fn role_name(&mut self) -> Result<String, Error> {
        match self.next() {
            (Tok::Str(s), _) => Ok(s),
            (t, p) => Err(error(
                p,
                format!("expected a quoted role name, found {}", t.describe()),
            )),
        }
    }

    /// One comparison: a field, an operator and the operator's argument.
    fn comparison(&mut self) -> Result<T, Error> {
        let (field, related) = self.filterable_field()?;
        let (o, spelled) = self.operator_for(field)?;
        let c = match o.op {
            Op::IsNull => {
                let arg = self.null_check()?;
                Self::cond(field, Op::IsNull, arg)
            }
            Op::In => match self.peek().clone() {
                (Tok::Caller(name), pos) => {
                    self.check_caller(&name, pos)?;
                    self.next();
                    if name != "domains" || field.kind != Kind::Uuid {
                        return Err(error(
                            pos,
                            format!(
                                "`in` takes a list or `@domains` (for a UUID field), not `@{name}`"
                            ),
                        ));
                    }
                    // `@domains('EDITOR', ...)`: the domains of these roles.
                    let roles = if self.peek().0 == Tok::LParen {
                        self.next();
                        Some(self.role_names()?)
                    } else {
                        None
                    };
                    self.term(
                        CallerTerm::Domains {
                            field: field.name,
                            nullable: field.nullable,
                            roles,
                        },
                        pos,
                    )?
                }
                _ => {
                    let list = self.list(field)?;
                    Self::cond(field, Op::In, list)
                }
            },
            Op::Like | Op::ILike => {
                let pat = self.pattern(&spelled)?;
                Self::cond(field, o.op, pat)
            }
            op => match self.peek().clone() {
                (Tok::Caller(name), pos)
                    if crudforge_core::expr::new_member(&name).is_some() && self.rules =>
                {
                    self.next();
                    let sent = self.sent_field(&name, pos)?;
                    if sent.name != field.name || !related.is_empty() {
                        return Err(error(
                            pos,
                            format!(
                                "`@{name}` is compared with `{}` itself or with a value",
                                sent.name
                            ),
                        ));
                    }
                    Self::sent_op(field, op, pos)?;
                    self.term(
                        CallerTerm::Against {
                            field: field.name,
                            kind: field.kind,
                            op,
                        },
                        pos,
                    )?
                }
                (Tok::Caller(name), pos) => {
                    self.check_caller(&name, pos)?;
                    self.next();
                    let eq = match op {
                        Op::Eq => true,
                        Op::Ne => false,
                        _ => {
                            return Err(error(
                                pos,
                                format!("`@{name}` is compared with `=` or `!=`"),
                            ))
                        }
                    };
                    if name != "me" {
                        return Err(error(
                            pos,
                            format!("a field is compared with `@me`, not `@{name}`"),
                        ));
                    }
                    if field.kind != Kind::Uuid {
                        return Err(error(
                            pos,
                            format!("`@me` is a UUID, and `{}` does not hold one", field.name),
                        ));
                    }
                    self.term(
                        CallerTerm::Me {
                            field: field.name,
                            eq,
                        },
                        pos,
                    )?
                }
                // A rule keeps `now` and `today` as words, read when it is judged.
                (Tok::Ident(w), pos) if self.rules => {
                    match crate::crud::query::clock::word(&w, field.kind) {
                        Some(word) => {
                            self.next();
                            self.term(
                                CallerTerm::Clock {
                                    field: field.name,
                                    kind: field.kind,
                                    op,
                                    word,
                                },
                                pos,
                            )?
                        }
                        None => {
                            let v = self.value(field)?;
                            Self::cond(field, op, v)
                        }
                    }
                }
                _ => {
                    let v = self.value(field)?;
                    Self::cond(field, op, v)
                }
            },
        };
        Ok(related
            .into_iter()
            .rev()
            .fold(c, |inner, rel| T::related(rel, inner)))
    }

    fn cond(field: &FieldInfo, op: Op, arg: Arg) -> T {
        T::is(Cond {
            field: field.name,
            op,
            arg,
            param: PARAM.to_owned(),
        })
    }

    /// The field a comparison starts with, which must be filterable; with the relations it is
    /// reached through when it is a related row's field (`habitat.name`, compared among the
    /// related rows).
    fn filterable_field(&mut self) -> Result<(&'static FieldInfo, Vec<&'static str>), Error> {
        let (t, pos) = self.next();
        let name = match t {
            Tok::Ident(n) if !is_keyword(&n) => n,
            other => {
                return Err(error(
                    pos,
                    format!(
                        "expected a field name, `not` or `(`, found {}",
                        other.describe()
                    ),
                ))
            }
        };
        let path = name.clone();
        let (fields, related, name) = match (self.resolve)(&name) {
            Some((rels, target, rest)) => (target, rels, rest),
            None if self.rules && name.contains('.') => {
                return Err(error(
                    pos,
                    format!("`{name}` does not follow the declared relations"),
                ))
            }
            None => (self.fields, Vec::new(), name),
        };
        let field = fields
            .iter()
            .find(|f| f.name == name && f.filterable)
            .ok_or_else(|| {
                let of = match related.last() {
                    Some(rel) if self.rules => format!(" (in `{path}`) of the relation `{rel}`"),
                    _ => String::new(),
                };
                error(
                    pos,
                    format!(
                        "`{name}`{of} is not a filterable field; filterable fields: {}",
                        fields
                            .iter()
                            .filter(|f| f.filterable)
                            .map(|f| f.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })?;
        Ok((field, related))
    }

    /// The operator after `field`, looked up by its spelling in the operator table (which
    /// says how a `filter` expression writes each one), and that spelling as messages show
    /// it. The operator must apply to the field's kind.
    fn operator_for(&mut self, field: &FieldInfo) -> Result<(&'static Operator, String), Error> {
        let name = field.name;
        let (t, op_pos) = self.next();
        let word = match &t {
            Tok::Cmp(c) => Some(*c),
            Tok::Ident(w) => Some(w.as_str()),
            _ => None,
        };
        let Some(found) = word.and_then(operator_spelled) else {
            let spellings: Vec<&str> = OPERATORS
                .iter()
                .map(|o| o.expression)
                .filter(|e| !e.is_empty())
                .collect();
            return Err(error(
                op_pos,
                format!(
                    "expected an operator ({}) after `{name}`, found {}",
                    spellings.join(", "),
                    t.describe()
                ),
            ));
        };
        let spelled = if found.op == Op::IsNull {
            "is null".to_owned()
        } else {
            found.expression.to_owned()
        };
        let suffix = found.suffix;
        let Some(o) = operator(suffix).filter(|o| o.applies(field.kind, field.nullable)) else {
            let why = if field.kind == Kind::Json {
                "JSON fields cannot be filtered".to_owned()
            } else if suffix == "isnull" {
                format!("`{name}` cannot be null")
            } else {
                format!("`{spelled}` does not apply to `{name}`")
            };
            return Err(error(op_pos, why));
        };
        Ok((o, spelled))
    }

    /// The rest of `is null` / `is not null` (after `is`): whether the field must be null.
    fn null_check(&mut self) -> Result<Arg, Error> {
        let negated = self.peek().0.is_word("not");
        if negated {
            self.next();
        }
        let (t, p) = self.next();
        if !t.is_word("null") {
            return Err(error(
                p,
                format!(
                    "expected `null` or `not null` after `is`, found {}",
                    t.describe()
                ),
            ));
        }
        Ok(Arg::Bool(!negated))
    }

    /// The parenthesized list after `in`: one or more values of `field`'s kind.
    fn list(&mut self, field: &FieldInfo) -> Result<Arg, Error> {
        let (t, p) = self.next();
        if t != Tok::LParen {
            return Err(error(
                p,
                format!("expected `(` after `in`, found {}", t.describe()),
            ));
        }
        let mut items = vec![self.value(field)?];
        loop {
            let (t, p) = self.next();
            match t {
                Tok::Comma => items.push(self.value(field)?),
                Tok::RParen => break,
                other => {
                    return Err(error(
                        p,
                        format!(
                            "expected `,` or `)` in the list, found {}",
                            other.describe()
                        ),
                    ))
                }
            }
        }
        Ok(Arg::List(items))
    }

    /// The quoted pattern after `like` or `ilike` (`spelled`), which cannot end with a lone
    /// escape character.
    fn pattern(&mut self, spelled: &str) -> Result<Arg, Error> {
        let (t, p) = self.next();
        let Tok::Str(pat) = t else {
            return Err(error(
                p,
                format!(
                    "expected a quoted pattern after `{spelled}`, found {}",
                    t.describe()
                ),
            ));
        };
        let trailing = pat.chars().rev().take_while(|c| *c == '\\').count();
        if trailing % 2 == 1 {
            return Err(error(
                p,
                "a pattern cannot end with a lone escape character `\\`",
            ));
        }
        text_arg(&pat).map_err(|e| error(p, e))
    }

    /// One literal, typed by `field`.
    fn value(&mut self, field: &FieldInfo) -> Result<Arg, Error> {
        let (t, pos) = self.next();
        let name = field.name;
        // `now` and `today`: the server's clock (crud::clock).
        if let Tok::Ident(w) = &t {
            if let Some(arg) = crate::crud::query::clock::value_of(w, field.kind) {
                return Ok(arg);
            }
        }
        let text = match (&t, field.kind) {
            (Tok::Str(s), Kind::Text | Kind::Other | Kind::Uuid | Kind::Date | Kind::DateTime) => {
                s.clone()
            }
            (Tok::Num(n), Kind::Integer | Kind::Float) => n.clone(),
            (Tok::Ident(w), Kind::Bool)
                if w.eq_ignore_ascii_case("true") || w.eq_ignore_ascii_case("false") =>
            {
                w.to_ascii_lowercase()
            }
            (t, _) if t.is_word("null") => {
                return Err(error(
                    pos,
                    format!("expected a value, found `null`: write `{name} is null` or `{name} is not null`"),
                ))
            }
            (t, kind) => {
                let want = match kind {
                    Kind::Integer | Kind::Float => "a number",
                    Kind::Bool => "true or false",
                    Kind::Date => "a quoted date ('YYYY-MM-DD') or `today`",
                    Kind::DateTime => "a quoted date or RFC 3339 date-time, `now` or `today`",
                    Kind::Uuid => "a quoted UUID",
                    _ => "a quoted string",
                };
                return Err(error(
                    pos,
                    format!("expected {want} for `{name}`, found {}", t.describe()),
                ));
            }
        };
        parse_arg(field.kind, &text).map_err(|e| error(pos, format!("`{name}`: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    static FIELDS: &[FieldInfo] = &[
        FieldInfo::new("id", Kind::Uuid),
        FieldInfo::new("name", Kind::Text),
        FieldInfo::new("level", Kind::Integer),
        FieldInfo::new("weight", Kind::Float).nullable(),
        FieldInfo::new("born", Kind::DateTime),
        FieldInfo::new("day", Kind::Date),
        FieldInfo::new("nick", Kind::Text).nullable(),
        FieldInfo::new("secret", Kind::Text).write_only(),
        FieldInfo::new("ok", Kind::Bool),
        FieldInfo::new("extra", Kind::Json),
    ];

    fn parse(s: &str) -> Result<Condition, Error> {
        parse_filter_expr(FIELDS, s, ExprLimits::default())
    }

    fn is(field: &'static str, op: Op, arg: Arg) -> Condition {
        Condition::Is(Cond {
            field,
            op,
            arg,
            param: PARAM.to_owned(),
        })
    }

    fn detail(e: Error) -> String {
        match e {
            Error::BadRequest { detail, field } => {
                assert_eq!(field.as_deref(), Some(PARAM));
                detail.to_string()
            }
            other => panic!("expected 400, got {other:?}"),
        }
    }

    #[test]
    fn precedence_is_not_and_or() {
        let c = parse("name = 'a' or not level > 3 and ok = true").unwrap();
        assert_eq!(
            c,
            Condition::Any(vec![
                is("name", Op::Eq, Arg::Text("a".into())),
                Condition::All(vec![
                    Condition::Not(Box::new(is("level", Op::Gt, Arg::Int(3)))),
                    is("ok", Op::Eq, Arg::Bool(true)),
                ]),
            ])
        );
        let c = parse("(name = 'a' OR name = 'b') AND level >= 5").unwrap();
        assert!(matches!(&c, Condition::All(v) if matches!(v[0], Condition::Any(_))));
    }

    #[test]
    fn operators_and_values() {
        assert_eq!(
            parse("name = 'it''s'").unwrap(),
            is("name", Op::Eq, Arg::Text("it's".into()))
        );
        assert_eq!(
            parse("level in (1, -2,3)").unwrap(),
            is(
                "level",
                Op::In,
                Arg::List(vec![Arg::Int(1), Arg::Int(-2), Arg::Int(3)])
            )
        );
        assert_eq!(
            parse("nick is not null").unwrap(),
            is("nick", Op::IsNull, Arg::Bool(false))
        );
        assert_eq!(
            parse("weight is null").unwrap(),
            is("weight", Op::IsNull, Arg::Bool(true))
        );
        assert_eq!(
            parse("weight<=1.5e0").unwrap(),
            is("weight", Op::Lte, Arg::Float(1.5))
        );
        assert_eq!(
            parse("name ilike 'R%'").unwrap(),
            is("name", Op::ILike, Arg::Text("R%".into()))
        );
        assert_eq!(
            parse("level <> 2").unwrap(),
            is("level", Op::Ne, Arg::Int(2))
        );
        assert!(parse("born >= '2024-01-02' and day < '2024-01-03'").is_ok());
        assert!(parse("born > '2024-01-02T10:00:00Z'").is_ok());
        assert!(parse("id = '67e55044-10b1-426f-9247-bb680e5fe0c8'").is_ok());
    }

    #[test]
    fn errors_say_what_and_where() {
        for (src, want) in [
            ("", "at character 1: expected a condition"),
            ("name =", "at character 7: expected a quoted string"),
            ("(name = 'a'", "at character 12: expected `)`"),
            ("name = 'a' name", "at character 12: expected `and`, `or`"),
            ("name = 'a", "at character 8: expected a closing quote"),
            ("level = 'x'", "at character 9: expected a number"),
            (
                "level = 1.5",
                "at character 9: `level`: expected a whole number",
            ),
            ("name > 'a'", "at character 6: `>` does not apply to `name`"),
            ("level like '1'", "`like` does not apply"),
            ("name is null", "`name` cannot be null"),
            ("secret = 'x'", "`secret` is not a filterable field"),
            ("extra = 'x'", "`extra` is not a filterable field"),
            ("nope = 1", "`nope` is not a filterable field"),
            ("name = null", "write `name is null`"),
            ("ok = 1", "expected true or false"),
            ("name like 'a\\'", "lone escape"),
            ("name = 'a\0'", "NUL"),
            (
                "name ; drop",
                "at character 6: expected a field name, a value",
            ),
            ("and", "expected a field name, `not` or `(`"),
            ("level in 1", "expected `(` after `in`"),
        ] {
            let d = detail(parse(src).unwrap_err());
            assert!(d.contains(want), "{src:?}: {d}");
        }
    }

    #[test]
    fn limits() {
        let deep = format!("{}name = 'a'{}", "(".repeat(16), ")".repeat(16));
        assert!(parse(&deep).is_ok());
        let deeper = format!("{}name = 'a'{}", "(".repeat(17), ")".repeat(17));
        assert!(detail(parse(&deeper).unwrap_err()).contains("deeper than 16"));
        let nots = format!("{}name = 'a'", "not ".repeat(100_000));
        let long = parse_filter_expr(
            FIELDS,
            &nots,
            ExprLimits {
                max_length: 1_000_000,
                max_depth: 16,
            },
        );
        assert!(detail(long.unwrap_err()).contains("deeper than 16"));
        let long = format!("name = '{}'", "x".repeat(2000));
        assert!(detail(parse(&long).unwrap_err()).contains("at most 2000"));
    }

    /// A valid expression over [`FIELDS`] and the condition it must parse to.
    fn expr() -> impl Strategy<Value = (String, Condition)> {
        let text = "[a-zA-Z0-9 '%_é]{0,8}";
        let leaf = prop_oneof![
            (text, prop::sample::select(vec!["=", "!="])).prop_map(|(s, op)| (
                format!("name {op} '{}'", s.replace('\'', "''")),
                is(
                    "name",
                    if op == "=" { Op::Eq } else { Op::Ne },
                    Arg::Text(s)
                )
            )),
            (
                any::<i64>(),
                prop::sample::select(vec![">", ">=", "<", "<="])
            )
                .prop_map(|(n, op)| (
                    format!("level {op} {n}"),
                    is(
                        "level",
                        match op {
                            ">" => Op::Gt,
                            ">=" => Op::Gte,
                            "<" => Op::Lt,
                            _ => Op::Lte,
                        },
                        Arg::Int(n)
                    )
                )),
            prop::collection::vec(any::<i64>(), 1..4).prop_map(|v| (
                format!(
                    "level in ({})",
                    v.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
                ),
                is(
                    "level",
                    Op::In,
                    Arg::List(v.into_iter().map(Arg::Int).collect())
                )
            )),
            any::<bool>().prop_map(|b| (
                format!("nick is {}null", if b { "" } else { "not " }),
                is("nick", Op::IsNull, Arg::Bool(b))
            )),
            any::<bool>().prop_map(|b| (format!("ok = {b}"), is("ok", Op::Eq, Arg::Bool(b)))),
        ];
        leaf.prop_recursive(4, 24, 3, |inner| {
            prop_oneof![
                inner
                    .clone()
                    .prop_map(|(s, c)| (format!("not ({s})"), Condition::Not(Box::new(c)))),
                prop::collection::vec(inner.clone(), 2..4).prop_map(|v| {
                    let s = v.iter().map(|(s, _)| format!("({s})")).collect::<Vec<_>>();
                    (
                        s.join(" and "),
                        Condition::All(v.into_iter().map(|(_, c)| c).collect()),
                    )
                }),
                prop::collection::vec(inner, 2..4).prop_map(|v| {
                    let s = v.iter().map(|(s, _)| format!("({s})")).collect::<Vec<_>>();
                    (
                        s.join(" or "),
                        Condition::Any(v.into_iter().map(|(_, c)| c).collect()),
                    )
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn arbitrary_input_never_panics(s in "\\PC{0,64}") {
            let _ = parse(&s);
        }

        #[test]
        fn arbitrary_tokens_never_panic(parts in prop::collection::vec(prop::sample::select(vec![
            "(", ")", "not", "and", "or", "name", "level", "nick", "=", ">=", "<>", "!", "in",
            "is", "null", "like", "'a''b'", "'", "1", "-2.5e3", ",", "ok", "true", "é", "\\",
        ]), 0..40)) {
            let _ = parse(&parts.join(" "));
        }

        #[test]
        fn valid_expressions_round_trip((src, want) in expr()) {
            prop_assert_eq!(parse(&src).map_err(detail), Ok(want));
        }
    }
}

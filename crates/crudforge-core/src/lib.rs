//! The vocabulary that crudforge's runtime and its derive macro share: the kinds of value a
//! field can hold and the one table of filter operators.
//!
//! Both crates read [`OPERATORS`]: the runtime to parse list parameters and to document them
//! in OpenAPI, the derive to generate the SQL of exactly the operators each field accepts. To
//! add an operator, add a row here and, when its [`Op`] is new, its SQL in the derive's
//! expansion (the derive's `match` over [`Op`] fails to compile until it has one).
//!
//! [`expr`] is the lexer of `filter` expressions and permission rules, and the outline of a
//! rule the derive checks at compile time.

pub mod expr;
pub mod files;

/// What kind of value a field holds; decides which filters apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `String`.
    Text,
    /// `i16`, `i32`, `i64`.
    Integer,
    /// `f32`, `f64`.
    Float,
    /// `bool`.
    Bool,
    /// `uuid::Uuid`.
    Uuid,
    /// `DateTime<Utc>`.
    DateTime,
    /// `NaiveDate`.
    Date,
    /// `serde_json::Value`: not filterable.
    Json,
    /// Another type, parsed from text by the runtime's `FromArg`.
    Other,
}

impl Kind {
    /// The variant's name, as written in Rust (`Text`, `DateTime`).
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Text => "Text",
            Kind::Integer => "Integer",
            Kind::Float => "Float",
            Kind::Bool => "Bool",
            Kind::Uuid => "Uuid",
            Kind::DateTime => "DateTime",
            Kind::Date => "Date",
            Kind::Json => "Json",
            Kind::Other => "Other",
        }
    }
}

/// A comparison a filter applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// Equal.
    Eq,
    /// Not equal.
    Ne,
    /// One of a list.
    In,
    /// Greater than.
    Gt,
    /// Less than.
    Lt,
    /// Greater than or equal.
    Gte,
    /// Less than or equal.
    Lte,
    /// SQL `LIKE`, case-sensitive on every backend.
    Like,
    /// SQL `LIKE`, case-insensitive on every backend.
    ILike,
    /// `IS NULL` (value true) or `IS NOT NULL` (value false).
    IsNull,
}

/// What the value of a filter parameter is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// One value of the field's kind.
    Field,
    /// A comma-separated list of values of the field's kind.
    List,
    /// A SQL `LIKE` pattern (text).
    Pattern,
    /// `true` or `false`.
    Flag,
    /// A date or date-time; a bare date means the start of that day (UTC).
    DayStart,
    /// A date or date-time; a bare date means the whole of that day (UTC).
    DayEnd,
}

/// One filter operator: how it is written, what it does, where it applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operator {
    /// The parameter suffix after `__` (`gte` in `age__gte`); empty for plain equality.
    pub suffix: &'static str,
    /// How a `filter` expression spells it (`>=`, `like`; `is` for `is null` / `is not
    /// null`); empty when only the parameter form exists.
    pub expression: &'static str,
    /// The comparison it applies.
    pub op: Op,
    /// What it means, completing "`field` …" (`is at least`).
    pub description: &'static str,
    /// The kinds of field it applies to.
    pub kinds: &'static [Kind],
    /// Applies only to nullable fields.
    pub nullable_only: bool,
    /// The form of its value.
    pub value: Value,
}

impl Operator {
    /// Whether the operator applies to a field of `kind` (nullable or not).
    pub fn applies(&self, kind: Kind, nullable: bool) -> bool {
        self.kinds.contains(&kind) && (nullable || !self.nullable_only)
    }
}

const COMPARABLE: &[Kind] = &[
    Kind::Text,
    Kind::Integer,
    Kind::Float,
    Kind::Bool,
    Kind::Uuid,
    Kind::DateTime,
    Kind::Date,
    Kind::Other,
];
const LISTABLE: &[Kind] = &[
    Kind::Text,
    Kind::Integer,
    Kind::Float,
    Kind::Uuid,
    Kind::DateTime,
    Kind::Date,
    Kind::Other,
];
const ORDERED: &[Kind] = &[Kind::Integer, Kind::Float, Kind::DateTime, Kind::Date];
const DATES: &[Kind] = &[Kind::DateTime, Kind::Date];
const TEXT: &[Kind] = &[Kind::Text];

/// Every filter operator, in the order documentation lists them.
pub const OPERATORS: &[Operator] = &[
    Operator {
        suffix: "",
        expression: "=",
        op: Op::Eq,
        description: "equals",
        kinds: COMPARABLE,
        nullable_only: false,
        value: Value::Field,
    },
    Operator {
        suffix: "ne",
        expression: "!=",
        op: Op::Ne,
        description: "differs from",
        kinds: COMPARABLE,
        nullable_only: false,
        value: Value::Field,
    },
    Operator {
        suffix: "in",
        expression: "in",
        op: Op::In,
        description: "is one of (comma-separated, or the parameter repeated)",
        kinds: LISTABLE,
        nullable_only: false,
        value: Value::List,
    },
    Operator {
        suffix: "from",
        expression: "",
        op: Op::Gte,
        description: "is on or after (YYYY-MM-DD)",
        kinds: DATES,
        nullable_only: false,
        value: Value::DayStart,
    },
    Operator {
        suffix: "to",
        expression: "",
        op: Op::Lte,
        description: "is on or before (YYYY-MM-DD, whole day)",
        kinds: DATES,
        nullable_only: false,
        value: Value::DayEnd,
    },
    Operator {
        suffix: "gt",
        expression: ">",
        op: Op::Gt,
        description: "is greater than",
        kinds: ORDERED,
        nullable_only: false,
        value: Value::Field,
    },
    Operator {
        suffix: "lt",
        expression: "<",
        op: Op::Lt,
        description: "is less than",
        kinds: ORDERED,
        nullable_only: false,
        value: Value::Field,
    },
    Operator {
        suffix: "gte",
        expression: ">=",
        op: Op::Gte,
        description: "is at least",
        kinds: ORDERED,
        nullable_only: false,
        value: Value::Field,
    },
    Operator {
        suffix: "lte",
        expression: "<=",
        op: Op::Lte,
        description: "is at most",
        kinds: ORDERED,
        nullable_only: false,
        value: Value::Field,
    },
    Operator {
        suffix: "like",
        expression: "like",
        op: Op::Like,
        description: "matches the SQL LIKE pattern (case-sensitive)",
        kinds: TEXT,
        nullable_only: false,
        value: Value::Pattern,
    },
    Operator {
        suffix: "ilike",
        expression: "ilike",
        op: Op::ILike,
        description: "matches the SQL LIKE pattern (case-insensitive)",
        kinds: TEXT,
        nullable_only: false,
        value: Value::Pattern,
    },
    Operator {
        suffix: "isnull",
        expression: "is",
        op: Op::IsNull,
        description: "is null (true) or not (false)",
        kinds: COMPARABLE,
        nullable_only: true,
        value: Value::Flag,
    },
];

/// The operator written with `suffix` (`""` for equality).
pub fn operator(suffix: &str) -> Option<&'static Operator> {
    OPERATORS.iter().find(|o| o.suffix == suffix)
}

/// The operator a `filter` expression spells `word` (`>=`, `like`, `is`).
pub fn operator_spelled(word: &str) -> Option<&'static Operator> {
    OPERATORS
        .iter()
        .find(|o| !o.expression.is_empty() && o.expression.eq_ignore_ascii_case(word))
}

/// The operators a field of `kind` accepts, in table order.
pub fn operators_for(kind: Kind, nullable: bool) -> impl Iterator<Item = &'static Operator> {
    OPERATORS.iter().filter(move |o| o.applies(kind, nullable))
}

/// The comparisons a field of `kind` needs SQL for (each [`Op`] once).
pub fn ops_for(kind: Kind, nullable: bool) -> Vec<Op> {
    let mut ops = Vec::new();
    for o in operators_for(kind, nullable) {
        if !ops.contains(&o.op) {
            ops.push(o.op);
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_are_unique() {
        for (i, a) in OPERATORS.iter().enumerate() {
            assert!(
                OPERATORS[i + 1..].iter().all(|b| b.suffix != a.suffix),
                "{}",
                a.suffix
            );
        }
    }

    #[test]
    fn json_fields_take_no_operator() {
        assert_eq!(operators_for(Kind::Json, true).count(), 0);
    }

    #[test]
    fn what_each_kind_accepts() {
        let sfx = |k, n| {
            operators_for(k, n)
                .map(|o| o.suffix)
                .collect::<Vec<_>>()
                .join(",")
        };
        assert_eq!(sfx(Kind::Bool, false), ",ne");
        assert_eq!(sfx(Kind::Text, true), ",ne,in,like,ilike,isnull");
        assert_eq!(sfx(Kind::Date, false), ",ne,in,from,to,gt,lt,gte,lte");
        assert_eq!(
            ops_for(Kind::DateTime, false),
            [Op::Eq, Op::Ne, Op::In, Op::Gte, Op::Lte, Op::Gt, Op::Lt]
        );
    }
}

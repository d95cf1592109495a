//! The query string of a request: the list parameters (filters, sorting and pagination),
//! parsed and checked against a resource's fields before anything reaches SQL, with the
//! `filter` expression ([`filter_expr`]), relation names in dotted parameter names
//! ([`relation_names`]), the server's clock in filters ([`clock`]) and sparse fields
//! ([`sparse`]).

pub(crate) mod clock;
pub(crate) mod filter_expr;
mod relation_names;
pub(crate) mod search;
pub(crate) mod sparse;

use crate::condition::Condition;
use crate::condition::{
    operator, operators_for, parse_arg, parse_bool, parse_bound, text_arg, Arg, Cond, Operator,
    Sort, Value, OPERATORS,
};
use crate::crud::query::filter_expr::{parse_filter_expr_rel, ExprLimits};
use crate::crud::query::relation_names::related_param;
pub(crate) use crate::crud::query::relation_names::RelFields;
use crate::error::Error;
use crate::field::{FieldInfo, Kind};

/// A parsed INDEX request.
#[derive(Debug, Clone, PartialEq)]
pub struct ListQuery {
    /// 1-based page number.
    pub page: u32,
    /// Items per page.
    pub page_size: u32,
    /// Sort keys, in order (empty: default order).
    pub sort: Vec<Sort>,
    /// Filters, combined with AND.
    pub conds: Vec<Cond>,
    /// The `filter` expression, ANDed with `conds`.
    pub filter: Option<Condition>,
    /// The `cursor` to continue from, as sent (checked against the API's key by the handler).
    pub cursor: Option<String>,
    /// How `total` is counted (`count`).
    pub count: CountMode,
    /// The members each item keeps (`fields`); `None`: all of them.
    pub fields: Option<Vec<&'static str>>,
    /// The words of `q`, a full-text search (turned into a condition by the handler, which
    /// knows the searchable members the caller may read).
    pub(crate) search: Option<search::Words>,
}

/// How an INDEX counts the matching rows: the `count` parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CountMode {
    /// `exact` (the default): a `COUNT(*)` with the list's conditions.
    #[default]
    Exact,
    /// `none`: no count; `total` and `total_pages` are null.
    None,
    /// `estimated`: the query planner's estimate on PostgreSQL, for a caller who reads every
    /// row and member of the table and filters on no relation; exact for everyone else (the
    /// estimate draws on rows they may not read) and on SQLite.
    Estimated,
}

impl CountMode {
    /// Every mode, as the `count` parameter spells it.
    pub(crate) const NAMES: [&'static str; 3] = ["exact", "none", "estimated"];

    fn parse(v: &str) -> Option<CountMode> {
        match v {
            "exact" => Some(CountMode::Exact),
            "none" => Some(CountMode::None),
            "estimated" => Some(CountMode::Estimated),
            _ => None,
        }
    }
}

/// The limits a list request is parsed with; from the configuration in the handlers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ListLimits {
    /// Items per page when `page_size` is absent.
    pub(crate) default_page_size: u32,
    /// Largest `page_size`.
    pub(crate) max_page_size: u32,
    /// Limits of the `filter` expression.
    pub(crate) expr: ExprLimits,
}

impl ListLimits {
    /// The limits of a configuration.
    pub(crate) fn of(config: &crate::config::Config) -> Self {
        ListLimits {
            default_page_size: config.list.default_page_size,
            max_page_size: config.list.max_page_size,
            expr: ExprLimits {
                max_length: usize::try_from(config.list.filter_max_length).unwrap_or(usize::MAX),
                max_depth: usize::try_from(config.list.filter_max_depth).unwrap_or(usize::MAX),
            },
        }
    }
}

impl ListQuery {
    /// The filters of the request as one tree: `conds` and the `filter` expression, combined
    /// with AND. Custom routes that take a `<Name>Filter` pass this to the resource's queries
    /// so that `filter` applies too.
    pub fn condition(&self) -> Condition {
        let c = Condition::from(self.conds.clone());
        match &self.filter {
            Some(f) => c.and(f.clone()),
            None => c,
        }
    }

    /// Rows to skip.
    pub(crate) fn offset(&self) -> i64 {
        i64::from(self.page.saturating_sub(1)) * i64::from(self.page_size)
    }
}

/// Suffixes a field of `kind` accepts (besides plain equality), as written in query strings.
pub(crate) fn suffixes(kind: Kind, nullable: bool) -> Vec<&'static str> {
    operators_for(kind, nullable)
        .map(|o| o.suffix)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Parses an INDEX query string against `fields`.
///
/// # Errors
///
/// A 400 naming the parameter for an unknown name, an operator the field's type does not
/// support, a malformed value, or a bad `page`, `page_size` or `sort`.
#[cfg(test)]
pub(crate) fn parse_list_query(
    fields: &'static [FieldInfo],
    query: &str,
    default_page_size: u32,
    max_page_size: u32,
) -> Result<ListQuery, Error> {
    let limits = ListLimits {
        default_page_size,
        max_page_size,
        expr: ExprLimits::default(),
    };
    parse_list_query_rel(fields, &[], &Params::of(query)?, &limits)
}

/// Parses the INDEX parameters `params` against `fields`, with `limits`, where filters,
/// `filter`, `sort` and `fields` may also name the fields of the relations `rels`
/// (`habitat.name`). A filter across a relation becomes an unlinked [`Condition::Related`] in
/// `filter`, which the handler links (with the related resource's read scope) before the query
/// runs; `include_deleted`, `scope` and `expand` are left to the handler.
///
/// # Errors
///
/// A 400 naming the parameter for an unknown name, an operator the field's type does not
/// support, a malformed value, a bad `page`, `page_size`, `sort` or `fields` list, a malformed
/// `filter` expression, a `cursor` sent with `page`, or an unknown `count` mode.
pub(crate) fn parse_list_query_rel(
    fields: &'static [FieldInfo],
    rels: RelFields<'_>,
    params: &Params,
    limits: &ListLimits,
) -> Result<ListQuery, Error> {
    let max_page_size = limits.max_page_size;
    let mut q = ListQuery {
        page: 1,
        page_size: limits.default_page_size,
        sort: Vec::new(),
        conds: Vec::new(),
        filter: None,
        cursor: None,
        count: CountMode::Exact,
        fields: None,
        search: None,
    };
    let mut page_given = false;
    for (name, value) in params.pairs() {
        let (name, value) = (name.as_str(), value.as_str());
        match name {
            "filter" => {
                // Several expressions combine with AND, like the other filters.
                let e = parse_filter_expr_rel(fields, rels, value, limits.expr)?;
                q.filter = Some(match q.filter.take() {
                    Some(prev) => Condition::All(vec![prev, e]),
                    None => e,
                });
            }
            "cursor" => q.cursor = Some(value.to_owned()),
            // A member named `q` keeps its filter.
            search::PARAM if !fields.iter().any(|f| f.name == search::PARAM) => {
                q.search = search::Words::parse(value)?;
            }
            // Which rows: read by the handler (crud::soft_delete), which knows the caller.
            "include_deleted" => {}
            // Named filters: read by the handler (crud::named_filters).
            "scope" => {}
            // Embedded relations: read by the handler (crud::relations::expand).
            "expand" if !rels.is_empty() => {}
            "count" => {
                q.count = CountMode::parse(value).ok_or_else(|| {
                    Error::bad_param(
                        "count",
                        format!("expected one of {}", CountMode::NAMES.join(", ")),
                    )
                })?;
            }
            "fields" => q.fields = Some(parse_fields_rel(fields, rels, value)?),
            "page" => {
                page_given = true;
                q.page = value
                    .parse::<u32>()
                    .ok()
                    .filter(|p| *p >= 1)
                    .ok_or_else(|| Error::bad_param("page", "expected a whole number from 1 up"))?;
            }
            "page_size" => {
                let n = value
                    .parse::<u32>()
                    .ok()
                    .filter(|p| *p >= 1)
                    .ok_or_else(|| {
                        Error::bad_param(
                            "page_size",
                            format!("expected a whole number from 1 to {max_page_size}"),
                        )
                    })?;
                if n > max_page_size {
                    return Err(Error::bad_param(
                        "page_size",
                        format!("at most {max_page_size} items per page"),
                    ));
                }
                q.page_size = n;
            }
            "sort" => q.sort = parse_sort_rel(fields, rels, value)?,
            _ => match related_param(rels, name) {
                Some((rel, target, rest)) => {
                    let mut c = parse_filter(target, rest, value)?;
                    name.clone_into(&mut c.param);
                    let e = crate::condition::Related::pending(rel, Condition::Is(c));
                    q.filter = Some(match q.filter.take() {
                        Some(prev) => Condition::All(vec![prev, e]),
                        None => e,
                    });
                }
                None => q.conds.push(parse_filter(fields, name, value)?),
            },
        }
    }
    if page_given && q.cursor.is_some() {
        return Err(Error::bad_param(
            "cursor",
            "`cursor` and `page` cannot be combined: a cursor already says where the page starts",
        ));
    }
    Ok(q)
}

/// Whether a query parameter holds a list (`fields`, `<field>__in`): its repeated form
/// (`id__in=a&id__in=b`, as most generated clients send arrays) means the same list as the
/// comma form (`id__in=a,b`).
fn is_list_param(name: &str) -> bool {
    name == "fields"
        || name == "scope"
        || name
            .rsplit_once("__")
            .and_then(|(_, s)| operator(s))
            .is_some_and(|o| matches!(o.value, Value::List))
}

/// A request's query string, read once: its `name=value` pairs as [`query_pairs`] gives them.
/// Every reader of a list or item request (the list parameters, `include_deleted`, `expand`,
/// `scope`) takes its parameter from here.
pub(crate) struct Params(Vec<(String, String)>);

impl Params {
    /// Reads `query` (see [`query_pairs`]).
    ///
    /// # Errors
    ///
    /// A 400 naming `query` for a malformed query string, or the repeated parameter.
    pub(crate) fn of(query: &str) -> Result<Self, Error> {
        query_pairs(query).map(Params)
    }

    /// The value of the parameter `name`, if given (a list parameter given several times comes
    /// joined; `filter`, which may be repeated, is read with [`Params::pairs`]).
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every pair, in the order given.
    pub(crate) fn pairs(&self) -> &[(String, String)] {
        &self.0
    }

    /// Takes the parameter `name` out (one the list parameters do not know, read by another
    /// reader first).
    pub(crate) fn take(&mut self, name: &str) -> Option<String> {
        let i = self.0.iter().position(|(n, _)| n == name)?;
        Some(self.0.remove(i).1)
    }
}

/// The `name=value` pairs of a query string, each name once: the values of a repeated list
/// parameter are joined into one comma-separated list, a repeated `filter` stays repeated
/// (its expressions combine with AND, as documented), and any other repeated name is
/// refused, so that a query never answers another question than the one asked.
///
/// # Errors
///
/// A 400 naming `query` for a malformed query string, or the repeated parameter.
pub(crate) fn query_pairs(query: &str) -> Result<Vec<(String, String)>, Error> {
    let raw: Vec<(String, String)> = serde_urlencoded::from_str(query)
        .map_err(|e| Error::bad_param("query", format!("malformed query string: {e}")))?;
    let mut out: Vec<(String, String)> = Vec::with_capacity(raw.len());
    for (name, value) in raw {
        if name == "filter" {
            out.push((name, value));
            continue;
        }
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some((_, joined)) if is_list_param(&name) => {
                joined.push(',');
                joined.push_str(&value);
            }
            Some(_) => {
                return Err(Error::bad_param(
                    &name,
                    format!(
                        "`{name}` is given more than once; give it once (a list parameter \
                         such as `fields` or `<field>__in` may be repeated)"
                    ),
                ))
            }
            None => out.push((name, value)),
        }
    }
    Ok(out)
}

/// Parses `fields`: a comma-separated list of members each item keeps, where a member may
/// also be a relation of `rels` (`habitat`, the whole embedded object) or a readable field of
/// one (`habitat.name`).
///
/// # Errors
///
/// A 400 naming `fields` and listing every name that is unknown or never returned
/// (`write_only`, passwords).
pub(crate) fn parse_fields_rel(
    fields: &'static [FieldInfo],
    rels: RelFields<'_>,
    value: &str,
) -> Result<Vec<&'static str>, Error> {
    let mut out = Vec::new();
    let mut bad = Vec::new();
    for name in value.split(',').map(str::trim) {
        if let Some((rel, _)) = rels.iter().find(|(r, _)| *r == name) {
            if !out.contains(rel) {
                out.push(*rel);
            }
            continue;
        }
        if let Some((_, target, rest)) = related_param(rels, name) {
            if target.iter().any(|f| f.name == rest && !f.write_only) {
                let name = crate::condition::intern(name);
                if !out.contains(&name) {
                    out.push(name);
                }
            } else {
                bad.push(format!("`{name}`"));
            }
            continue;
        }
        match fields.iter().find(|f| f.name == name && !f.write_only) {
            Some(f) => {
                if !out.contains(&f.name) {
                    out.push(f.name);
                }
            }
            None => bad.push(format!("`{name}`")),
        }
    }
    if !bad.is_empty() {
        return Err(Error::bad_param(
            "fields",
            format!(
                "unknown or unreadable fields: {}; readable fields: {}",
                bad.join(", "),
                names(fields.iter().filter(|f| !f.write_only))
            ),
        ));
    }
    Ok(out)
}

fn parse_sort_rel(
    fields: &'static [FieldInfo],
    rels: RelFields<'_>,
    value: &str,
) -> Result<Vec<Sort>, Error> {
    let mut out = Vec::new();
    // `sort=` (as an empty form field sends it) asks for nothing: the default order.
    if value.trim().is_empty() {
        return Ok(out);
    }
    for part in value.split(',') {
        let part = part.trim();
        let (desc, name) = match part.strip_prefix('-') {
            Some(n) => (true, n),
            None => (false, part.strip_prefix('+').unwrap_or(part)),
        };
        if let Some((_, target, rest)) = related_param(rels, name) {
            if !target.iter().any(|f| f.name == rest && f.comparable()) {
                return Err(Error::bad_param(
                    "sort",
                    format!(
                        "cannot sort by `{name}`; sortable fields of the relation: {}",
                        names(target.iter().filter(|f| f.comparable()))
                    ),
                ));
            }
            out.push(Sort {
                field: crate::condition::intern(name),
                desc,
            });
            continue;
        }
        let field = fields
            .iter()
            .find(|f| f.name == name && f.comparable())
            .ok_or_else(|| {
                Error::bad_param(
                    "sort",
                    format!(
                        "cannot sort by `{name}`; sortable fields: {}",
                        names(fields.iter().filter(|f| f.comparable()))
                    ),
                )
            })?;
        out.push(Sort {
            field: field.name,
            desc,
        });
    }
    Ok(out)
}

fn names<'a>(fields: impl Iterator<Item = &'a FieldInfo>) -> String {
    fields.map(|f| f.name).collect::<Vec<_>>().join(", ")
}

/// Parses one `field[__op]=value` parameter.
///
/// # Errors
///
/// A 400 naming the parameter.
pub(crate) fn parse_filter(
    fields: &'static [FieldInfo],
    name: &str,
    value: &str,
) -> Result<Cond, Error> {
    let (field_name, operator) = match name.rsplit_once("__") {
        Some((f, s)) => match operator(s).filter(|o| !o.suffix.is_empty()) {
            Some(o) => (f, o),
            None => (name, eq_operator()),
        },
        None => (name, eq_operator()),
    };
    let field = fields
        .iter()
        .find(|f| f.name == field_name && f.filterable)
        .ok_or_else(|| {
            Error::bad_param(
                name,
                format!(
                    "unknown filter; filterable fields: {}",
                    names(fields.iter().filter(|f| f.filterable))
                ),
            )
        })?;
    if !operator.applies(field.kind, field.nullable) {
        if field.kind == Kind::Json {
            return Err(Error::bad_param(name, "JSON fields cannot be filtered"));
        }
        let allowed = suffixes(field.kind, field.nullable)
            .iter()
            .map(|x| format!("__{x}"))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(Error::bad_param(
            name,
            format!(
                "`__{}` does not apply to `{}`; it supports equality{}{allowed}",
                operator.suffix,
                field.name,
                if allowed.is_empty() { "" } else { " and " }
            ),
        ));
    }
    let bad = |why: String| Error::bad_param(name, why);
    let (op, arg) = match operator.value {
        Value::Field => (operator.op, parse_arg(field.kind, value).map_err(bad)?),
        Value::Flag => (operator.op, Arg::Bool(parse_bool(value).map_err(bad)?)),
        Value::List => {
            let items = value
                .split(',')
                .map(|v| parse_arg(field.kind, v.trim()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(bad)?;
            (operator.op, Arg::List(items))
        }
        Value::DayStart => parse_bound(field.kind, value, false).map_err(bad)?,
        Value::DayEnd => parse_bound(field.kind, value, true).map_err(bad)?,
        Value::Pattern => {
            let trailing = value.chars().rev().take_while(|c| *c == '\\').count();
            if trailing % 2 == 1 {
                return Err(bad(
                    "a pattern cannot end with a lone escape character `\\`".to_owned(),
                ));
            }
            (operator.op, text_arg(value).map_err(bad)?)
        }
    };
    Ok(Cond {
        field: field.name,
        op,
        arg,
        param: name.to_owned(),
    })
}

/// Plain equality (the operator with no suffix).
fn eq_operator() -> &'static Operator {
    OPERATORS
        .iter()
        .find(|o| o.suffix.is_empty())
        .unwrap_or(&OPERATORS[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::condition::{FromArg, Op};

    static FIELDS: &[FieldInfo] = &[
        FieldInfo::new("id", Kind::Uuid),
        FieldInfo::new("name", Kind::Text),
        FieldInfo::new("level", Kind::Integer),
        FieldInfo::new("born", Kind::DateTime),
        FieldInfo::new("nick", Kind::Text).nullable(),
        FieldInfo::new("secret", Kind::Text).not_filterable(),
        FieldInfo::new("ok", Kind::Bool),
    ];

    fn parse(q: &str) -> Result<ListQuery, Error> {
        parse_list_query(FIELDS, q, 25, 100)
    }

    fn param_of(e: Error) -> String {
        match e {
            Error::BadRequest { field, .. } => field.unwrap_or_default(),
            other => panic!("expected 400, got {other:?}"),
        }
    }

    #[test]
    fn params_are_read_once_decoded_and_joined() {
        let p =
            Params::of("%65xpand=habitat&scope=a&scope=b&include_deleted=true&filter=x&filter=y")
                .unwrap();
        assert_eq!(p.get("expand"), Some("habitat"));
        assert_eq!(p.get("scope"), Some("a,b"));
        assert_eq!(p.get("include_deleted"), Some("true"));
        assert_eq!(p.get("sort"), None);
        // `filter` stays repeated: its expressions are ANDed one by one.
        let filters: Vec<&str> = p
            .pairs()
            .iter()
            .filter(|(n, _)| n == "filter")
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(filters, ["x", "y"]);
        assert_eq!(
            param_of(
                Params::of("include_deleted=true&include_deleted=false")
                    .err()
                    .unwrap()
            ),
            "include_deleted"
        );
    }

    #[test]
    fn a_repeated_list_parameter_is_the_same_list_and_other_repeats_are_refused() {
        let comma = parse("name__in=a,b&fields=id,name").unwrap();
        let repeated = parse("name__in=a&name__in=b&fields=id&fields=name").unwrap();
        assert_eq!(repeated.conds, comma.conds);
        assert_eq!(repeated.fields, Some(vec!["id", "name"]));
        assert_eq!(comma.fields, repeated.fields);
        // Anything else given twice would answer another question: 400 naming it.
        for (q, name) in [
            ("name=a&name=b", "name"),
            ("level__gte=1&level__gte=2", "level__gte"),
            ("page=1&page=2", "page"),
            ("sort=name&sort=-name", "sort"),
        ] {
            assert_eq!(param_of(parse(q).unwrap_err()), name, "{q}");
        }
        // `filter` expressions still combine with AND.
        let q = parse("filter=level%20%3E%201&filter=level%20%3C%205").unwrap();
        assert!(matches!(q.filter, Some(Condition::All(ref parts)) if parts.len() == 2));
    }

    #[test]
    fn defaults() {
        let q = parse("").unwrap();
        assert_eq!((q.page, q.page_size), (1, 25));
        assert!(q.conds.is_empty() && q.sort.is_empty());
    }

    #[test]
    fn page_errors_name_the_parameter() {
        for bad in ["page=0", "page=-1", "page=x"] {
            assert_eq!(param_of(parse(bad).unwrap_err()), "page");
        }
        for bad in ["page_size=0", "page_size=101", "page_size=abc"] {
            assert_eq!(param_of(parse(bad).unwrap_err()), "page_size");
        }
        assert_eq!(parse("page_size=100&page=3").unwrap().offset(), 200);
    }

    #[test]
    fn filters_by_kind() {
        let q = parse("name__ilike=%25ab%25&level__gte=3&ok=true&nick__isnull=true&id__in=00000000-0000-0000-0000-000000000001,00000000-0000-0000-0000-000000000002").unwrap();
        assert_eq!(q.conds.len(), 5);
        assert_eq!(q.conds[0].op, Op::ILike);
        assert_eq!(q.conds[0].arg, Arg::Text("%ab%".into()));
        assert_eq!(q.conds[1].arg, Arg::Int(3));
        assert_eq!(q.conds[2].arg, Arg::Bool(true));
        assert_eq!(q.conds[3].op, Op::IsNull);
        assert!(matches!(&q.conds[4].arg, Arg::List(v) if v.len() == 2));
    }

    #[test]
    fn to_covers_the_whole_day() {
        let q = parse("born__from=2024-01-02&born__to=2024-01-02").unwrap();
        assert_eq!(q.conds[0].op, Op::Gte);
        assert_eq!(q.conds[1].op, Op::Lt);
        let Arg::DateTime(end) = q.conds[1].arg else {
            panic!()
        };
        assert_eq!(end.to_rfc3339(), "2024-01-03T00:00:00+00:00");
    }

    #[test]
    fn bad_filters_name_the_parameter() {
        for (q, p) in [
            ("nope=1", "nope"),
            ("secret=x", "secret"),
            ("level=abc", "level"),
            ("level__like=3", "level__like"),
            ("name__gt=a", "name__gt"),
            ("ok=yes", "ok"),
            ("born__from=01/02/2024", "born__from"),
            ("name__isnull=true", "name__isnull"),
            ("id=not-a-uuid", "id"),
            ("sort=secret", "sort"),
            ("name__like=ab%5C", "name__like"),
            ("name=a%00b", "name"),
            ("name__in=a,%00", "name__in"),
            ("name__ilike=%25%00", "name__ilike"),
        ] {
            assert_eq!(param_of(parse(q).unwrap_err()), p, "{q}");
        }
    }

    #[test]
    fn sort_keys() {
        let q = parse("sort=-level,name").unwrap();
        assert_eq!(
            q.sort,
            vec![
                Sort {
                    field: "level",
                    desc: true
                },
                Sort {
                    field: "name",
                    desc: false
                }
            ]
        );
        assert!(
            parse("sort=").unwrap().sort.is_empty(),
            "empty means the default order"
        );
        assert_eq!(param_of(parse("sort=name,").unwrap_err()), "sort");
    }

    #[test]
    fn list_parameters() {
        let q =
            parse("filter=level%20%3E%201&filter=ok%20%3D%20true&count=none&fields=id,%20name,id")
                .unwrap();
        assert!(matches!(&q.filter, Some(Condition::All(v)) if v.len() == 2));
        assert_eq!(q.count, CountMode::None);
        assert_eq!(q.fields, Some(vec!["id", "name"]));
        assert_eq!(Some(q.condition()), q.filter);
        assert_eq!(parse("cursor=abc").unwrap().cursor.as_deref(), Some("abc"));
        for (bad, p) in [
            ("cursor=abc&page=2", "cursor"),
            ("page=1&cursor=abc", "cursor"),
            ("count=all", "count"),
            ("fields=id,nope", "fields"),
            ("fields=", "fields"),
            ("filter=level%20%3E", "filter"),
        ] {
            assert_eq!(param_of(parse(bad).unwrap_err()), p, "{bad}");
        }
    }

    #[test]
    fn conversions_check_ranges() {
        assert!(i16::from_arg(&Arg::Int(70_000)).is_err());
        assert_eq!(i32::from_arg(&Arg::Int(7)).unwrap(), 7);
    }
}

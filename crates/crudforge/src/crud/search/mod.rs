//! Full-text search over the members a resource declares searchable
//! (`#[resource(search("name", "species"))]`): the condition a `q` parameter becomes for one
//! caller ([`condition`]), and its SQL, as a filter and as the ranking ([`sql`]).
//!
//! The words of `q` (parsed by [`crate::crud::query::search`]) are looked for only in the
//! searchable members the caller may read: every row's members the caller reads everywhere,
//! and, on the caller's own rows, the members an owner's read rule opens to them. The
//! condition is one member of the list's top-level AND, beside the read scope and the other
//! filters, so a search never widens what a caller may list; the same condition serves the
//! list, the export, aggregates and the feed. A list with `q` and no `sort` is ordered by
//! rank ([`RANK`]), best first; its next page continues at the next position of the ranking.
//!
//! A search condition is a [`Cond`] on the pseudo-field [`FIELD`] whose value carries the
//! match text of each backend, made here once: SQLite's FTS5 expression
//! (`{name species} : ("rex" AND "pan"*)`) and PostgreSQL's `tsquery` text
//! (`'rex':AB & 'pan':*AB`), both of words that hold letters and digits only.

pub(crate) mod sql;

use crate::condition::{Arg, Cond, Condition, Op, Sort};
use crate::crud::query::search::Words;
use crate::crud::query::ListQuery;
use crate::crud::rules::read::{reach_of, Reach, Viewer};
use crate::crud::Resource;
use crate::db::search::{MAX_MEMBERS, WEIGHTS};
use crate::error::Error;

/// The pseudo-field of a search condition.
pub const FIELD: &str = "@search";

/// The pseudo-field of the ranking, as a sort key: the best match first.
pub const RANK: &str = "@rank";

/// The sort of a ranked list.
pub(crate) const RANKED: Sort = Sort {
    field: RANK,
    desc: false,
};

/// Whether `sort` is the ranking's.
pub(crate) fn ranked(sort: &[Sort]) -> bool {
    sort.first().is_some_and(|s| s.field == RANK)
}

/// ANDs the search of `q` (its `q` parameter), for `viewer`, into its `filter`; its words stay
/// in `q.search`, which tells the list to rank.
///
/// # Errors
///
/// As [`condition`].
pub(crate) fn apply<R: Resource>(q: &mut ListQuery, viewer: Viewer<'_>) -> Result<(), Error> {
    if let Some(words) = &q.search {
        let found = condition::<R>(words, viewer)?;
        q.filter = Some(match q.filter.take() {
            Some(f) => Condition::All(vec![f, found]),
            None => found,
        });
    }
    Ok(())
}

/// The condition `words` make for `viewer` on `R`: the rows where each word appears in a
/// searchable member the viewer reads there.
///
/// # Errors
///
/// A 400 naming `q`: `R` declares no searchable member, or the viewer reads none of them.
pub(crate) fn condition<R: Resource>(
    words: &Words,
    viewer: Viewer<'_>,
) -> Result<Condition, Error> {
    if R::SEARCH.is_empty() {
        return Err(Error::bad_param(
            crate::crud::query::search::PARAM,
            format!("`{}` has no searchable members", R::NAME),
        ));
    }
    let reach: Vec<(&'static str, Reach)> = R::SEARCH
        .iter()
        .map(|&m| (m, reach_of::<R>(m, viewer)))
        .collect();
    let every: Vec<&'static str> = reach
        .iter()
        .filter(|(_, r)| *r == Reach::Every)
        .map(|(m, _)| *m)
        .collect();
    let mut branches = Vec::new();
    if !every.is_empty() {
        branches.push(Condition::Is(cond::<R>(words, &every)));
    }
    // The rows of each owner field that holds the caller's id: also the members that field's
    // owner reads there.
    let mut owners: Vec<(&'static str, uuid::Uuid)> = Vec::new();
    for (_, r) in &reach {
        if let Reach::Own(field, id) = *r {
            if !owners.iter().any(|(f, _)| *f == field) {
                owners.push((field, id));
            }
        }
    }
    for (field, id) in owners {
        let members: Vec<&'static str> = reach
            .iter()
            .filter(|(_, r)| *r == Reach::Every || matches!(r, Reach::Own(f, _) if *f == field))
            .map(|(m, _)| *m)
            .collect();
        branches.push(Condition::All(vec![
            Condition::Is(Cond::eq(field, Arg::Uuid(id))),
            Condition::Is(cond::<R>(words, &members)),
        ]));
    }
    match branches.len() {
        0 => Err(Error::bad_param(
            crate::crud::query::search::PARAM,
            "you may read none of the searchable members",
        )),
        1 => Ok(branches.remove(0)),
        _ => Ok(Condition::Any(branches)),
    }
}

/// The search condition on `members` (some of `R::SEARCH`, in its order).
fn cond<R: Resource>(words: &Words, members: &[&'static str]) -> Cond {
    let all = members.len() == R::SEARCH.len();
    Cond {
        field: FIELD,
        op: Op::Eq,
        arg: Arg::List(vec![
            Arg::Text(sqlite_match(words, (!all).then_some(members))),
            Arg::Text(pg_query(words, (!all).then(|| weights::<R>(members)))),
            Arg::Int(R::SEARCH.len() as i64),
        ]),
        param: crate::crud::query::search::PARAM.to_owned(),
    }
}

/// The weights of `members` among `R::SEARCH` (`AB`).
fn weights<R: Resource>(members: &[&'static str]) -> String {
    R::SEARCH
        .iter()
        .take(MAX_MEMBERS)
        .zip(WEIGHTS)
        .filter(|(m, _)| members.contains(m))
        .map(|(_, w)| w)
        .collect()
}

/// SQLite's FTS5 expression: every word (a quoted string, `*` after a prefix), within the
/// columns `members` when given.
fn sqlite_match(words: &Words, members: Option<&[&'static str]>) -> String {
    let all = words
        .0
        .iter()
        .map(|w| format!("\"{}\"{}", w.text, if w.prefix { "*" } else { "" }))
        .collect::<Vec<_>>()
        .join(" AND ");
    match members {
        Some(m) => {
            let cols = m
                .iter()
                .map(|c| format!("\"{c}\""))
                .collect::<Vec<_>>()
                .join(" ");
            format!("{{{cols}}} : ({all})")
        }
        None => all,
    }
}

/// PostgreSQL's `tsquery` text: every word, `:*` after a prefix, restricted to the lexemes of
/// `weights` when given.
fn pg_query(words: &Words, weights: Option<String>) -> String {
    let w = weights.unwrap_or_default();
    words
        .0
        .iter()
        .map(|word| {
            let star = if word.prefix { "*" } else { "" };
            if star.is_empty() && w.is_empty() {
                format!("'{}'", word.text)
            } else {
                format!("'{}':{star}{w}", word.text)
            }
        })
        .collect::<Vec<_>>()
        .join(" & ")
}

/// The match texts a search condition carries: SQLite's, PostgreSQL's, and the number of the
/// index's members.
pub(crate) fn texts(c: &Cond) -> Option<(&str, &str, usize)> {
    if c.field != FIELD {
        return None;
    }
    match &c.arg {
        Arg::List(v) => match v.as_slice() {
            [Arg::Text(sqlite), Arg::Text(pg), Arg::Int(n)] => {
                Some((sqlite, pg, usize::try_from(*n).ok()?))
            }
            _ => None,
        },
        _ => None,
    }
}

/// The first search condition of `c`, depth first: the one the ranking scores (the members
/// the caller reads on every row, when there are such members).
pub(crate) fn first(c: &Condition) -> Option<&Cond> {
    match c {
        Condition::Is(c) if c.field == FIELD => Some(c),
        Condition::All(v) | Condition::Any(v) => v.iter().find_map(first),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(q: &str) -> Words {
        Words::parse(q).unwrap().unwrap()
    }

    #[test]
    fn sqlite_match_quotes_every_word_and_names_the_columns_when_restricted() {
        assert_eq!(
            sqlite_match(&words("Rex pan*"), None),
            "\"rex\" AND \"pan\"*"
        );
        assert_eq!(
            sqlite_match(&words("rex"), Some(&["name", "species"])),
            "{\"name\" \"species\"} : (\"rex\")"
        );
    }

    #[test]
    fn pg_query_marks_prefixes_and_weights() {
        assert_eq!(pg_query(&words("Rex pan*"), None), "'rex' & 'pan':*");
        assert_eq!(
            pg_query(&words("rex pan*"), Some("AB".into())),
            "'rex':AB & 'pan':*AB"
        );
    }
}

//! Listing: the INDEX handler, with what only a list has: named filters ([`named_filters`]),
//! the caps on a list request ([`limits`]) and cursors ([`cursor`]).
//!
//! The handler serves a page of items in one read snapshot. The caller's scope, the parent
//! parameters, the list parameters (parsed by [`crate::crud::query`]: the plain parameters and
//! the `filter` expression), the named filters asked for, within the caps, and a cursor's
//! keyset are ANDed into one condition; one row more than the page tells whether a next page
//! exists; items are written straight into the body through the list's view of a row
//! ([`crate::crud::view`]).

pub(crate) mod cursor;
pub(crate) mod limits;
pub(crate) mod named_filters;

use crate::condition::Condition;
use crate::crud::options::Operation;
use crate::crud::query::{ListQuery, Params};
use crate::crud::relations;
use crate::crud::request::{caller_on, parent_conds};
use crate::crud::rules::read::Viewer;
use crate::crud::shared::Shared;
use crate::crud::view::{json, View};
use crate::crud::{Pagination, Resource};
use crate::db::{snapshot, Conn};
use crate::error::Error;
use crate::state::ApiState;
use actix_web::{web, HttpRequest, HttpResponse};

/// How a page's body begins, its items after it.
const DATA_START: &[u8] = b"{\"data\":[";

/// What a list request read: up to one row more than the page, the total when asked for,
/// the parsed query and the page's number.
struct Listed<R> {
    items: Vec<R>,
    /// The embedded members of the page's items, with `expand`.
    extra: Option<Vec<crate::crud::view::Embedded>>,
    total: Option<i64>,
    q: crate::crud::query::ListQuery,
    page: u32,
    /// The rows before the page (a ranked list's next cursor starts after them).
    offset: i64,
    /// The account the page is rendered for (read rules).
    viewer: Option<crate::auth::CurrentUser>,
}

/// The reading part of a list request, on `conn`: the caller, the parameters, the page and
/// its total.
async fn list<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    st: &ApiState,
    conn: &mut Conn,
) -> Result<Listed<R>, Error> {
    use crate::crud::query::CountMode;
    let who = caller_on(shared, req, Operation::Index, conn).await?;
    let params = Params::of(req.query_string())?;
    // The caller's scope first: an anonymous caller the rules refuse gets 401 before any
    // other parameter is judged.
    let rows = who.rows_read::<R>(&params)?;
    let scope = relations::rules::scope_in(&who, shared, req, rows, relations::rules::Kind::Read)?;
    // The planner's estimate is answered only to a caller who reads every row and member.
    let whole_table = scope.is_always() && (R::READ_RULES.is_empty() || who.is_admin());
    let (mut q, expand) = judged_query(shared, &params, st, who.viewer())?;
    if q.search.is_some() && q.sort.is_empty() {
        q.sort.push(crate::crud::search::RANKED);
    }
    let conds = conditions(shared, req, &params, conn, scope, &mut q, who.viewer()).await?;
    let PageAt {
        page,
        offset,
        page_conds,
        total_conds,
    } = window::<R>(st, &q, conds)?;
    // One row more than the page tells whether a next page exists, without a count.
    let items = R::select(
        conn,
        &page_conds,
        &q.sort,
        Some(crate::crud::Window {
            limit: i64::from(q.page_size) + 1,
            offset,
        }),
    )
    .await?;
    let extra = if expand.is_empty() {
        None
    } else {
        let shown = items.len().min(q.page_size as usize);
        let cx = relations::expand::Cx { req, db: &st.db };
        let viewer = who.viewer();
        Some(relations::expand::members::<R>(&cx, conn, &items[..shown], &expand, viewer).await?)
    };
    let total = match q.count {
        CountMode::Estimated if whole_table && !crosses_relations(&total_conds) => {
            Some(R::estimate_count(conn, &total_conds).await?)
        }
        CountMode::Exact | CountMode::Estimated => Some(R::count(conn, &total_conds).await?),
        CountMode::None => None,
    };
    Ok(Listed {
        items,
        extra,
        total,
        q,
        page,
        offset,
        viewer: who.viewer().cloned(),
    })
}

/// Whether `c` filters across a relation (an `EXISTS` on related rows).
///
/// `count=estimated` is the planner's estimate, drawn from statistics over every row of the
/// tables a query reads, those the caller may not read included: deleted rows, other owners'
/// rows and members, related rows outside the related resource's scope. It would tell a
/// caller how many such rows match their filters (a count of 0 is estimated as at least 1,
/// and 200 deleted rows named `Phantom` show as hundreds). So the estimate is answered only
/// when the caller's read scope is every row of the table (for a soft-delete resource, only
/// with `include_deleted=true`), they read every member (no read rules, or an administrator:
/// [`list`] checks both), and no filter crosses a relation; every other caller gets the exact
/// count.
fn crosses_relations(c: &Condition) -> bool {
    use crate::condition::Reach;
    match c {
        Condition::All(v) | Condition::Any(v) => v.iter().any(crosses_relations),
        Condition::Not(inner) => crosses_relations(inner),
        Condition::Is(_) => false,
        // A sort key's carrier selects no rows: it only scopes the related rows looked at.
        Condition::Related(r) => r.reach != Reach::Order,
    }
}

/// The list parameters and the `expand` list of `params`, parsed and judged for `viewer`: the
/// caps, the selectable members, and the members the caller may not read (which cannot be
/// selected, sorted or filtered on).
pub(crate) fn judged_query<R: Resource>(
    shared: &Shared<R>,
    params: &Params,
    st: &ApiState,
    viewer: Viewer<'_>,
) -> Result<(ListQuery, Vec<relations::expand::Expand>), Error> {
    let limits = crate::crud::ListLimits::of(&st.config);
    let expand = relations::expand::parse::<R>(params)?;
    let rels = relations::rel_fields::<R>();
    let mut q = crate::crud::query::parse_list_query_rel(R::FIELDS, &rels, params, &limits)?;
    crate::crud::ListCaps::of(&st.config).check(&q)?;
    let members = shared.ops.get(&Operation::Index).and_then(|o| o.members);
    let own = relations::expand::own_fields::<R>(q.fields.as_deref());
    crate::crud::query::sparse::check_selectable(R::FIELDS, members, own.as_deref())?;
    relations::expand::check_fields::<R>(q.fields.as_deref(), &expand, viewer)?;
    crate::crud::rules::read::check_list::<R>(&mut q, viewer)?;
    // Searched only in the members the caller reads (after `check_list`, which judges the
    // client's own filters).
    crate::crud::search::apply::<R>(&mut q, viewer)?;
    Ok((q, expand))
}

/// Everything the rows must match: the parent parameters, the caller's `scope`, the filters
/// and the filter expression of `q` (taken out of it), the named filters of `params`, and,
/// linked with the related resources' read scopes, the filters across relations.
pub(crate) async fn conditions<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    params: &Params,
    conn: &mut Conn,
    scope: Condition,
    q: &mut ListQuery,
    viewer: Viewer<'_>,
) -> Result<Condition, Error> {
    // The read scope is one member of the top-level AND: no `or` of the caller's can widen it.
    let mut conds = Condition::from(parent_conds(shared, req)?)
        .and(scope)
        .and(std::mem::take(&mut q.conds));
    if let Some(f) = q.filter.take() {
        conds = conds.and(Condition::All(vec![f]));
    }
    if let Some(named) = crate::crud::list::named_filters::requested::<R>(params)? {
        conds = conds.and(named);
    }
    relations::link::<R>(req, conn, conds, &q.sort, viewer).await
}

/// Where the page starts: its number, its offset, and the conditions of the page and of the
/// total.
struct PageAt {
    page: u32,
    offset: i64,
    page_conds: Condition,
    total_conds: Condition,
}

/// The page `q` asks for, by number or by an encrypted cursor. Rows before the cursor are
/// excluded from the page, not from the total.
fn window<R: Resource>(st: &ApiState, q: &ListQuery, conds: Condition) -> Result<PageAt, Error> {
    let Some(token) = &q.cursor else {
        return Ok(PageAt {
            page: q.page,
            offset: q.offset(),
            page_conds: conds.clone(),
            total_conds: conds,
        });
    };
    let key = st.signing_key.expose();
    let at =
        crate::crud::list::cursor::decode(key, R::NAME, R::FIELDS, R::ID_FIELD, &q.sort, token)?;
    if let Some(offset) = crate::crud::list::cursor::ranked_offset(&q.sort, &at) {
        // Ranks move with every write to the index, so no keyset holds a ranked position:
        // the page continues at its place in the ranking.
        return Ok(PageAt {
            page: at.page,
            offset,
            page_conds: conds.clone(),
            total_conds: conds,
        });
    }
    let after = crate::crud::list::cursor::keyset(R::FIELDS, &q.sort, R::ID_FIELD, &at);
    Ok(PageAt {
        page: at.page,
        offset: 0,
        page_conds: conds.clone().and(Condition::All(vec![after])),
        total_conds: conds,
    })
}

/// `GET` of the prefix: one page of the items the caller may read.
pub(crate) async fn index<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    _body: web::Bytes,
) -> Result<HttpResponse, Error> {
    use crate::crud::list::cursor;
    let st = ApiState::of(&req)?;
    // The caller's account, the page and its total are read in one snapshot.
    let Listed {
        mut items,
        extra,
        total,
        q,
        page,
        offset,
        viewer,
    } = snapshot::read(&st.db, async |conn| list(shared, &req, st, conn).await).await?;
    let key = st.signing_key.expose();
    let more = items.len() > q.page_size as usize;
    items.truncate(q.page_size as usize);
    let after = offset.saturating_add(items.len() as i64);
    let next_cursor = match items.last() {
        Some(last) if more => position_of(last, &q.sort, page.saturating_add(1), after)
            .map(|p| cursor::encode(key, R::NAME, &q.sort, &p))
            .transpose()?,
        _ => None,
    };
    let mut out = Vec::with_capacity(64 + items.len() * 256);
    out.extend_from_slice(DATA_START);
    let view = View::new(shared, Operation::Index, viewer.as_ref()).fields(q.fields.as_deref());
    view.each(&st.db, items, extra, |body| {
        if out.len() > DATA_START.len() {
            out.push(b',');
        }
        out.extend_from_slice(body);
        Ok(())
    })
    .await?;
    out.extend_from_slice(b"],\"pagination\":");
    let pagination = Pagination::counted(page, q.page_size, total, next_cursor);
    serde_json::to_writer(&mut out, &pagination).map_err(|e| Error::Internal(e.to_string()))?;
    out.push(b'}');
    Ok(json(actix_web::http::StatusCode::OK, out))
}

/// The cursor position after `row`, the last of the first `offset` rows of the list; `None`
/// when a sort key holds a value no cursor can carry. A ranked list's position is `offset`.
pub(crate) fn position_of<R: Resource>(
    row: &R,
    sort: &[crate::crud::Sort],
    page: u32,
    offset: i64,
) -> Option<crate::crud::list::cursor::Position> {
    let values = crate::crud::list::cursor::keys(sort)
        .iter()
        .map(|k| {
            if k.field == crate::crud::search::RANK {
                Some(Some(crate::condition::Arg::Int(offset)))
            } else {
                row.sort_value(k.field)
            }
        })
        .collect::<Option<Vec<_>>>()?;
    let id = row.sort_value(R::ID_FIELD)??;
    Some(crate::crud::list::cursor::Position { page, values, id })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::condition::{Arg, Cond, Reach, Related};

    fn related(reach: Reach) -> Condition {
        Condition::Related(Related {
            name: "habitat",
            reach,
            cond: Box::new(Condition::always()),
            link: None,
        })
    }

    #[test]
    fn a_filter_across_a_relation_is_found_anywhere_in_the_tree() {
        let plain = Condition::from(Cond::eq("name", Arg::Text("Rex".into())));
        assert!(!crosses_relations(&plain));
        assert!(!crosses_relations(&Condition::always()));
        // A sort key's carrier selects no rows.
        assert!(!crosses_relations(
            &plain.clone().and(related(Reach::Order))
        ));
        for reach in [Reach::Exists, Reach::FirstPerKey(3)] {
            let deep = Condition::Any(vec![
                plain.clone(),
                Condition::Not(Box::new(Condition::All(vec![related(reach)]))),
            ]);
            assert!(crosses_relations(&deep));
        }
    }
}

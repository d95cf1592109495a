//! Reading one row: the row a set of conditions matches, or a second copy of a row by its id.

use crate::condition::{parse_arg, Cond, Condition};
use crate::crud::Resource;
use crate::error::Error;

/// The one row matching `conds`, if any.
pub(crate) async fn select_one<R: Resource>(
    conn: &mut crate::db::Conn,
    conds: &Condition,
) -> Result<Option<R>, Error> {
    let rows = match conds {
        Condition::All(v) if v.iter().all(|c| matches!(c, Condition::Is(_))) => {
            let flat: Vec<Cond> = v
                .iter()
                .filter_map(|c| match c {
                    Condition::Is(c) => Some(c.clone()),
                    _ => None,
                })
                .collect();
            R::select(conn, &flat, &[], Some(crate::crud::Window::first(1))).await?
        }
        _ => R::select(conn, conds, &[], Some(crate::crud::Window::first(1))).await?,
    };
    Ok(rows.into_iter().next())
}

/// A second copy of a row just read or written (models need not be `Clone`), read by its id
/// on the same connection (inside the same transaction).
pub(crate) async fn reload<R: Resource>(conn: &mut crate::db::Conn, item: &R) -> Result<R, Error> {
    let missing = || Error::Internal(format!("a {} row vanished while being written", R::NAME));
    let field = R::field(R::ID_FIELD).ok_or_else(missing)?;
    let key = item.key_of(R::ID_FIELD).ok_or_else(missing)?;
    let arg = parse_arg(field.kind, &key).map_err(|_| missing())?;
    let conds = vec![Cond::eq(field.name, arg)];
    R::select(conn, &conds, &[], Some(crate::crud::Window::first(1)))
        .await?
        .into_iter()
        .next()
        .ok_or_else(missing)
}

/// The row whose id is `key` (as text), if any, on `conn` (inside its transaction), deleted or
/// not.
///
/// # Errors
///
/// Database errors; a key that is not an id of `R` finds nothing.
#[allow(
    dead_code,
    reason = "a door of the seam: a build without optional surfaces leaves it unused"
)]
pub(crate) async fn by_key<R: Resource>(
    conn: &mut crate::db::Conn,
    key: &str,
) -> Result<Option<R>, Error> {
    let Some(field) = R::field(R::ID_FIELD) else {
        return Ok(None);
    };
    let Ok(arg) = parse_arg(field.kind, key) else {
        return Ok(None);
    };
    let conds = vec![Cond::eq(field.name, arg)];
    Ok(
        R::select(conn, &conds, &[], Some(crate::crud::Window::first(1)))
            .await?
            .into_iter()
            .next(),
    )
}

//! Tamper evidence: each resource's entries linked into a hash chain, and its check.
//!
//! Writes do not link their entries (that would make every write to a resource wait for the
//! one before it to commit). A sealing pass ([`seal`], the server's chore `seal_history`, and
//! the first step of `history verify`) links the committed entries not yet linked, in commit
//! order: on PostgreSQL the entries whose transaction is older than the oldest one still
//! running, in the order (transaction, entry), so an entry that commits late sorts after every
//! entry sealed before it; on SQLite, whose writes are serialized, in entry order. Each sealed
//! entry gets its place in its resource's chain (`seq`, from 1), the hash of the entry before
//! it (`prev`, empty for the first) and its own hash: SHA-256 of the entry's columns and those
//! two. [`verify`] recomputes the chain and names the first link that does not hold. Once
//! retention removes a chain's oldest entries, the oldest one kept anchors it.

use super::store::h;
use crate::db::{Conn, Database};
use crate::error::Error;
use crate::with_conn;
use diesel::prelude::*;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// The most entries one sealing transaction links.
const BATCH: i64 = 500;

/// An entry as the chain covers it.
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = h)]
struct Link {
    id: i64,
    resource: String,
    row_key: String,
    action: String,
    actor: Option<String>,
    request_id: Option<String>,
    at: i64,
    state: Option<String>,
    changes: String,
    seq: Option<i64>,
    prev: Option<String>,
    hash: Option<String>,
}

/// The hash of entry `e` at place `seq` after the entry whose hash is `prev`.
fn hash_of(e: &Link, seq: i64, prev: &str) -> Result<String, Error> {
    let fields = serde_json::to_vec(&(
        e.id,
        &e.resource,
        &e.row_key,
        &e.action,
        &e.actor,
        &e.request_id,
        e.at,
        &e.state,
        &e.changes,
        seq,
        prev,
    ))
    .map_err(|err| Error::Internal(format!("hashing a history entry: {err}")))?;
    Ok(format!("{:x}", Sha256::digest(fields)))
}

/// The oldest transaction still running, as PostgreSQL reads it.
#[cfg(feature = "postgres")]
#[derive(QueryableByName)]
struct Xmin {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// The oldest transaction still running on PostgreSQL (entries of older ones are all
/// committed or gone); no bound on SQLite.
async fn horizon(conn: &mut Conn) -> Result<i64, Error> {
    crate::__by_backend!(conn, |c| sqlite => {
        let _ = c;
        Ok(i64::MAX)
    }, postgres => {
        diesel_async::RunQueryDsl::execute(
            diesel::sql_query("SELECT pg_advisory_xact_lock(7349127361)"),
            &mut *c,
        )
        .await?;
        let x: Xmin = diesel_async::RunQueryDsl::get_result(
            diesel::sql_query("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS n"),
            c,
        )
        .await?;
        Ok(x.n)
    })
}

/// Links the committed entries not linked yet into their resources' chains, in batches;
/// how many it linked. One instance seals at a time (PostgreSQL: an advisory lock held by the
/// sealing transaction; SQLite: the write lock).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn seal(db: &Database) -> Result<u64, Error> {
    let mut sealed = 0;
    loop {
        let n = db.in_tx(async |conn| seal_batch(conn).await).await?;
        sealed += n;
        if n < BATCH as u64 {
            return Ok(sealed);
        }
    }
}

/// One sealing transaction's batch.
async fn seal_batch(conn: &mut Conn) -> Result<u64, Error> {
    let horizon = horizon(conn).await?;
    let batch: Vec<Link> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::load(
            h::table
                .filter(h::hash.is_null())
                .filter(h::tx.lt(horizon))
                .order((h::tx, h::id))
                .select(Link::as_select())
                .limit(BATCH),
            c,
        )
        .await
    })?;
    let mut heads: HashMap<String, (i64, String)> = HashMap::new();
    for e in &batch {
        let (seq, prev) = match heads.get(&e.resource) {
            Some(head) => head.clone(),
            None => head(conn, &e.resource).await?,
        };
        let (seq, hash) = (seq + 1, hash_of(e, seq + 1, &prev)?);
        with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::execute(
                diesel::update(h::table.filter(h::id.eq(e.id))).set((
                    h::seq.eq(seq),
                    h::prev.eq(&prev),
                    h::hash.eq(&hash),
                )),
                c,
            )
            .await
        })?;
        heads.insert(e.resource.clone(), (seq, hash));
    }
    Ok(batch.len() as u64)
}

/// The place and hash of the last sealed entry of `resource` (`(0, "")` before the first).
async fn head(conn: &mut Conn, resource: &str) -> Result<(i64, String), Error> {
    let last: Option<(Option<i64>, Option<String>)> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            h::table
                .filter(h::resource.eq(resource))
                .filter(h::seq.is_not_null())
                .order(h::seq.desc())
                .select((h::seq, h::hash))
                .limit(1),
            c,
        )
        .await
        .optional()
    })?;
    Ok(match last {
        Some((Some(seq), Some(hash))) => (seq, hash),
        _ => (0, String::new()),
    })
}

/// What [`verify`] found for one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Checked {
    /// The resource's table.
    pub(crate) resource: String,
    /// How many sealed entries it checked.
    pub(crate) entries: u64,
    /// How many entries wait to be sealed (on PostgreSQL, behind a transaction older than
    /// them that is still running).
    pub(crate) waiting: i64,
    /// The first link that does not hold: the entry's id and place, and why.
    pub(crate) broken: Option<(i64, i64, String)>,
}

/// Checks the chain of every resource with entries (or of `only`), from its oldest entry
/// kept: places follow each other, each entry names the hash of the one before it, and each
/// hash is the hash of its entry.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn verify(db: &Database, only: Option<&str>) -> Result<Vec<Checked>, Error> {
    let mut conn = db.get().await?;
    let mut resources: Vec<String> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::load(h::table.select(h::resource).distinct(), c).await
    })?;
    resources.sort();
    resources.retain(|r| only.is_none_or(|o| o == r));
    let mut out = Vec::new();
    for resource in resources {
        out.push(verify_one(&mut conn, resource).await?);
    }
    Ok(out)
}

/// Checks one resource's chain.
async fn verify_one(conn: &mut Conn, resource: String) -> Result<Checked, Error> {
    let waiting: i64 = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            h::table
                .filter(h::resource.eq(&resource))
                .filter(h::hash.is_null())
                .count(),
            c,
        )
        .await
    })?;
    let mut checked = Checked {
        resource,
        entries: 0,
        waiting,
        broken: None,
    };
    let mut last: Option<(i64, String)> = None;
    let mut after = 0_i64;
    loop {
        let page: Vec<Link> = with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::load(
                h::table
                    .filter(h::resource.eq(&checked.resource))
                    .filter(h::seq.gt(after))
                    .order(h::seq)
                    .select(Link::as_select())
                    .limit(1000),
                c,
            )
            .await
        })?;
        let Some(end) = page.last().and_then(|e| e.seq) else {
            return Ok(checked);
        };
        after = end;
        for e in page {
            let (seq, prev, hash) = (
                e.seq.unwrap_or_default(),
                e.prev.clone().unwrap_or_default(),
                e.hash.clone().unwrap_or_default(),
            );
            let why = match &last {
                Some((s, _)) if seq != s + 1 => Some(format!(
                    "entries are missing before it (place {seq} follows place {s})"
                )),
                Some((_, h)) if &prev != h => {
                    Some("it does not name the hash of the entry before it".to_owned())
                }
                None if seq == 1 && !prev.is_empty() => {
                    Some("the first entry names an entry before it".to_owned())
                }
                _ if hash_of(&e, seq, &prev)? != hash => {
                    Some("its contents do not match its hash (it was changed)".to_owned())
                }
                _ => None,
            };
            if let Some(why) = why {
                checked.broken = Some((e.id, seq, why));
                return Ok(checked);
            }
            checked.entries += 1;
            last = Some((seq, hash));
        }
    }
}

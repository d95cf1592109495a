//! `--paging`: what a page deep in a large list costs with OFFSET and with a cursor.
//!
//! Walks the whole list once with `cursor` to collect the cursor of each page, checks that the
//! cursor pages equal the OFFSET pages, then times page 2 and page `--far-page` both ways,
//! one request at a time over one keep-alive connection (`count=none`, so the figures are the
//! page query alone), without and with an index on `(created_at, id)`.

use crate::client::Client;
use crudforge::{with_conn, Database};
use diesel_async::SimpleAsyncConnection;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Instant;

/// The options of a paging run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Paging {
    /// Items per page.
    pub(crate) page_size: u32,
    /// The deep page measured against page 2.
    pub(crate) far_page: u32,
    /// Timed requests per variant.
    pub(crate) repeats: usize,
}

fn get_json(client: &mut Client, path: &str) -> Result<serde_json::Value, String> {
    let (status, body) = client.get(path).map_err(|e| format!("GET {path}: {e}"))?;
    if status != 200 {
        return Err(format!(
            "GET {path}: {status} {}",
            String::from_utf8_lossy(body)
        ));
    }
    serde_json::from_slice(body).map_err(|e| format!("GET {path}: {e}"))
}

/// The cursors that open pages 2 and `far_page`, by walking the list.
fn cursors(client: &mut Client, p: Paging) -> Result<(String, String), String> {
    let base = format!("/api/critters/?count=none&page_size={}", p.page_size);
    let mut path = base.clone();
    let mut second = None;
    for page in 1..p.far_page {
        let v = get_json(client, &path)?;
        let next = v["pagination"]["next_cursor"]
            .as_str()
            .ok_or_else(|| format!("page {page} has no next_cursor: too few rows"))?
            .to_owned();
        if page == 1 {
            second = Some(next.clone());
        }
        path = format!("{base}&cursor={next}");
        if page + 1 == p.far_page {
            return Ok((second.unwrap_or_default(), next));
        }
    }
    Err("--far-page must be at least 3".into())
}

/// Median and 90th percentile of `repeats` requests of `path`, in milliseconds.
fn time(client: &mut Client, path: &str, repeats: usize) -> Result<(f64, f64), String> {
    let _ = get_json(client, path)?;
    let mut ms = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let t = Instant::now();
        let (status, _) = client.get(path).map_err(|e| e.to_string())?;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
        if status != 200 {
            return Err(format!("GET {path}: {status}"));
        }
    }
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| {
        // Indexes into a non-empty sorted vector.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let i = ((ms.len() - 1) as f64 * q).round() as usize;
        ms[i]
    };
    Ok((at(0.5), at(0.9)))
}

/// One table of the four variants, as Markdown rows.
fn variants(addr: SocketAddr, p: Paging, label: &str) -> Result<String, String> {
    let mut client = Client::connect(addr).map_err(|e| format!("connect: {e}"))?;
    let t = Instant::now();
    let (second, far) = cursors(&mut client, p)?;
    println!(
        "{label}: walked {} pages by cursor in {:.2?}",
        p.far_page - 1,
        t.elapsed()
    );
    let base = format!("/api/critters/?count=none&page_size={}", p.page_size);
    let offset_far = get_json(&mut client, &format!("{base}&page={}", p.far_page))?;
    let cursor_far = get_json(&mut client, &format!("{base}&cursor={far}"))?;
    if offset_far["data"] != cursor_far["data"] {
        return Err(format!(
            "page {} differs between OFFSET and cursor",
            p.far_page
        ));
    }
    let mut out = String::new();
    for (what, path) in [
        ("OFFSET, page 2", format!("{base}&page=2")),
        ("OFFSET, far page", format!("{base}&page={}", p.far_page)),
        ("cursor, page 2", format!("{base}&cursor={second}")),
        ("cursor, far page", format!("{base}&cursor={far}")),
    ] {
        let (p50, p90) = time(&mut client, &path, p.repeats)?;
        let what = what.replace("far page", &format!("page {}", p.far_page));
        let _ = writeln!(out, "| {label} | {what} | {p50:.2} | {p90:.2} |");
    }
    Ok(out)
}

/// Runs the paging measurement against the server at `addr` over `db`'s `critters`.
pub(crate) async fn measure(
    addr: SocketAddr,
    db: &Database,
    p: Paging,
    backend: &str,
) -> Result<String, String> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{backend}, {} items per page, count=none, {} requests per variant\n\n| index | request | p50 ms | p90 ms |\n|---|---|---:|---:|",
        p.page_size, p.repeats
    );
    let label = "none";
    out.push_str(
        &tokio::task::spawn_blocking(move || variants(addr, p, label))
            .await
            .map_err(|e| e.to_string())??,
    );
    let mut conn = db.get().await.map_err(|e| e.to_string())?;
    with_conn!(conn, |c| c
        .batch_execute(
            "CREATE INDEX critters_created_at_id ON critters (created_at, id); ANALYZE critters"
        )
        .await)
    .map_err(|e| format!("index: {e}"))?;
    drop(conn);
    let label = "(created_at, id)";
    out.push_str(
        &tokio::task::spawn_blocking(move || variants(addr, p, label))
            .await
            .map_err(|e| e.to_string())??,
    );
    Ok(out)
}

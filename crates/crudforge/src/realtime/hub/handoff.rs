//! The hand-over of a stream's state between instances on PostgreSQL: a client whose resume
//! lands on an instance that does not hold its stream has that instance ask the others (a
//! `NOTIFY` every instance with streams hears); the one that holds it, live or parked, takes
//! it over (a live stream ends), rewinds it to the event the client names, and leaves it in
//! `crudforge_handoffs` for the asking instance to take, once. The request carries the caller,
//! the view and the token, and the holder checks them as a resume on it would: a foreign or
//! forged id takes nothing and ends nothing.

use super::{Hub, Owner, Resume};
use crate::db::Database;
use crate::error::Error;
use diesel::sql_types::{BigInt, Text};
use diesel::{OptionalExtension, QueryableByName};
use std::time::Duration;

/// The PostgreSQL channel of the requests.
pub(crate) const CHANNEL: &str = "crudforge_handoff";

/// How long the asking instance waits for a state.
const WAIT: Duration = Duration::from_secs(1);

/// How often it looks for one meanwhile.
const LOOK: Duration = Duration::from_millis(25);

/// Hand-overs no one took are deleted after this long.
const STALE_MICROS: i64 = 60_000_000;

/// A request: which stream, whose, at which event.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Ask {
    table: String,
    token: String,
    user: Option<uuid::Uuid>,
    query: String,
    last: i64,
}

/// A state left for the asking instance.
#[derive(QueryableByName)]
struct Handed {
    #[diesel(sql_type = Text)]
    state: String,
}

/// Asks the other instances for the stream `owner` names on the feed of `table`, rewound to
/// the event numbered `last`, and waits up to a second for it. `None` when no instance holds
/// it (or the request would not fit in a notification).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn ask(
    db: &Database,
    table: &str,
    owner: &Owner,
    last: i64,
) -> Result<Option<Resume>, Error> {
    let ask = Ask {
        table: table.to_owned(),
        token: owner.token.clone(),
        user: owner.user,
        query: owner.query.clone(),
        last,
    };
    let payload = serde_json::to_string(&ask).map_err(|e| Error::Internal(e.to_string()))?;
    // PostgreSQL's notifications carry at most 8,000 bytes.
    if payload.len() > 7_900 {
        return Ok(None);
    }
    let mut conn = db.get().await?;
    crate::__by_backend!(conn, |c|
        sqlite => { let _ = c; return Ok(None) },
        postgres => {
            let q = diesel::sql_query("SELECT pg_notify($1, $2)")
                .bind::<Text, _>(CHANNEL)
                .bind::<Text, _>(&payload);
            diesel_async::RunQueryDsl::execute(q, c).await?;
        }
    );
    let until = tokio::time::Instant::now() + WAIT;
    loop {
        tokio::time::sleep(LOOK).await;
        let handed: Option<Handed> = crate::__by_backend!(conn, |c|
            sqlite => { let _ = c; None },
            postgres => {
                let q = diesel::sql_query(
                    "DELETE FROM crudforge_handoffs WHERE token = $1 RETURNING state",
                )
                .bind::<Text, _>(&owner.token);
                diesel_async::RunQueryDsl::get_result(q, c).await.optional()?
            }
        );
        if let Some(h) = handed {
            return Ok(serde_json::from_str(&h.state).ok());
        }
        if tokio::time::Instant::now() >= until {
            return Ok(None);
        }
    }
}

/// Answers a request heard on [`CHANNEL`]: when a feed of this instance holds the stream, it
/// is taken over and left for the asking instance.
pub(crate) async fn answer(hub: &Hub, db: &Database, payload: &str) {
    let Ok(ask) = serde_json::from_str::<Ask>(payload) else {
        return;
    };
    let owner = Owner {
        token: ask.token,
        user: ask.user,
        query: ask.query,
    };
    let Some(resume) = hub.take_over(&ask.table, &owner, ask.last) else {
        return;
    };
    if let Err(e) = leave(db, &owner.token, &resume).await {
        tracing::warn!(target: "crudforge::realtime", error = %e, "handing a stream over failed");
    }
}

/// Leaves `resume` for the instance that asked for the stream `token`.
async fn leave(db: &Database, token: &str, resume: &Resume) -> Result<(), Error> {
    let state = serde_json::to_string(resume).map_err(|e| Error::Internal(e.to_string()))?;
    let now = chrono::Utc::now().timestamp_micros();
    let mut conn = db.get().await?;
    crate::__by_backend!(conn, |c|
        sqlite => { let _ = c; },
        postgres => {
            let stale = diesel::sql_query("DELETE FROM crudforge_handoffs WHERE created_at < $1")
                .bind::<BigInt, _>(now - STALE_MICROS);
            diesel_async::RunQueryDsl::execute(stale, c).await?;
            let q = diesel::sql_query(
                "INSERT INTO crudforge_handoffs (token, state, created_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (token) DO UPDATE SET state = excluded.state, \
                 created_at = excluded.created_at",
            )
            .bind::<Text, _>(token)
            .bind::<Text, _>(&state)
            .bind::<BigInt, _>(now);
            diesel_async::RunQueryDsl::execute(q, c).await?;
        }
    );
    Ok(())
}

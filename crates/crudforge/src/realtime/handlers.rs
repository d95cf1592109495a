//! The feed's handlers (the `realtime` feature): `GET <prefix>events/`, a stream of
//! Server-Sent Events of the rows a subscriber may read under the list's own vocabulary
//! (simple filters, `filter`, `scope=`, `fields=`), and `POST <prefix>events/ticket`, a
//! short-lived single-use ticket standing for the bearer token, for browsers' `EventSource`
//! (which cannot send `Authorization`). What a subscriber receives is `feed`'s.

use crate::auth::RoleGrant;
use crate::condition::Condition;
use crate::crud::options::Operation;
use crate::crud::query::Params;
use crate::crud::relations;
use crate::crud::request::Caller;
use crate::crud::shared::Shared;
use crate::crud::soft_delete::Rows;
use crate::crud::Resource;
use crate::db::{snapshot, Conn};
use crate::error::Error;
use crate::perms::Door;
use crate::realtime::feed::stream::{self, Stream};
use crate::realtime::feed::{Feed, Owner, Resume, Resumes};
use crate::realtime::{Permit, Session, TICKET_TTL};
use crate::state::ApiState;
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use std::sync::Arc;

/// The parameters of the list a feed does not take.
const REFUSED: [&str; 3] = ["expand", "cursor", "include_deleted"];

/// `POST <prefix>events/ticket`: a ticket for `GET <prefix>events/?ticket=...`, standing for
/// the bearer token of this request for a few seconds, once.
pub(crate) async fn ticket<R: Resource>(
    _shared: &Shared<R>,
    req: HttpRequest,
    _body: web::Bytes,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let user = crate::auth::require_user(&req).await?;
    let claims = crate::auth::extract::bearer_claims(&req)?
        .ok_or_else(|| Error::Unauthorized("Authentication required.".into()))?;
    // At most as many outstanding as the user may open streams: a ticket is only good for
    // opening one.
    let ticket = super::hub(st)?.issue_ticket(
        Session {
            user: user.id,
            version: claims.ver.unwrap_or(0),
            expires: claims.exp,
        },
        st.config.ops.realtime_max_streams_per_user,
    )?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(serde_json::json!({
            "ticket": ticket,
            "expires_in": TICKET_TTL.as_secs(),
        })))
}

/// Who subscribes: the user of a `ticket` parameter (redeemed now), or of the bearer token;
/// with the session the stream lives in.
async fn subscriber(
    st: &ApiState,
    req: &HttpRequest,
    params: &mut Params,
    conn: &mut Conn,
) -> Result<(Option<crate::auth::CurrentUser>, Option<Session>), Error> {
    if let Some(t) = params.take("ticket") {
        let unknown =
            || Error::Unauthorized("The stream ticket is unknown, used or expired.".into());
        let session = super::hub(st)?.redeem(&t).ok_or_else(unknown)?;
        let user = crate::auth::extract::session_at(&st.db, session.user, session.version)
            .await?
            .ok_or_else(unknown)?;
        return Ok((Some(user), Some(session)));
    }
    let user = crate::auth::current_user_on(req, conn).await?;
    let session = match (&user, crate::auth::extract::bearer_claims(req)?) {
        (Some(u), Some(c)) => Some(Session {
            user: u.id,
            version: c.ver.unwrap_or(0),
            expires: c.exp,
        }),
        _ => None,
    };
    Ok((user, session))
}

/// What a subscription read in its snapshot.
struct Opened {
    who: Caller,
    session: Option<Session>,
    /// The role grants of the session's user when the view was judged.
    roles: Vec<RoleGrant>,
    /// Its place under the caps on open streams, taken before the view was read.
    permit: Permit,
    conds: Condition,
    fields: Option<Vec<&'static str>>,
    /// The newest settled event when the view was read.
    head: crate::realtime::feed::Pos,
    /// The keys of the view.
    keys: Vec<String>,
    /// Events after `head` that the view already shows.
    skip: Vec<i64>,
}

/// The subscriber, its place under the caps, its view's conditions and members, and the
/// view's keys with the event position they were read at.
async fn open<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    st: &ApiState,
    mut params: Params,
    conn: &mut Conn,
) -> Result<Opened, Error> {
    let (user, session) = subscriber(st, req, &mut params, conn).await?;
    params.take("last_event_id");
    for p in REFUSED {
        if params.get(p).is_some() {
            return Err(Error::bad_param(
                p,
                format!("the event feed does not take `{p}`"),
            ));
        }
    }
    let (who, gated) =
        relations::rules::at_door_for(shared, req, Operation::Index, Door::Feed, user.as_ref())?;
    // The caps before anything of the view is read: a subscription refused with 429 or 503
    // costs the query that found its caller, no more.
    let cfg = &st.config.ops;
    let permit = super::hub(st)?.admit(
        who.user_id(),
        cfg.realtime_max_streams,
        cfg.realtime_max_streams_per_user,
    )?;
    let scope = gated.read_scope(&who, shared, req, Rows::Live)?;
    let (mut q, _) = crate::crud::list::judged_query(shared, &params, st, who.viewer())?;
    let conds =
        crate::crud::list::conditions(shared, req, &params, conn, scope, &mut q, who.viewer())
            .await?;
    let fields = q.fields.take();
    // The position and the view in one snapshot (on PostgreSQL a transaction at `REPEATABLE
    // READ`; each statement would have its own otherwise): every event up to the position,
    // and the visible ones after it whose transactions are not settled yet (passed over when
    // they come), are in the view; every other is delivered.
    let max = st.config.ops.realtime_view_max as usize;
    let postgres = conn.backend() == crate::db::Backend::Postgres;
    if postgres {
        conn.begin(crate::db::TxMode::Serialized).await?;
    } else {
        snapshot::begin(conn).await?;
    }
    let read = async {
        let head = crate::realtime::feed::newest(conn, R::sql_table()).await?;
        let skip = crate::realtime::feed::unsettled(conn, R::sql_table()).await?;
        let rows = R::select(
            conn,
            &conds,
            &[],
            Some(crate::crud::Window::first(max as i64 + 1)),
        )
        .await?;
        Ok::<_, Error>((head, skip, rows))
    }
    .await;
    let (head, skip, rows) = if postgres {
        conn.finish(read).await?
    } else {
        snapshot::finish(conn, read).await?
    };
    if rows.len() > max {
        return Err(Error::bad_param(
            "filter",
            format!("the feed's view holds more than {max} rows; narrow it with filters"),
        ));
    }
    let keys = rows.iter().filter_map(|r| r.key_of(R::ID_FIELD)).collect();
    Ok(Opened {
        who,
        session,
        roles: user.map(|u| u.roles).unwrap_or_default(),
        permit,
        conds,
        fields,
        head,
        keys,
        skip,
    })
}

/// `GET <prefix>events/`: the feed, as `text/event-stream`.
pub(crate) async fn feed<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    _body: web::Bytes,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let feed: Arc<Feed<R>> = shared
        .parts
        .get::<super::Events<R>>()
        .map(|e| e.feed.clone())
        .ok_or_else(|| Error::NotFound("This resource offers no event feed.".into()))?;
    let params = Params::of(req.query_string())?;
    let last_event_id = req
        .headers()
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| params.get("last_event_id").map(str::to_owned));
    // The view's conditions, with the ticket and the resume position taken out: what a
    // parked stream was opened with.
    let query = view_query(&params);
    let opened = {
        let mut conn = st.db.get().await?;
        open(shared, &req, st, params, &mut conn).await?
    };
    let cfg = &st.config.ops;
    #[cfg(feature = "postgres")]
    if st.db.backend() == crate::db::Backend::Postgres {
        if let Some(url) = st.config.db.database_uri.as_deref() {
            super::hub(st)?.listen(url, &st.db);
        }
    }
    let user = opened.who.user_id();
    let mut opening = Vec::new();
    let resumed = match last_event_id.as_deref() {
        Some(id) => resume::<R>(st, &feed, id, user, &query).await?,
        None => None,
    };
    if last_event_id.is_some() && resumed.is_none() {
        opening.extend_from_slice(&stream::reset("resume_unavailable"));
    }
    let (token, start) = match resumed {
        Some(found) => found,
        None => (
            new_token()?,
            Resume {
                keys: opened.keys,
                tx: opened.head.tx,
                id: opened.head.id,
                last: opened.head.id,
                skip: opened.skip,
            },
        ),
    };
    opening.extend_from_slice(&stream::ready(&stream::event_id(start.last, &token)));
    let owner = Owner { token, user, query };
    let view = crate::realtime::feed::View {
        conds: opened.conds,
        viewer: opened.who.viewer().cloned(),
        fields: opened.fields,
    };
    let (sub, rx) = feed.subscribe(
        super::hub(st)?,
        &st.db,
        view,
        owner,
        start,
        cfg.realtime_view_max as usize,
        cfg.realtime_queue as usize,
    );
    let session_every = std::time::Duration::from_secs(cfg.realtime_session_check);
    let heartbeat = std::time::Duration::from_secs(cfg.realtime_heartbeat);
    let s = Stream {
        feed,
        sub,
        rx,
        opening: Some(opening),
        heartbeat,
        wrote: tokio::time::Instant::now(),
        quiet: Box::pin(tokio::time::sleep(heartbeat)),
        closing: super::hub(st)?.closing(),
        session: opened.session.map(|session| stream::Watch {
            session,
            // What the view was judged with: a grant or a revocation since ends the stream.
            roles: opened.roles,
            every: session_every,
            db: st.db.clone(),
        }),
        check: Box::pin(tokio::time::sleep(session_every)),
        resume_for: std::time::Duration::from_secs(cfg.realtime_resume_seconds),
        park_max: cfg.realtime_max_streams as usize,
        park_per_user: cfg.realtime_max_streams_per_user as usize,
        ended: false,
        _permit: opened.permit,
    };
    let body = futures_util::stream::unfold(s, |mut s| async move {
        let chunk = s.next_chunk().await?;
        Some((
            Ok::<_, std::convert::Infallible>(web::Bytes::from(chunk)),
            s,
        ))
    });
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "text/event-stream"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(body))
}

/// A resume with the `Last-Event-ID` `id`: the state of the stream it names, taken over from
/// wherever it is (a stream of this instance, live or parked; on PostgreSQL, another
/// instance's), when it was `user`'s stream of the same view and the id is one its client
/// could have received last; with its token. `None` (a `reset`) otherwise, or when events it
/// would need were pruned since (older than the retention: what it missed is gone).
async fn resume<R: Resource>(
    st: &ApiState,
    feed: &Arc<Feed<R>>,
    id: &str,
    user: Option<uuid::Uuid>,
    query: &str,
) -> Result<Option<(String, Resume)>, Error> {
    let Some((last, token)) = stream::parse_event_id(id) else {
        return Ok(None);
    };
    let owner = Owner {
        token: token.to_owned(),
        user,
        query: query.to_owned(),
    };
    let found = feed.take_over(&owner, last);
    #[cfg(feature = "postgres")]
    let found = match found {
        None if st.db.backend() == crate::db::Backend::Postgres => {
            crate::realtime::hub::handoff::ask(&st.db, R::sql_table(), &owner, last).await?
        }
        found => found,
    };
    let Some(found) = found else {
        return Ok(None);
    };
    let mut conn = st.db.get().await?;
    if !crate::realtime::feed::retained(&mut conn, R::sql_table(), found.pos()).await? {
        return Ok(None);
    }
    Ok(Some((owner.token, found)))
}

/// The query string of the view: every parameter but the ticket and the resume position,
/// sorted, so that the same view asked again matches.
fn view_query(params: &Params) -> String {
    let mut pairs: Vec<String> = params
        .pairs()
        .iter()
        .filter(|(n, _)| n != "ticket" && n != "last_event_id")
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    pairs.sort_unstable();
    pairs.join("&")
}

/// A random stream token.
fn new_token() -> Result<String, Error> {
    let mut raw = [0u8; 12];
    getrandom::fill(&mut raw).map_err(|e| Error::Internal(format!("randomness: {e}")))?;
    Ok(raw.iter().map(|b| format!("{b:02x}")).collect())
}

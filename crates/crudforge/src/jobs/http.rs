//! The administrators' HTTP API for jobs (`Api::jobs_api`): the jobs listed (with the
//! recipient and subject of mails), a failed one retried, a queued one cancelled, the
//! schedules listed and one run now. Every route is for administrators only.

use super::schedule::Schedule;
use super::store::{self, JobState};
use crate::crud::CustomRoute;
use crate::error::Error;
use crate::openapi::{parameter, ApiDoc};
use crate::state::ApiState;
use actix_web::{web, HttpRequest, HttpResponse};
use apistos::paths::{OperationType, ParameterIn};
use chrono::{DateTime, Utc};
use schemars::schema::{InstanceType, NumberValidation, Schema, SchemaObject};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Where the jobs' HTTP API is mounted ([`crate::Api::jobs_api`]), as
/// [`surface_prefix`](crate::crud::route::surface_prefix) writes it.
pub(crate) struct Mounted(pub(crate) String);

/// The tag of the jobs' operations in the description.
const TAG: &str = "Jobs";

/// The kind of the jobs that send mail (the mail feature's).
const MAIL_KIND: &str = "crudforge.mail";

/// Jobs listed when the query names no `limit`.
const DEFAULT_LIMIT: u32 = 100;

/// The most jobs one listing gives.
const MAX_LIMIT: u32 = 500;

/// Who may call every route, for the description.
const CALLERS: &str = "administrators only";

/// A job as the listing answers it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct JobView {
    /// Its number.
    id: i64,
    /// Its handler's kind (`crudforge.mail` for a mail).
    kind: String,
    /// `queued`, `running`, `done`, `failed` or `cancelled`.
    state: String,
    /// Attempts so far.
    attempts: i32,
    /// Attempts allowed.
    max_attempts: i32,
    /// When it is (or was) due.
    run_at: Option<DateTime<Utc>>,
    /// When it was enqueued.
    created_at: Option<DateTime<Utc>>,
    /// When it ended (done, failed or cancelled).
    finished_at: Option<DateTime<Utc>>,
    /// The last failure's message.
    last_error: Option<String>,
    /// The schedule whose tick (or run now) made it.
    schedule: Option<String>,
    /// A mail's recipient.
    #[serde(skip_serializing_if = "Option::is_none")]
    to: Option<String>,
    /// A mail's subject.
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<String>,
    /// Its payload, for a job that is not a mail (a mail's text, which may hold sign-in
    /// links, is never listed).
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<serde_json::Value>,
}

impl JobView {
    /// The view of a listed row.
    fn of(row: store::Listed) -> JobView {
        let payload: Option<serde_json::Value> = serde_json::from_str(&row.payload).ok();
        let (to, subject, payload) = if row.kind == MAIL_KIND {
            let text = |key: &str| {
                payload
                    .as_ref()
                    .and_then(|p| p.get(key))
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_owned)
            };
            (text("to"), text("subject"), None)
        } else {
            (None, None, payload)
        };
        JobView {
            id: row.id,
            kind: row.kind,
            state: row.state,
            attempts: row.attempts,
            max_attempts: row.max_attempts,
            run_at: time(row.run_at),
            created_at: time(row.created_at),
            finished_at: row.finished_at.and_then(time),
            last_error: row.last_error,
            schedule: row.schedule,
            to,
            subject,
            payload,
        }
    }
}

/// A time in microseconds since 1970, as a date and time.
fn time(micros: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_micros(micros)
}

/// The listing: the newest jobs first.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct JobList {
    /// The jobs, newest first.
    items: Vec<JobView>,
}

/// A schedule as the listing answers it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct ScheduleView {
    /// Its name (the server's own begin with `crudforge.`).
    name: String,
    /// When its ticks fall: a cron expression in UTC, or `every N s`.
    when: String,
    /// The kind of the job each tick enqueues.
    kind: String,
    /// The last tick taken, if an instance has seen the schedule.
    last_tick: Option<DateTime<Utc>>,
}

/// The schedules' listing.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct ScheduleList {
    /// Every schedule: the application's, then the server's own.
    items: Vec<ScheduleView>,
}

/// A job whose state a route changed or that a route enqueued.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Changed {
    /// The job's number.
    id: i64,
    /// Its state now.
    state: String,
}

/// The listing's query.
#[derive(Debug, Deserialize)]
struct ListQuery {
    /// Only the jobs in this state.
    state: Option<String>,
    /// Only the jobs of this kind (`crudforge.mail`: the mails).
    kind: Option<String>,
    /// How many at most (1 to 500; 100 when absent).
    limit: Option<u32>,
}

/// The routes of the jobs' API, relative to its prefix; `schedules` are the API's.
pub(crate) fn routes(schedules: &Arc<Vec<Schedule>>) -> Vec<CustomRoute> {
    let run = Arc::clone(schedules);
    let listed = Arc::clone(schedules);
    vec![
        CustomRoute::new(OperationType::Get, "", || web::get().to(list))
            .operation_id("listJobs")
            .summary("List the newest jobs, mails among them")
            .responds::<JobList>()
            .errors(&[401, 403, 422])
            .callers(CALLERS)
            .tag(TAG),
        CustomRoute::new(OperationType::Post, "{id}/retry/", || web::post().to(retry))
            .operation_id("retryJob")
            .summary("Queue a failed or cancelled job again, due now, its attempts afresh")
            .responds::<Changed>()
            .errors(&[401, 403, 404, 409])
            .callers(CALLERS)
            .tag(TAG),
        CustomRoute::new(OperationType::Post, "{id}/cancel/", || {
            web::post().to(cancel)
        })
        .operation_id("cancelJob")
        .summary("Cancel a queued job that no worker has claimed")
        .responds::<Changed>()
        .errors(&[401, 403, 404, 409])
        .callers(CALLERS)
        .tag(TAG),
        CustomRoute::new(OperationType::Get, "schedules/", move || {
            let all = Arc::clone(&listed);
            web::get().to(move |req: HttpRequest| {
                let all = Arc::clone(&all);
                async move { list_schedules(req, &all).await }
            })
        })
        .operation_id("listSchedules")
        .summary("List the schedules and their last ticks")
        .responds::<ScheduleList>()
        .errors(&[401, 403])
        .callers(CALLERS)
        .tag(TAG),
        CustomRoute::new(OperationType::Post, "schedules/{name}/run/", move || {
            let all = Arc::clone(&run);
            web::post().to(move |req: HttpRequest, name: web::Path<String>| {
                let all = Arc::clone(&all);
                async move { run_schedule(req, &all, &name).await }
            })
        })
        .operation_id("runSchedule")
        .summary("Enqueue a schedule's job now, its ticks untouched")
        .responds::<Changed>()
        .status(202)
        .errors(&[401, 403, 404])
        .callers(CALLERS)
        .tag(TAG),
    ]
}

/// Adds the routes under `prefix` to the description, with the listing's query.
pub(crate) fn document(doc: &mut ApiDoc, prefix: &str) {
    let routes = routes(&Arc::default());
    crate::crud::mount::docs::custom::document_routes(doc, prefix, TAG, &routes);
    let words = [
        JobState::Queued,
        JobState::Running,
        JobState::Done,
        JobState::Failed,
        JobState::Cancelled,
    ]
    .map(|s| serde_json::Value::from(s.as_str()));
    let state = Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        enum_values: Some(words.to_vec()),
        ..Default::default()
    });
    let kind = Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        ..Default::default()
    });
    let limit = Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::Integer.into()),
        number: Some(Box::new(NumberValidation {
            minimum: Some(1.0),
            maximum: Some(f64::from(MAX_LIMIT)),
            ..Default::default()
        })),
        ..Default::default()
    });
    if let Some(op) = doc.operation_mut(prefix, OperationType::Get) {
        op.parameters.extend([
            parameter(
                "state",
                ParameterIn::Query,
                false,
                Some("Only the jobs in this state.".to_owned()),
                state,
            ),
            parameter(
                "kind",
                ParameterIn::Query,
                false,
                Some("Only the jobs of this kind (`crudforge.mail`: the mails).".to_owned()),
                kind,
            ),
            parameter(
                "limit",
                ParameterIn::Query,
                false,
                Some(format!(
                    "How many at most, newest first ({DEFAULT_LIMIT} when absent)."
                )),
                limit,
            ),
        ]);
    }
}

/// The API's state when the caller is an administrator: 401 without a token, 403 for
/// another user.
async fn administrator(req: &HttpRequest) -> Result<&ApiState, Error> {
    let st = ApiState::of(req)?;
    let user = crate::auth::require_user(req).await?;
    if !user.is_admin() {
        return Err(Error::Forbidden(
            "Only an administrator manages the jobs.".into(),
        ));
    }
    Ok(st)
}

/// `GET {prefix}`: the newest jobs.
async fn list(req: HttpRequest, query: web::Query<ListQuery>) -> Result<HttpResponse, Error> {
    let st = administrator(&req).await?;
    let query = query.into_inner();
    let state = match query.state.as_deref() {
        None | Some("") => None,
        Some(word) => Some(JobState::parse(word).ok_or_else(|| {
            Error::invalid_field(
                "state",
                "expected queued, running, done, failed or cancelled",
            )
        })?),
    };
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(Error::invalid_field(
            "limit",
            format!("expected 1 to {MAX_LIMIT}"),
        ));
    }
    let kind = query.kind.as_deref().filter(|k| !k.is_empty());
    let rows = store::list_full(&st.db, state, kind, i64::from(limit)).await?;
    Ok(HttpResponse::Ok().json(JobList {
        items: rows.into_iter().map(JobView::of).collect(),
    }))
}

/// The job number in a path; 404 when it is not one.
fn job_id(id: &str) -> Result<i64, Error> {
    id.parse::<i64>()
        .map_err(|_| Error::NotFound(format!("No job {id:?}.").into()))
}

/// Why job `id` was not changed: it does not exist (404), or its state does not allow it
/// (409, `rule` saying which do).
async fn refusal(st: &ApiState, id: i64, rule: &str) -> Error {
    match store::state_of(&st.db, id).await {
        Ok(Some(state)) => Error::Conflict(format!("Job {id} is {state}; {rule}.").into()),
        Ok(None) => Error::NotFound(format!("No job {id}.").into()),
        Err(e) => e,
    }
}

/// `POST {prefix}{id}/retry/`: a failed or cancelled job queued again.
async fn retry(req: HttpRequest, id: web::Path<String>) -> Result<HttpResponse, Error> {
    let st = administrator(&req).await?;
    let id = job_id(&id)?;
    if !store::retry(&st.db, id).await? {
        return Err(refusal(st, id, "only a failed or cancelled job is retried").await);
    }
    Ok(HttpResponse::Ok().json(Changed {
        id,
        state: JobState::Queued.as_str().to_owned(),
    }))
}

/// `POST {prefix}{id}/cancel/`: a queued job cancelled.
async fn cancel(req: HttpRequest, id: web::Path<String>) -> Result<HttpResponse, Error> {
    let st = administrator(&req).await?;
    let id = job_id(&id)?;
    if !store::cancel(&st.db, id).await? {
        return Err(refusal(st, id, "only a queued job is cancelled").await);
    }
    Ok(HttpResponse::Ok().json(Changed {
        id,
        state: JobState::Cancelled.as_str().to_owned(),
    }))
}

/// `GET {prefix}schedules/`: the schedules.
async fn list_schedules(req: HttpRequest, all: &[Schedule]) -> Result<HttpResponse, Error> {
    let st = administrator(&req).await?;
    let items = super::list_schedules(&st.db, all)
        .await?
        .into_iter()
        .map(|s| ScheduleView {
            name: s.name,
            when: s.when,
            kind: s.kind,
            last_tick: s.last_tick.and_then(time),
        })
        .collect();
    Ok(HttpResponse::Ok().json(ScheduleList { items }))
}

/// `POST {prefix}schedules/{name}/run/`: the schedule's job enqueued now.
async fn run_schedule(
    req: HttpRequest,
    all: &[Schedule],
    name: &str,
) -> Result<HttpResponse, Error> {
    let st = administrator(&req).await?;
    let id = super::run_schedule_in(&st.db, all, name).await?;
    Ok(HttpResponse::Accepted().json(Changed {
        id,
        state: JobState::Queued.as_str().to_owned(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mails_recipient_and_subject_are_shown_and_its_text_is_not() {
        let row = |kind: &str, payload: &str| store::Listed {
            id: 1,
            kind: kind.to_owned(),
            payload: payload.to_owned(),
            state: "failed".to_owned(),
            attempts: 1,
            max_attempts: 5,
            run_at: 0,
            last_error: None,
            schedule: None,
            created_at: 0,
            finished_at: None,
        };
        let mail = JobView::of(row(
            MAIL_KIND,
            r#"{"to":"a@example.com","subject":"Hi","text":"secret link"}"#,
        ));
        assert_eq!(mail.to.as_deref(), Some("a@example.com"));
        assert_eq!(mail.subject.as_deref(), Some("Hi"));
        assert!(mail.payload.is_none());
        let other = JobView::of(row("count", r#"{"n":1}"#));
        assert_eq!(other.payload, Some(serde_json::json!({"n": 1})));
        assert!(other.to.is_none());
    }
}

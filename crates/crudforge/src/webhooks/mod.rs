//! Webhooks (the `webhooks` feature), one folder plugged into the core through the seam:
//! subscriptions the application declares ([`Webhook`], `Api::webhook`), each reading the
//! change capture of the resources it names (the events every write records in its
//! transaction, the same a feed reads) in order, each event's row rendered as the
//! subscription's principal's `GET` shows it, signed per Standard Webhooks 1.0, sent at least
//! once with backoff, to endpoints behind a guard against requests into private networks.
//! See [webhooks.md](https://github.com/crudforge/crudforge/blob/main/docs/webhooks.md).
//!
//! | Module | Owns |
//! |---|---|
//! | `part` | the blueprint's `webhooks()`: the capture of its writes, the face subscriptions find it by |
//! | `fanout` | one subscription's reading of the events: rows rendered as its principal, messages added |
//! | `send` | claims with leases under the per-endpoint cap, attempts, backoff, dead letters, disabling |
//! | `sign` | the Standard Webhooks headers and signatures |
//! | `guard` | the endpoint's address checked and pinned, no redirects, no proxy, the timeout |
//! | `store` | the tables and their statements |
//! | `http` | the administrators' HTTP API (`Api::webhooks_api`) |
//!
//! This file holds what the whole API sees: the declaration, the surface (the sender in the
//! background, pruning), the metrics and `Api`'s methods.

mod fanout;
mod guard;
mod http;
mod part;
mod send;
mod sign;
mod store;

pub use crate::realtime::EventKind;

use crate::api::{Api, Chore, Surface};
use crate::error::Error;
use crate::mount::MountError;
use part::Hooked;
use prometheus::IntCounterVec;
use sign::Secret;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

/// A webhook subscription: where messages go, about which resources and events, read as whom,
/// signed with which secrets. Declared with `Api::webhook`, once the blueprints it names are
/// mounted.
///
/// ```
/// use crudforge::webhooks::{EventKind, Webhook};
///
/// let crm = Webhook::new("crm", "https://crm.example.com/hooks/critters")
///     .resource("critters")
///     .on(EventKind::Created)
///     .on(EventKind::Updated)
///     .as_user("integrations@example.com")
///     .secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
/// # let _ = crm;
/// ```
#[derive(Debug, Clone)]
pub struct Webhook {
    name: String,
    url: String,
    resources: Vec<String>,
    kinds: Vec<EventKind>,
    principal: Option<String>,
    secrets: Vec<String>,
}

impl Webhook {
    /// A subscription named `name` (letters, digits, `-` and `_`), sending to `url` (`http` or
    /// `https`).
    #[must_use]
    pub fn new(name: &str, url: &str) -> Webhook {
        Webhook {
            name: name.to_owned(),
            url: url.to_owned(),
            resources: Vec::new(),
            kinds: Vec::new(),
            principal: None,
            secrets: Vec::new(),
        }
    }

    /// Adds a resource, by its table, whose blueprint offers webhooks
    /// (`CrudBlueprint::webhooks`).
    #[must_use]
    pub fn resource(mut self, table: &str) -> Webhook {
        self.resources.push(table.to_owned());
        self
    }

    /// Adds a kind of event sent; none added: every kind.
    #[must_use]
    pub fn on(mut self, kind: EventKind) -> Webhook {
        if !self.kinds.contains(&kind) {
            self.kinds.push(kind);
        }
        self
    }

    /// The principal the rows are read as: the user with this e-mail address. A row it may
    /// not read is never sent, and each message holds what its `GET` of the row shows.
    #[must_use]
    pub fn as_user(mut self, email: &str) -> Webhook {
        self.principal = Some(email.to_owned());
        self
    }

    /// Adds a signing secret, `whsec_` and base64 of at least 24 bytes. Messages carry one
    /// signature per secret: add the new one beside the old while receivers move to it.
    #[must_use]
    pub fn secret(mut self, secret: &str) -> Webhook {
        self.secrets.push(secret.to_owned());
        self
    }
}

/// A declared subscription, checked.
#[derive(Debug)]
pub(crate) struct Sub {
    /// Its name.
    pub(crate) name: String,
    /// Its endpoint.
    pub(crate) url: url::Url,
    /// The resources it reads: each one's table and the path of its items.
    pub(crate) resources: Vec<(&'static str, String)>,
    /// The kinds of events sent (all when empty).
    pub(crate) kinds: Vec<EventKind>,
    /// The e-mail address of its principal.
    pub(crate) principal: String,
    /// Its secrets.
    pub(crate) secrets: Vec<Secret>,
}

impl Sub {
    /// Whether events of `kind` are sent.
    pub(crate) fn sends(&self, kind: EventKind) -> bool {
        self.kinds.is_empty() || self.kinds.contains(&kind)
    }
}

/// The subscriptions an API declares.
#[derive(Clone, Default)]
struct Registry(Vec<Arc<Sub>>);

/// Where a replay starts.
#[derive(Debug, Clone, Copy)]
pub enum Replay {
    /// The messages of this event and those after it (the number in the message's
    /// `webhook-id`, `msg_<name>_<event>`).
    FromEvent(i64),
    /// The messages made at this time or later.
    Since(chrono::DateTime<chrono::Utc>),
}

/// A subscription's state.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WebhookStatus {
    /// Whether its endpoint is sent to.
    pub enabled: bool,
    /// Why not, when it is disabled.
    pub reason: Option<String>,
}

/// One message of a subscription, as the administrators see it.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
#[non_exhaustive]
pub struct Delivery {
    /// Its number.
    pub id: i64,
    /// Its `webhook-id`, the same for every attempt and replay.
    pub msg_id: String,
    /// The event's number.
    pub event_id: i64,
    /// The resource's table.
    pub resource: String,
    /// `created`, `updated`, `deleted` or `restored`.
    pub kind: String,
    /// The row's id.
    pub row_key: String,
    /// `pending`, `delivered` or `dead` (a dead letter: its attempts ran out).
    pub status: String,
    /// Attempts made.
    pub attempts: i32,
    /// When it is tried next (a pending message).
    pub next_attempt: Option<chrono::DateTime<chrono::Utc>>,
    /// The last answer's status code.
    pub last_code: Option<i32>,
    /// What went wrong last, with the start of the answer's body.
    pub last_error: Option<String>,
    /// Milliseconds the last attempt took.
    pub latency_ms: Option<i32>,
}

/// Which messages a listing shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryStatus {
    /// Waiting to be sent (again).
    Pending,
    /// Taken by the endpoint.
    Delivered,
    /// Dead letters: their attempts ran out.
    Dead,
}

impl DeliveryStatus {
    fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => store::PENDING,
            DeliveryStatus::Delivered => store::DELIVERED,
            DeliveryStatus::Dead => store::DEAD,
        }
    }
}

/// Subscription `name`'s messages of `status` (all when `None`), newest first, at most `limit`.
///
/// # Errors
///
/// Database errors.
async fn deliveries(
    db: &crate::db::Database,
    name: &str,
    status: Option<DeliveryStatus>,
    limit: u32,
) -> Result<Vec<Delivery>, Error> {
    let rows = store::list(
        db,
        name,
        status.map(DeliveryStatus::as_str),
        i64::from(limit),
    )
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| Delivery {
            next_attempt: (r.status == store::PENDING)
                .then(|| chrono::DateTime::from_timestamp_micros(r.next_at))
                .flatten(),
            id: r.id,
            msg_id: r.msg_id,
            event_id: r.event_id,
            resource: r.resource,
            kind: r.kind,
            row_key: r.row_key,
            status: r.status,
            attempts: r.attempts,
            last_code: r.last_code,
            last_error: r.last_error,
            latency_ms: r.latency_ms,
        })
        .collect())
}

/// How long the sender waits between two looks when it found nothing to do and no commit
/// woke it (retries falling due, events of writers that announce nothing).
const IDLE: Duration = Duration::from_millis(200);

/// How often a serving API prunes ended messages.
const PRUNE_INTERVAL: Duration = Duration::from_secs(3600);

/// The webhooks' side of the whole API.
pub(crate) struct Webhooks;

impl Surface for Webhooks {
    /// The attempts' metrics are listed from the start, at zero.
    fn start(
        &self,
        _config: &crate::config::Config,
        _ext: &mut crate::state::Extensions,
    ) -> Result<(), crate::config::ConfigError> {
        LazyLock::force(&METRICS);
        Ok(())
    }

    /// The fan-out and the sender, while the API serves.
    fn upkeep<'a>(&self, api: &'a Api) -> Option<futures_util::future::LocalBoxFuture<'a, ()>> {
        let subs = api.ext.get::<Registry>()?.0.clone();
        if subs.is_empty() {
            return None;
        }
        Some(Box::pin(async move {
            let app = actix_web::test::init_service(api.inner_app()).await;
            let mut clients = send::Clients::default();
            // A commit that records events wakes the sender at once: this instance's through
            // the hub, the other instances' on PostgreSQL through its notification.
            let st = api.state();
            let hub = st.ext.get::<Arc<crate::realtime::Hub>>();
            #[cfg(feature = "postgres")]
            if let (Some(hub), crate::db::Backend::Postgres) = (hub, st.db.backend()) {
                if let Some(url) = st.config.db.database_uri.as_deref() {
                    hub.listen(url, &st.db);
                }
            }
            let mut woken = hub.map(|h| h.woken());
            while !api.draining() {
                let worked = pass(api, &app, &subs, &mut clients).await;
                if worked == 0 {
                    match woken.as_mut() {
                        Some(w) => {
                            tokio::select! {
                                _ = w.changed() => {}
                                () = tokio::time::sleep(IDLE) => {}
                            }
                        }
                        None => tokio::time::sleep(IDLE).await,
                    }
                }
            }
        }))
    }

    /// The administrators' HTTP API, when the application mounted it.
    fn register(&self, api: &Api, cfg: &mut actix_web::web::ServiceConfig) {
        if let Some(http::Mounted(prefix)) = api.ext.get::<http::Mounted>() {
            let subs = Arc::new(
                api.ext
                    .get::<Registry>()
                    .map(|r| r.0.clone())
                    .unwrap_or_default(),
            );
            for route in http::routes(&subs) {
                let path = format!("{prefix}{}", route.path);
                cfg.service(actix_web::web::resource(path).route((route.route)()));
            }
        }
    }

    fn document(&self, api: &Api, doc: &mut crate::openapi::ApiDoc) {
        if let Some(http::Mounted(prefix)) = api.ext.get::<http::Mounted>() {
            http::document(doc, prefix);
        }
    }

    fn chores(&self, api: &Api, out: &mut Vec<Chore>) {
        if api.ext.get::<Registry>().is_some_and(|r| !r.0.is_empty()) {
            out.push(Chore {
                name: "prune_webhooks",
                every: PRUNE_INTERVAL,
                run: |api| Box::pin(api.prune_webhooks()),
            });
        }
    }
}

/// One look at every subscription: its new events made messages, its due messages sent;
/// how many of both.
async fn pass<S, B>(api: &Api, app: &S, subs: &[Arc<Sub>], clients: &mut send::Clients) -> usize
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let mut worked = 0;
    for sub in subs {
        match fanout::run(api, app, sub).await {
            Ok(n) => worked += n,
            Err(e) => {
                tracing::warn!(target: "crudforge::webhooks", webhook = %sub.name, error = %e, "reading the events failed");
            }
        }
        match send::run(api, sub, clients).await {
            Ok(n) => worked += n,
            Err(e) => {
                tracing::warn!(target: "crudforge::webhooks", webhook = %sub.name, error = %e, "sending failed");
            }
        }
    }
    worked
}

/// The webhooks' metrics.
pub(crate) struct Metrics {
    /// Attempts, by outcome (`delivered`, `failed`, `dead`).
    pub(crate) attempts: IntCounterVec,
    /// How long attempts took, from the request's start to its answer (or its failure).
    pub(crate) duration: prometheus::Histogram,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    let m = crate::metrics::global();
    let attempts = m.register(IntCounterVec::new(
        prometheus::Opts::new(
            "crudforge_webhook_attempts_total",
            "Webhook attempts, by outcome (delivered, failed, dead).",
        ),
        &["outcome"],
    ));
    for outcome in ["delivered", "failed", "dead"] {
        let _ = attempts.with_label_values(&[outcome]);
    }
    let duration = m.register(prometheus::Histogram::with_opts(
        prometheus::HistogramOpts::new(
            "crudforge_webhook_attempt_duration_seconds",
            "How long webhook attempts took, to the endpoint's answer or the failure.",
        ),
    ));
    Metrics { attempts, duration }
});

/// The webhooks' metrics, registered in the process's registry.
pub(crate) fn metrics() -> &'static Metrics {
    &METRICS
}

impl Api {
    /// Declares a webhook subscription (the `webhooks` feature): after the blueprints it names
    /// are mounted, each with `webhooks()`. From then on every event of those resources is read
    /// in order, its row rendered as the principal's `GET` shows it (a row the principal may
    /// not read is not sent), and sent signed to the endpoint, at least once, by the serving
    /// instances together. A new subscription starts with the events after its first look.
    ///
    /// # Errors
    ///
    /// The name is malformed or taken, the URL is not `http` or `https`, a resource is not
    /// mounted with `webhooks()`, no resource, principal or secret, or a malformed secret.
    pub fn webhook(mut self, hook: Webhook) -> Result<Self, MountError> {
        let fail = |why: String| MountError(format!("webhook {:?}: {why}", hook.name));
        let mut registry = self.ext.get::<Registry>().cloned().unwrap_or_default();
        if hook.name.is_empty()
            || !hook
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(fail("a name is letters, digits, `-` and `_`".into()));
        }
        if registry.0.iter().any(|s| s.name == hook.name) {
            return Err(fail("the name is taken".into()));
        }
        let url = url::Url::parse(&hook.url).map_err(|e| fail(format!("the URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(fail("the URL is not http or https with a host".into()));
        }
        if hook.resources.is_empty() {
            return Err(fail("it names no resource".into()));
        }
        let hooked: Vec<&Hooked> = self
            .mounts()
            .iter()
            .flat_map(|m| m.faces())
            .filter_map(|f| f.downcast_ref::<Hooked>())
            .collect();
        let mut resources = Vec::new();
        for table in &hook.resources {
            let h = hooked.iter().find(|h| h.table == table).ok_or_else(|| {
                fail(format!(
                    "no resource {table} is mounted with `webhooks()` (those that are: {})",
                    hooked
                        .iter()
                        .map(|h| h.table)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
            resources.push((h.table, h.item.clone()));
        }
        let principal = hook
            .principal
            .clone()
            .ok_or_else(|| fail("it has no principal (`as_user`)".into()))?;
        if hook.secrets.is_empty() {
            return Err(fail("it has no secret".into()));
        }
        let secrets = hook
            .secrets
            .iter()
            .map(|s| Secret::parse(s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(fail)?;
        registry.0.push(Arc::new(Sub {
            name: hook.name.clone(),
            url,
            resources,
            kinds: hook.kinds.clone(),
            principal,
            secrets,
        }));
        self.ext.insert(registry);
        Ok(self)
    }

    /// Declares every subscription the configuration names in `WEBHOOKS` (each from its
    /// `WEBHOOK_<NAME>_*` keys), as [`Api::webhook`] does: after the blueprints they name are
    /// mounted.
    ///
    /// # Errors
    ///
    /// What [`Api::webhook`] refuses, and an unknown kind in `_EVENTS`.
    pub fn webhooks_from_config(mut self) -> Result<Self, MountError> {
        for w in self.config().webhooks.clone() {
            let mut hook = Webhook::new(&w.name, &w.url);
            for r in &w.resources {
                hook = hook.resource(r);
            }
            for e in &w.events {
                let kind = EventKind::parse(e).ok_or_else(|| {
                    MountError(format!(
                        "webhook {:?}: WEBHOOK_{}_EVENTS: {e:?} is not created, updated, deleted or restored",
                        w.name,
                        w.name.to_ascii_uppercase()
                    ))
                })?;
                hook = hook.on(kind);
            }
            if let Some(user) = &w.as_user {
                hook = hook.as_user(user);
            }
            for secret in &w.secrets {
                hook = hook.secret(&String::from_utf8_lossy(secret.expose()));
            }
            self = self.webhook(hook)?;
        }
        Ok(self)
    }

    /// Runs the webhooks now, in this task, until nothing is left to do: every subscription's
    /// new events made messages, every due message sent (retries scheduled later are left for
    /// later); how many events and attempts. A serving API does it by itself; this is for
    /// commands, scripts and tests.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn run_webhooks(&self) -> Result<usize, Error> {
        let Some(registry) = self.ext.get::<Registry>() else {
            return Ok(0);
        };
        let subs = registry.0.clone();
        let app = actix_web::test::init_service(self.inner_app()).await;
        let mut clients = send::Clients::default();
        let mut total = 0;
        loop {
            let mut worked = 0;
            for sub in &subs {
                worked += fanout::run(self, &app, sub).await?;
                worked += send::run(self, sub, &mut clients).await?;
            }
            if worked == 0 {
                return Ok(total);
            }
            total += worked;
        }
    }

    /// The state of subscription `name` (`None`: it has not run yet).
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn webhook_status(&self, name: &str) -> Result<Option<WebhookStatus>, Error> {
        Ok(store::state(self.db(), name).await?.map(|s| WebhookStatus {
            enabled: s.enabled,
            reason: s.reason,
        }))
    }

    /// Enables subscription `name`'s endpoint again after it was disabled, its failures
    /// forgotten; whether it exists. A subscription disabled for its backlog reads the events
    /// again from the newest.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn enable_webhook(&self, name: &str) -> Result<bool, Error> {
        store::enable(self.db(), name).await
    }

    /// Sends again subscription `name`'s delivered and dead messages from `from` on (each with
    /// its own `webhook-id`); how many.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn replay_webhook(&self, name: &str, from: Replay) -> Result<u64, Error> {
        let (event, since) = match from {
            Replay::FromEvent(id) => (Some(id), None),
            Replay::Since(t) => (None, Some(t.timestamp_micros())),
        };
        store::replay(self.db(), name, event, since).await
    }

    /// Sends message `id` again (a dead letter, or one delivered); whether it was found.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn redeliver_webhook(&self, id: i64) -> Result<bool, Error> {
        store::redeliver(self.db(), id).await
    }

    /// Subscription `name`'s messages of `status` (all when `None`), newest first, at most
    /// `limit`: with [`DeliveryStatus::Dead`], its dead letters.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn webhook_deliveries(
        &self,
        name: &str,
        status: Option<DeliveryStatus>,
        limit: u32,
    ) -> Result<Vec<Delivery>, Error> {
        deliveries(self.db(), name, status, limit).await
    }

    /// Mounts the administrators' HTTP API for webhooks at `path` (for example
    /// `"/api/webhooks/"`): `GET {path}` lists the subscriptions with their state, `GET
    /// {path}{name}/deliveries/` a subscription's messages (`status`, `limit`), `POST
    /// {path}{name}/enable/` enables its endpoint again, `POST {path}{name}/replay/` sends
    /// messages again from an event or a time, `POST {path}deliveries/{id}/redeliver/` one
    /// message. Every route answers 401 without a token and 403 to a user who is not an
    /// administrator; the operations are in the description (tag `Webhooks`). See
    /// [webhooks.md](https://github.com/crudforge/crudforge/blob/main/docs/webhooks.md).
    #[must_use]
    pub fn webhooks_api(mut self, path: &str) -> Self {
        self.ext
            .insert(http::Mounted(crate::crud::route::surface_prefix(path)));
        self.routes_changed();
        self
    }

    /// Removes the delivered and dead messages older than `WEBHOOKS_KEEP_SECONDS`; how many.
    /// The server does it hourly.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn prune_webhooks(&self) -> Result<u64, Error> {
        let keep = Duration::from_secs(self.config().ops.webhooks_keep_seconds);
        let before =
            store::now_micros().saturating_sub(i64::try_from(keep.as_micros()).unwrap_or(i64::MAX));
        store::prune(self.db(), before).await
    }
}

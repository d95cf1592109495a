//! Webhooks on both backends: a subscription reads the events of the resources it names in
//! order and sends each row as its principal's `GET` shows it (a row the principal may not read
//! never), signed per Standard Webhooks (checked by the reference implementation in the
//! receiver); a rolled-back write sends nothing; failures are retried with the same
//! `webhook-id`, honour `Retry-After`, end in the dead letters and disable the endpoint;
//! replays and redeliveries; private addresses refused unless allowed, redirects not followed;
//! events kept for a subscription that has not read them, up to its backlog; two instances
//! share the work under the per-endpoint cap.
#![allow(missing_docs, clippy::unwrap_used)]

use crudforge::crud::Operation;
use crudforge::users;
use crudforge::webhooks::{DeliveryStatus, EventKind, Replay, Webhook};
use crudforge::{with_conn, Api, Config, Database, Resource};
use crudforge_tests::backend_tests;
use crudforge_tests::http::{auth, send, Req};
use crudforge_tests::parts::{create_table, Part};
use crudforge_tests::receiver::{Answer, Receiver};
use diesel::prelude::*;
use serde_json::json;
use uuid::Uuid;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OLD_SECRET: &str = "whsec_dGhlIG9sZCBzZWNyZXQsIHN0aWxsIGFjY2VwdGVk";

struct World {
    db: Database,
    cfg: Config,
    admin: Uuid,
    alice: Uuid,
    bob: Uuid,
}

/// The database, its users, and the settings every test starts from: loopback allowed,
/// retries at once, three attempts.
async fn world(t: &crudforge_tests::TestDb, more: impl FnOnce(&mut Config)) -> World {
    let cfg = t.config().with(|c| {
        c.auth.bcrypt_cost = 4;
        c.ops.webhooks_allow_networks = vec!["127.0.0.0/8".parse().unwrap()];
        c.ops.webhooks_retry_base = 0;
        c.ops.webhooks_max_attempts = 3;
        c.ops.webhooks_timeout = 5;
        more(c);
    });
    let db = t.open(&cfg).await;
    create_table(&db).await;
    let user = |email: &'static str| {
        let db = db.clone();
        async move {
            users::create_user(&db, email, "some-pass", true, 4)
                .await
                .unwrap()
        }
    };
    let admin = user("admin@example.com").await;
    users::grant_role(&db, admin, "ADMIN", None).await.unwrap();
    let alice = user("alice@example.com").await;
    let bob = user("bob@example.com").await;
    World {
        db,
        cfg,
        admin,
        alice,
        bob,
    }
}

/// The API with parts mounted (webhooks on) and `hooks` declared.
fn api(w: &World, hooks: Vec<Webhook>) -> Api {
    let mut api = Api::new(w.cfg.clone(), w.db.clone())
        .unwrap()
        .mount(
            Part::blueprint("/api/parts/")
                .webhooks()
                .batch([Operation::Patch]),
        )
        .unwrap();
    for h in hooks {
        api = api.webhook(h).unwrap();
    }
    api
}

/// Alice's subscription to parts at `url`.
fn alices(url: &str) -> Webhook {
    Webhook::new("alices", url)
        .resource("parts")
        .as_user("alice@example.com")
        .secret(SECRET)
}

/// Creates a part as `user`; its id.
async fn create<S, B>(app: &S, api: &Api, user: Uuid, label: &str) -> String
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let (status, body) = send(
        app,
        auth(Req::post().uri("/api/parts/"), api, user)
            .set_json(json!({"name": label, "qty": 1, "stocked": true})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

/// Runs the webhooks until `done` holds (at most a minute): on PostgreSQL, events are read
/// once every transaction older than theirs has ended, and other tests' transactions run on
/// the same server.
async fn until(api: &Api, what: &str, mut done: impl AsyncFnMut() -> bool) {
    for _ in 0..600 {
        api.run_webhooks().await.unwrap();
        if done().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("never happened: {what}");
}

/// The event number in a message's id (`msg_<name>_<event>`).
fn event_of(id: &str) -> i64 {
    id.rsplit('_').next().unwrap().parse().unwrap()
}

/// The one number `sql` (`SELECT count(*) AS n ...`) gives on `db`.
async fn count(db: &Database, sql: &str) -> i64 {
    #[derive(QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut conn = db.get().await.unwrap();
    let q = diesel::sql_query(sql);
    let n: N = with_conn!(conn, |c| diesel_async::RunQueryDsl::get_result(q, c).await).unwrap();
    n.n
}

/// The places the subscriptions have read parts' events up to.
async fn readers(db: &Database) -> i64 {
    count(
        db,
        "SELECT count(*) AS n FROM crudforge_event_readers WHERE resource = 'parts'",
    )
    .await
}

/// The events of parts still recorded.
async fn events_kept(db: &Database) -> i64 {
    count(
        db,
        "SELECT count(*) AS n FROM crudforge_events WHERE resource = 'parts'",
    )
    .await
}

backend_tests! {
    async fn a_subscription_sends_what_its_principal_reads_signed(t) {
        let w = world(&t, |_| {}).await;
        let rx = Receiver::start(SECRET);
        let admins = Webhook::new("admins", &rx.url())
            .resource("parts")
            .on(EventKind::Updated)
            .as_user("admin@example.com")
            .secret(SECRET);
        let api = api(&w, vec![alices(&rx.url()), admins]);
        // The first look starts each subscription after the newest event.
        let app = actix_web::test::init_service(api.app()).await;
        api.run_webhooks().await.unwrap();
        let a = create(&app, &api, w.alice, "alice's").await;
        let b = create(&app, &api, w.bob, "bob's").await;
        let (status, _) = send(&app, auth(Req::patch().uri(&format!("/api/parts/{a}")), &api, w.admin)
            .set_json(json!({"staff_note": "fragile"}))).await;
        assert_eq!(status, 200);
        let (status, _) = send(&app, auth(Req::patch().uri(&format!("/api/parts/{b}")), &api, w.bob)
            .set_json(json!({"name": "bob's, renamed"}))).await;
        assert_eq!(status, 200);
        until(&api, "four messages", async || rx.received().len() >= 4).await;
        let mut got = rx.received();
        got.sort_by_key(|m| event_of(&m.id));
        let alice_got: Vec<_> = got.iter().filter(|m| m.id.starts_with("msg_alices_")).collect();
        let kinds: Vec<(&str, &str)> = alice_got.iter()
            .map(|m| (m.body["type"].as_str().unwrap(), m.body["data"]["id"].as_str().unwrap()))
            .collect();
        assert_eq!(kinds, vec![("parts.created", a.as_str()), ("parts.updated", a.as_str())], "{got:?}");
        for m in &got {
            assert!(m.verified, "the reference implementation refused {m:?}");
        }
        // Alice reads no staff note; the administrator's subscription (updates only) does,
        // and reads Bob's part too.
        assert!(alice_got.iter().all(|m| m.body["data"].get("staff_note").is_none()), "{alice_got:?}");
        let admin_got: Vec<_> = got.iter().filter(|m| m.id.starts_with("msg_admins_")).collect();
        assert_eq!(admin_got.len(), 2, "{admin_got:?}");
        assert_eq!(admin_got[0].body["data"]["staff_note"], "fragile");
        assert_eq!(admin_got[1].body["data"]["name"], "bob's, renamed");
        // Deletions: Alice hears of hers (its id only), never of Bob's.
        for (id, user) in [(&a, w.alice), (&b, w.bob)] {
            let (status, _) = send(&app, auth(Req::delete().uri(&format!("/api/parts/{id}")), &api, user)).await;
            assert_eq!(status, 204);
        }
        until(&api, "a deletion", async || rx.received().len() >= 5).await;
        api.run_webhooks().await.unwrap();
        let deleted: Vec<_> = rx.received().into_iter()
            .filter(|m| m.body["type"] == "parts.deleted")
            .collect();
        assert_eq!(deleted.len(), 1, "{deleted:?}");
        assert_eq!(deleted[0].body["data"], json!({"id": a}));
        assert!(deleted[0].id.starts_with("msg_alices_"));
        // Every message was taken, once.
        let delivered = api.webhook_deliveries("alices", Some(DeliveryStatus::Delivered), 100).await.unwrap();
        assert_eq!(delivered.len(), 3);
        assert!(delivered.iter().all(|d| d.attempts == 1 && d.last_code == Some(204)));
        // Ended messages older than WEBHOOKS_KEEP_SECONDS (a week) are pruned; younger kept.
        assert_eq!(api.prune_webhooks().await.unwrap(), 0);
        let week_and_a_day = 8 * 86_400 * 1_000_000_i64;
        let age = format!("UPDATE crudforge_webhook_deliveries SET done_at = done_at - {week_and_a_day} WHERE webhook = 'alices'");
        let mut conn = w.db.get().await.unwrap();
        with_conn!(conn, |c| diesel_async::RunQueryDsl::execute(diesel::sql_query(age.as_str()), c).await).unwrap();
        drop(conn);
        assert_eq!(api.prune_webhooks().await.unwrap(), 3);
        assert!(api.webhook_deliveries("alices", None, 100).await.unwrap().is_empty());
        assert_eq!(api.webhook_deliveries("admins", None, 100).await.unwrap().len(), 2);
    }

    async fn a_rolled_back_write_sends_nothing(t) {
        let w = world(&t, |_| {}).await;
        let rx = Receiver::start(SECRET);
        let api = api(&w, vec![alices(&rx.url())]);
        let app = actix_web::test::init_service(api.app()).await;
        api.run_webhooks().await.unwrap();
        let a = create(&app, &api, w.alice, "one").await;
        let b = create(&app, &api, w.bob, "two").await;
        // A batch with a part Alice may not write: the whole batch rolls back.
        let (status, _) = send(&app, auth(Req::patch().uri("/api/parts/batch/"), &api, w.alice)
            .set_json(json!([{"id": a, "name": "one, renamed"}, {"id": b, "name": "not hers"}]))).await;
        assert!(status >= 400, "{status}");
        // A write after it: once its message is in, every event before it has been read.
        let (status, _) = send(&app, auth(Req::patch().uri(&format!("/api/parts/{a}")), &api, w.alice)
            .set_json(json!({"name": "after"}))).await;
        assert_eq!(status, 200);
        until(&api, "the later write's message", async || rx.received().len() >= 2).await;
        api.run_webhooks().await.unwrap();
        let mut got = rx.received();
        got.sort_by_key(|m| event_of(&m.id));
        let said: Vec<(&str, &str)> = got.iter()
            .map(|m| (m.body["type"].as_str().unwrap(), m.body["data"]["id"].as_str().unwrap()))
            .collect();
        assert_eq!(said, vec![("parts.created", a.as_str()), ("parts.updated", a.as_str())], "{got:?}");
        assert!(!format!("{got:?}").contains("one, renamed"));
    }

    async fn failures_are_retried_then_dead_and_can_be_sent_again(t) {
        let w = world(&t, |_| {}).await;
        let rx = Receiver::start(SECRET);
        // Two secrets while one replaces the other: the receiver knows the new one only.
        let api = api(&w, vec![alices(&rx.url()).secret(OLD_SECRET)]);
        let app = actix_web::test::init_service(api.app()).await;
        api.run_webhooks().await.unwrap();
        rx.script([Answer::status(503), Answer::status(500)]);
        let a = create(&app, &api, w.alice, "retried").await;
        until(&api, "three attempts", async || rx.received().len() >= 3).await;
        let got = rx.received();
        assert_eq!(got.iter().map(|m| m.answered).collect::<Vec<_>>(), vec![503, 500, 204]);
        assert!(got.iter().all(|m| m.id == got[0].id && m.verified), "{got:?}");
        assert_eq!(got[0].signature.split(' ').count(), 2);
        // Its attempts run out: a dead letter, with the last answer.
        rx.always(Some(Answer::status(500)));
        create(&app, &api, w.alice, "dead").await;
        until(&api, "a dead letter", async || rx.received().len() >= 6).await;
        let dead = api.webhook_deliveries("alices", Some(DeliveryStatus::Dead), 10).await.unwrap();
        assert_eq!(dead.len(), 1, "{dead:?}");
        assert_eq!((dead[0].attempts, dead[0].last_code), (3, Some(500)));
        assert!(dead[0].last_error.as_deref().unwrap().contains("answer 500"), "{dead:?}");
        // Sent again by hand, with the same id.
        rx.always(None);
        assert!(api.redeliver_webhook(dead[0].id).await.unwrap());
        api.run_webhooks().await.unwrap();
        let last = rx.received().pop().unwrap();
        assert_eq!((last.id.as_str(), last.answered), (dead[0].msg_id.as_str(), 204));
        // A replay from the first event sends both again, each with its own id.
        let first = got[0].id.rsplit('_').next().unwrap().parse::<i64>().unwrap();
        let before = rx.received().len();
        assert_eq!(api.replay_webhook("alices", Replay::FromEvent(first)).await.unwrap(), 2);
        api.run_webhooks().await.unwrap();
        let again: Vec<String> = rx.received()[before..].iter().map(|m| m.id.clone()).collect();
        assert_eq!(again.len(), 2);
        assert!(again.contains(&got[0].id) && again.contains(&dead[0].msg_id), "{again:?}");
        // `Retry-After` holds the next attempt back.
        rx.script([Answer { status: 429, retry_after: Some("3600".into()) }]);
        let (status, _) = send(&app, auth(Req::patch().uri(&format!("/api/parts/{a}")), &api, w.alice)
            .set_json(json!({"name": "later"}))).await;
        assert_eq!(status, 200);
        let sent = rx.received().len();
        until(&api, "the 429", async || rx.received().len() > sent).await;
        let pending = api.webhook_deliveries("alices", Some(DeliveryStatus::Pending), 10).await.unwrap();
        assert_eq!(pending.len(), 1, "{pending:?}");
        let wait = pending[0].next_attempt.unwrap() - chrono::Utc::now();
        assert!(wait > chrono::Duration::seconds(3500), "{wait}");
    }

    async fn an_endpoint_that_keeps_failing_is_disabled(t) {
        let w = world(&t, |c| { c.ops.webhooks_disable_after = 2; c.ops.webhooks_max_attempts = 8; }).await;
        let rx = Receiver::start(SECRET);
        let api = api(&w, vec![alices(&rx.url())]);
        let app = actix_web::test::init_service(api.app()).await;
        api.run_webhooks().await.unwrap();
        rx.always(Some(Answer::status(500)));
        create(&app, &api, w.alice, "one").await;
        until(&api, "two failures", async || rx.received().len() >= 2).await;
        api.run_webhooks().await.unwrap();
        assert_eq!(rx.received().len(), 2);
        let status = api.webhook_status("alices").await.unwrap().unwrap();
        assert!(!status.enabled);
        assert!(status.reason.as_deref().unwrap().contains("2 failed attempts in a row"), "{status:?}");
        // Disabled, it sends nothing; its messages wait.
        create(&app, &api, w.alice, "two").await;
        api.run_webhooks().await.unwrap();
        assert_eq!(rx.received().len(), 2);
        rx.always(None);
        assert!(api.enable_webhook("alices").await.unwrap());
        until(&api, "both sent", async || rx.received().iter().filter(|m| m.answered == 204).count() >= 2).await;
        assert_eq!(rx.received().iter().filter(|m| m.answered == 204).count(), 2);
        // `410 Gone` disables it at once.
        rx.script([Answer::status(410)]);
        create(&app, &api, w.alice, "three").await;
        until(&api, "the 410", async || rx.received().iter().any(|m| m.answered == 410)).await;
        let status = api.webhook_status("alices").await.unwrap().unwrap();
        assert_eq!(status.reason.as_deref(), Some("the endpoint answered 410 Gone"));
    }

    async fn private_addresses_are_refused_and_redirects_not_followed(t) {
        let w = world(&t, |c| c.ops.webhooks_allow_networks = Vec::new()).await;
        let rx = Receiver::start(SECRET);
        let api = api(&w, vec![alices(&rx.url())]);
        let app = actix_web::test::init_service(api.app()).await;
        api.run_webhooks().await.unwrap();
        create(&app, &api, w.alice, "one").await;
        until(&api, "a dead letter", async || {
            !api.webhook_deliveries("alices", Some(DeliveryStatus::Dead), 10).await.unwrap().is_empty()
        }).await;
        assert!(rx.received().is_empty());
        let dead = api.webhook_deliveries("alices", Some(DeliveryStatus::Dead), 10).await.unwrap();
        let error = dead[0].last_error.clone().unwrap();
        assert!(error.contains("127.0.0.1") && error.contains("WEBHOOKS_ALLOW_NETWORKS"), "{error}");
        // Allowed, a redirect is an answer like any other: not followed.
        let w2 = World { cfg: w.cfg.clone().with(|c| c.ops.webhooks_allow_networks = vec!["127.0.0.1/32".parse().unwrap()]), ..w };
        let api = api_again(&w2, &rx);
        rx.script([Answer { status: 307, retry_after: None }]);
        assert!(api.redeliver_webhook(dead[0].id).await.unwrap());
        api.run_webhooks().await.unwrap();
        let got = rx.received();
        assert_eq!(got.iter().map(|m| m.answered).collect::<Vec<_>>(), vec![307, 204], "{got:?}");
    }

    async fn events_wait_for_a_subscription_up_to_its_backlog(t) {
        let w = world(&t, |c| {
            c.ops.realtime_retention_events = 1;
            c.ops.realtime_retention_seconds = 1;
            c.ops.realtime_resume_seconds = 0;
            c.ops.webhooks_backlog_max = 3;
        }).await;
        let rx = Receiver::start(SECRET);
        let api = api(&w, vec![alices(&rx.url())]);
        let app = actix_web::test::init_service(api.app()).await;
        api.run_webhooks().await.unwrap();
        for n in 0..3 {
            create(&app, &api, w.alice, &format!("part {n}")).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        api.prune_events().await.unwrap();
        assert_eq!(events_kept(&w.db).await, 3);
        until(&api, "three messages", async || rx.received().len() >= 3).await;
        // Its endpoint disabled, messages pile up to the backlog; then it is stopped and the
        // events no longer wait.
        rx.always(Some(Answer::status(410)));
        for n in 3..9 {
            create(&app, &api, w.alice, &format!("part {n}")).await;
        }
        until(&api, "the backlog's end", async || {
            api.webhook_status("alices").await.unwrap().unwrap().reason.is_some_and(|r| r.contains("BACKLOG"))
        }).await;
        let status = api.webhook_status("alices").await.unwrap().unwrap();
        assert!(status.reason.as_deref().unwrap().contains("WEBHOOKS_BACKLOG_MAX"), "{status:?}");
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        api.prune_events().await.unwrap();
        assert_eq!(events_kept(&w.db).await, 1);
    }

    async fn two_instances_share_the_work_under_the_cap(t) {
        let w = world(&t, |c| c.ops.webhooks_in_flight = 2).await;
        let rx = Receiver::start(SECRET);
        let one = api(&w, vec![alices(&rx.url())]);
        let two = api(&w, vec![alices(&rx.url())]);
        let app = actix_web::test::init_service(one.app()).await;
        one.run_webhooks().await.unwrap();
        let mut ids = Vec::new();
        for n in 0..12 {
            ids.push(create(&app, &one, w.alice, &format!("part {n}")).await);
        }
        let (a, b) = futures_util::join!(one.run_webhooks(), two.run_webhooks());
        a.unwrap();
        b.unwrap();
        until(&one, "twelve messages", async || rx.received().len() >= 12).await;
        let got = rx.received();
        let mut sent: Vec<String> = got.iter().map(|m| m.body["data"]["id"].as_str().unwrap().to_owned()).collect();
        sent.sort();
        ids.sort();
        assert_eq!(sent, ids, "each event sent once");
        assert!(rx.most_at_once() <= 2, "{}", rx.most_at_once());
    }

    async fn a_subscription_declared_in_the_configuration_sends(t) {
        let rx = Receiver::start(SECRET);
        let url = rx.url();
        let env = move |k: &str| match k {
            "WEBHOOKS" => Some("ops".to_owned()),
            "WEBHOOK_OPS_URL" => Some(url.clone()),
            "WEBHOOK_OPS_RESOURCES" => Some("parts".to_owned()),
            "WEBHOOK_OPS_EVENTS" => Some("created".to_owned()),
            "WEBHOOK_OPS_AS_USER" => Some("alice@example.com".to_owned()),
            "WEBHOOK_OPS_SECRETS" => Some(format!("{OLD_SECRET},{SECRET}")),
            _ => None,
        };
        let declared = Config::from_lookup(&env).unwrap().webhooks;
        let w = world(&t, |c| c.webhooks = declared).await;
        let api = api(&w, Vec::new()).webhooks_from_config().unwrap();
        let app = actix_web::test::init_service(api.app()).await;
        api.run_webhooks().await.unwrap();
        let a = create(&app, &api, w.alice, "configured").await;
        let (status, _) = send(&app, auth(Req::patch().uri(&format!("/api/parts/{a}")), &api, w.alice)
            .set_json(json!({"name": "renamed"}))).await;
        assert_eq!(status, 200);
        until(&api, "a message", async || !rx.received().is_empty()).await;
        api.run_webhooks().await.unwrap();
        let got = rx.received();
        assert_eq!(got.len(), 1, "updates are not among its events: {got:?}");
        assert!(got[0].verified && got[0].id.starts_with("msg_ops_"), "{got:?}");
        assert_eq!(got[0].body["type"], "parts.created");
        // The row as it is when the event is read: renamed by then.
        assert_eq!(got[0].body["data"]["name"], "renamed");
        // A kind that does not exist stops the declaration.
        let bad = Config::from_lookup(|k| match k {
            "WEBHOOK_OPS_EVENTS" => Some("renamed".to_owned()),
            other => env(other),
        }).unwrap().webhooks;
        let w2 = World { cfg: w.cfg.clone().with(|c| c.webhooks = bad), ..w };
        let e = api_of(&w2).webhooks_from_config().err().unwrap().to_string();
        assert!(e.contains("WEBHOOK_OPS_EVENTS") && e.contains("renamed"), "{e}");
    }

    async fn a_serving_api_sends_by_itself(t) {
        let w = world(&t, |_| {}).await;
        let rx = Receiver::start(SECRET);
        let api = api(&w, vec![alices(&rx.url())]);
        let server = api.server("127.0.0.1:0").unwrap();
        let handle = server.handle();
        actix_web::rt::spawn(server);
        // Its first look starts the subscription; what is written after it is sent.
        for _ in 0..600 {
            if readers(&w.db).await == 1 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(readers(&w.db).await, 1);
        let app = actix_web::test::init_service(api.app()).await;
        let id = create(&app, &api, w.alice, "served").await;
        for _ in 0..1200 {
            if !rx.received().is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        handle.stop(false).await;
        let got = rx.received();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].body["data"]["id"], id);
        assert!(got[0].verified);
    }

    async fn administrators_manage_subscriptions_over_http(t) {
        let w = world(&t, |c| { c.ops.webhooks_max_attempts = 1; c.ops.metrics_enabled = true; }).await;
        let rx = Receiver::start(SECRET);
        let api = api(&w, vec![alices(&rx.url())]).webhooks_api("/api/webhooks/");
        let app = actix_web::test::init_service(api.app()).await;
        api.run_webhooks().await.unwrap();
        rx.script([Answer::status(500)]);
        create(&app, &api, w.alice, "one").await;
        until(&api, "a dead letter", async || !rx.received().is_empty()).await;
        let (status, _) = send(&app, Req::get().uri("/api/webhooks/")).await;
        assert_eq!(status, 401);
        let (status, _) = send(&app, auth(Req::get().uri("/api/webhooks/"), &api, w.alice)).await;
        assert_eq!(status, 403);
        let (status, list) = send(&app, auth(Req::get().uri("/api/webhooks/"), &api, w.admin)).await;
        assert_eq!(status, 200, "{list}");
        let item = &list["items"][0];
        assert_eq!((item["name"].as_str(), item["enabled"].as_bool()), (Some("alices"), Some(true)), "{list}");
        assert_eq!(item["resources"], json!(["parts"]));
        assert!(!list.to_string().contains("whsec_"), "secrets are never listed");
        let (status, dead) = send(&app, auth(Req::get().uri("/api/webhooks/alices/deliveries/?status=dead"), &api, w.admin)).await;
        assert_eq!(status, 200, "{dead}");
        let one = &dead["items"][0];
        assert_eq!((one["status"].as_str(), one["last_code"].as_i64()), (Some("dead"), Some(500)), "{dead}");
        for (uri, code) in [
            ("/api/webhooks/alices/deliveries/?status=lost", 400),
            ("/api/webhooks/alices/deliveries/?limit=0", 400),
            ("/api/webhooks/alices/deliveries/?colour=red", 400),
            ("/api/webhooks/nobody/deliveries/", 404),
        ] {
            let (status, body) = send(&app, auth(Req::get().uri(uri), &api, w.admin)).await;
            assert_eq!(status, code, "{uri}: {body}");
        }
        // Sent again by id; then a replay of everything from its event.
        let id = one["id"].as_i64().unwrap();
        let (status, body) = send(&app, auth(Req::post().uri(&format!("/api/webhooks/deliveries/{id}/redeliver/")), &api, w.admin)).await;
        assert_eq!(status, 200, "{body}");
        until(&api, "the redelivery", async || rx.received().len() >= 2).await;
        let (status, _) = send(&app, auth(Req::post().uri("/api/webhooks/deliveries/nope/redeliver/"), &api, w.admin)).await;
        assert_eq!(status, 404);
        let event = one["event_id"].as_i64().unwrap();
        let (status, body) = send(&app, auth(Req::post().uri("/api/webhooks/alices/replay/"), &api, w.admin)
            .set_json(json!({"from_event": event}))).await;
        assert_eq!((status, body["requeued"].as_i64()), (200, Some(1)), "{body}");
        until(&api, "the replay", async || rx.received().len() >= 3).await;
        let ids: Vec<String> = rx.received().iter().map(|m| m.id.clone()).collect();
        assert!(ids.iter().all(|i| *i == ids[0]), "one webhook-id throughout: {ids:?}");
        for body in [json!({}), json!({"from_event": 1, "since": "2026-01-01T00:00:00Z"}), json!({"from": 1})] {
            let (status, answer) = send(&app, auth(Req::post().uri("/api/webhooks/alices/replay/"), &api, w.admin)
                .set_json(body.clone())).await;
            assert_eq!(status, 422, "{body}: {answer}");
        }
        // From a time: every ended message made since; none from the future.
        for (since, requeued) in [("2000-01-01T00:00:00Z", 1), ("2999-01-01T00:00:00Z", 0)] {
            until(&api, "the replay sent", async || {
                api.webhook_deliveries("alices", Some(DeliveryStatus::Pending), 10).await.unwrap().is_empty()
            }).await;
            let (status, body) = send(&app, auth(Req::post().uri("/api/webhooks/alices/replay/"), &api, w.admin)
                .set_json(json!({"since": since}))).await;
            assert_eq!((status, body["requeued"].as_i64()), (200, Some(requeued)), "{since}: {body}");
        }
        let (status, body) = send(&app, auth(Req::post().uri("/api/webhooks/alices/enable/"), &api, w.admin)).await;
        assert_eq!((status, body["enabled"].as_bool()), (200, Some(true)), "{body}");
        // The attempts are counted (in this process: other tests' too) and timed.
        let resp = actix_web::test::call_service(&app, Req::get().uri("/metrics").to_request()).await;
        assert_eq!(resp.status(), 200);
        let text = String::from_utf8(actix_web::test::read_body(resp).await.to_vec()).unwrap();
        let dead = text.lines()
            .find(|l| l.starts_with("crudforge_webhook_attempts_total{outcome=\"dead\"}"))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .unwrap();
        assert!(dead >= 1.0, "{text}");
        assert!(text.contains("crudforge_webhook_attempt_duration_seconds_count"), "{text}");
        // The description has the operations.
        let spec = serde_json::to_value(api.openapi()).unwrap();
        for (path, method) in [("/api/webhooks/", "get"), ("/api/webhooks/{name}/deliveries/", "get"), ("/api/webhooks/{name}/replay/", "post")] {
            assert!(spec["paths"][path][method]["operationId"].is_string(), "{path}");
        }
    }

    async fn a_disabled_principal_stops_the_subscription_and_its_events_wait(t) {
        let w = world(&t, |_| {}).await;
        let rx = Receiver::start(SECRET);
        let api = api(&w, vec![alices(&rx.url())]);
        let app = actix_web::test::init_service(api.app()).await;
        api.run_webhooks().await.unwrap();
        let id = create(&app, &api, w.alice, "waits").await;
        users::set_enabled(&w.db, w.alice, false).await.unwrap();
        until(&api, "the subscription disabled", async || {
            !api.webhook_status("alices").await.unwrap().unwrap().enabled
        }).await;
        let status = api.webhook_status("alices").await.unwrap().unwrap();
        assert_eq!(status.reason.as_deref(), Some("its principal alice@example.com is disabled"));
        assert!(rx.received().is_empty());
        // Alice back, the subscription enabled: the event that waited is sent.
        users::set_enabled(&w.db, w.alice, true).await.unwrap();
        assert!(api.enable_webhook("alices").await.unwrap());
        until(&api, "the message", async || !rx.received().is_empty()).await;
        assert_eq!(rx.received()[0].body["data"]["id"], id);
    }

    async fn a_declaration_is_checked(t) {
        let w = world(&t, |_| {}).await;
        let base = || Api::new(w.cfg.clone(), w.db.clone()).unwrap()
            .mount(Part::blueprint("/api/parts/").webhooks()).unwrap();
        let url = "https://hooks.example.com/in";
        for (hook, says) in [
            (Webhook::new("x", url).resource("boxes").as_user("a@example.com").secret(SECRET), "no resource boxes"),
            (Webhook::new("x", "ftp://example.com/").resource("parts").as_user("a@example.com").secret(SECRET), "http or https"),
            (Webhook::new("x", url).resource("parts").secret(SECRET), "no principal"),
            (Webhook::new("x", url).resource("parts").as_user("a@example.com"), "no secret"),
            (Webhook::new("x", url).resource("parts").as_user("a@example.com").secret("whsec_c2hvcnQ="), "at least 24 bytes"),
            (Webhook::new("x y", url).resource("parts").as_user("a@example.com").secret(SECRET), "letters, digits"),
        ] {
            let e = base().webhook(hook).err().unwrap().to_string();
            assert!(e.contains(says), "{e} should say {says}");
        }
        let twice = base().webhook(alices(url)).unwrap().webhook(alices(url));
        assert!(twice.err().unwrap().to_string().contains("taken"));
    }
}

/// The API again, after its settings changed.
fn api_again(w: &World, rx: &Receiver) -> Api {
    api(w, vec![alices(&rx.url())])
}

/// The API with parts mounted and no subscription.
fn api_of(w: &World) -> Api {
    api(w, Vec::new())
}

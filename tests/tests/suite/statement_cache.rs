//! The statement cache is bounded, on both backends: list queries of more shapes than the
//! process admits still answer correctly, and only the admitted shapes enter the connections'
//! statement caches.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use crudforge::__bench::MAX_SHAPES;
use crudforge::{Api, Resource};
use crudforge_tests::backend_tests;
use crudforge_tests::critters::{create_table, Critter};
use serde_json::{json, Value};

// The two backends' tests read process-wide counters, so each runs in a process of its own
// (`crudforge_tests::alone`) where no other test moves them.

/// The value of a counter of this process's metrics.
fn counter(name: &str) -> f64 {
    crudforge::metrics::global()
        .registry()
        .gather()
        .iter()
        .find(|f| f.name() == name)
        .map_or(0.0, |f| f.get_metric()[0].get_counter().get_value())
}

/// Comparisons that match none of the seeded critters, to vary a filter's shape without
/// changing its answer.
const NEVER: &[&str] = &[
    "cuteness_level > 1000",
    "cuteness_level < -1000",
    "cuteness_level = -5",
    "weight > 1e9",
    "weight < -1",
    "name = 'nobody'",
    "species = 'dragon'",
    "name like 'zz%'",
    "nickname = 'zz'",
];

const SORTS: &[&str] = &["", "name", "-name", "cuteness_level", "-cuteness_level"];

backend_tests! {
    async fn list_queries_of_many_shapes_answer_and_the_cache_stays_bounded(t) {
        if !crudforge_tests::alone() {
            return;
        }
        let cfg = t.config();
        let db = t.open(&cfg).await;
        create_table(&db).await;
        let api = Api::new(cfg, db).unwrap().mount(Critter::blueprint("/api/critters/")).unwrap();
        let app = test::init_service(api.app()).await;
        for (name, level) in [("Tom", 7), ("Rex", 5), ("Nemo", 3)] {
            let req = test::TestRequest::post()
                .uri("/api/critters/")
                .set_json(json!({"name": name, "species": "cat", "cuteness_level": level}));
            assert_eq!(test::call_service(&app, req.to_request()).await.status(), 201);
        }

        let cached_before = counter("crudforge_db_statements_cached_total");
        let uncached_before = counter("crudforge_db_uncached_statements_total");
        // Each request is a shape of page query (and of count query) of its own.
        let mut shapes = 0usize;
        for a in NEVER {
            for b in NEVER {
                for sort in SORTS {
                    let filter = format!("name = 'Tom' or {a} or {b}");
                    let mut pairs = vec![("filter", filter.as_str())];
                    if !sort.is_empty() {
                        pairs.push(("sort", sort));
                    }
                    let q = serde_urlencoded::to_string(&pairs).unwrap();
                    let req = test::TestRequest::get().uri(&format!("/api/critters/?{q}"));
                    let resp = test::call_service(&app, req.to_request()).await;
                    assert_eq!(resp.status(), 200, "{filter} sorted by {sort:?}");
                    let v: Value = test::read_body_json(resp).await;
                    let names: Vec<&str> =
                        v["data"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
                    assert_eq!(names, ["Tom"], "{filter} sorted by {sort:?}");
                    assert_eq!(v["pagination"]["total"], 1, "{filter} sorted by {sort:?}");
                    shapes += 1;
                }
            }
        }
        assert!(shapes > MAX_SHAPES, "{shapes} shapes do not overflow the cache");
        let cached = counter("crudforge_db_statements_cached_total") - cached_before;
        let uncached = counter("crudforge_db_uncached_statements_total") - uncached_before;
        // Admitted shapes are still cached; only they are, plus the few static statements a
        // fresh connection may prepare. Without the bound every page query would enter.
        assert!(cached >= 1.0, "nothing was cached");
        #[allow(clippy::cast_precision_loss)]
        let bound = (MAX_SHAPES + 16) as f64;
        assert!(cached <= bound, "{cached} statements entered the caches for {shapes} shapes");
        #[allow(clippy::cast_precision_loss)]
        let refused = (shapes - MAX_SHAPES) as f64;
        assert!(uncached >= refused, "only {uncached} one-off statements");
    }
}

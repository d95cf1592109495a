//! The reference application's declared indexes: `print-indexes` prints their SQL without
//! touching a database, and the shipped migrations create every one of them, so the start-up
//! check finds nothing missing (on SQLite, and on PostgreSQL when configured).

use crate::harness::cli;
use crudforge_tests::TestDb;

/// The statements of the indexes the resources declare, in mount order: `Critter`'s (the last
/// one serves a habitat's critters), then `Habitat`'s and `Visit`'s (a visit's read rule
/// crosses to its critter's habitat and compares its keeper).
const CREATE: [&str; 7] = [
    "CREATE INDEX IF NOT EXISTS critters_deleted_at_created_at_id_idx ON critters (deleted_at, created_at, id);",
    "CREATE INDEX IF NOT EXISTS critters_species_deleted_at_cuteness_level_idx ON critters (species, deleted_at, cuteness_level);",
    "CREATE INDEX IF NOT EXISTS critters_species_deleted_at_created_at_id_cuteness_level_idx ON critters (species, deleted_at, created_at, id, cuteness_level);",
    "CREATE INDEX IF NOT EXISTS critters_habitat_id_idx ON critters (habitat_id);",
    "CREATE INDEX IF NOT EXISTS habitats_keeper_id_idx ON habitats (keeper_id);",
    "CREATE INDEX IF NOT EXISTS visits_critter_id_idx ON visits (critter_id);",
    "CREATE INDEX IF NOT EXISTS visits_visitor_id_idx ON visits (visitor_id);",
];

#[test]
fn print_indexes_prints_the_sql_and_touches_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = cli(dir.path(), &[], &["print-indexes"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().collect::<Vec<_>>(), CREATE);
    let out = cli(dir.path(), &[], &["print-indexes", "--down"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout.lines().next(),
        Some("DROP INDEX IF EXISTS critters_deleted_at_created_at_id_idx;")
    );
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "no database, no key file: {left:?}");
}

async fn check(t: &TestDb) {
    let config = t.config();
    let (db, _) = reference_app::cli::open_and_migrate(&config).await.unwrap();
    let api = reference_app::cli::build_api(config, db.clone()).unwrap();
    let declared = api.declared_indexes();
    let sql: Vec<String> = declared.iter().map(|s| s.create_sql()).collect();
    assert_eq!(sql, CREATE);
    assert_eq!(api.check_indexes().await.unwrap(), [], "{:?}", t.backend);
    // Dropping one (as a forgotten migration would) is reported.
    let mut conn = db.get().await.unwrap();
    crudforge::with_conn!(conn, |c| {
        diesel_async::SimpleAsyncConnection::batch_execute(
            c,
            "DROP INDEX critters_species_deleted_at_cuteness_level_idx",
        )
        .await
    })
    .unwrap();
    drop(conn);
    assert_eq!(api.check_indexes().await.unwrap(), [declared[1]]);
}

#[test]
fn the_shipped_migrations_create_every_declared_index() {
    actix_web::rt::System::new().block_on(async {
        check(&TestDb::sqlite().await).await;
        if let Some(t) = TestDb::postgres().await {
            check(&t).await;
        }
    });
}

#[test]
fn the_applications_settings_read_like_the_librarys() {
    let dir = tempfile::tempdir().unwrap();
    // `yes` is a boolean for RECOVERY_SINGLE_USE as for DEBUG.
    let yes = [
        ("DEBUG", "yes".to_owned()),
        ("RECOVERY_SINGLE_USE", "yes".to_owned()),
    ];
    let out = cli(dir.path(), &yes, &["print-indexes"]);
    assert!(out.status.success(), "{out:?}");
    // A malformed value stops start-up with the same message form, naming the key.
    for key in ["DEBUG", "RECOVERY_SINGLE_USE"] {
        let out = cli(dir.path(), &[(key, "maybe".to_owned())], &["print-indexes"]);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert_eq!(
            String::from_utf8(out.stderr).unwrap(),
            format!("error: configuration key {key}: expected a boolean: true or false, got \"maybe\"\n")
        );
    }
}

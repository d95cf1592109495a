//! Generated clients against the running reference binary: its own `/openapi.json` passes
//! Redocly's lint, and a Python client (`openapi-python-client`) and TypeScript types
//! (`openapi-typescript`, called through `openapi-fetch`, compiled by `tsc --strict`) generated
//! from it each run the whole flow of `tests/clients/` with no hand-written request. Skipped
//! with a message where the tools are missing, mandatory with `CRUDFORGE_REQUIRE_TOOLS=1`.

use crate::harness::Server;
use crudforge_tests::tools;
use std::path::Path;
use std::process::Command;

const ADMIN_EMAIL: &str = "admin@example.com";
const ADMIN_PASSWORD: &str = "admin pass phrase";

/// The server the flows talk to: SQLite, DEBUG on (the recovery token is in the answer), and a
/// low failed-login limit so that a flow can meet 429.
fn start(dir: &Path) -> Server {
    let env = [
        ("BCRYPT_COST", "4".to_owned()),
        ("JWT_SECRET_KEY", crudforge_tests::TEST_SECRET.to_owned()),
        ("DEBUG", "true".to_owned()),
        ("LOGIN_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS", "3".to_owned()),
    ];
    let out =
        crate::harness::create_user(dir, &env, ADMIN_EMAIL, ADMIN_PASSWORD, &["--superadmin"]);
    tools::check("create-user", &out);
    Server::start(dir, &env)
}

fn description(server: &Server) -> Vec<u8> {
    let r = server.get("/openapi.json");
    assert_eq!(r.status, 200);
    r.body
}

fn clients_dir() -> std::path::PathBuf {
    tools::workspace_root().join("tests/clients")
}

#[test]
fn redocly_lints_the_reference_description_without_errors() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    match tools::redocly_lint(&description(&server)) {
        Ok(Some(warnings)) => {
            assert!(
                warnings.is_empty(),
                "warnings not turned down in tests/tools/redocly.yaml:\n{}",
                warnings.join("\n")
            );
        }
        Ok(None) => {}
        Err(e) => panic!("redocly lint:\n{e}"),
    }
}

#[test]
fn a_generated_python_client_runs_the_whole_flow() {
    let Some(generator) = tools::openapi_python_client() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let spec = dir.path().join("openapi.json");
    std::fs::write(&spec, description(&server)).unwrap();
    let out_dir = dir.path().join("crudforge_client");
    let out = tools::run(
        Command::new(generator)
            .arg("generate")
            .arg("--path")
            .arg(&spec)
            .arg("--output-path")
            .arg(&out_dir)
            .arg("--config")
            .arg(clients_dir().join("python-client.yaml"))
            .args(["--meta", "none"]),
    );
    tools::check("openapi-python-client generate", &out);
    // The generator warns about every part of a description it could not turn into code.
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        !said.contains("Warning"),
        "openapi-python-client warns:\n{said}"
    );
    let out = tools::run(
        Command::new(tools::python())
            .arg(clients_dir().join("flow.py"))
            .arg(&server.base)
            .arg(ADMIN_EMAIL)
            .arg(ADMIN_PASSWORD)
            .env("PYTHONPATH", dir.path())
            .env("PYTHONDONTWRITEBYTECODE", "1"),
    );
    tools::check("the Python flow", &out);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("flow complete"), "{said}");
}

#[test]
fn a_generated_typescript_client_compiles_strictly_and_runs_the_whole_flow() {
    let (Some(generator), Some(tsc)) = (
        tools::npm_tool("openapi-typescript"),
        tools::npm_tool("tsc"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let work = dir.path().join("ts");
    std::fs::create_dir_all(&work).unwrap();
    let spec = work.join("openapi.json");
    std::fs::write(&spec, description(&server)).unwrap();
    let out = tools::run(
        Command::new(generator)
            .arg(&spec)
            .arg("--output")
            .arg(work.join("api.d.ts")),
    );
    tools::check("openapi-typescript", &out);
    for f in ["flow.mts", "tsconfig.json"] {
        std::fs::copy(clients_dir().join(f), work.join(f)).unwrap();
    }
    std::os::unix::fs::symlink(tools::node_modules(), work.join("node_modules")).unwrap();
    let out = tools::run(Command::new(tsc).arg("-p").arg(&work));
    tools::check("tsc --strict", &out);
    let out = tools::run(
        Command::new("node")
            .arg(work.join("out/flow.mjs"))
            .arg(&server.base)
            .arg(ADMIN_EMAIL)
            .arg(ADMIN_PASSWORD),
    );
    tools::check("the TypeScript flow", &out);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("flow complete"), "{said}");
}

//! External tools the tests call: `openapi-spec-validator` on an OpenAPI description, Redocly
//! CLI's lint, and the client generators `openapi-python-client` and `openapi-typescript`
//! (with `openapi-fetch` and `tsc`), whose generated clients the tests drive.
//!
//! `.ci/run` installs them, at the versions pinned in `tests/tools/requirements.txt` and
//! `tests/tools/package.json`, into the tools directory ([`tools_dir`]): a Python virtual
//! environment in `venv/` and npm packages in `node/node_modules/`. Where a tool is missing the
//! test that needs it says so on stderr and skips, unless [`tools_required`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Whether `CRUDFORGE_REQUIRE_TOOLS=1` (set by `.ci/run`) makes a missing tool a failure.
pub fn tools_required() -> bool {
    std::env::var("CRUDFORGE_REQUIRE_TOOLS").is_ok_and(|v| v == "1")
}

/// The workspace's root directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Where `.ci/run` installs the tools: `CRUDFORGE_TOOLS_DIR`, or `.tools` in the workspace
/// (ignored by git).
pub fn tools_dir() -> PathBuf {
    match std::env::var_os("CRUDFORGE_TOOLS_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => workspace_root().join(".tools"),
    }
}

/// The Python of the tools' virtual environment, or `python3` when there is none.
pub fn python() -> PathBuf {
    let venv = tools_dir().join("venv/bin/python");
    if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// An installed tool's executable, or `None` after saying on stderr that the test skips.
///
/// # Panics
///
/// When the tool is missing and [`tools_required`].
pub fn find(what: &str, path: PathBuf, install: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    assert!(
        !tools_required(),
        "{what} is required (CRUDFORGE_REQUIRE_TOOLS=1) but {} is missing: {install}",
        path.display()
    );
    eprintln!("skipped: {what} is not installed ({install})");
    None
}

const INSTALL: &str = "run .ci/run, or install tests/tools/ into .tools/ as it does";

/// The executable `name` of the npm tools (`redocly`, `openapi-typescript`, `tsc`).
pub fn npm_tool(name: &str) -> Option<PathBuf> {
    find(
        name,
        tools_dir().join("node/node_modules/.bin").join(name),
        INSTALL,
    )
}

/// The `node_modules` directory of the npm tools (for `openapi-fetch` and type packages).
pub fn node_modules() -> PathBuf {
    tools_dir().join("node/node_modules")
}

/// The `openapi-python-client` executable.
pub fn openapi_python_client() -> Option<PathBuf> {
    find(
        "openapi-python-client",
        tools_dir().join("venv/bin/openapi-python-client"),
        INSTALL,
    )
}

/// Runs a command to completion.
///
/// # Panics
///
/// When it cannot be started.
pub fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// Panics with the command's output unless it succeeded.
///
/// # Panics
///
/// When the command failed.
pub fn check(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The path of the Redocly lint configuration: the recommended rules, and each rule turned
/// down with the reason beside it.
pub fn redocly_config() -> PathBuf {
    workspace_root().join("tests/tools/redocly.yaml")
}

/// Lints an OpenAPI description (JSON bytes) with Redocly CLI and its recommended rules.
///
/// Returns `Ok(None)` when skipped (the tool is missing), `Ok(Some(warnings))` with one line
/// per warning when there is no error, and `Err` with every problem when there is one.
///
/// # Panics
///
/// When the tool is missing and [`tools_required`], or when it cannot be driven.
pub fn redocly_lint(spec: &[u8]) -> Result<Option<Vec<String>>, String> {
    let Some(redocly) = npm_tool("redocly") else {
        return Ok(None);
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, spec).expect("writing the description");
    let out = run(Command::new(redocly)
        .arg("lint")
        .arg(&file)
        .arg("--config")
        .arg(redocly_config())
        .args(["--format", "json", "--max-problems", "1000"])
        .env("REDOCLY_TELEMETRY", "off")
        .env("REDOCLY_SUPPRESS_UPDATE_NOTICE", "true")
        .current_dir(dir.path()));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "redocly printed no JSON report ({e}):\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    for p in report["problems"].as_array().into_iter().flatten() {
        let at = p["location"][0]["pointer"].as_str().unwrap_or("");
        let line = format!(
            "{} {}: {} ({at})",
            p["severity"].as_str().unwrap_or("?"),
            p["ruleId"].as_str().unwrap_or("?"),
            p["message"].as_str().unwrap_or("")
        );
        if p["severity"] == "error" {
            errors.push(line);
        } else {
            warnings.push(line);
        }
    }
    if errors.is_empty() && out.status.success() {
        Ok(Some(warnings))
    } else {
        errors.extend(warnings);
        Err(errors.join("\n"))
    }
}

/// Validates an OpenAPI description (JSON bytes) with `openapi-spec-validator`.
///
/// Returns `Ok(true)` when it is valid, `Ok(false)` when the check was skipped because Python
/// or the validator is missing (a message says so on stderr), and `Err` with the validator's
/// complaint when it is invalid.
///
/// # Panics
///
/// When the tool is missing and [`tools_required`], or when the process cannot be driven.
pub fn openapi_spec_validator(spec: &[u8]) -> Result<bool, String> {
    let require = tools_required();
    let child = Command::new(python())
        .args([
            "-c",
            "import sys, json\nfrom openapi_spec_validator import validate\nvalidate(json.load(sys.stdin))\nprint('valid')",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        assert!(!require, "python3 is required (CRUDFORGE_REQUIRE_TOOLS=1)");
        eprintln!("skipped: python3 is not installed");
        return Ok(false);
    };
    child
        .stdin
        .take()
        .expect("the validator's stdin")
        .write_all(spec)
        .expect("writing the description to the validator");
    let out = child.wait_with_output().expect("the validator's answer");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("ModuleNotFoundError") {
        assert!(
            !require,
            "openapi-spec-validator is required (CRUDFORGE_REQUIRE_TOOLS=1): pip install openapi-spec-validator"
        );
        eprintln!(
            "skipped: openapi-spec-validator is not installed (pip install openapi-spec-validator)"
        );
        return Ok(false);
    }
    if out.status.success() {
        Ok(true)
    } else {
        Err(stderr.into_owned())
    }
}

/// An S3-compatible server for the files tests: `CRUDFORGE_TEST_S3_ENDPOINT`
/// (`http://127.0.0.1:5055`; `.ci/run` starts moto's server there). `None` after saying on
/// stderr that the test skips its S3 half.
///
/// # Panics
///
/// When none is configured and [`tools_required`].
pub fn s3_endpoint() -> Option<String> {
    match std::env::var("CRUDFORGE_TEST_S3_ENDPOINT") {
        Ok(e) if !e.is_empty() => Some(e.trim_end_matches('/').to_owned()),
        _ => {
            assert!(
                !tools_required(),
                "an S3-compatible server is required (CRUDFORGE_REQUIRE_TOOLS=1) but CRUDFORGE_TEST_S3_ENDPOINT is unset"
            );
            eprintln!("skipped: no S3-compatible server (CRUDFORGE_TEST_S3_ENDPOINT)");
            None
        }
    }
}

/// One plain HTTP/1.1 request to the S3 test server (which does not check signatures):
/// status and body.
///
/// # Panics
///
/// When the server cannot be reached.
pub fn s3_request(endpoint: &str, method: &str, path: &str, body: &[u8]) -> (u16, String) {
    use std::io::Read as _;
    let host = endpoint.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(host).expect("the S3 test server");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("write");
    stream.write_all(body).expect("write");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("read");
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

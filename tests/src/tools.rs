//! External tools the tests call: `openapi-spec-validator` (PyPI) on an OpenAPI description.

use std::io::Write;
use std::process::{Command, Stdio};

/// Whether `CRUDFORGE_REQUIRE_TOOLS=1` (set by `.ci/run`) makes a missing tool a failure.
pub fn tools_required() -> bool {
    std::env::var("CRUDFORGE_REQUIRE_TOOLS").is_ok_and(|v| v == "1")
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
    let child = Command::new("python3")
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

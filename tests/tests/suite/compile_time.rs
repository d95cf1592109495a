//! Compile-time behaviour of `#[derive(Resource)]`: every mistake in `ui/fail/` is reported on
//! the token that makes it, with what to write instead (see the `.stderr` beside each case), and
//! every model in `ui/pass/` compiles.
//!
//! Its build of the cases takes minutes; the module's name sorts it among the first tests, so
//! that the others run beside it.
//!
//! Bless new output with `TRYBUILD=overwrite`, then read the diff. The toolchain is pinned in
//! `rust-toolchain.toml`, so the messages are stable.
#![allow(missing_docs, clippy::unwrap_used)]

use std::panic;
use std::process::Command;

#[test]
fn ui() {
    // A process of its own: the variable below is set for trybuild's cargo alone.
    if !crudforge_tests::alone() {
        return;
    }
    // trybuild builds the cases as a separate project that does not read the workspace's
    // profiles; without debug info its dependencies and binaries take a fraction of the disk.
    std::env::set_var("CARGO_PROFILE_DEV_DEBUG", "false");
    let outcome = panic::catch_unwind(|| {
        let t = trybuild::TestCases::new();
        t.compile_fail("ui/fail/*.rs");
        t.pass("ui/pass/*.rs");
        // The cases are built and checked when `t` drops, here.
    });
    if let Err(failure) = outcome {
        // When cargo stops before compiling the cases (a full disk, for one), trybuild finds
        // no diagnostics and reports every `fail` case as "expected to fail to compile, but
        // it succeeded". Say how much room the build had, so such a run is told apart from a
        // real change in the derive's errors.
        let target = env!("CARGO_TARGET_TMPDIR");
        match Command::new("df").args(["-h", target]).output() {
            Ok(df) => eprintln!(
                "space left on the disk of the build directory ({target}):\n{}",
                String::from_utf8_lossy(&df.stdout)
            ),
            Err(err) => eprintln!("could not run `df` on {target}: {err}"),
        }
        panic::resume_unwind(failure);
    }
}

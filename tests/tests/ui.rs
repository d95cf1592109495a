//! Compile-time behaviour of `#[derive(Resource)]`: every mistake in `ui/fail/` is reported on
//! the token that makes it, with what to write instead (see the `.stderr` beside each case), and
//! every model in `ui/pass/` compiles.
//!
//! Bless new output with `TRYBUILD=overwrite`, then read the diff. The toolchain is pinned in
//! `rust-toolchain.toml`, so the messages are stable.
#![allow(missing_docs, clippy::unwrap_used)]

#[test]
fn ui() {
    // trybuild builds the cases as a separate project that does not read the workspace's
    // profiles; without debug info its dependencies and binaries take a fraction of the disk.
    std::env::set_var("CARGO_PROFILE_DEV_DEBUG", "false");
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/fail/*.rs");
    t.pass("ui/pass/*.rs");
}

//! Compile-time behaviour of `#[derive(Resource)]`: every mistake in `ui/fail/` is reported on
//! the token that makes it, with what to write instead (see the `.stderr` beside each case), and
//! every model in `ui/pass/` compiles.
//!
//! Bless new output with `TRYBUILD=overwrite`, then read the diff. The toolchain is pinned in
//! `rust-toolchain.toml`, so the messages are stable.
#![allow(missing_docs, clippy::unwrap_used)]

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/fail/*.rs");
    t.pass("ui/pass/*.rs");
}

//! End-to-end tests: start the real `reference-app` binary on a free port and talk HTTP to it.
#![allow(missing_docs, unreachable_pub, clippy::unwrap_used)]

mod harness;

mod admin;
mod clients;
mod foundation;
mod indexes;
mod instances;
mod live;
mod locking;
mod mail_kill;
mod operations;
mod reference;
mod schema;
mod throttle;

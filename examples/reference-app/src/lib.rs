//! The crudforge reference application as a library: its API (models, handlers, routes) and
//! command line (the library's command line with its own commands). The `reference-app`
//! binary is a thin wrapper around [`cli::main`].

pub mod api;
pub mod cli;

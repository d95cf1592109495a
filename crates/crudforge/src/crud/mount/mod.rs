//! Mounting a resource: the blueprint ([`blueprint`]), which registers the handlers of
//! listing, reading and writing with their options and custom routes, the registry that makes
//! a blueprint by resource name ([`registry`]), and the OpenAPI description of what is mounted
//! ([`docs`]).

pub(crate) mod blueprint;
pub(crate) mod docs;
pub mod registry;

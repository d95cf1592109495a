//! Mounting a resource: the blueprint ([`blueprint`]) with the options of each operation
//! ([`options`]) and its custom routes ([`route`]), the registry that mounts a blueprint by
//! resource name ([`registry`]), the actix scope its routes share ([`scope`]), and the OpenAPI
//! description of what is mounted ([`docs`]).

pub(crate) mod blueprint;
mod docs;
pub(crate) mod options;
pub mod registry;
pub(crate) mod route;
pub(crate) mod scope;

//! The registry of derived resources: mount a blueprint by resource name, for example from
//! configuration.

use crate::crud::{CrudBlueprint, Resource};
use crate::mount::{IntoMount, Mount};

/// One derived resource, submitted by `#[derive(Resource)]`.
#[derive(Debug)]
#[doc(hidden)]
pub struct Registration {
    /// The model name (`Critter`).
    pub name: &'static str,
    /// Builds the resource's default blueprint at a prefix.
    pub make: fn(&str) -> Result<Box<dyn Mount>, String>,
}

inventory::collect!(Registration);

/// Builds `R`'s default blueprint at `prefix` (the function the derive registers).
///
/// # Errors
///
/// An invalid prefix.
#[doc(hidden)]
pub fn make<R: Resource>(prefix: &str) -> Result<Box<dyn Mount>, String> {
    IntoMount::into_mount(CrudBlueprint::<R>::new(prefix))
}

/// Names of every derived resource in the program, sorted.
pub fn names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = inventory::iter::<Registration>
        .into_iter()
        .map(|r| r.name)
        .collect();
    v.sort_unstable();
    v
}

/// The default blueprint of the resource called `name`, at `prefix`.
///
/// # Errors
///
/// No derived resource has that name (the message lists the known ones), or the prefix is
/// invalid for it.
pub fn blueprint(name: &str, prefix: &str) -> Result<Box<dyn Mount>, String> {
    match inventory::iter::<Registration>
        .into_iter()
        .find(|r| r.name == name)
    {
        Some(r) => (r.make)(prefix),
        None => Err(format!(
            "unknown resource `{name}`; derived resources: {}",
            names().join(", ")
        )),
    }
}

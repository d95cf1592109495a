//! Items only the derive's expansion calls; reachable as `crudforge::__private`, not part of
//! the public API.

use crate::condition::{list_of, Cond, FromArg};
use crate::crud::IntoBind;
use crate::error::Error;
use serde::{Deserialize, Deserializer};

pub use crate::condition::{Builder, Node};
pub use crate::crud::registry::{make, Registration};
pub use crate::db::functions::{unicode_lower, unicode_lower_nullable};
pub use actix_web;
pub use apistos;
pub use chrono;
pub use diesel;
pub use diesel_async;
pub use inventory;
pub use schemars;
pub use serde;
pub use serde_json;
pub use uuid;

/// Binds a value for its column (see [`IntoBind`]).
pub fn bind<T: IntoBind>(v: T) -> T::Bind {
    v.into_bind()
}

/// Deserializes a PATCH member of a nullable field: absent stays `None` (through
/// `#[serde(default)]`), `null` becomes `Some(None)`.
///
/// # Errors
///
/// The inner value's errors.
pub fn double_option<'de, T, D>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// Deserializes a PATCH member of a non-null field: absent stays `None` (through
/// `#[serde(default)]`); `null` is refused, because the field cannot be cleared.
///
/// # Errors
///
/// `null`, or the inner value's errors.
pub fn present<'de, T, D>(d: D) -> Result<Option<T>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    T::deserialize(d).map(Some)
}

/// Converts a condition's value for generated code; a value out of range is a 400 naming the
/// parameter.
///
/// # Errors
///
/// The value does not fit the field's type.
pub fn arg<T: FromArg>(cond: &Cond) -> Result<T, Error> {
    T::from_arg(&cond.arg).map_err(|e| arg_error(cond, e))
}

/// Converts the members of an `__in` condition for generated code.
///
/// # Errors
///
/// A member does not fit the field's type.
pub fn args<T: FromArg + IntoBind>(cond: &Cond) -> Result<Vec<T::Bind>, Error> {
    list_of::<T>(&cond.arg)
        .map(|v| v.into_iter().map(IntoBind::into_bind).collect())
        .map_err(|e| arg_error(cond, e))
}

/// The error generated code returns for a condition it cannot apply (never reached through
/// the HTTP layer, which checks conditions first).
pub fn unsupported(cond: &Cond) -> Error {
    Error::bad_param(
        cond.param.clone(),
        format!("this filter does not apply to `{}`", cond.field),
    )
}

/// Maps a conversion failure inside generated code to a 400 naming the parameter.
pub fn arg_error(cond: &Cond, why: String) -> Error {
    Error::bad_param(cond.param.clone(), why)
}

//! Rules over a resource's rows and members: field-level read rules ([`read`], who reads
//! which member), permission rules written as expressions ([`expr`]) and the access of the
//! doors besides the five operations ([`door`]), and the member rules a write is judged by
//! ([`members`]).

pub(crate) mod door;
mod expr;
pub(crate) mod members;
pub(crate) mod read;

//! Rules over a resource's rows and members: field-level read rules ([`read`], who reads
//! which member), permission rules written as expressions ([`expr`]) and the access of the
//! doors besides the five operations ([`door`]), and the values a write sends as member rules
//! read them ([`sent`]).

pub(crate) mod door;
pub(crate) mod expr;
pub(crate) mod read;
pub(crate) mod sent;

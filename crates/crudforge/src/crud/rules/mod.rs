//! Rules over a resource's rows and members: field-level read rules ([`read`], who reads
//! which member) and permission rules written as expressions ([`expr`]).

mod expr;
pub(crate) mod read;

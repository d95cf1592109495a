//! Serializing a struct without some of its members: the generated response loses the members
//! its caller may not read while it is written, instead of being parsed again afterwards.

use serde::ser::{Impossible, Serialize, SerializeStruct, Serializer};

/// Writes `value` (a struct, as `#[derive(Serialize)]` writes one) as JSON to `out`, leaving
/// out the members named in `hidden`.
///
/// # Errors
///
/// What `serde_json` reports, and an error when `value` is not serialized as a struct (a map
/// or a sequence, say), which the generated response types never are.
pub(crate) fn to_writer<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    value: &T,
    hidden: &[&str],
) -> serde_json::Result<()> {
    value.serialize(Without {
        inner: &mut serde_json::Serializer::new(out),
        hidden,
    })
}

/// A serializer that passes a struct on to `inner` without the members in `hidden`, and
/// refuses every other kind of value.
struct Without<'h, S> {
    inner: S,
    hidden: &'h [&'h str],
}

/// The members of the struct being written, minus the hidden ones.
struct Members<'h, S> {
    inner: S,
    hidden: &'h [&'h str],
}

impl<S: SerializeStruct> SerializeStruct for Members<'_, S> {
    type Ok = S::Ok;
    type Error = S::Error;

    fn serialize_field<V: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &V,
    ) -> Result<(), S::Error> {
        if self.hidden.contains(&key) {
            self.inner.skip_field(key)
        } else {
            self.inner.serialize_field(key, value)
        }
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), S::Error> {
        self.inner.skip_field(key)
    }

    fn end(self) -> Result<S::Ok, S::Error> {
        self.inner.end()
    }
}

/// The error for a value that is not a struct.
fn not_a_struct<E: serde::ser::Error>() -> E {
    E::custom("read rules apply to a struct's members only")
}

/// Serializer methods that refuse their value, one per kind that is not a struct.
macro_rules! refuse {
    ($($method:ident($($ty:ty),*) -> $ret:ty;)*) => {
        $(
            fn $method(self, $(_: $ty),*) -> Result<$ret, S::Error> {
                Err(not_a_struct())
            }
        )*
    };
}

impl<'h, S: Serializer> Serializer for Without<'h, S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Impossible<S::Ok, S::Error>;
    type SerializeTuple = Impossible<S::Ok, S::Error>;
    type SerializeTupleStruct = Impossible<S::Ok, S::Error>;
    type SerializeTupleVariant = Impossible<S::Ok, S::Error>;
    type SerializeMap = Impossible<S::Ok, S::Error>;
    type SerializeStruct = Members<'h, S::SerializeStruct>;
    type SerializeStructVariant = Impossible<S::Ok, S::Error>;

    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        Ok(Members {
            inner: self.inner.serialize_struct(name, len)?,
            hidden: self.hidden,
        })
    }

    refuse! {
        serialize_bool(bool) -> S::Ok;
        serialize_i8(i8) -> S::Ok;
        serialize_i16(i16) -> S::Ok;
        serialize_i32(i32) -> S::Ok;
        serialize_i64(i64) -> S::Ok;
        serialize_u8(u8) -> S::Ok;
        serialize_u16(u16) -> S::Ok;
        serialize_u32(u32) -> S::Ok;
        serialize_u64(u64) -> S::Ok;
        serialize_f32(f32) -> S::Ok;
        serialize_f64(f64) -> S::Ok;
        serialize_char(char) -> S::Ok;
        serialize_str(&str) -> S::Ok;
        serialize_bytes(&[u8]) -> S::Ok;
        serialize_none() -> S::Ok;
        serialize_unit() -> S::Ok;
        serialize_unit_struct(&'static str) -> S::Ok;
        serialize_unit_variant(&'static str, u32, &'static str) -> S::Ok;
        serialize_seq(Option<usize>) -> Self::SerializeSeq;
        serialize_tuple(usize) -> Self::SerializeTuple;
        serialize_tuple_struct(&'static str, usize) -> Self::SerializeTupleStruct;
        serialize_tuple_variant(&'static str, u32, &'static str, usize)
            -> Self::SerializeTupleVariant;
        serialize_map(Option<usize>) -> Self::SerializeMap;
        serialize_struct_variant(&'static str, u32, &'static str, usize)
            -> Self::SerializeStructVariant;
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
}

#[cfg(test)]
mod tests {
    use super::to_writer;

    #[derive(serde::Serialize)]
    struct Item {
        id: i64,
        name: &'static str,
        notes: Option<&'static str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        gone: Option<i64>,
    }

    fn written(hidden: &[&str]) -> String {
        let item = Item {
            id: 7,
            name: "a \"b\"",
            notes: Some("secret"),
            gone: None,
        };
        let mut out = b"[".to_vec();
        to_writer(&mut out, &item, hidden).expect("a struct serializes");
        String::from_utf8(out).expect("JSON is UTF-8")
    }

    #[test]
    fn leaves_out_the_hidden_members_and_keeps_the_others_in_order() {
        assert_eq!(
            written(&[]),
            r#"[{"id":7,"name":"a \"b\"","notes":"secret"}"#
        );
        assert_eq!(written(&["notes"]), r#"[{"id":7,"name":"a \"b\""}"#);
        assert_eq!(written(&["id"]), r#"[{"name":"a \"b\"","notes":"secret"}"#);
        assert_eq!(written(&["id", "name", "notes"]), "[{}");
        // A name that is not a member changes nothing.
        assert_eq!(written(&["other"]), written(&[]));
    }

    #[test]
    fn refuses_what_is_not_a_struct() {
        let mut out = Vec::new();
        assert!(to_writer(&mut out, &vec![1, 2], &["x"]).is_err());
        assert!(to_writer(
            &mut out,
            &std::collections::BTreeMap::from([("x", 1)]),
            &["x"]
        )
        .is_err());
        assert!(to_writer(&mut out, &3, &["x"]).is_err());
    }
}

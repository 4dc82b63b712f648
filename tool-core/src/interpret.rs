//! The interpretation seam: the tool answered; is it a usable result, and is it an empty one?
//!
//! "No error was raised" is not "the call succeeded". A result that cannot be serialized is
//! `invalid_result`; an empty list or `None` is [`Status::Empty`], distinct from success with
//! data, so the model can tell "found nothing" from "the tool broke" and from an answer. A tool
//! returning `()` has succeeded, not come up empty, and so has one returning an empty JSON
//! object: that is also what a struct without fields (an acknowledgement) looks like, and
//! nothing in the text tells the two apart. A tool whose "nothing found" is a map returns an
//! `Option` of it, or a list.

use std::any::TypeId;

use serde::Serialize;
use serde_json::value::RawValue;

use crate::outcome::{ErrorKind, Failure, Status};

/// Serializes a tool's result once, into the text the envelope carries, and classifies it.
pub(crate) fn result<T: Serialize + 'static>(
    tool: &str,
    value: &T,
) -> Result<(Status, Box<RawValue>), Failure> {
    // `to_raw_value` keeps the text it just wrote; `RawValue::from_string` would parse it again.
    let raw = serde_json::value::to_raw_value(value).map_err(|e| {
        Failure::new(
            ErrorKind::InvalidResult,
            format!("`{tool}` returned a result that cannot be represented as JSON: {e}"),
        )
    })?;
    let empty = match raw.get() {
        "[]" => true,
        "null" => TypeId::of::<T>() != TypeId::of::<()>(),
        _ => false,
    };
    Ok((
        if empty {
            Status::Empty
        } else {
            Status::Success
        },
        raw,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_collections_and_none_are_empty_but_unit_is_success() {
        assert_eq!(
            result("t", &Vec::<u8>::new()).map(|r| r.0).ok(),
            Some(Status::Empty)
        );
        assert_eq!(
            result("t", &None::<u8>).map(|r| r.0).ok(),
            Some(Status::Empty)
        );
        assert_eq!(result("t", &()).map(|r| r.0).ok(), Some(Status::Success));
        assert_eq!(
            result("t", &vec![1]).map(|r| r.0).ok(),
            Some(Status::Success)
        );
    }

    #[test]
    fn an_empty_map_or_struct_is_a_success() {
        #[derive(serde::Serialize)]
        struct Ack {}
        let empty = std::collections::BTreeMap::<String, u8>::new();
        assert_eq!(result("t", &empty).map(|r| r.0).ok(), Some(Status::Success));
        assert_eq!(
            result("t", &Ack {}).map(|r| r.0).ok(),
            Some(Status::Success)
        );
    }

    #[test]
    fn unserializable_results_are_invalid_result() {
        let mut bad = std::collections::HashMap::new();
        bad.insert(vec![1u8], 1u8); // JSON object keys must be strings
        let err = result("t", &bad).err().map(|f| f.kind);
        assert_eq!(err, Some(ErrorKind::InvalidResult));
    }
}

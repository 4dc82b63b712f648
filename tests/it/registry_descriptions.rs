//! A `///` comment wraps where the editor did: the descriptions a model reads have the lines of
//! a paragraph joined with single spaces and paragraphs separated by a blank line, for a tool's
//! doc, a parameter's doc and a `#[toolwright::data]` field's doc alike; list items and code
//! blocks keep their lines.

use serde_json::Value;
use toolwright::prelude::*;

/// Where to send a parcel, as the
/// carrier prints it.
#[toolwright::data(input)]
struct Address {
    /// The street and number,
    /// on one line of the label.
    ///
    /// No post office boxes.
    street: String,
    /// The city.
    city: String,
    /// How to deliver:
    /// - `door`: at the door,
    ///   signed for
    /// - `locker`: a parcel locker
    delivery: Option<String>,
}

/// Ship an order to an
/// address, charging the account on file.
///
/// Call it once per order:
/// it is not idempotent.
///
/// ```json
/// {"order_id": "A1",
///  "address": {"street": "1 Main St", "city": "Springfield"}}
/// ```
#[tool]
async fn ship_order(
    /// The order's id,
    /// as printed on the receipt.
    ///
    /// Starts with `A`.
    order_id: String,
    /// Where it goes.
    address: Address,
) -> Result<String, ToolError> {
    let delivery = address.delivery.as_deref().unwrap_or("door");
    Ok(format!(
        "{order_id} to {}, {} ({delivery})",
        address.street, address.city
    ))
}

fn spec() -> (String, Value) {
    let registry = Registry::builder().tool(ShipOrder).build().expect("builds");
    let spec = registry.spec("ship_order").expect("registered");
    (spec.description().to_owned(), spec.input_schema().clone())
}

/// The `Address` schema, inlined or in `$defs`.
fn address(schema: &Value) -> &Value {
    let property = &schema["properties"]["address"];
    match property["$ref"].as_str() {
        Some(reference) => {
            let name = reference.rsplit('/').next().expect("a name");
            &schema["$defs"][name]
        }
        None => property,
    }
}

#[test]
fn a_tool_doc_is_reflowed_with_its_paragraphs_and_code_block_kept() {
    let (description, _) = spec();
    assert_eq!(
        description,
        "Ship an order to an address, charging the account on file.\n\n\
         Call it once per order: it is not idempotent.\n\n\
         ```json\n\
         {\"order_id\": \"A1\",\n \
         \"address\": {\"street\": \"1 Main St\", \"city\": \"Springfield\"}}\n\
         ```"
    );
}

#[test]
fn a_parameter_doc_is_reflowed_with_its_paragraphs_kept() {
    let (_, schema) = spec();
    assert_eq!(
        schema["properties"]["order_id"]["description"],
        "The order's id, as printed on the receipt.\n\nStarts with `A`."
    );
}

#[test]
fn a_data_field_doc_is_reflowed_with_its_paragraphs_and_list_items_kept() {
    let (_, schema) = spec();
    let address = address(&schema);
    assert_eq!(
        address["properties"]["street"]["description"],
        "The street and number, on one line of the label.\n\nNo post office boxes.",
        "{schema:#}"
    );
    assert_eq!(address["properties"]["city"]["description"], "The city.");
    assert_eq!(
        address["properties"]["delivery"]["description"],
        "How to deliver:\n- `door`: at the door, signed for\n- `locker`: a parcel locker"
    );
    assert_eq!(
        address["description"],
        "Where to send a parcel, as the carrier prints it."
    );
}

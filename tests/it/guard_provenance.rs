//! Provenance through the real pipeline: an identifier argument must be one a tool returned
//! in this conversation (or the application grounded), else `ungrounded_identifier`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use serde_json::json;
use toolwright::prelude::*;
use toolwright::BuildError;

/// One order line.
#[toolwright::data(output)]
struct Line {
    sku: String,
}

/// An order as the search returns it.
#[toolwright::data(output)]
struct OrderRow {
    id: String,
    lines: Vec<Line>,
}

/// Search the orders of a customer.
#[tool(read_only, grounds(order = "id", sku = "lines.sku"))]
async fn search_orders(
    /// Words to look for.
    query: String,
) -> Result<Vec<OrderRow>, ToolError> {
    let _ = query;
    Ok(vec![
        OrderRow {
            id: "A1001".into(),
            lines: vec![Line { sku: "S-1".into() }, Line { sku: "S-2".into() }],
        },
        OrderRow {
            id: "A1002".into(),
            lines: vec![],
        },
    ])
}

/// The refunds one registry made: each test builds its own registry with its own counter, so
/// tests running in parallel never see each other's refunds.
#[derive(Clone, Default)]
struct Refunds(Arc<AtomicU32>);

impl Refunds {
    fn add(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Refund lines of an order.
#[tool(idempotent = true)]
async fn refund_lines(
    /// The order.
    #[arg(grounded = "order")]
    order_id: String,
    /// The lines to refund.
    #[arg(grounded = "sku")]
    skus: Vec<String>,
    /// A note for the customer.
    note: Option<String>,
    refunds: State<Refunds>,
) -> Result<String, ToolError> {
    refunds.add();
    let _ = note;
    Ok(format!("refunded {} lines of {order_id}", skus.len()))
}

/// Fetch a customer by number.
#[tool(read_only)]
async fn get_customer(
    /// The customer number.
    #[arg(grounded = "customer")]
    customer: u64,
) -> Result<String, ToolError> {
    Ok(format!("customer {customer}"))
}

fn registry() -> Registry {
    shop().0
}

/// A registry and the counter of the refunds it makes.
fn shop() -> (Registry, Refunds) {
    let refunds = Refunds::default();
    let registry = Registry::builder()
        .tool(SearchOrders)
        .tool(RefundLines)
        .tool(GetCustomer)
        .state(refunds.clone())
        .build()
        .unwrap();
    (registry, refunds)
}

fn refund(id: &str, order: &str, skus: &[&str]) -> ToolCall {
    ToolCall::new(
        id,
        "refund_lines",
        json!({"order_id": order, "skus": skus}).to_string(),
    )
}

fn search(id: &str) -> ToolCall {
    ToolCall::new(id, "search_orders", r#"{"query":"ada"}"#)
}

#[tokio::test]
async fn an_invented_id_is_refused_and_the_model_is_told_where_to_look() {
    let (registry, refunds) = shop();
    let session = Session::new("conv-1");
    let outcome = registry
        .call_in(&session, refund("call_1", "A1003", &[]))
        .await;

    assert_eq!(outcome.error_kind(), Some(ErrorKind::UngroundedIdentifier));
    assert_eq!(outcome.seam(), Some(Seam::Validation));
    assert!(outcome.retryable(), "a lookup first makes it work");
    let envelope = outcome.to_model_json();
    assert_eq!(envelope["error_type"], "ungrounded_identifier");
    assert_eq!(envelope["errors"][0]["path"], "/order_id");
    assert_eq!(envelope["errors"][0]["rule"], "grounded");
    assert_eq!(
        outcome.message(),
        Some("`order_id` is \"A1003\", an `order` id no tool has returned in this conversation. Look it up first with `search_orders`; never invent ids.")
    );
    assert_eq!(refunds.0.load(Ordering::SeqCst), 0, "the tool never ran");
}

#[tokio::test]
async fn ids_a_tool_returned_may_be_used_in_the_same_conversation_only() {
    let registry = registry();
    let session = Session::new("conv-2");
    let found = registry.call_in(&session, search("call_1")).await;
    assert_eq!(found.status(), Status::Success);

    let ok = registry
        .call_in(&session, refund("call_2", "A1001", &["S-1", "S-2"]))
        .await;
    assert_eq!(ok.status(), Status::Success, "{}", ok.to_model_json());
    assert!(session.is_grounded("order", "A1002"));
    assert!(session.is_grounded("sku", "S-2"));

    let other = Session::new("conv-3");
    let elsewhere = registry
        .call_in(&other, refund("call_3", "A1001", &[]))
        .await;
    assert_eq!(
        elsewhere.error_kind(),
        Some(ErrorKind::UngroundedIdentifier)
    );
}

#[tokio::test]
async fn every_ungrounded_element_of_a_list_is_reported() {
    let registry = registry();
    let session = Session::new("conv-4");
    registry.call_in(&session, search("call_1")).await;
    let outcome = registry
        .call_in(&session, refund("call_2", "A1001", &["S-1", "S-9", "S-8"]))
        .await;
    let errors = outcome.violations();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors.iter().all(|v| v.path == "/skus"));
    assert_eq!(errors[0].got.as_deref(), Some("\"S-9\""));
    assert_eq!(errors[1].got.as_deref(), Some("\"S-8\""));
}

#[tokio::test]
async fn the_application_grounds_ids_it_knows_and_integers_are_ids_too() {
    let registry = registry();
    let session = Session::new("conv-5");
    session.ground("customer", "311");
    let call =
        |id: &str, n: u64| ToolCall::new(id, "get_customer", json!({ "customer": n }).to_string());
    assert_eq!(
        registry
            .call_in(&session, call("call_1", 311))
            .await
            .status(),
        Status::Success
    );
    let invented = registry.call_in(&session, call("call_2", 312)).await;
    assert_eq!(
        invented.message(),
        Some("`customer` is \"312\", a `customer` id no tool has returned in this conversation. Use an id the user or a tool gave you; never invent one.")
    );
}

#[tokio::test]
async fn calls_outside_a_conversation_remember_nothing() {
    let registry = registry();
    registry.call(search("call_1")).await;
    let outcome = registry.call(refund("call_2", "A1001", &[])).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::UngroundedIdentifier));
}

#[test]
fn the_schema_tells_the_model_the_argument_is_an_id_it_was_given() {
    let registry = registry();
    let schema = registry.spec("refund_lines").unwrap().input_schema();
    assert_eq!(
        schema["properties"]["order_id"]["description"],
        "The order. Must be an `order` id returned by a tool in this conversation; never invent one."
    );
    let grounds = registry.spec("search_orders").unwrap().grounds();
    assert_eq!(
        grounds
            .iter()
            .map(|g| (g.kind(), g.path()))
            .collect::<Vec<_>>(),
        [("order", "id"), ("sku", "lines.sku")]
    );
}

/// A book in the catalogue.
#[toolwright::data(output)]
struct Book {
    id: String,
}

/// Search the catalogue.
#[tool(read_only, grounds(book = "id"))]
async fn search_books(
    /// Words of the title.
    title: String,
) -> Result<Vec<Book>, ToolError> {
    let _ = title;
    Ok(vec![Book { id: "B1".into() }])
}

/// A library member.
#[toolwright::data(output)]
struct Member {
    id: String,
}

/// Find a member by name.
#[tool(read_only, grounds(member = "id"))]
async fn find_member(
    /// The member's name.
    name: String,
) -> Result<Member, ToolError> {
    let _ = name;
    Ok(Member { id: "M1".into() })
}

/// Lend a book to a member.
#[tool(idempotent = true)]
async fn lend_book(
    /// Who borrows it.
    #[arg(grounded = "member")]
    member_id: String,
    /// The book.
    #[arg(grounded = "book")]
    book_id: String,
) -> Result<String, ToolError> {
    Ok(format!("{book_id} lent to {member_id}"))
}

/// Lend a book to a member of a branch (no tool returns branch ids).
#[tool(idempotent = true)]
async fn lend_at_branch(
    /// The branch.
    #[arg(grounded = "branch")]
    branch: String,
    /// Who borrows it.
    #[arg(grounded = "member")]
    member_id: String,
    /// The book.
    #[arg(grounded = "book")]
    book_id: String,
) -> Result<String, ToolError> {
    Ok(format!("{book_id} lent to {member_id} at {branch}"))
}

fn library() -> Registry {
    Registry::builder()
        .tool(SearchBooks)
        .tool(FindMember)
        .tool(LendBook)
        .tool(LendAtBranch)
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_hint_names_only_the_tools_that_return_the_kind_of_id_that_was_refused() {
    let registry = library();
    let session = Session::new("lib-1");
    let found = registry
        .call_in(
            &session,
            ToolCall::new("call_1", "search_books", r#"{"title":"Dune"}"#),
        )
        .await;
    assert_eq!(found.status(), Status::Success);
    let outcome = registry
        .call_in(
            &session,
            ToolCall::new(
                "call_2",
                "lend_book",
                r#"{"member_id":"M9","book_id":"B1"}"#,
            ),
        )
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::UngroundedIdentifier));
    assert_eq!(
        outcome.message(),
        Some("`member_id` is \"M9\", a `member` id no tool has returned in this conversation. Look it up first with `find_member`; never invent ids.")
    );
}

#[tokio::test]
async fn ids_of_several_kinds_refused_at_once_are_each_sent_to_their_own_tools() {
    let registry = library();
    let session = Session::new("lib-2");
    let outcome = registry
        .call_in(
            &session,
            ToolCall::new(
                "call_1",
                "lend_at_branch",
                r#"{"branch":"north","member_id":"M9","book_id":"B9"}"#,
            ),
        )
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::UngroundedIdentifier));
    let message = outcome.message().unwrap_or_default();
    assert!(
        message.ends_with(" Look up a `member` id with `find_member` and a `book` id with `search_books`; use a `branch` id the user gave you; never invent ids."),
        "{message}"
    );

    // Only the book is invented: the member's tool is not named.
    session.ground("branch", "north");
    session.ground("member", "M1");
    let outcome = registry
        .call_in(
            &session,
            ToolCall::new(
                "call_2",
                "lend_at_branch",
                r#"{"branch":"north","member_id":"M1","book_id":"B9"}"#,
            ),
        )
        .await;
    let message = outcome.message().unwrap_or_default();
    assert!(
        message.ends_with(" Look it up first with `search_books`; never invent ids."),
        "{message}"
    );
}

/// An open appointment slot.
#[toolwright::data(output)]
struct Slot {
    id: String,
    start: String,
}

fn slot(id: &str) -> Slot {
    Slot {
        id: id.into(),
        start: "09:00".into(),
    }
}

/// Open slots of a day (the clinic is closed on Sundays).
#[tool(read_only, grounds(slot = "id"))]
async fn search_slots(
    /// The day.
    day: String,
) -> Result<Vec<Slot>, ToolError> {
    Ok(match day.as_str() {
        "sunday" => vec![],
        _ => vec![slot("S-1")],
    })
}

/// Slots a clinician holds back for urgent cases.
#[tool(read_only, grounds(slot = "id"))]
async fn held_slots() -> Result<Vec<Slot>, ToolError> {
    Ok(vec![slot("S-7")])
}

/// Book a slot.
#[tool(idempotent = true)]
async fn book_slot(
    /// The slot.
    #[arg(grounded = "slot")]
    slot_id: String,
) -> Result<String, ToolError> {
    Ok(format!("{slot_id} booked"))
}

/// The hint of an `ungrounded_identifier` for booking `slot`, after the calls `before`.
async fn hint_after(registry: &Registry, before: &[ToolCall], slot: &str) -> String {
    let session = Session::new("clinic-1");
    for call in before {
        assert!(registry.call_in(&session, call.clone()).await.is_ok());
    }
    let book = ToolCall::new("book", "book_slot", json!({ "slot_id": slot }).to_string());
    let outcome = registry.call_in(&session, book).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::UngroundedIdentifier));
    let message = outcome.message().unwrap_or_default();
    let refused =
        format!("`slot_id` is \"{slot}\", a `slot` id no tool has returned in this conversation.");
    message
        .strip_prefix(&refused)
        .unwrap_or(message)
        .trim()
        .to_owned()
}

#[tokio::test]
async fn the_hint_never_sends_the_model_back_to_a_tool_that_just_returned_no_such_id() {
    let clinic = Registry::builder()
        .tool(SearchSlots)
        .tool(BookSlot)
        .build()
        .unwrap();
    let sunday = ToolCall::new("c1", "search_slots", r#"{"day":"sunday"}"#);
    let monday = ToolCall::new("c2", "search_slots", r#"{"day":"monday"}"#);
    assert_eq!(
        hint_after(&clinic, &[], "S-1").await,
        "Look it up first with `search_slots`; never invent ids."
    );
    // The only tool that returns slots just returned none: said so, not "look it up with it".
    assert_eq!(
        hint_after(&clinic, std::slice::from_ref(&sunday), "S-1").await,
        "`search_slots` just returned no `slot` id, so there is none to use yet: call it again only with other arguments, or ask the user for the id; never invent one."
    );
    // Once it returned slots again, it is where to look.
    assert_eq!(
        hint_after(&clinic, &[sunday.clone(), monday], "S-9").await,
        "Look it up first with `search_slots`; never invent ids."
    );
    // With another tool that returns slots, the hint names that one only.
    let clinic = Registry::builder()
        .tool(SearchSlots)
        .tool(HeldSlots)
        .tool(BookSlot)
        .build()
        .unwrap();
    assert_eq!(
        hint_after(&clinic, &[sunday], "S-1").await,
        "Look it up first with `held_slots`; never invent ids."
    );
}

/// Open slots, with the path of their ids mistyped (the result has `id`).
#[tool(read_only, grounds(slot = "slot_id"))]
async fn search_slots_mistyped() -> Result<Vec<Slot>, ToolError> {
    Ok(vec![slot("S-1")])
}

/// Orders, with the path of their lines' skus mistyped (the lines have `sku`).
#[tool(read_only, grounds(sku = "lines.code"))]
async fn search_orders_mistyped() -> Result<Vec<OrderRow>, ToolError> {
    Ok(vec![])
}

/// Slot ids as plain strings, with a path into them.
#[tool(read_only, grounds(slot = "id"))]
async fn slot_ids_mistyped() -> Result<Vec<String>, ToolError> {
    Ok(vec!["S-1".into()])
}

/// A slot as a calendar writes it.
#[toolwright::data(output)]
#[serde(rename_all = "camelCase")]
struct CalendarSlot {
    slot_ref: String,
}

/// Calendar slots, with the path written as the Rust field, not as serde names it.
#[tool(read_only, grounds(slot = "slot_ref"))]
async fn calendar_slots_mistyped() -> Result<Vec<CalendarSlot>, ToolError> {
    Ok(vec![])
}

/// Calendar slots.
#[tool(read_only, grounds(slot = "slotRef"))]
async fn calendar_slots() -> Result<Vec<CalendarSlot>, ToolError> {
    Ok(vec![])
}

/// The next slot, if any.
#[tool(read_only, grounds(slot = "id"))]
async fn next_slot() -> Result<Option<Slot>, ToolError> {
    Ok(None)
}

/// The first slot, returned plainly.
#[tool(read_only, grounds(slot = "id"))]
async fn first_slot() -> Slot {
    slot("S-1")
}

/// Slots by week.
#[tool(read_only, grounds(slot = "id"))]
async fn weeks() -> Result<Vec<Vec<Slot>>, ToolError> {
    Ok(vec![])
}

/// Slots by clinician.
#[tool(read_only, grounds(slot = "anyone.id"))]
async fn by_clinician() -> Result<std::collections::HashMap<String, Slot>, ToolError> {
    Ok(Default::default())
}

/// Whatever the calendar answered.
#[tool(read_only, grounds(slot = "items.id"))]
async fn raw_calendar() -> Result<serde_json::Value, ToolError> {
    Ok(json!({}))
}

/// Slots as text, with their data beside it.
#[tool(read_only, grounds(slot = "data.id"))]
async fn slot_content() -> Result<toolwright::Content, ToolError> {
    Ok(toolwright::Content::new().text("S-1 at 09:00"))
}

/// Slot ids.
#[tool(read_only, grounds(slot = ""))]
async fn slot_ids() -> Result<Vec<String>, ToolError> {
    Ok(vec!["S-1".into()])
}

/// The `UnknownGroundsPath` a registry of `build` refuses, as (tool, path, at, fields), and
/// its message.
fn refusal(build: Result<Registry, BuildError>) -> ((String, String, String, Vec<String>), String) {
    match build {
        Err(e @ BuildError::UnknownGroundsPath { .. }) => {
            let message = e.to_string();
            let BuildError::UnknownGroundsPath {
                tool,
                path,
                at,
                fields,
                ..
            } = e
            else {
                unreachable!()
            };
            ((tool, path, at, fields), message)
        }
        other => panic!("expected UnknownGroundsPath, got {other:?}"),
    }
}

fn names(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

#[test]
fn a_grounds_path_that_names_no_field_of_the_result_fails_the_build_naming_the_fields() {
    let (found, message) = refusal(Registry::builder().tool(SearchSlotsMistyped).build());
    assert_eq!(
        found,
        (
            "search_slots_mistyped".into(),
            "slot_id".into(),
            String::new(),
            names(&["id", "start"])
        )
    );
    assert_eq!(
        message,
        "tool `search_slots_mistyped` grounds `slot` ids at `slot_id`, which names no field of its result: the result has `id`, `start`; write the path of the field that holds the ids, such as `\"id\"`"
    );
    let (found, message) = refusal(Registry::builder().tool(SearchOrdersMistyped).build());
    assert_eq!(found.2, "lines");
    assert_eq!(found.3, names(&["sku"]));
    assert!(message.contains("`lines` in the result has `sku`; write the path of the field that holds the ids, such as `\"lines.sku\"`"), "{message}");
    let (found, message) = refusal(Registry::builder().tool(SlotIdsMistyped).build());
    assert_eq!((found.2.as_str(), found.3.len()), ("", 0));
    assert!(message.contains("the result has no fields; write the path of the field that holds the ids, or `\"\"` for the result itself"), "{message}");
    // The path is the result's JSON, as serde writes it.
    let (found, _) = refusal(Registry::builder().tool(CalendarSlotsMistyped).build());
    assert_eq!(found.3, names(&["slotRef"]));

    // Every path a result can hold is accepted: renamed fields, options, plain returns,
    // nested lists, maps, untyped JSON, `Content`'s data, the result itself.
    Registry::builder()
        .tool(CalendarSlots)
        .tool(NextSlot)
        .tool(FirstSlot)
        .tool(Weeks)
        .tool(ByClinician)
        .tool(RawCalendar)
        .tool(SlotContent)
        .tool(SlotIds)
        .tool(SearchOrders)
        .build()
        .expect("every path names a field the result may have");
}

#[test]
fn a_runtime_tools_grounds_path_is_checked_against_its_output_schema() {
    let tool = |path: &str, output: Option<serde_json::Value>| {
        let mut builder = toolwright::DynamicTool::builder("search_slots")
            .description("Open slots.")
            .input_schema(json!({"type": "object", "properties": {}}))
            .grounds("slot", path)
            .handler(|_args, _ctx| async { Ok(json!([{"id": "S-1"}])) });
        if let Some(output) = output {
            builder = builder.output_schema(output);
        }
        builder.build().unwrap()
    };
    let slots = json!({
        "type": "array",
        "items": {"type": "object", "properties": {"id": {"type": "string"}, "start": {"type": "string"}}}
    });
    let (found, message) = refusal(
        Registry::builder()
            .dynamic_tool(tool("slot_id", Some(slots.clone())))
            .build(),
    );
    assert_eq!(found.3, names(&["id", "start"]));
    assert!(
        message.contains("the result has `id`, `start`"),
        "{message}"
    );
    assert!(Registry::builder()
        .dynamic_tool(tool("id", Some(slots)))
        .build()
        .is_ok());
    // Without an output schema, nothing says which fields there are.
    assert!(Registry::builder()
        .dynamic_tool(tool("slot_id", None))
        .build()
        .is_ok());
}

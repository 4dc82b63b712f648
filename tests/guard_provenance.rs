//! Provenance through the real pipeline: an identifier argument must be one a tool returned
//! in this conversation (or the application grounded), else `ungrounded_identifier`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use serde_json::json;
use toolwright::prelude::*;

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

//! The review page's router (`toolwright::review`) answered request by request with tower's
//! `oneshot`, no listener and no browser: each refusal (no token, a wrong one, a decision from
//! another origin, a body over the bound), each bound (tickets per page, body size), escaping,
//! the headers every answer carries, the JSON API, and the page nested under a path.
#![cfg(feature = "review-page")]

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Method, Request, Response, StatusCode};
use axum::Router;
use serde_json::Value;
use toolwright::approval::Approvals;
use toolwright::conversation::{ConversationStore, MemoryConversationStore, TicketState};
use toolwright::review::{ReviewPage, Token, COOKIE, MAX_BODY_BYTES, TICKETS_PER_PAGE};
use toolwright::Registry;
use tower::ServiceExt as _;

use crate::shop;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";
const HOST: &str = "review.test:8080";

/// A shop with `customers` refunds waiting, and the page over its store.
struct Shop {
    registry: Registry,
    approvals: Approvals,
    ledger: shop::Ledger,
    asked: Vec<shop::Asked>,
}

impl Shop {
    async fn with(reasons: &[(&str, &str)]) -> Shop {
        let ledger = shop::Ledger::default();
        let registry = shop::registry(&ledger);
        let store: Arc<dyn ConversationStore> = Arc::new(MemoryConversationStore::new());
        let mut asked = Vec::new();
        for (customer, reason) in reasons {
            let one = shop::ask(&registry, &store, customer, 20.0, reason)
                .await
                .expect("the call waits");
            asked.push(one);
        }
        let approvals = Approvals::new(Arc::clone(&store));
        Shop {
            registry,
            approvals,
            ledger,
            asked,
        }
    }

    fn page(&self) -> ReviewPage {
        ReviewPage::new(
            self.registry.clone(),
            self.approvals.clone(),
            Token::new(TOKEN).unwrap(),
        )
    }

    fn router(&self) -> Router {
        self.page().router()
    }

    async fn state(&self, index: usize) -> TicketState {
        let ticket = &self.asked[index].ticket;
        self.approvals.ticket(ticket).await.unwrap().unwrap().state
    }
}

/// A request to `uri` on [`HOST`], with `headers`, and `body` as a form.
fn request(method: Method, uri: &str, headers: &[(&str, &str)], body: &str) -> Request<Body> {
    let mut builder = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::HOST, HOST);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Body::from(body.to_owned())).unwrap()
}

fn bearer() -> (&'static str, String) {
    ("authorization", format!("Bearer {TOKEN}"))
}

async fn send(router: &Router, request: Request<Body>) -> Response<Body> {
    router.clone().oneshot(request).await.unwrap()
}

async fn text(response: Response<Body>) -> String {
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

async fn get_page(router: &Router, uri: &str) -> (StatusCode, String) {
    let (name, value) = bearer();
    let response = send(router, request(Method::GET, uri, &[(name, &value)], "")).await;
    let status = response.status();
    (status, text(response).await)
}

#[tokio::test]
async fn without_the_token_or_with_a_wrong_one_nothing_is_read_or_decided() {
    let shop = Shop::with(&[("ann", "damaged")]).await;
    let router = shop.router();
    let ticket = shop.asked[0].ticket.clone();
    let wrong_cookie = format!("{COOKIE}={TOKEN}x");
    let wrong_bearer = format!("Bearer {}", &TOKEN[1..]);
    for headers in [
        vec![],
        vec![("authorization", wrong_bearer.as_str())],
        vec![("authorization", "Bearer ")],
        vec![("cookie", wrong_cookie.as_str())],
    ] {
        for (method, uri) in [
            (Method::GET, "/".to_owned()),
            (Method::GET, "/version".to_owned()),
            (Method::GET, "/api/tickets".to_owned()),
            (Method::POST, format!("/tickets/{ticket}/approve")),
            (Method::POST, format!("/api/tickets/{ticket}/approve")),
        ] {
            let response = send(&router, request(method.clone(), &uri, &headers, "")).await;
            assert_eq!(
                response.status(),
                StatusCode::UNAUTHORIZED,
                "{method} {uri} {headers:?}"
            );
        }
    }
    let wrong = send(
        &router,
        request(Method::GET, &format!("/?token={TOKEN}0"), &[], ""),
    )
    .await;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(shop.state(0).await, TicketState::Waiting);
}

#[tokio::test]
async fn the_token_once_sets_an_http_only_strict_cookie_and_leaves_the_address() {
    let shop = Shop::with(&[]).await;
    let response = send(
        &shop.router(),
        request(
            Method::GET,
            &format!("/?token={TOKEN}&tool=refund_order"),
            &[],
            "",
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()["location"], "/?tool=refund_order");
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    assert_eq!(
        cookie,
        format!("{COOKIE}={TOKEN}; HttpOnly; SameSite=Strict; Path=/")
    );
}

#[tokio::test]
async fn a_cookie_signed_decision_from_another_origin_is_refused_and_decides_nothing() {
    let shop = Shop::with(&[("ann", "damaged")]).await;
    let router = shop.router();
    let uri = format!("/tickets/{}/deny", shop.asked[0].ticket);
    let cookie = format!("{COOKIE}={TOKEN}");
    for (name, value) in [
        ("origin", "http://review.test:8081"),
        ("origin", "https://elsewhere.test"),
        ("origin", "null"),
        ("sec-fetch-site", "same-site"),
        ("sec-fetch-site", "cross-site"),
    ] {
        let headers = [("cookie", cookie.as_str()), (name, value)];
        let response = send(&router, request(Method::POST, &uri, &headers, "reason=x")).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{name}: {value}");
    }
    let bare = send(
        &router,
        request(Method::POST, &uri, &[("cookie", &cookie)], "reason=x"),
    )
    .await;
    assert_eq!(bare.status(), StatusCode::FORBIDDEN);
    // The JSON API is held to the same rule.
    let api = format!("/api/tickets/{}/approve", shop.asked[0].ticket);
    let headers = [
        ("cookie", cookie.as_str()),
        ("origin", "https://elsewhere.test"),
    ];
    let response = send(&router, request(Method::POST, &api, &headers, "")).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let answer: Value = serde_json::from_str(&text(response).await).unwrap();
    assert_eq!(answer["error"], "other_origin");
    assert_eq!(shop.state(0).await, TicketState::Waiting);

    // The page's own origin decides.
    let own = format!("http://{HOST}");
    let headers = [("cookie", cookie.as_str()), ("origin", own.as_str())];
    let response = send(
        &router,
        request(Method::POST, &uri, &headers, "reason=late"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert!(matches!(shop.state(0).await, TicketState::Denied { .. }));
}

#[tokio::test]
async fn an_origin_the_page_allows_decides_behind_a_proxy() {
    let shop = Shop::with(&[("ann", "damaged")]).await;
    let router = shop
        .page()
        .allow_origin("https://Review.example.com/")
        .router();
    let uri = format!("/tickets/{}/approve", shop.asked[0].ticket);
    let cookie = format!("{COOKIE}={TOKEN}");
    let headers = [
        ("cookie", cookie.as_str()),
        ("origin", "https://review.example.com"),
    ];
    let response = send(&router, request(Method::POST, &uri, &headers, "")).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(shop.state(0).await, TicketState::Approved);
}

#[tokio::test]
async fn a_tool_argument_reading_script_is_rendered_as_text() {
    let shop = Shop::with(&[("ann", "<script>alert('x')</script> & \"q\"")]).await;
    let (status, body) = get_page(&shop.router(), "/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        body.contains("&lt;script&gt;alert('x')&lt;/script&gt; &amp; \\&quot;q\\&quot;"),
        "{body}"
    );
    assert!(!body.contains("<script>alert"), "{body}");
    // In an attribute too: a filter typed into the page comes back escaped.
    let (_, body) = get_page(&shop.router(), "/?tool=%22%3E%3Cscript%3Ex").await;
    assert!(
        body.contains("value=\"&quot;&gt;&lt;script&gt;x\""),
        "{body}"
    );
    assert_eq!(
        body.matches("<script>").count(),
        1,
        "the page's own script only"
    );
}

#[tokio::test]
async fn the_reviewer_s_name_heads_the_page_as_text() {
    let shop = Shop::with(&[]).await;
    let router = shop.page().reviewer("<i>ann</i>").router();
    let (_, body) = get_page(&router, "/").await;
    assert!(
        body.contains("Reviewing as <strong>&lt;i&gt;ann&lt;/i&gt;</strong>"),
        "{body}"
    );
    let (_, body) = get_page(&shop.router(), "/").await;
    assert!(!body.contains("Reviewing as"), "{body}");
}

#[tokio::test]
async fn a_page_lists_at_most_tickets_per_page_with_a_link_to_the_rest() {
    let customers: Vec<String> = (0..=TICKETS_PER_PAGE).map(|i| format!("c{i}")).collect();
    let asked: Vec<(&str, &str)> = customers.iter().map(|c| (c.as_str(), "late")).collect();
    let shop = Shop::with(&asked).await;
    let router = shop.router();
    let (_, body) = get_page(&router, "/").await;
    assert_eq!(
        body.matches("<section class=\"ticket\"").count(),
        TICKETS_PER_PAGE
    );
    assert!(body.contains("Older tickets"), "{body}");
    let (_, json) = get_page(&router, "/api/tickets").await;
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["tickets"].as_array().unwrap().len(), TICKETS_PER_PAGE);
    let next = json["next"].as_u64().expect("a cursor");
    let (_, rest) = get_page(&router, &format!("/api/tickets?after={next}")).await;
    let rest: Value = serde_json::from_str(&rest).unwrap();
    assert_eq!(rest["tickets"].as_array().unwrap().len(), 1);
    assert_eq!(rest["tickets"][0]["principal"], customers[TICKETS_PER_PAGE]);
}

#[tokio::test]
async fn a_body_over_the_bound_is_refused_with_413_and_decides_nothing() {
    let shop = Shop::with(&[("ann", "damaged")]).await;
    let router = shop.router();
    let (name, value) = bearer();
    let uri = format!("/tickets/{}/edit", shop.asked[0].ticket);
    let body = format!("arguments={}", "x".repeat(MAX_BODY_BYTES));
    let response = send(
        &router,
        request(Method::POST, &uri, &[(name, &value)], &body),
    )
    .await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let api = format!("/api/tickets/{}/deny", shop.asked[0].ticket);
    let body = format!("{{\"reason\":\"{}\"}}", "x".repeat(MAX_BODY_BYTES));
    let response = send(
        &router,
        request(Method::POST, &api, &[(name, &value)], &body),
    )
    .await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(shop.state(0).await, TicketState::Waiting);
}

#[tokio::test]
async fn every_answer_forbids_framing_caching_and_a_referrer_to_another_site() {
    let shop = Shop::with(&[]).await;
    let router = shop.router();
    for request in [
        request(Method::GET, "/", &[], ""),
        request(
            Method::GET,
            "/",
            &[("authorization", &format!("Bearer {TOKEN}"))],
            "",
        ),
    ] {
        let response = send(&router, request).await;
        let headers = response.headers();
        assert_eq!(headers["cache-control"], "no-store");
        assert_eq!(headers["referrer-policy"], "same-origin");
        let policy = headers["content-security-policy"].to_str().unwrap();
        assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    }
}

#[tokio::test]
async fn the_api_lists_and_decides_with_a_code_for_each_refusal() {
    let shop = Shop::with(&[("ann", "damaged"), ("bob", "late"), ("cat", "wrong")]).await;
    let router = shop.router();
    let (name, value) = bearer();
    let post = |path: String, body: &str| request(Method::POST, &path, &[(name, &value)], body);
    let [ann, bob, cat] = [0, 1, 2].map(|i| shop.asked[i].ticket.clone());

    let (status, listed) = get_page(&router, "/api/tickets?principal=bob").await;
    assert_eq!(status, StatusCode::OK);
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed["tickets"][0]["id"], bob.as_str());
    assert_eq!(listed["tickets"][0]["tool"], "refund_order");
    assert_eq!(
        listed["tickets"][0]["arguments"]["card_last4"],
        "[redacted]"
    );

    let approved = send(&router, post(format!("/api/tickets/{ann}/approve"), "")).await;
    assert_eq!(approved.status(), StatusCode::OK);
    let answer: Value = serde_json::from_str(&text(approved).await).unwrap();
    assert_eq!(answer["decided"], "approved");

    let again = send(
        &router,
        post(format!("/api/tickets/{ann}/deny"), r#"{"reason":"no"}"#),
    )
    .await;
    assert_eq!(again.status(), StatusCode::CONFLICT);
    let answer: Value = serde_json::from_str(&text(again).await).unwrap();
    assert_eq!(answer["error"], "already_decided");

    let unknown = send(&router, post("/api/tickets/nope/approve".into(), "")).await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);

    let no_reason = send(
        &router,
        post(format!("/api/tickets/{bob}/deny"), r#"{"reason":" "}"#),
    )
    .await;
    assert_eq!(no_reason.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let not_json = send(
        &router,
        post(format!("/api/tickets/{bob}/deny"), "reason=x"),
    )
    .await;
    assert_eq!(not_json.status(), StatusCode::UNPROCESSABLE_ENTITY);

    let out_of_range =
        r#"{"arguments":{"order_id":"O-cat","amount":900,"reason":"wrong","card_last4":"4242"}}"#;
    let invalid = send(
        &router,
        post(format!("/api/tickets/{cat}/edit"), out_of_range),
    )
    .await;
    assert_eq!(invalid.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let answer: Value = serde_json::from_str(&text(invalid).await).unwrap();
    assert_eq!(answer["error"], "invalid_arguments");
    assert_eq!(answer["violations"][0]["path"], "/amount");

    let redacted = r#"{"arguments":{"order_id":"O-cat","amount":20,"reason":"wrong","card_last4":"[redacted]"}}"#;
    let refused = send(&router, post(format!("/api/tickets/{cat}/edit"), redacted)).await;
    let answer: Value = serde_json::from_str(&text(refused).await).unwrap();
    assert_eq!(answer["error"], "redacted_value");
    assert_eq!(shop.state(2).await, TicketState::Waiting);

    let edited =
        r#"{"arguments":{"order_id":"O-cat","amount":15,"reason":"wrong","card_last4":"4242"}}"#;
    let done = send(&router, post(format!("/api/tickets/{cat}/edit"), edited)).await;
    assert_eq!(done.status(), StatusCode::OK);
    let ran = shop
        .registry
        .call_in(&shop.asked[2].session, shop.asked[2].call.clone())
        .await;
    assert!(ran.data().unwrap().get().contains("refunded 15 on O-cat"));
    assert_eq!(shop.ledger.ran("O-cat"), 1);

    let denied = send(
        &router,
        post(
            format!("/api/tickets/{bob}/deny"),
            r#"{"reason":"too late"}"#,
        ),
    )
    .await;
    assert_eq!(denied.status(), StatusCode::OK);
    assert!(matches!(shop.state(1).await, TicketState::Denied { .. }));
}

#[tokio::test]
async fn nested_under_a_path_its_links_redirects_and_cookie_follow_the_path() {
    let shop = Shop::with(&[("ann", "damaged")]).await;
    let router = Router::new().nest("/approvals", shop.router());
    let ticket = shop.asked[0].ticket.clone();

    let front = send(
        &router,
        request(Method::GET, &format!("/approvals?token={TOKEN}"), &[], ""),
    )
    .await;
    assert_eq!(front.status(), StatusCode::SEE_OTHER);
    assert_eq!(front.headers()["location"], "/approvals");
    let cookie = front.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.ends_with("Path=/approvals"), "{cookie}");

    let (status, body) = get_page(&router, "/approvals").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body.contains(&format!("action=\"/approvals/tickets/{ticket}/approve\"")),
        "{body}"
    );
    assert!(body.contains("data-poll=\"/approvals/version?\""), "{body}");

    let own = format!("http://{HOST}");
    let cookie = format!("{COOKIE}={TOKEN}");
    let headers = [("cookie", cookie.as_str()), ("origin", own.as_str())];
    let uri = format!("/approvals/tickets/{ticket}/approve");
    let response = send(&router, request(Method::POST, &uri, &headers, "")).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let location = response.headers()["location"].to_str().unwrap();
    assert!(location.starts_with("/approvals?notice="), "{location}");
    assert_eq!(shop.state(0).await, TicketState::Approved);

    // The API, nested too, refuses in JSON.
    let refused = send(
        &router,
        request(Method::GET, "/approvals/api/tickets", &[], ""),
    )
    .await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let answer: Value = serde_json::from_str(&text(refused).await).unwrap();
    assert_eq!(answer["error"], "unauthorized");
    let (status, listed) = get_page(&router, "/approvals/api/tickets").await;
    assert_eq!(status, StatusCode::OK, "{listed}");
}

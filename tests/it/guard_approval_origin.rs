//! The review page (`toolwright::review`) refuses a decision another origin sends: a form on
//! another port of the same host gets the page's cookie from the browser (`SameSite=Strict`
//! counts ports as the same site), so every `POST` signed in by the cookie must carry the
//! page's own `Origin`. Plain HTTP on loopback, no browser needed.
#![cfg(feature = "review-page")]

use std::sync::Arc;

use reqwest::StatusCode;
use toolwright::approval::Approvals;
use toolwright::conversation::{ConversationStore, MemoryConversationStore, TicketState};
use toolwright::review::{Token, COOKIE};

use crate::shop;
use crate::support::review_page::serve;

#[tokio::test]
async fn a_decision_from_another_origin_is_refused_with_403_and_decides_nothing() {
    let ledger = shop::Ledger::default();
    let registry = shop::registry(&ledger);
    let store: Arc<dyn ConversationStore> = Arc::new(MemoryConversationStore::new());
    let approvals = Approvals::new(Arc::clone(&store));
    let asked = shop::seed(&registry, &store)
        .await
        .expect("the seed calls wait");
    let token = Token::random().expect("a token");
    let address = serve(&registry, &store, &token, "").await;
    let token = token.as_str();
    let page_origin = format!("http://{address}");
    // No redirects followed: a decision answers 303 to the page.
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let cookie = format!("{COOKIE}={token}");
    let deny = |ticket: &str| {
        http.post(format!("{page_origin}/tickets/{ticket}/deny"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("reason=forged")
    };
    let state = |ticket: String| {
        let approvals = approvals.clone();
        async move { approvals.ticket(&ticket).await.unwrap().unwrap().state }
    };
    let first = &asked[0].ticket;

    // The reproduction: the cookie, and a page on another port of this host.
    let other_port = format!("http://127.0.0.1:{}", address.port().wrapping_add(1).max(1));
    for (name, value) in [
        ("origin", other_port.as_str()),
        ("origin", "http://evil.example"),
        ("origin", "null"),
        // The same host and port over another scheme is another origin too.
        ("origin", &*format!("ftp://{address}")),
        // No Origin, but the browser says where the request came from.
        ("sec-fetch-site", "same-site"),
        ("sec-fetch-site", "cross-site"),
    ] {
        let refused = deny(first)
            .header("cookie", &cookie)
            .header(name, value)
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN, "{name}: {value}");
        let body = refused.text().await.unwrap();
        assert!(body.contains("did not come from the review page"), "{body}");
    }
    // With the cookie and neither header: refused as well.
    let bare = deny(first).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(bare.status(), StatusCode::FORBIDDEN);
    // Every state-changing route, not only deny.
    for route in ["approve", "edit"] {
        let refused = http
            .post(format!("{page_origin}/tickets/{first}/{route}"))
            .header("cookie", &cookie)
            .header("origin", &other_port)
            .body("arguments=%7B%7D")
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN, "{route}");
    }
    assert_eq!(state(first.clone()).await, TicketState::Waiting);
    assert_eq!(ledger.ran("O-ann"), 0);

    // From the page itself, the decision is made.
    let from_page = deny(first)
        .header("cookie", &cookie)
        .header("origin", &page_origin)
        .send()
        .await
        .unwrap();
    assert_eq!(from_page.status(), StatusCode::SEE_OTHER);
    assert!(matches!(
        state(first.clone()).await,
        TicketState::Denied { .. }
    ));
    // A browser that sends only Sec-Fetch-Site: same-origin.
    let second = &asked[1].ticket;
    let same_origin = deny(second)
        .header("cookie", &cookie)
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .unwrap();
    assert_eq!(same_origin.status(), StatusCode::SEE_OTHER);
    // The bearer token is never attached by a browser on another page's behalf: no Origin needed.
    let third = &asked[2].ticket;
    let bearer = deny(third).bearer_auth(token).send().await.unwrap();
    assert_eq!(bearer.status(), StatusCode::SEE_OTHER);
    // Reading the page stays open to a cookie from anywhere (a link, a bookmark).
    let read = http
        .get(format!("{page_origin}/version"))
        .header("cookie", &cookie)
        .header("origin", &other_port)
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), StatusCode::OK);
}

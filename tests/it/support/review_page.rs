//! The library's review page (`toolwright::review`) served in-process on a loopback port, for
//! the tests that drive it.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::serve::ListenerExt;
use toolwright::approval::Approvals;
use toolwright::conversation::ConversationStore;
use toolwright::review::{ReviewPage, Token};
use toolwright::Registry;

/// The page served on a free loopback port, over `store`, answering to `token`: at the root
/// when `at` is empty, else nested at that path (`/approvals`).
pub async fn serve(
    registry: &Registry,
    store: &Arc<dyn ConversationStore>,
    token: &Token,
    at: &str,
) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .expect("bind the page");
    let address = listener.local_addr().expect("the page's address");
    let page = ReviewPage::new(
        registry.clone(),
        Approvals::new(Arc::clone(store)),
        token.clone(),
    )
    .router();
    let router = if at.is_empty() {
        page
    } else {
        axum::Router::new().nest(at, page)
    };
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, router).await });
    address
}

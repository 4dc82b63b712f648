//! The review page of examples/approvals served in-process on a loopback port, for the tests
//! that drive it (the binary's root declares `mod page` from the example).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::serve::ListenerExt;
use toolwright::approval::Approvals;
use toolwright::conversation::ConversationStore;
use toolwright::Registry;

use crate::page;

/// The page served on a free loopback port, over `store`, answering to `token`.
pub async fn serve(
    registry: &Registry,
    store: &Arc<dyn ConversationStore>,
    token: &str,
) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .expect("bind the page");
    let address = listener.local_addr().expect("the page's address");
    let router = page::router(
        registry.clone(),
        Approvals::new(Arc::clone(store)),
        token.to_owned(),
    );
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, router).await });
    address
}

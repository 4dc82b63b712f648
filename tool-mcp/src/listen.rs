//! The HTTP listener of [`McpServer::bind_http`](crate::McpServer::bind_http): hyper's HTTP/1
//! connection with a header read timeout, `TCP_NODELAY` on every accepted socket, at most so
//! many connections at once, and a `503` with `Retry-After` for one past the cap.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, Response, StatusCode};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// How many connections past the cap are answered `503` at once; further ones are closed
/// unanswered, so a flood costs no more than this many small tasks.
const REFUSALS_AT_ONCE: usize = 64;

/// The connection caps of one listener.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    pub(crate) max_connections: usize,
    pub(crate) header_read_timeout: Duration,
}

/// Serves `router` on `listener` until `shutdown`, then waits for open connections to finish.
pub(crate) async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    // Each open connection holds a permit; at shutdown, holding them all means every
    // connection has ended.
    let max = u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX);
    let connections = Arc::new(Semaphore::new(max as usize));
    let refusals = Arc::new(Semaphore::new(REFUSALS_AT_ONCE));
    // One wait for the whole loop, not one registered and removed again for every connection.
    let stopped = shutdown.cancelled();
    tokio::pin!(stopped);
    loop {
        let stream = tokio::select! {
            () = &mut stopped => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    nodelay(&stream);
                    stream
                }
                Err(e) => {
                    // Out of file descriptors and the like: wait rather than spin.
                    tracing::warn!(target: "toolwright::mcp", error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        if let Ok(permit) = Arc::clone(&connections).try_acquire_owned() {
            let router = router.clone();
            let shutdown = shutdown.clone();
            tokio::spawn(async move {
                connection(stream, router, limits, shutdown).await;
                drop(permit);
            });
        } else if let Ok(permit) = Arc::clone(&refusals).try_acquire_owned() {
            tokio::spawn(async move {
                refuse(stream, limits).await;
                drop(permit);
            });
        }
    }
    let _all = connections.acquire_many(max).await;
    let _refused = refusals.acquire_many(REFUSALS_AT_ONCE as u32).await;
    Ok(())
}

/// Turns Nagle's algorithm off on an accepted connection. With it on, the second small write
/// of a response (a streamed body's first chunk after the head) waits for the client to
/// acknowledge the first, and a client delays that acknowledgement by up to 40 ms: every
/// request on a kept-alive connection would stall that long. A failure costs latency, not
/// correctness, so it is logged and the connection served.
fn nodelay(stream: &TcpStream) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(target: "toolwright::mcp", error = %e, "setting TCP_NODELAY failed");
    }
}

fn builder(limits: ConnectionLimits) -> http1::Builder {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    builder
}

async fn connection(
    stream: TcpStream,
    router: axum::Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) {
    let service = TowerToHyperService::new(router);
    let connection = builder(limits).serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(e) = result {
                tracing::trace!(target: "toolwright::mcp", error = %e, "connection ended");
            }
        }
        () = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}

/// Reads one request (within the header timeout) and answers `503` with `Retry-After`,
/// closing the connection.
async fn refuse(stream: TcpStream, limits: ConnectionLimits) {
    let service = hyper::service::service_fn(|_request| async {
        let mut response = Response::new(Body::from(
            "{\"error\":\"Service Unavailable\",\"message\":\"this server holds its maximum of connections; retry later\"}",
        ));
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        let headers = response.headers_mut();
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        Ok::<_, Infallible>(response)
    });
    let mut builder = builder(limits);
    builder.keep_alive(false);
    let _ = builder
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

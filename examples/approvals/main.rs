//! A review page for calls waiting for a person's approval.
//!
//! ```text
//! cargo run --example approvals --features review-page          # tickets in this process
//! cargo run --example approvals --features review-page,redis -- --redis redis://127.0.0.1:6379/
//! cargo run --example approvals --features review-page -- --bind 127.0.0.1:9000 --token s3cret-of-16-chars
//! ```
//!
//! A shop's refund tool requires approval (`#[tool(requires_approval)]`); three customers'
//! refunds are left waiting, so the page has work on it. It lists the waiting calls (tool,
//! principal, age, arguments with the card digits redacted) with Approve, Deny with a reason,
//! and Edit arguments, checked by the tool's own validation before anything is decided. The
//! page reloads itself as tickets arrive. With `--redis` the tickets live in Redis: restart
//! the example and they are still waiting (it seeds only an empty queue).
//!
//! The page is the library's (`toolwright::review`); this file only wires it: the store, the
//! token, a listener. It listens on 127.0.0.1 unless `--bind` says otherwise, and answers only
//! to the token it prints (a fresh random one unless `--token` gives one).

mod shop;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::serve::ListenerExt;
use toolwright::approval::Approvals;
use toolwright::conversation::{ConversationStore, MemoryConversationStore, WaitingQuery};
use toolwright::review::{ReviewPage, Token};

struct Args {
    bind: SocketAddr,
    redis: Option<String>,
    token: Option<String>,
}

fn args() -> Result<Args, String> {
    let mut args = Args {
        bind: SocketAddr::from(([127, 0, 0, 1], 7878)),
        redis: None,
        token: None,
    };
    let mut given = std::env::args().skip(1);
    while let Some(flag) = given.next() {
        let mut value = || given.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--bind" => {
                let value = value()?;
                args.bind = value.parse().map_err(|e| {
                    format!("--bind {value}: expected an address such as 127.0.0.1:7878 ({e})")
                })?;
            }
            "--redis" => args.redis = Some(value()?),
            "--token" => args.token = Some(value()?),
            other => {
                return Err(format!(
                    "unknown argument `{other}`; expected --bind ADDR, --redis URL or --token TOKEN"
                ))
            }
        }
    }
    Ok(args)
}

async fn store(redis: Option<&str>) -> Result<Arc<dyn ConversationStore>, String> {
    let Some(url) = redis else {
        return Ok(Arc::new(MemoryConversationStore::new()));
    };
    #[cfg(feature = "redis")]
    {
        let store = toolwright::conversation::RedisConversationStore::connect(url)
            .await
            .map_err(|e| format!("--redis {url}: {e}"))?;
        Ok(Arc::new(store))
    }
    #[cfg(not(feature = "redis"))]
    Err(format!(
        "--redis {url}: this build has no Redis store; run with `--features redis`"
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args()?;
    let store = store(args.redis.as_deref()).await?;
    let ledger = shop::Ledger::default();
    let registry = shop::registry(&ledger);
    let approvals = Approvals::new(Arc::clone(&store));

    let waiting = approvals.waiting(&WaitingQuery::default()).await?;
    if waiting.tickets.is_empty() {
        shop::seed(&registry, &store).await?;
    }

    let token = match args.token {
        Some(token) => Token::new(token)?,
        None => Token::random()?,
    };
    let listener = tokio::net::TcpListener::bind(args.bind).await?;
    let address = listener.local_addr()?;
    println!(
        "Review the waiting approvals at http://{address}/?token={}",
        token.as_str()
    );
    if !address.ip().is_loopback() {
        println!("(listening on {address}, beyond this machine: keep the token secret)");
    }
    // No Nagle on the accepted sockets: a response's second write would otherwise wait for
    // the browser's delayed acknowledgement.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let page = ReviewPage::new(registry, approvals, token).router();
    axum::serve(listener, page).await?;
    Ok(())
}

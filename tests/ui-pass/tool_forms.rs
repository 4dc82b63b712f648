#![deny(unused_lifetimes, single_use_lifetimes, elided_lifetimes_in_paths, unused_qualifications)]

//! Every form of `#[tool]` besides `async fn .. -> Result<T, E>`: plain results, sync
//! functions, and the methods of a (generic) `#[toolset]` impl with every key and injected kind.

use toolwright::prelude::*;

/// Look up an order.
#[tool]
async fn get_order(order_id: String) -> String {
    order_id
}

/// Maybe an order.
#[tool(read_only)]
async fn maybe_order(order_id: String) -> Option<String> {
    Some(order_id)
}

/// Nothing to say.
#[tool(idempotent = true)]
fn forget(order_id: String) {
    let _ = order_id;
}

/// A cheap sync tool that runs inline.
#[tool(read_only, blocking = false)]
fn double(n: u32) -> u32 {
    n * 2
}

/// A sync side effect, retried under one key.
#[tool(retries = 2, timeout_ms = 500)]
fn charge(key: IdempotencyKey, amount: u32) -> Result<String, ToolError> {
    Ok(format!("{} {amount}", key.as_str()))
}

trait Db: Send + Sync + 'static {
    fn name(&self) -> String;
}

struct Service<D> {
    db: D,
}

struct Config {
    region: &'static str,
}

#[toolset]
impl<D> Service<D>
where
    D: Db,
{
    /// Name the database.
    #[tool(read_only, timeout_ms = 100, scopes = ["db:read"], grounds(db = ""))]
    async fn db_name(&self, context: ToolContext, config: State<Config>) -> Result<String, ToolError> {
        let _ = context.call_id();
        Ok(format!("{}@{}", self.db.name(), config.region))
    }

    /// Rename the database.
    #[tool(retries = 1, requires_approval, validate = Self::check, fallback = Self::later)]
    fn rename(
        &self,
        key: IdempotencyKey,
        /// The new name.
        #[arg(length(min = 1, max = 40), pattern = "^[a-z]+$")]
        #[arg(grounded = "db")]
        name: String,
    ) -> Result<<Self as Renaming>::Renamed, ToolError> {
        let _ = key;
        Ok(format!("{} -> {name}", self.db.name()))
    }

    fn later(&self, key: IdempotencyKey, name: String) -> Result<String, ToolError> {
        let _ = (key, name);
        Ok("queued".to_owned())
    }

    fn check(args: &RenameArgs) -> Result<(), ToolError> {
        let _ = args;
        Ok(())
    }
}

trait Renaming {
    type Renamed;
}

impl<D> Renaming for Service<D> {
    type Renamed = String;
}

struct Memory;

impl Db for Memory {
    fn name(&self) -> String {
        "memory".to_owned()
    }
}

fn main() {
    let _registry = Registry::builder()
        .tool(GetOrder)
        .tool(MaybeOrder)
        .tool(Forget)
        .tool(Double)
        .tool(Charge)
        .toolset(Service { db: Memory })
        .state(Config { region: "eu" })
        .build();
}

use toolwright::prelude::*;

struct Store<K> {
    keys: Vec<K>,
}

#[toolset]
impl<K: Send + Sync + 'static> Store<K> {
    /// Is the key known?
    #[tool(read_only)]
    async fn has(&self, key: K) -> bool {
        let _ = key;
        !self.keys.is_empty()
    }
}

fn main() {}

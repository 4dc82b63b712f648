use toolwright::prelude::*;

struct Jobs;

#[toolset]
impl Jobs {
    /// Wait for a job, up to a timeout.
    #[tool]
    async fn wait_for(&self, job: String, timeout: std::time::Duration) -> Result<String, ToolError> {
        let _ = timeout;
        Ok(job)
    }
}

fn main() {
    let _registry = Registry::builder().toolset(Jobs).build();
}

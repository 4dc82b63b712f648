use toolwright::prelude::*;

fn dates_in_order(args: &PlanTripArgs) -> bool {
    args.start <= args.end
}

/// Plan a trip between two days of the year.
#[tool(validate = dates_in_order)]
async fn plan_trip(start: u32, end: u32) -> Result<u32, ToolError> {
    Ok(end - start)
}

fn main() {}

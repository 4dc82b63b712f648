//! Every `#[arg]` rule, combined in one attribute and split over several, plus every
//! `#[tool]` key available today.

use toolwright::prelude::*;

fn even(value: &u32) -> Result<(), String> {
    if value % 2 == 0 {
        Ok(())
    } else {
        Err(format!("{value} is odd"))
    }
}

fn not_blank(value: &String) -> Result<(), &'static str> {
    if value.trim().is_empty() {
        Err("must not be blank")
    } else {
        Ok(())
    }
}

fn dates_in_order(args: &PlanTripArgs) -> Result<(), ToolError> {
    if args.start <= args.end {
        Ok(())
    } else {
        Err(ToolError::invalid("`start` must not be after `end`"))
    }
}

fn may_plan(_: &PlanTripArgs, session: &Session) -> Result<(), String> {
    if session.principal().is_some() {
        Ok(())
    } else {
        Err("sign in first".to_owned())
    }
}

/// Plan a trip.
#[tool(
    name = "plan-trip_v2",
    timeout_ms = 8000,
    idempotent = false,
    retries = 1,
    scopes = ["trips:write"],
    validate = dates_in_order,
    authorize = may_plan
)]
async fn plan_trip(
    key: IdempotencyKey,
    /// Destination airport code, combined rules in one attribute.
    #[arg(pattern = "^[A-Z]{3}$", length(min = 3, max = 3), one_of = ["CDG", "JFK"])]
    destination: String,
    /// Travellers, rules split over several attributes.
    #[arg(range(min = 2, max = 8))]
    #[arg(default = 2)]
    #[arg(validate = even)]
    travellers: u32,
    /// Nights.
    #[arg(range(min = 1, max = 30), one_of = [1, 7, 14])]
    nights: Option<u32>,
    /// Budget in euros.
    #[arg(range(min = 0.5, max = 1e6))]
    budget: f64,
    /// Temperature offset, a negative bound.
    #[arg(range(min = -40, max = 40), default = 0)]
    offset: i32,
    /// Free-text wishes.
    #[arg(length(max = 5), sensitive)]
    #[arg(validate = not_blank)]
    note: String,
    /// Tags.
    #[arg(length(min = 1, max = 10))]
    tags: Vec<String>,
    /// Cabin.
    #[arg(default = "economy", one_of = ["economy", "business"])]
    cabin: String,
    start: u32,
    end: u32,
) -> Result<String, ToolError> {
    let _ = (key, travellers, nights, budget, offset, note, tags, cabin, start, end);
    Ok(destination)
}

fn main() {
    let registry = Registry::builder().tool(PlanTrip).build().unwrap();
    let spec = registry.spec("plan-trip_v2").unwrap();
    let properties = &spec.input_schema()["properties"];
    // Rules combined in one attribute and split over several all reach the schema.
    let destination = &properties["destination"];
    assert_eq!(destination["pattern"], "^[A-Z]{3}$");
    assert_eq!(destination["minLength"], 3);
    assert_eq!(destination["enum"], serde_json::json!(["CDG", "JFK"]));
    let travellers = &properties["travellers"];
    assert_eq!((travellers["minimum"].as_f64(), travellers["maximum"].as_f64()), (Some(2.0), Some(8.0)));
    assert_eq!(travellers["default"], 2);
    assert_eq!(properties["offset"]["minimum"].as_f64(), Some(-40.0));
    assert_eq!(properties["cabin"]["default"], "economy");
    let _ = plan_trip;
}

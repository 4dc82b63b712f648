//! The same two tools on rig-core 0.44: its `Tool` trait, dispatched two ways.
//!
//! rig 0.44 has no `ToolSet::call` any more (0.44's changelog replaced it with the effect bus):
//! - `ErasedTool::execute` from a name map: the object-safe form every typed tool gets, text in,
//!   a `ToolResult` out (what the bus's `ToolAdapter` calls);
//! - the bus: a `ToolAdapter` behind an `ErasedHandler`, served with `serve_inline` the way the
//!   agent driver serves a `ToolCall` effect.
//!
//! Either way the `ToolResult` is serialized to text, as it is before it reaches a model.

use std::collections::HashMap;
use std::convert::Infallible;

use rig_core::effect::{EffectKind, Outcome};
use rig_core::serve::adapters::ToolAdapter;
use rig_core::serve::{serve_inline, ErasedHandler};
use rig_core::tool::{ErasedTool, Tool, ToolContext};

use crate::tools::{self, CreateShipmentArgs, Quote, QuoteShippingArgs};

/// `quote_shipping` as a rig tool.
pub struct RigQuote;

impl Tool for RigQuote {
    const NAME: &'static str = "quote_shipping";
    type Args = QuoteShippingArgs;
    type Output = Quote;
    type Error = Infallible;

    fn description(&self) -> String {
        "Quote the price of shipping a parcel.".to_owned()
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::to_value(toolwright::schemars::schema_for!(QuoteShippingArgs))
            .unwrap_or_default()
    }

    async fn call(
        &self,
        _context: &mut ToolContext,
        args: Self::Args,
    ) -> Result<Self::Output, Self::Error> {
        Ok(tools::quote(&args.country, args.weight_grams, &args.speed))
    }
}

/// `create_shipment` as a rig tool.
pub struct RigShipment;

impl Tool for RigShipment {
    const NAME: &'static str = "create_shipment";
    type Args = CreateShipmentArgs;
    type Output = Quote;
    type Error = Infallible;

    fn description(&self) -> String {
        "Book a shipment of one or more parcels for an order.".to_owned()
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::to_value(toolwright::schemars::schema_for!(CreateShipmentArgs))
            .unwrap_or_default()
    }

    async fn call(
        &self,
        _context: &mut ToolContext,
        args: Self::Args,
    ) -> Result<Self::Output, Self::Error> {
        Ok(tools::ship(&args))
    }
}

/// Both tools, both ways.
pub struct Rig {
    erased: HashMap<&'static str, Box<dyn ErasedTool>>,
    bus: HashMap<&'static str, ErasedHandler>,
}

impl Rig {
    pub fn new() -> Self {
        let mut erased: HashMap<&'static str, Box<dyn ErasedTool>> = HashMap::new();
        erased.insert(RigQuote::NAME, Box::new(RigQuote));
        erased.insert(RigShipment::NAME, Box::new(RigShipment));
        let mut bus = HashMap::new();
        bus.insert(
            RigQuote::NAME,
            ErasedHandler::new(ToolAdapter::new(RigQuote)),
        );
        bus.insert(
            RigShipment::NAME,
            ErasedHandler::new(ToolAdapter::new(RigShipment)),
        );
        Rig { erased, bus }
    }

    /// `ErasedTool::execute` on the owned argument text, looked up by name.
    pub async fn execute(&self, name: &str, arguments: String) -> String {
        let Some(tool) = self.erased.get(name) else {
            return format!("unknown tool {name}");
        };
        let mut context = ToolContext::new();
        let result = tool.execute(arguments, &mut context).await;
        serde_json::to_string(&result).unwrap_or_else(|e| e.to_string())
    }

    /// The bus: the call as a `ToolCall` effect, served inline by the tool's handler.
    pub async fn serve(&self, name: String, arguments: String) -> String {
        let Some(handler) = self.bus.get(name.as_str()) else {
            return format!("unknown tool {name}");
        };
        let kind = EffectKind::ToolCall {
            name,
            args: arguments,
        };
        let text = match serve_inline(handler, kind).await {
            Ok(Outcome::ToolResult { result }) => serde_json::to_string(&result),
            Ok(_) => Ok("unexpected outcome".to_owned()),
            Err(report) => Ok(report.to_string()),
        };
        text.unwrap_or_else(|e| e.to_string())
    }
}

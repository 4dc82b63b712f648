//! The README's provider refusals that `tests/it/providers_adapters.rs` does not reach with derived
//! types: OpenAI strict's limits (5,000 object properties, 1,000 enum values: at the limit exports,
//! one past it is refused), a multi-entry `allOf`, a keyword no provider dialect knows, and a
//! `$ref` outside the schema's own `$defs`. Each tool here is written by hand around an input
//! schema given as JSON (an application's schema, or one a derive would never write), and each
//! refusal is checked for its tool, path and construct.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{json, Map, Value};
use toolwright::prelude::*;
use toolwright::providers::{Construct, Export, ExportError, Provider};
use toolwright::{Invocation, ToolMeta};

/// A tool whose input schema is whatever `$schema()` returns.
macro_rules! raw_tool {
    ($tool:ident, $args:ident, $name:literal, $schema:expr) => {
        #[derive(Deserialize)]
        struct $args {}

        impl schemars::JsonSchema for $args {
            fn schema_name() -> Cow<'static, str> {
                stringify!($args).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::Schema::try_from($schema).unwrap()
            }
        }

        struct $tool;

        impl Tool for $tool {
            type Args = $args;
            type Output = bool;
            const META: ToolMeta = ToolMeta::new($name, "A tool with a hand-written schema.");
            async fn invoke(&self, _: $args, _: &Invocation<'_>) -> Result<bool, ToolError> {
                Ok(true)
            }
        }
    };
}

fn object_of(properties: Map<String, Value>) -> Value {
    json!({"type": "object", "properties": properties, "additionalProperties": false})
}

fn strings(n: usize) -> Value {
    object_of(
        (0..n)
            .map(|i| (format!("p{i}"), json!({"type": "string"})))
            .collect(),
    )
}

fn colours(n: usize) -> Value {
    let values: Vec<Value> = (0..n).map(|i| json!(format!("c{i}"))).collect();
    json!({
        "type": "object",
        "properties": {"colour": {"type": "string", "enum": values}},
        "required": ["colour"],
        "additionalProperties": false,
    })
}

raw_tool!(Wide, WideArgs, "wide", strings(5000));
raw_tool!(TooWide, TooWideArgs, "too_wide", strings(5001));
raw_tool!(Palette, PaletteArgs, "palette", colours(1000));
raw_tool!(
    TooManyColours,
    TooManyColoursArgs,
    "too_many_colours",
    colours(1001)
);
raw_tool!(
    BothRules,
    BothRulesArgs,
    "both_rules",
    json!({
        "type": "object",
        "properties": {"code": {"allOf": [{"type": "string"}, {"minLength": 3}]}},
        "additionalProperties": false,
    })
);
raw_tool!(
    NotX,
    NotXArgs,
    "not_x",
    json!({
        "type": "object",
        "properties": {"code": {"type": "string", "not": {"const": "x"}}},
        "additionalProperties": false,
    })
);
raw_tool!(
    Remote,
    RemoteArgs,
    "remote",
    json!({
        "type": "object",
        "properties": {"address": {"$ref": "https://example.com/schemas/address.json"}},
        "additionalProperties": false,
    })
);

fn registry_of<T: Tool>(tool: T) -> Registry {
    Registry::builder().tool(tool).build().unwrap()
}

/// The one problem of a refused export.
fn refused(registry: &Registry, export: impl Into<Export>) -> ExportError {
    let error = registry.export(export).unwrap_err();
    assert_eq!(error.problems().len(), 1, "{error}");
    error
}

#[test]
fn openai_strict_takes_5000_properties_and_refuses_5001() {
    registry_of(Wide).export(Provider::OpenAi).unwrap();

    let too_wide = registry_of(TooWide);
    let error = refused(&too_wide, Provider::OpenAi);
    let problem = &error.problems()[0];
    assert_eq!(problem.tool(), "too_wide");
    assert_eq!(
        problem.construct(),
        &Construct::Limit {
            what: "object properties",
            limit: 5000,
            actual: 5001
        }
    );
    assert!(error.to_string().contains("5001"), "{error}");
    // A limit of OpenAI's, not of JSON Schema: the other exports take it.
    too_wide.export(Provider::OpenAi.strict(false)).unwrap();
    too_wide.export(Provider::Anthropic.strict(true)).unwrap();
}

#[test]
fn openai_strict_takes_1000_enum_values_and_refuses_1001() {
    registry_of(Palette).export(Provider::OpenAi).unwrap();

    let too_many = registry_of(TooManyColours);
    let error = refused(&too_many, Provider::OpenAi);
    assert_eq!(
        error.problems()[0].construct(),
        &Construct::Limit {
            what: "enum values",
            limit: 1000,
            actual: 1001
        }
    );
    too_many.export(Provider::Mcp).unwrap();
}

#[test]
fn a_multi_entry_all_of_is_refused_with_its_path() {
    let r = registry_of(BothRules);
    for export in [
        Export::from(Provider::OpenAi),
        Provider::GeminiJsonSchema.into(),
    ] {
        let error = refused(&r, export);
        let problem = &error.problems()[0];
        assert_eq!(problem.tool(), "both_rules");
        assert_eq!(problem.path(), "/properties/code");
        assert_eq!(
            problem.construct(),
            &Construct::Keyword {
                keyword: "allOf".into()
            }
        );
    }
    // Exports that pass the schema as it is keep it.
    let mcp = r.export(Provider::Mcp).unwrap();
    assert_eq!(
        mcp[0]["inputSchema"]["properties"]["code"]["allOf"][1],
        json!({"minLength": 3})
    );
}

#[test]
fn an_unknown_constraining_keyword_is_refused_never_dropped() {
    let r = registry_of(NotX);
    for export in [
        Export::from(Provider::OpenAi),
        Provider::Anthropic.strict(true),
        Provider::Gemini.into(),
        Provider::GeminiJsonSchema.into(),
    ] {
        let error = refused(&r, export);
        let problem = &error.problems()[0];
        assert_eq!(problem.path(), "/properties/code/not", "{error}");
        assert_eq!(
            problem.construct(),
            &Construct::Keyword {
                keyword: "not".into()
            }
        );
    }
}

#[test]
fn a_reference_outside_the_schemas_own_defs_is_refused() {
    let r = registry_of(Remote);
    for export in [
        Export::from(Provider::OpenAi),
        Provider::GeminiJsonSchema.into(),
    ] {
        let error = refused(&r, export);
        let problem = &error.problems()[0];
        assert_eq!(problem.path(), "/properties/address");
        assert_eq!(
            problem.construct(),
            &Construct::ExternalRef {
                reference: "https://example.com/schemas/address.json".into()
            }
        );
    }
}

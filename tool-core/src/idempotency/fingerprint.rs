//! The fingerprint of a call: SHA-256 of the tool name and the canonical form of its arguments.
//!
//! Two argument texts have one fingerprint exactly when the tool would receive the same values
//! from them. So the canonical form is guided by the tool's input schema
//! ([`Fingerprint::for_tool`]):
//!
//! - object members are sorted by key, insignificant whitespace is dropped and string escapes
//!   are decoded (`"\u0041"` is `"A"`);
//! - a `null` is dropped only where serde erases it: a declared, optional property whose schema
//!   allows `null` and has no default (an `Option` parameter, where `null` and absence are both
//!   `None`). Everywhere else it is kept: a map value (`{"email": null}` clears an email, `{}`
//!   clears nothing), an array item, a property with a default (absent takes the default, `null`
//!   is `None`). A property with a default that is left out counts as its default written out;
//! - integers stay exact, whatever their size (`u128` ids differ in their last digit), and so do
//!   decimals, except where the schema says the value is an `f64` or `f32` (`format: "double"` or
//!   `"float"`): there a number is the float serde reads from it, so `5`, `5.0` and `5e0` are one
//!   number, and so are two long decimals that round to the same double.
//!
//! Where the schema cannot tell (an enum with data, a `serde_json::Value`, [`Fingerprint::of`]
//! without a schema) the form keeps every `null` and every exact number: two texts that the tool
//! might read differently never share a fingerprint there, at the price of telling apart a few
//! it would read alike. This is why the form is not RFC 8785 (JCS): JCS writes every number
//! through an IEEE double, which would make two large order numbers one fingerprint, and knows
//! nothing of the schema.
//!
//! SHA-256 (RustCrypto's `sha2`, pure Rust, widely audited) rather than a faster hash: the
//! fingerprint crosses process boundaries (a Redis store shared by replicas, a header a
//! downstream service may check), so it must be a stable, standard, collision-resistant
//! function; its cost on a few hundred bytes of arguments is well under a microsecond, nothing
//! beside the side effect it protects.

use std::fmt;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::canonical::{canonical, Plan};
use crate::tool::spec::ToolSpec;

/// Versions the canonical form, so a future change of it can never collide with this one.
/// v2: `null` kept where serde keeps it, exact numbers read from the text, schema-guided floats.
const DOMAIN: &[u8] = b"toolwright-fingerprint-v2\0";

/// SHA-256 of a tool name and its canonical arguments. Displayed as 64 lowercase hex digits.
///
/// ```
/// use toolwright::idempotency::Fingerprint;
///
/// let a = Fingerprint::of("refund_order", r#"{"order_id":"A1","amount":5}"#);
/// let b = Fingerprint::of("refund_order", r#"{ "amount": 5.0, "order_id": "A1" }"#);
/// assert_eq!(a, b);
/// assert_ne!(a, Fingerprint::of("refund_order", r#"{"order_id":"A1","amount":6}"#));
/// assert_ne!(a, Fingerprint::of("cancel_order", r#"{"order_id":"A1","amount":5}"#));
/// // Without a schema, a `null` is a value like any other (see `Fingerprint::for_tool`).
/// assert_ne!(a, Fingerprint::of("refund_order", r#"{"order_id":"A1","amount":5,"reason":null}"#));
/// assert_eq!(a.to_string().len(), 64);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// The fingerprint of a call of `tool` with the argument text `arguments`, without a schema:
    /// every `null` counts and every number is exact (`5` and `5.0` are one number; `0.1` and
    /// `0.10000000000000001` are two). Prefer [`Fingerprint::for_tool`], which agrees with what
    /// the tool receives.
    ///
    /// Never fails: text that is not JSON (which the validation seam rejects before any store
    /// sees it) is hashed byte for byte, in a domain of its own.
    pub fn of(tool: &str, arguments: &str) -> Fingerprint {
        Fingerprint::with_schema(tool, None, arguments)
    }

    /// The fingerprint of a call of `tool` whose arguments follow the JSON Schema `schema`
    /// (with its `$defs`), for tools registered without a [`ToolSpec`](crate::ToolSpec). `None`: as
    /// [`Fingerprint::of`].
    pub fn with_schema(tool: &str, schema: Option<&Value>, arguments: &str) -> Fingerprint {
        match schema {
            Some(schema) => Fingerprint::planned(tool, &Plan::compile(schema), arguments),
            None => Fingerprint::planned(tool, &Plan::UNKNOWN, arguments),
        }
    }

    fn planned(tool: &str, plan: &Plan, arguments: &str) -> Fingerprint {
        match canonical(arguments, plan) {
            Some(canonical) => Fingerprint::hash(tool, b"json\0", &canonical),
            None => Fingerprint::hash(tool, b"raw\0", arguments.as_bytes()),
        }
    }

    /// The fingerprint of a call of `tool` with already parsed arguments, without a schema.
    /// A `Value` holds integers beyond 64 bits as floats; hash the text when you have it.
    pub fn of_value(tool: &str, arguments: &Value) -> Fingerprint {
        Fingerprint::of(tool, &arguments.to_string())
    }

    /// The canonical text [`Fingerprint::of`] hashes, for debugging a mismatch.
    ///
    /// ```
    /// use toolwright::idempotency::Fingerprint;
    ///
    /// let text = Fingerprint::canonical_text(r#"{"b":[1.50,2e0],"a":{"y":null,"x":-0.0}}"#);
    /// assert_eq!(text.as_deref(), Some(r#"{"a":{"x":0,"y":null},"b":[1.5,2]}"#));
    /// ```
    pub fn canonical_text(arguments: &str) -> Option<String> {
        String::from_utf8(canonical(arguments, &Plan::UNKNOWN)?).ok()
    }

    /// The canonical text [`Fingerprint::with_schema`] hashes, for debugging a mismatch.
    pub fn canonical_text_with(schema: &Value, arguments: &str) -> Option<String> {
        String::from_utf8(canonical(arguments, &Plan::compile(schema))?).ok()
    }

    /// The 32 digest bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    fn hash(tool: &str, kind: &[u8], body: &[u8]) -> Fingerprint {
        let mut hasher = Sha256::new();
        hasher.update(DOMAIN);
        hasher.update(tool.as_bytes());
        hasher.update([0]);
        hasher.update(kind);
        hasher.update(body);
        Fingerprint(hasher.finalize().into())
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

// The fingerprint of a tool's call reads its spec's input schema.
impl Fingerprint {
    /// The fingerprint of a call of the tool `spec` describes: equal for two argument texts
    /// exactly when the tool receives equal values from them. This is the fingerprint the
    /// registry stores beside an idempotency key and shows an approver.
    ///
    /// The tool's input schema guides the canonical form: a `null` is dropped only where serde
    /// erases it (an optional, nullable property without a default, i.e. an `Option`
    /// parameter), and kept in maps, arrays and properties with a default; a property left out
    /// counts as its schema `default`; integers and decimals are exact from their text, except
    /// where schemars marks an `f64`/`f32` (`format: "double"`/`"float"`), where a number is
    /// the float serde reads. Where the schema cannot tell (an enum with data, a
    /// `serde_json::Value`) every `null` and every exact number counts.
    ///
    /// ```
    /// # use toolwright::{idempotency::Fingerprint, Registry};
    /// # fn demo(registry: &Registry) {
    /// let spec = registry.spec("update_profile").unwrap();
    /// // `fields: HashMap<String, Option<String>>`: a null clears a field, so it counts.
    /// assert_ne!(
    ///     Fingerprint::for_tool(spec, r#"{"fields":{}}"#),
    ///     Fingerprint::for_tool(spec, r#"{"fields":{"email":null}}"#),
    /// );
    /// # }
    /// ```
    pub fn for_tool(spec: &ToolSpec, arguments: &str) -> Fingerprint {
        Fingerprint::planned(spec.name(), spec.input_schema.plan(), arguments)
    }

    /// The canonical text [`Fingerprint::for_tool`](crate::idempotency::Fingerprint::for_tool)
    /// hashes, for debugging a mismatch.
    pub fn canonical_text_for(spec: &ToolSpec, arguments: &str) -> Option<String> {
        String::from_utf8(canonical(arguments, spec.input_schema.plan())?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canon(text: &str) -> String {
        Fingerprint::canonical_text(text).unwrap()
    }

    fn canon_with(schema: &Value, text: &str) -> String {
        String::from_utf8(canonical(text, &Plan::compile(schema)).unwrap()).unwrap()
    }

    /// The schema schemars writes for `fields: HashMap<String, Option<String>>`,
    /// `#[arg(default = Some(..))] mode: Option<String>`, `note: Option<String>`,
    /// `big: Option<u128>`, `ratio: Option<f64>`, `address: Option<Address>`.
    fn schema() -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "fields": {"type": "object", "additionalProperties": {"type": ["string", "null"]}},
                "mode": {"type": ["string", "null"], "default": "fast"},
                "note": {"type": ["string", "null"]},
                "big": {"type": ["integer", "null"], "format": "uint128", "minimum": 0},
                "ratio": {"type": ["number", "null"], "format": "double"},
                "small": {"type": ["number", "null"], "format": "float"},
                "address": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]},
                "tags": {"type": "array", "items": {"type": ["integer", "null"], "format": "int64"}}
            },
            "required": ["fields"],
            "$defs": {
                "Address": {
                    "type": "object",
                    "properties": {
                        "street": {"type": "string"},
                        "floor": {"type": ["integer", "null"], "format": "int32"},
                        "unit": {"type": ["number", "null"], "format": "double"}
                    },
                    "required": ["street"]
                }
            }
        })
    }

    #[test]
    fn member_order_whitespace_and_escapes_do_not_matter() {
        assert_eq!(
            canon(r#"{ "b" : 1, "a" : {"d":[1, 2], "c":"x"} }"#),
            r#"{"a":{"c":"x","d":[1,2]},"b":1}"#
        );
        assert_eq!(canon(r#""a\u0022\n\u0041""#), r#""a\"\nA""#);
        assert_eq!(canon(r#"{"\u0061":1}"#), r#"{"a":1}"#);
    }

    #[test]
    fn numbers_are_exact_without_a_schema() {
        assert_eq!(
            canon("[5, 5.0, 5e0, 50e-1, -0.0, 1.50, 1e300, 0.001, 1e-50, -12.5E+1]"),
            "[5,5,5,5,0,1.5,1e300,0.001,1e-50,-125]"
        );
        assert_ne!(canon("0.1"), canon("0.10000000000000001"));
        assert_ne!(
            Fingerprint::of("t", "9007199254740993"),
            Fingerprint::of("t", "9007199254740992")
        );
        assert_eq!(canon("18446744073709551615"), "18446744073709551615");
        assert_eq!(canon("-9223372036854775808"), "-9223372036854775808");
        assert_ne!(
            Fingerprint::of("t", "100000000000000000000000000000"),
            Fingerprint::of("t", "100000000000000000000000009999")
        );
        assert_eq!(
            canon("123456789012345678901234567890.000"),
            "123456789012345678901234567890"
        );
        assert_eq!(canon("1e99999999999999999999"), "~1e99999999999999999999");
    }

    #[test]
    fn each_number_has_one_spelling_at_every_boundary() {
        // The spellings at the edges of each branch of the exact writer: a point inside the
        // digits, just before them, zeros spelled out up to the limit, then an exponent.
        assert_eq!(canon("0.5"), "0.5");
        assert_eq!(canon("5e-1"), "0.5");
        assert_eq!(canon("12.5"), "12.5");
        assert_eq!(canon("0.05"), "0.05");
        assert_eq!(canon("1e40"), format!("1{}", "0".repeat(40)));
        assert_eq!(canon("1e41"), "1e41");
        assert_eq!(canon("1e-41"), format!("0.{}1", "0".repeat(40)));
        assert_eq!(canon("1e-42"), "1e-42");
        assert_eq!(canon("-1.5e-42"), "-1.5e-42");
        // Exponents up to 15 digits are read as numbers, so two spellings of one value meet.
        assert_eq!(canon("1e100000000000000"), canon("10e99999999999999"));
        assert_eq!(canon("1e100000000000000"), "1e100000000000000");
        // A float field: integral values below 2^53 as integers, 2^53 and above as floats.
        let schema = schema();
        assert_eq!(
            canon_with(&schema, r#"{"fields":{},"ratio":9007199254740991.0}"#),
            r#"{"fields":{},"mode":"fast","ratio":9007199254740991}"#
        );
        assert_eq!(
            canon_with(&schema, r#"{"fields":{},"ratio":9007199254740992}"#),
            r#"{"fields":{},"mode":"fast","ratio":9007199254740992.0}"#
        );
        // An integer as written: its own text while its trailing zeros are spelled out.
        let plain = format!("1{}", "0".repeat(40));
        assert_eq!(canon(&plain), plain);
        assert_eq!(canon(&format!("-{plain}")), format!("-{plain}"));
        assert_eq!(canon(&format!("{plain}0")), "1e41");
        assert_eq!(canon(&format!("-{plain}0")), "-1e41");
        assert_eq!(canon("-120"), "-120");
        assert_eq!(canon("-0"), "0");
        assert_eq!(canon("007"), "7");
        // A space is text, a control character is not valid JSON text.
        assert_eq!(canon(r#""a b""#), r#""a b""#);
        assert!(Fingerprint::canonical_text(r#""\u0001""#).is_some());
        assert!(Fingerprint::canonical_text("\"\x01\"").is_none());
    }

    #[test]
    fn literals_nesting_and_the_public_views_are_exact() {
        assert_eq!(canon("[true, false, null]"), "[true,false,null]");
        // 128 levels of nesting are read; one more is refused (no stack overflow on hostile text).
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert_eq!(canon(&nested(128)), nested(128));
        assert!(Fingerprint::canonical_text(&nested(129)).is_none());
        // Objects count toward the same limit, alone and mixed with arrays.
        let objects = |n: usize| format!("{}1{}", r#"{"a":"#.repeat(n), "}".repeat(n));
        assert_eq!(canon(&objects(128)), objects(128));
        assert!(Fingerprint::canonical_text(&objects(129)).is_none());
        let mixed = format!("{}{}{}", r#"{"a":"#.repeat(64), nested(65), "}".repeat(64));
        assert!(Fingerprint::canonical_text(&mixed).is_none());
        let schema = schema();
        let text = r#"{ "fields": {}, "ratio": 2.50 }"#;
        assert_eq!(
            Fingerprint::canonical_text_with(&schema, text).as_deref(),
            Some(canon_with(&schema, text).as_str())
        );
        let a = Fingerprint::of("t", r#"{"a":1}"#);
        let b = Fingerprint::of("t", r#"{"a":2}"#);
        let hex: String = a.as_bytes().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, a.to_string());
        assert_ne!(a.as_bytes(), b.as_bytes());
    }

    #[test]
    fn big_integers_stay_exact_with_a_schema() {
        let schema = schema();
        let a = r#"{"fields":{},"big":100000000000000000000000000000}"#;
        let b = r#"{"fields":{},"big":100000000000000000000000009999}"#;
        assert_ne!(canon_with(&schema, a), canon_with(&schema, b));
        assert!(canon_with(&schema, b).contains("100000000000000000000000009999"));
    }

    #[test]
    fn floats_are_the_float_serde_reads_where_the_schema_says_float() {
        let schema = schema();
        let double = |n: &str| canon_with(&schema, &format!(r#"{{"fields":{{}},"ratio":{n}}}"#));
        assert_eq!(double("5"), double("5.0"));
        assert_eq!(double("5e0"), double("50e-1"));
        assert_eq!(double("0.1"), double("0.10000000000000001"));
        assert_eq!(
            double("100000000000000000000000000000"),
            double("100000000000000000000000009999")
        );
        assert_eq!(double("-0.0"), double("0"));
        assert_ne!(double("0.1"), double("0.2"));
        let float = |n: &str| canon_with(&schema, &format!(r#"{{"fields":{{}},"small":{n}}}"#));
        assert_eq!(float("0.1"), float("0.100000001"));
        assert_ne!(double("0.1"), double("0.100000001"));
        // Through `$ref` and `Option` too.
        let unit = |n: &str| {
            canon_with(
                &schema,
                &format!(r#"{{"fields":{{}},"address":{{"street":"x","unit":{n}}}}}"#),
            )
        };
        assert_eq!(unit("2"), unit("2.0"));
        assert_eq!(unit("0.1"), unit("0.10000000000000001"));
    }

    #[test]
    fn null_counts_in_maps_arrays_and_defaulted_properties() {
        let schema = schema();
        let c = |t: &str| canon_with(&schema, t);
        assert_ne!(c(r#"{"fields":{}}"#), c(r#"{"fields":{"email":null}}"#));
        assert_ne!(c(r#"{"fields":{}}"#), c(r#"{"fields":{},"mode":null}"#));
        assert_ne!(
            c(r#"{"fields":{},"tags":[]}"#),
            c(r#"{"fields":{},"tags":[null]}"#)
        );
        // Where serde erases it, it is erased: an `Option` without a default, also nested.
        assert_eq!(c(r#"{"fields":{}}"#), c(r#"{"fields":{},"note":null}"#));
        assert_eq!(c(r#"{"fields":{}}"#), c(r#"{"fields":{},"address":null}"#));
        assert_eq!(
            c(r#"{"fields":{},"address":{"street":"x"}}"#),
            c(r#"{"fields":{},"address":{"street":"x","floor":null}}"#)
        );
    }

    #[test]
    fn a_left_out_default_counts_as_written() {
        let schema = schema();
        let c = |t: &str| canon_with(&schema, t);
        assert_eq!(c(r#"{"fields":{}}"#), c(r#"{"fields":{},"mode":"fast"}"#));
        assert_ne!(c(r#"{"fields":{}}"#), c(r#"{"fields":{},"mode":"slow"}"#));
        assert_eq!(c(r#"{"fields":{}}"#), r#"{"fields":{},"mode":"fast"}"#);
    }

    #[test]
    fn escapes_anywhere_in_a_string_are_read() {
        assert_eq!(canon(r#""\\""#), r#""\\""#);
        assert_eq!(canon(r#""\"\"""#), r#""\"\"""#);
        assert_eq!(
            canon(r#"{"path":"C:\\dir\\file"}"#),
            r#"{"path":"C:\\dir\\file"}"#
        );
        // A decoded control character is escaped again, as serde_json writes it; text without
        // anything to escape (non-ASCII and DEL included) is written as it came.
        assert_eq!(canon(r#""\u0001\n\t""#), r#""\u0001\n\t""#);
        assert_eq!(canon(r#"{"\u0041\u0022":"\u00e9"}"#), r#"{"A\"":"é"}"#);
        assert_eq!(canon("\"caf\u{e9} \u{7f}\""), "\"caf\u{e9} \u{7f}\"");
        // Text on either side of an escape, spaces included, is read whole.
        assert_eq!(canon(r#""a b\u00e9 c""#), "\"a b\u{e9} c\"");
        assert_eq!(canon(r#"{"k y\n":"x"}"#), r#"{"k y\n":"x"}"#);
        assert!(Fingerprint::canonical_text("\"a\\n\x01\"").is_none());
    }

    /// Whether `{"p":null}` and `{}` are one call where the optional property `p` has the
    /// schema `property`.
    fn null_erased(property: Value) -> bool {
        let schema = json!({"type": "object", "properties": {"p": property}});
        canon_with(&schema, r#"{"p":null}"#) == canon_with(&schema, "{}")
    }

    #[test]
    fn null_is_erased_only_where_the_property_accepts_null() {
        for admits in [
            json!(true),
            json!({}),
            json!({"type": "null"}),
            json!({"type": ["integer", "null"]}),
            json!({"enum": ["a", null]}),
            json!({"const": null}),
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
            json!({"oneOf": [{"type": "string"}, {"type": "null"}]}),
        ] {
            assert!(null_erased(admits.clone()), "{admits}");
        }
        // There a `null` is refused by the tool: kept, so it never shares a fingerprint with
        // a call the tool accepts.
        for refuses in [
            json!(false),
            json!({"type": "string"}),
            json!({"type": ["string", "integer"]}),
            json!({"enum": ["a", "b"]}),
            json!({"const": "a"}),
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
        ] {
            assert!(!null_erased(refuses.clone()), "{refuses}");
        }
    }

    #[test]
    fn a_null_branch_is_looked_for_eight_levels_deep_and_a_cyclic_schema_ends() {
        let nested = |levels: usize| {
            (0..levels).fold(
                json!({"type": "null"}),
                |inner, _| json!({"anyOf": [{"type": "string"}, inner]}),
            )
        };
        assert!(null_erased(nested(8)));
        // Deeper, the null is kept: never erased on a guess.
        assert!(!null_erased(nested(9)));
        let cyclic = json!({
            "type": "object",
            "properties": {"p": {"$ref": "#/$defs/A"}},
            "$defs": {"A": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "string"}]}}
        });
        assert_ne!(
            canon_with(&cyclic, r#"{"p":null}"#),
            canon_with(&cyclic, "{}")
        );
    }

    #[test]
    fn a_number_is_a_float_only_where_the_schema_admits_nothing_else() {
        let same = |property: Value, a: &str, b: &str| {
            let schema = json!({"type": "object", "properties": {"n": property}});
            canon_with(&schema, &format!(r#"{{"n":{a}}}"#))
                == canon_with(&schema, &format!(r#"{{"n":{b}}}"#))
        };
        let (a, b) = ("0.1", "0.10000000000000001");
        let (c, d) = ("0.1", "0.100000001");
        // A required `f64` or `f32`.
        assert!(same(json!({"type": "number", "format": "double"}), a, b));
        assert!(same(json!({"type": "number", "format": "float"}), c, d));
        // A number that may be something else, or has no float format: exact.
        assert!(!same(
            json!({"type": ["number", "string"], "format": "double"}),
            a,
            b
        ));
        assert!(!same(
            json!({"type": ["number", "string"], "format": "float"}),
            c,
            d
        ));
        assert!(!same(json!({"type": "integer", "format": "double"}), a, b));
        assert!(!same(json!({"type": "number"}), a, b));
        // The values of a map follow `additionalProperties`.
        let map = json!({"type": "object", "additionalProperties": {"type": "number", "format": "double"}});
        assert_eq!(
            canon_with(&map, r#"{"x":0.1}"#),
            canon_with(&map, r#"{"x":0.10000000000000001}"#)
        );
    }

    /// A schema whose definitions chain `depth` levels through `via`, each level's `n`.
    fn chain(depth: usize, via: &str) -> Value {
        let mut defs = serde_json::Map::new();
        for i in 0..depth {
            let next = json!({"$ref": format!("#/$defs/D{}", i + 1)});
            let level = match via {
                "properties" => json!({"type": "object", "properties": {"n": next}}),
                "items" => json!({"type": "array", "items": next}),
                "prefixItems" => json!({"type": "array", "prefixItems": [next]}),
                _ => json!({"type": "object", "additionalProperties": next}),
            };
            defs.insert(format!("D{i}"), level);
        }
        defs.insert(
            format!("D{depth}"),
            json!({"type": "number", "format": "double"}),
        );
        json!({"$ref": "#/$defs/D0", "$defs": defs})
    }

    #[test]
    fn a_long_chain_of_definitions_is_compiled_only_as_deep_as_text_can_go() {
        // Far deeper than the text a tool can receive (128 levels): compiling it all would
        // recurse 20,000 levels down and overflow the stack.
        for via in ["properties", "items", "prefixItems", "additionalProperties"] {
            let schema = chain(20_000, via);
            let text = match via {
                "properties" => r#"{"n":{"n":{"n":1.0}}}"#,
                "additionalProperties" => r#"{"x":{"y":{"z":1.0}}}"#,
                _ => "[[[1.0]]]",
            };
            let expected = text.replace("1.0", "1");
            assert_eq!(canon_with(&schema, text), expected, "{via}");
        }
        // As deep as text goes, the schema is still followed: a double in 128 arrays.
        let schema = chain(128, "items");
        let deepest = |number: &str| format!("{}{number}{}", "[".repeat(128), "]".repeat(128));
        assert_eq!(
            canon_with(&schema, &deepest("0.10000000000000001")),
            deepest("0.1")
        );
    }

    #[test]
    fn of_a_key_given_twice_the_last_counts() {
        assert_eq!(canon(r#"{"a":1,"b":2,"a":3}"#), r#"{"a":3,"b":2}"#);
    }

    #[test]
    fn null_is_kept_without_a_schema() {
        assert_eq!(
            canon(r#"{"a":null,"b":[null]}"#),
            r#"{"a":null,"b":[null]}"#
        );
        assert_ne!(Fingerprint::of("t", "[null]"), Fingerprint::of("t", "[]"));
        assert_ne!(
            Fingerprint::of("t", r#"{"a":null}"#),
            Fingerprint::of("t", "{}")
        );
    }

    #[test]
    fn array_order_strings_and_the_tool_name_are_significant() {
        assert_ne!(Fingerprint::of("t", "[1,2]"), Fingerprint::of("t", "[2,1]"));
        assert_ne!(
            Fingerprint::of("t", r#""A1""#),
            Fingerprint::of("t", r#""a1""#)
        );
        assert_ne!(Fingerprint::of("t", "{}"), Fingerprint::of("u", "{}"));
    }

    #[test]
    fn text_that_is_not_json_is_hashed_as_is_and_never_equals_json() {
        assert_eq!(Fingerprint::of("t", "{oops"), Fingerprint::of("t", "{oops"));
        assert_ne!(
            Fingerprint::of("t", "{oops"),
            Fingerprint::of("t", "{oops ")
        );
        assert_ne!(Fingerprint::of("t", "1"), Fingerprint::of("t", "1 x"));
        for broken in [
            "",
            "{",
            "[1,]",
            "{\"a\"}",
            "\"\\",
            "nul",
            "5.",
            "--1",
            "{\"a\":1,}",
        ] {
            assert_eq!(Fingerprint::canonical_text(broken), None, "{broken}");
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert_eq!(Fingerprint::canonical_text(&deep), None);
    }

    #[test]
    fn display_is_sha256_hex() {
        let fp = Fingerprint::of("refund_order", "{}");
        let hex = fp.to_string();
        assert_eq!(hex.len(), 64);
        assert!(hex
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    }
}

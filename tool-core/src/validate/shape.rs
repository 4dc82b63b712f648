//! Shape failures: turning a failed parse into every problem, each with its path.
//!
//! The fast path parses the argument text straight into the typed struct; serde stops at the
//! first problem and says little about it. Only when that fails do we come here and re-read the
//! text as a `serde_json::Value`, validate it against the tool's input schema (the `jsonschema`
//! crate, compiled once per tool on first failure) and report all problems at once. When the
//! schema finds nothing (a custom `Deserialize` disagreed with it), serde's own error is
//! reported at the path it stopped at ([`super::serde_error`]).

use std::sync::{Arc, OnceLock};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::Validator;
use serde::de::DeserializeOwned;
use serde_json::error::Category;
use serde_json::Value;

use super::metered;
use super::report;
use super::serde_error::from_serde;
use super::words::{
    article, child, listed, must_be_violation, out_of_range, required_violation, shown_pattern,
    shown_value, type_violation, unknown_violation, valid_arguments,
};
use super::{
    bounded_pointer, counted, display_path, length_expected, preview_json, summarize,
    MAX_REPORTED_VIOLATIONS,
};
use crate::outcome::{ErrorKind, Failure, ToolSchema, Violation};
use crate::tool::schema::IntegerType;
use crate::wording::concat;

/// A tool's input-schema validator, built on the first shape failure and kept.
#[derive(Default)]
pub(crate) struct ShapeValidator(OnceLock<Option<Box<Compiled>>>);

/// A schema's validator, and its plan for counting what a check costs.
pub(crate) struct Compiled {
    validator: Validator,
    plan: metered::Plan,
    /// The one-pass report of the arguments' problems, for schemas it covers.
    report: Option<report::Plan>,
}

impl ShapeValidator {
    /// A validator built ahead of time (a tool defined at run time checks every call with it).
    pub(crate) fn compiled(compiled: Compiled) -> Self {
        ShapeValidator(OnceLock::from(Some(Box::new(compiled))))
    }

    /// Whether `value`, read from `bytes` of argument text, satisfies `schema`, if checking
    /// that fits in the steps [`metered::steps_for`] allows that text.
    pub(crate) fn check(&self, schema: &Value, value: &Value, bytes: usize) -> Verdict {
        let Some(compiled) = self.get(schema) else {
            return Verdict::Valid;
        };
        if !compiled.plan.fits(value, metered::steps_for(bytes)) {
            Verdict::TooCostly
        } else if compiled.validator.is_valid(value) {
            Verdict::Valid
        } else {
            Verdict::Invalid
        }
    }

    fn get(&self, schema: &Value) -> Option<&Compiled> {
        self.0
            .get_or_init(|| build(schema).ok().map(Box::new))
            .as_deref()
    }
}

/// The validator of `schema` (draft 2020-12) with every `pattern` and `patternProperties` on
/// the `regex` crate's engine, whose matching time is linear in the string's length: a schema
/// toolwright did not write (a runtime tool's, a proxied server's) cannot make one argument
/// cost seconds of backtracking. The pattern is read as ECMA-262 (`\d` is `[0-9]`), as
/// `#[arg(pattern)]` reads it. A pattern that engine cannot run (a lookaround, a backreference)
/// fails the build.
pub(crate) fn build(schema: &Value) -> Result<Compiled, jsonschema::ValidationError<'static>> {
    let validator = jsonschema::draft202012::options()
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .build(schema)?;
    Ok(Compiled {
        validator,
        plan: metered::Plan::new(schema),
        report: report::Plan::new(schema),
    })
}

/// The failure of arguments the schema refused, when listing each problem would cost more
/// than a report may take: one violation naming the arguments as a whole.
fn unreported(bytes: usize, schema: &Arc<ToolSchema>) -> Failure {
    let mut failure = Failure::new(
        ErrorKind::SchemaMismatch,
        format!(
            "the arguments do not satisfy the tool's input schema, and listing each problem in these {bytes} bytes would take more than the {} steps a report may take; send fewer values to have the problems listed",
            metered::steps_for(bytes)
        ),
    );
    failure.violations = vec![Violation {
        path: String::new(),
        rule: "schema",
        expected: "arguments that satisfy the tool's input schema".into(),
        got: Some(format!("{bytes} bytes of arguments that do not")),
        message: "the arguments do not satisfy the tool's input schema".into(),
    }];
    failure.expected_schema = Some(Arc::clone(schema));
    failure
}

/// What a bounded check of the arguments came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Valid,
    Invalid,
    /// A full check would take more steps than the arguments' length allows; not checked.
    TooCostly,
}

/// The refusal of arguments too costly to check: `bad_request`, retryable (fewer or shorter
/// values may pass), the message saying what was too costly and what to send instead.
pub(crate) fn too_costly(bytes: usize) -> Failure {
    let mut failure = Failure::new(
        ErrorKind::BadRequest,
        format!(
            "checking these {bytes} bytes of arguments against the tool's schema would take more than the {} steps allowed for arguments of this length; send fewer values or shorter ones, or split the work into several calls",
            metered::steps_for(bytes)
        ),
    );
    failure.retryable = true;
    failure
}

/// The fast path: the argument text straight into the typed struct, no `Value` in between.
///
/// serde_json also reads a struct from a JSON array, field by field in declaration order; the
/// schema promises an object and providers send objects, so text that does not open with `{` is
/// refused here (`None`) and classified by [`failure`].
pub(crate) fn parse<T: DeserializeOwned>(text: &str) -> Result<T, Option<serde_json::Error>> {
    if !opens_object(text) {
        return Err(None);
    }
    serde_json::from_str(text).map_err(Some)
}

/// Whether the first character of `text` past JSON whitespace is `{`. (Apart from [`parse`]:
/// compiled once, not once per argument type.)
fn opens_object(text: &str) -> bool {
    text.bytes()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        == Some(b'{')
}

/// Classifies a failed [`parse`] of `text` as `invalid_json`, `unknown_argument` or
/// `schema_mismatch`, with every violation found.
#[cold]
#[inline(never)]
pub(crate) fn failure(
    text: &str,
    error: Option<&serde_json::Error>,
    schema: &Arc<ToolSchema>,
    validator: &ShapeValidator,
) -> Failure {
    if let Some(error) = error.filter(|e| e.classify() != Category::Data) {
        return invalid_json(text, error, schema);
    }
    // Most schemas have a plan that lists every problem in one pass over the text.
    if opens_object(text) {
        if let Some(plan) = validator.get(schema).and_then(|c| c.report.as_ref()) {
            match plan.report(text) {
                Ok(found) if !found.violations.is_empty() => {
                    return reported(found.violations, found.truncated, schema);
                }
                // The schema holds: what serde refused is said below.
                Ok(_) => {}
                // Past the value serde refused, the text is not JSON.
                Err(e) => return invalid_json(text, &e, schema),
            }
        }
    }
    // The typed parse reached the data, so the text is JSON; a failure here would be a
    // recursion limit the typed parse never reached.
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return invalid_json(text, &e, schema),
    };
    let mut violations = Vec::new();
    let mut truncated = false;
    if !value.is_object() {
        violations.push(Violation {
            path: String::new(),
            rule: "type",
            expected: "an object".into(),
            got: Some(preview_json(&value)),
            message: format!(
                "the arguments must be a JSON object, got {}",
                preview_json(&value)
            ),
        });
    } else if let Some(Compiled {
        validator, plan, ..
    }) = validator.get(schema)
    {
        // Arguments whose full check would take more steps than their length allows are
        // refused unread. A report applies every subschema to every value it reaches (it does
        // not stop at the first problem, and it builds an error for every failed branch of an
        // `anyOf`, some 25 verdict steps each): when that would pass the steps allowed, with
        // the steps under branches counted at that cost, the failure names the arguments as a
        // whole.
        // A report that fits also fits as a verdict (its steps only weigh more), so most
        // failures walk the arguments once.
        let (bytes, steps) = (text.len(), metered::steps_for(text.len()));
        if !plan.report_fits(&value, steps) {
            if !plan.fits(&value, steps) {
                return too_costly(bytes);
            }
            // When the schema holds, what serde refused is said below.
            if !validator.is_valid(&value) {
                return unreported(bytes, schema);
            }
        } else {
            for e in validator.iter_errors(&value) {
                if violations.len() >= MAX_REPORTED_VIOLATIONS {
                    // Enough to act on: the rest is neither built nor sent.
                    truncated = true;
                    break;
                }
                convert(
                    &bounded_pointer(e.instance_path().as_str()),
                    (e.kind(), e.schema_path().as_str()),
                    e.instance(),
                    schema,
                    &mut violations,
                );
            }
        }
    }
    if violations.len() > MAX_REPORTED_VIOLATIONS {
        // One error can make many (every unknown key of one object).
        violations.truncate(MAX_REPORTED_VIOLATIONS);
        truncated = true;
    }
    if violations.is_empty() {
        violations.push(from_serde(text, error, &value));
    }
    reported(violations, truncated, schema)
}

/// The failure listing `violations` (of which there were more when `truncated`):
/// `unknown_argument` when every one is an argument the tool does not have, else
/// `schema_mismatch`.
fn reported(violations: Vec<Violation>, truncated: bool, schema: &Arc<ToolSchema>) -> Failure {
    let kind = if violations.iter().all(|v| v.rule == "unknown_argument") {
        ErrorKind::UnknownArgument
    } else {
        ErrorKind::SchemaMismatch
    };
    let mut message = summarize(&violations);
    if truncated {
        message.push_str(&format!(
            "; only the first {MAX_REPORTED_VIOLATIONS} problems are listed: fix them and call again"
        ));
    }
    let mut failure = Failure::new(kind, message);
    failure.violations = violations;
    failure.expected_schema = Some(Arc::clone(schema));
    failure
}

fn invalid_json(text: &str, error: &serde_json::Error, schema: &Arc<ToolSchema>) -> Failure {
    // `got` describes the text instead of quoting it: the model wrote it and a broken text can be
    // arbitrarily long; the position in the message says where it broke.
    let (message, got) = if text.trim().is_empty() {
        (
            "the arguments are empty; send a JSON object (`{}` when the tool takes no arguments)"
                .to_owned(),
            if text.is_empty() {
                "empty text".to_owned()
            } else {
                "only whitespace".to_owned()
            },
        )
    } else if error.to_string().starts_with("recursion limit exceeded") {
        (
            format!(
                "the arguments are nested too deeply to parse (more than 128 levels, at line {} column {}); send a flat JSON object",
                error.line(),
                error.column()
            ),
            "JSON nested more than 128 levels deep".to_owned(),
        )
    } else {
        (
            format!(
                "the arguments are not valid JSON ({error}); resend them as one JSON object that matches expected_schema"
            ),
            match text.chars().count() {
                1 => "1 character of text that is not JSON".to_owned(),
                n => format!("{n} characters of text that is not JSON"),
            },
        )
    };
    let mut failure = Failure::new(ErrorKind::InvalidJson, message.clone());
    failure.violations.push(Violation {
        path: String::new(),
        rule: "json",
        expected: "a JSON object".into(),
        got: Some(got),
        message,
    });
    failure.expected_schema = Some(Arc::clone(schema));
    failure
}

fn type_name(kind: &TypeKind) -> String {
    match kind {
        TypeKind::Single(t) => article(&t.to_string()),
        TypeKind::Multiple(set) => {
            let names: Vec<String> = set.iter().map(|t| t.to_string()).collect();
            names.join(" or ")
        }
    }
}

/// Names the arguments the tool defines, for unknown-argument messages.
fn defined_arguments(schema: &Value, parent: &str) -> Vec<String> {
    // Only the top level has a fixed, well-known property list worth naming.
    if !parent.is_empty() {
        return Vec::new();
    }
    let mut names: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// The integer type whose range a `minimum`/`maximum` at `keyword` (a pointer into `schema`,
/// `$ref`s not followed) is, when it is one: the bound came from the type, not a declaration.
fn type_bound(schema: &Value, keyword: &str, limit: &Value) -> Option<IntegerType> {
    let (parent, _) = keyword.rsplit_once('/')?;
    let node = schema.pointer(parent)?;
    let integer = IntegerType::by_format(node.get("format")?.as_str()?)?;
    let at_bound = limit.as_i64().map(i128::from) == Some(integer.min)
        || limit.as_u64().map(u128::from) == Some(integer.max);
    at_bound.then_some(integer)
}

fn convert(
    path: &str,
    (kind, keyword): (&ValidationErrorKind, &str),
    instance: &Value,
    schema: &Value,
    out: &mut Vec<Violation>,
) {
    if let ValidationErrorKind::Minimum { limit } | ValidationErrorKind::Maximum { limit } = kind {
        if let Some(integer) = type_bound(schema, keyword, limit) {
            out.push(out_of_range(path, integer, instance.to_string()));
            return;
        }
    }
    let must_be = |rule, expected, got| must_be_violation(path.to_owned(), rule, expected, got);
    let bound = |rule: &'static str, words: &str, limit: &Value| {
        let limit = limit.to_string();
        must_be(rule, concat(&[words, &limit]), instance.to_string())
    };
    let violation = match kind {
        ValidationErrorKind::Type { kind } => {
            type_violation(path.to_owned(), type_name(kind), preview_json(instance))
        }
        ValidationErrorKind::Required { property } => {
            required_violation(child(path, property.as_str().unwrap_or_default()))
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let valid = valid_arguments(&defined_arguments(schema, path));
            for name in unexpected {
                out.push(unknown_violation(child(path, name), name, &valid));
            }
            return;
        }
        ValidationErrorKind::Minimum { limit } => bound("range", "at least ", limit),
        ValidationErrorKind::Maximum { limit } => bound("range", "at most ", limit),
        ValidationErrorKind::ExclusiveMinimum { limit } => bound("range", "more than ", limit),
        ValidationErrorKind::ExclusiveMaximum { limit } => bound("range", "less than ", limit),
        ValidationErrorKind::MinLength { limit }
        | ValidationErrorKind::MaxLength { limit }
        | ValidationErrorKind::MinItems { limit }
        | ValidationErrorKind::MaxItems { limit } => {
            // One wording for strings and lists; only the count and its unit differ.
            let (count, unit) = match instance {
                Value::Array(a) => (a.len() as u64, "items"),
                other => (
                    other.as_str().map_or(0, |s| s.chars().count()) as u64,
                    "characters",
                ),
            };
            let at_least = matches!(
                kind,
                ValidationErrorKind::MinLength { .. } | ValidationErrorKind::MinItems { .. }
            );
            must_be(
                "length",
                length_expected(at_least, *limit, unit),
                counted(count, unit),
            )
        }
        ValidationErrorKind::MinProperties { limit }
        | ValidationErrorKind::MaxProperties { limit } => {
            let count = instance.as_object().map_or(0, serde_json::Map::len) as u64;
            let at_least = matches!(kind, ValidationErrorKind::MinProperties { .. });
            must_be(
                "length",
                length_expected(at_least, *limit, "entries"),
                counted(count, "entries"),
            )
        }
        ValidationErrorKind::Pattern { pattern } => must_be(
            "pattern",
            concat(&["a string matching ", &shown_pattern(pattern)]),
            preview_json(instance),
        ),
        ValidationErrorKind::OneOfNotValid { context } | ValidationErrorKind::AnyOf { context }
            if constants(context).is_some() =>
        {
            // An enum whose variants carry docs is a `oneOf` of documented `const`s: say which
            // values are allowed, not which keyword failed.
            let values = constants(context).unwrap_or_default();
            let allowed = listed(values.iter().map(|v| shown_value(v)), values.len());
            must_be(
                "one_of",
                concat(&["one of ", &allowed]),
                preview_json(instance),
            )
        }
        ValidationErrorKind::Enum { options }
        | ValidationErrorKind::Constant {
            expected_value: options,
        } => {
            let expected = match options.as_array() {
                Some(items) => concat(&[
                    "one of ",
                    &listed(items.iter().map(shown_value), items.len()),
                ]),
                None => shown_value(options),
            };
            must_be("one_of", expected, preview_json(instance))
        }
        other => {
            let keyword = other.keyword();
            let got = preview_json(instance);
            let message = concat(&[
                "`",
                &display_path(path),
                "` does not satisfy the schema's `",
                keyword,
                "` rule, got ",
                &got,
            ]);
            Violation {
                path: path.to_owned(),
                rule: "schema",
                expected: concat(&["to satisfy `", keyword, "`"]),
                got: Some(got),
                message,
            }
        }
    };
    out.push(violation);
}

/// The values of a `oneOf`/`anyOf` whose every branch failed on one `const` (or `enum`): the
/// allowed values, in order. `None` when any branch failed otherwise.
fn constants<'a>(
    branches: &'a [Vec<jsonschema::ValidationError<'static>>],
) -> Option<Vec<&'a Value>> {
    let mut values = Vec::new();
    for branch in branches {
        match branch.as_slice() {
            [only] => match only.kind() {
                ValidationErrorKind::Constant { expected_value } => values.push(&**expected_value),
                ValidationErrorKind::Enum { options } => {
                    values.extend(options.as_array()?.iter());
                }
                _ => return None,
            },
            _ => return None,
        }
    }
    (!values.is_empty()).then_some(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// The messages of the slow path for `text` against `schema`.
    fn messages(schema: Value, text: &str) -> Vec<String> {
        let schema = Arc::new(ToolSchema::new(schema));
        let failure = failure(text, None, &schema, &ShapeValidator::default());
        failure.violations.into_iter().map(|v| v.message).collect()
    }

    #[test]
    fn only_an_object_is_read_into_the_argument_struct() {
        assert!(parse::<Sizes>(" \n{\"qty\": 2}").is_ok());
        // serde would read a struct from an array, field by field: refused before it can.
        assert!(serde_json::from_str::<Sizes>("[2, null, null]").is_ok());
        assert!(matches!(parse::<Sizes>("[2, null, null]"), Err(None)));
        assert!(matches!(parse::<Sizes>(""), Err(None)));
    }

    #[test]
    fn an_unknown_argument_is_answered_with_the_arguments_there_are() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "b": {"type": "string"},
                "a": {"type": "string"},
                "o": {"type": "object", "properties": {"x": {}}, "additionalProperties": false}
            },
            "additionalProperties": false
        });
        assert_eq!(
            messages(schema.clone(), r#"{"a":"1","c":2}"#),
            ["unknown argument `c`; valid arguments are `a`, `b`, `o`"]
        );
        // Below the top level there is no fixed list worth naming.
        assert_eq!(
            messages(schema, r#"{"o":{"y":1}}"#),
            ["unknown argument `o.y`; remove it"]
        );
    }

    #[test]
    fn an_expected_type_is_named_with_its_article() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "s": {"type": "string"},
                "z": {"type": "null"},
                "l": {"type": "array"},
                "m": {"type": ["string", "null"]}
            }
        });
        let got = |text: &str| messages(schema.clone(), text);
        assert_eq!(
            got(r#"{"n":"x"}"#),
            ["`n`: expected an integer, got string \"x\""]
        );
        assert_eq!(got(r#"{"s":1}"#), ["`s`: expected a string, got number 1"]);
        assert_eq!(got(r#"{"z":1}"#), ["`z`: expected null, got number 1"]);
        assert_eq!(got(r#"{"l":1}"#), ["`l`: expected an array, got number 1"]);
        assert_eq!(
            got(r#"{"m":1}"#),
            ["`m`: expected null or string, got number 1"]
        );
    }

    #[test]
    fn a_choice_of_constants_names_the_values_allowed() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "cabin": {"oneOf": [
                    {"const": "economy", "description": "The cheapest."},
                    {"const": "business"}
                ]},
                "seat": {"anyOf": [{"enum": ["A", "B"]}, {"const": "C"}]},
                "id": {"oneOf": [{"type": "string"}, {"type": "integer"}]}
            }
        });
        let got = |text: &str| messages(schema.clone(), text);
        assert_eq!(
            got(r#"{"cabin":"first"}"#),
            ["`cabin` must be one of \"economy\", \"business\", got string \"first\""]
        );
        assert_eq!(
            got(r#"{"seat":"D"}"#),
            ["`seat` must be one of \"A\", \"B\", \"C\", got string \"D\""]
        );
        // Branches that failed on something else than a value: the keyword that failed.
        assert_eq!(
            got(r#"{"id":true}"#),
            ["`id` does not satisfy the schema's `oneOf` rule, got boolean true"]
        );
    }

    #[derive(Deserialize, Debug)]
    #[allow(dead_code, reason = "only the parse is tested")]
    struct Sizes {
        qty: u8,
        ratio: Option<f64>,
        big: Option<u64>,
    }

    /// The message for `text`, which the schema accepts and serde refuses.
    fn refused(text: &str) -> String {
        let error = parse::<Sizes>(text).unwrap_err();
        let schema = Arc::new(ToolSchema::new(serde_json::json!({"type": "object"})));
        let failure = failure(text, error.as_ref(), &schema, &ShapeValidator::default());
        failure.violations[0].message.clone()
    }

    #[test]
    fn a_number_serde_refused_is_explained_in_json_terms() {
        for (text, message) in [
            (r#"{"qty":1,"ratio":"a"}"#, "`ratio`: expected a number, got string \"a\""),
            (r#"{"qty":5.0}"#, "`qty`: expected an integer written without a decimal point or exponent, got number 5.0"),
            (r#"{"qty":2.5}"#, "`qty`: expected an integer, got number 2.5"),
            (r#"{"qty":-0}"#, "`qty`: -0 is not accepted for an integer; write 0"),
            (r#"{"qty":300}"#, "`qty` is out of range for an 8-bit unsigned integer (0 to 255), got 300"),
            (r#"{"qty":1e3}"#, "`qty` is out of range for an 8-bit unsigned integer (0 to 255), got 1000.0"),
            (r#"{"qty":-1.0}"#, "`qty` is out of range for an 8-bit unsigned integer (0 to 255), got -1.0"),
            // Both ends of the range are in it.
            (r#"{"qty":0.0}"#, "`qty`: expected an integer written without a decimal point or exponent, got number 0.0"),
            (r#"{"qty":255.0}"#, "`qty`: expected an integer written without a decimal point or exponent, got number 255.0"),
            // From 2^53 on a double is no longer an exact integer: the range is named.
            (r#"{"qty":1,"big":9007199254740991.0}"#, "`big`: expected an integer written without a decimal point or exponent, got number 9007199254740991.0"),
            (r#"{"qty":1,"big":9007199254740992.0}"#, "`big`: expected an integer from 0 to 18446744073709551615 written without a decimal point or exponent, got number 9007199254740992.0"),
            (r#"{"qty":123456789012345678901}"#, "`qty` is out of range for an 8-bit unsigned integer (0 to 255), got 123456789012345678901"),
        ] {
            assert_eq!(refused(text), message, "{text}");
        }
    }

    /// The one-pass plan against the general validator, on many generated argument texts for
    /// schemas of the shapes toolwright writes: the same verdict for every text, and the same
    /// violations (path, rule, expected, got, message) wherever the general validator's report
    /// is not one of its opaque `anyOf`/`oneOf` errors (there the plan names the problem inside
    /// the optional or the allowed values instead).
    #[test]
    fn the_one_pass_report_agrees_with_the_general_validator() {
        use serde_json::json;
        let schemas = [
            json!({
                "type": "object", "additionalProperties": false,
                "properties": {
                    "country": {"type": "string", "minLength": 2, "maxLength": 2},
                    "weight_grams": {"type": "integer", "format": "uint32", "minimum": 1, "maximum": 30000},
                    "speed": {"type": "string", "enum": ["standard", "express"]},
                    "small": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255},
                    "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1.5},
                    "note": {"type": ["string", "null"], "maxLength": 5},
                    "cabin": {"type": ["string", "null"], "enum": ["economy", "first", null]},
                    "tags": {"type": "array", "items": {"type": "string", "pattern": "^\\d{2}-[a-z]+$"}, "minItems": 1, "maxItems": 3},
                    "flag": {"type": "boolean"},
                    "extra": {"type": "object", "additionalProperties": {"type": "integer"}}
                },
                "required": ["country", "weight_grams", "speed"]
            }),
            json!({
                "type": "object", "additionalProperties": false,
                "properties": {
                    "order_id": {"type": "string", "pattern": "^A[0-9]{4}$"},
                    "to": {"$ref": "#/$defs/Address", "description": "Where."},
                    "parcels": {"type": "array", "items": {"$ref": "#/$defs/Parcel"}, "minItems": 1, "maxItems": 10},
                    "speed": {"$ref": "#/$defs/Speed"},
                    "insurance": {"anyOf": [{"$ref": "#/$defs/Insurance"}, {"type": "null"}]}
                },
                "required": ["order_id", "to", "parcels", "speed"],
                "$defs": {
                    "Address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}, "required": ["street", "city"]},
                    "Parcel": {"type": "object", "properties": {"weight_grams": {"type": "integer", "format": "uint32", "minimum": 0, "maximum": 4294967295u64}}, "required": ["weight_grams"]},
                    "Speed": {"oneOf": [{"type": "string", "const": "standard"}, {"type": "string", "const": "next_day"}]},
                    "Insurance": {"type": "object", "properties": {"amount_cents": {"type": "integer", "format": "int64", "minimum": -9223372036854775808i64, "maximum": 9223372036854775807i64}}, "required": ["amount_cents"]}
                }
            }),
        ];
        let valid = [
            json!({"country": "DE", "weight_grams": 1200, "speed": "express", "small": 3, "ratio": 0.5,
                   "note": "hi", "cabin": null, "tags": ["12-ab"], "flag": true, "extra": {"a": 1}}),
            json!({"order_id": "A1234", "to": {"street": "Main", "city": "Boston"},
                   "parcels": [{"weight_grams": 1}, {"weight_grams": 2}], "speed": "standard",
                   "insurance": {"amount_cents": 5}}),
        ];
        let odd = [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-5),
            json!(1),
            json!(2.0),
            json!(2.5),
            json!(255),
            json!(256),
            json!(30001),
            json!(1.5),
            json!(-0.0),
            json!(4294967296u64),
            json!(""),
            json!("x"),
            json!("DEU"),
            json!("12-ab"),
            json!("1-ab"),
            json!("standard"),
            json!("first"),
            json!("é\"\n"),
            json!([]),
            json!(["12-ab", 3]),
            json!(["a", "b", "c", "d"]),
            json!({}),
            json!({"street": 1}),
            json!({"weight_grams": "heavy"}),
            json!({"a": "b"}),
        ];
        // A small deterministic generator: each text is a valid value with a few leaves
        // replaced, members dropped or added.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        fn leaves(value: &Value, path: &str, out: &mut Vec<String>) {
            out.push(path.to_owned());
            match value {
                Value::Object(map) => map
                    .iter()
                    .for_each(|(k, v)| leaves(v, &format!("{path}/{k}"), out)),
                Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .for_each(|(i, v)| leaves(v, &format!("{path}/{i}"), out)),
                _ => {}
            }
        }
        let mut compared = 0;
        let mut reported = 0;
        for (schema, valid) in schemas.iter().zip(&valid) {
            let tool_schema = Arc::new(ToolSchema::new(schema.clone()));
            let with_plan = ShapeValidator::default();
            let general = ShapeValidator::compiled(Compiled {
                report: None,
                ..build(schema).unwrap_or_else(|e| panic!("{e}"))
            });
            assert!(
                with_plan.get(schema).is_some_and(|c| c.report.is_some()),
                "{schema}"
            );
            for _ in 0..3_000 {
                let mut value = valid.clone();
                for _ in 0..=next(3) {
                    let mut paths = Vec::new();
                    leaves(&value, "", &mut paths);
                    let path = paths[next(paths.len())].clone();
                    let Some(at) = value.pointer_mut(&path) else {
                        continue;
                    };
                    match next(4) {
                        0 | 1 => *at = odd[next(odd.len())].clone(),
                        2 => {
                            if let Some(map) = at.as_object_mut() {
                                let keys: Vec<String> = map.keys().cloned().collect();
                                if let Some(key) = keys.get(next(keys.len().max(1))) {
                                    map.remove(key);
                                }
                            }
                        }
                        _ => {
                            if let Some(map) = at.as_object_mut() {
                                map.insert(format!("k{}", next(3)), odd[next(odd.len())].clone());
                            }
                        }
                    }
                }
                let text = value.to_string();
                let ours = failure(&text, None, &tool_schema, &with_plan);
                let theirs = failure(&text, None, &tool_schema, &general);
                // The plan itself, not the failure it may leave to the general validator.
                let plan = with_plan.get(schema).and_then(|c| c.report.as_ref());
                let direct = plan
                    .map(|p| p.report(&text))
                    .unwrap_or_else(|| panic!("a plan of {schema}"))
                    .unwrap_or_else(|e| panic!("{text}: {e}"));
                let valid = general
                    .get(schema)
                    .is_some_and(|c| c.validator.is_valid(&value));
                assert_eq!(direct.violations.is_empty(), valid, "{text}");
                let opaque = theirs.violations.iter().any(|v| v.rule == "schema");
                let view = |violations: &[Violation]| {
                    let mut all: Vec<(String, &str, String, Option<String>, String)> = violations
                        .iter()
                        .map(|v| {
                            (
                                v.path.clone(),
                                v.rule,
                                v.expected.clone(),
                                v.got.clone(),
                                v.message.clone(),
                            )
                        })
                        .collect();
                    all.sort();
                    all
                };
                compared += 1;
                if opaque {
                    assert_eq!(ours.kind, theirs.kind, "{text}");
                    assert!(!ours.violations.is_empty(), "{text}");
                    continue;
                }
                reported += 1;
                assert_eq!(view(&ours.violations), view(&theirs.violations), "{text}");
                // (Text that is not an object never reaches the plan: its failure says so first.)
                if !valid && value.is_object() {
                    assert_eq!(view(&direct.violations), view(&theirs.violations), "{text}");
                }
                assert_eq!(ours.kind, theirs.kind, "{text}");
            }
        }
        // Most texts are compared whole, not only by verdict.
        assert!(reported * 4 > compared * 3, "{reported} of {compared}");
    }
}

//! A bound on what checking one call's arguments against a schema may cost.
//!
//! A schema toolwright did not write (a runtime tool's, a proxied server's) can make checking a
//! small argument cost seconds: a chain of `$ref`s where each step names the next twice doubles
//! the work at every step (`2^20` subschemas for a 9-byte argument), and an `anyOf` of 200
//! patterns under `items` checks each of 100,000 elements 200 times. No validator avoids that,
//! so before one runs, the arguments are walked beside the schema counting what a full check
//! (every subschema applied to every value it can reach, as a report of every problem does)
//! could cost, and the walk stops as soon as the count passes what the arguments' length
//! allows. Arguments over it are refused without being checked; under it, the check and its
//! report cost at most a small multiple of the count.
//!
//! A step is one subschema applied to one value, plus one per 8 members of an array or object
//! it may walk, plus one per 16 bytes of a string a `pattern` or `format` scans. The count is an
//! upper bound: it applies every branch of an `anyOf` (a validator stops at the first that
//! holds), every `patternProperties` to every member, and a recursive reference again at every
//! level (a validator may cache those).

use std::collections::HashMap;

use serde_json::Value;

/// Steps allowed per byte of argument text.
pub(crate) const VALIDATION_STEPS_PER_BYTE: u64 = 4;

/// Steps allowed for any argument, however short: a tool with a large schema still checks a
/// small argument in full.
pub(crate) const MIN_VALIDATION_STEPS: u64 = 1 << 18;

/// The steps one check of `bytes` of argument text may take:
/// `max(MIN_VALIDATION_STEPS, VALIDATION_STEPS_PER_BYTE * bytes)`.
pub(crate) fn steps_for(bytes: usize) -> u64 {
    (bytes as u64)
        .saturating_mul(VALIDATION_STEPS_PER_BYTE)
        .max(MIN_VALIDATION_STEPS)
}

/// What a step under an `anyOf` or `oneOf` branch costs a report, in steps: measured, a report
/// building an error for every failed branch costs some 25 times a verdict's step.
pub(crate) const REPORT_BRANCH_COST: u64 = 24;

/// A schema read once for counting: each distinct subschema a node, what it applies where
/// resolved to node indices (references included), so a count never reads a keyword by name.
pub(crate) struct Plan {
    nodes: Vec<Node>,
}

#[derive(Default)]
struct Node {
    /// `true` or `false`: applies nothing further.
    boolean: bool,
    /// A `pattern` or `format` scans a string value.
    scans: bool,
    /// Applied to the same value: `allOf`, `not`, `if`, `then`, `else`, a `$ref`'s target.
    in_place: Vec<usize>,
    /// The branches of `anyOf` and `oneOf`, applied to the same value; a report builds an
    /// error for each that fails.
    branches: Vec<usize>,
    /// `dependentSchemas`: applied to the same value when it has the member.
    dependent: Vec<(String, usize)>,
    /// By name, on a seeded hasher (the names looked up are the model's).
    properties: HashMap<String, usize, foldhash::quality::RandomState>,
    /// `patternProperties` (counted as if each matched every member) and
    /// `unevaluatedProperties`: applied to every member.
    every_member: Vec<usize>,
    /// `additionalProperties`: applied to a member no property names.
    additional: Option<usize>,
    property_names: bool,
    prefix: Vec<usize>,
    /// `items` (or the older `additionalItems`): an element past the prefix.
    items: Option<usize>,
    /// `contains` and `unevaluatedItems`: applied to every element.
    every_element: Vec<usize>,
}

impl Plan {
    /// The plan of `schema`, whose references are JSON Pointers into itself (others are not
    /// followed: [`unfollowed_reference`] refuses them first).
    pub(crate) fn new(schema: &Value) -> Plan {
        let mut build = Build {
            root: schema,
            nodes: Vec::new(),
            seen: HashMap::new(),
        };
        build.node(schema);
        Plan { nodes: build.nodes }
    }

    /// Whether a full check of `value` fits in `steps`; the count itself takes at most that.
    pub(crate) fn fits(&self, value: &Value, steps: u64) -> bool {
        Walk {
            plan: self,
            left: steps,
            open: Vec::new(),
            weight: 1,
            branch_cost: 1,
            nesting: 0,
        }
        .apply(0, value)
    }

    /// Whether a report of every problem in `value` fits in `steps`: as [`Plan::fits`], with
    /// every step under an `anyOf` or `oneOf` branch costing [`REPORT_BRANCH_COST`] (a report
    /// builds an error for each failed branch, and for what failed inside it).
    pub(crate) fn report_fits(&self, value: &Value, steps: u64) -> bool {
        Walk {
            plan: self,
            left: steps,
            open: Vec::new(),
            weight: 1,
            branch_cost: REPORT_BRANCH_COST,
            nesting: 0,
        }
        .apply(0, value)
    }
}

struct Build<'a> {
    root: &'a Value,
    nodes: Vec<Node>,
    seen: HashMap<*const Value, usize>,
}

impl<'a> Build<'a> {
    fn node(&mut self, schema: &'a Value) -> usize {
        if let Some(&id) = self.seen.get(&(schema as *const Value)) {
            return id;
        }
        let id = self.nodes.len();
        self.nodes.push(Node::default());
        self.seen.insert(schema as *const Value, id);
        let Value::Object(map) = schema else {
            self.nodes[id].boolean = true;
            return id;
        };
        let mut node = Node {
            scans: map.contains_key("pattern") || map.contains_key("format"),
            ..Node::default()
        };
        for (keyword, value) in map {
            match (keyword.as_str(), value) {
                ("allOf", Value::Array(list)) => {
                    for child in list {
                        let child = self.node(child);
                        node.in_place.push(child);
                    }
                }
                ("anyOf" | "oneOf", Value::Array(list)) => {
                    for child in list {
                        let child = self.node(child);
                        node.branches.push(child);
                    }
                }
                ("not" | "if" | "then" | "else", child) => {
                    let child = self.node(child);
                    node.in_place.push(child);
                }
                ("$ref", Value::String(reference)) => {
                    let target = match reference.as_str() {
                        "#" => Some(self.root),
                        r => r.strip_prefix('#').and_then(|p| self.root.pointer(p)),
                    };
                    if let Some(target) = target {
                        let child = self.node(target);
                        node.in_place.push(child);
                    }
                }
                ("dependentSchemas", Value::Object(members)) => {
                    for (name, child) in members {
                        let child = self.node(child);
                        node.dependent.push((name.clone(), child));
                    }
                }
                ("properties", Value::Object(members)) => {
                    for (name, child) in members {
                        let child = self.node(child);
                        node.properties.insert(name.clone(), child);
                    }
                }
                ("patternProperties", Value::Object(members)) => {
                    for child in members.values() {
                        let child = self.node(child);
                        node.every_member.push(child);
                    }
                }
                ("unevaluatedProperties", child) => {
                    let child = self.node(child);
                    node.every_member.push(child);
                }
                ("additionalProperties", child) => node.additional = Some(self.node(child)),
                ("propertyNames", _) => node.property_names = true,
                ("prefixItems", Value::Array(list)) | ("items", Value::Array(list)) => {
                    for child in list {
                        let child = self.node(child);
                        node.prefix.push(child);
                    }
                }
                // `items` wins over the older drafts' `additionalItems`.
                ("items", child) => node.items = Some(self.node(child)),
                ("additionalItems", child) if node.items.is_none() => {
                    node.items = Some(self.node(child));
                }
                ("contains" | "unevaluatedItems", child) => {
                    let child = self.node(child);
                    node.every_element.push(child);
                }
                _ => {}
            }
        }
        self.nodes[id] = node;
        id
    }
}

/// Where a reference that is not a JSON Pointer into the schema itself (`#/$defs/x`) was
/// found: such a reference is not followed by the count, so a schema that has one cannot be
/// bounded, and is refused when the tool is built. Returns the path of the first one and the
/// reference.
pub(crate) fn unfollowed_reference(schema: &Value) -> Option<(String, String)> {
    fn find(node: &Value, path: &mut String) -> Option<(String, String)> {
        let Value::Object(map) = node else {
            return None;
        };
        for keyword in ["$ref", "$dynamicRef"] {
            if let Some(reference) = map.get(keyword) {
                let followed = keyword == "$ref"
                    && reference
                        .as_str()
                        .is_some_and(|r| r == "#" || r.starts_with("#/"));
                if !followed {
                    let shown = reference
                        .as_str()
                        .map_or_else(|| reference.to_string(), str::to_owned);
                    return Some((format!("{path}/{keyword}"), shown));
                }
            }
        }
        for (keyword, value) in map {
            let at = path.len();
            match (position(keyword), value) {
                (Position::One | Position::List, Value::Array(list)) => {
                    for (i, child) in list.iter().enumerate() {
                        path.push_str(&format!("/{keyword}/{i}"));
                        let found = find(child, path);
                        path.truncate(at);
                        if found.is_some() {
                            return found;
                        }
                    }
                }
                (Position::One, child) => {
                    path.push('/');
                    path.push_str(keyword);
                    let found = find(child, path);
                    path.truncate(at);
                    if found.is_some() {
                        return found;
                    }
                }
                (Position::Map, Value::Object(members)) => {
                    for (name, child) in members {
                        path.push('/');
                        path.push_str(keyword);
                        path.push('/');
                        super::push_escaped_pointer(path, name);
                        let found = find(child, path);
                        path.truncate(at);
                        if found.is_some() {
                            return found;
                        }
                    }
                }
                _ => {}
            }
        }
        None
    }
    find(schema, &mut String::new())
}

/// Where a keyword's value holds subschemas (draft 2020-12, and the older drafts' forms).
enum Position {
    /// One subschema (`items` in the older drafts may also be a list).
    One,
    /// A list of subschemas.
    List,
    /// A map of names to subschemas.
    Map,
    /// A value, or no schema at all (`enum`, `const`, `default`, `examples`, `type`, ...).
    Value,
}

fn position(keyword: &str) -> Position {
    match keyword {
        "items"
        | "contains"
        | "additionalProperties"
        | "propertyNames"
        | "not"
        | "if"
        | "then"
        | "else"
        | "unevaluatedItems"
        | "unevaluatedProperties"
        | "additionalItems"
        | "contentSchema" => Position::One,
        "allOf" | "anyOf" | "oneOf" | "prefixItems" => Position::List,
        "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
            Position::Map
        }
        _ => Position::Value,
    }
}

/// The count of one check: the steps left, and the references being followed at the value
/// they were met at (a reference that leads back to itself without descending is a cycle the
/// validator answers at once).
struct Walk<'a> {
    plan: &'a Plan,
    left: u64,
    open: Vec<(usize, *const Value)>,
    /// What a step costs here: `branch_cost` under a branch, 1 elsewhere.
    weight: u64,
    branch_cost: u64,
    /// Subschemas being applied, one inside another: past [`MAX_NESTING`] the check is too
    /// costly (the validator would recurse as deep, and a thread's stack is finite).
    nesting: usize,
}

/// The deepest a check may nest subschemas inside one another (references followed and values
/// descended into, together).
const MAX_NESTING: usize = 2_048;

impl Walk<'_> {
    fn charge(&mut self, steps: u64) -> bool {
        match self.left.checked_sub(steps.saturating_mul(self.weight)) {
            Some(rest) => {
                self.left = rest;
                true
            }
            None => false,
        }
    }

    /// Node `id` applied to `value`, and everything it applies to `value`'s members; false
    /// once the steps ran out.
    fn apply(&mut self, id: usize, value: &Value) -> bool {
        if self.nesting >= MAX_NESTING {
            return false;
        }
        self.nesting += 1;
        let fits = self.apply_nested(id, value);
        self.nesting -= 1;
        fits
    }

    fn apply_nested(&mut self, id: usize, value: &Value) -> bool {
        let plan = self.plan;
        let node = &plan.nodes[id];
        let mut cost = 1;
        match value {
            Value::String(s) if node.scans => cost += s.len() as u64 / 16,
            Value::Array(items) => cost += items.len() as u64 / 8,
            Value::Object(members) => cost += members.len() as u64 / 8,
            _ => {}
        }
        if !self.charge(cost) {
            return false;
        }
        if node.boolean {
            return true;
        }
        if !node.branches.is_empty() {
            // Once, however deep the branches nest: the cost is per error built.
            let outer = self.weight;
            self.weight = self.branch_cost;
            let fits = node.branches.iter().all(|&child| self.apply(child, value));
            self.weight = outer;
            if !fits {
                return false;
            }
        }
        for &child in &node.in_place {
            let key = (child, value as *const Value);
            if self.open.contains(&key) {
                continue;
            }
            self.open.push(key);
            let fits = self.apply(child, value);
            self.open.pop();
            if !fits {
                return false;
            }
        }
        match value {
            Value::Object(members) => {
                for (name, child) in &node.dependent {
                    if members.contains_key(name) && !self.apply(*child, value) {
                        return false;
                    }
                }
                for (name, member) in members {
                    let named = node.properties.get(name).copied();
                    for child in named.iter().chain(&node.every_member) {
                        if !self.apply(*child, member) {
                            return false;
                        }
                    }
                    if named.is_none() {
                        if let Some(child) = node.additional {
                            if !self.apply(child, member) {
                                return false;
                            }
                        }
                    }
                    // The name is checked as a string: what a pattern on it scans.
                    if node.property_names && !self.charge(1 + name.len() as u64 / 16) {
                        return false;
                    }
                }
                true
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let positional = node.prefix.get(i).copied().or(node.items);
                    for child in positional.iter().chain(&node.every_element) {
                        if !self.apply(*child, item) {
                            return false;
                        }
                    }
                }
                true
            }
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map};

    fn steps(schema: &Value, value: &Value) -> u64 {
        let plan = Plan::new(schema);
        let mut walk = Walk {
            plan: &plan,
            left: u64::MAX,
            open: Vec::new(),
            weight: 1,
            branch_cost: 1,
            nesting: 0,
        };
        assert!(walk.apply(0, value));
        u64::MAX - walk.left
    }

    fn fits(schema: &Value, value: &Value, steps: u64) -> bool {
        Plan::new(schema).fits(value, steps)
    }

    #[test]
    fn a_value_meets_one_property_of_many_and_every_branch_of_a_union() {
        let wide: Map<String, Value> = (0..1_000)
            .map(|i| (format!("f{i}"), json!({"type": "integer"})))
            .collect();
        let schema = json!({"properties": wide, "additionalProperties": false});
        // The object, its one member.
        assert_eq!(steps(&schema, &json!({"f7": 1})), 2);
        // An unknown member meets `additionalProperties`.
        assert_eq!(steps(&schema, &json!({"zz": 1})), 2);
        let union = json!({"items": {"anyOf": [{"type": "integer"}, {"type": "string"}, true]}});
        // The array, then per element `items` and its three branches.
        assert_eq!(steps(&union, &json!([1, 2])), 1 + 2 * 4);
    }

    #[test]
    fn a_reference_chain_that_doubles_runs_out_and_a_recursive_type_does_not() {
        let mut defs = Map::new();
        for i in 0..40 {
            let next = format!("#/$defs/d{}", i + 1);
            defs.insert(
                format!("d{i}"),
                json!({"anyOf": [{"$ref": next}, {"$ref": next}]}),
            );
        }
        defs.insert("d40".into(), json!({"type": "integer"}));
        let chain = json!({"$ref": "#/$defs/d0", "$defs": defs});
        assert!(!fits(&chain, &json!(1), 1 << 20));
        let tree = json!({"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"});
        let nested: Value = (0..100).fold(json!([]), |inner, _| json!([inner]));
        assert!(fits(&tree, &nested, 1_000));
        // Nesting past what a stack holds is too costly, whatever the steps.
        let mut chain = Map::new();
        for i in 0..40 {
            chain.insert(
                format!("d{i}"),
                json!({"$ref": format!("#/$defs/d{}", i + 1)}),
            );
        }
        chain.insert("d40".into(), json!({"items": {"$ref": "#/$defs/d0"}}));
        let deep = json!({"$ref": "#/$defs/d0", "$defs": chain});
        assert!(!fits(&deep, &nested, u64::MAX));
        // A reference to itself at the same value is a cycle, counted once.
        let cycle = json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"});
        assert!(fits(&cycle, &json!(1), 10));
    }

    #[test]
    fn a_long_string_costs_what_scanning_it_does_where_something_scans_it() {
        let long = json!("a".repeat(1_600));
        assert_eq!(steps(&json!({"pattern": "^a+$"}), &long), 101);
        assert_eq!(steps(&json!({"type": "string"}), &long), 1);
        assert_eq!(steps_for(10), 1 << 18);
        assert_eq!(steps_for(1 << 20), 4 << 20);
        // A report pays for what it builds under a union's branches.
        let union =
            Plan::new(&json!({"items": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}));
        let elements = json!(vec![1; 100]);
        assert!(union.fits(&elements, 400) && !union.report_fits(&elements, 400));
        assert!(union.report_fits(&elements, 100 * (1 + 2 * REPORT_BRANCH_COST) + 20));
    }

    #[test]
    fn only_references_into_the_schema_itself_are_followed() {
        assert_eq!(
            unfollowed_reference(&json!({"properties": {"a": {"$ref": "#/$defs/a"}}})),
            None
        );
        assert_eq!(
            unfollowed_reference(&json!({"properties": {"a/b": {"$ref": "other.json#/x"}}})),
            Some(("/properties/a~1b/$ref".into(), "other.json#/x".into()))
        );
        assert_eq!(
            unfollowed_reference(&json!({"anyOf": [true, {"$ref": "#anchor"}]})),
            Some(("/anyOf/1/$ref".into(), "#anchor".into()))
        );
        // A `$ref` inside a value (`const`, `default`) is not a reference.
        assert_eq!(
            unfollowed_reference(&json!({"const": {"$ref": "elsewhere"}})),
            None
        );
    }
}

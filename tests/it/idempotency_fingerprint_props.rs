//! Property: two argument texts have one fingerprint exactly when the typed tool receives equal
//! values from them (issue 16). The texts are generated for a `#[tool]` with options, defaults,
//! a map with null values, a nested `#[toolwright::data]` struct, floats and `u128`s, written in
//! many ways (member order, whitespace, escapes, number forms) and mutated slightly; "receives
//! equal values" is the tool's own generated `Args` parsed from the text and compared field by
//! field.

use std::collections::HashMap;

use proptest::prelude::*;
use toolwright::idempotency::Fingerprint;
use toolwright::prelude::*;

/// Where a parcel goes.
#[toolwright::data(input)]
#[derive(Debug, PartialEq)]
struct Address {
    /// The street.
    street: String,
    /// The floor, if any.
    floor: Option<i32>,
    /// The unit's area in square metres.
    area: Option<f64>,
}

/// Update a customer profile.
#[tool(idempotent = false)]
#[allow(clippy::too_many_arguments)] // One parameter per kind of value under test.
async fn probe(
    /// Fields to set; null clears one.
    fields: HashMap<String, Option<String>>,
    /// How to apply the update.
    #[arg(default = Some("merge".to_string()))]
    mode: Option<String>,
    /// A note.
    note: Option<String>,
    /// How many at most.
    #[arg(default = 10)]
    limit: u32,
    /// An amount in the smallest unit.
    amount: Option<u128>,
    /// A ratio.
    ratio: Option<f64>,
    /// Where to.
    address: Option<Address>,
    /// Tags.
    tags: Vec<Option<i64>>,
) -> Result<String, ToolError> {
    let _ = (fields, mode, note, limit, amount, ratio, address, tags);
    Ok(String::new())
}

type Received = (
    HashMap<String, Option<String>>,
    Option<String>,
    Option<String>,
    u32,
    Option<u128>,
    Option<f64>,
    Option<Address>,
    Vec<Option<i64>>,
);

/// What the tool body receives from `text`.
fn received(text: &str) -> Received {
    let args: ProbeArgs = toolwright::serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("generated arguments must be valid: {e}\n{text}"));
    let ProbeArgs {
        fields,
        mode,
        note,
        limit,
        amount,
        ratio,
        address,
        tags,
    } = args;
    (fields, mode, note, limit, amount, ratio, address, tags)
}

/// A JSON text before it is written: what a model means, not yet how it writes it.
#[derive(Debug, Clone)]
enum J {
    Null,
    /// An exact integer, as decimal digits.
    Int(i128),
    /// `m × 10^e`.
    Dec(i64, i32),
    Str(String),
    Arr(Vec<J>),
    /// Members, possibly a key twice (then the last counts).
    Obj(Vec<(String, J)>),
}

/// A small deterministic generator for how a text is written (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

const WORDS: &[&str] = &["merge", "replace", "a\"b", "é\n", "", "x\\y", "café"];
const KEYS: &[&str] = &["email", "phone", "address", "a/b"];
const BIG: &[i128] = &[
    0,
    7,
    18_446_744_073_709_551_616,
    100_000_000_000_000_000_000_000_000_000,
    100_000_000_000_000_000_000_000_009_999,
];

/// The arguments of `probe`, as a model might mean them.
fn arguments(rng: &mut Rng) -> Vec<(String, J)> {
    let mut members = Vec::new();
    let mut fields = Vec::new();
    for _ in 0..rng.below(4) {
        let value = if rng.chance(2) {
            J::Null
        } else {
            J::Str(rng.pick(WORDS).to_string())
        };
        fields.push((rng.pick(KEYS).to_string(), value));
    }
    members.push(("fields".into(), J::Obj(fields)));
    let optional = |rng: &mut Rng, value: J| match rng.below(3) {
        0 => None,
        1 => Some(J::Null),
        _ => Some(value),
    };
    let word = J::Str(rng.pick(&WORDS[..2]).to_string());
    if let Some(v) = optional(rng, word) {
        members.push(("mode".into(), v));
    }
    let word = J::Str(rng.pick(WORDS).to_string());
    if let Some(v) = optional(rng, word) {
        members.push(("note".into(), v));
    }
    if !rng.chance(2) {
        members.push(("limit".into(), J::Int(*rng.pick(&[10, 11, 0]))));
    }
    let big = J::Int(*rng.pick(BIG));
    if let Some(v) = optional(rng, big) {
        members.push(("amount".into(), v));
    }
    let dec = decimal(rng);
    if let Some(v) = optional(rng, dec) {
        members.push(("ratio".into(), v));
    }
    let mut address = vec![("street".into(), J::Str(rng.pick(WORDS).to_string()))];
    let floor = J::Int(rng.below(7) as i128 - 3);
    if let Some(v) = optional(rng, floor) {
        address.push(("floor".into(), v));
    }
    let area = decimal(rng);
    if let Some(v) = optional(rng, area) {
        address.push(("area".into(), v));
    }
    if let Some(v) = optional(rng, J::Obj(address)) {
        members.push(("address".into(), v));
    }
    let tags = (0..rng.below(3))
        .map(|_| {
            if rng.chance(3) {
                J::Null
            } else {
                J::Int(rng.below(5) as i128 - 2)
            }
        })
        .collect();
    members.push(("tags".into(), J::Arr(tags)));
    members
}

fn decimal(rng: &mut Rng) -> J {
    J::Dec(rng.below(41) as i64 - 20, rng.below(5) as i32 - 2)
}

/// A small change a model might make: a null added to the map, a default made explicit or null,
/// an option left out, an amount off in its last digits, a float off by a little.
fn mutate(members: &mut Vec<(String, J)>, rng: &mut Rng) {
    let i = rng.below(members.len() as u64) as usize;
    let (name, value) = &mut members[i];
    match (name.as_str(), value) {
        (_, J::Null) => {
            members.remove(i);
        }
        ("fields", J::Obj(entries)) => match entries.last_mut() {
            Some(last) if rng.chance(2) => last.1 = J::Null,
            _ => entries.push((rng.pick(KEYS).to_string(), J::Null)),
        },
        ("address", J::Obj(entries)) => {
            if let Some(at) = entries.iter().position(|e| e.0 == "floor") {
                entries.remove(at);
            } else {
                entries.push(("floor".into(), J::Null));
            }
        }
        (_, J::Int(n)) => *n += *rng.pick(&[1, 9_999]),
        (_, J::Dec(m, _)) => *m += 1,
        (_, value @ J::Str(_)) => *value = J::Null,
        (_, J::Arr(items)) => items.push(J::Null),
        (_, J::Obj(_)) => {}
    }
}

/// Writes `value` one of the many ways it can be written.
fn write(value: &J, rng: &mut Rng, out: &mut String) {
    let space = |rng: &mut Rng, out: &mut String| {
        if rng.chance(3) {
            let gap: &&str = rng.pick(&[" ", "\n  ", "\t"]);
            out.push_str(gap);
        }
    };
    space(rng, out);
    match value {
        J::Null => out.push_str("null"),
        J::Int(n) => out.push_str(&n.to_string()),
        J::Dec(m, e) => write_decimal(*m, *e, rng, out),
        J::Str(s) => write_str(s, rng, out),
        J::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, rng, out);
            }
            out.push(']');
        }
        J::Obj(members) => {
            // Members may come in any order, except that of a key given twice the last counts.
            let mut order: Vec<usize> = (0..members.len()).collect();
            let distinct = {
                let mut keys: Vec<&str> = members.iter().map(|m| m.0.as_str()).collect();
                keys.sort_unstable();
                keys.windows(2).all(|w| w[0] != w[1])
            };
            if distinct {
                for i in (1..order.len()).rev() {
                    order.swap(i, rng.below(i as u64 + 1) as usize);
                }
            }
            out.push('{');
            for (n, &i) in order.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                space(rng, out);
                write_str(&members[i].0, rng, out);
                out.push(':');
                write(&members[i].1, rng, out);
            }
            out.push('}');
        }
    }
    space(rng, out);
}

/// `m × 10^e` as `5`, `5.0`, `50e-1`, `0.5E1`, with now and then digits past what a double
/// holds.
fn write_decimal(m: i64, e: i32, rng: &mut Rng, out: &mut String) {
    let shift = rng.below(3) as i32;
    let mantissa = m * 10i64.pow(shift as u32);
    let exp = e - shift;
    let sign = if mantissa < 0 || (mantissa == 0 && rng.chance(2)) {
        "-"
    } else {
        ""
    };
    let digits = mantissa.unsigned_abs().to_string();
    // Far below a double's precision relative to the mantissa, so the same double.
    let far = if mantissa != 0 && rng.chance(4) {
        "000000000000000000001"
    } else {
        ""
    };
    if exp >= 0 && rng.chance(2) {
        let zeros = if mantissa == 0 {
            String::new()
        } else {
            "0".repeat(exp as usize)
        };
        let tail = if far.is_empty() && rng.chance(2) {
            ""
        } else {
            ".0"
        };
        out.push_str(&format!("{sign}{digits}{zeros}{tail}{far}"));
    } else {
        let marker = *rng.pick(&["e", "E", "e+"]);
        let marker = if exp < 0 { "e" } else { marker };
        let point = if far.is_empty() { "" } else { ".0" };
        out.push_str(&format!("{sign}{digits}{point}{far}{marker}{exp}"));
    }
}

fn write_str(s: &str, rng: &mut Rng, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str(if rng.chance(2) { "\\n" } else { "\\u000a" }),
            c if rng.chance(6) && (c as u32) < 0x10000 => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            '/' if rng.chance(2) => out.push_str("\\/"),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn text(members: &[(String, J)], seed: u64) -> String {
    let mut rng = Rng(seed | 1);
    let mut out = String::new();
    write(&J::Obj(members.to_vec()), &mut rng, &mut out);
    out
}

fn spec() -> toolwright::ToolSpec {
    Registry::builder()
        .tool(Probe)
        .build()
        .unwrap()
        .spec("probe")
        .unwrap()
        .clone()
}

/// The text a fingerprint hashes, as a person debugging a mismatch reads it: members sorted, a
/// `null` dropped only where the tool cannot tell it from absence, defaults written out, a float
/// field's number as the float the tool receives.
#[test]
fn the_canonical_text_is_what_the_tool_receives_written_one_way() {
    let spec = spec();
    let text = r#"{"tags":[1,null],"fields":{"b":"x","a":null},"note":null,"ratio":2.50}"#;
    let canonical = Fingerprint::canonical_text_for(&spec, text).unwrap();
    assert_eq!(
        canonical,
        r#"{"fields":{"a":null,"b":"x"},"limit":10,"mode":"merge","ratio":2.5,"tags":[1,null]}"#
    );
    assert_eq!(
        Fingerprint::for_tool(&spec, &canonical),
        Fingerprint::for_tool(&spec, text)
    );
    assert_eq!(Fingerprint::canonical_text_for(&spec, "{not json"), None);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn one_fingerprint_exactly_when_the_tool_receives_equal_values(
        model in any::<u64>(),
        change in any::<u64>(),
        first in any::<u64>(),
        second in any::<u64>(),
    ) {
        let spec = spec();
        let mut rng = Rng(model | 1);
        let meant = arguments(&mut rng);
        let mut other = meant.clone();
        let mut changes = Rng(change | 1);
        if changes.chance(2) {
            mutate(&mut other, &mut changes);
        }
        let (a, b) = (text(&meant, first), text(&other, second));
        let same_values = received(&a) == received(&b);
        let same_fingerprint = Fingerprint::for_tool(&spec, &a) == Fingerprint::for_tool(&spec, &b);
        prop_assert_eq!(
            same_fingerprint,
            same_values,
            "\n{}\n{}\n{:?}\n{:?}",
            a,
            b,
            Fingerprint::canonical_text_for(&spec, &a),
            Fingerprint::canonical_text_for(&spec, &b)
        );
    }

    #[test]
    fn the_same_arguments_written_two_ways_have_one_fingerprint(
        model in any::<u64>(),
        first in any::<u64>(),
        second in any::<u64>(),
    ) {
        let spec = spec();
        let meant = arguments(&mut Rng(model | 1));
        let (a, b) = (text(&meant, first), text(&meant, second));
        prop_assert_eq!(received(&a), received(&b));
        prop_assert_eq!(Fingerprint::for_tool(&spec, &a), Fingerprint::for_tool(&spec, &b), "\n{}\n{}", a, b);
    }
}

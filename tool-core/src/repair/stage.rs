//! The repair stage: one more try at arguments that failed on their form, by the deterministic
//! rules first (a mechanical slip costs no model round trip), then by the repairer.

use std::time::Duration;

use super::{ask, by_rules, log, repairable, DeterministicRepair, RepairRequest, Repairer};
use crate::outcome::{Failure, Fix, Fixes};
use crate::runtime::clock::ClockHandle;
use crate::tool::spec::ToolSpec;

/// What the repair stage may use: the rules, the repairer, and the bound on its answer.
pub(crate) struct Repairs<'a> {
    pub(crate) rules: Option<&'a DeterministicRepair>,
    pub(crate) repairer: Option<&'a dyn Repairer>,
    pub(crate) clock: &'a ClockHandle,
    pub(crate) timeout: Duration,
}

/// The repair pass over a call of `spec` whose `arguments` failed with `failure`: a repaired
/// text is checked again, whole, by `check` (the call's own checks), and logged. On success
/// `arguments` is the repaired text and its checked arguments come back with the fixes that
/// made it; otherwise the model gets its own arguments' failure, never the repair's.
pub(crate) async fn repair<A>(
    repairs: Repairs<'_>,
    spec: &ToolSpec,
    call_id: &str,
    arguments: &mut String,
    failure: Box<Failure>,
    check: impl Fn(&str) -> Result<A, Box<Failure>> + Send + Sync,
) -> Result<(A, Fixes), Box<Failure>> {
    let repaired = repairs
        .rules
        .and_then(|rules| by_rules(rules, spec, arguments, &failure));
    let failure = match repaired {
        Some(repaired) => {
            let fixes = repaired.fixes();
            let text = repaired.into_text();
            match accept(
                spec,
                call_id,
                arguments,
                failure,
                text,
                ("rules", fixes),
                &check,
            ) {
                Ok(args) => return Ok((args, fixes)),
                Err(failure) => failure,
            }
        }
        None => failure,
    };
    let text = match repairs.repairer {
        Some(repairer) if repairable(failure.kind) => {
            let request = RepairRequest {
                spec,
                call_id,
                arguments,
                failure: &failure,
            };
            match ask(repairer, &request, repairs.clock, repairs.timeout).await {
                Ok(text) => Some(text),
                Err(why) => {
                    let model = ("model", Fixes::EMPTY.with(Fix::Model));
                    log(spec.name(), call_id, failure.kind, model, why);
                    None
                }
            }
        }
        _ => None,
    };
    let Some(text) = text else {
        return Err(failure);
    };
    let model = Fixes::EMPTY.with(Fix::Model);
    let args = accept(
        spec,
        call_id,
        arguments,
        failure,
        text,
        ("model", model),
        &check,
    )?;
    Ok((args, model))
}

/// A repair's text checked again, whole, and logged: on success `arguments` becomes it and its
/// checked arguments come back; otherwise the call's own failure does.
fn accept<A>(
    spec: &ToolSpec,
    call_id: &str,
    arguments: &mut String,
    failure: Box<Failure>,
    text: String,
    by: (&str, Fixes),
    check: &dyn Fn(&str) -> Result<A, Box<Failure>>,
) -> Result<A, Box<Failure>> {
    let args = check(&text);
    let result = if args.is_ok() {
        "repaired"
    } else {
        "still invalid"
    };
    log(spec.name(), call_id, failure.kind, by, result);
    let args = args.map_err(|_| failure)?;
    *arguments = text;
    Ok(args)
}

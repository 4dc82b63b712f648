//! The store-backed path of a call: what its conversation knows is read from the
//! [`ConversationStore`] first, the stages run on a memory of this call, what the call left is
//! written back after.

use std::sync::Arc;

use super::erased::DynTool;
use super::finish::reject;
use super::run::run;
use super::state::{Call, Pipeline};
use crate::conversation::{durable, ConversationStore, Prepare};
use crate::idempotency::Fingerprint;
use crate::outcome::{Failure, Outcome};
use crate::session::Session;
use crate::validate as checks;

/// The store-backed path: the ids the call's grounded arguments hold, and the arguments a
/// reviewer approved in place of its own, are read from the store first (one round trip,
/// only when there are any); the stages run unchanged on a memory of this call
/// ([`Overlay`](durable::Overlay)); what the call left is written back after (one round
/// trip, only when it left something). A store that cannot be read refuses the call
/// (`unavailable`) before anything runs, outside the breaker's count.
pub(crate) async fn run_durable(
    tool: &dyn DynTool,
    mut call: Call,
    session: &Session,
    store: &dyn ConversationStore,
    pipeline: &Pipeline,
) -> Outcome {
    let spec = tool.spec();
    // A call that requires approval may have been approved with edited arguments: asked
    // in the same round trip as its grounded ids.
    let edited_for = spec.requires_approval().then(|| {
        (
            session.principal().map(str::to_owned),
            Fingerprint::for_tool(spec, &call.arguments).to_string(),
        )
    });
    let (in_call, overlay) =
        match grounding(tool, &call.arguments, session, edited_for, pipeline).await {
            Ok((in_call, overlay, None)) => (in_call, overlay),
            // The edited call is the one that runs, and is checked (its own ids asked again).
            Ok((_, _, Some(edited))) => {
                call.arguments = edited;
                match grounding(tool, &call.arguments, session, None, pipeline).await {
                    Ok((in_call, overlay, _)) => (in_call, overlay),
                    Err(failure) => {
                        return reject((spec, tool.stats()), call, *failure, session, pipeline)
                    }
                }
            }
            Err(failure) => {
                return reject((spec, tool.stats()), call, *failure, session, pipeline);
            }
        };
    let mut outcome = run(tool, call, &in_call, pipeline).await;
    durable::write_back(
        store,
        session.id(),
        &overlay,
        &pipeline.recovery,
        spec.idempotent(),
        &mut outcome,
    )
    .await;
    outcome
}

/// The session for one store-backed call of `arguments`: its memory knows which of the
/// ids its grounded arguments hold are grounded, asked of the store in one round trip
/// together with the arguments approved in place of these (`edited_for`: the principal
/// and the call's fingerprint), which come back third. `Err`: `unavailable`, the store
/// could not be read.
pub(crate) async fn grounding(
    tool: &dyn DynTool,
    arguments: &str,
    session: &Session,
    edited_for: Option<(Option<String>, String)>,
    pipeline: &Pipeline,
) -> Result<(Session, Arc<durable::Overlay>, Option<String>), Box<Failure>> {
    let spec = tool.spec();
    let mut asked = Vec::new();
    if spec.fields().iter().any(|f| f.grounded_kind().is_some()) {
        // The checks run once to learn which ids they ask about (every one taken as known).
        let probe = Arc::new(durable::Overlay::probe());
        let _ = tool.check_arguments(arguments, &session.in_call(probe.clone()), pipeline);
        asked = probe.asked();
    }
    let (overlay, edited) = match session.store() {
        Some(store) if !asked.is_empty() || edited_for.is_some() => {
            let prepare = Prepare {
                ids: asked,
                edited_for,
            };
            match store.prepare(session.id(), &prepare).await {
                Ok(prepared) => {
                    let overlay = durable::Overlay::knowing(prepare.ids, &prepared);
                    (overlay, prepared.edited)
                }
                Err(e) => return Err(Box::new(durable::unreachable(spec.name(), &e))),
            }
        }
        _ => (durable::Overlay::default(), None),
    };
    let overlay = Arc::new(overlay);
    Ok((session.in_call(overlay.clone()), overlay, edited))
}

/// Checks `arguments` as a call in `session` would (without its scopes): a reviewer's edited
/// arguments. `Err`: the failure's outcome.
pub(crate) async fn revalidate(
    tool: &dyn DynTool,
    arguments: &str,
    session: &Session,
    pipeline: &Pipeline,
) -> Result<(), Outcome> {
    let failure = match grounding(tool, arguments, session, None, pipeline).await {
        Ok((in_call, _, _)) => match tool.check_arguments(arguments, &in_call, pipeline) {
            Ok(_) => return Ok(()),
            Err(failure) => failure,
        },
        Err(failure) => failure,
    };
    let mut failure = *failure;
    let spec = tool.spec();
    checks::redact_failure(&mut failure, spec.fields(), arguments);
    Err(Outcome::failed(
        String::new(),
        Arc::clone(&spec.name),
        failure,
    ))
}

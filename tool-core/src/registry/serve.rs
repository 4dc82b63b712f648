//! A registry as a `tower` service bound to a session ([`crate::service`]).

use super::Registry;
use crate::service::SessionService;
use crate::session::Session;

impl Registry {
    /// This registry as a `tower` service whose calls run in `session` (see the
    /// [module](crate::service) for the contract).
    pub fn service_in(&self, session: Session) -> SessionService {
        SessionService {
            registry: self.clone(),
            session,
        }
    }
}

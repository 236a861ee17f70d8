//! Schedule fires ([`Command::ClaimFire`]): the first replica to claim a
//! schedule's due time wins it, and the last time won is kept by name.
//! Apart from the holds: a fire is a record alone, with no lease.
//!
//! [`Command::ClaimFire`]: crate::command::Command::ClaimFire

use crate::command::{CommandError, Request, Response};
use crate::state::{LockState, Step};

impl LockState {
    /// [`Command::ClaimFire`](crate::command::Command::ClaimFire).
    pub(in crate::state) fn claim_fire(
        &mut self,
        name: &str,
        due: u64,
        request: &Request,
        step: &mut Step<'_>,
    ) -> Result<Response, CommandError> {
        let won = match self.named.last_fired(name) {
            // Bits of non-negative finite floats order as the floats do.
            Some(fired) => fired < due,
            None => {
                self.named
                    .admit(request.caller.account().as_ref(), &step.quotas)?;
                true
            }
        };
        if won {
            self.named.set_fired(name, request.caller.account(), due);
        }
        Ok(Response::FireClaimed { won })
    }

    /// The last fire claimed for schedule `name`, in seconds since the
    /// Unix epoch.
    pub fn last_fired(&self, name: &str) -> Option<f64> {
        self.named.last_fired(name).map(f64::from_bits)
    }
}

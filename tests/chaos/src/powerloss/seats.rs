//! The ledger's election entries: what campaigns, proclaims and resigns
//! were answered, and which are still open.

use super::answer::Answer;
use super::ledger::{Digest, Ledger, Seat};

impl Ledger {
    pub fn campaign_begin(&self, name: &str, owner: &str, value: Digest) {
        let mut b = self.book();
        b.begin("campaign");
        let seat = Seat::Campaigning {
            values: vec![value],
        };
        b.election(name).seats.insert(owner.to_string(), seat);
    }

    pub fn campaign_done(&self, name: &str, owner: &str, answer: &Answer<u64>) {
        let mut b = self.book();
        b.count("campaign", answer);
        let e = b.election(name);
        match answer {
            Answer::Ok(fence) => {
                if let Some(Seat::Campaigning { values }) = e.seats.remove(owner) {
                    let seat = Seat::Leading {
                        fence: *fence,
                        values,
                    };
                    e.seats.insert(owner.to_string(), seat);
                }
                e.max_fence = e.max_fence.max(*fence);
            }
            Answer::Fail(_) => {
                e.seats.remove(owner);
            }
            Answer::Unknown(_) => {}
        }
    }

    pub fn proclaim_begin(&self, name: &str, owner: &str, value: Digest) {
        let mut b = self.book();
        b.begin("proclaim");
        if let Some(Seat::Leading { values, .. }) = b.election(name).seats.get_mut(owner) {
            values.push(value);
        }
    }

    pub fn proclaim_done(&self, name: &str, owner: &str, value: Digest, answer: &Answer<()>) {
        let mut b = self.book();
        b.count("proclaim", answer);
        if let (Answer::Ok(()), Some(Seat::Leading { values, .. })) =
            (answer, b.election(name).seats.get_mut(owner))
        {
            *values = vec![value];
        }
    }

    pub fn resign_begin(&self, name: &str, owner: &str) {
        let mut b = self.book();
        b.begin("resign");
        let seats = &mut b.election(name).seats;
        if let Some(Seat::Leading { fence, values }) = seats.remove(owner) {
            seats.insert(owner.to_string(), Seat::Resigning { fence, values });
        }
    }

    pub fn resign_done(&self, name: &str, owner: &str, answer: &Answer<()>) {
        let mut b = self.book();
        b.count("resign", answer);
        let seats = &mut b.election(name).seats;
        if let (Answer::Ok(()), Some(Seat::Resigning { fence, .. })) = (answer, seats.get(owner)) {
            let fence = *fence;
            seats.insert(owner.to_string(), Seat::Resigned { fence });
        }
    }
}

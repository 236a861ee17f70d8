//! Wing & Gong's linearizability search, with Lowe's memoization.
//!
//! Given operations with call and return times and a (possibly
//! nondeterministic) sequential model, look for an order of the
//! operations that respects real time (an op that returned before another
//! was called comes first) and that the model accepts. Depth-first: at each
//! point, any not-yet-placed op called before the earliest pending return
//! may go next; a (placed set, model state) pair already explored is never
//! explored again.
//!
//! An op whose outcome is unknown has return time `u64::MAX`: it may be
//! placed anywhere after its call, including after everything else, where
//! it has no effect on anything — which is how "it may never have
//! happened" is expressed. The search succeeds once every op with a known
//! return is placed.

use std::collections::HashSet;
use std::hash::Hash;

/// A sequential specification. `step` lists every state the op may lead
/// to from `self`; an empty list means the op cannot happen here.
pub trait Model: Clone + Eq + Hash {
    type Op;
    fn step(&self, op: &Self::Op) -> Vec<Self>;
}

/// One operation to place.
#[derive(Debug, Clone)]
pub struct Entry<O> {
    pub call: u64,
    /// `u64::MAX`: outcome unknown.
    pub ret: u64,
    pub op: O,
    /// Index of the operation in the caller's history.
    pub source: usize,
}

/// Where the deepest attempt got stuck.
#[derive(Debug, Clone, Default)]
pub struct Stuck {
    /// Entries placed, in order, on the way there.
    pub placed: Vec<usize>,
    /// Entries that were candidates there and could not go next.
    pub blocked: Vec<usize>,
    /// Configurations explored in all.
    pub explored: usize,
}

/// The verdict of a search.
#[derive(Debug, Clone)]
pub enum SearchResult {
    Linearizable {
        explored: usize,
    },
    Illegal(Stuck),
    /// The memo table outgrew the budget: no verdict.
    GaveUp {
        explored: usize,
    },
}

struct Frame<M> {
    state: M,
    cands: Vec<usize>,
    /// Next candidate to expand.
    next: usize,
    /// The candidate being expanded and its untried successor states.
    current: usize,
    successors: Vec<M>,
}

/// Searches for a linearization of `entries` (sorted by call) from `init`.
/// `budget` bounds the number of memoized configurations.
pub fn search<M: Model>(init: M, entries: &[Entry<M::Op>], budget: usize) -> SearchResult {
    let n = entries.len();
    let must = entries.iter().filter(|e| e.ret != u64::MAX).count();
    let mut done = Bits::new(n);
    let mut placed_must = 0usize;
    let mut path: Vec<usize> = Vec::new();
    let mut cache: HashSet<(u32, Vec<u64>, M)> = HashSet::new();
    let mut best = Stuck::default();
    let mut best_depth = 0usize;
    let cands = candidates(&done, entries);
    let mut stack = vec![Frame {
        state: init,
        cands,
        next: 0,
        current: 0,
        successors: Vec::new(),
    }];
    loop {
        if placed_must == must {
            return SearchResult::Linearizable {
                explored: cache.len(),
            };
        }
        let Some(top) = stack.last_mut() else {
            best.explored = cache.len();
            return SearchResult::Illegal(best);
        };
        let next = loop {
            if let Some(s) = top.successors.pop() {
                break Some((top.current, s));
            }
            if top.next >= top.cands.len() {
                break None;
            }
            top.current = top.cands[top.next];
            top.next += 1;
            top.successors = top.state.step(&entries[top.current].op);
        };
        match next {
            Some((i, state)) => {
                done.set(i, true);
                let (start, window) = done.key();
                if cache.insert((start, window, state.clone())) {
                    if cache.len() > budget {
                        return SearchResult::GaveUp {
                            explored: cache.len(),
                        };
                    }
                    path.push(i);
                    if entries[i].ret != u64::MAX {
                        placed_must += 1;
                    }
                    let cands = candidates(&done, entries);
                    stack.push(Frame {
                        state,
                        cands,
                        next: 0,
                        current: 0,
                        successors: Vec::new(),
                    });
                } else {
                    done.set(i, false);
                }
            }
            None => {
                if placed_must >= best_depth {
                    best_depth = placed_must;
                    best = Stuck {
                        placed: path.clone(),
                        blocked: top.cands.clone(),
                        explored: 0,
                    };
                }
                stack.pop();
                match path.pop() {
                    Some(i) => {
                        done.set(i, false);
                        if entries[i].ret != u64::MAX {
                            placed_must -= 1;
                        }
                    }
                    None => {
                        best.explored = cache.len();
                        return SearchResult::Illegal(best);
                    }
                }
            }
        }
    }
}

/// Unplaced entries that may go next: called no later than the earliest
/// return among unplaced entries.
fn candidates<O>(done: &Bits, entries: &[Entry<O>]) -> Vec<usize> {
    let mut min_ret = u64::MAX;
    let mut out = Vec::new();
    let start = done.first_unset();
    for (i, e) in entries.iter().enumerate().skip(start) {
        if done.get(i) {
            continue;
        }
        if e.call > min_ret {
            break;
        }
        out.push(i);
        min_ret = min_ret.min(e.ret);
    }
    out.retain(|&i| entries[i].call <= min_ret);
    out
}

/// A bit set with a compact key: the first unset bit and the words from
/// there to the last set bit.
struct Bits {
    words: Vec<u64>,
}

impl Bits {
    fn new(n: usize) -> Self {
        Bits {
            words: vec![0; n.div_ceil(64)],
        }
    }
    fn get(&self, i: usize) -> bool {
        self.words[i / 64] & (1 << (i % 64)) != 0
    }
    fn set(&mut self, i: usize, on: bool) {
        if on {
            self.words[i / 64] |= 1 << (i % 64);
        } else {
            self.words[i / 64] &= !(1 << (i % 64));
        }
    }
    fn first_full_words(&self) -> usize {
        self.words.iter().take_while(|w| **w == u64::MAX).count()
    }
    fn first_unset(&self) -> usize {
        let w = self.first_full_words();
        match self.words.get(w) {
            Some(word) => w * 64 + word.trailing_ones() as usize,
            None => w * 64,
        }
    }
    fn key(&self) -> (u32, Vec<u64>) {
        let start = self.first_full_words();
        let end = self
            .words
            .iter()
            .rposition(|w| *w != 0)
            .map_or(start, |p| (p + 1).max(start));
        (start as u32, self.words[start..end].to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A register: write(v) / read() -> v.
    #[derive(Clone, PartialEq, Eq, Hash)]
    struct Reg(u64);
    enum RegOp {
        Write(u64),
        Read(u64),
    }
    impl Model for Reg {
        type Op = RegOp;
        fn step(&self, op: &RegOp) -> Vec<Reg> {
            match op {
                RegOp::Write(v) => vec![Reg(*v)],
                RegOp::Read(v) if *v == self.0 => vec![self.clone()],
                RegOp::Read(_) => vec![],
            }
        }
    }
    fn e(call: u64, ret: u64, op: RegOp) -> Entry<RegOp> {
        Entry {
            call,
            ret,
            op,
            source: 0,
        }
    }

    #[test]
    fn concurrent_write_may_be_seen_or_not() {
        let h = vec![
            e(0, 10, RegOp::Write(1)),
            e(1, 3, RegOp::Read(0)),
            e(4, 6, RegOp::Read(1)),
        ];
        assert!(matches!(
            search(Reg(0), &h, 1000),
            SearchResult::Linearizable { .. }
        ));
    }

    #[test]
    fn stale_read_after_write_returned_is_caught() {
        let h = vec![e(0, 2, RegOp::Write(1)), e(3, 4, RegOp::Read(0))];
        match search(Reg(0), &h, 1000) {
            SearchResult::Illegal(stuck) => assert_eq!(stuck.blocked, vec![1]),
            other => panic!("expected a violation, got {other:?}"),
        }
    }

    #[test]
    fn unknown_write_may_take_effect_late_or_never() {
        let h = vec![
            e(0, u64::MAX, RegOp::Write(1)),
            e(5, 6, RegOp::Read(0)),
            e(7, 8, RegOp::Read(1)),
        ];
        assert!(matches!(
            search(Reg(0), &h, 1000),
            SearchResult::Linearizable { .. }
        ));
        let h = vec![e(0, u64::MAX, RegOp::Write(1)), e(5, 6, RegOp::Read(0))];
        assert!(matches!(
            search(Reg(0), &h, 1000),
            SearchResult::Linearizable { .. }
        ));
        let h = vec![
            e(0, u64::MAX, RegOp::Write(1)),
            e(5, 6, RegOp::Read(1)),
            e(7, 8, RegOp::Read(0)),
        ];
        assert!(matches!(search(Reg(0), &h, 1000), SearchResult::Illegal(_)));
    }
}

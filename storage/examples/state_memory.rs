//! How much memory the lock state takes in W7's shape: N leases, each
//! holding one exclusive lock with its own owner token, granted by 32
//! clients. Counts live heap bytes with a counting allocator, so the figure
//! does not depend on the allocator or on the machine's load. Shows what a
//! snapshot of it costs (the copy, its postcard, and the JSON of earlier
//! builds) and times what a restart does first: decoding the snapshot and
//! rebuilding the state from it. Then counts what one remembered client
//! costs: N fresh client ids each granting a lease (the flood that pins
//! sessions), and N that only send one request (sessions without a lease).
//!
//! ```sh
//! cargo run --release -p raftlock-storage --example state_memory [-- N]
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use raftlock_storage::command::{Acquire, GrantLease};
use raftlock_storage::state::{Changes, LockState, StateParts};
use raftlock_storage::{slot, ClientSeq, Command, Mode, Quotas, Request};
use uuid::Uuid;

/// The system allocator, keeping a count of the bytes currently allocated.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to `System`; only a counter is
// updated besides.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const CLIENTS: usize = 32;

fn megabytes(bytes: usize) -> f64 {
    bytes as f64 / 1e6
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("N must be a number"))
        .unwrap_or(100_000);
    let clients: Vec<Uuid> = (0..CLIENTS).map(|_| Uuid::new_v4()).collect();
    let mut seqs = [0u64; CLIENTS];
    let mut request = |i: u64, command: Command| {
        let c = i as usize % CLIENTS;
        seqs[c] += 1;
        Request {
            // Every earlier reply acknowledged, as the client library does.
            origin: Some(ClientSeq {
                client: clients[c],
                seq: seqs[c],
                acked_below: seqs[c],
                attempt: 0,
                anonymous: false,
            }),
            caller: Default::default(),
            time_ms: 1_795_000_000_000,
            command,
        }
    };

    let before = LIVE.load(Relaxed);
    let mut state = LockState::default();
    let quotas = Quotas::default();
    let mut index = 1;
    for i in 0..n {
        index += 1;
        let lease = slot(index, 0);
        let grant = request(i, Command::GrantLease(GrantLease { ttl_ms: 140_000 }));
        state.apply(lease, &grant, &quotas, &mut Changes::default());
        let acquire = request(
            i,
            Command::Acquire(Acquire {
                name: format!("W7/r0/{i}"),
                owner: Uuid::new_v4().to_string(),
                lease,
                mode: Mode::Exclusive,
                wait: false,
                value: None,
                lock_delay_ms: 0,
            }),
        );
        index += 1;
        state.apply(slot(index, 0), &acquire, &quotas, &mut Changes::default());
    }
    let held = state.locks().count();
    let live = LIVE.load(Relaxed) - before;
    println!(
        "{n} leases, {held} locks held: {:.1} MB live ({} bytes per lease+lock)",
        megabytes(live),
        live / n.max(1) as usize
    );
    // A snapshot: this build encodes postcard straight from the state
    // (under its read lock); earlier builds copied the state under the lock,
    // then encoded the copy as JSON.
    let mark = LIVE.load(Relaxed);
    let started = Instant::now();
    let view = state.parts_view();
    let encoded = postcard::to_stdvec(&view).expect("the state encodes");
    let encode_took = started.elapsed();
    let view_bytes = LIVE.load(Relaxed) - mark - encoded.capacity();
    drop(view);
    println!(
        "snapshot: a view of the state {:.1} MB and its postcard {:.1} MB, in {encode_took:.2?}",
        megabytes(view_bytes),
        megabytes(encoded.len())
    );
    let mark = LIVE.load(Relaxed);
    let started = Instant::now();
    let parts = state.to_parts();
    let copied = started.elapsed();
    let copy = LIVE.load(Relaxed) - mark;
    let json = serde_json::to_vec(&parts).expect("the state encodes");
    println!(
        "earlier builds: a copy of the state {:.1} MB (in {copied:.2?}), its JSON {:.1} MB",
        megabytes(copy),
        megabytes(json.len())
    );
    drop(parts);
    drop(json);

    let started = Instant::now();
    let decoded: StateParts = postcard::from_bytes(&encoded).expect("the postcard decodes");
    let rebuilt = LockState::from_parts(decoded);
    let took = started.elapsed();
    assert!(rebuilt == state, "the rebuilt state differs");
    println!("restart: decoding the snapshot and rebuilding the state took {took:.2?}");
    drop((state, rebuilt));
    client_sessions(n);
}

/// Live bytes of `n` client sessions from one source address: each
/// granting a lease (so pinned), then each sending one other request.
fn client_sessions(n: u64) {
    let quotas = Quotas {
        clients: u32::MAX,
        leases: u32::MAX,
        ..Quotas::default()
    };
    let caller = raftlock_storage::Caller::unauthenticated([10, 0, 0, 1].into());
    for (what, command) in [
        (
            "with a lease",
            Command::GrantLease(GrantLease { ttl_ms: 140_000 }),
        ),
        (
            "without a lease",
            Command::ExpireLeases(raftlock_storage::command::ExpireLeases { ids: vec![] }),
        ),
    ] {
        let before = LIVE.load(Relaxed);
        let mut state = LockState::default();
        for i in 0..n {
            let request = Request {
                origin: Some(ClientSeq {
                    client: Uuid::from_u128(u128::from(i) + 1),
                    seq: 1,
                    acked_below: 1,
                    attempt: 0,
                    anonymous: false,
                }),
                caller: caller.clone(),
                time_ms: 1_795_000_000_000,
                command: command.clone(),
            };
            state.apply(slot(i + 2, 0), &request, &quotas, &mut Changes::default());
        }
        let live = LIVE.load(Relaxed) - before;
        println!(
            "{n} client ids {what}: {:.1} MB live ({} bytes each)",
            megabytes(live),
            live / n.max(1) as usize
        );
    }
}

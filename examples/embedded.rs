//! An application that embeds a raftlock node: three copies of it form the
//! lock cluster among themselves (no extra process to operate), campaign in
//! an election, and the elected copy does the application's singleton work
//! — here, a heartbeat line once a second carrying its fencing token.
//! Kill the leader's process and another copy takes the work over within a
//! few seconds (one lease TTL, plus a Raft election if the killed copy was
//! also the Raft leader).
//!
//! Run the three copies, each in its own terminal, from the repository root:
//!
//! ```text
//! cargo run --example embedded -- --id 1
//! cargo run --example embedded -- --id 2
//! cargo run --example embedded -- --id 3
//! ```
//!
//! They listen on 127.0.0.1:27401..27403 (clients) and 27411..27413
//! (peers), keep data in `./embedded-data/node-<id>`, and agree on members
//! through `--members` (the same list on every copy; the default is the
//! three above). Then `kill -9` the copy printing heartbeats and watch
//! another one start. Ctrl-C resigns (revokes the lease) and stops cleanly.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use clap::Parser;
use raftlock::{Config, InitialMember, Node, ReplicationConfig};
use raftlock_client::{Client, Error};
use tokio::time::{sleep, timeout};

/// The election every copy campaigns in.
const ELECTION: &str = "embedded-example/worker";

const DEFAULT_MEMBERS: &str = "1=127.0.0.1:27411/127.0.0.1:27401,\
                               2=127.0.0.1:27412/127.0.0.1:27402,\
                               3=127.0.0.1:27413/127.0.0.1:27403";

/// Flags of one copy of the app.
#[derive(Debug, Parser)]
struct Args {
    /// This copy's node id (one of the members).
    #[arg(long)]
    id: u64,
    /// Every copy: ID=PEER_ADDR/CLIENT_ADDR,...
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_MEMBERS)]
    members: Vec<InitialMember>,
    /// Data directory. Default ./embedded-data/node-<id>.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Leadership lease TTL in ms: how long a dead leader keeps the work.
    #[arg(long, default_value_t = 2000)]
    ttl_ms: u64,
    /// The copies' shared join token, which authenticates their peer
    /// traffic (`raftlock certs create-join-token` makes one).
    #[arg(long, env = "RAFTLOCK_JOIN_TOKEN", hide_env_values = true)]
    join_token: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            std::env::var("RAFTLOCK_LOG").unwrap_or_else(|_| "warn,openraft=off".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let me = args
        .members
        .iter()
        .find(|m| m.id == args.id)
        .ok_or_else(|| format!("--id {} is not one of --members", args.id))?
        .clone();
    let data_dir = args
        .data_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("embedded-data/node-{}", args.id)));
    let node = Node::start(Config {
        replication: ReplicationConfig {
            id: args.id,
            data_dir,
            client_addr: me.addr.client_addr,
            peer_addr: me.addr.peer_addr,
            initial_cluster: args.members.clone(),
            join_token: Some(args.join_token.clone()),
            ..ReplicationConfig::default()
        },
        ..Config::default()
    })
    .await?;
    let client = Client::for_node(node.access()).await?;
    println!("app {}: node started on {}", args.id, node.client_addr());

    let ttl = Duration::from_millis(args.ttl_ms);
    tokio::select! {
        () = run_app(&client, args.id, ttl) => {}
        _ = tokio::signal::ctrl_c() => println!("app {}: stopping", args.id),
    }
    // Dropping `run_app` dropped its lease keeper; revoking ends leadership
    // now instead of one TTL later.
    let lease = CURRENT_LEASE.load(Ordering::Relaxed);
    if lease != 0 {
        let _ = timeout(Duration::from_secs(2), client.revoke(lease)).await;
    }
    node.shutdown().await;
    Ok(())
}

/// The lease this copy campaigns with (0: none yet), for the revoke on
/// Ctrl-C.
static CURRENT_LEASE: AtomicU64 = AtomicU64::new(0);

/// Campaign, work while leader, campaign again after losing leadership.
async fn run_app(client: &Client, id: u64, ttl: Duration) {
    loop {
        if let Err(e) = lead_once(client, id, ttl).await {
            eprintln!("app {id}: {e}; campaigning again");
            sleep(Duration::from_millis(200)).await;
        }
    }
}

/// One term as candidate and (maybe) leader; returns why it ended.
async fn lead_once(client: &Client, id: u64, ttl: Duration) -> Result<(), Error> {
    // A lease of our own, so its TTL (how long a dead leader keeps the
    // work) is ours to choose; `with_lease` keeps it alive in the
    // background while we wait in the queue and while we lead.
    let lease = client.grant_lease(ttl).await?;
    CURRENT_LEASE.store(lease, Ordering::Relaxed);
    let leadership = client
        .with_lease(lease)
        .election(ELECTION)
        .campaign(format!("app {id}"))
        .await?;
    let fence = leadership.fence();
    println!("app {id}: elected leader (fence {fence}); doing the singleton work");
    // `lost()` resolves as soon as leadership can no longer be trusted: the
    // lease was revoked or expired, or keep-alives failed past the safety
    // margin. The work stops right there.
    let lost = tokio::select! {
        () = singleton_work(id, fence) => unreachable!("the work loops forever"),
        lost = leadership.lost() => lost,
    };
    println!("app {id}: stopped the work: {lost}");
    let _ = client.revoke(lease).await;
    Err(lost)
}

/// The work only one copy may do at a time. A real app would pass `fence`
/// to every resource it writes, so a deposed leader's late writes are
/// rejected.
async fn singleton_work(id: u64, fence: u64) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        println!("app {id}: heartbeat fence={fence} unix_ms={now}");
    }
}

//! `raftlock snapshot save|restore|status`: back up a live cluster's lock
//! state to a file, seed a new cluster's data dirs from one, and say what a
//! file holds (as `etcdctl snapshot save`, `etcdutl snapshot restore` and
//! `etcdutl snapshot status`).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::admin_args::AdminArgs;
use super::{print_json, Endpoints, Output, EXIT_SUCCESS};
use raftlock_raft::peer::auth::{key_path, plan_key};
use raftlock_raft::{Config, InitialMember};
use raftlock_storage::backup::{restore, Backup, Restored, Seed};

/// `raftlock snapshot ...`
#[derive(Debug, clap::Args)]
pub struct SnapshotArgs {
    #[command(flatten)]
    endpoints: Endpoints,
    #[command(subcommand)]
    command: SnapshotCommand,
}

#[derive(Debug, clap::Subcommand)]
enum SnapshotCommand {
    /// Write a backup of the cluster's whole lock state to FILE: every
    /// lease, lock, holder, waiter and fence, at one applied index read
    /// through the leader. Needs the admin role on a cluster with auth.
    Save {
        /// Where to write it. An existing file is refused unless --force;
        /// the file appears (or is replaced) only once the backup is
        /// complete and synced.
        file: PathBuf,
        /// Replace FILE if it exists (`--overwrite`, as `raftlock certs`).
        #[arg(long, visible_alias = "overwrite")]
        force: bool,
        /// Take it from the answering node's applied state without asking
        /// the leader (for a cluster that lost its quorum).
        #[arg(long)]
        local: bool,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Seed a new, empty data dir for one node of a new cluster from a
    /// backup. Run it once per member with the same FILE, --initial-cluster
    /// and --bump-index, then start each with the `raftlock serve` command
    /// it prints (its own addresses from its --initial-cluster entry).
    /// Fences the new cluster grants are above every fence the old cluster
    /// granted, after the backup too (its first request moves them past
    /// what any cluster could grant in the time since the backup); leases
    /// restart with their full TTL once a leader is elected.
    Restore {
        /// The backup file (`raftlock snapshot save`).
        file: PathBuf,
        /// The new node's data dir; must not exist or be empty.
        #[arg(long)]
        data_dir: PathBuf,
        /// The new node's id.
        #[arg(long, default_value_t = 1)]
        id: u64,
        /// Members of the new cluster: ID=PEER_ADDR/CLIENT_ADDR,... (as for
        /// `serve`). Default: a one-node cluster of this node at
        /// --peer-addr / --client-addr.
        #[arg(long, value_delimiter = ',')]
        initial_cluster: Vec<InitialMember>,
        /// A one-node cluster's client address.
        #[arg(long, default_value = "127.0.0.1:7379")]
        client_addr: String,
        /// A one-node cluster's peer address.
        #[arg(long, default_value = "127.0.0.1:7380")]
        peer_addr: String,
        /// Start the new log this many entries past the backup's index
        /// (fences grow by 65536 per entry). Not needed to clear the fences
        /// the old cluster granted after the backup: that happens anyway.
        /// As etcdutl's --bump-revision.
        #[arg(long, default_value_t = 0)]
        bump_index: u64,
        /// Mixed into the new cluster's id: give each cluster restored from
        /// the same file with the same members its own token.
        #[arg(long, default_value = "")]
        cluster_token: String,
        /// The join token (peer secret) of the new cluster, the same for
        /// every member: written into the data dir, so the printed serve
        /// command needs none. Needed for a cluster of several nodes
        /// without TLS, unless --insecure.
        #[arg(long, env = "RAFTLOCK_JOIN_TOKEN_FILE")]
        join_token_file: Option<PathBuf>,
        /// The new cluster runs without peer authentication (or with TLS):
        /// no join token; the printed command says --insecure.
        #[arg(long)]
        insecure: bool,
    },
    /// Say what a backup file holds: its index, counts and highest fence.
    Status {
        /// The backup file.
        file: PathBuf,
    },
}

/// What `snapshot status` prints.
#[derive(Debug, Serialize)]
struct FileView {
    index: u64,
    cluster_id: Option<String>,
    taken_at_ms: u64,
    leases: usize,
    locks: usize,
    holders: usize,
    waiters: usize,
    highest_fence: u64,
    bytes: usize,
}

/// What `snapshot restore` prints.
#[derive(Debug, Serialize)]
struct RestoreView {
    data_dir: String,
    node_id: u64,
    cluster_id: String,
    /// The new log continues after this index.
    index: u64,
    /// Every fence the new cluster grants is above this.
    fence_floor: u64,
}

pub async fn run(args: SnapshotArgs) -> Result<u8, String> {
    let output = args.endpoints.output;
    match args.command {
        SnapshotCommand::Save {
            file,
            force,
            local,
            admin,
        } => {
            if !force {
                refuse_existing(&file)?;
            }
            let client = admin.connect(&args.endpoints).await?;
            let bytes = client
                .backup(local)
                .await
                .map_err(|e| args.endpoints.explain(&e))?;
            let backup = Backup::decode(&bytes).map_err(|e| format!("the cluster sent {e}"))?;
            write_atomically(&file, &bytes, force)?;
            sync_parent(&file)?;
            report(&file, &backup, bytes.len(), output)?;
        }
        SnapshotCommand::Restore {
            file,
            data_dir,
            id,
            initial_cluster,
            client_addr,
            peer_addr,
            bump_index,
            cluster_token,
            join_token_file,
            insecure,
        } => {
            let bytes = read(&file)?;
            let mut config = Config {
                id,
                data_dir: data_dir.clone(),
                client_addr,
                peer_addr,
                initial_cluster,
                ..Config::default()
            };
            // A member of a new cluster listens where its entry says.
            config.listen_on_own_entry(true, true);
            config.join_token_file = join_token_file;
            config.insecure = insecure;
            config.validate().map_err(|e| e.to_string())?;
            // Checked before anything is written.
            let key_plan = plan_key(&config).map_err(|e| e.to_string())?;
            let seed = Seed {
                node_id: id,
                members: config
                    .initial_members()
                    .into_iter()
                    .map(|m| (m.id, m.addr))
                    .collect(),
                bootstrap: config.bootstrap(),
                bump: bump_index,
                token: cluster_token,
                now_ms: raftlock_raft::clock::wall_clock_ms(),
            };
            let restored = tokio::task::spawn_blocking(move || restore(&data_dir, &bytes, &seed))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| format!("{e} ({})", file.display()))?;
            if let Some(key) = key_plan.key() {
                key.write_file(&key_path(&config.data_dir))
                    .map_err(|e| e.to_string())?;
            }
            print_restored(&config, &restored, output)?;
        }
        SnapshotCommand::Status { file } => {
            let bytes = read(&file)?;
            let backup = Backup::decode(&bytes).map_err(|e| format!("{}: {e}", file.display()))?;
            report(&file, &backup, bytes.len(), output)?;
        }
    }
    Ok(EXIT_SUCCESS)
}

fn read(file: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display()))
}

/// Writes `bytes` to a temporary file beside `file`, syncs it and renames
/// it over `file`: a backup cut short never replaces a good one.
/// The refusal of `snapshot save` onto an existing `file` without
/// `--force`: an old backup is often the one that matters.
fn refuse_existing(file: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(file) {
        Ok(_) => Err(exists(file)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot check {}: {e}", file.display())),
    }
}

fn exists(file: &Path) -> String {
    format!(
        "{} already exists; nothing was written. Choose another file name, or add \
         --force to replace it",
        file.display()
    )
}

/// Writes `bytes` to a temporary file beside `file`, syncs it, then puts
/// it in place in one step: a rename when `replace`, else a hard link,
/// which fails rather than replace a file that appeared meanwhile.
fn write_atomically(file: &Path, bytes: &[u8], replace: bool) -> Result<(), String> {
    use std::io::Write;
    let name = file
        .file_name()
        .ok_or_else(|| format!("{} is not a file name", file.display()))?;
    let tmp = file.with_file_name(format!(".{}.partial", name.to_string_lossy()));
    let fail = |e: std::io::Error| format!("cannot write {}: {e}", tmp.display());
    // A backup holds every lock's owner: readable by its owner only.
    let mut out = std::os::unix::fs::OpenOptionsExt::mode(
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true),
        0o600,
    )
    .open(&tmp)
    .map_err(fail)?;
    out.write_all(bytes).map_err(fail)?;
    out.sync_all().map_err(fail)?;
    if replace {
        return rename_into_place(&tmp, file);
    }
    let linked = std::fs::hard_link(&tmp, file);
    match linked {
        Ok(()) => {
            let _ = std::fs::remove_file(&tmp);
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let _ = std::fs::remove_file(&tmp);
            Err(exists(file))
        }
        // A file system without hard links: check, then rename.
        Err(_) => match refuse_existing(file) {
            Ok(()) => rename_into_place(&tmp, file),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        },
    }
}

/// Syncs the directory that holds `file`, so its new name survives a
/// power cut as its bytes do.
fn sync_parent(file: &Path) -> Result<(), String> {
    let dir = match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| format!("cannot sync directory {}: {e}", dir.display()))
}

/// Renames `tmp` over `file`; removes `tmp` when that fails.
fn rename_into_place(tmp: &Path, file: &Path) -> Result<(), String> {
    std::fs::rename(tmp, file).map_err(|e| {
        let _ = std::fs::remove_file(tmp);
        format!("cannot write {}: {e}", file.display())
    })
}

fn report(file: &Path, backup: &Backup, bytes: usize, output: Output) -> Result<(), String> {
    let view = FileView {
        index: backup.index,
        cluster_id: backup.cluster_id.map(|c| c.to_string()),
        taken_at_ms: backup.taken_at_ms,
        leases: backup.state.leases.len(),
        locks: backup.state.locks.len(),
        holders: backup.state.locks.iter().map(|l| l.holders.len()).sum(),
        waiters: backup.state.locks.iter().map(|l| l.waiters.len()).sum(),
        highest_fence: backup.highest_fence(),
        bytes,
    };
    match output {
        Output::Json => print_json(&view)?,
        Output::Table => out!(
            "{}: backup at index {} of cluster {}: {} leases, {} locks ({} holders, {} \
             waiters), highest fence {}, {} bytes",
            file.display(),
            view.index,
            view.cluster_id.as_deref().unwrap_or("(unknown)"),
            view.leases,
            view.locks,
            view.holders,
            view.waiters,
            view.highest_fence,
            view.bytes
        ),
    }
    Ok(())
}

fn print_restored(config: &Config, restored: &Restored, output: Output) -> Result<(), String> {
    let view = RestoreView {
        data_dir: config.data_dir.display().to_string(),
        node_id: config.id,
        cluster_id: restored.cluster_id.to_string(),
        index: restored.index,
        fence_floor: restored.fence_floor,
    };
    match output {
        Output::Json => print_json(&view)?,
        Output::Table => {
            let members: Vec<String> = config
                .initial_cluster
                .iter()
                .map(|m| m.to_string())
                .collect();
            let mut flags = format!(
                "--client-addr {} --peer-addr {}",
                config.client_addr, config.peer_addr
            );
            if !members.is_empty() {
                flags.push_str(&format!(" --initial-cluster {}", members.join(",")));
            }
            if config.insecure {
                flags.push_str(" --insecure");
            }
            out!(
                "restored node {} of cluster {} into {}: its log continues after index {}, \
                 every new fence is above {}; start it with `raftlock serve --id {} \
                 --data-dir {} {flags}`",
                view.node_id,
                view.cluster_id,
                view.data_dir,
                view.index,
                view.fence_floor,
                view.node_id,
                view.data_dir
            );
        }
    }
    Ok(())
}

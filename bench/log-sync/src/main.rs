//! Append+sync latency of ways to keep a Raft log, one 150-byte entry per
//! append, each synced before the next: `sled` (insert + flush + fdatasync,
//! raftlock's path before the write-ahead log), `raftlog` (raft-log 0.3's
//! append + flush, answered from its flush thread), `segment` (one write +
//! fdatasync of an append-only file on the calling thread), `prealloc`
//! (the same into a file of zeroes written beforehand), `sfr`
//! (sync_file_range before the fdatasync), `thread` (the fdatasync on
//! another thread), `dsync` (O_DSYNC writes), `sledlike` (sled's pattern:
//! write + sync_file_range on one thread, fdatasync on another).
use std::io::Write;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;
use std::time::Instant;

use raft_log::api::raft_log_writer::RaftLogWriter;
use raft_log::api::types::Types;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct T;
impl Types for T {
    type LogId = (u64, u64);
    type LogPayload = Vec<u8>;
    type Vote = (u64, u64);
    type UserData = String;
    type Callback = SyncSender<std::io::Result<()>>;
    fn log_index(id: &Self::LogId) -> u64 {
        id.1
    }
    fn payload_size(p: &Self::LogPayload) -> u64 {
        p.len() as u64
    }
}

/// One log record as the segment modes write it: length, CRC-32C of the
/// payload, entry index, payload.
fn record(index: u64, payload: &[u8]) -> Vec<u8> {
    let mut rec = Vec::with_capacity(payload.len() + 16);
    rec.extend_from_slice(&(payload.len() as u32 + 8).to_le_bytes());
    rec.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    rec.extend_from_slice(&index.to_le_bytes());
    rec.extend_from_slice(payload);
    rec
}

/// `dir`/seg opened with `options` to create and append.
fn segment(dir: &str, options: &mut std::fs::OpenOptions) -> std::fs::File {
    options
        .create(true)
        .append(true)
        .open(format!("{dir}/seg"))
        .unwrap()
}

/// Runs `append(i)` for each entry `i` of `0..n`; answers the latency of
/// each, in microseconds.
fn timed(n: u64, mut append: impl FnMut(u64)) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let t = Instant::now();
            append(i);
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect()
}

fn report(name: &str, mut lat: Vec<f64>) {
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = lat.len();
    let mean = lat.iter().sum::<f64>() / n as f64;
    println!(
        "{name}: n={n} mean={mean:.1}us p50={:.1}us p99={:.1}us",
        lat[n / 2],
        lat[n * 99 / 100]
    );
}

fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    let n: u64 = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let dir = std::env::args()
        .nth(3)
        .unwrap_or_else(|| "/tmp/walbench-data".into());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let payload = vec![7u8; 150];
    let lat = match which.as_str() {
        "sled" => {
            let db = sled::Config::new()
                .path(&dir)
                .cache_capacity(64 << 20)
                .open()
                .unwrap();
            let tree = db.open_tree("log").unwrap();
            let f = std::fs::File::open(format!("{dir}/db")).unwrap();
            timed(n, |i| {
                tree.insert(i.to_be_bytes(), payload.clone()).unwrap();
                db.flush().unwrap();
                f.sync_data().unwrap();
            })
        }
        "raftlog" => {
            let config = Arc::new(raft_log::Config {
                dir: dir.clone(),
                ..Default::default()
            });
            let mut log = raft_log::RaftLog::<T>::open(config).unwrap();
            timed(n, |i| {
                log.append([((1, i), payload.clone())]).unwrap();
                let (tx, rx) = sync_channel(1);
                log.flush(Some(tx)).unwrap();
                rx.recv().unwrap().unwrap();
            })
        }
        "segment" => {
            let mut f = segment(&dir, &mut std::fs::OpenOptions::new());
            timed(n, |i| {
                f.write_all(&record(i, &payload)).unwrap();
                f.sync_data().unwrap();
            })
        }
        "prealloc" => {
            use std::os::unix::fs::FileExt;
            let f = std::fs::OpenOptions::new()
                .create(true)
                .read(true)
                .write(true)
                .open(format!("{dir}/seg"))
                .unwrap();
            let zeros = vec![0u8; 1 << 20];
            for m in 0..16u64 {
                f.write_all_at(&zeros, m << 20).unwrap();
            }
            f.sync_all().unwrap();
            let mut off = 0u64;
            timed(n, |i| {
                let rec = record(i, &payload);
                f.write_all_at(&rec, off).unwrap();
                off += rec.len() as u64;
                f.sync_data().unwrap();
            })
        }
        "sfr" => {
            use std::os::unix::io::AsRawFd;
            let mut f = segment(&dir, &mut std::fs::OpenOptions::new());
            let mut off = 0i64;
            timed(n, |i| {
                let rec = record(i, &payload);
                f.write_all(&rec).unwrap();
                let r = unsafe { libc::sync_file_range(f.as_raw_fd(), off, rec.len() as i64, 7) };
                assert_eq!(r, 0);
                off += rec.len() as i64;
                f.sync_data().unwrap();
            })
        }
        "thread" => {
            // write on the caller, fdatasync on another thread (a hop there and back)
            let mut f = segment(&dir, &mut std::fs::OpenOptions::new());
            let g = f.try_clone().unwrap();
            let (tx, rx) = std::sync::mpsc::channel::<SyncSender<()>>();
            std::thread::spawn(move || {
                for done in rx {
                    g.sync_data().unwrap();
                    done.send(()).unwrap();
                }
            });
            timed(n, |i| {
                f.write_all(&record(i, &payload)).unwrap();
                let (dtx, drx) = sync_channel(1);
                tx.send(dtx).unwrap();
                drx.recv().unwrap();
            })
        }
        "dsync" => {
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = segment(
                &dir,
                std::fs::OpenOptions::new().custom_flags(libc::O_DSYNC),
            );
            timed(n, |i| f.write_all(&record(i, &payload)).unwrap())
        }
        "sledlike" => {
            use std::os::unix::io::AsRawFd;
            let mut f = segment(&dir, &mut std::fs::OpenOptions::new());
            let g = std::fs::File::open(format!("{dir}/seg")).unwrap();
            let (tx, rx) = std::sync::mpsc::channel::<(Vec<u8>, i64, SyncSender<()>)>();
            std::thread::spawn(move || {
                for (rec, off, done) in rx {
                    f.write_all(&rec).unwrap();
                    let r =
                        unsafe { libc::sync_file_range(f.as_raw_fd(), off, rec.len() as i64, 7) };
                    assert_eq!(r, 0);
                    done.send(()).unwrap();
                }
            });
            let mut off = 0i64;
            timed(n, |i| {
                let rec = record(i, &payload);
                let len = rec.len() as i64;
                let (dtx, drx) = sync_channel(1);
                tx.send((rec, off, dtx)).unwrap();
                drx.recv().unwrap();
                off += len;
                g.sync_data().unwrap();
            })
        }
        _ => panic!("modes"),
    };
    report(&which, lat);
}

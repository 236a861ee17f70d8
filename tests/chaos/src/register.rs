//! The fenced register: the "resource" that critical sections update.
//!
//! One register per lock name, holding a value and the highest fencing
//! token seen. Reads and writes carry the caller's token; an op with a
//! token lower than the highest seen is refused (`STALE`), otherwise the
//! token becomes the highest seen. Because reads raise the token too, a
//! stale holder that read before a newer holder cannot write afterwards, so
//! a read-modify-write under a fenced lock never loses an update.
//!
//! Wire protocol, one line each way:
//! `R name fence` → `OK value` | `STALE max`;
//! `W name fence value` → `OK value` | `STALE max`.
//!
//! The server also logs every accepted write, so the checker can confirm
//! each one raised the value by exactly one.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::Error;

/// One register's state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    pub value: u64,
    pub max_fence: u64,
    /// Every accepted write: (fence, value before, value written).
    pub writes: Vec<(u64, u64, u64)>,
    /// Refused reads and writes.
    pub refused: u64,
}

/// Every register, by name.
pub type Cells = BTreeMap<String, Cell>;

/// The register service.
pub struct RegisterServer {
    pub addr: SocketAddr,
    cells: Arc<Mutex<Cells>>,
    task: JoinHandle<()>,
}

impl RegisterServer {
    /// Serves on a free loopback port.
    pub async fn start() -> Result<RegisterServer, Error> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(Error::io("bind the register"))?;
        let addr = listener
            .local_addr()
            .map_err(Error::io("register address"))?;
        let cells: Arc<Mutex<Cells>> = Arc::default();
        let shared = cells.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, shared.clone()));
            }
        });
        Ok(RegisterServer { addr, cells, task })
    }

    /// A copy of every register.
    pub fn cells(&self) -> Cells {
        self.cells.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for RegisterServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(stream: TcpStream, cells: Arc<Mutex<Cells>>) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let reply = apply(&line, &cells);
        if write.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

fn apply(line: &str, cells: &Mutex<Cells>) -> String {
    let parts: Vec<&str> = line.split_whitespace().collect();
    let num = |i: usize| parts.get(i).and_then(|s| s.parse::<u64>().ok());
    let mut cells = cells.lock().unwrap_or_else(|e| e.into_inner());
    match (parts.first(), parts.get(1), num(2)) {
        (Some(&"R"), Some(name), Some(fence)) => {
            let cell = cells.entry(name.to_string()).or_default();
            if fence < cell.max_fence {
                cell.refused += 1;
                return format!("STALE {}\n", cell.max_fence);
            }
            cell.max_fence = fence;
            format!("OK {}\n", cell.value)
        }
        (Some(&"W"), Some(name), Some(fence)) => {
            let Some(value) = num(3) else {
                return "ERR bad write\n".into();
            };
            let cell = cells.entry(name.to_string()).or_default();
            if fence < cell.max_fence {
                cell.refused += 1;
                return format!("STALE {}\n", cell.max_fence);
            }
            cell.max_fence = fence;
            cell.writes.push((fence, cell.value, value));
            cell.value = value;
            format!("OK {value}\n")
        }
        _ => "ERR bad request\n".into(),
    }
}

/// What the register answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    Ok(u64),
    Stale(u64),
}

/// A connection to the register service.
pub struct RegisterClient {
    addr: SocketAddr,
    conn: Option<BufReader<TcpStream>>,
}

impl RegisterClient {
    pub fn new(addr: SocketAddr) -> Self {
        RegisterClient { addr, conn: None }
    }

    /// `R name fence`.
    pub async fn read(&mut self, name: &str, fence: u64) -> Result<Reply, String> {
        self.call(format!("R {name} {fence}\n")).await
    }

    /// `W name fence value`.
    pub async fn write(&mut self, name: &str, fence: u64, value: u64) -> Result<Reply, String> {
        self.call(format!("W {name} {fence} {value}\n")).await
    }

    async fn call(&mut self, line: String) -> Result<Reply, String> {
        let result = tokio::time::timeout(Duration::from_secs(5), self.exchange(line))
            .await
            .map_err(|_| "register timeout".to_string())
            .and_then(|r| r);
        if result.is_err() {
            self.conn = None;
        }
        result
    }

    async fn exchange(&mut self, line: String) -> Result<Reply, String> {
        if self.conn.is_none() {
            let stream = TcpStream::connect(self.addr)
                .await
                .map_err(|e| format!("register connect: {e}"))?;
            self.conn = Some(BufReader::new(stream));
        }
        let conn = self.conn.as_mut().ok_or("no connection")?;
        conn.get_mut()
            .write_all(line.as_bytes())
            .await
            .map_err(|e| format!("register write: {e}"))?;
        let mut answer = String::new();
        conn.read_line(&mut answer)
            .await
            .map_err(|e| format!("register read: {e}"))?;
        let mut parts = answer.split_whitespace();
        let kind = parts.next();
        let n = parts.next().and_then(|s| s.parse::<u64>().ok());
        match (kind, n) {
            (Some("OK"), Some(v)) => Ok(Reply::Ok(v)),
            (Some("STALE"), Some(m)) => Ok(Reply::Stale(m)),
            _ => Err(format!("register said {answer:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_lower_fences_after_a_read() {
        let cells = Mutex::new(Cells::new());
        assert_eq!(apply("R a 5", &cells), "OK 0\n");
        assert_eq!(apply("W a 4 1", &cells), "STALE 5\n");
        assert_eq!(apply("W a 5 1", &cells), "OK 1\n");
        assert_eq!(apply("R a 9", &cells), "OK 1\n");
        assert_eq!(apply("R a 5", &cells), "STALE 9\n");
        let cells = cells.lock().unwrap();
        assert_eq!(cells["a"].writes, vec![(5, 0, 1)]);
        assert_eq!(cells["a"].refused, 2);
    }
}

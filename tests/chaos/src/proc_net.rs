//! Which process owns the far end of an accepted loopback connection.
//!
//! raftlock's peer client does not bind a source address, so every node
//! connects from 127.0.0.1 and an ephemeral port. The proxy learns who is
//! calling the way `ss -p` does, with no privileges for our own children:
//! `/proc/net/tcp` maps the connection's (local, remote) ports to a socket
//! inode, and `/proc/PID/fd` shows which process has that inode open.

use std::net::SocketAddr;

/// The socket inode of the TCP connection whose local end is `local` and
/// remote end is `remote`, as seen by the process that owns it.
pub fn socket_inode(local: SocketAddr, remote: SocketAddr) -> Option<u64> {
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let want_local = hex_addr(local)?;
    let want_remote = hex_addr(remote)?;
    for line in table.lines().skip(1) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() > 9 && cols[1] == want_local && cols[2] == want_remote {
            return cols[9].parse().ok().filter(|&inode| inode != 0);
        }
    }
    None
}

/// Whether process `pid` has socket `inode` open.
pub fn owns_socket(pid: u32, inode: u64) -> bool {
    let want = format!("socket:[{inode}]");
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    dir.flatten().any(|entry| {
        std::fs::read_link(entry.path())
            .map(|target| target.as_os_str() == want.as_str())
            .unwrap_or(false)
    })
}

/// Which of `candidates` (id, pid) opened the connection that reached us
/// from `peer` on our address `ours`.
pub fn connection_owner(
    peer: SocketAddr,
    ours: SocketAddr,
    candidates: &[(u64, u32)],
) -> Option<u64> {
    // The caller's view: local = its ephemeral port, remote = our listener.
    let inode = socket_inode(peer, ours)?;
    candidates
        .iter()
        .find(|(_, pid)| owns_socket(*pid, inode))
        .map(|(id, _)| *id)
}

/// `/proc/net/tcp`'s spelling of an IPv4 address: the address as a
/// little-endian u32 and the port, both upper-case hex.
fn hex_addr(addr: SocketAddr) -> Option<String> {
    match addr {
        SocketAddr::V4(v4) => Some(format!(
            "{:08X}:{:04X}",
            u32::from_le_bytes(v4.ip().octets()),
            v4.port()
        )),
        SocketAddr::V6(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spells_loopback_like_the_kernel() {
        let a: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert_eq!(hex_addr(a).unwrap(), "0100007F:1F90");
    }

    #[test]
    fn finds_our_own_connection() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let ours = listener.local_addr().unwrap();
        let _out = std::net::TcpStream::connect(ours).unwrap();
        let (_inn, peer) = listener.accept().unwrap();
        let me = std::process::id();
        assert_eq!(connection_owner(peer, ours, &[(7, me)]), Some(7));
        assert_eq!(connection_owner(peer, ours, &[(7, u32::MAX)]), None);
    }
}

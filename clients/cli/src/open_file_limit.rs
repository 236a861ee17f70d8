//! `raftlock serve`'s open-file limit: every client connection is a file
//! descriptor, and a soft limit of 1 024 (the usual default) would make the
//! kernel refuse connections long before `max_client_connections`.

use raftlock::Config;

/// Descriptors a node holds beside client connections: its data files, the
/// peer listener's budget (256), the admin listener, logs.
const BESIDE_CLIENTS: u64 = 512;

/// Raises the soft open-file limit to the hard one, as every Go program
/// (etcd among them) does at start, and warns when even that leaves no
/// room for `config`'s client connections.
pub fn raise(config: &Config) {
    let needed = config.serving.max_client_connections as u64 + BESIDE_CLIENTS;
    match raise_to_hard() {
        Ok(limit) if limit < needed => eprintln!(
            "warning: the open-file limit is {limit}, below the {needed} descriptors that \
             max_client_connections ({}) and the node's own files need: connections past \
             it are refused; raise the hard limit (`ulimit -Hn`, systemd's LimitNOFILE=) \
             or lower --max-client-connections",
            config.serving.max_client_connections
        ),
        Ok(_) => {}
        Err(e) => eprintln!("warning: cannot read or raise the open-file limit: {e}"),
    }
}

/// Sets the soft limit to the hard limit; answers the soft limit now in
/// force.
fn raise_to_hard() -> std::io::Result<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only `limit`, setrlimit only reads it.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            limit = raised;
        }
    }
    Ok(limit.rlim_cur)
}

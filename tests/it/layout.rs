//! The source tree's shape, checked on every run: no Rust file past 500
//! lines (a file that long owns two things), no circle of imports among
//! the modules of a crate (each folder's modules form layers), and no
//! arrow pointing up from the server's crates to a client's.
//!
//! A module's imports are the `crate::` and `super::` paths in its code
//! (comments and test files left out), resolved to the sibling they reach:
//! `crate::peer::network` from `crate::node::rollback` is an edge from
//! `node` to `peer`; a path to an ancestor or descendant is not an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a source file may be.
const MAX_LINES: usize = 500;

/// Every crate's source root in the workspace.
const CRATE_ROOTS: &[&str] = &[
    "src",
    "raft/src",
    "storage/src",
    "proto/src",
    "clients/rust/src",
    "clients/cli/src",
    "clients/python/src",
    "tests/chaos/src",
    "tests/lazyfs/src",
    "tests/kit/src",
    "bench/src",
];

fn repo() -> PathBuf {
    crate::repo_root()
}

/// The `.rs` files under `dir`, test files (`tests.rs`, `tests/`) left out
/// when `skip_tests`.
fn rust_files(dir: &Path, skip_tests: bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !(skip_tests && name == "tests") && name != "target" {
                rust_files(&path, skip_tests, out);
            }
        } else if name.ends_with(".rs") && !(skip_tests && name == "tests.rs") {
            out.push(path);
        }
    }
}

/// The module path of `file` under crate root `root` (`a/b.rs` and
/// `a/b/mod.rs` are `[a, b]`; `lib.rs` and `main.rs` are `[]`).
fn module_of(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// `text` without `//` comments and without an inline `mod tests` block.
fn code_of(text: &str) -> String {
    let text = text
        .split("#[cfg(test)]\nmod tests {")
        .next()
        .unwrap_or_default();
    text.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module names in `code` that follow `prefix` (`crate::a::b` gives
/// `[a, b]`).
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().last();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let path: Vec<String> = rest
            .split("::")
            .map_while(|seg| {
                let name: String = seg
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                (!name.is_empty() && name != "super").then_some(name)
            })
            .collect();
        if !path.is_empty() {
            found.push(path);
        }
    }
    found
}

/// Edges between sibling modules of the crate at `root`.
fn module_edges(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(root, true, &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let from = module_of(root, &file);
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        let mut targets = paths_after(&code, "crate::");
        if let Some((_, parent)) = from.split_last() {
            for path in paths_after(&code, "super::") {
                targets.push(parent.iter().cloned().chain(path).collect());
            }
        }
        for to in targets {
            let shared = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if shared >= from.len() || shared >= to.len() {
                continue; // an ancestor or a descendant
            }
            edges
                .entry(from[..=shared].join("/"))
                .or_default()
                .insert(to[..=shared].join("/"));
        }
    }
    edges
}

/// A circle in `edges`, if there is one.
fn find_circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            return Some(path[at..].to_vec());
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, edges, done, path) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|node| visit(node, edges, &mut done, &mut Vec::new()))
}

#[test]
fn no_source_file_is_past_500_lines() {
    let mut long = Vec::new();
    for root in CRATE_ROOTS.iter().chain(&["tests/it"]) {
        let mut files = Vec::new();
        rust_files(&repo().join(root), false, &mut files);
        for file in files {
            let lines = std::fs::read_to_string(&file).unwrap().lines().count();
            if lines > MAX_LINES {
                long.push(format!("{} ({lines} lines)", file.display()));
            }
        }
    }
    assert!(long.is_empty(), "files past {MAX_LINES} lines: {long:?}");
}

/// Fails with the circle found: with `raft/src/config` reading the join
/// token through `peer::auth` again, it names `config → peer → config`.
#[test]
fn no_crate_has_a_circle_of_imports() {
    for root in CRATE_ROOTS {
        let edges = module_edges(&repo().join(root));
        assert!(
            !edges.is_empty() || ["tests/lazyfs/src", "proto/src"].contains(root),
            "{root}: no modules read"
        );
        if let Some(circle) = find_circle(&edges) {
            panic!("{root}: modules import each other in a circle: {circle:?}");
        }
    }
}

/// The check itself: a circle written on purpose is found, a chain is not.
#[test]
fn the_circle_check_finds_a_circle() {
    let edges = |pairs: &[(&str, &str)]| {
        let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in pairs {
            map.entry(a.to_string()).or_default().insert(b.to_string());
        }
        map
    };
    assert!(find_circle(&edges(&[("a", "b"), ("b", "c")])).is_none());
    let circle = find_circle(&edges(&[("a", "b"), ("b", "c"), ("c", "a")])).unwrap();
    assert_eq!(circle.len(), 3);
    assert_eq!(
        paths_after("use crate::peer::network::{a, b};", "crate::"),
        [vec!["peer".to_string(), "network".to_string()]]
    );
}

/// The server's crates and the shared API crate: none of them may depend
/// on, or import, a crate under `clients/`.
const LOWER_CRATES: &[&str] = &[".", "raft", "storage", "proto"];

/// The package names of the crates under `clients/`, read from their
/// manifests (`raftlock-client`, `raftlock-cli`, `raftlock-python`).
fn client_packages() -> Vec<String> {
    let mut names = Vec::new();
    let entries = std::fs::read_dir(repo().join("clients")).expect("clients/");
    for entry in entries.flatten() {
        let Ok(manifest) = std::fs::read_to_string(entry.path().join("Cargo.toml")) else {
            continue;
        };
        let name = manifest
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .and_then(|rest| rest.split('"').next());
        if let Some(name) = name {
            names.push(name.to_string());
        }
    }
    assert!(names.contains(&"raftlock-client".to_string()), "{names:?}");
    names
}

/// The entries of `manifest`'s normal and build dependency tables that name
/// one of `clients` (by package name or by a path under `clients/`).
fn upward_dependencies(manifest: &str, clients: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_deps = line.ends_with("dependencies]") && !line.contains("dev-dependencies");
            continue;
        }
        let key = line.split('=').next().unwrap_or_default().trim();
        let names_client = clients.iter().any(|c| c == key)
            || line.contains("\"clients/")
            || line.contains("/clients/");
        if in_deps && names_client {
            found.push(line.to_string());
        }
    }
    found
}

/// Whether `code` names crate `lib` as a path (`raftlock_client::...`,
/// `use raftlock_client`, `extern crate raftlock_client`).
fn names_crate(code: &str, lib: &str) -> bool {
    code.match_indices(lib).any(|(at, _)| {
        let before = code[..at].chars().last();
        let after = code[at + lib.len()..].chars().next();
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        !before.is_some_and(|c| ident(c) || c == ':') && !after.is_some_and(ident)
    })
}

/// No crate under `src/`, `raft/`, `storage/` or `proto/` depends on a
/// crate under `clients/` (in `[dependencies]` or `[build-dependencies]`,
/// optional or not) or names one in its code. Fails naming the manifest
/// line or the file: with `raftlock-client = { path = "../clients/rust" }`
/// added to `raft/Cargo.toml`, or `use raftlock_client::Client;` added to
/// `src/status.rs`, as `src/pb.rs` re-exported `raftlock_client::pb` and
/// `src/lib.rs` the whole client before the `raftlock-api` crate; and it
/// failed on the root's optional `raftlock-client` dependency and on
/// `src/cli` while the command line was a feature of the library.
#[test]
fn no_server_crate_depends_on_a_client_crate() {
    let clients = client_packages();
    let libs: Vec<String> = clients.iter().map(|c| c.replace('-', "_")).collect();
    let mut upward = Vec::new();
    for dir in LOWER_CRATES {
        let crate_dir = if *dir == "." {
            repo()
        } else {
            repo().join(dir)
        };
        let manifest_path = crate_dir.join("Cargo.toml");
        let manifest = std::fs::read_to_string(&manifest_path).expect("manifest");
        for line in upward_dependencies(&manifest, &clients) {
            upward.push(format!("{}: {line}", manifest_path.display()));
        }
        let src = if *dir == "." {
            "src".into()
        } else {
            format!("{dir}/src")
        };
        let mut files = vec![crate_dir.join("build.rs")];
        rust_files(&repo().join(&src), true, &mut files);
        for file in files {
            let rel = file.strip_prefix(repo()).unwrap_or(&file).to_string_lossy();
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let code = code_of(&text);
            for lib in libs.iter().filter(|lib| names_crate(&code, lib)) {
                upward.push(format!("{rel} uses {lib}"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "the server reaches up to a client crate (share raftlock-api instead): {upward:#?}"
    );
}

/// The check itself: an upward dependency or import is found, optional or
/// not; the API crate and a dev-dependency are not.
#[test]
fn the_arrow_check_finds_an_upward_arrow() {
    let clients = vec!["raftlock-client".to_string()];
    let manifest = "[dependencies]\nraftlock-api = { path = \"proto\" }\n\
                    raftlock-client = { path = \"clients/rust\", optional = true }\n\
                    [dev-dependencies]\nraftlock-client = { path = \"clients/rust\" }\n";
    assert_eq!(upward_dependencies(manifest, &clients).len(), 1);
    let dev_only = "[dev-dependencies]\nraftlock-client = { path = \"clients/rust\" }\n";
    assert!(upward_dependencies(dev_only, &clients).is_empty());
    let plain = "[build-dependencies]\nraftlock-client = { path = \"../clients/rust\" }\n";
    assert_eq!(upward_dependencies(plain, &clients).len(), 1);
    assert!(names_crate(
        "use raftlock_client::Client;",
        "raftlock_client"
    ));
    assert!(names_crate(
        "pub use raftlock_client as client;",
        "raftlock_client"
    ));
    assert!(!names_crate(
        "use my_raftlock_client_shim::X;",
        "raftlock_client"
    ));
    assert!(!names_crate(
        "use crate::raftlock_client_like;",
        "raftlock_client"
    ));
}

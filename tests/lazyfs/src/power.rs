//! Durability: `fsync` and `fsyncdir` copy the current view of one inode into
//! its durable copy; `cut_power` throws every current view away.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;

use fuser::Errno;

use crate::inode::{Body, Ino, ROOT};
use crate::state::{FsResult, FsState};

impl FsState {
    /// `fsync` / `fdatasync` of file `ino` through handle `fh`: its data,
    /// size and metadata become durable. Its name does not: that takes an
    /// `fsyncdir` of the directory holding it.
    pub(crate) fn fsync(&mut self, ino: Ino, fh: u64) -> FsResult<()> {
        self.stats.fsync_calls += 1;
        self.check_handle(fh, ino)?;
        let inode = self.inode_mut(ino)?;
        if let Some(file) = inode.file_mut() {
            file.sync();
        }
        inode.durable_meta = inode.meta;
        Ok(())
    }

    /// `fsyncdir` of directory `ino`: its entry list and metadata become durable.
    pub(crate) fn fsync_dir(&mut self, ino: Ino) -> FsResult<()> {
        self.stats.fsyncdir_calls += 1;
        let inode = self.inode_mut(ino)?;
        inode.durable_meta = inode.meta;
        let dir = inode.dir_mut().ok_or(Errno::ENOTDIR)?;
        let synced = dir.entries.clone();
        let old = std::mem::replace(&mut dir.durable, synced.clone());
        // Count the new names before dropping the old ones, so an inode named
        // in both never looks unreachable in between.
        for child in synced.values() {
            self.inode_mut(*child)?.durable_refs += 1;
        }
        for child in old.into_values() {
            if let Some(inode) = self.inodes.get_mut(&child) {
                inode.durable_refs -= 1;
            }
            self.free_if_garbage(child);
        }
        Ok(())
    }

    /// Drops every change not covered by an fsync: file data, sizes and
    /// metadata revert to their durable copies, directories to their durable
    /// entry lists, and inodes the durable tree no longer reaches vanish. Every
    /// open handle becomes stale (`EIO`). The power comes back: an armed cut
    /// point is dropped, a fired one no longer holds changes. Returns the
    /// bytes of data dropped.
    pub(crate) fn cut_power(&mut self) -> u64 {
        self.aim.armed = None;
        self.aim.frozen = false;
        let mut dropped = 0;
        for inode in self.inodes.values_mut() {
            inode.meta = inode.durable_meta;
            inode.open_handles = 0;
            match &mut inode.body {
                Body::File(file) => dropped += file.revert(),
                Body::Dir(dir) => dir.entries = dir.durable.clone(),
                Body::Symlink(_) => {}
            }
        }
        self.handles.clear();
        let (links, parents) = self.walk_durable_tree();
        self.inodes.retain(|ino, inode| {
            let Some(&count) = links.get(ino) else {
                if let Body::File(file) = &inode.body {
                    dropped += file.durable_size();
                }
                return false;
            };
            inode.links = count;
            inode.durable_refs = count;
            if let (Some(dir), Some(&parent)) = (inode.dir_mut(), parents.get(ino)) {
                dir.parent = parent;
            }
            true
        });
        self.used_pages = self
            .inodes
            .values()
            .filter_map(|inode| inode.file())
            .map(|file| file.allocated_pages())
            .sum();
        self.stats.cuts += 1;
        self.stats.last_cut_dropped_bytes = dropped;
        dropped
    }

    /// Walks the entries from the root (breadth first, names in order) and
    /// returns how many names reach each inode and each directory's parent.
    ///
    /// Durable entry lists are synced one directory at a time, so after a
    /// cross-directory rename a directory can be durable in two parents (or in
    /// a cycle). Like fsck, the walk keeps the first name it meets and removes
    /// the others; files may keep several names (they become hard links).
    fn walk_durable_tree(&mut self) -> (HashMap<Ino, u32>, HashMap<Ino, Ino>) {
        let mut links = HashMap::from([(ROOT, 1)]);
        let mut parents = HashMap::from([(ROOT, ROOT)]);
        let mut queue = VecDeque::from([ROOT]);
        while let Some(dir_ino) = queue.pop_front() {
            let entries: Vec<(OsString, Ino)> = match self.dir(dir_ino) {
                Ok(dir) => dir.entries.iter().map(|(n, &i)| (n.clone(), i)).collect(),
                Err(_) => continue,
            };
            let mut removed = Vec::new();
            for (name, child) in entries {
                let is_dir = match self.inodes.get(&child) {
                    Some(inode) => inode.dir().is_some(),
                    None => {
                        removed.push(name); // cannot happen: durable names keep inodes alive
                        continue;
                    }
                };
                if is_dir && links.contains_key(&child) {
                    removed.push(name);
                    continue;
                }
                *links.entry(child).or_insert(0) += 1;
                if is_dir {
                    parents.insert(child, dir_ino);
                    queue.push_back(child);
                }
            }
            if let Ok(dir) = self.dir_mut(dir_ino) {
                for name in removed {
                    dir.entries.remove(&name);
                    dir.durable.remove(&name);
                }
            }
        }
        (links, parents)
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use fuser::RenameFlags;

    use super::*;
    use crate::namespace::{Creator, NewNode};

    const ME: Creator = Creator {
        perm: 0o644,
        uid: 0,
        gid: 0,
    };

    fn create(state: &mut FsState, parent: Ino, name: &str, node: NewNode) -> Ino {
        state
            .create_node(parent, OsStr::new(name), node, ME)
            .expect("create")
    }

    fn rename(state: &mut FsState, from: (Ino, &str), to: (Ino, &str)) {
        let (parent, name) = from;
        let (new_parent, new_name) = to;
        state
            .rename(
                parent,
                OsStr::new(name),
                new_parent,
                OsStr::new(new_name),
                RenameFlags::empty(),
            )
            .expect("rename");
    }

    #[test]
    fn file_data_needs_fsync_and_its_name_needs_fsyncdir() {
        let mut state = FsState::new(0o755, 0, 0);
        let f = create(&mut state, ROOT, "f", NewNode::File);
        let fh = state.open(f).expect("open");
        state.write(f, fh, 0, b"synced").expect("write");
        state.fsync(f, fh).expect("fsync");
        state.cut_power();
        assert!(state.inode(f).is_err(), "name was never synced");

        let g = create(&mut state, ROOT, "g", NewNode::File);
        state.fsync_dir(ROOT).expect("fsyncdir");
        let fh = state.open(g).expect("open");
        state.write(g, fh, 0, b"synced").expect("write");
        state.fsync(g, fh).expect("fsync");
        state.write(g, fh, 6, b" and lost").expect("write");
        assert_eq!(
            state.cut_power(),
            9 + 6,
            "the dirty page, clipped to the size"
        );
        assert_eq!(state.attr(g).expect("g").size, 6);
        assert_eq!(state.read(g, fh, 0, 100), Err(Errno::EIO), "stale handle");
    }

    #[test]
    fn unsynced_rename_and_unlink_revert() {
        let mut state = FsState::new(0o755, 0, 0);
        let a = create(&mut state, ROOT, "a", NewNode::File);
        let b = create(&mut state, ROOT, "b", NewNode::File);
        state.fsync_dir(ROOT).expect("fsyncdir");
        rename(&mut state, (ROOT, "a"), (ROOT, "c"));
        state.unlink(ROOT, OsStr::new("b")).expect("unlink");
        assert!(state.inode(b).is_ok(), "a durable name keeps b alive");
        state.cut_power();
        assert_eq!(state.child(ROOT, OsStr::new("a")), Ok(a));
        assert_eq!(state.child(ROOT, OsStr::new("b")), Ok(b));
        assert_eq!(state.child(ROOT, OsStr::new("c")), Err(Errno::ENOENT));
    }

    #[test]
    fn fsyncdir_of_an_unlink_frees_the_file() {
        let mut state = FsState::new(0o755, 0, 0);
        let a = create(&mut state, ROOT, "a", NewNode::File);
        state.fsync_dir(ROOT).expect("fsyncdir");
        state.unlink(ROOT, OsStr::new("a")).expect("unlink");
        state.fsync_dir(ROOT).expect("fsyncdir");
        assert!(state.inode(a).is_err());
    }

    #[test]
    fn cross_directory_rename_needs_both_directories_synced() {
        let mut state = FsState::new(0o755, 0, 0);
        let d = create(&mut state, ROOT, "d", NewNode::Dir);
        let e = create(&mut state, ROOT, "e", NewNode::Dir);
        let f = create(&mut state, d, "f", NewNode::File);
        for dir in [ROOT, d, e] {
            state.fsync_dir(dir).expect("fsyncdir");
        }
        rename(&mut state, (d, "f"), (e, "f"));
        state.fsync_dir(e).expect("fsyncdir e");
        state.cut_power();
        assert_eq!(state.child(d, OsStr::new("f")), Ok(f));
        assert_eq!(state.child(e, OsStr::new("f")), Ok(f));
        assert_eq!(state.attr(f).expect("f").nlink, 2, "now two hard links");
    }

    #[test]
    fn a_directory_durable_in_two_parents_keeps_the_first() {
        let mut state = FsState::new(0o755, 0, 0);
        let a = create(&mut state, ROOT, "a", NewNode::Dir);
        let b = create(&mut state, ROOT, "b", NewNode::Dir);
        let x = create(&mut state, b, "x", NewNode::Dir);
        for dir in [ROOT, a, b] {
            state.fsync_dir(dir).expect("fsyncdir");
        }
        rename(&mut state, (b, "x"), (a, "x"));
        state.fsync_dir(a).expect("fsyncdir a");
        state.cut_power();
        assert_eq!(state.child(a, OsStr::new("x")), Ok(x));
        assert_eq!(state.child(b, OsStr::new("x")), Err(Errno::ENOENT));
        assert_eq!(state.dir(x).expect("x").parent, a);
        assert_eq!(state.attr(x).expect("x").nlink, 2);
    }

    #[test]
    fn a_durable_directory_cycle_is_broken_by_the_walk() {
        let mut state = FsState::new(0o755, 0, 0);
        let a = create(&mut state, ROOT, "a", NewNode::Dir);
        let b = create(&mut state, a, "b", NewNode::Dir);
        state.fsync_dir(ROOT).expect("fsyncdir root");
        state.fsync_dir(a).expect("fsyncdir a");
        rename(&mut state, (a, "b"), (ROOT, "b"));
        rename(&mut state, (ROOT, "a"), (b, "a"));
        state.fsync_dir(b).expect("fsyncdir b");
        // Durable now: the root holds a, a holds b, b holds a.
        state.cut_power();
        assert_eq!(state.child(ROOT, OsStr::new("a")), Ok(a));
        assert_eq!(state.child(a, OsStr::new("b")), Ok(b));
        assert_eq!(state.child(b, OsStr::new("a")), Err(Errno::ENOENT));
        assert_eq!(state.dir(b).expect("b").parent, a);
    }
}

//! The whole filesystem model: the inode table, open handles and counters,
//! with the lookups every operation shares. Operations live in `namespace`,
//! `file_io` and `power`; none of them does IO.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::SystemTime;

use fuser::{Errno, FileAttr, FileType, INodeNo};

use crate::cut_point::{Aim, Op};
use crate::inode::{Body, Directory, Ino, Inode, Meta, ROOT};
use crate::limits::{CAPACITY_PAGES, PAGE_SIZE};
use crate::stats::Stats;

/// Result of one filesystem operation: the errno is what the caller's syscall returns.
pub(crate) type FsResult<T> = Result<T, Errno>;

/// The filesystem model behind one mount, guarded by one mutex: every
/// operation is a short in-memory step, so a single lock is simple and fast enough.
#[derive(Debug)]
pub(crate) struct FsState {
    /// Every live inode, including unlinked ones a cut could bring back.
    pub(crate) inodes: HashMap<Ino, Inode>,
    /// Next inode number; never reused.
    next_ino: Ino,
    /// Open file handles (FUSE `fh`) and the inode each one opened.
    pub(crate) handles: HashMap<u64, Ino>,
    /// Next file handle; never reused, so a handle from before a cut is
    /// recognisably stale.
    next_fh: u64,
    /// Pages allocated in the current view of all files, against [`CAPACITY_PAGES`].
    pub(crate) used_pages: u64,
    /// Counters for [`LazyFs::stats`](crate::LazyFs::stats).
    pub(crate) stats: Stats,
    /// The cut point armed, fired, and whether the power is off.
    pub(crate) aim: Aim,
}

impl FsState {
    /// An empty filesystem whose root has the given owner and permissions.
    pub(crate) fn new(perm: u32, uid: u32, gid: u32) -> FsState {
        let mut root = Inode::new(
            Body::Dir(Directory {
                parent: ROOT,
                ..Directory::default()
            }),
            Meta::new(perm, uid, gid),
        );
        // The root is always reachable, in both views.
        root.links = 1;
        root.durable_refs = 1;
        FsState {
            inodes: HashMap::from([(ROOT, root)]),
            next_ino: ROOT + 1,
            handles: HashMap::new(),
            next_fh: 1,
            used_pages: 0,
            stats: Stats::default(),
            aim: Aim::default(),
        }
    }

    /// The inode `ino`, or `ENOENT` (it never existed, or a cut or unlink freed it).
    pub(crate) fn inode(&self, ino: Ino) -> FsResult<&Inode> {
        self.inodes.get(&ino).ok_or(Errno::ENOENT)
    }

    /// The inode `ino`, or `ENOENT`.
    pub(crate) fn inode_mut(&mut self, ino: Ino) -> FsResult<&mut Inode> {
        self.inodes.get_mut(&ino).ok_or(Errno::ENOENT)
    }

    /// The directory `ino`, or `ENOENT` / `ENOTDIR`.
    pub(crate) fn dir(&self, ino: Ino) -> FsResult<&Directory> {
        self.inode(ino)?.dir().ok_or(Errno::ENOTDIR)
    }

    /// The directory `ino`, or `ENOENT` / `ENOTDIR`.
    pub(crate) fn dir_mut(&mut self, ino: Ino) -> FsResult<&mut Directory> {
        self.inode_mut(ino)?.dir_mut().ok_or(Errno::ENOTDIR)
    }

    /// The inode `name` in directory `parent` names, or `ENOENT`.
    pub(crate) fn child(&self, parent: Ino, name: &OsStr) -> FsResult<Ino> {
        self.dir(parent)?
            .entries
            .get(name)
            .copied()
            .ok_or(Errno::ENOENT)
    }

    /// `lookup`: the attributes of `name` in `parent`.
    pub(crate) fn lookup(&self, parent: Ino, name: &OsStr) -> FsResult<FileAttr> {
        self.attr(self.child(parent, name)?)
    }

    /// `getattr`: the attributes of the current view of `ino`.
    pub(crate) fn attr(&self, ino: Ino) -> FsResult<FileAttr> {
        let inode = self.inode(ino)?;
        let (size, blocks, nlink) = match &inode.body {
            Body::File(file) => (
                file.size(),
                file.allocated_pages() * (PAGE_SIZE / 512),
                inode.links,
            ),
            Body::Dir(dir) => {
                let subdirs = dir
                    .entries
                    .values()
                    .filter(|child| self.inodes.get(child).is_some_and(|c| c.dir().is_some()))
                    .count() as u32;
                let nlink = if inode.links == 0 { 0 } else { 2 + subdirs };
                (PAGE_SIZE, PAGE_SIZE / 512, nlink)
            }
            Body::Symlink(target) => (target.as_os_str().len() as u64, 0, inode.links),
        };
        let meta = &inode.meta;
        Ok(FileAttr {
            ino: INodeNo(ino),
            size,
            blocks,
            atime: meta.atime,
            mtime: meta.mtime,
            ctime: meta.ctime,
            crtime: meta.ctime,
            kind: inode.kind(),
            perm: meta.perm,
            nlink,
            uid: meta.uid,
            gid: meta.gid,
            rdev: 0,
            blksize: PAGE_SIZE as u32,
            flags: 0,
        })
    }

    /// Adds an unlinked inode and returns its number.
    pub(crate) fn allocate(&mut self, inode: Inode) -> Ino {
        let ino = self.next_ino;
        self.next_ino += 1;
        self.inodes.insert(ino, inode);
        ino
    }

    /// Frees `ino` if nothing can reach it any more, and then whatever only it
    /// kept alive (the durable children of a removed directory).
    pub(crate) fn free_if_garbage(&mut self, ino: Ino) {
        let mut pending = vec![ino];
        while let Some(ino) = pending.pop() {
            if ino == ROOT || !self.inodes.get(&ino).is_some_and(Inode::is_garbage) {
                continue;
            }
            let Some(inode) = self.inodes.remove(&ino) else {
                continue;
            };
            match inode.body {
                Body::File(file) => self.used_pages -= file.allocated_pages(),
                Body::Dir(dir) => {
                    for child in dir.durable.into_values() {
                        if let Some(child_inode) = self.inodes.get_mut(&child) {
                            child_inode.durable_refs -= 1;
                            pending.push(child);
                        }
                    }
                }
                Body::Symlink(_) => {}
            }
        }
    }

    /// `open` / `create`: a new handle on `ino`.
    pub(crate) fn open(&mut self, ino: Ino) -> FsResult<u64> {
        self.inode_mut(ino)?.open_handles += 1;
        let fh = self.next_fh;
        self.next_fh += 1;
        self.handles.insert(fh, ino);
        Ok(fh)
    }

    /// `release`: closes a handle; an unknown one (from before a cut) is ignored.
    pub(crate) fn release(&mut self, fh: u64) {
        let Some(ino) = self.handles.remove(&fh) else {
            return;
        };
        if let Some(inode) = self.inodes.get_mut(&ino) {
            inode.open_handles -= 1;
        }
        self.free_if_garbage(ino);
    }

    /// Checks that `fh` is an open handle on `ino`: `EIO` for handles that
    /// were open when the power was cut (or were never opened).
    pub(crate) fn check_handle(&self, fh: u64, ino: Ino) -> FsResult<()> {
        match self.handles.get(&fh) {
            Some(&open) if open == ino => Ok(()),
            Some(_) | None => Err(Errno::EIO),
        }
    }

    /// `statfs`: (total blocks, free blocks, inodes in use), blocks of [`PAGE_SIZE`].
    pub(crate) fn usage(&self) -> (u64, u64, u64) {
        let free = CAPACITY_PAGES.saturating_sub(self.used_pages);
        (CAPACITY_PAGES, free, self.inodes.len() as u64)
    }

    /// `access`: whether a caller may access `ino` with `mask` (`R_OK` = 4,
    /// `W_OK` = 2, `X_OK` = 1; 0 tests existence), checked like the kernel
    /// does against the permission bits. Root may read and write anything and
    /// execute anything that has an execute bit (or is a directory).
    pub(crate) fn access(&self, ino: Ino, mask: u32, uid: u32, gid: u32) -> FsResult<()> {
        let inode = self.inode(ino)?;
        let mask = mask & 0o7;
        let perm = u32::from(inode.meta.perm);
        let granted = if uid == 0 {
            let exec = inode.kind() == FileType::Directory || perm & 0o111 != 0;
            0o6 | if exec { 0o1 } else { 0 }
        } else if uid == inode.meta.uid {
            (perm >> 6) & 0o7
        } else if gid == inode.meta.gid {
            (perm >> 3) & 0o7
        } else {
            perm & 0o7
        };
        if mask & !granted == 0 {
            Ok(())
        } else {
            Err(Errno::EACCES)
        }
    }

    /// A counter snapshot.
    pub(crate) fn stats(&self) -> Stats {
        self.stats
    }

    /// Records a change of directory `ino`'s entries now.
    pub(crate) fn touch_dir(&mut self, ino: Ino) {
        if let Some(inode) = self.inodes.get_mut(&ino) {
            inode.meta.touch_content();
        }
    }
}

/// `SystemTime` for a FUSE time-or-now argument.
pub(crate) fn resolve_time(time: fuser::TimeOrNow) -> SystemTime {
    match time {
        fuser::TimeOrNow::SpecificTime(time) => time,
        fuser::TimeOrNow::Now => SystemTime::now(),
    }
}

/// Paths, for the cut point: the armed point matches on them.
impl FsState {
    /// The path of `name` in directory `parent`, if the armed point names
    /// `op` (working it out costs a walk up the tree).
    pub(crate) fn entry_path(&self, op: Op, parent: Ino, name: &OsStr) -> Option<PathBuf> {
        if !self.aim.wants(op) {
            return None;
        }
        Some(self.dir_path(parent)?.join(name))
    }

    /// The path of file or directory `ino`, if the armed point names `op`:
    /// the first name found for it (a scan of every directory for a file).
    pub(crate) fn inode_path(&self, op: Op, ino: Ino) -> Option<PathBuf> {
        if !self.aim.wants(op) {
            return None;
        }
        if self.inode(ino).ok()?.dir().is_some() {
            return self.dir_path(ino);
        }
        let (parent, name) = self.inodes.iter().find_map(|(&dir_ino, inode)| {
            let dir = inode.dir()?;
            let name = dir.entries.iter().find(|(_, &i)| i == ino)?.0;
            Some((dir_ino, name))
        })?;
        Some(self.dir_path(parent)?.join(name))
    }

    /// The path of directory `ino`, walking up its parents.
    fn dir_path(&self, mut ino: Ino) -> Option<PathBuf> {
        let mut names = Vec::new();
        while ino != ROOT {
            let parent = self.dir(ino).ok()?.parent;
            let entries = &self.dir(parent).ok()?.entries;
            names.push(entries.iter().find(|(_, &i)| i == ino)?.0.clone());
            ino = parent;
        }
        Some(
            std::iter::once(OsStr::new("/"))
                .chain(names.iter().rev().map(|n| n.as_os_str()))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_exists_and_is_a_directory() {
        let state = FsState::new(0o755, 0, 0);
        let attr = state.attr(ROOT).expect("root");
        assert_eq!(attr.kind, FileType::Directory);
        assert_eq!(attr.nlink, 2);
        assert_eq!(attr.perm, 0o755);
    }

    #[test]
    fn access_follows_the_permission_bits() {
        let state = FsState::new(0o750, 1000, 100);
        assert_eq!(state.access(ROOT, 7, 1000, 1), Ok(()));
        assert_eq!(state.access(ROOT, 5, 2000, 100), Ok(()));
        assert_eq!(state.access(ROOT, 2, 2000, 100), Err(Errno::EACCES));
        assert_eq!(state.access(ROOT, 4, 2000, 200), Err(Errno::EACCES));
        assert_eq!(state.access(ROOT, 0, 2000, 200), Ok(()));
        assert_eq!(state.access(ROOT, 7, 0, 0), Ok(()));
    }

    #[test]
    fn handles_are_checked_against_their_inode() {
        let mut state = FsState::new(0o755, 0, 0);
        let fh = state.open(ROOT).expect("open root");
        assert_eq!(state.check_handle(fh, ROOT), Ok(()));
        assert_eq!(state.check_handle(fh, 2), Err(Errno::EIO));
        state.release(fh);
        assert_eq!(state.check_handle(fh, ROOT), Err(Errno::EIO));
        assert!(state.inode(ROOT).is_ok(), "root is never freed");
    }
}

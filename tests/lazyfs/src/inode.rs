//! One inode: what kind of node it is, its metadata, and the durable copies of
//! both that a power cut reverts to.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::SystemTime;

use fuser::FileType;

use crate::file_data::FileData;

/// An inode number. Never reused within one mount, so the kernel can never
/// mistake a new inode for one it cached before a cut.
pub(crate) type Ino = u64;

/// The root directory's inode number (fixed by FUSE).
pub(crate) const ROOT: Ino = 1;

/// Ownership, permissions and times: what `stat` shows besides size and links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Meta {
    /// Permission bits (`0o7777` mask), without the file type.
    pub(crate) perm: u16,
    /// Owner.
    pub(crate) uid: u32,
    /// Group.
    pub(crate) gid: u32,
    /// Last access (set only by `utimes`; reads do not update it).
    pub(crate) atime: SystemTime,
    /// Last data change.
    pub(crate) mtime: SystemTime,
    /// Last inode change.
    pub(crate) ctime: SystemTime,
}

impl Meta {
    /// Metadata of a node created now.
    pub(crate) fn new(perm: u32, uid: u32, gid: u32) -> Meta {
        let now = SystemTime::now();
        Meta {
            perm: (perm & 0o7777) as u16,
            uid,
            gid,
            atime: now,
            mtime: now,
            ctime: now,
        }
    }

    /// Records a change of the node's content (data or entries) now.
    pub(crate) fn touch_content(&mut self) {
        let now = SystemTime::now();
        self.mtime = now;
        self.ctime = now;
    }
}

/// A directory's entries in both views.
#[derive(Debug, Default)]
pub(crate) struct Directory {
    /// Entries as the running system sees them.
    pub(crate) entries: BTreeMap<OsString, Ino>,
    /// Entries as of the last `fsyncdir` of this directory: what a cut restores.
    pub(crate) durable: BTreeMap<OsString, Ino>,
    /// The directory holding this one in the current view (for `..` and for
    /// refusing to move a directory into itself). The root is its own parent.
    pub(crate) parent: Ino,
}

/// What kind of node an inode is, with the kind's content.
#[derive(Debug)]
pub(crate) enum Body {
    /// A regular file.
    File(FileData),
    /// A directory.
    Dir(Directory),
    /// A symbolic link; its target never changes, so it needs no durable copy.
    Symlink(PathBuf),
}

/// One node of the filesystem.
#[derive(Debug)]
pub(crate) struct Inode {
    /// Kind and content.
    pub(crate) body: Body,
    /// Metadata in the current view.
    pub(crate) meta: Meta,
    /// Metadata as of the last fsync of this inode (fsyncdir for directories).
    pub(crate) durable_meta: Meta,
    /// Names for this inode in current directory entries. With no links, no
    /// durable names and no open handles, nothing can reach it: it is freed.
    pub(crate) links: u32,
    /// Names for this inode in durable directory entries: a cut could bring it
    /// back, so it is kept even when unlinked.
    pub(crate) durable_refs: u32,
    /// Open file handles; an unlinked file stays readable through them.
    pub(crate) open_handles: u32,
}

impl Inode {
    /// A new, unlinked inode whose durable metadata is its initial metadata.
    pub(crate) fn new(body: Body, meta: Meta) -> Inode {
        Inode {
            body,
            meta,
            durable_meta: meta,
            links: 0,
            durable_refs: 0,
            open_handles: 0,
        }
    }

    /// The kind as FUSE reports it.
    pub(crate) fn kind(&self) -> FileType {
        match self.body {
            Body::File(_) => FileType::RegularFile,
            Body::Dir(_) => FileType::Directory,
            Body::Symlink(_) => FileType::Symlink,
        }
    }

    /// Whether nothing can reach this inode any more.
    pub(crate) fn is_garbage(&self) -> bool {
        self.links == 0 && self.durable_refs == 0 && self.open_handles == 0
    }

    /// The directory content, if this is a directory.
    pub(crate) fn dir(&self) -> Option<&Directory> {
        match &self.body {
            Body::Dir(dir) => Some(dir),
            Body::File(_) | Body::Symlink(_) => None,
        }
    }

    /// The directory content, if this is a directory.
    pub(crate) fn dir_mut(&mut self) -> Option<&mut Directory> {
        match &mut self.body {
            Body::Dir(dir) => Some(dir),
            Body::File(_) | Body::Symlink(_) => None,
        }
    }

    /// The file data, if this is a regular file.
    pub(crate) fn file(&self) -> Option<&FileData> {
        match &self.body {
            Body::File(file) => Some(file),
            Body::Dir(_) | Body::Symlink(_) => None,
        }
    }

    /// The file data, if this is a regular file.
    pub(crate) fn file_mut(&mut self) -> Option<&mut FileData> {
        match &mut self.body {
            Body::File(file) => Some(file),
            Body::Dir(_) | Body::Symlink(_) => None,
        }
    }
}

//! The FUSE face of the model: turns each kernel request into one `FsState`
//! call under the lock and the result into a reply, and keeps the kernel from
//! caching anything a power cut could make stale.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use fuser::{
    AccessFlags, Errno, FileAttr, FileHandle, Filesystem, FopenFlags, Generation, INodeNo,
    LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

use crate::cut_point::{self, Gate, Op};
use crate::file_io::AttrChanges;
use crate::limits::{MAX_NAME_LEN, PAGE_SIZE};
use crate::namespace::{Creator, NewNode};
use crate::state::{FsResult, FsState};

/// How long the kernel may cache a name or attributes: not at all, so that
/// after a cut every path walk and `stat` asks the model again.
const TTL: Duration = Duration::ZERO;

/// Inode numbers are never reused, so one generation is enough.
const GENERATION: Generation = Generation(0);

/// Every file is opened with direct IO: no kernel page cache, so reads always
/// see the model (also right after a cut) and every `write` reaches the model
/// in the order it was made.
const OPEN_FLAGS: FopenFlags = FopenFlags::FOPEN_DIRECT_IO;

/// File type bits of a `mode` (`S_IFMT`) and the regular-file type (`S_IFREG`).
const S_IFMT: u32 = 0o170_000;
const S_IFREG: u32 = 0o100_000;

/// Free inodes reported by `statfs`: there is no inode table to run out of.
const FREE_INODES: u64 = 1 << 20;

/// The model as a FUSE filesystem; clones of the `Arc` are held by the
/// [`LazyFs`](crate::LazyFs) handle (to cut the power) and the FUSE threads.
#[derive(Debug)]
pub(crate) struct LazyFilesystem {
    /// The model, one lock for all of it.
    state: Arc<Mutex<FsState>>,
}

impl LazyFilesystem {
    /// Serves `state`.
    pub(crate) fn new(state: Arc<Mutex<FsState>>) -> LazyFilesystem {
        LazyFilesystem { state }
    }

    /// The locked model. A panic in another FUSE thread poisons the lock; the
    /// mount keeps serving rather than failing every later request.
    fn state(&self) -> MutexGuard<'_, FsState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs operation `op`, which changes the model, through the cut point
    /// (see `cut_point`): applied as usual, or, once the power is off, not
    /// at all (or this once, if the cut comes right after it) with the
    /// caller held until it is being killed and then answered `EIO`.
    /// `path` works out the operation's path when the armed point needs it.
    fn change<T>(
        &self,
        req: &Request,
        op: Op,
        path: impl FnOnce(&FsState) -> Option<PathBuf>,
        apply: impl FnOnce(&mut FsState) -> FsResult<T>,
    ) -> FsResult<T> {
        let mut state = self.state();
        let path = path(&state);
        match state.aim.gate(op, path, req.pid()) {
            Gate::Pass => return apply(&mut state),
            Gate::Off => {}
            Gate::ApplyThenOff => {
                // Its outcome is never answered: the caller is about to die.
                let _ = apply(&mut state);
            }
        }
        drop(state);
        cut_point::hold(req.pid(), || self.state().aim.frozen);
        Err(Errno::EIO)
    }

    /// Creates `name` in `parent` and replies with its entry.
    fn create_entry(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        node: NewNode,
        perm: u32,
        reply: ReplyEntry,
    ) {
        let creator = Creator {
            perm,
            uid: req.uid(),
            gid: req.gid(),
        };
        let op = match node {
            NewNode::Dir => Op::Mkdir,
            NewNode::File | NewNode::Symlink(_) => Op::Create,
        };
        let result = self.change(
            req,
            op,
            |s| s.entry_path(op, parent.0, name),
            |state| {
                let ino = state.create_node(parent.0, name, node, creator)?;
                state.attr(ino)
            },
        );
        reply_entry(reply, result);
    }
}

/// Replies with an entry or an errno.
fn reply_entry(reply: ReplyEntry, result: FsResult<FileAttr>) {
    match result {
        Ok(attr) => reply.entry(&TTL, &attr, GENERATION),
        Err(errno) => reply.error(errno),
    }
}

/// Replies with attributes or an errno.
fn reply_attr(reply: ReplyAttr, result: FsResult<FileAttr>) {
    match result {
        Ok(attr) => reply.attr(&TTL, &attr),
        Err(errno) => reply.error(errno),
    }
}

/// Replies with success or an errno.
fn reply_empty(reply: ReplyEmpty, result: FsResult<()>) {
    match result {
        Ok(()) => reply.ok(),
        Err(errno) => reply.error(errno),
    }
}

impl Filesystem for LazyFilesystem {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        reply_entry(reply, self.state().lookup(parent.0, name));
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        reply_attr(reply, self.state().attr(ino.0));
    }

    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let changes = AttrChanges {
            mode,
            uid,
            gid,
            size,
            atime,
            mtime,
            ctime,
        };
        let result = self.change(req, Op::Write, |_| None, |s| s.set_attr(ino.0, changes));
        reply_attr(reply, result);
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self.state().read_link(ino.0) {
            Ok(target) => reply.data(target.as_os_str().as_encoded_bytes()),
            Err(errno) => reply.error(errno),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        if mode & S_IFMT != S_IFREG && mode & S_IFMT != 0 {
            return reply.error(Errno::EPERM); // only regular files, no devices, fifos or sockets
        }
        self.create_entry(req, parent, name, NewNode::File, mode & !umask, reply);
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        self.create_entry(req, parent, name, NewNode::Dir, mode & !umask, reply);
    }

    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let result = self.change(
            req,
            Op::Remove,
            |s| s.entry_path(Op::Remove, parent.0, name),
            |s| s.unlink(parent.0, name),
        );
        reply_empty(reply, result);
    }

    fn rmdir(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let result = self.change(
            req,
            Op::Remove,
            |s| s.entry_path(Op::Remove, parent.0, name),
            |s| s.rmdir(parent.0, name),
        );
        reply_empty(reply, result);
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let node = NewNode::Symlink(target.to_path_buf());
        self.create_entry(req, parent, link_name, node, 0o777, reply);
    }

    fn rename(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let result = self.change(
            req,
            Op::Rename,
            |s| s.entry_path(Op::Rename, parent.0, name),
            |s| s.rename(parent.0, name, newparent.0, newname, flags),
        );
        reply_empty(reply, result);
    }

    fn link(
        &self,
        req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let result = self.change(
            req,
            Op::Create,
            |_| None,
            |state| {
                state.link(ino.0, newparent.0, newname)?;
                state.attr(ino.0)
            },
        );
        reply_entry(reply, result);
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.state().open(ino.0) {
            Ok(fh) => reply.opened(FileHandle(fh), OPEN_FLAGS),
            Err(errno) => reply.error(errno),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.state().read(ino.0, fh.0, offset, size) {
            Ok(bytes) => reply.data(&bytes),
            Err(errno) => reply.error(errno),
        }
    }

    fn write(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let result = self.change(
            req,
            Op::Write,
            |s| s.inode_path(Op::Write, ino.0),
            |s| s.write(ino.0, fh.0, offset, data),
        );
        match result {
            Ok(written) => reply.written(written),
            Err(errno) => reply.error(errno),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok(); // close(2) makes nothing durable
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.state().release(fh.0);
        reply.ok();
    }

    fn fsync(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let result = self.change(
            req,
            Op::Fsync,
            |s| s.inode_path(Op::Fsync, ino.0),
            |s| s.fsync(ino.0, fh.0),
        );
        reply_empty(reply, result);
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let entries = match self.state().read_dir(ino.0) {
            Ok(entries) => entries,
            Err(errno) => return reply.error(errno),
        };
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        for (index, (child, kind, name)) in entries.into_iter().enumerate().skip(start) {
            if reply.add(INodeNo(child), index as u64 + 1, kind, &name) {
                break; // the kernel's buffer is full; it asks again from here
            }
        }
        reply.ok();
    }

    fn fsyncdir(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let result = self.change(
            req,
            Op::FsyncDir,
            |s| s.inode_path(Op::FsyncDir, ino.0),
            |s| s.fsync_dir(ino.0),
        );
        reply_empty(reply, result);
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let (blocks, free, files) = self.state().usage();
        let block = PAGE_SIZE as u32;
        reply.statfs(
            blocks,
            free,
            free,
            files + FREE_INODES,
            FREE_INODES,
            block,
            MAX_NAME_LEN as u32,
            block,
        );
    }

    fn access(&self, req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        let mask = mask.bits().unsigned_abs();
        reply_empty(
            reply,
            self.state().access(ino.0, mask, req.uid(), req.gid()),
        );
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        let creator = Creator {
            perm: mode & !umask,
            uid: req.uid(),
            gid: req.gid(),
        };
        let result = self.change(
            req,
            Op::Create,
            |s| s.entry_path(Op::Create, parent.0, name),
            |state| {
                let ino = state.create_node(parent.0, name, NewNode::File, creator)?;
                Ok((state.open(ino)?, state.attr(ino)?))
            },
        );
        match result {
            Ok((fh, attr)) => reply.created(&TTL, &attr, GENERATION, FileHandle(fh), OPEN_FLAGS),
            Err(errno) => reply.error(errno),
        }
    }

    fn fallocate(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let result = self.change(
            req,
            Op::Write,
            |_| None,
            |s| s.fallocate(ino.0, fh.0, offset, length, mode),
        );
        reply_empty(reply, result);
    }
}

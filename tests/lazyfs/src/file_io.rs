//! File content and attribute changes on the current view: read, write,
//! setattr (truncate, chmod, chown, utimes) and fallocate.

use std::time::SystemTime;

use fuser::{Errno, FileAttr, TimeOrNow};

use crate::inode::Ino;
use crate::limits::{CAPACITY_PAGES, MAX_FILE_SIZE};
use crate::state::{resolve_time, FsResult, FsState};

/// The attribute changes of one `setattr` call; `None` leaves a field alone.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct AttrChanges {
    /// New permission bits (the file type bits are ignored).
    pub(crate) mode: Option<u32>,
    /// New owner.
    pub(crate) uid: Option<u32>,
    /// New group.
    pub(crate) gid: Option<u32>,
    /// New size: truncate or extend with zeros (files only).
    pub(crate) size: Option<u64>,
    /// New access time.
    pub(crate) atime: Option<TimeOrNow>,
    /// New modification time.
    pub(crate) mtime: Option<TimeOrNow>,
    /// New change time.
    pub(crate) ctime: Option<SystemTime>,
}

/// `fallocate` mode bit: allocate without changing the size.
const FALLOC_FL_KEEP_SIZE: i32 = 0x01;

impl FsState {
    /// `read` through handle `fh`: up to `len` bytes at `offset`.
    pub(crate) fn read(&self, ino: Ino, fh: u64, offset: u64, len: u32) -> FsResult<Vec<u8>> {
        self.check_handle(fh, ino)?;
        let file = self.inode(ino)?.file().ok_or(Errno::EISDIR)?;
        Ok(file.read(offset, u64::from(len)))
    }

    /// `write` through handle `fh`: all of `data` at `offset`, or an error.
    pub(crate) fn write(&mut self, ino: Ino, fh: u64, offset: u64, data: &[u8]) -> FsResult<u32> {
        self.check_handle(fh, ino)?;
        let len = u32::try_from(data.len()).map_err(|_| Errno::EINVAL)?;
        let end = offset.checked_add(u64::from(len)).ok_or(Errno::EFBIG)?;
        if end > MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        let used_pages = self.used_pages;
        let inode = self.inode_mut(ino)?;
        let file = inode.file_mut().ok_or(Errno::EISDIR)?;
        let new_pages = file.pages_missing_for(offset, u64::from(len));
        if used_pages + new_pages > CAPACITY_PAGES {
            return Err(Errno::ENOSPC);
        }
        file.write(offset, data);
        inode.meta.touch_content();
        self.used_pages += new_pages;
        self.stats.write_calls += 1;
        Ok(len)
    }

    /// `setattr`: applies `changes` to `ino` and returns the new attributes.
    pub(crate) fn set_attr(&mut self, ino: Ino, changes: AttrChanges) -> FsResult<FileAttr> {
        if let Some(size) = changes.size {
            self.set_size(ino, size)?;
        }
        let inode = self.inode_mut(ino)?;
        let meta = &mut inode.meta;
        if let Some(mode) = changes.mode {
            meta.perm = (mode & 0o7777) as u16;
        }
        if let Some(uid) = changes.uid {
            meta.uid = uid;
        }
        if let Some(gid) = changes.gid {
            meta.gid = gid;
        }
        if let Some(atime) = changes.atime {
            meta.atime = resolve_time(atime);
        }
        if let Some(mtime) = changes.mtime {
            meta.mtime = resolve_time(mtime);
        }
        meta.ctime = changes.ctime.unwrap_or_else(SystemTime::now);
        self.attr(ino)
    }

    /// `fallocate`: mode 0 extends the size to cover the range (as zeros;
    /// pages are allocated lazily), `FALLOC_FL_KEEP_SIZE` does nothing; other
    /// modes (punch hole, collapse, ...) are `EOPNOTSUPP`.
    pub(crate) fn fallocate(
        &mut self,
        ino: Ino,
        fh: u64,
        offset: u64,
        len: u64,
        mode: i32,
    ) -> FsResult<()> {
        self.check_handle(fh, ino)?;
        let end = offset.checked_add(len).ok_or(Errno::EFBIG)?;
        if end > MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        let size = self.inode(ino)?.file().ok_or(Errno::EISDIR)?.size();
        match mode {
            0 if end > size => self.set_size(ino, end),
            0 | FALLOC_FL_KEEP_SIZE => Ok(()),
            _ => Err(Errno::EOPNOTSUPP),
        }
    }

    /// Truncates or extends file `ino` to `size`, keeping the page count current.
    fn set_size(&mut self, ino: Ino, size: u64) -> FsResult<()> {
        if size > MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        let inode = self.inode_mut(ino)?;
        let file = inode.file_mut().ok_or(Errno::EISDIR)?;
        let before = file.allocated_pages();
        file.set_size(size);
        let after = file.allocated_pages();
        inode.meta.touch_content();
        self.used_pages = self.used_pages + after - before;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::*;
    use crate::inode::ROOT;
    use crate::namespace::{Creator, NewNode};

    fn open_file(state: &mut FsState) -> (Ino, u64) {
        let me = Creator {
            perm: 0o644,
            uid: 0,
            gid: 0,
        };
        let ino = state
            .create_node(ROOT, OsStr::new("f"), NewNode::File, me)
            .expect("create");
        (ino, state.open(ino).expect("open"))
    }

    #[test]
    fn write_read_and_truncate_keep_the_page_count() {
        let mut state = FsState::new(0o755, 0, 0);
        let (ino, fh) = open_file(&mut state);
        assert_eq!(state.write(ino, fh, 0, &[1; 10_000]), Ok(10_000));
        assert_eq!(state.used_pages, 3);
        assert_eq!(state.read(ino, fh, 9_990, 100).expect("read"), [1; 10]);
        let changes = AttrChanges {
            size: Some(5),
            ..AttrChanges::default()
        };
        assert_eq!(state.set_attr(ino, changes).expect("truncate").size, 5);
        assert_eq!(state.used_pages, 1);
        assert_eq!(state.stats.write_calls, 1);
    }

    #[test]
    fn writes_past_the_bounds_fail() {
        let mut state = FsState::new(0o755, 0, 0);
        let (ino, fh) = open_file(&mut state);
        assert_eq!(state.write(ino, fh, MAX_FILE_SIZE, b"x"), Err(Errno::EFBIG));
        assert_eq!(state.write(ino, fh, u64::MAX, b"x"), Err(Errno::EFBIG));
        state.used_pages = CAPACITY_PAGES;
        assert_eq!(state.write(ino, fh, 0, b"x"), Err(Errno::ENOSPC));
        assert_eq!(state.write(ino, fh + 1, 0, b"x"), Err(Errno::EIO));
    }

    #[test]
    fn fallocate_extends_unless_told_to_keep_the_size() {
        let mut state = FsState::new(0o755, 0, 0);
        let (ino, fh) = open_file(&mut state);
        state
            .fallocate(ino, fh, 0, 100, FALLOC_FL_KEEP_SIZE)
            .expect("keep size");
        assert_eq!(state.attr(ino).expect("attr").size, 0);
        state.fallocate(ino, fh, 50, 100, 0).expect("extend");
        assert_eq!(state.attr(ino).expect("attr").size, 150);
        assert_eq!(state.fallocate(ino, fh, 0, 1, 0x02), Err(Errno::EOPNOTSUPP));
    }
}

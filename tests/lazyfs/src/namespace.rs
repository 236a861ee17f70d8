//! Directory operations on the current view: create, link, unlink, rmdir,
//! rename, readdir. None of them touches a durable copy; `power` does that.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use fuser::{Errno, FileType, RenameFlags};

use crate::file_data::FileData;
use crate::inode::{Body, Directory, Ino, Inode, Meta, ROOT};
use crate::limits::MAX_NAME_LEN;
use crate::state::{FsResult, FsState};

/// Who creates a node, with which permission bits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Creator {
    /// Permission bits after the umask.
    pub(crate) perm: u32,
    /// Owner of the new node.
    pub(crate) uid: u32,
    /// Group of the new node.
    pub(crate) gid: u32,
}

/// What a new node is.
#[derive(Debug)]
pub(crate) enum NewNode {
    /// An empty regular file.
    File,
    /// An empty directory.
    Dir,
    /// A symbolic link to the given target.
    Symlink(PathBuf),
}

impl FsState {
    /// `create` / `mknod` / `mkdir` / `symlink`: adds `name` to `parent`.
    pub(crate) fn create_node(
        &mut self,
        parent: Ino,
        name: &OsStr,
        node: NewNode,
        creator: Creator,
    ) -> FsResult<Ino> {
        check_name(name)?;
        let dir = self.dir(parent)?;
        if self.inode(parent)?.links == 0 {
            return Err(Errno::ENOENT); // a removed directory takes no new entries
        }
        if dir.entries.contains_key(name) {
            return Err(Errno::EEXIST);
        }
        let body = match node {
            NewNode::File => Body::File(FileData::default()),
            NewNode::Dir => Body::Dir(Directory {
                parent,
                ..Directory::default()
            }),
            NewNode::Symlink(target) => Body::Symlink(target),
        };
        let mut inode = Inode::new(body, Meta::new(creator.perm, creator.uid, creator.gid));
        inode.links = 1;
        let ino = self.allocate(inode);
        self.dir_mut(parent)?.entries.insert(name.to_owned(), ino);
        self.touch_dir(parent);
        Ok(ino)
    }

    /// `link`: a new name for the file `ino` (directories cannot be linked).
    pub(crate) fn link(&mut self, ino: Ino, new_parent: Ino, new_name: &OsStr) -> FsResult<()> {
        check_name(new_name)?;
        if self.inode(ino)?.kind() == FileType::Directory {
            return Err(Errno::EPERM);
        }
        if self.dir(new_parent)?.entries.contains_key(new_name) {
            return Err(Errno::EEXIST);
        }
        self.dir_mut(new_parent)?
            .entries
            .insert(new_name.to_owned(), ino);
        let inode = self.inode_mut(ino)?;
        inode.links += 1;
        inode.meta.ctime = std::time::SystemTime::now();
        self.touch_dir(new_parent);
        Ok(())
    }

    /// `unlink`: removes the name of a non-directory.
    pub(crate) fn unlink(&mut self, parent: Ino, name: &OsStr) -> FsResult<()> {
        let ino = self.child(parent, name)?;
        if self.inode(ino)?.kind() == FileType::Directory {
            return Err(Errno::EISDIR);
        }
        self.remove_entry(parent, name, ino)
    }

    /// `rmdir`: removes the name of an empty directory.
    pub(crate) fn rmdir(&mut self, parent: Ino, name: &OsStr) -> FsResult<()> {
        let ino = self.child(parent, name)?;
        if !self.dir(ino)?.entries.is_empty() {
            return Err(Errno::ENOTEMPTY);
        }
        self.remove_entry(parent, name, ino)
    }

    /// `rename`, including over an existing target and across directories.
    /// `RENAME_NOREPLACE` is honoured; `RENAME_EXCHANGE` and whiteouts are not
    /// supported (`EINVAL`).
    pub(crate) fn rename(
        &mut self,
        parent: Ino,
        name: &OsStr,
        new_parent: Ino,
        new_name: &OsStr,
        flags: RenameFlags,
    ) -> FsResult<()> {
        check_name(new_name)?;
        if !(flags - RenameFlags::RENAME_NOREPLACE).is_empty() {
            return Err(Errno::EINVAL);
        }
        let source = self.child(parent, name)?;
        let target = self.dir(new_parent)?.entries.get(new_name).copied();
        if target.is_some() && flags.contains(RenameFlags::RENAME_NOREPLACE) {
            return Err(Errno::EEXIST);
        }
        if target == Some(source) {
            return Ok(()); // two names of one inode: POSIX says do nothing
        }
        let source_is_dir = self.inode(source)?.kind() == FileType::Directory;
        if source_is_dir {
            self.check_not_inside(new_parent, source)?;
        }
        if let Some(target) = target {
            match (source_is_dir, self.inode(target)?.dir()) {
                (true, None) => return Err(Errno::ENOTDIR),
                (false, Some(_)) => return Err(Errno::EISDIR),
                (true, Some(dir)) if !dir.entries.is_empty() => return Err(Errno::ENOTEMPTY),
                (true, Some(_)) | (false, None) => {}
            }
        }
        self.dir_mut(parent)?.entries.remove(name);
        self.dir_mut(new_parent)?
            .entries
            .insert(new_name.to_owned(), source);
        if let Some(dir) = self.inode_mut(source)?.dir_mut() {
            dir.parent = new_parent;
        }
        self.inode_mut(source)?.meta.ctime = std::time::SystemTime::now();
        self.touch_dir(parent);
        self.touch_dir(new_parent);
        if let Some(target) = target {
            self.inode_mut(target)?.links -= 1;
            self.free_if_garbage(target);
        }
        Ok(())
    }

    /// `readdir`: `.`, `..` and the current entries, sorted by name.
    pub(crate) fn read_dir(&self, ino: Ino) -> FsResult<Vec<(Ino, FileType, OsString)>> {
        let dir = self.dir(ino)?;
        let mut out = vec![
            (ino, FileType::Directory, OsString::from(".")),
            (dir.parent, FileType::Directory, OsString::from("..")),
        ];
        for (name, &child) in &dir.entries {
            out.push((child, self.inode(child)?.kind(), name.clone()));
        }
        Ok(out)
    }

    /// `readlink`: the target of a symbolic link.
    pub(crate) fn read_link(&self, ino: Ino) -> FsResult<PathBuf> {
        match &self.inode(ino)?.body {
            Body::Symlink(target) => Ok(target.clone()),
            Body::File(_) | Body::Dir(_) => Err(Errno::EINVAL),
        }
    }

    /// Removes `name` (naming `ino`) from `parent` and frees `ino` if that was its last hold.
    fn remove_entry(&mut self, parent: Ino, name: &OsStr, ino: Ino) -> FsResult<()> {
        self.dir_mut(parent)?.entries.remove(name);
        self.touch_dir(parent);
        let inode = self.inode_mut(ino)?;
        inode.links -= 1;
        inode.meta.ctime = std::time::SystemTime::now();
        self.free_if_garbage(ino);
        Ok(())
    }

    /// `EINVAL` if `dir` is `ancestor` or lies below it: a directory cannot
    /// be moved into itself.
    fn check_not_inside(&self, dir: Ino, ancestor: Ino) -> FsResult<()> {
        let mut current = dir;
        loop {
            if current == ancestor {
                return Err(Errno::EINVAL);
            }
            if current == ROOT {
                return Ok(());
            }
            current = self.dir(current)?.parent;
        }
    }
}

/// `ENAMETOOLONG` for names longer than [`MAX_NAME_LEN`] bytes.
fn check_name(name: &OsStr) -> FsResult<()> {
    if name.len() > MAX_NAME_LEN {
        Err(Errno::ENAMETOOLONG)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: Creator = Creator {
        perm: 0o644,
        uid: 0,
        gid: 0,
    };

    fn names(state: &FsState, dir: Ino) -> Vec<String> {
        state
            .dir(dir)
            .expect("dir")
            .entries
            .keys()
            .map(|n| n.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn create_refuses_taken_and_too_long_names() {
        let mut state = FsState::new(0o755, 0, 0);
        state
            .create_node(ROOT, OsStr::new("a"), NewNode::File, ME)
            .expect("create");
        let again = state.create_node(ROOT, OsStr::new("a"), NewNode::Dir, ME);
        assert_eq!(again, Err(Errno::EEXIST));
        let long = "x".repeat(MAX_NAME_LEN + 1);
        let too_long = state.create_node(ROOT, OsStr::new(&long), NewNode::File, ME);
        assert_eq!(too_long, Err(Errno::ENAMETOOLONG));
    }

    #[test]
    fn rename_replaces_a_file_and_frees_it() {
        let mut state = FsState::new(0o755, 0, 0);
        let a = state
            .create_node(ROOT, OsStr::new("a"), NewNode::File, ME)
            .expect("a");
        let b = state
            .create_node(ROOT, OsStr::new("b"), NewNode::File, ME)
            .expect("b");
        state
            .rename(
                ROOT,
                OsStr::new("a"),
                ROOT,
                OsStr::new("b"),
                RenameFlags::empty(),
            )
            .expect("rename");
        assert_eq!(names(&state, ROOT), ["b"]);
        assert_eq!(state.child(ROOT, OsStr::new("b")), Ok(a));
        assert!(state.inode(b).is_err(), "replaced target is freed");
    }

    #[test]
    fn rename_checks_kinds_and_emptiness() {
        let mut state = FsState::new(0o755, 0, 0);
        let d = state
            .create_node(ROOT, OsStr::new("d"), NewNode::Dir, ME)
            .expect("d");
        state
            .create_node(ROOT, OsStr::new("f"), NewNode::File, ME)
            .expect("f");
        state
            .create_node(d, OsStr::new("inner"), NewNode::Dir, ME)
            .expect("inner");
        let none = RenameFlags::empty();
        let name = OsStr::new;
        assert_eq!(
            state.rename(ROOT, name("f"), ROOT, name("d"), none),
            Err(Errno::EISDIR)
        );
        assert_eq!(
            state.rename(ROOT, name("d"), ROOT, name("f"), none),
            Err(Errno::ENOTDIR)
        );
        assert_eq!(
            state.rename(ROOT, name("d"), d, name("x"), none),
            Err(Errno::EINVAL)
        );
        state
            .create_node(ROOT, name("e"), NewNode::Dir, ME)
            .expect("e");
        assert_eq!(
            state.rename(ROOT, name("e"), ROOT, name("d"), none),
            Err(Errno::ENOTEMPTY)
        );
        let noreplace = RenameFlags::RENAME_NOREPLACE;
        assert_eq!(
            state.rename(ROOT, name("e"), ROOT, name("f"), noreplace),
            Err(Errno::EEXIST)
        );
    }

    #[test]
    fn unlinked_open_file_lives_until_released() {
        let mut state = FsState::new(0o755, 0, 0);
        let f = state
            .create_node(ROOT, OsStr::new("f"), NewNode::File, ME)
            .expect("f");
        let fh = state.open(f).expect("open");
        state.unlink(ROOT, OsStr::new("f")).expect("unlink");
        assert!(state.inode(f).is_ok());
        state.release(fh);
        assert!(state.inode(f).is_err());
    }

    #[test]
    fn rmdir_needs_an_empty_directory() {
        let mut state = FsState::new(0o755, 0, 0);
        let d = state
            .create_node(ROOT, OsStr::new("d"), NewNode::Dir, ME)
            .expect("d");
        state
            .create_node(d, OsStr::new("f"), NewNode::File, ME)
            .expect("f");
        assert_eq!(state.rmdir(ROOT, OsStr::new("d")), Err(Errno::ENOTEMPTY));
        state.unlink(d, OsStr::new("f")).expect("unlink");
        state.rmdir(ROOT, OsStr::new("d")).expect("rmdir");
        assert!(names(&state, ROOT).is_empty());
        let in_removed = state.create_node(d, OsStr::new("g"), NewNode::File, ME);
        assert_eq!(in_removed, Err(Errno::ENOENT));
    }
}

//! The `raftlock` binary's allocator is built to give freed memory back
//! (see .cargo/config.toml): mimalloc's compiled-in default for
//! `arena_eager_commit` must be 0.

/// `mi_option_arena_eager_commit`: its index in mimalloc's `mi_option_e`
/// (the same in mimalloc 2 and 3, which keep retired options in place);
/// the Rust binding names no constant for it.
const MI_OPTION_ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;

#[test]
fn mimalloc_commits_arena_memory_as_it_is_used() {
    if std::env::var_os("MIMALLOC_ARENA_EAGER_COMMIT").is_some() {
        eprintln!("MIMALLOC_ARENA_EAGER_COMMIT is set: it decides, not the build");
        return;
    }
    // SAFETY: reads one integer option; mimalloc initializes it on first
    // use if need be.
    let eager = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_ARENA_EAGER_COMMIT) };
    assert_eq!(
        eager, 0,
        "mimalloc was built with eager arena commit ({eager}): was CFLAGS set \
         in the environment, overriding .cargo/config.toml?"
    );
}

//! Integration tests: each mounts a fresh lazy filesystem in a temporary
//! directory, works on it through ordinary syscalls, cuts the power and
//! checks that exactly the durable state is left. Without FUSE they print
//! `SKIPPED: <reason>` and pass, except under CI (`CI` set), where they fail.

mod cut_point;
mod data;
mod fixture;
mod lifecycle;
mod namespace;
mod sled_db;
mod tools;

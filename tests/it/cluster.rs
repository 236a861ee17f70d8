//! The integration tests' fixture: [`TestCluster`] from the shared test kit
//! (`tests/kit`, `raftlock-testkit`), which the chaos suite and the
//! benchmark launch their node processes with too.

pub use raftlock_testkit::{test_config, TestCluster, TEST_CLIENT};

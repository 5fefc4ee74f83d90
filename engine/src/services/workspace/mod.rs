//! The workspace's inventory and what this build can do: runs, artifacts,
//! capabilities, native viewers, and what failed.

pub mod artifact_detail;
pub mod capabilities;
pub mod failures;
pub mod inventory;
pub mod viewer;

//! The workspace's inventory and what this build can do: runs, artifacts,
//! capabilities, native viewers, what failed, and what was quarantined.

pub mod artifact_detail;
pub mod capabilities;
pub mod failures;
pub mod inventory;
pub mod quarantine;
pub mod viewer;

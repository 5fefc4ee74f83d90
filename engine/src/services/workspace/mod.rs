//! The workspace's inventory and what this build can do: runs, artifacts,
//! capabilities and native viewers.

pub mod capabilities;
pub mod inventory;
pub mod viewer;

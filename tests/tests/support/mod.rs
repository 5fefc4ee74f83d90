//! Helpers shared by the end-to-end tests.
#![allow(dead_code)] // each test binary uses a different part

pub mod mcp;

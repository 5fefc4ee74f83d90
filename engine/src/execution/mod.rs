//! Running a declared workload as a process: argv directly (never a shell),
//! a filtered environment, its own process group, a timeout, bounded output
//! capture, and resource accounting of the whole process tree. See
//! `docs/workloads.md`.

pub mod env;
pub mod output;
pub mod process;
pub mod tree;

pub use output::CapturedOutput;
pub use process::{
    ProcessOutcome, ProcessSpec, Supervision, Termination, Unsupervised, run_process,
};

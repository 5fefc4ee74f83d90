//! Starting and supervising one workload process tree.
//!
//! The program is executed directly (no shell) in its own process group,
//! with stdin closed and stdout/stderr captured within bounds. A waiter
//! thread blocks in `wait4` on the leader, so the exit time (wall time) is
//! exact and the leader's rusage — user and system CPU of the leader and the
//! descendants it waited for, and `ru_maxrss` — comes with it. Meanwhile the
//! supervisor samples the group's RSS, and on timeout or cancellation sends
//! SIGTERM to the whole group, waits a bounded grace period, then SIGKILLs the
//! group. Group members still alive after the leader exits are killed the
//! same way, so no process of a run outlives it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::output::{CapturedOutput, DEFAULT_OUTPUT_LIMIT, OutputReader};
use super::tree::{group_alive, page_size, sample_group, signal_group};
use crate::error::{ErrorCode, FlameoxError, Result};

/// Everything needed to start the process; nothing is interpreted by a shell.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// The resolved program to execute.
    pub program: PathBuf,
    /// argv[0] as declared (what the program sees), then the arguments.
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// The complete child environment (already filtered).
    pub env: BTreeMap<String, String>,
    pub timeout: Duration,
    /// Bytes kept per output stream.
    pub output_limit: usize,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Time between RSS samples of the tree.
    pub sample_interval: Duration,
}

impl ProcessSpec {
    pub fn new(program: PathBuf, argv: Vec<String>, cwd: PathBuf, timeout: Duration) -> Self {
        ProcessSpec {
            program,
            argv,
            cwd,
            env: BTreeMap::new(),
            timeout,
            output_limit: DEFAULT_OUTPUT_LIMIT,
            grace: Duration::from_secs(2),
            sample_interval: Duration::from_millis(10),
        }
    }
}

/// Asked between samples whether the caller gave up.
pub trait Supervision: Sync {
    fn cancelled(&self) -> bool {
        false
    }
    /// The leader started as `pid` (its process group is `pid` too), so
    /// whoever outlives a crashed supervisor can end the tree.
    fn started(&self, _pid: i32) {}
}

/// Never cancels.
pub struct Unsupervised;
impl Supervision for Unsupervised {}

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Termination {
    /// The leader exited by itself (any exit code).
    Exited,
    /// The leader was killed by a signal nobody in flameox sent.
    Signaled,
    TimedOut,
    Cancelled,
}

/// What happened, with the resources the tree used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessOutcome {
    pub termination: Termination,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub pid: u32,
    pub wall_time_ns: u64,
    pub user_cpu_ns: u64,
    pub system_cpu_ns: u64,
    pub cpu_time_ns: u64,
    /// max(peak sampled tree RSS, leader ru_maxrss).
    pub peak_rss_bytes: u64,
    /// Largest sum of RSS over the group's live members at one sample.
    pub peak_tree_rss_bytes: u64,
    /// The leader's (and waited descendants') ru_maxrss, in bytes.
    pub rusage_max_rss_bytes: u64,
    pub rss_samples: u64,
    /// Most group members seen alive at one sample.
    pub max_processes: u32,
    /// Group members still alive after the leader exited (then killed).
    pub survivors_killed: u32,
    /// True when SIGTERM was not enough and SIGKILL was sent.
    pub escalated_to_sigkill: bool,
    pub stdout: CapturedOutput,
    pub stderr: CapturedOutput,
}

/// The leader's end as `wait4` reported it.
struct Reaped {
    status: i32,
    usage: libc::rusage,
    at: Instant,
}

fn wait_leader(pid: i32) -> std::io::Result<Reaped> {
    loop {
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid value of this plain C struct.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: status and usage are valid, writable locals for wait4.
        let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if got == pid {
            return Ok(Reaped {
                status,
                usage,
                at: Instant::now(),
            });
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

fn timeval_ns(t: libc::timeval) -> u64 {
    (t.tv_sec.max(0) as u64) * 1_000_000_000 + (t.tv_usec.max(0) as u64) * 1_000
}

/// Runs the process to its end (or kills it); see the module comment.
pub fn run_process(spec: &ProcessSpec, supervision: &dyn Supervision) -> Result<ProcessOutcome> {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(&spec.program);
    if let Some(arg0) = spec.argv.first() {
        command.arg0(arg0);
    }
    command
        .args(spec.argv.iter().skip(1))
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(&spec.env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let started = Instant::now();
    let mut child = command.spawn().map_err(|e| {
        FlameoxError::new(
            ErrorCode::ProcessFailed,
            format!("the workload could not start: {e}"),
        )
        .detail("io_kind", format!("{:?}", e.kind()))
        .remedy("check that argv[0] exists, is executable, and cwd exists")
    })?;
    let pid = child.id() as i32;
    supervision.started(pid);
    let stdout = child
        .stdout
        .take()
        .map(|s| OutputReader::start(s, spec.output_limit));
    let stderr = child
        .stderr
        .take()
        .map(|s| OutputReader::start(s, spec.output_limit));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(wait_leader(pid));
    });

    let page = page_size();
    let mut peak_tree = 0u64;
    let mut max_processes = 0u32;
    let mut samples = 0u64;
    let mut termination = Termination::Exited;
    let mut escalated = false;
    let mut signalled_at: Option<Instant> = None;
    let reaped = loop {
        let sample = sample_group(pid, page);
        samples += 1;
        peak_tree = peak_tree.max(sample.rss_bytes);
        max_processes = max_processes.max(sample.processes);
        match rx.recv_timeout(spec.sample_interval) {
            Ok(result) => break result,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(FlameoxError::internal("the process waiter stopped"));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        match signalled_at {
            None => {
                let reason = if supervision.cancelled() {
                    Some(Termination::Cancelled)
                } else if started.elapsed() >= spec.timeout {
                    Some(Termination::TimedOut)
                } else {
                    None
                };
                if let Some(reason) = reason {
                    termination = reason;
                    signal_group(pid, libc::SIGTERM);
                    signalled_at = Some(Instant::now());
                }
            }
            Some(at) if !escalated && at.elapsed() >= spec.grace => {
                signal_group(pid, libc::SIGKILL);
                escalated = true;
            }
            Some(_) => {}
        }
    };
    let reaped =
        reaped.map_err(|e| FlameoxError::internal(format!("waiting for the workload: {e}")))?;
    // Whatever of the group outlived the leader is killed too.
    let survivors = sample_group(pid, page).processes;
    if group_alive(pid) {
        escalated |= terminate_group(pid, spec.grace);
    }
    let wall_time_ns = reaped.at.duration_since(started).as_nanos() as u64;
    let status = reaped.status;
    let (exit_code, signal) = if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else if libc::WIFSIGNALED(status) {
        (None, Some(libc::WTERMSIG(status)))
    } else {
        (None, None)
    };
    if termination == Termination::Exited && signal.is_some() {
        termination = Termination::Signaled;
    }
    let user = timeval_ns(reaped.usage.ru_utime);
    let system = timeval_ns(reaped.usage.ru_stime);
    let rusage_max = (reaped.usage.ru_maxrss.max(0) as u64) * 1024;
    let drain = Duration::from_secs(2);
    Ok(ProcessOutcome {
        termination,
        exit_code,
        signal,
        pid: pid as u32,
        wall_time_ns,
        user_cpu_ns: user,
        system_cpu_ns: system,
        cpu_time_ns: user + system,
        peak_rss_bytes: peak_tree.max(rusage_max),
        peak_tree_rss_bytes: peak_tree,
        rusage_max_rss_bytes: rusage_max,
        rss_samples: samples,
        max_processes,
        survivors_killed: survivors,
        escalated_to_sigkill: escalated,
        stdout: stdout.map(|r| r.finish(drain)).unwrap_or_default(),
        stderr: stderr.map(|r| r.finish(drain)).unwrap_or_default(),
    })
}

/// SIGTERM the group, wait up to `grace` for it to empty, then SIGKILL and
/// wait (bounded) again. Returns whether SIGKILL was needed.
fn terminate_group(pgid: i32, grace: Duration) -> bool {
    let wait_empty = |limit: Duration| {
        let until = Instant::now() + limit;
        while group_alive(pgid) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        !group_alive(pgid)
    };
    signal_group(pgid, libc::SIGTERM);
    if wait_empty(grace) {
        return false;
    }
    signal_group(pgid, libc::SIGKILL);
    wait_empty(Duration::from_secs(5));
    true
}

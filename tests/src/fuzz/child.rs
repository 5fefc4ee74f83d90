//! Runs one `flameox` command as a child with a time limit, and reports
//! how it ended: exit code or signal, time, peak RSS (from `wait4`), and
//! what it wrote. A child past its limit is killed with its process group,
//! which is what "a hang" means to the campaign.
//!
//! The limit is on CPU time (user + system, all threads, read from
//! `/proc`), so a machine busy with other work does not turn a slow import
//! into a "hang"; a child that waits without spending CPU (a deadlock) is
//! stopped by a wall-clock limit of [`WALL_FACTOR`] times as long.
//!
//! Peak RSS needs a small parent: Linux carries the parent's high-water
//! RSS into a child's `ru_maxrss` across `exec` (the campaign, holding its
//! seeds, is ~260 MiB, and every import "peaked" there). So the campaign
//! runs each command through a supervisor — `flameox-fuzz` itself started
//! afresh ([`SUPERVISE_FLAG`]), a few MiB — which runs the child, waits for
//! it and writes the outcome to a file beside its output.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The wall-clock limit, as a multiple of the CPU-time limit.
pub const WALL_FACTOR: u32 = 6;

/// The first argument that makes `flameox-fuzz` a supervisor:
/// `flameox-fuzz --supervise LIMIT_MS SCRATCH BIN ARGS…` (in the cwd).
pub const SUPERVISE_FLAG: &str = "--supervise";

/// How commands are started: directly, or through a supervisor binary.
#[derive(Debug, Clone)]
pub struct Launcher {
    /// The `flameox` binary.
    pub bin: std::path::PathBuf,
    /// `flameox-fuzz`, to run each command through (see the module doc).
    pub supervisor: Option<std::path::PathBuf>,
}

/// How a child ended.
#[derive(Debug, Clone)]
pub struct ChildOutcome {
    /// The exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that ended it (SIGKILL after a timeout included).
    pub signal: Option<i32>,
    /// Killed by us after the limit.
    pub timed_out: bool,
    pub elapsed: Duration,
    /// CPU time (user + system) it used.
    pub cpu: Duration,
    /// Peak resident set, KiB.
    pub max_rss_kib: u64,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// CPU time a running process has used so far (`/proc/<pid>/stat`).
fn cpu_time(pid: libc::pid_t) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name; utime and stime are
    // fields 14 and 15 of the line (11 and 12 after the name).
    let after = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some(Duration::from_millis(ticks * 1000 / per_second))
}

/// Runs `flameox args…` in `cwd`, output captured in files under
/// `scratch`; `limit` is CPU time (see the module doc).
pub fn run_limited(
    launcher: &Launcher,
    args: &[&str],
    cwd: &Path,
    scratch: &Path,
    limit: Duration,
) -> std::io::Result<ChildOutcome> {
    let Some(supervisor) = &launcher.supervisor else {
        return run_direct(&launcher.bin, args, cwd, scratch, limit);
    };
    let outcome_path = scratch.join("child.outcome");
    let _ = std::fs::remove_file(&outcome_path);
    let limit_ms = limit.as_millis().to_string();
    let mut sup_args: Vec<&std::ffi::OsStr> = vec![
        SUPERVISE_FLAG.as_ref(),
        limit_ms.as_ref(),
        scratch.as_os_str(),
        launcher.bin.as_os_str(),
    ];
    sup_args.extend(args.iter().map(std::ffi::OsStr::new));
    let status = Command::new(supervisor)
        .args(&sup_args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()?;
    let text = std::fs::read_to_string(&outcome_path).map_err(|e| {
        std::io::Error::other(format!("the supervisor wrote no outcome ({status}): {e}"))
    })?;
    let mut outcome = parse_outcome(&text)
        .ok_or_else(|| std::io::Error::other(format!("unreadable outcome: {text}")))?;
    outcome.stdout = std::fs::read(scratch.join("child.stdout")).unwrap_or_default();
    outcome.stderr = std::fs::read(scratch.join("child.stderr")).unwrap_or_default();
    Ok(outcome)
}

/// The supervisor's body (`flameox-fuzz --supervise …`, arguments after
/// the flag): runs the command and writes `SCRATCH/child.outcome`.
pub fn supervise(args: &[String]) -> std::io::Result<()> {
    let [limit_ms, scratch, bin, rest @ ..] = args else {
        return Err(std::io::Error::other(
            "usage: --supervise LIMIT_MS SCRATCH BIN ARGS…",
        ));
    };
    let limit = Duration::from_millis(
        limit_ms
            .parse()
            .map_err(|_| std::io::Error::other(format!("not a limit: {limit_ms}")))?,
    );
    let scratch = Path::new(scratch);
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    let cwd = std::env::current_dir()?;
    let out = run_direct(Path::new(bin), &rest, &cwd, scratch, limit)?;
    std::fs::write(scratch.join("child.outcome"), render_outcome(&out))
}

fn render_outcome(o: &ChildOutcome) -> String {
    let opt = |v: Option<i32>| v.map_or("-".to_owned(), |v| v.to_string());
    format!(
        "{} {} {} {} {} {}\n",
        opt(o.code),
        opt(o.signal),
        u8::from(o.timed_out),
        o.elapsed.as_nanos(),
        o.cpu.as_nanos(),
        o.max_rss_kib
    )
}

fn parse_outcome(text: &str) -> Option<ChildOutcome> {
    let f: Vec<&str> = text.split_whitespace().collect();
    let opt = |s: &str| (s != "-").then(|| s.parse::<i32>().ok()).flatten();
    let nanos = |s: &str| s.parse::<u64>().ok().map(Duration::from_nanos);
    Some(ChildOutcome {
        code: opt(f.first()?),
        signal: opt(f.get(1)?),
        timed_out: *f.get(2)? == "1",
        elapsed: nanos(f.get(3)?)?,
        cpu: nanos(f.get(4)?)?,
        max_rss_kib: f.get(5)?.parse().ok()?,
        stdout: Vec::new(),
        stderr: Vec::new(),
    })
}

/// Runs `bin args…` as this process's child (its `ru_maxrss` is at least
/// this process's own peak: see the module doc).
fn run_direct(
    bin: &Path,
    args: &[&str],
    cwd: &Path,
    scratch: &Path,
    limit: Duration,
) -> std::io::Result<ChildOutcome> {
    let out_path = scratch.join("child.stdout");
    let err_path = scratch.join("child.stderr");
    let stdout = std::fs::File::create(&out_path)?;
    let stderr = std::fs::File::create(&err_path)?;
    let started = Instant::now();
    let child = Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env_remove("FLAMEOX_TEST_PAUSE_AT")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0)
        .spawn()?;
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut timed_out = false;
    let mut pause = Duration::from_millis(1);
    loop {
        // SAFETY: `pid` is our own child; status and usage are valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        if r < 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        let over = started.elapsed() >= limit * WALL_FACTOR
            || (started.elapsed() >= limit && cpu_time(pid).is_some_and(|cpu| cpu >= limit));
        if !timed_out && over {
            timed_out = true;
            // SAFETY: signals our child's own process group.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
    let elapsed = started.elapsed();
    let exit = std::process::ExitStatus::from_raw(status);
    let tv =
        |t: libc::timeval| Duration::new(t.tv_sec.max(0) as u64, t.tv_usec.max(0) as u32 * 1000);
    let cpu = tv(usage.ru_utime) + tv(usage.ru_stime);
    Ok(ChildOutcome {
        code: exit.code(),
        signal: exit.signal(),
        timed_out,
        elapsed,
        cpu,
        max_rss_kib: usage.ru_maxrss.max(0) as u64,
        stdout: std::fs::read(&out_path).unwrap_or_default(),
        stderr: std::fs::read(&err_path).unwrap_or_default(),
    })
}

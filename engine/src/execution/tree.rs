//! The workload's process tree as the kernel shows it: every process whose
//! process group is the workload's (the leader is started with its own group,
//! so every descendant that does not call `setsid`/`setpgid` is in it).
//!
//! Peak RSS of the tree is measured by sampling `/proc/<pid>/stat` of every
//! group member and summing their resident pages, keeping the maximum over
//! time. Shared pages (libraries, copy-on-write pages after `fork`) count once
//! per process, as `ps` sums them; a spike shorter than the sampling interval
//! can be missed, which is why the leader's `ru_maxrss` is reported beside it.
//! Killing signals the whole group (`kill(-pgid, …)`).

use std::fs;

/// One sample of the group: members alive and their summed RSS.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeSample {
    pub processes: u32,
    pub rss_bytes: u64,
}

/// Bytes per page (falls back to 4 KiB if sysconf fails).
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as u64 } else { 4096 }
}

/// `(pgrp, rss_pages, state)` from the text of `/proc/<pid>/stat`. The
/// command name (field 2) may contain spaces and parentheses, so fields are
/// counted after its last `)`.
pub fn parse_stat(text: &str) -> Option<(i32, u64, char)> {
    let after = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After `)`: [0] state (field 3), [2] pgrp (field 5), [21] rss (field 24).
    let state = fields.first()?.chars().next()?;
    let pgrp = fields.get(2)?.parse().ok()?;
    let rss = fields.get(21)?.parse().ok()?;
    Some((pgrp, rss, state))
}

/// When process `pid` started (field 22 of `/proc/<pid>/stat`, clock
/// ticks since boot): with the pid, an identity no later process shares,
/// so a recorded process is never mistaken for one that reused its pid.
pub fn start_ticks(pid: i32) -> Option<u64> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &text[text.rfind(')')? + 1..];
    // After `)`: [0] is field 3, so field 22 is [19].
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the process recorded as (`pid`, `ticks`) is still running (a
/// zombie is not).
pub fn same_process_alive(pid: i32, ticks: u64) -> bool {
    let Ok(text) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = parse_stat(&text).map(|(_, _, state)| state);
    start_ticks(pid) == Some(ticks) && state.is_some_and(|s| s != 'Z' && s != 'X')
}

/// Sums RSS over the live members of process group `pgid`.
pub fn sample_group(pgid: i32, page_size: u64) -> TreeSample {
    let mut sample = TreeSample::default();
    let Ok(entries) = fs::read_dir("/proc") else {
        return sample;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(text) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some((pgrp, rss_pages, state)) = parse_stat(&text)
            && pgrp == pgid
            && state != 'Z'
        {
            sample.processes += 1;
            sample.rss_bytes += rss_pages * page_size;
        }
    }
    sample
}

/// Sends `signal` to every process of group `pgid`; false when none is left.
pub fn signal_group(pgid: i32, signal: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: kill has no memory-safety preconditions; a negative pid names
    // the process group, and pgid > 1 never addresses "every process".
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// Whether any live (non-zombie) process is still in group `pgid`. Zombies
/// are ignored: an orphaned grandchild's zombie waits for whatever reaps
/// orphans here (in a container PID 1 may never do it), and it holds no
/// memory and runs nothing.
pub fn group_alive(pgid: i32) -> bool {
    signal_group(pgid, 0) && sample_group(pgid, page_size()).processes > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_last_parenthesis() {
        let line = "4242 (my (odd) prog) S 1 4240 4240 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    1000 10000000 2500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0";
        assert_eq!(parse_stat(line), Some((4240, 2500, 'S')));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn this_process_group_is_visible() {
        // SAFETY: getpgrp has no preconditions.
        let own = unsafe { libc::getpgrp() };
        let sample = sample_group(own, page_size());
        assert!(sample.processes >= 1 && sample.rss_bytes > 0, "{sample:?}");
        assert!(group_alive(own));
    }

    #[test]
    fn a_process_is_known_by_its_pid_and_start_time() {
        let pid = std::process::id() as i32;
        let ticks = start_ticks(pid).expect("own start time");
        assert!(same_process_alive(pid, ticks));
        assert!(!same_process_alive(pid, ticks + 1));
        assert!(!same_process_alive(i32::MAX, ticks));
    }
}

//! What a frame's name says about the time spent in it: waiting (the thread
//! was blocked — Perfetto would show it sleeping), a generic wrapper (a task
//! runner or event loop that holds all of a thread's work and explains none
//! of it), or work. Headlines never name a waiting frame or a wrapper as the
//! top frame: they look through a wrapper to its heaviest meaningful child,
//! and count waiting time apart.
//!
//! Names come in each producer's spelling — `threading.py(359): wait`
//! (Kineto), `wait (/usr/lib/python3.11/threading.py:320)` (viztracer),
//! `ThreadControllerImpl::RunTask` (Chromium), `pthread_cond_wait` (perf) —
//! so the function part is taken first ([`function_part`]) and split into
//! lower-case words ([`words`]).

/// What a frame is, for accounting and headlines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameRole {
    /// The thread was blocked: a wait, sleep, lock, poll or a host-side
    /// device synchronization.
    Waiting,
    /// A generic task wrapper or event-loop iteration.
    Wrapper,
    Work,
}

/// Words that make a function a wait.
const WAIT_WORDS: &[&str] = &[
    "wait",
    "waitall",
    "waitany",
    "waitsome",
    "sleep",
    "nanosleep",
    "usleep",
    "futex",
    "poll",
    "ppoll",
    "epoll",
    "acquire",
    "synchronize",
    "gil",
];

/// Waits whose words alone would also match work (`aten::index_select`,
/// `str.join`): by whole function part.
const EXACT_WAITS: &[&str] = &[
    "select",
    "pselect",
    "pselect6",
    "select.select",
    "__select",
    "pthread_join",
    "Thread.join",
    "threading.Thread.join",
];

/// Calls whose name has a wait word but which only enqueue a wait on the
/// device and return at once.
const NOT_WAITS: &[&str] = &[
    "cudaStreamWaitEvent",
    "cuStreamWaitEvent",
    "hipStreamWaitEvent",
    "Stream Wait Event",
];

/// Generic wrappers, by function part (exact).
const WRAPPERS: &[&str] = &[
    "RunTask",
    "ThreadControllerImpl::RunTask",
    "ThreadController::Task",
    "ThreadPool_RunTask",
    "SequenceManager::RunTask",
    "TaskGraphRunner::RunTask",
    "MessageLoop::RunTask",
    "TaskAnnotator::RunTask",
    "TaskAnnotator::RunTaskImpl",
    "Receive mojo message",
    "SimpleWatcher::OnHandleReady",
    "run_forever",
    "_run_once",
    "run_until_complete",
    "_run",
    "_bootstrap",
    "_bootstrap_inner",
    "run",
    "<module>",
    "exec",
    "builtins.exec",
    "_run_code",
    "_run_module_as_main",
    "main",
    "__libc_start_main",
    "__libc_start_call",
    "_start",
    "start_thread",
    "clone",
    "clone3",
];

/// The role of a frame named `name` (a slice's kind, when known, decides
/// first: `sync` rows are host waits on the device).
pub fn role(name: &str, kind: Option<&str>) -> FrameRole {
    if kind == Some("sync") {
        return FrameRole::Waiting;
    }
    let function = function_part(name);
    if WRAPPERS.contains(&function) || name.starts_with("PyTorch Profiler") {
        return FrameRole::Wrapper;
    }
    if NOT_WAITS.contains(&function) {
        return FrameRole::Work;
    }
    if EXACT_WAITS.contains(&function) || (function == "join" && name.contains("threading")) {
        return FrameRole::Waiting;
    }
    if words(function).any(|w| WAIT_WORDS.contains(&w.as_str())) {
        return FrameRole::Waiting;
    }
    FrameRole::Work
}

/// The function part of a frame name: `file.py(12): f` → `f`,
/// `f (/path/file.py:12)` → `f`, `mod.Class.f` stays whole (its words are
/// still split by [`words`]).
pub fn function_part(name: &str) -> &str {
    let name = name.trim();
    // Kineto python_function: `path(line): function`.
    if let Some(at) = name.find("): ") {
        let head = &name[..at];
        if head
            .rfind('(')
            .is_some_and(|open| head[open + 1..].chars().all(|c| c.is_ascii_digit()) && open > 0)
        {
            return name[at + 3..].trim();
        }
    }
    // viztracer / py-spy: `function (path:line)` or `function (path)`.
    if name.ends_with(')')
        && let Some(open) = name.rfind(" (")
    {
        let inside = &name[open + 2..name.len() - 1];
        if inside.contains('/') || inside.contains('\\') || inside.contains(".py") {
            return name[..open].trim();
        }
    }
    name
}

/// Lower-case words of a function name: split at anything not a letter or
/// digit and at lower-to-upper case changes (`cudaStreamSynchronize` →
/// `cuda`, `stream`, `synchronize`).
pub fn words(function: &str) -> impl Iterator<Item = String> + '_ {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in function.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_are_recognized_in_every_producers_spelling() {
        for name in [
            "threading.py(359): wait",
            "wait (/usr/lib/python3.11/threading.py:320)",
            "_thread.lock.acquire",
            "time.sleep",
            "pthread_cond_wait",
            "__futex_abstimed_wait_common",
            "epoll_wait",
            "poll",
            "cudaStreamSynchronize",
            "cudaDeviceSynchronize",
            "MPI_Wait",
            "take_gil",
            "base::WaitableEvent::Wait",
            "threading.py(1096): join",
            "select",
        ] {
            assert_eq!(role(name, None), FrameRole::Waiting, "{name}");
        }
        assert_eq!(role("Event Sync", Some("sync")), FrameRole::Waiting);
    }

    #[test]
    fn work_and_wrappers_are_not_waits() {
        for name in [
            "cudaStreamWaitEvent",
            "aten::addmm",
            "fib (/tmp/w.py:3)",
            "parse_work",
            "ncclKernel_AllReduce_RING_LL_Sum_float",
            "Layout",
            "v8.compile",
            "str.join",
            "aten::index_select",
        ] {
            assert_eq!(role(name, None), FrameRole::Work, "{name}");
        }
        for name in [
            "RunTask",
            "ThreadControllerImpl::RunTask",
            "<module> (/tmp/w.py:1)",
            "run_forever",
            "PyTorch Profiler (0)",
        ] {
            assert_eq!(role(name, None), FrameRole::Wrapper, "{name}");
        }
    }

    #[test]
    fn function_parts_and_words() {
        assert_eq!(function_part("threading.py(359): wait"), "wait");
        assert_eq!(function_part("fib (/tmp/tr/fibrec.py:1)"), "fib");
        assert_eq!(function_part("aten::mm"), "aten::mm");
        assert_eq!(function_part("f (x)"), "f (x)");
        let w: Vec<String> = words("cudaStreamSynchronize").collect();
        assert_eq!(w, ["cuda", "stream", "synchronize"]);
        let w: Vec<String> = words("MPI_Wait").collect();
        assert_eq!(w, ["mpi", "wait"]);
    }
}

//! A Chromium-shaped Chrome JSON trace generator (what `chrome://tracing`
//! and Perfetto's legacy JSON export write for a browser session).
//!
//! Shape: a browser, a GPU and several renderer processes, each with named
//! main, compositor and pool threads; nested `X` tasks (`RunTask` →
//! `FunctionCall` → `Layout` …) with source-location args; `B`/`E` pairs on
//! the compositor; async `b`/`e` loads with `id2`; thread, process and
//! global instants; `C` counters; `s`/`f` flows between threads. Integer
//! microsecond timestamps, compact separators, as Chromium writes them.

use std::io::{self, Write};

use crate::rng::SeededRng;

/// What to generate.
#[derive(Debug, Clone)]
pub struct ChromiumSpec {
    pub seed: u64,
    /// Approximate number of trace events to write.
    pub events: u64,
    /// Renderer processes (at least 1).
    pub renderers: u64,
}

const TASKS: &[(&str, &str)] = &[
    ("ThreadControllerImpl::RunTask", "toplevel"),
    ("SimpleWatcher::OnHandleReady", "toplevel"),
    ("RenderFrameImpl::DidCommitNavigation", "navigation"),
];

const WORK: &[(&str, &str)] = &[
    ("FunctionCall", "devtools.timeline"),
    ("V8.Execute", "v8"),
    ("UpdateLayoutTree", "blink,devtools.timeline"),
    ("Layout", "devtools.timeline"),
    ("Paint", "devtools.timeline,rail"),
    ("ParseHTML", "devtools.timeline"),
    ("v8.compile", "v8,devtools.timeline"),
    ("MinorGC", "devtools.timeline,v8"),
];

struct Out<W: Write> {
    out: W,
    first: bool,
    written: u64,
}

impl<W: Write> Out<W> {
    fn event(&mut self, body: &str) -> io::Result<()> {
        self.out
            .write_all(if self.first { b"\n" } else { b",\n" })?;
        self.first = false;
        self.out.write_all(body.as_bytes())?;
        self.written += 1;
        Ok(())
    }
}

/// Writes the trace; returns the number of events written.
pub fn write_chromium<W: Write>(spec: &ChromiumSpec, out: W) -> io::Result<u64> {
    let mut rng = SeededRng::new(spec.seed);
    let mut w = Out {
        out,
        first: true,
        written: 0,
    };
    w.out.write_all(b"{\"traceEvents\":[")?;
    let mut threads: Vec<(u64, u64)> = Vec::new();
    let mut processes = vec![(1000u64, "Browser"), (3000, "GPU Process")];
    for r in 0..spec.renderers.max(1) {
        processes.push((2000 + r, "Renderer"));
    }
    for &(pid, name) in &processes {
        w.event(&format!("{{\"args\":{{\"name\":\"{name}\"}},\"cat\":\"__metadata\",\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":0,\"ts\":0}}"))?;
        for (t, thread) in ["CrMainThread", "Compositor", "ThreadPoolForegroundWorker"]
            .iter()
            .enumerate()
        {
            let tid = pid * 10 + t as u64;
            threads.push((pid, tid));
            w.event(&format!("{{\"args\":{{\"name\":\"{thread}\"}},\"cat\":\"__metadata\",\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"ts\":0}}"))?;
        }
    }
    let mut clock = vec![100_000_000u64; threads.len()];
    let mut async_id = 0x1000u64;
    let mut flow_id = 1u64;
    while w.written < spec.events {
        let t = rng.range(0, threads.len() as u64) as usize;
        let (pid, tid) = threads[t];
        let start = clock[t] + rng.range(5, 400);
        match rng.range(0, 20) {
            0 => {
                // An async load: begin and end on the same id, maybe other threads.
                async_id += 1;
                let dur = rng.range(500, 50_000);
                let url = rng.range(0, 500);
                w.event(&format!("{{\"args\":{{\"data\":{{\"url\":\"https://example.com/r/{url}.js\",\"priority\":\"High\"}}}},\"cat\":\"loading\",\"id2\":{{\"local\":\"0x{async_id:x}\"}},\"name\":\"ResourceLoad\",\"ph\":\"b\",\"pid\":{pid},\"tid\":{tid},\"ts\":{start}}}"))?;
                w.event(&format!("{{\"args\":{{}},\"cat\":\"loading\",\"id2\":{{\"local\":\"0x{async_id:x}\"}},\"name\":\"ResourceLoad\",\"ph\":\"e\",\"pid\":{pid},\"tid\":{tid},\"ts\":{}}}", start + dur))?;
                clock[t] = start;
            }
            1 => {
                let scope = ["t", "p", "g"][rng.range(0, 3) as usize];
                w.event(&format!("{{\"args\":{{}},\"cat\":\"blink.user_timing\",\"name\":\"mark_{}\",\"ph\":\"I\",\"pid\":{pid},\"s\":\"{scope}\",\"tid\":{tid},\"ts\":{start}}}", rng.range(0, 50)))?;
                clock[t] = start;
            }
            2 => {
                w.event(&format!("{{\"args\":{{\"documents\":{},\"jsEventListeners\":{},\"jsHeapSizeUsed\":{},\"nodes\":{}}},\"cat\":\"disabled-by-default-devtools.timeline\",\"name\":\"UpdateCounters\",\"ph\":\"C\",\"pid\":{pid},\"tid\":{tid},\"ts\":{start}}}", rng.range(1, 9), rng.range(10, 900), rng.range(1 << 20, 1 << 28), rng.range(100, 9000)))?;
                clock[t] = start;
            }
            3 => {
                // A flow from this thread to another's next task.
                let to = rng.range(0, threads.len() as u64) as usize;
                let (to_pid, to_tid) = threads[to];
                flow_id += 1;
                w.event(&format!("{{\"args\":{{}},\"cat\":\"toplevel.flow\",\"id\":\"0x{flow_id:x}\",\"name\":\"PostTask\",\"ph\":\"s\",\"pid\":{pid},\"tid\":{tid},\"ts\":{start}}}"))?;
                let arrive = clock[to].max(start) + rng.range(1, 50);
                w.event(&format!("{{\"args\":{{}},\"bp\":\"e\",\"cat\":\"toplevel.flow\",\"id\":\"0x{flow_id:x}\",\"name\":\"PostTask\",\"ph\":\"f\",\"pid\":{to_pid},\"tid\":{to_tid},\"ts\":{arrive}}}"))?;
                clock[t] = start;
            }
            4 | 5 if t % 3 == 1 => {
                // The compositor's begin/end pairs around nested work.
                w.event(&format!("{{\"args\":{{}},\"cat\":\"cc,benchmark\",\"name\":\"ProxyMain::BeginMainFrame\",\"ph\":\"B\",\"pid\":{pid},\"tid\":{tid},\"ts\":{start}}}"))?;
                let end = task_tree(&mut w, &mut rng, pid, tid, start + 3, 2)?;
                w.event(&format!("{{\"args\":{{}},\"cat\":\"cc,benchmark\",\"name\":\"ProxyMain::BeginMainFrame\",\"ph\":\"E\",\"pid\":{pid},\"tid\":{tid},\"ts\":{}}}", end + 2))?;
                clock[t] = end + 2;
            }
            _ => {
                let (name, cat) = TASKS[rng.range(0, TASKS.len() as u64) as usize];
                let mut children = Vec::new();
                let mut cursor = start + rng.range(1, 20);
                for _ in 0..rng.range(0, 4) {
                    let child_start = cursor;
                    cursor = task_tree(
                        &mut Collect(&mut children),
                        &mut rng,
                        pid,
                        tid,
                        child_start,
                        3,
                    )?;
                    cursor += rng.range(1, 30);
                }
                let end = cursor + rng.range(1, 20);
                w.event(&format!("{{\"args\":{{\"src_file\":\"../../base/task/sequence_manager/thread_controller_impl.cc\",\"src_func\":\"RunTask\"}},\"cat\":\"{cat}\",\"dur\":{},\"name\":\"{name}\",\"ph\":\"X\",\"pid\":{pid},\"tdur\":{},\"tid\":{tid},\"ts\":{start},\"tts\":{}}}", end - start, (end - start) * 9 / 10, start / 2))?;
                for child in children {
                    w.event(&child)?;
                }
                clock[t] = end;
            }
        }
    }
    w.out.write_all(b"],\n\"metadata\":{\"clock-domain\":\"LINUX_CLOCK_MONOTONIC\",\"product-version\":\"Chrome/131.0.6778.85\",\"trace-config\":\"\"}}\n")?;
    w.out.flush()?;
    Ok(w.written)
}

/// Where [`task_tree`] puts its events: the file, or a list written after
/// their parent.
trait Events {
    fn push(&mut self, event: String) -> io::Result<()>;
}

impl<W: Write> Events for Out<W> {
    fn push(&mut self, event: String) -> io::Result<()> {
        self.event(&event)
    }
}

struct Collect<'a>(&'a mut Vec<String>);

impl Events for Collect<'_> {
    fn push(&mut self, event: String) -> io::Result<()> {
        self.0.push(event);
        Ok(())
    }
}

/// One `X` slice starting at `start` with up to `depth` levels of nested
/// work under it; returns its end.
fn task_tree(
    out: &mut dyn Events,
    rng: &mut SeededRng,
    pid: u64,
    tid: u64,
    start: u64,
    depth: u32,
) -> io::Result<u64> {
    let (name, cat) = WORK[rng.range(0, WORK.len() as u64) as usize];
    let mut cursor = start + rng.range(1, 10);
    let mut children = Vec::new();
    if depth > 0 {
        for _ in 0..rng.range(0, 3) {
            cursor = task_tree(
                &mut Collect(&mut children),
                rng,
                pid,
                tid,
                cursor,
                depth - 1,
            )?;
            cursor += rng.range(1, 10);
        }
    }
    let end = cursor + rng.range(2, 200);
    let args = match name {
        "FunctionCall" => format!(
            "{{\"data\":{{\"columnNumber\":{},\"frame\":\"F8E0A3C1B2\",\"functionName\":\"handler{}\",\"lineNumber\":{},\"scriptId\":\"{}\",\"url\":\"https://example.com/static/app.{}.js\"}}}}",
            rng.range(1, 120),
            rng.range(0, 300),
            rng.range(1, 5000),
            rng.range(10, 99),
            rng.range(0, 20)
        ),
        "Layout" => format!(
            "{{\"beginData\":{{\"dirtyObjects\":{},\"frame\":\"F8E0A3C1B2\",\"partialLayout\":false,\"totalObjects\":{}}}}}",
            rng.range(1, 300),
            rng.range(300, 3000)
        ),
        _ => "{}".to_string(),
    };
    out.push(format!("{{\"args\":{args},\"cat\":\"{cat}\",\"dur\":{},\"name\":\"{name}\",\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"ts\":{start}}}", end - start))?;
    for child in children {
        out.push(child)?;
    }
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chromium_same_seed_same_bytes_valid_json_every_phase() {
        let spec = ChromiumSpec {
            seed: 3,
            events: 5_000,
            renderers: 2,
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let n = write_chromium(&spec, &mut a).unwrap();
        write_chromium(&spec, &mut b).unwrap();
        assert_eq!(a, b);
        let doc: serde_json::Value = serde_json::from_slice(&a).unwrap();
        let events = doc["traceEvents"].as_array().unwrap();
        assert_eq!(events.len() as u64, n);
        for ph in ["X", "B", "E", "b", "e", "I", "C", "s", "f", "M"] {
            assert!(events.iter().any(|e| e["ph"] == ph), "no {ph} event");
        }
        let mut c = Vec::new();
        write_chromium(&ChromiumSpec { seed: 4, ..spec }, &mut c).unwrap();
        assert_ne!(a, c);
    }
}

//! Pipe mode (`perf record -o -`) against file mode and the real tool:
//! the corpus call-chain file re-written as a pipe by `perf inject`, and a
//! live tracepoint capture checked against `perf script` of the same bytes.
//! Both need `perf` on the machine and are skipped (with a message) without.

use std::path::Path;

use super::{corpus, decode, perf_installed, seconds_text};
use crate::perf_data::model::{PerfDataOptions, PerfEvent, PerfSample};
use crate::perf_data::session::read_perf_pipe;

fn run_perf(args: &[&str], stdin: Option<&[u8]>) -> Option<Vec<u8>> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("perf")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let input = stdin.map(<[u8]>::to_vec);
    let mut pipe = child.stdin.take()?;
    let writer = std::thread::spawn(move || {
        if let Some(bytes) = input {
            let _ = pipe.write_all(&bytes);
        }
    });
    let out = child.wait_with_output().ok()?;
    let _ = writer.join();
    out.status.success().then_some(out.stdout)
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn pipe_mode_gives_what_file_mode_and_perf_give() {
    if !perf_installed() {
        eprintln!("perf is not installed: pipe-mode comparisons skipped");
        return;
    }
    let options = PerfDataOptions {
        resolve_symbols: false,
        kernel_symbols: false,
        decode_tracepoints: true,
    };
    let decode_pipe = |pipe: &[u8]| {
        let mut samples = Vec::new();
        let summary = read_perf_pipe(pipe, &options, |ev| {
            if let PerfEvent::Sample(s) = ev {
                samples.push(*s);
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(summary.pipe_mode && summary.complete, "{:?}", summary.notes);
        (samples, summary)
    };
    // The call-chain file re-written as a pipe by `perf inject`.
    let rel = "linux/perf_mixed_cpuclock_callchains.perf.data";
    let path = Path::new(env!("FLAMEOX_CORPUS_DIR")).join(rel);
    let path_text = path.to_string_lossy().into_owned();
    if let Some(pipe) = run_perf(&["inject", "-o", "-", "-i", &path_text], None) {
        let (file_samples, _) = decode(&corpus(rel), &options);
        let (pipe_samples, _) = decode_pipe(&pipe);
        assert_eq!(pipe_samples.len(), file_samples.len());
        for (p, f) in pipe_samples.iter().zip(&file_samples) {
            assert_eq!(
                (p.tid, p.pid, p.ts_ns, &p.event_name, &p.comm),
                (f.tid, f.pid, f.ts_ns, &f.event_name, &f.comm)
            );
            let modules = |s: &PerfSample| {
                s.callchain
                    .iter()
                    .map(|f| f.module.clone())
                    .collect::<Vec<_>>()
            };
            assert_eq!(modules(p), modules(f));
        }
    }
    // A live tracepoint capture in pipe mode (tracing data as a record),
    // against `perf script` of the same bytes. Skipped where recording is
    // not permitted.
    let Some(pipe) = run_perf(
        &[
            "record",
            "-e",
            "sched:sched_switch",
            "-o",
            "-",
            "--",
            "sleep",
            "0.05",
        ],
        None,
    ) else {
        eprintln!("perf record is not permitted here: live pipe capture skipped");
        return;
    };
    let script =
        run_perf(&["script", "-F", "tid,time,event", "-i", "-"], Some(&pipe)).unwrap_or_default();
    let (samples, summary) = decode_pipe(&pipe);
    assert!(summary.tracepoint_formats > 0);
    let lines: Vec<String> = String::from_utf8_lossy(&script)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), samples.len());
    for (line, s) in lines.iter().zip(&samples) {
        let t: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(t[0].parse::<i32>().ok(), s.tid, "{line}");
        assert_eq!(
            t[1].trim_end_matches(':'),
            seconds_text(s.ts_ns.unwrap_or(0)),
            "{line}"
        );
        assert_eq!(t[2].trim_end_matches(':'), "sched:sched_switch", "{line}");
        assert_eq!(
            s.kernel_event.as_ref().map(|k| k.name.as_str()),
            Some("sched_switch")
        );
    }
}

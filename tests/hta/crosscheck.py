"""Cross-checks `flameox analyze gpu-breakdown` / `gpu-summary` against
Holistic Trace Analysis (HTA) on the same Kineto traces.

Usage: python crosscheck.py <flameox-binary> <corpus-kineto-dir> [trace ...]

For each trace: flameox imports it in a scratch workspace and answers
`gpu-breakdown --json` and `gpu-summary --report kernels --json`; HTA (in a
child process, so its time and peak memory are its own) loads the same file
from a folder of its own and runs its temporal breakdown, idle time
breakdown, kernel breakdown and comm/comp overlap. The numbers are compared
within the tolerance below and printed as a table; any mismatch exits 1.

HTA's inputs are aligned with flameox's definitions, and every alignment is
a documented definitional difference (docs/recipes.md, "GPU breakdown"):
- HTA_DISABLE_NS_ROUNDING=1: HTA otherwise rounds float-µs events inward
  to whole µs (ceil start, floor end);
- HTA's trimming of device work launched in or after the last profiler step
  is switched off (flameox analyzes everything recorded); the count it would
  have removed is printed;
- events that carry a `stream` arg but are not kernels, memcpy or memset
  (`cuda_sync`, `gpu_user_annotation`, even a `cpu_op` with `stream: 0`)
  are dropped from HTA's frame: HTA counts every event with a stream as a
  GPU kernel, flameox decides by category.

Tolerance: flameox holds integer ns (each timestamp rounded once from the
decimal µs text), HTA float µs. A sum over n operations may differ by n ns
(0.5 ns at each end), plus 1e-9 relative float error; HTA's idle table is
rounded to 0.01 µs (+5 ns) and its overlap percentage to 0.01 (+0.005
points). Nothing else is allowed to differ.
"""

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_TRACES = [
    "hta_alexnet_a100.pt.trace.json.gz",
    "hta_nccl_a100_rank0of2.json.gz",
    "hta_v100_nccl_rank1of2_216k_events.json.gz",
    "param_dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json",
    "tbplugin_resnet50_v100_worker0.pt.trace.json.gz",
]
KERNEL_WAIT_US = 30  # HTA's consecutive_kernel_delay default (in the trace's µs)
# What flameox counts as device work; HTA counts any event with a stream arg.
DEVICE_WORK_CATEGORIES = ("kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset")


# ---------------------------------------------------------------- HTA side

def hta_worker(trace: str) -> None:
    """Runs HTA on one trace and prints its numbers as JSON (child process)."""
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    import logging

    logging.disable(logging.WARNING)
    from hta.common.trace import Trace
    from hta.trace_analysis import TraceAnalysis

    stock_trim = Trace._filter_irrelevant_gpu_kernels
    Trace._filter_irrelevant_gpu_kernels = lambda self, *args, **kwargs: None
    folder = tempfile.mkdtemp(prefix="flameox-hta-")
    name = Path(trace).name
    os.symlink(os.path.abspath(trace), os.path.join(folder, name))
    started = time.perf_counter()
    ta = TraceAnalysis(trace_dir=folder)
    rank = ta.t.get_ranks()[0]
    sym = ta.t.symbol_table.get_sym_id_map()
    df = ta.t.traces[rank]
    work = [sym[c] for c in DEVICE_WORK_CATEGORIES if c in sym]
    dropped = df["stream"].ne(-1) & ~df["cat"].isin(work)
    names = ta.t.symbol_table.get_sym_table()
    aligned_away = {names[c]: int(n) for c, n in df[dropped]["cat"].value_counts().items()}
    ta.t.traces[rank] = df[~dropped]
    temporal = ta.get_temporal_breakdown(visualize=False).iloc[0]
    idle, _ = ta.get_idle_time_breakdown(
        ranks=[rank], visualize=False, consecutive_kernel_delay=KERNEL_WAIT_US
    )
    _, kernels = ta.get_gpu_kernel_breakdown(
        visualize=False, num_kernels=10**9, duration_ratio=1.0, include_memory_kernels=True
    )
    overlap = ta.get_comm_comp_overlap(visualize=False).iloc[0]
    elapsed = time.perf_counter() - started
    before = int(ta.t.traces[rank]["stream"].ge(0).sum())
    stock_trim(ta.t, False)
    trimmed = before - int(ta.t.traces[rank]["stream"].ge(0).sum())
    streams = {}
    for row in idle.itertuples():
        streams.setdefault(str(int(row.stream)), {})[row.idle_category] = float(row.idle_time)
    out = {
        "rank": int(rank),
        "seconds": elapsed,
        "aligned_away": aligned_away,
        "stock_trim_would_drop": trimmed,
        "temporal": {
            "idle": float(temporal["idle_time(us)"]),
            "compute": float(temporal["compute_time(us)"]),
            "non_compute": float(temporal["non_compute_time(us)"]),
            "span": float(temporal["kernel_time(us)"]),
        },
        "idle": streams,
        "kernels": {
            r["name"]: {
                "type": r["kernel_type"].lower(),
                "sum": float(r["sum (us)"]),
                "mean": float(r["mean (us)"]),
            }
            for _, r in kernels.iterrows()
        },
        "overlap_pct": None
        if math.isnan(float(overlap["comp_comm_overlap_pctg"]))
        else float(overlap["comp_comm_overlap_pctg"]),
    }
    print(json.dumps(out))


def run_measured(cmd, cwd=None, env=None):
    """Runs cmd; returns (stdout, seconds, peak RSS in MiB)."""
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        out.seek(0)
        text = out.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"FAIL: {' '.join(map(str, cmd))} exited {status}: {err}{text}")
    return text, seconds, usage.ru_maxrss / 1024


# ------------------------------------------------------------- comparison

class Table:
    def __init__(self):
        self.rows = []
        self.notes = []
        self.failures = 0

    def check(self, what, flameox_us, hta_us, tolerance_us):
        diff = abs(flameox_us - hta_us)
        ok = diff <= tolerance_us
        self.failures += not ok
        self.rows.append((what, f"{flameox_us:.3f}", f"{hta_us:.3f}", f"{diff:.3f}",
                          f"{tolerance_us:.3f}", "ok" if ok else "MISMATCH"))

    def note(self, what, text):
        self.notes.append(f"  {what}: {text}")

    def fail(self, what, text):
        self.failures += 1
        self.notes.append(f"  MISMATCH {what}: {text}")

    def print(self):
        header = ("metric", "flameox", "HTA", "|diff|", "tolerance", "")
        widths = [max(len(str(r[i])) for r in [header, *self.rows]) for i in range(6)]
        for r in [header, *self.rows]:
            print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
        print("\n".join(self.notes))


def tolerance(ops: int, value_us: float, rounding_us: float = 0.0) -> float:
    """n ns for n operations (integer-ns rounding), float error, HTA rounding."""
    return ops * 0.001 + 1e-9 * abs(value_us) + rounding_us


def compare(trace: Path, flameox: str) -> int:
    work = tempfile.mkdtemp(prefix="flameox-crosscheck-")
    fx = lambda *args: run_measured([flameox, *args, "--json"], cwd=work)  # noqa: E731
    fx("init")
    imported, t_import, m_import = fx("import", str(trace))
    run = json.loads(imported)["run_id"]
    breakdown_text, t_breakdown, m_breakdown = fx("analyze", "gpu-breakdown", run, "--limit", "1000", "--full-names")
    summary_text, t_summary, m_summary = fx(
        "analyze", "gpu-summary", run, "--report", "kernels", "--limit", "1000")
    breakdown, summary = json.loads(breakdown_text), json.loads(summary_text)
    hta_text, t_hta, m_hta = run_measured(
        [sys.executable, __file__, "--hta-worker", str(trace)], cwd="/tmp")
    hta = json.loads(hta_text)

    table = Table()
    table.note("events with a stream HTA would count as kernels (dropped)",
               json.dumps(hta["aligned_away"]) if hta["aligned_away"] else "none")
    table.note("HTA stock trim", f"would drop {hta['stock_trim_would_drop']} device events")
    if len(breakdown["temporal"]) != 1:
        table.fail("temporal", "HTA merges the devices of a rank; this trace has several")
    else:
        t = breakdown["temporal"][0]
        n = t["operations"]
        us = lambda ns: ns / 1000.0  # noqa: E731
        h = hta["temporal"]
        for what, mine, theirs in [
            ("temporal span", us(t["span_ns"]), h["span"]),
            ("temporal idle", us(t["idle_ns"]), h["idle"]),
            ("temporal compute", us(t["compute_ns"]), h["compute"]),
            ("temporal comm+memory", us(t["communication_ns"] + t["memory_ns"]), h["non_compute"]),
        ]:
            table.check(what, mine, theirs, tolerance(n, theirs))
        o = breakdown["overlap"][0]
        # Answers leave null fields out: no communication, no overlap_pct.
        if o.get("overlap_pct") is None or hta["overlap_pct"] is None:
            table.note("overlap %", f"flameox {o.get('overlap_pct')}, HTA {hta['overlap_pct']}")
        else:
            table.check("overlap %", o["overlap_pct"], hta["overlap_pct"], 0.005 + 1e-6)
    streams = {str(s.get("stream")): s for s in breakdown["idle"]}
    if set(streams) != set(hta["idle"]):
        table.fail("idle streams", f"flameox {sorted(streams)} vs HTA {sorted(hta['idle'])}")
    for stream, s in sorted(streams.items()):
        theirs = hta["idle"].get(stream, {})
        for part in ("host_wait", "kernel_wait", "other"):
            mine = s[f"{part}_ns"] / 1000.0
            table.check(f"idle s{stream} {part}", mine, theirs.get(part, 0.0),
                        tolerance(s["operations"], mine, 0.005))
    totals = {r["name"]: (r["total"], r["count"]) for r in summary["rows"]}
    types = {}
    for r in breakdown["kernels"][0]["rows"]:
        types[r["name"]] = r["kernel_type"]
        if r["kernel_type"] == "memory":
            totals[r["name"]] = (r["total_ns"], r["count"])
    if breakdown["kernels"][0]["truncated"] or summary["truncated"]:
        table.fail("kernels", "more than 1000 names")
    if set(totals) != set(hta["kernels"]):
        only_fx = sorted(set(totals) - set(hta["kernels"]))[:3]
        only_hta = sorted(set(hta["kernels"]) - set(totals))[:3]
        table.fail("kernel names", f"only flameox {only_fx}, only HTA {only_hta}")
    checked = worst = 0
    for name, (total_ns, count) in totals.items():
        theirs = hta["kernels"].get(name)
        if theirs is None:
            continue
        if theirs["type"] != types.get(name):
            table.fail(f"type of {name[:40]}", f"{types.get(name)} vs HTA {theirs['type']}")
        mine = total_ns / 1000.0
        tol = tolerance(count, mine)
        if abs(mine - theirs["sum"]) > tol or (
            theirs["mean"] > 0 and round(theirs["sum"] / theirs["mean"]) != count
        ):
            table.check(f"kernel {name[:40]}", mine, theirs["sum"], tol)
        checked += 1
        worst = max(worst, abs(mine - theirs["sum"]))
    table.note("kernel totals per name", f"{checked} names equal (max |diff| {worst:.3f} µs)")
    fx_seconds = t_import + t_breakdown + t_summary
    fx_mib = max(m_import, m_breakdown, m_summary)
    table.note("time import+breakdown+summary",
               f"flameox {fx_seconds:.2f} s / HTA {t_hta:.2f} s (its load+analyses {hta['seconds']:.2f} s)")
    table.note("peak RSS", f"flameox {fx_mib:.0f} MiB / HTA {m_hta:.0f} MiB")
    print(f"\n== {trace.name} (rank {hta['rank']})")
    table.print()
    return table.failures


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--hta-worker":
        hta_worker(sys.argv[2])
        return
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    flameox, corpus = os.path.abspath(sys.argv[1]), Path(sys.argv[2]).resolve()
    traces = sys.argv[3:] or DEFAULT_TRACES
    failures = sum(compare(corpus / t, flameox) for t in traces)
    print(f"\nkernel wait threshold {KERNEL_WAIT_US} µs (HTA default); "
          f"{failures} mismatch(es) beyond tolerance")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""flameox vs DuckDB on the same Chrome/Kineto JSON trace: top-100 slices by self time.

For each trace and each of RUNS rounds, both tools start cold in fresh
processes:
- flameox: a fresh workspace, `init`, `import TRACE`, `analyze hotspots
  RUN --limit 100` (end to end = the sum of the three processes' wall
  times), then the hotspots query REPEATS more times, each a fresh CLI
  process (repeat latency = their median);
- DuckDB: one process of duckdb_hotspots.py (read_json of traceEvents into
  a table, the self-time query, then REPEATS repeats on the loaded table;
  end to end = the process's wall time minus the repeats, so interpreter
  start and `import duckdb` count, as flameox's process starts do).
Peak RSS comes from /usr/bin/time around every process (flameox: the
largest of its steps). Each round also checks that DuckDB's top 10 (name,
category, self ns) equals flameox's and prints any mismatch. The summary
line per trace is the median over rounds; the 1-minute load average before
each round is printed. Exit status 1 when any round mismatched. See
docs/performance.md.

usage: duckdb_peer.py FLAMEOX_BIN TRACE [TRACE ...] [--python PY | --venv DIR] [--runs N] [--repeats N]
(default: --venv /var/tmp/flameox-duckdb-venv, made with `pip install duckdb==2.0.1` when missing; 3 runs; 5 repeats)
"""

import argparse
import json
import os
import sys

from peer_common import (
    ensure_venv,
    flameox_import,
    flameox_json,
    fresh_workspace,
    load_average,
    median,
    ratio,
    remove_workspace,
    resolved,
    timed,
)

DUCKDB_CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "duckdb_hotspots.py")


def flameox(bin_path, trace, repeats):
    """(end to end s, import s, median repeat s, peak RSS KiB, top rows as (name, cat, self))."""
    work = fresh_workspace("flameox-duckdb-peer-")
    try:
        init_wall, import_wall, peak, run = flameox_import(bin_path, trace, work)
        query = ["analyze", "hotspots", run, "--limit", "100"]
        first_wall, rss, result = flameox_json(bin_path, work, query)
        peak = max(peak, rss)
        repeat_walls = []
        for _ in range(repeats):
            wall, rss, _ = flameox_json(bin_path, work, query)
            repeat_walls.append(wall)
            peak = max(peak, rss)
        rows = [(r["function"], r["module"], r["self_value"]) for r in result["rows"]]
        return init_wall + import_wall + first_wall, import_wall, median(repeat_walls), peak, rows
    finally:
        remove_workspace(work)


def duckdb(python, trace, repeats):
    """(end to end s, load s, median repeat s, peak RSS KiB, top rows, version)."""
    wall, rss, out = timed([python, DUCKDB_CHILD, trace, str(repeats)])
    result = json.loads(out)
    rows = [(name, cat, self_ns) for name, cat, self_ns, _ in result["rows"]]
    end_to_end = wall - sum(result["repeat_s"])
    return end_to_end, result["load_s"], median(result["repeat_s"]), rss, rows, result["duckdb"]


def top10_mismatches(flameox_rows, duckdb_rows):
    """Rows of DuckDB's top 10 whose self time differs from flameox's for the same frame.

    Ranks may swap between equal values; a frame missing from flameox's top
    100 or a different value is a mismatch, and so is a different sequence of
    top-10 values.
    """
    by_frame = {(name, cat): value for name, cat, value in flameox_rows}
    problems = []
    for name, cat, value in duckdb_rows[:10]:
        theirs = by_frame.get((name, cat))
        if theirs != value:
            problems.append(f"{cat}/{name[:60]}: duckdb {value} ns, flameox {theirs}")
    ours = [v for _, _, v in duckdb_rows[:10]]
    theirs = [v for _, _, v in flameox_rows[:10]]
    if ours != theirs:
        problems.append(f"top-10 self values differ: duckdb {ours} vs flameox {theirs}")
    return problems


def main():
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("flameox")
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--python", help="a python that can `import duckdb`")
    parser.add_argument("--venv", default="/var/tmp/flameox-duckdb-venv")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    args.flameox = resolved(args.flameox)
    args.traces = [resolved(p) for p in args.traces]
    python = args.python or ensure_venv(args.venv, ["duckdb==2.0.1"])
    header = (
        f"{'trace':<44} {'MB':>7} {'load':>5} {'flameox s':>9} {'DuckDB s':>8} {'×faster':>7} "
        f"{'fx rep ms':>9} {'dd rep ms':>9} {'×faster':>7} {'fx MiB':>7} {'dd MiB':>7} {'×leaner':>7}"
    )
    print(header, flush=True)
    mismatched = False
    for trace in args.traces:
        size = os.path.getsize(trace) / 1e6
        rounds = []
        for _ in range(args.runs):
            load = load_average()
            f_e2e, f_import, f_rep, f_rss, f_rows = flameox(args.flameox, trace, args.repeats)
            d_e2e, d_load, d_rep, d_rss, d_rows, version = duckdb(python, trace, args.repeats)
            rounds.append((load, f_e2e, d_e2e, f_rep, d_rep, f_rss, d_rss))
            print(
                f"  round: load {load:.2f}; flameox import {f_import:.2f} s, e2e {f_e2e:.2f} s, "
                f"repeat {f_rep * 1000:.0f} ms, {f_rss / 1024:.0f} MiB; DuckDB {version} load {d_load:.2f} s, "
                f"e2e {d_e2e:.2f} s, repeat {d_rep * 1000:.0f} ms, {d_rss / 1024:.0f} MiB",
                flush=True,
            )
            for problem in top10_mismatches(f_rows, d_rows):
                mismatched = True
                print(f"  MISMATCH {os.path.basename(trace)}: {problem}", flush=True)
        load, f_e2e, d_e2e, f_rep, d_rep, f_rss, d_rss = (median(col) for col in zip(*rounds))
        print(
            f"{os.path.basename(trace)[:44]:<44} {size:>7.1f} {load:>5.2f} {f_e2e:>9.2f} {d_e2e:>8.2f} "
            f"{ratio(d_e2e, f_e2e):>7.1f} {f_rep * 1000:>9.0f} {d_rep * 1000:>9.0f} {ratio(d_rep, f_rep):>7.1f} "
            f"{f_rss / 1024:>7.0f} {d_rss / 1024:>7.0f} {ratio(d_rss, f_rss):>7.1f}",
            flush=True,
        )
    if mismatched:
        sys.exit("the two tools' answers differ (MISMATCH lines above)")


if __name__ == "__main__":
    main()

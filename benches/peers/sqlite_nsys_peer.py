#!/usr/bin/env python3
"""flameox vs plain SQLite on Nsight Systems SQLite exports.

For each export and each of RUNS rounds, both start cold in fresh processes
and answer the same two questions:
- a kernel summary: per kernel name (`demangledName`, as flameox names
  kernels) count, total, avg, min, max and median duration;
- per-stream idle gaps: per (device, stream) kernels, busy time, and the
  gaps between kernels — start minus the running maximum of earlier ends,
  when positive — counted, summed and maxed.
flameox: a fresh workspace, `init`, `import FILE`, `analyze gpu-summary RUN
--report kernels --limit 1000` (every name, as SQLite answers),
`analyze accelerator-launches RUN` (end to end = the sum
of the four processes' wall times). SQLite: one process of this script with
`--queries FILE` (Python's stdlib sqlite3, two SQL statements, window
functions for the median and the running maximum). Peak RSS from
/usr/bin/time around every process (flameox: its largest step). Each round
checks that both sides give the same numbers (SQLite's as reference) and
prints any mismatch. Also reported: flameox's import rate in activity rows
per second (rows of the CUPTI and NVTX tables it reads / import wall time).
Medians over rounds; the 1-minute load average before each round is printed;
exit status 1 when any round mismatched.
See docs/performance.md.

usage: sqlite_nsys_peer.py FLAMEOX_BIN EXPORT.sqlite [EXPORT.sqlite ...] [--runs N]
"""

import argparse
import json
import os
import sqlite3
import sys

from peer_common import (
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

# The tables flameox's Nsight extractor reads rows from (docs/extractors.md).
ACTIVITY_TABLES = [
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_DRIVER",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
    "NVTX_EVENTS",
]

KERNEL_SUMMARY_SQL = """
WITH k AS (
  SELECT COALESCE(s.value, '') AS name, k.end - k.start AS d
  FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds s ON s.id = k.demangledName
  WHERE k.end IS NOT NULL AND k.end >= k.start
), ranked AS (
  SELECT name, d, row_number() OVER (PARTITION BY name ORDER BY d) AS rn,
         count(*) OVER (PARTITION BY name) AS n
  FROM k
)
SELECT name, count(*) AS count, sum(d) AS total, avg(d) AS avg, min(d) AS min, max(d) AS max,
       avg(CASE WHEN rn IN ((n + 1) / 2, (n + 2) / 2) THEN d END) AS median
FROM ranked GROUP BY name ORDER BY total DESC, name
"""

STREAM_GAPS_SQL = """
WITH k AS (
  SELECT deviceId AS device, streamId AS stream, start, end,
         max(end) OVER (PARTITION BY deviceId, streamId ORDER BY start, rowid
                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
  FROM CUPTI_ACTIVITY_KIND_KERNEL
  WHERE end IS NOT NULL AND end >= start
)
SELECT device, stream, count(*) AS kernels, sum(end - start) AS busy_ns,
       sum(start > prev_end) AS gaps,
       sum(CASE WHEN start > prev_end THEN start - prev_end ELSE 0 END) AS gap_total_ns,
       max(CASE WHEN start > prev_end THEN start - prev_end ELSE 0 END) AS gap_max_ns
FROM k GROUP BY device, stream ORDER BY device, stream
"""


def sqlite_queries(path):
    """The SQLite side (run in a child process): both answers as one JSON document."""
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    con.row_factory = sqlite3.Row
    kernels = [dict(r) for r in con.execute(KERNEL_SUMMARY_SQL)]
    streams = [dict(r) for r in con.execute(STREAM_GAPS_SQL)]
    json.dump({"kernels": kernels, "streams": streams}, sys.stdout)


def activity_rows(path):
    """Rows of the activity tables present in the export (what flameox's import reads)."""
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    present = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return sum(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ACTIVITY_TABLES if t in present)


def flameox(bin_path, export):
    """(end to end s, import s, peak RSS KiB, gpu-summary JSON, accelerator-launches JSON)."""
    work = fresh_workspace("flameox-nsys-peer-")
    try:
        init_wall, import_wall, peak, run = flameox_import(bin_path, export, work)
        total = init_wall + import_wall
        answers = []
        summary = ["analyze", "gpu-summary", run, "--report", "kernels", "--limit", "1000"]
        for args in (summary, ["analyze", "accelerator-launches", run]):
            wall, rss, result = flameox_json(bin_path, work, args)
            total, peak = total + wall, max(peak, rss)
            answers.append(result)
        return total, import_wall, peak, answers[0], answers[1]
    finally:
        remove_workspace(work)


def mismatches(reference, summary, launches):
    """Where flameox's kernel summary or stream gaps differ from SQLite's."""
    problems = []
    theirs = {r["name"]: r for r in summary["rows"]}
    for row in reference["kernels"]:
        other = theirs.get(row["name"])
        fields = ("count", "total", "min", "max", "median")
        if other is None or any(float(other[f]) != float(row[f]) for f in fields):
            got = None if other is None else {f: other[f] for f in fields}
            problems.append(f"kernel {row['name'][:60]}: sqlite {[row[f] for f in fields]}, flameox {got}")
    if summary["total"] != len(reference["kernels"]):
        problems.append(f"kernel names: sqlite {len(reference['kernels'])}, flameox {summary['total']}")
    streams = {(s["device"], s["stream"]): s for s in launches["streams"]}
    for row in reference["streams"]:
        other = streams.get((row["device"], row["stream"]))
        fields = ("kernels", "busy_ns", "gaps", "gap_total_ns", "gap_max_ns")
        if other is None or any(other[f] != row[f] for f in fields):
            got = None if other is None else [other[f] for f in fields]
            problems.append(f"stream {row['device']}/{row['stream']}: sqlite {[row[f] for f in fields]}, flameox {got}")
    return problems


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--queries":
        sqlite_queries(sys.argv[2])
        return
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("flameox")
    parser.add_argument("exports", nargs="+")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    args.flameox = resolved(args.flameox)
    args.exports = [resolved(p) for p in args.exports]
    print(
        f"{'export':<40} {'MB':>6} {'rows':>9} {'load':>5} {'flameox s':>9} {'SQLite s':>8} {'×faster':>7} "
        f"{'fx MiB':>7} {'sq MiB':>7} {'×leaner':>7} {'import s':>8} {'rows/s':>9}",
        flush=True,
    )
    mismatched = False
    for export in args.exports:
        size = os.path.getsize(export) / 1e6
        rows = activity_rows(export)
        rounds = []
        for _ in range(args.runs):
            load = load_average()
            f_e2e, f_import, f_rss, summary, launches = flameox(args.flameox, export)
            s_wall, s_rss, out = timed([sys.executable, os.path.abspath(__file__), "--queries", export])
            rounds.append((load, f_e2e, s_wall, f_rss, s_rss, f_import))
            print(
                f"  round: load {load:.2f}; flameox import {f_import:.2f} s, e2e {f_e2e:.2f} s, {f_rss / 1024:.0f} MiB; "
                f"SQLite {s_wall:.2f} s, {s_rss / 1024:.0f} MiB",
                flush=True,
            )
            for problem in mismatches(json.loads(out), summary, launches):
                mismatched = True
                print(f"  MISMATCH {os.path.basename(export)}: {problem}", flush=True)
        load, f_e2e, s_wall, f_rss, s_rss, f_import = (median(col) for col in zip(*rounds))
        print(
            f"{os.path.basename(export)[:40]:<40} {size:>6.1f} {rows:>9} {load:>5.2f} {f_e2e:>9.2f} {s_wall:>8.2f} "
            f"{ratio(s_wall, f_e2e):>7.1f} {f_rss / 1024:>7.0f} {s_rss / 1024:>7.0f} {ratio(s_rss, f_rss):>7.1f} "
            f"{f_import:>8.2f} {ratio(rows, f_import):>9.0f}",
            flush=True,
        )
    if mismatched:
        sys.exit("the two tools' answers differ (MISMATCH lines above)")


if __name__ == "__main__":
    main()

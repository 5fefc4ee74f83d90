#!/usr/bin/env python3
"""The import profile: for each input shape, wall MB/s, events/s, peak RSS
and CPU nanoseconds per input byte split by phase (decode, nest, spill,
write, hash; `other` is what no phase claimed: start-up, publication).

Run through `benches/import_profile.sh` (which builds the release binaries);
`docs/performance.md` ("CPU per byte") keeps the table current.
Each import runs in a fresh workspace after `sync` and a pause; the best
of `--rounds` by wall is reported, with the load average.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

MIB = 1 << 20

# name, generator arguments (full size), generator arguments (--quick), targets
SHAPES = [
    ("kineto", ["kineto", "--seed", "3", "--events", "1200000", "--streams", "8", "--ops-per-step", "2000"],
     ["kineto", "--seed", "3", "--events", "120000", "--streams", "8", "--ops-per-step", "2000"], "json"),
    ("kineto_rich_args", ["kineto", "--seed", "3", "--events", "800000", "--streams", "8", "--ops-per-step", "2000", "--rich-args"],
     ["kineto", "--seed", "3", "--events", "80000", "--streams", "8", "--ops-per-step", "2000", "--rich-args"], "json"),
    ("chromium", ["chromium", "--seed", "3", "--events", "1200000", "--renderers", "4"],
     ["chromium", "--seed", "3", "--events", "120000", "--renderers", "4"], "json"),
    ("viztracer", ["viztracer", "--seed", "3", "--events", "1800000", "--threads", "3"],
     ["viztracer", "--seed", "3", "--events", "180000", "--threads", "3"], "json"),
    ("perfetto", ["perfetto", "--seed", "3", "--bytes", "150000000"],
     ["perfetto", "--seed", "3", "--bytes", "15000000"], "perfetto"),
    ("nsys", ["nsys", "--seed", "1", "--events", "2000000"],
     ["nsys", "--seed", "1", "--events", "200000"], "nsys"),
]

SUFFIX = {"json": ".json", "perfetto": ".pftrace", "nsys": ".sqlite"}
PHASES = ["decode", "nest", "spill", "write", "hash"]


def target_met(family, mb_s, ns_byte, rows_s):
    if family == "json":
        return mb_s >= 200 and ns_byte <= 8
    if family == "perfetto":
        return mb_s >= 150 and ns_byte <= 10
    return rows_s >= 1.5e6  # activity rows per second


def target_text(family):
    return {"json": ">= 200 MB/s, <= 8 ns/B", "perfetto": ">= 150 MB/s, <= 10 ns/B",
            "nsys": ">= 1.5 M rows/s"}[family]


def measure(flameox, path, rounds):
    """Best of `rounds` by wall; CPU and RSS read per child with wait4."""
    best = None
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="flameox-import-profile-") as ws:
            subprocess.run([flameox, "init"], cwd=ws, check=True, stdout=subprocess.DEVNULL)
            subprocess.run(["sync"], check=False)
            time.sleep(1.0)
            phases = os.path.join(ws, "phase_cpu.json")
            env = dict(os.environ, FLAMEOX_PHASE_CPU=phases)
            out_path = os.path.join(ws, "import.json")
            err_path = os.path.join(ws, "import.err")
            # Files, not pipes: a child blocked on a full pipe would never
            # end, and wait4 reads its CPU and peak RSS alone.
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                start = time.monotonic()
                child = subprocess.Popen([flameox, "--json", "import", path], cwd=ws, env=env,
                                         stdout=out, stderr=err)
                _, status, usage = os.wait4(child.pid, 0)
                wall = time.monotonic() - start
            if status != 0:
                with open(err_path, errors="replace") as f:
                    sys.exit(f"import of {path} failed ({status}): {f.read()[-2000:]}")
            with open(out_path) as f:
                result = json.load(f)
            with open(phases) as f:
                phase_ns = json.load(f)
            cpu_ns = (usage.ru_utime + usage.ru_stime) * 1e9
            run = {"wall": wall, "cpu_ns": cpu_ns, "rss_kib": usage.ru_maxrss,
                   "result": result, "phases": phase_ns}
            if best is None or wall < best["wall"]:
                best = run
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flameox", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--dir", default="/var/tmp/flameox-import-profile")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="inputs a tenth of the size")
    ap.add_argument("--only", action="append", help="shape name (repeatable)")
    ap.add_argument("--json", help="also write the measurements here")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    rows = []
    load = os.getloadavg()[0]
    for name, full, quick, family in SHAPES:
        if a.only and name not in a.only:
            continue
        args = quick if a.quick else full
        path = os.path.join(a.dir, f"{name}{'-quick' if a.quick else ''}{SUFFIX[family]}")
        if not os.path.exists(path):
            print(f"generating {name}: flameox-gen {' '.join(args)}", file=sys.stderr)
            subprocess.run([a.gen, *args, "--out", path + ".tmp"], check=True,
                           stdout=subprocess.DEVNULL)
            os.replace(path + ".tmp", path)
        size = os.path.getsize(path)
        print(f"importing {name} ({size / 1e6:.1f} MB), best of {a.rounds}", file=sys.stderr)
        m = measure(a.flameox, path, a.rounds)
        r = m["result"]["rows"]
        events = r.get("trace_events", 0) + r.get("counters", 0) + r.get("samples", 0)
        phases = {p: m["phases"].get(p, 0) for p in PHASES}
        phases["other"] = max(0.0, m["cpu_ns"] - sum(phases.values()))
        mb_s = size / 1e6 / m["wall"]
        ns_byte = m["cpu_ns"] / size
        rows_s = events / m["wall"]
        # Nsight's target counts activity rows: one `trace_events` row each.
        target_rate = r.get("trace_events", 0) / m["wall"] if family == "nsys" else rows_s
        limit_mib = 256 + 0.1 * size / MIB
        rows.append({
            "shape": name, "bytes": size, "events": events, "wall_s": m["wall"],
            "mb_per_s": mb_s, "events_per_s": rows_s, "cpu_ns_per_byte": ns_byte,
            "phase_cpu_ns_per_byte": {p: v / size for p, v in phases.items()},
            "peak_rss_mib": m["rss_kib"] / 1024, "rss_limit_mib": limit_mib,
            "target": target_text(family), "target_met": target_met(family, mb_s, ns_byte, target_rate),
            "rss_met": m["rss_kib"] / 1024 <= limit_mib,
        })
    print(f"load average at start {load:.2f}; best of {a.rounds}; CPU ns per input byte by phase")
    head = ["shape", "MB", "events", "wall s", "MB/s", "events/s", "CPU ns/B"] + \
        [f"{p}" for p in PHASES + ["other"]] + ["peak MiB", "limit MiB", "target", "met"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for x in rows:
        ph = x["phase_cpu_ns_per_byte"]
        cells = [x["shape"], f"{x['bytes'] / 1e6:.1f}", f"{x['events']:,}", f"{x['wall_s']:.2f}",
                 f"{x['mb_per_s']:.0f}", f"{x['events_per_s'] / 1e6:.2f} M", f"{x['cpu_ns_per_byte']:.1f}"] + \
            [f"{ph[p]:.1f}" for p in PHASES + ["other"]] + \
            [f"{x['peak_rss_mib']:.0f}", f"{x['rss_limit_mib']:.0f}", x["target"],
             ("yes" if x["target_met"] else "no") + ("" if x["rss_met"] else ", RSS over")]
        print("| " + " | ".join(cells) + " |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"load_average": load, "rounds": a.rounds, "shapes": rows}, f, indent=2)


if __name__ == "__main__":
    main()

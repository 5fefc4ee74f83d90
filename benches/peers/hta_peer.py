#!/usr/bin/env python3
"""flameox vs Holistic Trace Analysis on the same Kineto traces, end to end.

For each trace, both tools start cold in a fresh process and answer the
same questions: the kernel breakdown, the temporal breakdown and the idle
time per stream. flameox: `init`, `import`, then `analyze gpu-summary
--report kernels` and `analyze accelerator-launches` (and `analyze
gpu-breakdown` when the binary has it). HTA: `TraceAnalysis(trace_dir)`,
`get_gpu_kernel_breakdown`, `get_temporal_breakdown`,
`get_idle_time_breakdown`. Wall time and peak RSS come from
`/usr/bin/time` around each process (flameox: the sum of its steps' wall
times and the largest step RSS). Run on demand; see docs/performance.md.

usage: hta_peer.py FLAMEOX_BIN HTA_PYTHON TRACE [TRACE ...]
"""

import os
import re
import subprocess
import sys

from peer_common import fresh_workspace, flameox_import, remove_workspace, resolved, timed

HTA_SCRIPT = r"""
import sys
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
rank = a.t.get_ranks()[0]
a.get_gpu_kernel_breakdown(visualize=False)
a.get_temporal_breakdown(visualize=False)
a.get_idle_time_breakdown(ranks=[rank], visualize=False)
"""


def flameox(bin_path, trace):
    work = fresh_workspace("flameox-peer-")
    try:
        init_wall, import_wall, peak, run = flameox_import(bin_path, trace, work)
        total = init_wall + import_wall
        analyses = [
            ["analyze", "gpu-summary", run, "--report", "kernels"],
            ["analyze", "accelerator-launches", run],
        ]
        help_text = subprocess.run([bin_path, "analyze", "--help"], capture_output=True, text=True).stdout
        if re.search(r"\bgpu-breakdown\b", help_text):
            analyses.append(["analyze", "gpu-breakdown", run])
        for a in analyses:
            w, r, _ = timed([bin_path, "--json"] + a, cwd=work)
            total, peak = total + w, max(peak, r)
        return total, peak
    finally:
        remove_workspace(work)


def hta(python, trace):
    work = fresh_workspace("hta-peer-")
    try:
        os.symlink(trace, os.path.join(work, os.path.basename(trace)))
        script = os.path.join(work, "hta_run.py")
        with open(script, "w") as f:
            f.write(HTA_SCRIPT)
        w, r, _ = timed([python, script, work])
        return w, r
    finally:
        remove_workspace(work)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    bin_path, python = resolved(sys.argv[1]), resolved(sys.argv[2])
    traces = [resolved(t) for t in sys.argv[3:]]
    print(f"{'trace':<48} {'MB':>7} {'flameox s':>9} {'HTA s':>8} {'×faster':>7} {'flameox MiB':>11} {'HTA MiB':>8} {'×leaner':>7}")
    for trace in traces:
        size = os.path.getsize(trace) / 1e6
        fw, fr = flameox(bin_path, trace)
        hw, hr = hta(python, trace)
        print(
            f"{os.path.basename(trace)[:48]:<48} {size:>7.1f} {fw:>9.2f} {hw:>8.2f} {hw / fw:>7.1f} "
            f"{fr / 1024:>11.0f} {hr / 1024:>8.0f} {hr / fr:>7.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()

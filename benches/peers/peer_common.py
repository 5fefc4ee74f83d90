"""Helpers shared by the peer comparison scripts in this folder.

Each peer script times flameox and another tool on the same input, each in
fresh child processes: wall time and peak RSS come from `/usr/bin/time`
around every process, flameox's import always starts from a fresh
workspace, and the peer's Python packages live in a venv the script makes
(or is given). Keeping these steps here means every script measures the
same way.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def timed(argv, cwd=None):
    """Runs argv under /usr/bin/time; returns (wall s, peak RSS KiB, stdout)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        p = subprocess.run(
            ["/usr/bin/time", "-o", t.name, "-f", "%e %M"] + argv,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        if p.returncode != 0:
            sys.exit(f"failed ({p.returncode}): {' '.join(argv)}\n{p.stderr[-2000:]}")
        wall, rss = t.read().split()[-2:]
        return float(wall), int(rss), p.stdout


def resolved(path):
    """`path` usable from any folder: the children run inside fresh
    workspaces, so an existing relative path (`target/release/flameox`,
    `../shared/corpus/...`) is made absolute; anything else (a command
    found on PATH) is left as given."""
    return os.path.abspath(path) if os.path.exists(path) else path


def fresh_workspace(prefix):
    """A new empty folder under the temp dir (the caller removes it)."""
    return tempfile.mkdtemp(prefix=prefix)


def remove_workspace(work):
    shutil.rmtree(work, ignore_errors=True)


def flameox_import(bin_path, trace, work):
    """`flameox init` + `flameox --json import TRACE` in `work`.

    Returns (init s, import s, peak RSS KiB of both, run id).
    """
    init_wall, init_rss, _ = timed([bin_path, "init"], cwd=work)
    import_wall, import_rss, out = timed([bin_path, "--json", "import", trace], cwd=work)
    return init_wall, import_wall, max(init_rss, import_rss), json.loads(out)["run_id"]


def flameox_json(bin_path, work, args):
    """One `flameox --json ARGS` process in `work`: (wall s, peak RSS KiB, parsed JSON)."""
    wall, rss, out = timed([bin_path, "--json"] + args, cwd=work)
    return wall, rss, json.loads(out)


def ensure_venv(venv, packages):
    """The venv's python, creating the venv and pip-installing `packages` when missing."""
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run(
            [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"] + packages,
            check=True,
        )
    return python


def load_average():
    """The 1-minute load average, as `uptime` prints it."""
    return os.getloadavg()[0]


def median(values):
    return statistics.median(values)


def ratio(slower, faster):
    """slower / faster, or infinity when `faster` rounds to zero."""
    return slower / faster if faster > 0 else float("inf")

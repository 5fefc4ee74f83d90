"""Removes this workspace's own build artifacts from a kept target folder before a CI build.

CI keeps its target folder between runs so third-party crates (DataFusion) compile once. The
workspace's own crates and test binaries are rebuilt by every run (the sources changed), and
each build at another path or with other flags leaves a full set behind: without pruning the
folder grows by gigabytes a run until the disk is full. Nothing is lost: a fresh clone's sources
are newer than any artifact, so cargo rebuilds the workspace's crates anyway. Third-party
artifacts are never touched; files younger than MAX_AGE_S are kept (a build running beside).

usage: python3 .ci/prune_target.py TARGET_DIR [MAX_AGE_SECONDS]
"""
import json
import os
import subprocess
import sys
import time
import tomllib

MAX_AGE_S = 600


def workspace_target_names():
    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1"],
        check=True, capture_output=True, text=True).stdout)
    names = set()
    for package in meta["packages"]:
        for target in package["targets"]:
            names.add(target["name"].replace("-", "_"))
    # A name a third-party crate also has is never pruned.
    with open(os.path.join(meta["workspace_root"], "Cargo.lock"), "rb") as f:
        third_party = {p["name"].replace("-", "_") for p in tomllib.load(f)["package"] if "source" in p}
    return names - third_party


def owner(file_name):
    """The crate or test name an artifact in deps/ belongs to: `libname-hash.rlib` → name."""
    stem = file_name[3:] if file_name.startswith("lib") else file_name
    return stem.split("-", 1)[0] if "-" in stem else None


def main():
    target = sys.argv[1]
    max_age = float(sys.argv[2]) if len(sys.argv) > 2 else MAX_AGE_S
    names = workspace_target_names()
    now = time.time()
    freed = removed = 0
    for profile in ("debug", "dev", "release"):
        deps = os.path.join(target, profile, "deps")
        if not os.path.isdir(deps):
            continue
        for entry in os.scandir(deps):
            if not entry.is_file() or owner(entry.name) not in names:
                continue
            stat = entry.stat()
            if now - stat.st_mtime > max_age:
                os.remove(entry.path)
                freed += stat.st_size
                removed += 1
    print(f"pruned {removed} files of this workspace's crates, {freed / 2**30:.1f} GiB")


if __name__ == "__main__":
    main()

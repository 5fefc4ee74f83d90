#!/usr/bin/env bash
# The shared corpus of real traces, checked against tests/corpus.toml (path, size, sha256,
# producer, licence and source of every file).
#
#   bash benches/corpus.sh status [DIR]            which files are present and verified
#   bash benches/corpus.sh fetch --from MIRROR [DIR] copy missing or differing files from a
#                                                  mirror (a folder or an http(s) URL with the
#                                                  same layout), verifying every hash
#
# DIR defaults to $FLAMEOX_CORPUS, else ../shared/corpus beside the repository: the folder the
# tests read (tests/src/lib.rs `corpus()`). Exit 0 when every file is verified, 1 otherwise.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
exec python3 - "$repo" "$@" <<'PY'
import hashlib, os, shutil, sys, tomllib, urllib.request

repo, args = sys.argv[1], sys.argv[2:]
usage = "usage: corpus.sh status [DIR] | corpus.sh fetch --from MIRROR [DIR]"
if not args or args[0] not in ("status", "fetch"):
    sys.exit(usage)
command, rest = args[0], args[1:]
mirror = None
if command == "fetch":
    if len(rest) < 2 or rest[0] != "--from":
        sys.exit(usage)
    mirror, rest = rest[1], rest[2:]
if len(rest) > 1:
    sys.exit(usage)
folder = rest[0] if rest else os.environ.get("FLAMEOX_CORPUS") or os.path.join(repo, "..", "shared", "corpus")
folder = os.path.abspath(folder)
with open(os.path.join(repo, "tests", "corpus.toml"), "rb") as f:
    files = tomllib.load(f)["file"]


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def state(entry):
    path = os.path.join(folder, entry["path"])
    if not os.path.isfile(path):
        return "missing"
    if os.path.getsize(path) != entry["size"] or digest(path) != entry["sha256"]:
        return "differs"
    return "verified"


def fetch(entry):
    """Copies one file from the mirror into the folder, atomically, if its hash is right."""
    target = os.path.join(folder, entry["path"])
    os.makedirs(os.path.dirname(target), exist_ok=True)
    partial = target + ".partial"
    if mirror.startswith(("http://", "https://")):
        with urllib.request.urlopen(mirror.rstrip("/") + "/" + entry["path"]) as r, open(partial, "wb") as out:
            shutil.copyfileobj(r, out)
    else:
        shutil.copyfile(os.path.join(mirror, entry["path"]), partial)
    if digest(partial) != entry["sha256"]:
        os.remove(partial)
        return "differs in the mirror"
    os.replace(partial, target)
    return "fetched"


counts = {}
for entry in files:
    s = state(entry)
    if command == "fetch" and s != "verified":
        try:
            s = fetch(entry)
        except OSError as e:
            s = f"not in the mirror ({e.__class__.__name__})"
    counts[s] = counts.get(s, 0) + 1
    if s != "verified":
        print(f"{s:>24}  {entry['path']}  ({entry['licence']}; {entry['source'][:80]})")
ok = counts.get("verified", 0) + counts.get("fetched", 0)
if command == "fetch" and counts.get("fetched"):
    # The test crates' build scripts watch the manifest: they notice the corpus.
    os.utime(os.path.join(repo, "tests", "corpus.toml"))
summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
print(f"{folder}: {len(files)} files in tests/corpus.toml: {summary}")
sys.exit(0 if ok == len(files) else 1)
PY

"""Proves `corpus.sh fetch` against copies served on loopback (run by .ci/run).

Builds, from a verified corpus folder, the layout of raw.githubusercontent.com for every
file with a repository origin (a tarball for tarball members) and a mirror of the whole
folder with one damaged file; serves both over HTTP on 127.0.0.1; then checks that
`fetch` from the origins fills an empty folder with every file that has an origin and names
the tool-run files it cannot fetch, that `fetch --from URL` completes the folder but never
places the damaged file, and that `status` then verifies all of it.

usage: python3 benches/corpus_fetch_check.py CORPUS_DIR
"""
import functools
import http.server
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import tomllib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(args, env):
    p = subprocess.run(["bash", os.path.join(REPO, "benches", "corpus.sh"), *args],
                       env=env, capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout + p.stderr


def expect(condition, what, output=""):
    if not condition:
        print(f"corpus fetch check FAILED: {what}\n{output}", file=sys.stderr)
        sys.exit(1)


def main():
    corpus = os.path.abspath(sys.argv[1])
    with open(os.path.join(REPO, "tests", "corpus.toml"), "rb") as f:
        files = tomllib.load(f)["file"]
    scratch = tempfile.mkdtemp(prefix="flameox-corpus-check-")
    served = os.path.join(scratch, "served")
    tarballs = {}
    for e in files:
        origin = e.get("origin", {})
        if "repository" not in origin:
            continue
        target = os.path.join(served, "origin", origin["repository"], origin["commit"], origin["path"])
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if "member" in origin:
            tarballs.setdefault(target, []).append((origin["member"], os.path.join(corpus, e["path"])))
        else:
            shutil.copyfile(os.path.join(corpus, e["path"]), target)
    for target, members in tarballs.items():
        with tarfile.open(target, "w:gz") as tar:
            for name, path in members:
                tar.add(path, arcname="dlrm_kineto/" + name)
    shutil.copytree(corpus, os.path.join(served, "mirror"),
                    ignore=shutil.ignore_patterns("SOURCES.md"))
    damaged = next(e for e in files if "origin" not in e)
    with open(os.path.join(served, "mirror", damaged["path"]), "r+b") as f:
        f.seek(damaged["size"] // 2)
        byte = f.read(1)
        f.seek(damaged["size"] // 2)
        f.write(bytes([byte[0] ^ 0xFF]))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=served)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    env = {**os.environ, "FLAMEOX_CORPUS_ORIGIN_BASE": base + "/origin"}
    target = os.path.join(scratch, "corpus")
    try:
        with_origin = sum(1 for e in files if "origin" in e)
        code, out = run(["fetch", target], env)
        expect(code == 1, "fetch from origins must exit 1 while tool-run files are missing", out)
        expect(f"{with_origin} fetched" in out, f"{with_origin} files with an origin fetched", out)
        expect(f"{len(files) - with_origin} made by a tool run" in out,
               "every tool-run file named as mirror-only", out)
        code, out = run(["fetch", "--from", base + "/mirror", target], env)
        expect(code == 1, "a damaged mirror file must fail the fetch", out)
        expect("differ from the manifest's sha256  " + damaged["path"] in out, "the damaged file named", out)
        expect(not os.path.exists(os.path.join(target, damaged["path"])), "the damaged file is not placed")
        shutil.copyfile(os.path.join(corpus, damaged["path"]), os.path.join(served, "mirror", damaged["path"]))
        code, out = run(["fetch", "--from", base + "/mirror", target], env)
        expect(code == 0 and "1 fetched" in out, "the repaired mirror completes the folder", out)
        code, out = run(["status", target], env)
        expect(code == 0 and f"{len(files)} verified" in out, "status verifies every file", out)
        print(f"corpus fetch: {with_origin} of {len(files)} files from their origins on loopback, "
              f"{len(files) - with_origin} tool-run files from a mirror, a damaged mirror file refused")
    finally:
        server.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()

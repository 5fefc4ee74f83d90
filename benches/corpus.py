"""Verifies and fills a corpus folder against tests/corpus.toml (run through corpus.sh)."""
import hashlib
import io
import os
import shutil
import sys
import tarfile
import tomllib
import urllib.error
import urllib.request

USAGE = "usage: corpus.sh status [DIR] | corpus.sh fetch [--from MIRROR] [DIR]"
ORIGIN_BASE = os.environ.get("FLAMEOX_CORPUS_ORIGIN_BASE", "https://raw.githubusercontent.com")
TIMEOUT_S = 60


def digest(data_or_path):
    h = hashlib.sha256()
    if isinstance(data_or_path, bytes):
        h.update(data_or_path)
        return h.hexdigest()
    with open(data_or_path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_url(url):
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as r:
        return r.read()


class Corpus:
    def __init__(self, repo, folder, mirror):
        self.repo, self.folder, self.mirror = repo, folder, mirror
        self.downloads = {}  # one download per origin file (a tarball serves 8 entries)

    def state(self, entry):
        path = os.path.join(self.folder, entry["path"])
        if not os.path.isfile(path):
            return "missing"
        if os.path.getsize(path) != entry["size"] or digest(path) != entry["sha256"]:
            return "differs"
        return "verified"

    def bytes_from_mirror(self, entry):
        if self.mirror.startswith(("http://", "https://")):
            return read_url(self.mirror.rstrip("/") + "/" + entry["path"])
        with open(os.path.join(self.mirror, entry["path"]), "rb") as f:
            return f.read()

    def bytes_from_origin(self, entry):
        """The file's bytes from its origin, or None when it has none (a tool run made it)."""
        origin = entry.get("origin")
        if origin is None:
            return None
        if "in_repository" in origin:
            with open(os.path.join(self.repo, origin["in_repository"]), "rb") as f:
                return f.read()
        url = f"{ORIGIN_BASE.rstrip('/')}/{origin['repository']}/{origin['commit']}/{origin['path']}"
        if url not in self.downloads:
            self.downloads[url] = read_url(url)
        data = self.downloads[url]
        member = origin.get("member")
        if member is None:
            return data
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for info in tar.getmembers():
                if info.isfile() and os.path.basename(info.name) == member:
                    extracted = tar.extractfile(info)
                    if extracted is not None:
                        return extracted.read()
        raise FileNotFoundError(f"{member} is not in {url}")

    def fetch(self, entry):
        """Fetches one file, verifies its hash and moves it into place atomically."""
        data = self.bytes_from_mirror(entry) if self.mirror else self.bytes_from_origin(entry)
        if data is None:
            return "made by a tool run: only a mirror has these bytes (fetch --from)"
        if len(data) != entry["size"] or digest(data) != entry["sha256"]:
            return "fetched bytes differ from the manifest's sha256"
        target = os.path.join(self.folder, entry["path"])
        os.makedirs(os.path.dirname(target), exist_ok=True)
        partial = target + ".partial"
        with open(partial, "wb") as out:
            out.write(data)
        os.replace(partial, target)
        return "fetched"


def main(argv):
    repo, args = argv[1], argv[2:]
    if not args or args[0] not in ("status", "fetch"):
        sys.exit(USAGE)
    command, rest = args[0], args[1:]
    mirror = None
    if command == "fetch" and rest[:1] == ["--from"]:
        if len(rest) < 2:
            sys.exit(USAGE)
        mirror, rest = rest[1], rest[2:]
    if len(rest) > 1 or any(a.startswith("-") for a in rest):
        sys.exit(USAGE)
    default = os.environ.get("FLAMEOX_CORPUS") or os.path.join(repo, "..", "shared", "corpus")
    folder = os.path.abspath(rest[0] if rest else default)
    with open(os.path.join(repo, "tests", "corpus.toml"), "rb") as f:
        files = tomllib.load(f)["file"]
    corpus = Corpus(repo, folder, mirror)
    counts = {}
    for entry in files:
        s = corpus.state(entry)
        if command == "fetch" and s != "verified":
            try:
                s = corpus.fetch(entry)
            except (OSError, urllib.error.URLError, tarfile.TarError) as e:
                where = "the mirror" if mirror else "its origin"
                s = f"not fetched from {where} ({e.__class__.__name__}: {str(e)[:60]})"
        counts[s] = counts.get(s, 0) + 1
        if s != "verified":
            print(f"{s}  {entry['path']}  ({entry['licence']}; {entry['source'][:80]})")
    ok = counts.get("verified", 0) + counts.get("fetched", 0)
    if command == "fetch" and counts.get("fetched"):
        # The test crates' build scripts watch the manifest: they notice the corpus.
        os.utime(os.path.join(repo, "tests", "corpus.toml"))
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    print(f"{folder}: {len(files)} files in tests/corpus.toml: {summary}")
    return 0 if ok == len(files) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))

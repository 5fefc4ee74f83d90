"""A package index on loopback for the capability-setup tests.

build DIR NAME VERSION [--script NAME=FILE]... [--module NAME]
    Writes DIR/<normalized name>/<wheel>: a pure wheel of distribution NAME
    at VERSION whose scripts are copied from FILE (a real program, or a
    shell script) and installed executable, and/or an empty importable
    module. pip reads DIR, served over HTTP, as a simple repository
    (one folder of links per project).

serve DIR
    Serves DIR on 127.0.0.1 at a free port, prints the port on its first
    line, and serves until killed.
"""

import base64
import functools
import hashlib
import http.server
import os
import re
import sys
import zipfile


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def build(out, name, version, scripts, modules):
    stem = f"{re.sub(r'[-.]+', '_', name)}-{version}"
    wheel = f"{stem}-py3-none-any.whl"
    folder = os.path.join(out, normalize(name))
    os.makedirs(folder, exist_ok=True)
    files = []
    for module in modules:
        files.append((f"{module}/__init__.py", f"__version__ = {version!r}\n".encode(), 0o644))
    for script, source in scripts:
        with open(source, "rb") as f:
            files.append((f"{stem}.data/scripts/{script}", f.read(), 0o755))
    files.append((f"{stem}.dist-info/METADATA",
                  f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(), 0o644))
    files.append((f"{stem}.dist-info/WHEEL",
                  b"Wheel-Version: 1.0\nGenerator: flameox-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
                  0o644))
    records = [record_line(p, d) for p, d, _ in files]
    records.append(f"{stem}.dist-info/RECORD,,")
    files.append((f"{stem}.dist-info/RECORD", ("\n".join(records) + "\n").encode(), 0o644))
    with zipfile.ZipFile(os.path.join(folder, wheel), "w") as z:
        for path, data, mode in files:
            info = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            z.writestr(info, data)
    print(os.path.join(folder, wheel))


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(root):
    handler = functools.partial(QuietHandler, directory=root)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


def main(argv):
    if argv[:1] == ["serve"] and len(argv) == 2:
        serve(argv[1])
    elif argv[:1] == ["build"] and len(argv) >= 4:
        scripts, modules, rest = [], [], argv[4:]
        while rest:
            flag, value, rest = rest[0], rest[1], rest[2:]
            if flag == "--script":
                script, source = value.split("=", 1)
                scripts.append((script, source))
            elif flag == "--module":
                modules.append(value)
            else:
                raise SystemExit(f"unknown option {flag}")
        build(argv[1], argv[2], argv[3], scripts, modules)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])

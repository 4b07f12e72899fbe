"""Servers on 127.0.0.1 for the remote tests and benchmarks: an HTTP server of our own
that honours ``Range`` (one range, several ranges as multipart/byteranges), counts
requests and bytes, and misbehaves on demand; and moto's S3 server.

>>> with ObjectServer() as srv:
...     _ = srv.put("a.bin", bytes(range(10)))
...     import urllib.request
...     req = urllib.request.Request(srv.url("a.bin"), headers={"Range": "bytes=2-4"})
...     urllib.request.urlopen(req).read(), srv.stats.requests
(b'\\x02\\x03\\x04', 1)
"""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import re
import socket
import threading
import time

__all__ = ["ObjectServer", "Faults", "Stats", "moto_server"]


@dataclasses.dataclass
class Faults:
    """What the server does wrong, on demand (counts are decremented as used)."""

    latency: float = 0.0          # seconds before every answer
    bandwidth: float = 0.0        # bytes per second of bodies (0: no cap)
    status: int = 0               # answer this status ...
    status_count: int = 0         # ... to this many requests (-1: all)
    reset_count: int = 0          # close the connection without an answer
    truncate_count: int = 0       # send half the body, then close
    ignore_range: bool = False    # 200 with the whole object
    hang: float = 0.0             # sleep this long before answering (a hung server)
    only_path: str = ""           # faults apply to this object only ("" every one)


@dataclasses.dataclass
class Stats:
    requests: int = 0
    bytes: int = 0
    ranges: list = dataclasses.field(default_factory=list)     # (path, header) of each GET

    def reset(self) -> None:
        self.requests, self.bytes, self.ranges = 0, 0, []


_RANGE = re.compile(r"(\d*)-(\d*)")


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True          # headers and body: no 40 ms delayed ACK

    def log_message(self, *args):          # quiet
        pass

    def _object(self):
        srv = self.server.owner
        name = self.path.split("?")[0].lstrip("/")
        with srv.lock:
            srv.stats.requests += 1
            srv.stats.ranges.append((name, self.headers.get("Range")))
            data = srv.objects.get(name)
        return name, data

    def _fault(self, name) -> bool:
        """Apply the faults; True when the request was answered (or dropped)."""
        f = self.server.owner.faults
        if f.only_path and f.only_path != name:
            return False
        if f.hang:
            time.sleep(f.hang)
        if f.latency:
            time.sleep(f.latency)
        with self.server.owner.lock:
            if f.reset_count:
                f.reset_count -= 1
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           b"\x01\x00\x00\x00\x00\x00\x00\x00")
                self.close_connection = True
                self.connection.close()
                return True
            if f.status and f.status_count:
                f.status_count -= 1 if f.status_count > 0 else 0
                status = f.status
            else:
                status = 0
        if status:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return True
        return False

    def do_HEAD(self):
        name, data = self._object()
        if data is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("ETag", self.server.owner.etag(name))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()

    def do_GET(self):
        name, data = self._object()
        if self._fault(name):
            return
        if data is None:
            self.send_error(404)
            return
        if name in self.server.owner.forbidden:
            self.send_error(403)
            return
        owner, f = self.server.owner, self.server.owner.faults
        applies = not f.only_path or f.only_path == name
        etag = owner.etag(name)
        want = self.headers.get("If-Match")
        if want and want != etag:
            self.send_error(412)
            return
        spec = self.headers.get("Range")
        if spec is None or (f.ignore_range and applies):
            self._send(200, data, etag, None)
            return
        ranges = []
        for part in spec.replace("bytes=", "").split(","):
            m = _RANGE.fullmatch(part.strip())
            if not m:
                self.send_error(400)
                return
            a, b = m.groups()
            if a == "":
                s, e = max(0, len(data) - int(b)), len(data)
            else:
                s, e = int(a), min(len(data), int(b) + 1 if b else len(data))
            ranges.append((s, e))
        if any(s >= len(data) for s, _ in ranges):
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(data)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if len(ranges) == 1:
            s, e = ranges[0]
            self._send(206, data[s:e], etag, f"bytes {s}-{e - 1}/{len(data)}")
            return
        boundary = "ndpackboundary"
        body = b"".join(
            f"--{boundary}\r\nContent-Type: application/octet-stream\r\n"
            f"Content-Range: bytes {s}-{e - 1}/{len(data)}\r\n\r\n".encode() + data[s:e]
            + b"\r\n" for s, e in ranges) + f"--{boundary}--\r\n".encode()
        self._send(206, body, etag, None, f"multipart/byteranges; boundary={boundary}")

    def _send(self, status, body, etag, crange, ctype="application/octet-stream"):
        owner, f = self.server.owner, self.server.owner.faults
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", etag)
        self.send_header("Accept-Ranges", "bytes")
        if crange:
            self.send_header("Content-Range", crange)
        self.end_headers()
        with owner.lock:
            truncate = f.truncate_count > 0
            if truncate:
                f.truncate_count -= 1
        if truncate:
            body = body[:len(body) // 2]
        with owner.lock:                  # counted before the client can see the end
            owner.stats.bytes += len(body)
        if f.bandwidth:
            step = max(1, int(f.bandwidth / 100))
            for k in range(0, len(body), step):
                self.wfile.write(body[k:k + step])
                time.sleep(len(body[k:k + step]) / f.bandwidth)
        else:
            self.wfile.write(body)
        if truncate:
            self.wfile.flush()
            self.close_connection = True

    def do_PUT(self):
        name = self.path.split("?")[0].lstrip("/")
        if "chunked" in self.headers.get("Transfer-Encoding", ""):
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            body = b"".join(parts)
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with self.server.owner.lock:
            self.server.owner.objects[name] = body
        self.send_response(201)
        self.send_header("Content-Length", "0")
        self.end_headers()


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class ObjectServer:
    """An HTTP object server on 127.0.0.1 (a free port), serving :attr:`objects`."""

    def __init__(self):
        self.objects: dict = {}
        self.forbidden: set = set()
        self.versions: dict = {}
        self.faults = Faults()
        self.stats = Stats()
        self.lock = threading.Lock()
        self.httpd = _Server(("127.0.0.1", 0), _Handler)
        self.httpd.owner = self
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True,
                                       name="test-object-server")

    def start(self) -> "ObjectServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def put(self, name: str, data: bytes) -> str:
        with self.lock:
            self.objects[name] = bytes(data)
            self.versions[name] = self.versions.get(name, 0) + 1
        return self.url(name)

    def etag(self, name: str) -> str:
        data = self.objects.get(name, b"")
        return '"' + hashlib.md5(data).hexdigest() + '"'   # noqa: S324  (an identity)

    def clear_faults(self) -> None:
        self.faults = Faults()


def moto_server():
    """A started moto ThreadedMotoServer on 127.0.0.1 (port 0) and its endpoint URL."""
    from moto.server import ThreadedMotoServer
    srv = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    srv.start()
    host, port = srv.get_host_and_port()
    return srv, f"http://{host}:{port}"

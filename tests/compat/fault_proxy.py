"""An HTTP proxy in front of the session's S3 server that injects storage
faults (SPEC §14): it forwards every request unchanged (the Host header too,
so signatures stay valid) unless its rule says otherwise.

`rule(method, path, query)` is asked once per request, before its body is
read, and returns one of:

    None                  forward the request and return the answer
    403, 404, 503, ...    answer with that S3 error instead (the body is read)
    "drop"                read the whole request, then close without an answer
    "reset"               reset the connection (TCP RST) before reading the body
    "reset-midbody"       read part of the body (half, at most 1 MiB), then reset
    "lost-answer"         forward the request (it lands), then close without
                          passing the answer on
    ("delay", seconds)    wait, then forward (a slow server; the request lands
                          late or, if the client gave up, never answers it)
    ("slow", seconds)     forward at once (the request lands), wait, then
                          answer (a slow answer past the client's timeout)

Every request is logged as a `Request` (method, path, query, outcome, the
request's headers and the upstream's status when forwarded)."""

import dataclasses
import datetime as dt
import http.client
import http.server
import socket
import struct
import threading
import time
import urllib.parse
from typing import Optional

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
              "proxy-authorization", "proxy-authenticate"}
ERROR_CODES = {403: "AccessDenied", 404: "NoSuchKey", 500: "InternalError", 503: "SlowDown"}


@dataclasses.dataclass
class Request:
    method: str
    path: str
    query: str
    outcome: object
    headers: dict
    upstream_status: Optional[int] = None  # set once forwarded and answered


class FaultProxy:
    def __init__(self, upstream):
        self.upstream = urllib.parse.urlsplit(upstream)
        self.rule = lambda method, path, query: None
        self.log = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def reset(self):
                """Closes the connection with a TCP RST (SO_LINGER 0)."""
                self.close_connection = True
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                # The fd closes only when the buffered reader lets go too.
                self.rfile.close()
                self.connection.close()

            def drop(self):
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)

            def handle_any(self):
                length = int(self.headers.get("Content-Length") or 0)
                url = urllib.parse.urlsplit(self.path)
                entry = Request(self.command, url.path, url.query, None,
                                {k.lower(): v for k, v in self.headers.items()})
                with proxy.lock:
                    entry.outcome = outcome = proxy.rule(self.command, url.path, url.query)
                    proxy.log.append(entry)
                if outcome == "reset":
                    return self.reset()
                if outcome == "reset-midbody":
                    self.rfile.read(min(length // 2, 1 << 20))
                    return self.reset()
                body = self.rfile.read(length) if length else b""
                if outcome == "drop":
                    return self.drop()
                if isinstance(outcome, int):
                    code = ERROR_CODES.get(outcome, "Injected")
                    xml = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
                           f"<Message>injected fault</Message></Error>").encode()
                    self.send_response(outcome)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(xml)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(xml)
                    return
                if isinstance(outcome, tuple) and outcome[0] == "delay":
                    time.sleep(outcome[1])
                response, data = self.forward(body)
                entry.upstream_status = response.status
                if outcome == "lost-answer":
                    return self.drop()
                if isinstance(outcome, tuple) and outcome[0] == "slow":
                    time.sleep(outcome[1])
                self.send_response(response.status)
                for k, v in response.getheaders():
                    # A HEAD answer keeps the object's length.
                    if k.lower() not in HOP_BY_HOP and (
                            k.lower() != "content-length" or self.command == "HEAD"):
                        self.send_header(k, v)
                if self.command != "HEAD":
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def forward(self, body):
                conn = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port,
                                                  timeout=60)
                try:
                    conn.putrequest(self.command, self.path, skip_host=True,
                                    skip_accept_encoding=True)
                    for k, v in self.headers.items():
                        if k.lower() not in HOP_BY_HOP:
                            conn.putheader(k, v)
                    conn.endheaders(body)
                    response = conn.getresponse()
                    return response, response.read()
                finally:
                    conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                # A client that gave up on a slow answer closed its end:
                # writing the answer then fails, as intended.
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()

    def requests(self, predicate=lambda method, path, query: True):
        """The logged requests that match `predicate`, in arrival order."""
        with self.lock:
            return [r for r in self.log if predicate(r.method, r.path, r.query)]

    def outcomes(self, predicate=lambda method, path, query: True):
        return [r.outcome for r in self.requests(predicate)]

    def clear(self):
        with self.lock:
            self.log.clear()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy(s3_server):
    """A FaultProxy in front of the session's S3 server, closed after the test."""
    p = FaultProxy(s3_server.endpoint)
    yield p
    p.close()


def write(path, n, offset=0):
    """n rows (time, dev, v) from minute `offset` of T0 as a Parquet file."""
    pq.write_table(pa.table({
        "time": pa.array([T0 + dt.timedelta(minutes=offset + i) for i in range(n)],
                         pa.timestamp("us", tz="UTC")),
        "dev": pa.array([f"d{i % 4}" for i in range(n)]),
        "v": pa.array([float(offset + i) for i in range(n)]),
    }), path)
    return path

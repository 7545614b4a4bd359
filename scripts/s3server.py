#!/usr/bin/env python3
"""A private S3-compatible server for the tests: versitygw (posix backend) on
127.0.0.1, on a free port, over a fresh temporary directory (in RAM, /dev/shm,
where it can be; see --dir), with one bucket and credentials made up for this
run.

    .venv/bin/python scripts/s3server.py [--bucket NAME]

When the server answers signed requests, one line of JSON goes to stdout:

    {"endpoint": "http://127.0.0.1:PORT", "bucket": "...", "access_key_id": "...",
     "secret_access_key": "...", "region": "us-east-1"}

The server then runs until stdin closes (so a test that dies takes its server
with it) or the launcher gets SIGTERM/SIGINT; then it is stopped and the
temporary directory is deleted. If the server does not come up within
--timeout seconds, the launcher says why on stderr and exits with status 1.

versitygw is installed by `scripts/setup.sh test`; TIMELAKE_VERSITYGW names
another binary. Standard library only.
"""

import argparse
import ctypes
import datetime
import hashlib
import hmac
import http.client
import json
import os
import pathlib
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

REGION = "us-east-1"
DEFAULT_BINARY = pathlib.Path.home() / ".cache" / "timelake" / "go" / "bin" / "versitygw"
PORT_ATTEMPTS = 3  # a free port can be taken between probing and binding it


class LaunchError(Exception):
    pass


def find_binary():
    candidates = [os.environ.get("TIMELAKE_VERSITYGW"), str(DEFAULT_BINARY),
                  shutil.which("versitygw")]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    raise LaunchError(f"versitygw not found (looked for {DEFAULT_BINARY} and on PATH): "
                      "run scripts/setup.sh test, or set TIMELAKE_VERSITYGW")


def scratch_parent(requested):
    """Where the temporary directory goes: `requested`, else RAM (/dev/shm)
    when it takes the extended attributes versitygw keeps its metadata in:
    the data is thrown away anyway, and on disks mounted with `discard`
    deleting fsync'ed files costs milliseconds each. Else the system default."""
    if requested:
        return requested
    shm = pathlib.Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        probe = tempfile.mkdtemp(prefix="timelake-s3-probe-", dir=shm)
        try:
            os.setxattr(probe, "user.timelake", b"1")
            return str(shm)
        except OSError:
            pass
        finally:
            os.rmdir(probe)
    return None


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def signed_request(endpoint_port, method, path, access_key, secret, body=b""):
    """One S3 request signed with AWS Signature Version 4; returns the status."""
    host = f"127.0.0.1:{endpoint_port}"
    amz_date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    headers = {"host": host, "x-amz-date": amz_date,
               "x-amz-content-sha256": hashlib.sha256(body).hexdigest()}
    signed = ";".join(sorted(headers))
    canonical = "\n".join([method, path, "",
                           *(f"{k}:{headers[k]}" for k in sorted(headers)), "", signed,
                           headers["x-amz-content-sha256"]])
    scope = f"{day}/{REGION}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + secret).encode()
    for part in (day, REGION, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, "
                                f"SignedHeaders={signed}, Signature={signature}")
    conn = http.client.HTTPConnection("127.0.0.1", endpoint_port, timeout=5)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def die_with_parent():
    """In the child: SIGKILL when the launcher dies, however it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_PDEATHSIG = 1
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def log_tail(log_path, lines=20):
    try:
        text = log_path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


def start(binary, data_dir, bucket, access_key, secret, timeout):
    """Starts versitygw and creates the bucket; returns (process, port)."""
    root = data_dir / "root"
    root.mkdir()
    log_path = data_dir / "versitygw.log"
    env = dict(os.environ, ROOT_ACCESS_KEY_ID=access_key, ROOT_SECRET_ACCESS_KEY=secret)
    # Never let the server read settings meant for another one.
    for name in list(env):
        if name.startswith("VGW_"):
            del env[name]
    for attempt in range(1, PORT_ATTEMPTS + 1):
        port = free_port()
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [binary, "--port", f"127.0.0.1:{port}", "--region", REGION, "--quiet",
                 "--keep-alive", "posix", str(root)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                preexec_fn=die_with_parent)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                status = signed_request(port, "PUT", f"/{bucket}", access_key, secret)
            except OSError:
                time.sleep(0.05)
                continue
            if status == 200:
                return proc, port
            stop(proc)
            raise LaunchError(f"versitygw on port {port} answered {status} when creating "
                              f"bucket {bucket}:\n{log_tail(log_path)}")
        if proc.poll() is None:
            stop(proc)
            raise LaunchError(f"versitygw did not answer on 127.0.0.1:{port} within "
                              f"{timeout:g} s:\n{log_tail(log_path)}")
        if attempt == PORT_ATTEMPTS:
            raise LaunchError(f"versitygw exited with status {proc.returncode} "
                              f"({PORT_ATTEMPTS} attempts):\n{log_tail(log_path)}")
    raise AssertionError("unreachable")


def stop(proc):
    # versitygw's graceful shutdown waits for idle keep-alive connections;
    # the data is thrown away, so it gets a moment, not more.
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bucket", default="timelake")
    parser.add_argument("--dir", help="parent of the temporary data directory "
                        "(default: /dev/shm when usable, else the system's)")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds to wait for the server to come up")
    args = parser.parse_args()

    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())

    access_key = "TL" + secrets.token_hex(8).upper()
    secret = secrets.token_urlsafe(30)
    data_dir = pathlib.Path(tempfile.mkdtemp(prefix="timelake-s3-",
                                             dir=scratch_parent(args.dir)))
    proc = None
    try:
        proc, port = start(find_binary(), data_dir, args.bucket, access_key, secret,
                           args.timeout)
        if stopping.is_set():
            return 0
        print(json.dumps({"endpoint": f"http://127.0.0.1:{port}", "bucket": args.bucket,
                          "access_key_id": access_key, "secret_access_key": secret,
                          "region": REGION}), flush=True)

        # Wait for EOF on stdin (the parent closed it or died) or a signal,
        # and watch the server meanwhile.
        stdin = sys.stdin.fileno()
        while not stopping.is_set():
            if proc.poll() is not None:
                print(f"s3server: versitygw exited with status {proc.returncode}:\n"
                      f"{log_tail(data_dir / 'versitygw.log')}", file=sys.stderr)
                return 1
            readable, _, _ = select.select([stdin], [], [], 0.5)
            if readable and not os.read(stdin, 65536):
                break
        return 0
    except LaunchError as e:
        print(f"s3server: {e}", file=sys.stderr)
        return 1
    finally:
        if proc is not None:
            stop(proc)
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

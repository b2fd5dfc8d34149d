#!/usr/bin/env python3
"""How fast `conclave serve` gets out of the way (BENCHMARKS.md, "Server lifecycle").

Measures, with the real binary and real processes, N times each:
  - editor gone: from killing the editor process (the `processId` given in `initialize`)
    to the server's exit;
  - takeover: a server whose editor is gone and that is wedged (SIGSTOP) holds the
    workspace; the time a new server's `initialize` takes to answer, taking it over.

Usage: scripts/measure-serve-lifecycle.py [path/to/conclave] [N]
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/debug/conclave")
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 5


def frame(message):
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frame(stream):
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    return json.loads(stream.read(length))


def serve(workspace, editor_pid):
    server = subprocess.Popen([BIN, "serve", "--stdio"], cwd=workspace, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    server.stdin.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": editor_pid, "rootUri": "file://" + workspace, "capabilities": {}}}))
    server.stdin.flush()
    while True:
        message = read_frame(server.stdout)
        if message is None or message.get("id") == 1:
            return server, message


def editor_gone():
    with tempfile.TemporaryDirectory() as workspace:
        editor = subprocess.Popen(["sleep", "600"])
        server, answer = serve(os.path.realpath(workspace), editor.pid)
        assert "result" in answer, answer
        started = time.monotonic()
        editor.kill()
        editor.wait()
        server.wait(timeout=30)
        return time.monotonic() - started


def takeover():
    with tempfile.TemporaryDirectory() as workspace:
        workspace = os.path.realpath(workspace)
        editor = subprocess.Popen(["sleep", "600"])
        orphan, answer = serve(workspace, editor.pid)
        assert "result" in answer, answer
        os.kill(orphan.pid, signal.SIGSTOP)
        editor.kill()
        editor.wait()
        started = time.monotonic()
        new, answer = serve(workspace, os.getpid())
        took = time.monotonic() - started
        assert "result" in answer, answer
        orphan.wait(timeout=30)
        new.stdin.close()
        new.wait(timeout=30)
        return took


for name, measure in [("editor gone -> exit", editor_gone), ("takeover initialize", takeover)]:
    times = [measure() for _ in range(RUNS)]
    print(f"{name}: median {statistics.median(times) * 1000:.0f} ms, "
          f"max {max(times) * 1000:.0f} ms over {RUNS} runs")

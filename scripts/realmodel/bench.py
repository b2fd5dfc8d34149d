#!/usr/bin/env python3
"""Real-model benchmark: Conclave (`conclave run`) against one pi-coding-agent (print mode)
on the same local model, on small coding tasks each checked by a script the agents never
see, with and without injected faults. Not run in CI: one pass takes an hour or more.

    scripts/realmodel/setup.sh && scripts/realmodel/serve.sh 1.5b 18080 &
    cargo build --release && npm ci --prefix tests/pi
    scripts/realmodel/bench.py [--systems conclave,pi,conclave-pi] [--faults 0,0.3] [--tasks 01,02] \
        [--set dev|heldout|all] [--out results.jsonl] [--timeout 900]

--set picks the tasks from split.json: dev (the default: the tasks under tasks/),
dev-humaneval (the 99 HumanEval problems of 41-163 the held-out draw left, under
tasks/humaneval/: dev too, to run and mine), heldout (the frozen held-out split under
heldout/: run it only to measure; see heldout/README.md) or all (dev and heldout).
--tasks then keeps those whose folder name (or path under scripts/realmodel) starts with
one of the prefixes.

Every model call goes through a small proxy in this script: it counts tokens (from the
server's `usage`, or llama.cpp's `timings` when streaming) and, with --faults P, answers
a share P of chat calls with a fault instead of forwarding them, in turn: 500, 503, 429
(with Retry-After: 1), a 200 whose JSON is cut off, a connection dropped before any
answer, and a 30 s stall with no bytes before the connection drops. Per run it records: solved
(the hidden check passed), claimed (Conclave's exit 0 = "completed"; pi exits 0 whenever
it ends normally), wall time, model calls, faults injected and tokens. A "false
completion" is a run claimed complete whose hidden check fails.
"""

import argparse
import http.server
import json
import os
import random
import shlex
import socket
import shutil
import subprocess
import sys
import tempfile
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
MODEL = "qwen2.5-coder-1.5b-instruct"
# llama-server's --ctx-size in ../shared/llm/serve.sh, and Conclave's default output cap.
CONTEXT_WINDOW = 8192
MAX_TOKENS = 4096


class ServerCachesPrompts(SystemExit):
    """The model server cannot give a pinned run the same start twice."""


class Proxy:
    """Forwards /v1/* to the model server; counts tokens; injects faults."""

    # What an injected fault does, in turn, as hosted providers really fail: a server
    # error, an overloaded server, a rate limit asking for a one-second wait, a 200 whose
    # body is cut off, a connection dropped before any answer, and a stall with no bytes.
    FAULTS = [(500, "server_error"), (503, "overloaded"), (429, "rate_limit_exceeded"),
              "malformed", "drop", "stall"]
    STALL_S = 30

    def __init__(self, upstream, fault_rate, seed=7, sampling=None, refuse=None):
        self.upstream = upstream.rstrip("/")
        self.fault_rate = fault_rate
        # Text whose chat calls are always rate-limited: a provider failing one kind of
        # call past any retry, to try what an agent does when that step cannot be had.
        self.refuse = refuse.encode() if refuse else None
        # (temperature, seed): pinned on every chat call, whichever agent makes it, so
        # that both sample alike and a pass can be repeated; None leaves the server's.
        self.sampling = sampling
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.in_flight = 0
        self.reset()
        proxy = self

        def next_fault():
            with proxy.lock:
                fault = Proxy.FAULTS[(proxy.faults - 1) % len(Proxy.FAULTS)]
            return fault

        self.next_fault = next_fault

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                self.forward(None)

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.forward(self.rfile.read(length))

            def inject(self, fault):
                """Answers as a provider in trouble does, instead of forwarding."""
                self.close_connection = True
                if fault in ("drop", "stall"):
                    if fault == "stall":
                        # Accepted, then nothing: not a byte, until the connection drops.
                        time.sleep(Proxy.STALL_S)
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                if fault == "malformed":
                    status, data, kind = 200, b'{"id": "chatcmpl-x", "choices": [{"mess', None
                else:
                    status, kind = fault
                    data = json.dumps({"error": {"message": f"injected fault ({status})", "type": kind}}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429:
                    self.send_header("Retry-After", "1")
                self.end_headers()
                self.wfile.write(data)

            def forward(self, body):
                chat = body is not None and self.path.endswith("/chat/completions")
                if chat:
                    refused = proxy.refuse is not None and proxy.refuse in body
                    with proxy.lock:
                        proxy.calls += 1
                        fault = refused or proxy.random.random() < proxy.fault_rate
                        if fault:
                            proxy.faults += 1
                    if refused:
                        self.inject((429, "rate_limit_exceeded"))
                        return
                    if fault:
                        self.inject(proxy.next_fault())
                        return
                    if proxy.sampling is not None:
                        body = proxy.pin_sampling(body)
                request = urllib.request.Request(
                    proxy.upstream + self.path,
                    data=body,
                    method="POST" if body is not None else "GET",
                    headers={"Content-Type": "application/json"},
                )
                with proxy.lock:
                    proxy.in_flight += 1
                began = time.monotonic()
                # Streamed through as it comes, byte for byte: the agents judge a call by
                # its silences, so a proxy that held the answer back would stall them.
                chunks = []
                started = False
                try:
                    try:
                        response = urllib.request.urlopen(request, timeout=900)
                        status, headers = response.status, response.headers
                    except urllib.error.HTTPError as e:
                        response, status, headers = e, e.code, e.headers
                    self.send_response(status)
                    self.send_header("Content-Type", headers.get("Content-Type", "application/json"))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.close_connection = True
                    started = True
                    with response:
                        while True:
                            chunk = response.read1(65536)
                            if not chunk:
                                break
                            chunks.append(chunk)
                            try:
                                self.wfile.write(chunk)
                                self.wfile.flush()
                            except (BrokenPipeError, ConnectionResetError):
                                # The agent gave up on the call (or stopped an answer it
                                # judged a loop): the upstream connection is closed too, so
                                # the server stops generating, as it does for an agent
                                # connected to it directly.
                                break
                except Exception as e:  # the server went away: a 502 the agent can see
                    data = json.dumps({"error": {"message": str(e)}}).encode()
                    status = 502
                    chunks = [data]
                    # Mid-answer, the cut-off stream is what the agent gets.
                    try:
                        if started:
                            raise RuntimeError("headers already sent")
                        self.send_response(502)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data)
                    except Exception:
                        pass
                finally:
                    with proxy.lock:
                        proxy.in_flight -= 1
                        if chat:
                            proxy.longest_call = max(proxy.longest_call, time.monotonic() - began)
                if chat:
                    data = b"".join(chunks)
                    proxy.count(data)
                    proxy.record(body, status, data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def pin_sampling(self, body):
        """The call with the pass's temperature, and a seed of its own: the pass's seed
        and the call's number, so a retry of the same prompt is sampled afresh while the
        same pass repeated asks for the same samples."""
        try:
            request = json.loads(body)
        except ValueError:
            return body
        temperature, seed = self.sampling
        with self.lock:
            number = self.calls
        request["temperature"] = temperature
        request["seed"] = seed * 100_003 + number
        return json.dumps(request).encode()

    CLEARED = [{"role": "system", "content": "."}, {"role": "user", "content": "."}]

    def clear_prompt_cache(self):
        """Leaves the server's prompt cache holding only the start of the chat template.
        llama-server reuses the cached prefix of the last prompt, and a prompt read partly
        from the cache is computed in other batches, so its next tokens come out slightly
        different: a pinned seed then repeats a run only if every run starts from the same
        cache. A one-token call with a prompt no agent sends does that (llama-server
        erases a slot only when started with --slot-save-path).

        llama-server also keeps earlier prompts in host memory (`--cache-ram`, on by
        default) and restores the closest one, whatever was asked last: no call then
        leaves the cache the same, and a pinned run does not repeat. Probed here (the
        cleared prompt, another, the cleared one again: read back whole, it came from
        host memory) and refused with the remedy."""
        self.one_token_call(self.CLEARED)
        self.one_token_call([{"role": "system", "content": ".."}, {"role": "user", "content": ".."}])
        timings = self.one_token_call(self.CLEARED)
        if timings is not None and timings.get("prompt_n", 2) <= 1:
            raise ServerCachesPrompts(
                "the model server restores earlier prompts from host memory (llama-server "
                "--cache-ram), so runs on pinned sampling cannot repeat: start it with "
                "LLAMA_ARG_CACHE_RAM=0 (for example `LLAMA_ARG_CACHE_RAM=0 serve.sh 1.5b 18080`)")

    def one_token_call(self, messages):
        """A one-token call straight to the server: its `timings` (None without a server
        or without timings)."""
        body = json.dumps({"messages": messages, "max_tokens": 1, "temperature": 0}).encode()
        request = urllib.request.Request(self.upstream + "/v1/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        try:
            return json.loads(urllib.request.urlopen(request, timeout=120).read()).get("timings")
        except (OSError, urllib.error.URLError, ValueError, AttributeError):
            # No server (yet): the run's own first call will say so.
            return None

    def settle(self, limit_s=900):
        """Waits until no forwarded call is in flight: a run killed at its time limit
        leaves its last call generating on the model server, which would otherwise eat
        into the next run's time."""
        deadline = time.monotonic() + limit_s
        while self.in_flight > 0 and time.monotonic() < deadline:
            time.sleep(1)

    def reset(self, transcript=None):
        if self.sampling:
            self.clear_prompt_cache()
        with self.lock:
            self.calls = self.faults = self.prompt_tokens = self.completion_tokens = 0
            # The longest forwarded chat call of the run, in seconds: a model caught in a
            # loop shows as one call that runs on to its token limit.
            self.longest_call = 0.0
            self.transcript = transcript

    def record(self, body, status, data):
        """Appends the call to the run's transcript (--keep): the last message sent and
        the answer, text and tool calls put back together from a stream."""
        if self.transcript is None:
            return
        try:
            request = json.loads(body)
        except ValueError:
            request = {}
        text, calls = answer_of(data.decode("utf-8", "replace"))
        messages = request.get("messages") or []
        entry = {
            "at": round(time.time(), 1), "status": status, "messages": len(messages),
            "system": str(messages[0].get("content") or "")[:200] if messages else "",
            "last": messages[-1] if messages else None, "text": text, "toolCalls": calls,
        }
        with self.lock, open(self.transcript, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def count(self, data):
        usage = None
        timings = None
        for event in events_of(data.decode("utf-8", "replace")):
            usage = event.get("usage") or usage
            timings = event.get("timings") or timings
        with self.lock:
            if usage:
                self.prompt_tokens += usage.get("prompt_tokens", 0)
                self.completion_tokens += usage.get("completion_tokens", 0)
            elif timings:
                self.prompt_tokens += timings.get("prompt_n", 0) + timings.get("cache_n", 0)
                self.completion_tokens += timings.get("predicted_n", 0)

def events_of(text):
    """The JSON objects of a response: its body, or each `data:` line of an SSE stream."""
    for line in text.splitlines() if text.lstrip().startswith("data:") else [text]:
        line = line[len("data:"):].strip() if line.startswith("data:") else line
        if not line.startswith("{"):
            continue
        try:
            yield json.loads(line)
        except ValueError:
            continue


def answer_of(text):
    """The answer's text and tool calls, from a JSON body or an SSE stream."""
    chunks = []
    calls = {}
    for event in events_of(text):
        for choice in event.get("choices") or []:
            part = choice.get("delta") or choice.get("message") or {}
            chunks.append(part.get("content") or "")
            for call in part.get("tool_calls") or []:
                slot = calls.setdefault(call.get("index", len(calls)), {"name": "", "arguments": ""})
                function = call.get("function") or {}
                slot["name"] += function.get("name") or ""
                slot["arguments"] += function.get("arguments") or ""
    return "".join(chunks), list(calls.values())

def conclave_config(port, timeout_s, options=()):
    # The defaults, as a user gets them: only the model and a 1/1/1 team (and a failed
    # task's files kept for the check, below), with the switches of an arm that measures
    # one (`conclave+reflect`, `conclave+llm.temperature=0.2`). Timeouts judge the
    # model's silences, so a slow local model is not cut off (timeout_s bounds the run
    # from outside).
    del timeout_s
    def lines(section):
        return "".join(f"{line}\n" for where, line in options if where == section)
    return f"""[llm]
provider = "openai"
model = "{MODEL}"
baseUrl = "http://127.0.0.1:{port}/v1"
{lines("llm")}
[team]
top = 1
mid = 1
bottomPerMid = 1
{lines("team")}
# The hidden check judges what the team left, a failed task's work included, so that a
# false alarm (reported failed, the check passes) stays measurable. A user's failed task
# is taken back by default.
[undo]
onFailure = "keep"
""" + "".join(f"\n[{section}]\n{lines(section)}" for section in sorted({where for where, _ in options} - {"llm", "team"}))


def system_switches(system):
    """`conclave+reflect+shareKnowledge`: the system `conclave` with those switches on, as
    (section, `reflect = true`) lines: a switch is a `[team]` one unless it names its
    section (`+llm.temperature=0.2`, `+verify.freshStart`), and `+errorStrategies=false`
    turns one off. The arm
    that measures a switch runs beside the plain system, task by task."""
    base, *switches = system.split("+")
    lines = []
    for switch in switches:
        name, _, value = switch.partition("=")
        section, _, key = name.rpartition(".")
        lines.append((section or "team", f"{key} = {value or 'true'}"))
    return base, lines


def run_conclave(binary, workspace, task, port, timeout_s, pi=None, options=(), bottom=None):
    config = conclave_config(port, timeout_s, options)
    if bottom:
        # Two models: the coders on a second server, the reviewers and planners on [llm]'s.
        bottom_port, bottom_model = bottom
        config += (f'\n[llm.bottom]\nprovider = "openai"\nmodel = "{bottom_model}"\n'
                   f'baseUrl = "http://127.0.0.1:{bottom_port}/v1"\n')
    if pi:
        # The team with pi as its executor: pi's own breaker and retries under test.
        config += f'\n[executor]\nkind = "pi"\npiPath = "{pi}"\n\n[approvals]\ncommands = "auto"\n'
    (workspace / "conclave.toml").write_text(config)
    return subprocess.run(
        [str(binary), "run", "--approve", "auto", "--workspace", str(workspace), task],
        cwd=workspace, capture_output=True, text=True, timeout=timeout_s,
    )


def with_named_files(task, workspace):
    """The task, then the text of the workspace files it names, as Conclave's team gets
    them in its prompt: the same start for both agents."""
    shown = []
    for word in task.replace("`", " ").replace(",", " ").split():
        word = word.strip(".:;()'\"")
        path = workspace / word
        if "." in word and not word.startswith("/") and ".." not in word and path.is_file():
            text = path.read_text(errors="replace")
            if len(text) <= 6 * 1024 and word not in [w for w, _ in shown]:
                shown.append((word, text))
    if not shown:
        return task
    files = "".join(f"\n{name}:\n```\n{text}{'' if text.endswith(chr(10)) else chr(10)}```\n"
                    for name, text in shown)
    return f"{task}\n\nThe files the task names, as they are now:\n{files}"


def run_pi(binary, workspace, task, port, timeout_s, agent_dir, preread=True):
    agent_dir.mkdir(parents=True, exist_ok=True)
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"conclave": {
        "baseUrl": f"http://127.0.0.1:{port}/v1",
        "api": "openai-completions",
        "apiKey": "CONCLAVE_PI_API_KEY",
        "compat": {"supportsStore": False, "supportsDeveloperRole": False,
                   "supportsReasoningEffort": False, "maxTokensField": "max_tokens"},
        # The server's real window and Conclave's output cap (its default max_tokens), so
        # pi neither assumes 128k nor asks for more output than the server can give.
        "models": [{"id": MODEL, "name": MODEL, "reasoning": False, "input": ["text"],
                    "contextWindow": CONTEXT_WINDOW, "maxTokens": MAX_TOKENS}],
    }}}))
    # Three call retries, as the issue measured pi with.
    (agent_dir / "settings.json").write_text(json.dumps({"retry": {
        "enabled": True, "maxRetries": 3, "baseDelayMs": 250,
        "provider": {"maxRetries": 0, "timeoutMs": 240000, "maxRetryDelayMs": 8000},
    }}))
    env = dict(os.environ, PI_CODING_AGENT_DIR=str(agent_dir), PI_OFFLINE="1",
               PI_TELEMETRY="0", CONCLAVE_PI_API_KEY="local")
    return subprocess.run(
        [str(binary), "-p", "--no-session", "--provider", "conclave", "--model", MODEL,
         "--tools", "read,bash,edit,write", "--no-extensions", "--no-skills",
         "--no-prompt-templates", "--no-themes",
         with_named_files(task, workspace) if preread else task],
        cwd=workspace, env=env, capture_output=True, text=True, timeout=timeout_s,
    )


# How Conclave's result says a completion rests on its own test alone (docs/protocol.md).
OWN_TEST_ONLY = "Only a test the team wrote itself ran the code"


def rule_findings(workspace):
    """rule id -> how many times it found something in the run's task, the rules of the
    checks that still failed at the end, and whether a completion rested on the team's
    own test alone (Conclave's store; {}, [], None for pi)."""
    db = workspace / ".conclave" / "conclave.db"
    if not db.is_file():
        return {}, [], None
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        bodies = [json.loads(b) for (b,) in conn.execute("SELECT body FROM tasks")]
        conn.close()
    except (sqlite3.Error, ValueError):
        return {}, [], None
    fired, final, own_test_only = {}, [], False
    for body in bodies:
        for rule, n in (body.get("ruleFindings") or {}).items():
            fired[rule] = fired.get(rule, 0) + n
        for check in body.get("checks") or []:
            if check.get("status") == "failed":
                final.extend(r for r in check.get("rules") or [] if r not in final)
        own_test_only |= OWN_TEST_ONLY in (body.get("result") or "")
    return fired, final, own_test_only


def reflections(workspace):
    """How many reflections the run's agents wrote (`team.reflect`): the lines beginning
    "- reflection:" that any version of their whiteboards held (0 for pi)."""
    db = workspace / ".conclave" / "conclave.db"
    if not db.is_file():
        return 0
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        versions = conn.execute("SELECT board, content FROM whiteboard_versions").fetchall()
        conn.close()
    except sqlite3.Error:
        return 0
    return len({(board, line) for board, content in versions for line in content.splitlines()
                if line.startswith("- reflection:")})


def task_dirs(which):
    """The task folders of a set, from split.json: dev is its dev list together with every
    task under tasks/ (so dev is what it was before the split), dev-humaneval the dev
    HumanEval problems under tasks/humaneval/ (dev_humaneval.py writes them), heldout its
    held-out list, all dev and heldout."""
    split = json.loads((HERE / "split.json").read_text())
    dev = {HERE / p for p in split["dev"]}
    dev |= {p for p in (HERE / "tasks").iterdir() if (p / "task.txt").is_file()}
    dev = sorted(p for p in dev if (p / "task.txt").is_file())
    humaneval = HERE / "tasks" / "humaneval"
    dev_humaneval = sorted(p for p in humaneval.iterdir() if (p / "task.txt").is_file()) if humaneval.is_dir() else []
    heldout = [HERE / p for p in split["heldout"]]
    return {"dev": dev, "dev-humaneval": dev_humaneval, "heldout": heldout, "all": dev + heldout}[which]


def set_of(task_dir):
    return "heldout" if task_dir.relative_to(HERE).parts[0] == "heldout" else "dev"


def hidden_check(task_dir, workspace):
    try:
        r = subprocess.run([sys.executable, str(task_dir / "check.py")], cwd=workspace,
                           capture_output=True, text=True, timeout=120)
        return r.returncode == 0, (r.stderr or r.stdout)[-400:]
    except subprocess.TimeoutExpired:
        return False, "check timed out"


def arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", default="conclave,pi",
                        help="conclave, pi, conclave-pi (the team with pi as its executor) and "
                             "conclave-2models (the coders on --bottom-upstream's model); "
                             "conclave+reflect+shareKnowledge turns those [team] switches on, "
                             "conclave+llm.temperature=0.2 sets [llm] temperature")
    parser.add_argument("--faults", default="0", help="comma-separated fault rates, e.g. 0,0.3")
    parser.add_argument("--tasks", default="", help="comma-separated task prefixes (default: all)")
    parser.add_argument("--set", default="dev", choices=["dev", "dev-humaneval", "heldout", "all"],
                        help="which tasks of split.json: dev (tasks/), dev-humaneval (the dev HumanEval "
                             "problems, tasks/humaneval/), heldout or all (dev and heldout; default: dev)")
    parser.add_argument("--upstream", default="http://127.0.0.1:18080")
    parser.add_argument("--bottom-upstream", default="http://127.0.0.1:18081",
                        help="the second model server of the system conclave-2models, whose "
                             "[llm.bottom] (the coders) it serves; [llm] (top and mid) stays on "
                             "--upstream")
    parser.add_argument("--bottom-model", default="qwen2.5-coder-0.5b-instruct",
                        help="the model name --bottom-upstream serves")
    parser.add_argument("--conclave", default=str(ROOT / "target/release/conclave"))
    parser.add_argument("--pi", default=str(ROOT / "tests/pi/node_modules/.bin/pi"))
    parser.add_argument("--timeout", type=int, default=900, help="seconds per run")
    parser.add_argument("--out", default=str(HERE / "results.jsonl"))
    parser.add_argument("--commit", help="the commit the binary was built from (default: HEAD's)")
    parser.add_argument("--seed", type=int, default=0,
                        help="this pass's number (repeats of the same task), kept in each row; with "
                             "--temperature, also the sampling seed")
    parser.add_argument("--temperature", type=float,
                        help="pin every chat call's temperature, and its seed (from --seed and the "
                             "call's number), at the proxy, for both agents alike; unset, the "
                             "server's own (llama-server: 0.8, a random seed) and the agents' apply")
    parser.add_argument("--template", default=os.environ.get("LLM_TEMPLATE", "fenced"),
                        help="the server's template form (serve.sh LLM_TEMPLATE), kept in each row")
    parser.add_argument("--refuse-calls", metavar="TEXT",
                        help="answer every chat call whose request contains TEXT with a 429, "
                             "for both agents: one kind of call the provider never serves")
    parser.add_argument("--no-pi-preread", action="store_true",
                        help="give pi the task alone, without the named files' text")
    parser.add_argument("--keep", action="store_true",
                        help="keep the workspaces, with each run's model calls in transcript.jsonl")
    return parser.parse_args(argv)


def selected_tasks(which, prefixes):
    """The task folders of a set whose name (or path under scripts/realmodel) starts with
    one of the comma-separated prefixes; all of them when none is given."""
    tasks = task_dirs(which)
    if prefixes:
        wanted = prefixes.split(",")
        tasks = [t for t in tasks if any(t.name.startswith(w) or str(t.relative_to(HERE)).startswith(w)
                                         for w in wanted)]
    return tasks


def main():
    args = arguments()
    # The runs start in their workspaces: binaries are named from here.
    args.conclave = str(Path(args.conclave).resolve())
    args.pi = str(Path(args.pi).resolve())

    commit = args.commit or subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                           capture_output=True, text=True).stdout.strip()
    tasks = selected_tasks(args.set, args.tasks)
    systems = args.systems.split(",")
    rates = [float(r) for r in args.faults.split(",")]
    out = open(args.out, "a")
    rows = []
    for rate in rates:
        sampling = None if args.temperature is None else (args.temperature, args.seed)
        proxy = Proxy(args.upstream, rate, sampling=sampling, refuse=args.refuse_calls)
        # The coders' server of conclave-2models, behind a proxy of its own that injects
        # the same faults; started only when that system runs.
        bottom_proxy = (Proxy(args.bottom_upstream, rate, seed=8, sampling=sampling,
                              refuse=args.refuse_calls)
                        if any(system_switches(s)[0] == "conclave-2models" for s in systems) else None)
        for task_dir in tasks:
            for system in systems:
                task = (task_dir / "task.txt").read_text().strip()
                # A switch's value (`+verify.disabled=["id"]`) may hold quotes and brackets: the
                # folder name keeps letters, digits and `.+=-` only.
                folder = "".join(c if c.isalnum() or c in ".+=-" else "_" for c in system)
                scratch = Path(tempfile.mkdtemp(prefix=f"bench-{folder}-{task_dir.name}-"))
                workspace = pinned_workspace() if sampling else scratch / "ws"
                # Only files/: never check.py, nor a held-out task's reference solution/.
                if (task_dir / "files").is_dir():
                    shutil.copytree(task_dir / "files", workspace)
                else:
                    workspace.mkdir()
                transcript = scratch / "transcript.jsonl" if args.keep else None
                for p in (proxy, bottom_proxy):
                    if p:
                        p.settle()
                        p.reset(transcript)
                started = time.monotonic()
                try:
                    base, switches = system_switches(system)
                    if base == "conclave":
                        r = run_conclave(args.conclave, workspace, task, proxy.port, args.timeout,
                                         options=switches)
                    elif base == "conclave-2models":
                        r = run_conclave(args.conclave, workspace, task, proxy.port, args.timeout,
                                         options=switches,
                                         bottom=(bottom_proxy.port, args.bottom_model))
                    elif base == "conclave-pi":
                        r = run_conclave(args.conclave, workspace, task, proxy.port, args.timeout, args.pi,
                                         options=switches)
                    else:
                        r = run_pi(args.pi, workspace, task, proxy.port, args.timeout, scratch / "agent",
                                   preread=not args.no_pi_preread)
                    code, tail = r.returncode, (r.stderr or "")[-1500:]
                except subprocess.TimeoutExpired:
                    code, tail = None, "timed out"
                seconds = time.monotonic() - started
                if workspace != scratch / "ws":
                    workspace = Path(shutil.move(workspace, scratch / "ws"))
                solved, why = hidden_check(task_dir, workspace)
                fired, failing, own_test_only = rule_findings(workspace)
                reflected = reflections(workspace)
                both = [p for p in (proxy, bottom_proxy) if p]
                row = {
                    "system": system, "faultRate": rate, "task": task_dir.name, "set": set_of(task_dir),
                    # Exit 3: completed, but only the team's own test ran the code (to
                    # review): not a claim that the work is done.
                    "solved": solved, "claimed": code == 0, "toReview": code == 3, "exit": code,
                    "seconds": round(seconds, 1), "calls": sum(p.calls for p in both),
                    "faults": sum(p.faults for p in both),
                    "promptTokens": sum(p.prompt_tokens for p in both),
                    "completionTokens": sum(p.completion_tokens for p in both),
                    "longestCallSeconds": round(max(p.longest_call for p in both), 1),
                    "check": "" if solved else why, "tail": "" if solved else tail,
                    "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "commit": commit, "template": args.template, "seed": args.seed,
                    "temperature": args.temperature, "timeout": args.timeout,
                    "piPreread": not args.no_pi_preread, "refuseCalls": args.refuse_calls,
                    "rulesFired": fired, "rulesFailingAtEnd": failing,
                    "ownTestOnly": own_test_only, "reflections": reflected,
                }
                if base == "conclave-2models":
                    row["bottomModel"] = args.bottom_model
                    row["bottomCalls"] = bottom_proxy.calls
                rows.append(row)
                out.write(json.dumps(row) + "\n")
                out.flush()
                print(f"{rate:>4} {system:9} {task_dir.name:26} solved={solved!s:5} claimed={code == 0!s:5} "
                      f"{seconds:6.0f}s calls={row['calls']} faults={row['faults']} "
                      f"tokens={row['promptTokens']}+{row['completionTokens']}", flush=True)
                if not args.keep:
                    shutil.rmtree(scratch, ignore_errors=True)
        for p in (proxy, bottom_proxy):
            if p:
                p.server.shutdown()
    print()
    print(summary(rows))
    print()
    print(rules_summary(rows))


def pinned_workspace():
    """Where a run on pinned sampling works: one folder, the same for every run (emptied
    first), then moved beside the run's transcript. The model reads the workspace's
    absolute path in tracebacks, and a random folder name would make two runs of the
    same task differ from that call on. One pinned bench at a time on a machine."""
    workspace = Path(tempfile.gettempdir()) / "conclave-bench-pinned" / "ws"
    shutil.rmtree(workspace, ignore_errors=True)
    workspace.parent.mkdir(parents=True, exist_ok=True)
    return workspace


def interval(rows, resamples=2000, seed=7):
    """pass@1 over the rows (several passes of a task averaged first) with a 95% interval
    from a bootstrap over tasks."""
    by_task = {}
    for r in rows:
        by_task.setdefault(r["task"], []).append(1.0 if r["solved"] else 0.0)
    rates = [sum(v) / len(v) for v in by_task.values()]
    if not rates:
        return 0.0, 0.0, 0.0
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(rates) for _ in rates) / len(rates) for _ in range(resamples))
    return (sum(rates) / len(rates), means[int(0.025 * resamples)],
            means[min(resamples - 1, int(0.975 * resamples))])


def summary(rows):
    lines = ["| system | faults | solved | pass@1 (95% interval over tasks) | claims right | false completions | time (total, mean) | model calls | tokens (prompt + completion) | per solved task: calls, tokens |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    # Held-out runs are summed apart from dev ones (rows from before the split are dev),
    # and HumanEval problems apart from edit tasks.
    key = lambda r: (r["system"], r["faultRate"], r.get("set", "dev"), kind_of(r["task"]))
    keys = sorted({key(r) for r in rows}, key=lambda k: (k[2] != "dev", k[3], k[1], k[0]))
    for system, rate, which, kind in keys:
        rs = [r for r in rows if key(r) == (system, rate, which, kind)]
        label = f"{system} ({which}, {kind})"
        solved = sum(r["solved"] for r in rs)
        # pi exits 0 on any normal end: its exit code is no claim to count.
        false = "—" if system.startswith("pi") else sum(r["claimed"] and not r["solved"] for r in rs)
        claims = sum(r["claimed"] for r in rs)
        right = "—" if system.startswith("pi") else f"{claims - false} of {claims}"
        total = sum(r["seconds"] for r in rs)
        mean, low, high = interval(rs)
        calls = sum(r["calls"] for r in rs)
        prompt = sum(r["promptTokens"] for r in rs)
        completion = sum(r["completionTokens"] for r in rs)
        # What the whole pass spent, failed runs included, for each task it solved.
        per_solved = f"{calls / solved:.0f}, {(prompt + completion) / solved:,.0f}" if solved else "—"
        lines.append(
            f"| {label} | {int(rate * 100)}% | {solved} of {len(rs)} | "
            f"{mean:.0%} ({low:.0%}–{high:.0%}) | {right} | {false} | "
            f"{total / 60:.0f} min, {total / len(rs):.0f} s | {calls} | "
            f"{prompt} + {completion} | {per_solved} |")
    # Conclave's completions by what they rested on (rows that record it). Builds before
    # exit code 3 claimed the weak ones too (exit 0); since, they are "to review".
    completions = [r for r in rows if (r["claimed"] or r.get("toReview"))
                   and r.get("ownTestOnly") is not None]
    if completions:
        weak = [r for r in completions if r["ownTestOnly"] or r.get("toReview")]
        strong = [r for r in completions if not (r["ownTestOnly"] or r.get("toReview"))]
        lines.append("")
        lines.append(
            f"Completions resting only on the team's own test: {len(weak)}, right {sum(r['solved'] for r in weak)} "
            f"({sum(1 for r in weak if r['claimed'])} of them claimed, from builds before exit code 3); "
            f"on more (the task's examples, tests in the project): {len(strong)}, right {sum(r['solved'] for r in strong)}.")
    # Failures resting only on the team's own test: the runs a rule weighing the task's
    # examples above that test would hand over for review instead.
    own_test_failures = [r for r in rows if not r["claimed"] and not r.get("toReview")
                         and r.get("rulesFailingAtEnd") == ["tests.acceptance"]]
    if own_test_failures:
        lines.append("")
        lines.append(
            f"Failures resting only on the team's own test (`tests.acceptance` the one rule failing at the end): "
            f"{len(own_test_failures)}, of them right code (false alarms) {sum(r['solved'] for r in own_test_failures)}.")
    return "\n".join(lines)


def kind_of(task):
    return "HumanEval" if task.startswith("HE-") else "edit"


def solved(row):
    return row["solved"]


def delivered(row):
    """A right completion (claimed, or handed over to review with exit 3): under the
    default `undo.onFailure = "restore"` a failed task's changes are taken back, so this
    is the work a user keeps. The bench keeps them to count false alarms."""
    return row["solved"] and (row["claimed"] or row.get("toReview", False))


def task_rates(rows, outcome=solved):
    """{task: share of its runs with the outcome (solved, by default)}."""
    by_task = {}
    for r in rows:
        by_task.setdefault(r["task"], []).append(1.0 if outcome(r) else 0.0)
    return {task: sum(v) / len(v) for task, v in by_task.items()}


def paired(rows_a, rows_b, resamples=2000, seed=7, outcome=solved):
    """The difference in pass@1 of two agents over the tasks both ran (each task's runs
    averaged first), with a 95% interval from a bootstrap over those tasks: (tasks,
    difference, low, high)."""
    a, b = task_rates(rows_a, outcome), task_rates(rows_b, outcome)
    both = sorted(set(a) & set(b))
    if not both:
        return 0, 0.0, 0.0, 0.0
    diffs = [a[t] - b[t] for t in both]
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(diffs) for _ in diffs) / len(diffs) for _ in range(resamples))
    return (len(both), sum(diffs) / len(diffs), means[int(0.025 * resamples)],
            means[min(resamples - 1, int(0.975 * resamples))])


STRATEGIES_OFF = "conclave+errorStrategies=false"


class Arms:
    """The two systems paired and what says the switch acted in a run of the one with it
    on: a rule (on by default) against the team with it in `verify.disabled`,
    `team.reflect` (off by default) against the plain team, or `team.errorStrategies` (on
    by default) against the team with it off."""

    def __init__(self, rule=None, reflect=False, strategies=False):
        if reflect:
            self.name, self.on, self.off = "team.reflect", "conclave+reflect", "conclave"
            self.acted = lambda row: (row.get("reflections") or 0) > 0
        elif strategies:
            # The next steps follow every failure (a failed tool call or check, a retry),
            # and a row does not count them: the switch counts as acting in every run.
            self.name, self.on, self.off = "team.errorStrategies", "conclave", STRATEGIES_OFF
            self.acted = lambda row: True
        else:
            self.name, self.on, self.off = rule, "conclave", off_system(rule)
            self.acted = lambda row: rule in (row.get("rulesFired") or [])


def off_system(rule):
    return f'conclave+verify.disabled=["{rule}"]'


def same_run(a, b):
    """Two rows of one run repeated: the same calls, tokens and outcome."""
    keys = ("calls", "promptTokens", "completionTokens", "solved", "exit")
    return all(a.get(k) == b.get(k) for k in keys)


def pairs(rows, arms):
    """(task, on row, off row or None, fired) for every task the on arm ran: a task the
    switch did not act in has its on row standing for both arms."""
    on = {r["task"]: r for r in rows if r["system"] == arms.on}
    off = {r["task"]: r for r in rows if r["system"] == arms.off}
    return [(task, row, off.get(task), arms.acted(row)) for task, row in sorted(on.items())]


def repeatable(found):
    """Whether the off arm, run on tasks where the switch never acted, repeated the on
    arm's run there (None before any such repeat)."""
    repeats = [same_run(on, off) for _, on, off, fired in found if off is not None and not fired]
    return all(repeats) if repeats else None


def pinned_pairing(rows, arms):
    """A switch's pairing on pinned sampling (pair_switch.py): (on rows, off rows, found,
    repeats, runs alone), the two row lists aligned task by task. When runs repeat, the
    on run of a task the switch never acted in stands for both arms; once a repeat came
    out different, only the tasks both arms ran are paired (the others ran alone). A
    task it acted in whose off arm has not run yet is left out."""
    found = pairs(rows, arms)
    repeats = repeatable(found)
    on_rows, off_rows, alone = [], [], 0
    for _, on, off, fired in found:
        if fired and off is None:
            continue
        if off is None and repeats is False:
            alone += 1
            continue
        on_rows.append(on)
        off_rows.append(off if off is not None else on)
    return on_rows, off_rows, found, repeats, alone


def default_team_runs(rows):
    """{task: row} standing for the default team in the rows of one pinned pass: its own
    runs, and, where that pass's reflect pairing repeated itself, the reflecting runs
    that never reflected (the same runs call for call), as rows of the default team."""
    found = {r["task"]: r for r in rows if r["system"] == "conclave"}
    reflect = Arms(reflect=True)
    if repeatable(pairs(rows, reflect)):
        for r in rows:
            if r["system"] == reflect.on and not reflect.acted(r):
                found.setdefault(r["task"], {**r, "system": "conclave"})
    return found


def plain_team_runs(rows):
    """The default team's runs among `rows`: its own, and in each pinned pass the runs of
    a switch's arm that stand for it (`default_team_runs`), so a pass paired with pi
    counts the team on every task it ran."""
    own = [r for r in rows if r["system"] == "conclave"]
    standing = []
    for key in sorted({pinned_key(r) for r in rows if r.get("temperature") is not None}, key=str):
        group = [r for r in rows if pinned_key(r) == key]
        ran = {r["task"] for r in group if r["system"] == "conclave"}
        standing += [r for task, r in sorted(default_team_runs(group).items()) if task not in ran]
    return own + standing


def with_on_arm(rows, seeded):
    """`rows` with the seeded default-team runs of the tasks it has no such run of."""
    own = {r["task"] for r in rows if r["system"] == "conclave"}
    return rows + [r for task, r in sorted(seeded.items()) if task not in own]


PINNED = ("commit", "seed", "temperature", "timeout", "template", "faultRate")


def pins(row):
    return {k: row.get(k) for k in PINNED}


def pinned_key(row):
    """What a row's runs share with the runs of its pinned pass."""
    return tuple(row.get(k) for k in PINNED)


def arms_of(system):
    """The pinned pairing a team arm belongs to and whether it is that pairing's on arm,
    or None for an arm pair_switch.py does not pair."""
    if system == "conclave+reflect":
        return Arms(reflect=True), True
    if system == STRATEGIES_OFF:
        return Arms(strategies=True), False
    prefix, suffix = 'conclave+verify.disabled=["', '"]'
    rule = system[len(prefix):-len(suffix)] if system.startswith(prefix) and system.endswith(suffix) else ""
    if rule and '"' not in rule:
        return Arms(rule), False
    return None


def arm_and_base(rows, system):
    """A team arm's rows and the plain team's rows of the same build and seed, to pair
    task by task, and whether a pinned run stood for both arms. Runs on pinned sampling
    are paired the way pair_switch.py pairs them: a run the switch never acted in is one
    run of both arms, so a task only the on arm ran is not left out."""
    other = [r for r in rows if r["system"] == system]
    runs = {(r.get("commit"), r.get("seed")) for r in other}
    same = [r for r in plain_team_runs(rows) if (r.get("commit"), r.get("seed")) in runs]
    pairing = arms_of(system)
    pinned = {pinned_key(r) for r in other if r.get("temperature") is not None}
    if pairing is None or not pinned:
        return other, same, False
    arms, arm_is_on = pairing
    arm_rows = [r for r in other if pinned_key(r) not in pinned]
    base_rows = [r for r in same if pinned_key(r) not in pinned]
    stood = False
    for key in sorted(pinned, key=str):
        group = [r for r in rows if pinned_key(r) == key]
        if arms.on == "conclave":
            group = with_on_arm(group, default_team_runs(group))
        on_rows, off_rows, *_ = pinned_pairing(group, arms)
        arm_rows += on_rows if arm_is_on else off_rows
        base_rows += off_rows if arm_is_on else on_rows
        stood = stood or any(on is off for on, off in zip(on_rows, off_rows))
    return arm_rows, base_rows, stood


def by_task(rows):
    """One line a task, one column a system: runs solved of runs, and for Conclave its
    claims (false ones named). pi's exit code claims nothing (it exits 0 on any normal
    end), so only the hidden check speaks for it. Then, for pi on the same tasks as
    `conclave`, the paired difference in pass@1 (Conclave's rows pool the builds of the
    files given; pi's do not depend on Conclave's build)."""
    systems = sorted({r["system"] for r in rows}, key=lambda s: (s != "conclave", s))
    tasks = sorted({r["task"] for r in rows})
    lines = ["| task | " + " | ".join(systems) + " |", "| --- |" + " --- |" * len(systems)]
    for task in tasks:
        cells = []
        for system in systems:
            rs = [r for r in rows if r["task"] == task and r["system"] == system]
            if not rs:
                cells.append("—")
                continue
            cell = f"{sum(r['solved'] for r in rs)} of {len(rs)}"
            if not system.startswith("pi"):
                claimed = sum(r["claimed"] for r in rs)
                false = sum(r["claimed"] and not r["solved"] for r in rs)
                cell += f", claimed {claimed}" + (f" (**{false} false**)" if false else "")
            cells.append(cell)
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    # Conclave against pi, over every build; any other arm of the team (conclave-2models,
    # conclave+reflect) against the plain team of the same build and seed only, so that
    # the arm's switch is the one difference.
    base = [r for r in rows if r["system"] == "conclave"]
    team = plain_team_runs(rows)
    for system in systems:
        if system == "conclave" or not base:
            continue
        other = [r for r in rows if r["system"] == system]
        if system.startswith("pi"):
            n, diff, low, high = paired(team, other)
            first, second, within = "conclave", system, ""
            stood = len(team) > len(base)
        else:
            other, same, stood = arm_and_base(rows, system)
            n, diff, low, high = paired(other, same)
            first, second, within = system, "conclave", " of the same build and seed"
        if n:
            both = ""
            if stood and within:
                both = " (on pinned sampling, a run the switch never acted in is one run of both)"
            elif stood:
                both = (" (on pinned sampling, a run of a switch's arm in which the switch never "
                        "acted is a run of the team)")
            lines.append("")
            lines.append(f"{first} minus {second}{within}, paired over the {n} tasks both ran{both}: "
                         f"{diff:+.0%} pass@1 (95% interval {low:+.0%} to {high:+.0%}).")
        kinds = sorted({kind_of(r["task"]) for r in team + other})
        if n and not within and len(kinds) > 1:
            # Function problems and edit tasks differ too much to read from one figure.
            for kind in kinds:
                k_n, k_diff, k_low, k_high = paired([r for r in team if kind_of(r["task"]) == kind],
                                                    [r for r in other if kind_of(r["task"]) == kind])
                if k_n:
                    lines.append(f"On the {k_n} {kind} tasks both ran: {k_diff:+.0%} "
                                 f"(95% interval {k_low:+.0%} to {k_high:+.0%}).")
        if n and within:
            # Two arms of the team both say "completed": count what the defaults keep.
            _, kept, kept_low, kept_high = paired(other, same, outcome=delivered)
            lines.append(f"The same in right completions (what the defaults keep; a failed "
                         f"task's changes are taken back): {kept:+.0%} "
                         f"(95% interval {kept_low:+.0%} to {kept_high:+.0%}).")
    return "\n".join(lines)


def by_build(rows):
    """One line for each build of each system: its runs, solved, claims and false
    completions, oldest first (by the first run's time)."""
    key = lambda r: (r["system"], r.get("commit", "?"), r["faultRate"])
    keys = sorted({key(r) for r in rows},
                  key=lambda k: min(r.get("at", "") for r in rows if key(r) == k))
    lines = ["| system | commit | faults | runs | tasks | solved | claims (false) | first run |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for system, commit, rate in keys:
        rs = [r for r in rows if key(r) == (system, commit, rate)]
        claims = "—" if system.startswith("pi") else (
            f"{sum(r['claimed'] for r in rs)} ({sum(r['claimed'] and not r['solved'] for r in rs)})")
        lines.append(f"| {system} | `{commit}` | {int(rate * 100)}% | {len(rs)} | {len({r['task'] for r in rs})} | "
                     f"{sum(r['solved'] for r in rs)} | {claims} | {min(r.get('at', '') for r in rs)[:10]} |")
    return "\n".join(lines)


def read_rows(path):
    """The runs of a rows file, one JSON line each."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def by_pass(files):
    """One line for each system of each committed rows file (a pass), oldest first: its
    build, seed, faults, template and tasks, and the runs solved, claimed (false) and
    handed over to review (right). `--rerun FILE` prints the command that runs a pass
    again."""
    lines = ["| rows | system | build | seed | faults | template | tasks | solved | claims (false) | to review (right) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    passes = [(f, read_rows(f)) for f in files]
    passes = sorted((p for p in passes if p[1]), key=lambda p: min(r.get("at", "") for r in p[1]))
    for f, rows in passes:
        def values(key, show=str):
            return ", ".join(sorted({show(r.get(key)) for r in rows}))
        for system in sorted({r["system"] for r in rows}, key=lambda s: (s != "conclave", s)):
            rs = [r for r in rows if r["system"] == system]
            tasks = {r["task"] for r in rs}
            problems = sum(kind_of(t) == "HumanEval" for t in tasks)
            kinds = ", ".join(k for k in (f"{len(tasks) - problems} edit" if len(tasks) > problems else "",
                                          f"{problems} HumanEval" if problems else "") if k)
            if system.startswith("pi"):
                claims = review = "—"
            else:
                claims = f"{sum(r['claimed'] for r in rs)} ({sum(r['claimed'] and not r['solved'] for r in rs)})"
                review = (f"{sum(bool(r.get('toReview')) for r in rs)} "
                          f"({sum(bool(r.get('toReview')) and r['solved'] for r in rs)})")
            lines.append(f"| `{Path(f).name}` | {system} | {values('commit', lambda c: f'`{c}`')} | "
                         f"{values('seed')} | {values('faultRate', lambda x: f'{int(x * 100)}%')} | "
                         f"{values('template')} | {kinds} ({set_name(rows[0])}) | "
                         f"{sum(r['solved'] for r in rs)} of {len(rs)} | {claims} | {review} |")
    return "\n".join(lines)


def set_name(row):
    """The `--set` a row's task is in (rows keep "heldout" or "dev" only)."""
    if row.get("set") == "heldout":
        return "heldout"
    return "dev-humaneval" if kind_of(row["task"]) == "HumanEval" else "dev"


def rerun_command(rows_file):
    """The command that runs a committed pass again: its tasks, systems, faults, seed,
    template and sampling from its rows, the binary built from its commit."""
    rows = read_rows(rows_file)
    if not rows:
        sys.exit(f"{rows_file}: no rows")
    first = rows[0]
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    systems = list(dict.fromkeys(r["system"] for r in rows))
    rates = list(dict.fromkeys(r["faultRate"] for r in rows))
    commit = first.get("commit", "HEAD")
    parts = ["scripts/realmodel/bench.py", f"--set {set_name(first)}", f"--tasks {','.join(tasks)}",
             f"--systems {','.join(systems)}"]
    if rates != [0.0]:
        parts.append(f"--faults {','.join(str(r) for r in rates)}")
    # Rows from before the timeout was recorded all ran 600 s.
    parts.append(f"--timeout {first.get('timeout') or 600}")
    if first.get("seed") is not None:
        parts.append(f"--seed {first['seed']}")
    if first.get("temperature") is not None:
        parts.append(f"--temperature {first['temperature']}")
    if first.get("piPreread") is False:
        parts.append("--no-pi-preread")
    if first.get("refuseCalls"):
        parts.append(f"--refuse-calls {shlex.quote(first['refuseCalls'])}")
    parts += [f"--template {first.get('template') or 'fenced'}", "--keep", f"--commit {commit}",
              f"--conclave /tmp/conclave-{commit}", f"--out {rows_file}"]
    return " \\\n    ".join(parts)


def checked_runs(rows):
    """The runs the team's checks judged: the team's rows (every arm of it) that record the
    rules. pi's rows carry the same fields, empty: pi runs no checks."""
    return [r for r in rows if "rulesFired" in r and r["system"].startswith("conclave")]


def rules_summary(rows):
    """Per check rule: the runs it found something in, how many of those the hidden check
    passed in the end, and its false alarms: runs reported failed with the rule still
    failing although the hidden check passes."""
    rows = checked_runs(rows)
    if not rows:
        return ""
    lines = [f"Rules over {len(rows)} runs that record them:", "",
             "| rule | runs it fired in | of those solved | false alarms (failed at the end, hidden check passes) |",
             "| --- | --- | --- | --- |"]
    for rule, (fired, solved, alarms) in sorted(rule_counts(rows).items()):
        lines.append(f"| `{rule}` | {fired} | {solved} | {alarms} |")
    return "\n".join(lines)


def rule_counts(rows):
    """{rule: (runs it fired in, of those solved, false alarms)} over the rows that record
    rules, for every rule that fired in one."""
    rows = checked_runs(rows)
    counts = {}
    for rule in {rule for r in rows for rule in r["rulesFired"]}:
        fired = [r for r in rows if r["rulesFired"].get(rule)]
        alarms = sum(1 for r in rows if rule in r.get("rulesFailingAtEnd", []) and r["solved"]
                     and not r["claimed"])
        counts[rule] = (len(fired), sum(r["solved"] for r in fired), alarms)
    return counts


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--rerun":
        print(rerun_command(sys.argv[2]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--summary" and "--by-pass" in sys.argv[2:]:
        print(by_pass([f for f in sys.argv[2:] if f != "--by-pass"]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--summary":
        # bench.py --summary [--by-build] [--by-task] FILES...
        per_task = "--by-task" in sys.argv[2:]
        per_build = "--by-build" in sys.argv[2:]
        files = [f for f in sys.argv[2:] if f not in ("--by-task", "--by-build")]
        rows = [r for f in files for r in read_rows(f)]
        print(summary(rows))
        print()
        if per_build:
            print(by_build(rows))
            print()
        if per_task:
            for rate in sorted({r["faultRate"] for r in rows}):
                print(f"At {int(rate * 100)}% injected faults:")
                print()
                print(by_task([r for r in rows if r["faultRate"] == rate]))
                print()
        print(rules_summary(rows))
    else:
        main()

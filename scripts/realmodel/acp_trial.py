"""`conclave acp` on the real local model, as an ACP client drives it: a prompt with a
file mention (`resource_link`), then a follow-up with an attached file (`resource`),
every permission approved. Prints each turn's `session/prompt` answer, the end of the
agent's messages, and the files as they end up.

    scripts/realmodel/serve.sh 1.5b 18080 &
    python3 scripts/realmodel/acp_trial.py target/release/conclave /tmp/acp-trial

Not in CI: a real model takes minutes a turn on two cores.
"""
import json
import pathlib
import shutil
import subprocess
import sys
import threading
import time

binary, ws = sys.argv[1], pathlib.Path(sys.argv[2])
if ws.exists(): shutil.rmtree(ws)
ws.mkdir(parents=True)
(ws / "conclave.toml").write_text("""[llm]
provider = "openai"
model = "qwen2.5-coder-1.5b-instruct"
baseUrl = "http://127.0.0.1:18080/v1"

[team]
top = 1
mid = 1
bottomPerMid = 1
""")
(ws / "prices.py").write_text('''PRICES = {"apple": 0.5, "pear": 0.75, "melon": 2.0}


def price_of(item):
    return PRICES[item]
''')
p = subprocess.Popen([binary, "acp"], cwd=ws, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=open(ws / "acp-stderr.log", "w"), text=True, bufsize=1)
answers, texts, lock = {}, [], threading.Lock()
def reader():
    for line in p.stdout:
        msg = json.loads(line)
        if "method" in msg and "id" in msg:
            if msg["method"] == "session/request_permission":
                opts = [o["optionId"] for o in msg["params"]["options"]]
                pick = "approve" if "approve" in opts else opts[0]
                p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"outcome": {"outcome": "selected", "optionId": pick}}}) + "\n")
            else:
                p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}) + "\n")
        elif "method" in msg:
            u = msg["params"].get("update", {})
            if u.get("sessionUpdate") == "agent_message_chunk":
                with lock: texts.append(u["content"].get("text", ""))
        else:
            with lock: answers[msg["id"]] = msg
threading.Thread(target=reader, daemon=True).start()
n = 0
def call(method, params, timeout=900):
    global n
    n += 1; i = n
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    t = time.time()
    while time.time() - t < timeout:
        with lock:
            if i in answers: return answers.pop(i), time.time() - t
        time.sleep(0.2)
    return None, timeout
call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
sid = call("session/new", {"cwd": str(ws), "mcpServers": []})[0]["result"]["sessionId"]
uri = (ws / "prices.py").as_uri()
turns = [
    [{"type": "text", "text": "Add a function total(items) to "},
     {"type": "resource_link", "uri": uri, "name": "prices.py"},
     {"type": "text", "text": " that returns the sum of price_of(item) for each item in the list items."}],
    [{"type": "text", "text": "Now write test_prices.py with a pytest test of total(["},
     {"type": "text", "text": "\"apple\", \"melon\"]) == 2.5 for the code in "},
     {"type": "resource", "resource": {"uri": uri, "text": (ws / "prices.py").read_text()}}],
]
for k, prompt in enumerate(turns):
    with lock: texts.clear()
    answer, took = call("session/prompt", {"sessionId": sid, "prompt": prompt})
    print(f"== turn {k+1}: {took:.0f} s: {json.dumps(answer.get('result') if answer else None)} {json.dumps(answer.get('error')) if answer and 'error' in answer else ''}")
    with lock: print("".join(texts)[-1500:])
print("== prices.py\n" + (ws / "prices.py").read_text())
t = ws / "test_prices.py"
print("== test_prices.py\n" + (t.read_text() if t.exists() else "(none)"))
p.stdin.close(); p.wait(timeout=60)

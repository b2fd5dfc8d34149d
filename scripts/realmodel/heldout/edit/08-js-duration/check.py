# Hidden check: run in the task's workspace; exit 0 means solved.
import json, subprocess

cases = {5: "5s", 3600: "1h", 3605: "1h 5s", 0: "0s", 60: "1m", 61: "1m 1s",
         3725: "1h 2m 5s", 7260: "2h 1m", 86399: "23h 59m 59s", 90000: "25h"}
js = (
    "const t = require('./timefmt.js'); const assert = require('assert');"
    f"const cases = {json.dumps({str(k): v for k, v in cases.items()})};"
    "for (const [n, want] of Object.entries(cases)) {"
    "  assert.strictEqual(t.humanDuration(Number(n)), want, `humanDuration(${n})`); }"
    # What was there still works.
    "assert.strictEqual(t.clock(3725), '01:02:05');"
    "assert.strictEqual(t.clock(0), '00:00:00');"
    "assert.strictEqual(t.pad2(7), '07');"
    "assert.strictEqual(t.pad2(12), '12');"
)
r = subprocess.run(["node", "-e", js], capture_output=True, text=True, timeout=30)
assert r.returncode == 0, r.stderr

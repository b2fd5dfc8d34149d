# Hidden check: run in the task's workspace; exit 0 means solved.
import os, sys
sys.path.insert(0, os.getcwd())
import subprocess
js = "const {slugify}=require('./slugify.js');const a=require('assert');" \
     "a.strictEqual(slugify('Hello, World!'),'hello-world');" \
     "a.strictEqual(slugify('  Rust & Go  '),'rust-go');" \
     "a.strictEqual(slugify('abc'),'abc');"
r = subprocess.run(["node", "-e", js], capture_output=True, text=True, timeout=20)
assert r.returncode == 0, r.stderr

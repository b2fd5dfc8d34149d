# Hidden check: run in the task's workspace; exit 0 means solved.
import hashlib, os, signal, subprocess, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())
signal.alarm(60)

# The test file, whitespace at line ends and file ends aside, must be as given.
TEST_SHA256 = "781b1c7711f6c4b0d659d6a28cc9fc79c1873674ba409d2c544feabc4e8b7103"
with open("test_names.py") as f:
    text = "\n".join(line.rstrip() for line in f.read().strip().splitlines())
assert hashlib.sha256(text.encode()).hexdigest() == TEST_SHA256, "test_names.py was changed"

from names import to_camel, to_snake

cases = {"userId": "user_id", "HelloWorld": "hello_world", "Name": "name", "x": "x",
         "already_snake": "already_snake", "parseJsonBody": "parse_json_body",
         "A": "a", "pageNumber2": "page_number2", "": ""}
for given, want in cases.items():
    assert to_snake(given) == want, (given, to_snake(given), want)
# What was there still works.
assert to_camel("user_id") == "userId" and to_camel("max_retry_count") == "maxRetryCount"

r = subprocess.run([sys.executable, "-m", "unittest", "test_names"], capture_output=True, text=True, timeout=60)
assert r.returncode == 0, r.stderr

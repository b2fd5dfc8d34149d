# Hidden check: run in the task's workspace; exit 0 means solved.
import os, signal, sys, tempfile
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.getcwd())
signal.alarm(60)

import dbconfig

assert dbconfig.database_url("app.ini") == "postgresql://shop@db.internal:6432/orders", \
    dbconfig.database_url("app.ini")
assert dbconfig.DEFAULT_PORT == 5432

with tempfile.TemporaryDirectory() as d:
    other = os.path.join(d, "other.ini")
    with open(other, "w") as f:
        f.write("[database]\nname = billing\nhost = 10.1.2.3\nuser = admin\n\n"
                "[server]\nhost = localhost\nport = 9000\n")
    assert dbconfig.database_url(other) == "postgresql://admin@10.1.2.3:5432/billing", \
        dbconfig.database_url(other)
    spaced = os.path.join(d, "spaced.ini")
    with open(spaced, "w") as f:
        f.write("; comment\n[database]\nuser=ro\nhost=  db2 \nport=15432\nname =  stats\n")
    assert dbconfig.database_url(spaced) == "postgresql://ro@db2:15432/stats", dbconfig.database_url(spaced)
    # What was there still works.
    assert dbconfig.server_address(other) == ("localhost", 9000)
assert dbconfig.server_address("app.ini") == ("0.0.0.0", 8080)

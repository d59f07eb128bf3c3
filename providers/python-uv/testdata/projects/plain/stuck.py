"""Starts a process that keeps stdout and stderr open and cannot be killed,
records its pid in {"pid_file": PATH}, then sleeps; or, given {"exit": N},
writes {"stdout": TEXT} and exits with status N, leaving the process behind.

The process starts in a session of its own and is frozen in the cgroup v1
freezer directory {"freezer": DIR}: a frozen process does not act on
SIGKILL until it is thawed, so every kill of the invocation fails.
"""
import json
import os
import subprocess
import sys
import time

req = json.load(sys.stdin)
holder = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
)
state = os.path.join(req["freezer"], "freezer.state")
with open(os.path.join(req["freezer"], "cgroup.procs"), "w", encoding="utf-8") as f:
    f.write(str(holder.pid))
with open(state, "w", encoding="utf-8") as f:
    f.write("FROZEN")
while True:
    with open(state, encoding="utf-8") as f:
        if f.read().strip() == "FROZEN":
            break
    time.sleep(0.01)
tmp = req["pid_file"] + ".tmp"
with open(tmp, "w", encoding="utf-8") as f:
    f.write(str(holder.pid))
os.rename(tmp, req["pid_file"])
if "exit" in req:
    sys.stdout.write(req.get("stdout", ""))
    sys.stdout.flush()
    sys.exit(req["exit"])
time.sleep(600)

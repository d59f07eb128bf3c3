"""Starts a process in a session of its own that keeps stdout and stderr
open and is out of reach of a kill of this process group, records its pid
in {"pid_file": PATH}, then sleeps."""
import json
import os
import subprocess
import sys
import time

req = json.load(sys.stdin)
holder = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
)
tmp = req["pid_file"] + ".tmp"
with open(tmp, "w", encoding="utf-8") as f:
    f.write(str(holder.pid))
os.rename(tmp, req["pid_file"])
time.sleep(600)

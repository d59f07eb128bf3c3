"""Spawns a child that sleeps, records both pids, then sleeps itself.

The input names the pid file: {"pid_file": PATH}.
"""
import json
import os
import subprocess
import sys
import time

req = json.load(sys.stdin)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
tmp = req["pid_file"] + ".tmp"
with open(tmp, "w", encoding="utf-8") as f:
    json.dump({"parent": os.getpid(), "child": child.pid}, f)
os.rename(tmp, req["pid_file"])
time.sleep(600)

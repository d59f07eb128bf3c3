"""Sleeps {"ms": N} milliseconds, then answers {"slept": N}."""
import json
import sys
import time

ms = json.load(sys.stdin)["ms"]
time.sleep(ms / 1000)
json.dump({"slept": ms}, sys.stdout)

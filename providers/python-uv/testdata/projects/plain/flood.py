"""Writes {"n": N} bytes of output to stdout (not valid JSON past the cap)."""
import json
import sys

n = json.load(sys.stdin)["n"]
sys.stdout.write('"' + "x" * n + '"')

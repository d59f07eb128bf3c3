"""Writes {"stdout": TEXT} to stdout and {"stderr": TEXT} to stderr, then
exits with status {"exit": N} (default 3)."""
import json
import sys

req = json.load(sys.stdin)
sys.stdout.write(req.get("stdout", ""))
sys.stderr.write(req.get("stderr", ""))
sys.exit(req.get("exit", 3))

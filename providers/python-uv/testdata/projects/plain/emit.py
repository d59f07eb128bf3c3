"""Writes {"stdout_hex": HEX} to stdout as raw bytes and {"stderr": TEXT} to stderr."""
import json
import sys

req = json.load(sys.stdin)
print(req.get("stderr", ""), file=sys.stderr)
sys.stdout.buffer.write(bytes.fromhex(req["stdout_hex"]))

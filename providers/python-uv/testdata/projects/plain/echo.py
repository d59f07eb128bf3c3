"""Echoes its JSON input."""
import json
import sys

json.dump({"echo": json.load(sys.stdin)}, sys.stdout)

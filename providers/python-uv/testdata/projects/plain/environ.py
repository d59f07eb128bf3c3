"""Answers the names of its environment variables and a few values."""
import json
import os
import sys

json.load(sys.stdin)
json.dump({"names": sorted(os.environ), "uv_python_downloads": os.environ.get("UV_PYTHON_DOWNLOADS"),
           "stdio": [sys.stdin.encoding, sys.stdout.encoding]}, sys.stdout)

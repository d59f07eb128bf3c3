"""Reads a JSON input on stdin and answers it with the dependency version and the marker."""
import json
import os
import sys

import six

data = json.load(sys.stdin)
with open(os.path.join(sys.prefix, "prepared"), encoding="utf-8") as f:
    marker = f.read()
json.dump({"input": data, "six": six.__version__, "marker": marker}, sys.stdout)

"""Setup hook: creates .venv/prepared with exclusive-create, so a second run crashes."""
import os
import sys

import six

path = os.path.join(sys.prefix, "prepared")
with open(path, "x", encoding="utf-8") as f:
    f.write("six " + six.__version__ + "\n")
print("prepared", path, file=sys.stderr)

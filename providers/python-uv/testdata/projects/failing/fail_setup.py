"""Setup hook: appends one line to .venv/setup_attempts, then fails."""
import os
import sys

with open(os.path.join(sys.prefix, "setup_attempts"), "a", encoding="utf-8") as f:
    f.write("attempt\n")
raise SystemExit("fixture setup failed on purpose")

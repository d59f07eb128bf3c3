"""Writes to stderr and exits with status 3."""
import sys

print("fixture crash: something went wrong", file=sys.stderr)
sys.exit(3)

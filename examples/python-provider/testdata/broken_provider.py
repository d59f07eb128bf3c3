#!/usr/bin/env python3
"""A deliberately broken copy of provider.py, for the conformance tests:
it accepts any request without checking the bearer token, and answers
every command with the sequence after its own."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import provider  # noqa: E402


class Broken(provider.Handler):
    def authorized(self):
        return True

    def response_sequence(self, sequence):
        return sequence + 1


if __name__ == "__main__":
    provider.serve(Broken)

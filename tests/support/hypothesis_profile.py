"""Hypothesis profiles, loaded as a pytest plugin (pyproject's addopts). `ci` (what `.ci/run` selects)
replays the same examples on every run, so a landing run is reproducible; local runs of
`scripts/test.sh` explore new examples each time."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if profile := os.environ.get("MY_AGENT_HYPOTHESIS_PROFILE"):
    settings.load_profile(profile)

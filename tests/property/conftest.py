"""Hypothesis profiles for the property tests: `ci` (the default, fast) and `campaign` (long runs).

Select one with `HYPOTHESIS_PROFILE=campaign pytest tests/property`.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=_SLOW_OK,
                          print_blob=True)
settings.register_profile("campaign", max_examples=5000, deadline=None, suppress_health_check=_SLOW_OK,
                          print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

"""Helpers the test suite shares: imported as `support.<module>` (pytest puts `tests/` on the path,
pyproject.toml `pythonpath`), and by name in the worker processes the concurrency and crash tests spawn
(a spawned process inherits its parent's `sys.path`).

- `conc_pg`: a private PostgreSQL schema per test (`fresh_schema`, `url_for`), skip/fail policy.
- `conc_work`: the worker functions of the multi-process runtime races.
- `conc_flaky`: a store wrapper that fails chosen calls, for fault tests.
- `crash_worker`: the crash-injection harness (also run as a script by itself and by
  `benchmarks/crash_campaign.py`).
- `op_race`: the operation-claim race worker.
- `store_race`: the store-level race workers.
- `wf_strategies`: grammar-aware hypothesis strategies for `.wf` programs (also drawn by
  `benchmarks/fuzz_campaign.py`).
- `kandev`: paths and readers for the kandev import/export tests.
"""

"""Preludes shipped with the package: `std.wf` (implicit) and any `use NAME` module."""

"""Alembic migrations of the interlock tables, run programmatically by `interlock.stores.migrate` (no alembic.ini)."""

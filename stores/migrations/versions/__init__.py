"""Interlock's migration scripts, oldest first; alembic loads them by path, the package only ships them."""

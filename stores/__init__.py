"""Durable state for the runtime: SQLAlchemy tables, repositories and alembic migrations."""

"""Alembic environment for the store, configured in code (no alembic.ini)."""

"""Alembic migrations for the proofbench schema."""

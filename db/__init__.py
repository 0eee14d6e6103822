"""Storage: SQLAlchemy models, sessions and Alembic migrations."""

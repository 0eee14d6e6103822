"""Where the project's files are: the checkout whose subjects, suite and results proofbench uses."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

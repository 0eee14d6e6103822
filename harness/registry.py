"""The registry of subjects: refuses duplicates, looks subjects up by `area.name`.

`load()` imports `subjects.<area>` for every area that has a module. $PROOFBENCH_SUBJECTS
(comma-separated dotted module paths, importable from the project root) replaces that list:
the documented way to run the real pipeline on other subjects, such as the deliberately broken
ones of tests/faulty (`PROOFBENCH_SUBJECTS=tests.faulty.faults`; add `subjects.loading` and
the like to keep real ones). Pair it with $PROOFBENCH_WORKDIR (see `proofbench.pipeline.runner`) so the
generated benchmarks and the results land outside the project's benchmarks/ and .asv/.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import traceback
from typing import Iterator

from proofbench.declare import AREAS, Subject
from proofbench.errors import DeclarationError


class Registry:
    """An ordered collection of subjects keyed by `area.name`."""

    def __init__(self) -> None:
        self._subjects: dict[str, Subject] = {}

    def register(self, *subjects: Subject) -> None:
        """Add subjects; a name already taken raises DeclarationError naming it."""
        for subject in subjects:
            if not isinstance(subject, Subject):
                raise DeclarationError(f"register() takes Subject values, got {type(subject).__name__}")
            if subject.key in self._subjects:
                raise DeclarationError(f"subject {subject.key}: registered twice (names must be unique)")
            self._subjects[subject.key] = subject

    def get(self, key: str) -> Subject:
        """The subject called `key` (`area.name`), or a DeclarationError."""
        try:
            return self._subjects[key]
        except KeyError:
            raise DeclarationError(f"unknown subject {key!r}; known: {', '.join(self._subjects) or 'none'}") from None

    def __contains__(self, key: str) -> bool:
        return key in self._subjects

    def __iter__(self) -> Iterator[Subject]:
        return iter(self._subjects.values())

    def __len__(self) -> int:
        return len(self._subjects)

    def area(self, area: str) -> list[Subject]:
        """The subjects of one area, in registration order."""
        if area not in AREAS:
            raise DeclarationError(f"unknown area {area!r}; expected one of {', '.join(AREAS)}")
        return [s for s in self if s.area == area]


REGISTRY = Registry()


def register(*subjects: Subject) -> None:
    """Register subjects in the process-wide registry (called by subject modules)."""
    REGISTRY.register(*subjects)


SUBJECTS_VAR = "PROOFBENCH_SUBJECTS"


def subject_modules() -> list[str]:
    """The modules `load()` imports: those of $PROOFBENCH_SUBJECTS, else each area's module."""
    chosen = [name.strip() for name in os.environ.get(SUBJECTS_VAR, "").split(",") if name.strip()]
    return chosen or [f"proofbench.subjects.{area}" for area in AREAS
                      if importlib.util.find_spec(f"proofbench.subjects.{area}")]


def load() -> Registry:
    """Import every subject module once and return the filled registry.

    A declaration error raised while a module is imported is re-raised naming the module's
    file and line; a chosen module that cannot be found names the variable.
    """
    for name in subject_modules():
        _import(name)
    return REGISTRY


def load_module(name: str) -> Registry:
    """Import one subject module (what a benchmark process needs) and return the registry."""
    _import(name)
    return REGISTRY


def _import(name: str) -> None:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (name == exc.name or name.startswith(exc.name + ".")):
            raise  # a missing dependency of the module, not the module itself
        raise DeclarationError(f"{SUBJECTS_VAR}: no module {name!r} (expected a dotted path importable "
                               f"from the project root)") from None
    except DeclarationError as exc:
        raise DeclarationError(f"{_where(name, exc)}: {exc}") from None


def _where(name: str, exc: BaseException) -> str:
    # The deepest traceback frame inside the declaring module: the line that declared wrongly.
    spec = importlib.util.find_spec(name)
    origin = os.path.abspath(spec.origin) if spec is not None and spec.origin else None
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename) == origin]
    return f"{origin}:{frames[-1].lineno}" if frames else (origin or name)

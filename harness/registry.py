"""The registry of subjects: refuses duplicates, looks subjects up by `area.name`."""
from __future__ import annotations

import importlib
import importlib.util
from typing import Iterator

from harness.declare import AREAS, Subject
from harness.errors import DeclarationError


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


def load() -> Registry:
    """Import every subject module once and return the filled registry."""
    for area in AREAS:
        if importlib.util.find_spec(f"subjects.{area}") is not None:
            importlib.import_module(f"subjects.{area}")
    return REGISTRY

"""The registry of subjects: refuses duplicates, looks subjects up by `area.name`.

`load(modules, root)` imports the modules a project file names (every one of them: a module
that cannot be imported is an error naming it and why, never skipped); a benchmark process
imports only the module of its subject (`load_module`).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from pathlib import Path
from typing import Iterator, Sequence

from proofbench.declare import Subject
from proofbench.errors import DeclarationError


class Registry:
    """An ordered collection of subjects keyed by `area.name`."""

    def __init__(self) -> None:
        self._subjects: dict[str, Subject] = {}
        self._modules: dict[str, str] = {}  # subject key -> the module whose import registered it

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

    def module_of(self, key: str) -> str:
        """The module that registered the subject `key` (what a benchmark process imports)."""
        return self._modules.get(key) or self.get(key).prepare.__module__

    def restricted(self, modules: Sequence[str]) -> "Registry":
        """The subjects registered by `modules` alone (a process may have imported others)."""
        out = Registry()
        for subject in self:
            if self.module_of(subject.key) in modules:
                out._subjects[subject.key] = subject
                out._modules[subject.key] = self.module_of(subject.key)
        return out

    def areas(self) -> list[str]:
        """The areas that have subjects, sorted."""
        return sorted({s.area for s in self})

    def area(self, area: str) -> list[Subject]:
        """The subjects of one area, in registration order."""
        return [s for s in self if s.area == area]


REGISTRY = Registry()


def register(*subjects: Subject) -> None:
    """Register subjects in the process-wide registry (called by subject modules at import).

    The calling module is recorded as each subject's home: a benchmark process imports it alone.
    """
    caller = sys._getframe(1).f_globals.get("__name__", "")
    REGISTRY.register(*subjects)
    for subject in subjects:
        REGISTRY._modules[subject.key] = caller


class UnimportableModule(DeclarationError):
    """A subject module that cannot be imported; the message names it and why (the caller that
    knows where the module was named adds that)."""


def load(modules: Sequence[str], root: Path | None = None) -> Registry:
    """Import every subject module once and return the filled registry.

    `root` (the project's directory) goes first on sys.path, so modules beside the project
    file import as they do in asv's benchmark processes. A declaration error raised while a
    module is imported is re-raised naming the module's file and line.
    """
    if root is not None and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    for name in modules:
        load_module(name)
    return REGISTRY


def load_module(name: str) -> Registry:
    """Import one subject module (what a benchmark process needs) and return the registry.

    Whatever stops the import, a `sys.exit` at its top level included (never Ctrl-C), is an
    UnimportableModule naming the module and why; proofbench's exit status stays its own.
    """
    try:
        importlib.import_module(name)
    except DeclarationError as exc:
        raise DeclarationError(f"{_where(name, exc)}: {exc}") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - whatever stops the import is the user's to see
        raise UnimportableModule(f"subject module {name!r} cannot be imported: {_why(name, exc)}") from None
    return REGISTRY


def _why(name: str, exc: BaseException) -> str:
    # One line: the exception's type and message, after the file and line it was raised at (a
    # syntax error's own; else the deepest line of the project's own files that raised it).
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return f"{exc.filename}:{exc.lineno}: {type(exc).__name__}: {exc.msg}"
    text = str(exc)
    at = _raised_at(name, exc)
    return (f"{at}: " if at else "") + (f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


def _raised_at(name: str, exc: BaseException) -> str:
    # the deepest frame in the directory of the module (or of the package of it that ran), outside
    # installed packages: the user's line. Read off the traceback: finding the module's file
    # again would run a broken package's __init__ a second time.
    frames = [(os.path.abspath(f.filename), f.lineno) for f in traceback.extract_tb(exc.__traceback__)]
    module = os.path.join(*name.split("."))  # bench.subjects: bench/subjects.py, then its packages' __init__
    packages = [os.path.dirname(module)] if os.path.dirname(module) else []
    while packages and os.path.dirname(packages[-1]):
        packages.append(os.path.dirname(packages[-1]))
    ends = [os.sep + module + ".py", os.sep + os.path.join(module, "__init__.py"),
            *(os.sep + os.path.join(p, "__init__.py") for p in packages)]
    own = next((path for end in ends for path, _ in frames if path.endswith(end)), None)
    if own is None:
        return ""
    home = os.path.dirname(own) + os.sep
    mine = [f"{path}:{line}" for path, line in frames if path.startswith(home)
            and not {"site-packages", "dist-packages"} & set(path.split(os.sep))]
    return mine[-1] if mine else ""


def _where(name: str, exc: BaseException) -> str:
    # The deepest traceback frame inside the declaring module: the line that declared wrongly.
    spec = importlib.util.find_spec(name)
    origin = os.path.abspath(spec.origin) if spec is not None and spec.origin else None
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename) == origin]
    return f"{origin}:{frames[-1].lineno}" if frames else (origin or name)

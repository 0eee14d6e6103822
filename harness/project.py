"""The project file: which subjects, claims and profiles a repository has, and where its data goes.

A project is a directory holding `proofbench.toml`, or a `pyproject.toml` with a
`[tool.proofbench]` table. Every command finds it by walking up from the working directory
(`--project DIR` for scripts). Paths in it are relative to that directory. Example:

    subjects = ["bench.subjects"]          # modules that declare subjects (required)
    claims = "bench/claims.toml"           # claims about them (optional)
    profiles = "bench/profiles.toml"       # profiles beside the built-in ones (optional)
    asv_config = "asv.conf.json"           # asv's configuration: the suite, results, environments
    database = "sqlite:///.proofbench/proofbench.sqlite"
    site = ".proofbench/site"              # where `proofbench report` writes the HTML site
    workdir = ".proofbench"                # diagnostics, machine profiles, caches

    [check]                                # the nightly check's thresholds
    min_step = 0.03                        # steps smaller than 3% are not alerts
    significance = 0.001
    suspect_from = 1.2                     # standard errors: a step too new to decide is measured again from this
    [[check.rule]]                         # per benchmark pattern (fnmatch), first match wins
    pattern = "tokenization.*"
    min_step = 0.05
    higher_is_better = true                # for a plain asv benchmark whose metric rises when better
"""
from __future__ import annotations

import errno
import fnmatch
import math
import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proofbench import tomlfile
from proofbench.errors import InputError

FILE = "proofbench.toml"
PYPROJECT = "pyproject.toml"
ENV_VAR = "PROOFBENCH_PROJECT"  # the project directory, for processes started by proofbench
DB_VAR = "PROOFBENCH_DB"  # a database URL that overrides the project file's
DEFAULT_WORKDIR = ".proofbench"
DEFAULT_MIN_STEP = 0.03
DEFAULT_SIGNIFICANCE = 0.001
DEFAULT_SUSPECT_FROM = 1.2  # the detector's Tuning.z_suspect
_KEYS = {"subjects", "claims", "profiles", "asv_config", "database", "site", "workdir", "check"}
_CHECK_KEYS = {"min_step", "significance", "suspect_from", "rule"}
_RULE_KEYS = {"pattern", "min_step", "significance", "suspect_from", "higher_is_better"}


class ProjectError(InputError):
    """The project file is missing or says something proofbench cannot use."""


@dataclass(frozen=True)
class Rule:
    """Thresholds for the benchmarks whose name matches `pattern` (fnmatch)."""

    pattern: str
    min_step: float | None = None
    significance: float | None = None
    higher_is_better: bool | None = None
    suspect_from: float | None = None

    def matches(self, name: str) -> bool:
        """Whether the benchmark called `name` is this rule's (a shell-style wildcard, case-sensitive)."""
        return fnmatch.fnmatchcase(name, self.pattern)


@dataclass(frozen=True)
class Thresholds:
    """What the nightly check applies to one benchmark. `suspect_from`: the shift, in standard
    errors, from which a step with too few points after it for the history to decide is suspected
    and measured again (`proofbench.analysis.detect`'s `Tuning.z_suspect`)."""

    min_step: float
    significance: float
    higher_is_better: bool | None  # None: the benchmark's own direction
    suspect_from: float


@dataclass(frozen=True)
class CheckSettings:
    """The `[check]` table: defaults and per-pattern rules, first match wins."""

    min_step: float = DEFAULT_MIN_STEP
    significance: float = DEFAULT_SIGNIFICANCE
    rules: tuple[Rule, ...] = ()
    suspect_from: float = DEFAULT_SUSPECT_FROM

    def unmatched(self, names: Collection[str]) -> tuple[str, ...]:
        """The patterns of the rules that match none of `names` (a regular expression written as a
        pattern matches nothing, silently but for this)."""
        return tuple(r.pattern for r in self.rules if not any(r.matches(name) for name in names))

    def for_benchmark(self, name: str) -> Thresholds:
        """The thresholds of the benchmark called `name`."""
        rule = next((r for r in self.rules if r.matches(name)), None)
        if rule is None:
            return Thresholds(self.min_step, self.significance, None, self.suspect_from)
        return Thresholds(self.min_step if rule.min_step is None else rule.min_step,
                          self.significance if rule.significance is None else rule.significance,
                          rule.higher_is_better,
                          self.suspect_from if rule.suspect_from is None else rule.suspect_from)


@dataclass(frozen=True)
class Project:
    """A repository set up for proofbench; see the module docstring for the file."""

    root: Path
    file: Path
    subjects: tuple[str, ...]
    asv_config: Path
    database: str
    site: Path
    workdir: Path
    claims: Path | None = None
    profiles: Path | None = None
    check: CheckSettings = field(default_factory=CheckSettings)
    table: str = ""  # where in `file` the settings are: "" (the whole file) or "[tool.proofbench]"

    def where(self, key: str) -> str:
        """How a message names `key` of the project file: `FILE: KEY` or `FILE: [tool.proofbench].KEY`."""
        return _located(self.file, self.table) + key


def find(start: Path | None = None) -> Project | None:
    """The project of `start` (default: $PROOFBENCH_PROJECT, else the working directory) or of
    the nearest directory above it; None when there is none."""
    given = start or Path(os.environ.get(ENV_VAR) or Path.cwd())
    try:
        here = given.resolve()
    except RuntimeError:  # Python 3.11's word for a loop of symbolic links
        raise ProjectError(f"{given}: a loop of symbolic links") from None
    for directory in (here, *here.parents):
        if _is_file(directory / FILE):
            return load(directory / FILE)
        if (table := tool_table(directory / PYPROJECT)) is not None:
            return _project(directory / PYPROJECT, table, "[tool.proofbench]")
    return None


def tool_table(pyproject: Path) -> Any:
    """The `[tool.proofbench]` table of a pyproject.toml (None where the file or the table is not
    there: the words in a comment are no table); ProjectError for a file that is not TOML."""
    if not _is_file(pyproject):
        return None
    tool = _read(pyproject).get("tool")
    return tool["proofbench"] if isinstance(tool, dict) and "proofbench" in tool else None


def _is_file(path: Path) -> bool:
    # Path.is_file answers False for what is not there, but raises for a path the system refuses.
    try:
        return path.is_file()
    except OSError as exc:
        too_long = exc.errno == errno.ENAMETOOLONG
        why = f"the path is too long for this system ({len(str(path))} characters)" if too_long else exc.strerror
        raise ProjectError(f"{_shortened(path)}: {why}") from None


def _shortened(path: Path, keep: int = 60) -> str:
    # a path short enough to read in one line: its start and its end
    text = str(path)
    return text if len(text) <= 2 * keep else f"{text[:keep]}...{text[-keep:]}"


def database_url(explicit: str | None, found: Project | None, create: bool = False) -> str:
    """The database to use: `explicit` (--db), else $PROOFBENCH_DB, else the project's, else a
    SQLite file under the working directory's .proofbench/ (made, ignored by git, with `create`)."""
    if explicit or os.environ.get(DB_VAR):
        return explicit or os.environ[DB_VAR]
    if found is not None:
        return found.database
    workdir = fallback_workdir() if create else Path.cwd() / DEFAULT_WORKDIR
    return f"sqlite:///{workdir / 'proofbench.sqlite'}"


def fallback_workdir() -> Path:
    """The working directory of a command run outside any project (`.proofbench/` under the
    working directory), made where missing with a `.gitignore` of `*` in it, as pytest's cache
    is: whichever git repository it lies in, its database and site are never offered for a
    commit. A directory that cannot be made is left to the command's own error."""
    directory = Path.cwd() / DEFAULT_WORKDIR
    if not directory.exists():
        try:
            directory.mkdir(parents=True)
            (directory / ".gitignore").write_text("# made by proofbench: nothing here belongs in git\n*\n")
        except OSError:
            pass
    return directory


def require(start: Path | None = None) -> Project:
    """The project of `start`, or a ProjectError that says how to make one."""
    found = find(start)
    if found is None:
        where = (start or Path(os.environ.get(ENV_VAR) or Path.cwd())).resolve()
        raise ProjectError(f"no {FILE} (or [tool.proofbench] in {PYPROJECT}) in {where} or any directory above it; "
                           f"run `proofbench init` there to write one")
    return found


def load(path: Path) -> Project:
    """The project described by `path` (a proofbench.toml)."""
    return _project(path, _read(path), "")


def _read(path: Path) -> dict[str, Any]:
    return tomlfile.read(path, "project file", ProjectError)


def _project(path: Path, table: Any, prefix: str) -> Project:
    where = _located(path, prefix)
    if not isinstance(table, dict):
        raise ProjectError(f"{path}: {prefix or 'the file'} must be a table")
    _known(where, table, _KEYS)
    root = path.parent.resolve()
    subjects = table.get("subjects")
    if (not isinstance(subjects, list) or not subjects
            or not all(isinstance(s, str) and _module_name(s) for s in subjects)):
        raise ProjectError(f"{where}subjects must be a non-empty list of module names (e.g. [\"bench.subjects\"])")
    workdir = _path(where, root, table, "workdir", DEFAULT_WORKDIR)
    return Project(root=root, file=path, subjects=tuple(subjects),
                   asv_config=_path(where, root, table, "asv_config", "asv.conf.json"),
                   database=_database(where, root, table.get("database", f"sqlite:///{DEFAULT_WORKDIR}/proofbench.sqlite")),
                   site=_path(where, root, table, "site", f"{DEFAULT_WORKDIR}/site"), workdir=workdir,
                   claims=_path(where, root, table, "claims", None),
                   profiles=_path(where, root, table, "profiles", None),
                   check=_check(where, table.get("check", {})), table=prefix)


def _located(path: Path, table: str) -> str:
    # how a message names a key of the project file, before the key
    return f"{path}: {table + '.' if table else ''}"


def _known(where: str, table: dict, allowed: set[str]) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ProjectError(f"{where}unknown key {unknown[0]!r}; expected one of {', '.join(sorted(allowed))}")


def _module_name(text: str) -> bool:
    return all(part.isidentifier() for part in text.split("."))


def _path(where: str, root: Path, table: dict, key: str, default: str | None) -> Path | None:
    value = table.get(key, default)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise ProjectError(f"{where}{key} must be a path (a non-empty string)")
    path = Path(value)
    return path if path.is_absolute() else root / path


def _database(where: str, root: Path, url: Any) -> str:
    # A relative SQLite path is relative to the project, not to wherever the command runs.
    if not isinstance(url, str) or not url.strip():
        raise ProjectError(f"{where}database must be a database URL (a non-empty string)")
    prefix = "sqlite:///"
    if url.startswith(prefix) and url != prefix + ":memory:" and not url[len(prefix):].startswith("/"):
        return prefix + str(root / url[len(prefix):])
    return url


def _check(where: str, table: Any) -> CheckSettings:
    if not isinstance(table, dict):
        raise ProjectError(f"{where}check must be a table")
    _known(f"{where}[check] ", table, _CHECK_KEYS)
    rules = table.get("rule", [])
    if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
        raise ProjectError(f"{where}check.rule must be an array of tables ([[check.rule]])")
    return CheckSettings(min_step=_fraction(f"{where}check.min_step", table.get("min_step", DEFAULT_MIN_STEP)),
                         significance=_probability(f"{where}check.significance",
                                                   table.get("significance", DEFAULT_SIGNIFICANCE)),
                         suspect_from=_errors(f"{where}check.suspect_from",
                                              table.get("suspect_from", DEFAULT_SUSPECT_FROM)),
                         rules=tuple(_rule(f"{where}[[check.rule]] #{i + 1}: ", r) for i, r in enumerate(rules)))


def _rule(where: str, table: dict) -> Rule:
    _known(where, table, _RULE_KEYS)
    pattern = table.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise ProjectError(f"{where}pattern must be a non-empty string (an fnmatch pattern of benchmark names)")
    direction = table.get("higher_is_better")
    if direction is not None and not isinstance(direction, bool):
        raise ProjectError(f"{where}higher_is_better must be true or false")
    step, p, suspect = table.get("min_step"), table.get("significance"), table.get("suspect_from")
    return Rule(pattern, None if step is None else _fraction(where + "min_step", step),
                None if p is None else _probability(where + "significance", p), direction,
                None if suspect is None else _errors(where + "suspect_from", suspect))


def _fraction(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1 or math.isnan(value):
        raise ProjectError(f"{where} must be a number from 0 up to (not including) 1, e.g. 0.03 for 3%; got {value!r}")
    return float(value)


def _errors(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise ProjectError(f"{where} must be a positive number of standard errors, e.g. 1.2; got {value!r}")
    return float(value)


def _probability(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ProjectError(f"{where} must be a probability between 0 and 1, e.g. 0.001; got {value!r}")
    return float(value)

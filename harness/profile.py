"""Profiles: named selections of sizes and measurement settings, declared in TOML.

The built-in profiles ship beside this module (profiles.toml); a project may add or replace
profiles with its own file (the project file's `profiles`). A benchmark process learns which
profile and which file from $PROOFBENCH_PROFILE and $PROOFBENCH_PROFILES.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from proofbench import tomlfile
from proofbench.declare import SIZE_NAMES
from proofbench.errors import DeclarationError, InputError

PROFILES_FILE = Path(__file__).resolve().parent / "profiles.toml"  # the built-in profiles
DEFAULT = "quick"
ENV_VAR = "PROOFBENCH_PROFILE"
FILE_VAR = "PROOFBENCH_PROFILES"  # a project's own profiles file, beside the built-in ones
_DEVICES = ("cpu", "cuda")


NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,49}")  # a profile's name: stored with every result
MAX_THREADS = 1024
MAX_ROUNDS = 1000
MAX_PROCESSES = 16
MAX_SECONDS = 3600.0  # of warm-up, or of sampling per benchmark parameter set


@dataclass(frozen=True)
class Profile:
    """How a run measures: which sizes, on which device, with how many threads and samples.

    `threads` 0 means every core the machine has. `rounds`, `repeat` and `warmup_time` are asv's
    for `time_call`. A variant's speedup is measured against the baseline in alternating rounds
    (`proofbench.measure.interleave`): for at most `pair_budget` seconds (or the subject's own
    figure in `budgets`), until its 95% interval is within +- `precision`, with at least
    `min_rounds` rounds of blocks of about `block_seconds`, shared by `processes` processes, each
    preparing its own workload (`proofbench.measure.processes`); uncounted rounds warm both sides
    for `pair_warmup` seconds first. `between_runs` is the speedup's standard deviation from one
    run to the next that a run's rounds cannot show (a fraction, 0.01 = 1%; `make evaluate-noise`
    measures it on a machine), held by every speedup's interval (or the subject's own figure in
    `between_runs_by_subject`, for subjects that move more). `no_difference` is the widest
    difference a "no significant difference" may leave open (a fraction; 0: the precision).
    `data_span` is the share of its budget a data-bound subject's rounds go on for at least (a
    disk's state lasts seconds; rounds that stop on precision read one state).
    """

    name: str
    description: str
    device: str
    threads: int
    sizes: tuple[str, ...]
    rounds: int
    repeat: tuple[int, int, float]
    warmup_time: float
    bench: str = ""
    pair_budget: float = 4.0
    precision: float = 0.05
    min_rounds: int = 8
    block_seconds: float = 0.1
    budgets: tuple[tuple[str, float], ...] = ()
    processes: int = 1
    pair_warmup: float = 0.0
    between_runs: float = 0.0
    no_difference: float = 0.0
    between_runs_by_subject: tuple[tuple[str, float], ...] = ()
    data_span: float = 0.0

    def __post_init__(self) -> None:
        where = f"profile {self.name[:60]!r}"
        if not NAME.fullmatch(self.name):
            raise DeclarationError(f"{where}: a name is 1-50 letters, digits, '_', '.' or '-', starting with a "
                                   f"letter or digit")
        if not isinstance(self.description, str) or not self.description.isprintable():
            raise DeclarationError(f"{where}: description must be one line of text (no newline or control character)")
        if self.device not in _DEVICES:
            raise DeclarationError(f"{where}: device must be one of {', '.join(_DEVICES)}, got {self.device!r}")
        bad = [s for s in self.sizes if s not in SIZE_NAMES]
        if bad or not self.sizes or len(set(self.sizes)) != len(self.sizes):
            raise DeclarationError(f"{where}: sizes must be distinct names among {', '.join(SIZE_NAMES)}, "
                                   f"got {list(self.sizes)}")
        _whole(where, "threads", self.threads, 0, MAX_THREADS)
        _whole(where, "rounds", self.rounds, 1, MAX_ROUNDS)
        lo, hi, seconds = self.repeat
        _whole(where, "repeat[0] (min samples)", lo, 1, 10**6)
        _whole(where, "repeat[1] (max samples)", hi, lo, 10**6)
        _seconds(where, "repeat[2] (max seconds)", seconds, low_open=True)
        _seconds(where, "warmup_time", self.warmup_time, low_open=False)
        try:
            re.compile(self.bench)
        except (re.error, TypeError) as exc:
            raise DeclarationError(f"{where}: bench {self.bench!r} is not a regular expression: {exc}") from None
        _seconds(where, "pair_budget", self.pair_budget, low_open=True)
        _seconds(where, "block_seconds", self.block_seconds, low_open=True)
        _whole(where, "min_rounds", self.min_rounds, 3, MAX_ROUNDS)
        _whole(where, "processes", self.processes, 1, MAX_PROCESSES)
        _seconds(where, "pair_warmup", self.pair_warmup, low_open=False)
        _fraction(where, "between_runs", self.between_runs, "0.01")
        _fraction(where, "no_difference", self.no_difference, "0.03")
        _fraction(where, "data_span", self.data_span, "0.5")
        if not (isinstance(self.precision, float) and 0 < self.precision < 1):
            raise DeclarationError(f"{where}: precision must be a fraction between 0 and 1, e.g. 0.05, "
                                   f"got {self.precision!r}")
        if self.no_difference and not 2 * self.between_runs < self.no_difference <= self.precision:
            raise DeclarationError(f"{where}: no_difference must be 0 (the precision) or above twice between_runs "
                                   f"(an interval holding the variation between runs is that wide) and at most the "
                                   f"precision, got {self.no_difference!r}")
        for key, seconds in self.budgets:
            _seconds(where, f"budgets.{key[:60]}", seconds, low_open=True)
        for key, fraction in self.between_runs_by_subject:
            _fraction(where, f"between_runs_by_subject.{key[:60]}", fraction, "0.02")

    def budget(self, subject: str) -> float:
        """Seconds of alternating rounds for one variant of `subject` (`area.name`)."""
        return dict(self.budgets).get(subject, self.pair_budget)

    def between(self, subject: str) -> float:
        """How far a speedup of `subject` (`area.name`) moves from one run to the next beyond
        what a run's rounds show: its own figure, else the profile's `between_runs`."""
        return dict(self.between_runs_by_subject).get(subject, self.between_runs)

    @property
    def torch_threads(self) -> int:
        """The thread count to give torch: the declared one, or every core for 0."""
        return self.threads or (os.cpu_count() or 1)


def _whole(where: str, key: str, value: object, low: int, high: int) -> None:
    # a whole number in [low, high]; true and 2.0 are not whole numbers here
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise DeclarationError(f"{where}: {key} must be a whole number from {low} to {high}, got {value!r}")


def _fraction(where: str, key: str, value: object, example: str) -> None:
    # a fraction from 0 up to (not including) 1; true is not a fraction here
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1):
        raise DeclarationError(f"{where}: {key} must be a fraction from 0 up to 1, e.g. {example}, got {value!r}")


def _seconds(where: str, key: str, value: object, low_open: bool) -> None:
    # seconds: a finite number, above 0 (low_open) or at least 0, at most MAX_SECONDS
    number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    huge = isinstance(number, int) and abs(number) > MAX_SECONDS  # perhaps too large for a float, too
    if huge or not math.isfinite(number) or number < 0 or (low_open and number == 0) or number > MAX_SECONDS:
        bound = "above 0" if low_open else "at least 0"
        raise DeclarationError(f"{where}: {key} must be a number of seconds {bound} and at most {MAX_SECONDS:g}, "
                               f"got {tomlfile.shown(value)}")


_NUMBER = (int, float)  # a number key takes either (never true or false); it is read as a float
_EXPECTED = {str: "a string", int: "a whole number", _NUMBER: "a number", list: "an array", dict: "a table"}
_FIELDS = {"description": str, "device": str, "threads": int, "sizes": list, "rounds": int,
           "repeat": list, "warmup_time": _NUMBER, "bench": str}
_OPTIONAL = {"pair_budget": _NUMBER, "precision": _NUMBER, "min_rounds": int, "block_seconds": _NUMBER,
             "budgets": dict, "processes": int, "pair_warmup": _NUMBER,
             "between_runs": _NUMBER, "no_difference": _NUMBER, "between_runs_by_subject": dict,
             "data_span": _NUMBER}


def load_profiles(path: Path = PROFILES_FILE) -> dict[str, Profile]:
    """Parse the profiles file; errors name the file and the offending key."""
    data = tomlfile.read(path, "profiles file")
    return {name: _profile(path, name, table) for name, table in data.items()}


def _profile(path: Path, name: str, table: object) -> Profile:
    if not isinstance(table, dict):
        raise InputError(f"{path}: [{name[:60]}] must be a table")
    for key, kind in {**_FIELDS, **_OPTIONAL}.items():
        if key not in table and key in _FIELDS and key != "bench":
            raise InputError(f"{path}: [{name[:60]}] is missing key {key!r}")
        if key in table and (not isinstance(table[key], kind) or isinstance(table[key], bool)):
            raise InputError(f"{path}: [{name[:60]}].{key} has the wrong type ({type(table[key]).__name__}): "
                             f"{repr(table[key])[:60]}; expected {_EXPECTED[kind]}")
    unknown = sorted(set(table) - set(_FIELDS) - set(_OPTIONAL))
    if unknown:
        raise InputError(f"{path}: [{name[:60]}] has unknown key(s) {', '.join(unknown)}; "
                         f"expected {', '.join([*_FIELDS, *_OPTIONAL])}")
    repeat = table["repeat"]
    if len(repeat) != 3:
        raise InputError(f"{path}: [{name[:60]}].repeat must be [min, max, seconds]")
    optional = {key: _float(path, name, key, table[key]) if kind == _NUMBER else table[key]
                for key, kind in _OPTIONAL.items() if key in table}
    optional["budgets"] = _per_subject(path, name, "budgets", "a number of seconds", table.get("budgets", {}))
    optional["between_runs_by_subject"] = _per_subject(path, name, "between_runs_by_subject", "a fraction",
                                                       table.get("between_runs_by_subject", {}))
    try:
        return Profile(name=name, description=table["description"], device=table["device"],
                       threads=table["threads"], sizes=tuple(table["sizes"]), rounds=table["rounds"],
                       repeat=(repeat[0], repeat[1], repeat[2]),
                       warmup_time=_float(path, name, "warmup_time", table["warmup_time"]),
                       bench=table.get("bench", ""), **optional)
    except DeclarationError as exc:
        raise InputError(f"{path}: {exc}") from None


def _float(path: Path, name: str, key: str, number: int | float) -> float:
    # TOML's integers are Python's: one of 400 digits is a number, but no float
    try:
        return float(number)
    except OverflowError:
        raise InputError(f"{path}: [{name[:60]}].{key} is too large, got {tomlfile.shown(number)}") from None


def _per_subject(path: Path, name: str, key: str, expected: str, table: dict) -> tuple[tuple[str, float], ...]:
    # [<profile>.budgets], [<profile>.between_runs_by_subject]: "area.name" = a number for that subject
    for subject, number in table.items():
        if not isinstance(number, (int, float)) or isinstance(number, bool):
            raise InputError(f"{path}: [{name[:60]}.{key}].{subject[:60]} must be {expected}")
    return tuple(sorted((subject, _float(path, name, f"{key}.{subject[:60]}", number))
                        for subject, number in table.items()))


def builtin_names() -> tuple[str, ...]:
    """The built-in profiles' names, in their file's order (read, not checked: what help texts list)."""
    return tuple(tomlfile.read(PROFILES_FILE, "profiles file"))


def profiles(extra: Path | None = None) -> dict[str, Profile]:
    """The built-in profiles, with those of `extra` (default: $PROOFBENCH_PROFILES) added or replacing."""
    extra = extra or (Path(os.environ[FILE_VAR]) if os.environ.get(FILE_VAR) else None)
    return {**load_profiles(PROFILES_FILE), **(load_profiles(extra) if extra else {})}


def get_profile(name: str | None = None, extra: Path | None = None) -> Profile:
    """The profile called `name` (default: $PROOFBENCH_PROFILE, else 'quick')."""
    name = name or os.environ.get(ENV_VAR) or DEFAULT
    known = profiles(extra)
    if name not in known:
        raise DeclarationError(f"unknown profile {name!r}; expected one of {', '.join(known)}")
    return known[name]

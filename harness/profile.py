"""Profiles: named selections of sizes and measurement settings, declared in TOML.

The built-in profiles (smoke, quick, full, gpu) ship beside this module; a project may add or
replace profiles with its own file (the project file's `profiles`). A benchmark process learns
which profile and which file from $PROOFBENCH_PROFILE and $PROOFBENCH_PROFILES.
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from proofbench.declare import SIZE_NAMES
from proofbench.errors import DeclarationError, InputError

PROFILES_FILE = Path(__file__).resolve().parent / "profiles.toml"  # the built-in profiles
DEFAULT = "quick"
ENV_VAR = "PROOFBENCH_PROFILE"
FILE_VAR = "PROOFBENCH_PROFILES"  # a project's own profiles file, beside the built-in ones
_DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class Profile:
    """How a run measures: which sizes, on which device, with how many threads and samples.

    `threads` 0 means every core the machine has. `rounds`, `repeat` and `warmup_time` are asv's
    for `time_call`. A variant's speedup is measured against the baseline in alternating rounds
    (`proofbench.measure.interleave`): for at most `pair_budget` seconds (or the subject's own
    figure in `budgets`), until its 95% interval is within +- `precision`, with at least
    `min_rounds` rounds of blocks of about `block_seconds`.
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

    def __post_init__(self) -> None:
        where = f"profile {self.name!r}"
        if self.device not in _DEVICES:
            raise DeclarationError(f"{where}: device must be one of {', '.join(_DEVICES)}, got {self.device!r}")
        bad = [s for s in self.sizes if s not in SIZE_NAMES]
        if bad or not self.sizes:
            raise DeclarationError(f"{where}: sizes must be among {', '.join(SIZE_NAMES)}, got {list(self.sizes)}")
        if self.threads < 0 or self.rounds < 1:
            raise DeclarationError(f"{where}: threads must be >= 0 and rounds >= 1")
        lo, hi, _ = self.repeat
        if not 1 <= lo <= hi:
            raise DeclarationError(f"{where}: repeat must be [min, max, seconds] with 1 <= min <= max")
        if not (self.pair_budget > 0 and 0 < self.precision < 1 and self.min_rounds >= 3 and self.block_seconds > 0):
            raise DeclarationError(f"{where}: pair_budget and block_seconds must be > 0, precision within (0, 1) "
                                   f"and min_rounds >= 3")
        bad_budgets = [key for key, seconds in self.budgets if not seconds > 0]
        if bad_budgets:
            raise DeclarationError(f"{where}: budgets must be positive seconds; {bad_budgets[0]!r} is not")

    def budget(self, subject: str) -> float:
        """Seconds of alternating rounds for one variant of `subject` (`area.name`)."""
        return dict(self.budgets).get(subject, self.pair_budget)

    @property
    def torch_threads(self) -> int:
        """The thread count to give torch: the declared one, or every core for 0."""
        return self.threads or (os.cpu_count() or 1)


_FIELDS = {"description": str, "device": str, "threads": int, "sizes": list, "rounds": int,
           "repeat": list, "warmup_time": (int, float), "bench": str}
_OPTIONAL = {"pair_budget": (int, float), "precision": float, "min_rounds": int, "block_seconds": (int, float),
             "budgets": dict}


def load_profiles(path: Path = PROFILES_FILE) -> dict[str, Profile]:
    """Parse the profiles file; errors name the file and the offending key."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"{path}: profiles file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}") from None
    return {name: _profile(path, name, table) for name, table in data.items()}


def _profile(path: Path, name: str, table: object) -> Profile:
    if not isinstance(table, dict):
        raise InputError(f"{path}: [{name}] must be a table")
    for key, kind in {**_FIELDS, **_OPTIONAL}.items():
        if key not in table and key in _FIELDS and key != "bench":
            raise InputError(f"{path}: [{name}] is missing key {key!r}")
        if key in table and (not isinstance(table[key], kind) or isinstance(table[key], bool)):
            raise InputError(f"{path}: [{name}].{key} has the wrong type ({type(table[key]).__name__})")
    unknown = sorted(set(table) - set(_FIELDS) - set(_OPTIONAL))
    if unknown:
        raise InputError(f"{path}: [{name}] has unknown key(s) {', '.join(unknown)}; "
                         f"expected {', '.join([*_FIELDS, *_OPTIONAL])}")
    repeat = table["repeat"]
    if len(repeat) != 3:
        raise InputError(f"{path}: [{name}].repeat must be [min, max, seconds]")
    optional = {key: float(table[key]) if kind != int and key != "budgets" else table[key]
                for key, kind in _OPTIONAL.items() if key in table}
    optional["budgets"] = _budgets(path, name, table.get("budgets", {}))
    try:
        return Profile(name=name, description=table["description"], device=table["device"],
                       threads=table["threads"], sizes=tuple(table["sizes"]), rounds=table["rounds"],
                       repeat=(int(repeat[0]), int(repeat[1]), float(repeat[2])),
                       warmup_time=float(table["warmup_time"]), bench=table.get("bench", ""), **optional)
    except DeclarationError as exc:
        raise InputError(f"{path}: {exc}") from None


def _budgets(path: Path, name: str, table: dict) -> tuple[tuple[str, float], ...]:
    # [<profile>.budgets]: "area.name" = seconds of alternating rounds per variant of that subject
    for key, seconds in table.items():
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
            raise InputError(f"{path}: [{name}.budgets].{key} must be a number of seconds")
    return tuple(sorted((key, float(seconds)) for key, seconds in table.items()))


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

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

    `threads` 0 means every core the machine has.
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

    @property
    def torch_threads(self) -> int:
        """The thread count to give torch: the declared one, or every core for 0."""
        return self.threads or (os.cpu_count() or 1)


_FIELDS = {"description": str, "device": str, "threads": int, "sizes": list, "rounds": int,
           "repeat": list, "warmup_time": (int, float), "bench": str}


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
    for key, kind in _FIELDS.items():
        if key not in table and key != "bench":
            raise InputError(f"{path}: [{name}] is missing key {key!r}")
        if key in table and not isinstance(table[key], kind):
            raise InputError(f"{path}: [{name}].{key} has the wrong type ({type(table[key]).__name__})")
    unknown = sorted(set(table) - set(_FIELDS))
    if unknown:
        raise InputError(f"{path}: [{name}] has unknown key(s) {', '.join(unknown)}; expected {', '.join(_FIELDS)}")
    repeat = table["repeat"]
    if len(repeat) != 3:
        raise InputError(f"{path}: [{name}].repeat must be [min, max, seconds]")
    try:
        return Profile(name=name, description=table["description"], device=table["device"],
                       threads=table["threads"], sizes=tuple(table["sizes"]), rounds=table["rounds"],
                       repeat=(int(repeat[0]), int(repeat[1]), float(repeat[2])),
                       warmup_time=float(table["warmup_time"]), bench=table.get("bench", ""))
    except DeclarationError as exc:
        raise InputError(f"{path}: {exc}") from None


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

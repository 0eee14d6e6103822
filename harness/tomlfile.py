"""Reading the TOML files a user writes (project file, claims, profiles): any failure is one line
naming the file, whatever the file holds (not TOML, not UTF-8, nested too deeply, too large, a
directory or a FIFO where a file belongs)."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from proofbench.errors import InputError

MAX_BYTES = 16 * 2**20  # larger than any hand-written file; a bound on what is read into memory


def read(path: Path, what: str, error: type[InputError] = InputError) -> dict[str, Any]:
    """The TOML document in `path` (`what` names it in messages: "claims file"); `error` on any
    failure, with the path first."""
    try:
        if not path.exists():
            raise error(f"{path}: {what} not found")
        if not path.is_file():
            raise error(f"{path}: {what} is not a regular file")
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise error(f"{path}: {what} has {size} bytes; at most {MAX_BYTES} are read")
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not valid TOML: not UTF-8 text (byte {exc.start})") from None
    except ValueError as exc:  # TOMLDecodeError, or an integer of more digits than Python converts
        raise error(f"{path}: not valid TOML: {str(exc).splitlines()[0][:200]}") from None
    except RecursionError:
        raise error(f"{path}: not valid TOML: nested too deeply") from None


def shown(value: object) -> str:
    """A value read from a TOML file as a message shows it: its repr, at most 60 characters, or
    for an integer of 31 digits or more (TOML's integers are Python's) how many digits it has."""
    text = (repr(value) if not isinstance(value, int) or abs(value) < 10**30
            else f"an integer of {len(str(value))} digits")
    return text[:60]

"""The site's files: names made safe from data, and writes that cannot leave the output directory.

Page names come from data (subject and machine names), and data can hold anything: `../`,
slashes, quotes, `<script>`. A name is reduced to letters, digits, `.`, `_` and `-`, never
starts with a dot, and gets a short hash of the original whenever it had to change, so two
names that sanitise alike still get two files. Every write is checked to resolve inside the
output directory before it happens.
"""
from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

from proofbench.errors import InputError

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_STEM = 80


def slug(name: str) -> str:
    """A file-name-safe stem for `name`: `loading.lmdb_read` stays, `../x` becomes `x-1a2b3c4d`."""
    safe = _UNSAFE.sub("_", name).lstrip(".")[:MAX_STEM] or "_"
    if safe != name:
        safe = f"{safe}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
    return safe


MARKER = ".proofbench-site"  # in every directory proofbench writes a site into


def claim_directory(root: Path) -> Path:
    """`root`, made or found empty or holding an earlier site (the marker says so), and marked as
    a site; anything else (a file, a directory of other things such as /) is refused."""
    root = _resolved(root)
    if root.exists() and not root.is_dir():
        raise InputError(f"report: --out {root} is a file, not a directory")
    if (root / MARKER).is_symlink():  # writing the marker would write wherever it points
        raise InputError(f"report: {root / MARKER} is a symbolic link, not a marker proofbench wrote")
    if root.is_dir() and not (root / MARKER).is_file() and any(root.iterdir()):
        raise InputError(f"report: {root} is not empty and holds no earlier proofbench site; choose an empty "
                         f"or new directory")
    try:
        root.mkdir(parents=True, exist_ok=True)
        (root / MARKER).write_text("A static site written by `proofbench report`; it may be rewritten.\n")
    except OSError as exc:
        raise InputError(f"report: cannot write into {root}: {exc.strerror}") from None
    return root


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except RuntimeError:  # Python 3.11 raises it for a loop of symbolic links
        raise InputError(f"report: {path} is a loop of symbolic links") from None


_SQLITE_HEADER = b"SQLite format 3\x00"


def claim_file(path: Path, option: str = "--out") -> Path:
    """`path`, where one page or document may be written: not a directory, and not a database
    (an existing SQLite file is never written over)."""
    if path.is_dir():
        raise InputError(f"{option} {path}: is a directory; name a file")
    try:
        with path.open("rb") as fh:
            database = fh.read(len(_SQLITE_HEADER)) == _SQLITE_HEADER
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise InputError(f"{option} {path}: cannot read: {exc.strerror}") from None
    if database:
        raise InputError(f"{option} {path}: is a SQLite database; it is not written over")
    return path


class SiteWriter:
    """Writes the pages of one site into `root` and nowhere else.

    `page_name(kind, name)` hands out one relative path per (kind, name), unique even on a
    case-insensitive file system; `write` refuses any path that resolves outside `root`.
    """

    def __init__(self, root: Path) -> None:
        self.root = claim_directory(root)
        self._names: dict[tuple[str, str], str] = {}
        self._taken: set[str] = set()
        self.written: list[Path] = []

    def page_name(self, folder: str, name: str) -> str:
        """The relative path (`folder/stem.html`) of the page about `name`; stable per name."""
        key = (folder, name)
        if key not in self._names:
            stem, n = slug(name), 1
            candidate = f"{folder}/{stem}.html"
            while candidate.lower() in self._taken:
                n += 1
                candidate = f"{folder}/{stem}-{n}.html"
            self._taken.add(candidate.lower())
            self._names[key] = candidate
        return self._names[key]

    def path(self, relative: str) -> Path:
        """`root / relative`, refused unless it resolves inside the root."""
        target = _resolved(self.root / relative)
        if not target.is_relative_to(self.root) or target == self.root:
            raise InputError(f"report: page path {relative!r} would be written outside {self.root}")
        return target

    def write(self, relative: str, text: str) -> Path:
        """Write one page (UTF-8); returns its path."""
        target = self.path(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        self.written.append(target)
        return target

    def copy_static(self, source: Path, folder: str = "static") -> None:
        """Copy the vendored assets (CSS) beside the pages."""
        for item in sorted(source.iterdir()):
            if item.is_file():
                target = self.path(f"{folder}/{item.name}")
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(item, target)

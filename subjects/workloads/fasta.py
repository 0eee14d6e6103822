"""FASTA files of protein records: a writer, and a streaming parser that names bad lines.

The parser reads one line at a time and yields each record as soon as its sequence ends, so
a file far larger than memory can be converted record by record. Malformed input raises
`InputError` whose one-line message starts with "<file>:<line>:" and says what was expected.

Accepted: a header line ">ID description" followed by one or more sequence lines (wrapped
at any width) made of the 20 standard amino-acid letters, upper case. Blank lines are
skipped; Windows line ends are accepted.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

from proofbench.errors import InputError
from proofbench.subjects.workloads.proteins import AMINO_ACIDS, ProteinRecord

LINE_WIDTH = 60
_NOT_AMINO_ACID = re.compile(f"[^{AMINO_ACIDS}]")


def write_fasta(records: Iterable[ProteinRecord], path: Path, width: int = LINE_WIDTH) -> int:
    """Write `records` to `path` as FASTA, sequences wrapped at `width`; returns the count."""
    count = 0
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        for record in records:
            out.write(f">{record.id} {record.description}\n" if record.description else f">{record.id}\n")
            seq = record.sequence
            out.writelines(seq[i:i + width] + "\n" for i in range(0, len(seq), width))
            count += 1
    return count


def read_fasta(path: Path | str) -> Iterator[ProteinRecord]:
    """Yield the records of the FASTA file at `path`, one at a time, in file order.

    Raises InputError naming the file and line for: a missing file, a sequence line before
    any header, an empty header, a character outside the protein alphabet (with its column),
    a header with no sequence lines, and bytes that are not UTF-8.
    """
    path = Path(path)
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        raise InputError(f"{path}: FASTA file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: expected a FASTA file, found a directory") from None
    with handle:
        yield from _records(path, handle)


def _records(path: Path, handle: BinaryIO) -> Iterator[ProteinRecord]:
    header: tuple[str, str, int] | None = None  # (id, description, line number)
    chunks: list[str] = []
    for lineno, line in _lines(path, handle):
        if line.startswith(">"):
            if header is not None:
                yield _finish(path, header, chunks)
            header, chunks = _header(path, lineno, line), []
        elif line:
            if header is None:
                raise InputError(f"{path}:{lineno}: sequence line before any header; "
                                 f"expected the file to start with a '>' header line")
            _check_residues(path, lineno, line)
            chunks.append(line)
    if header is not None:
        yield _finish(path, header, chunks)


def _lines(path: Path, handle: BinaryIO) -> Iterator[tuple[int, str]]:
    # Numbered lines without trailing whitespace (columns stay true); decoded one line at a
    # time so that bytes which are not UTF-8 are reported on the line that holds them.
    for lineno, raw in enumerate(handle, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}:{lineno}: column {exc.start + 1}: byte 0x{raw[exc.start]:02x} is not "
                             f"UTF-8; expected a plain-text FASTA file") from None
        yield lineno, line.rstrip()


def _header(path: Path, lineno: int, line: str) -> tuple[str, str, int]:
    fields = line[1:].strip().split(maxsplit=1)
    if not fields:
        raise InputError(f"{path}:{lineno}: empty header; expected '>ID [description]'")
    return fields[0], (fields[1] if len(fields) > 1 else ""), lineno


def _check_residues(path: Path, lineno: int, line: str) -> None:
    bad = _NOT_AMINO_ACID.search(line)
    if bad is not None:
        raise InputError(f"{path}:{lineno}: column {bad.start() + 1}: character {bad.group()!r} is not "
                         f"a protein residue; expected one of {AMINO_ACIDS}")


def _finish(path: Path, header: tuple[str, str, int], chunks: list[str]) -> ProteinRecord:
    record_id, description, lineno = header
    if not chunks:
        raise InputError(f"{path}:{lineno}: header '>{record_id}' has no sequence lines; "
                         f"expected at least one line of residues after it")
    return ProteinRecord(record_id, description, "".join(chunks))

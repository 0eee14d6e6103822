"""The exceptions proofbench raises; `proofbench.cli` turns them into exit codes."""
from __future__ import annotations


def brief(message: str) -> str:
    """A message in one line, for a report's line (a suspect's or a bisection's reason): its
    first line and, where more follows (a tool's output, as a RunError carries asv's), the
    output's last line."""
    lines = [line.strip(" ·") for line in message.splitlines() if line.strip(" ·")]
    if len(lines) < 2:
        return lines[0] if lines else message
    return f"{lines[0].rstrip(':')}; its output's last line: {lines[-1]}"


class ProofbenchError(Exception):
    """Base of every error proofbench reports to a user in one line."""

    exit_code = 2


class DeclarationError(ProofbenchError):
    """A subject, variant, claim or profile is declared wrongly."""


class InputError(ProofbenchError):
    """A file given to proofbench (FASTA, LMDB, results JSON, TOML) is malformed.

    The message names the file and, where known, the line or field.
    """


class DatabaseError(ProofbenchError):
    """The database cannot be reached or is in a state proofbench cannot use."""


class RunError(ProofbenchError):
    """asv could not be driven (missing configuration, asv itself failed)."""


class Skip(NotImplementedError):
    """A variant cannot run on this machine; the message says why.

    Subclassing NotImplementedError makes asv record the result as skipped (NaN).
    """


class EquivalenceError(ProofbenchError):
    """An optimized variant's output differs from the baseline's beyond tolerance."""

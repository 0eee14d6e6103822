"""The synthetic protein generator and the FASTA writer/parser: round trips and bad input."""
from __future__ import annotations

import inspect
from collections import Counter
from pathlib import Path

import pytest

from proofbench.errors import InputError
from proofbench.subjects.workloads.fasta import LINE_WIDTH, read_fasta, write_fasta
from proofbench.subjects.workloads.lmdb_store import StoreReader, write_store
from proofbench.subjects.workloads.proteins import (
    AMINO_ACIDS,
    MAX_LENGTH,
    MIN_LENGTH,
    UNIPROT_FREQUENCIES,
    ProteinRecord,
    generate_proteins,
)

# -- synthetic proteins ----------------------------------------------------------------


def test_generator_is_deterministic_and_sizes_share_a_prefix():
    assert generate_proteins(200) == generate_proteins(200)
    assert generate_proteins(1000)[:200] == generate_proteins(200)
    assert generate_proteins(50, seed=1) != generate_proteins(50)


def test_ids_count_up_and_records_are_frozen():
    records = generate_proteins(12)
    assert [r.id for r in records] == [f"P{i:06d}" for i in range(1, 13)]
    assert all(r.description.startswith("synthetic protein") for r in records)
    with pytest.raises(AttributeError):
        records[0].sequence = "A"


def test_lengths_follow_the_stated_distribution():
    lengths = [len(r.sequence) for r in generate_proteins(2000)]
    mean = sum(lengths) / len(lengths)
    assert 330 <= mean <= 370  # target ~350; 2000 draws put the mean within about +-10 of it
    assert min(lengths) >= MIN_LENGTH and max(lengths) <= MAX_LENGTH
    assert len(set(lengths)) > 300  # a spread, not a constant


def test_residues_are_the_twenty_letters_at_uniprot_frequencies():
    counts = Counter("".join(r.sequence for r in generate_proteins(2000)))
    assert set(counts) == set(AMINO_ACIDS)
    total = sum(counts.values())
    weight = sum(UNIPROT_FREQUENCIES.values())
    for letter in AMINO_ACIDS:  # ~700,000 residues: sampling error is below 0.001
        assert abs(counts[letter] / total - UNIPROT_FREQUENCIES[letter] / weight) < 0.003, letter


# -- FASTA round trips -----------------------------------------------------------------


def test_written_file_wraps_at_60_and_parses_back(tmp_path):
    records = generate_proteins(40)
    path = tmp_path / "p.fasta"
    assert write_fasta(records, path) == 40
    lines = path.read_text().splitlines()
    assert max(len(line) for line in lines if not line.startswith(">")) == LINE_WIDTH
    assert list(read_fasta(path)) == records


def test_any_wrap_width_parses(tmp_path):
    records = generate_proteins(5)
    path = tmp_path / "narrow.fasta"
    write_fasta(records, path, width=7)
    assert list(read_fasta(str(path))) == records


def test_round_trip_through_lmdb_and_back(tmp_path):
    records = generate_proteins(60)
    write_fasta(records, tmp_path / "in.fasta")
    assert write_store(tmp_path / "db", read_fasta(tmp_path / "in.fasta"), batch_size=25) == 60
    with StoreReader(tmp_path / "db") as reader:
        pairs = [pair for batch in reader.batches(17) for pair in batch]
    back = [ProteinRecord(key.decode(), r.description, seq) for (key, seq), r in zip(pairs, records)]
    write_fasta(back, tmp_path / "out.fasta")
    assert (tmp_path / "out.fasta").read_bytes() == (tmp_path / "in.fasta").read_bytes()


def test_header_without_description_blank_lines_and_crlf(tmp_path):
    path = tmp_path / "loose.fasta"
    path.write_bytes(b">A1\r\nMKV\r\n\r\nLLA\r\n>B2  two words here \nW\n\n")
    assert list(read_fasta(path)) == [ProteinRecord("A1", "", "MKVLLA"), ProteinRecord("B2", "two words here", "W")]


def test_parser_streams(tmp_path):
    path = tmp_path / "late_error.fasta"
    path.write_text(">P1\nMKV\n>P2\nMK1\n")
    records = read_fasta(path)
    assert inspect.isgenerator(records)
    assert next(records) == ProteinRecord("P1", "", "MKV")  # yielded before the bad line is read
    with pytest.raises(InputError, match=":4:"):
        next(records)


# -- malformed input -------------------------------------------------------------------

MALFORMED = [
    ("sequence_first", "MKV\n>P1\nMKV\n", 1, "sequence line before any header"),
    ("empty_header", ">P1\nMKV\n>\nMKV\n", 3, "empty header"),
    ("blank_header", ">P1\nMKV\n>   \nMKV\n", 3, "empty header"),
    ("bad_letter", ">P1\nMKV\nMKVXA\n", 3, "column 4: character 'X'"),
    ("lower_case", ">P1\nmkv\n", 2, "column 1: character 'm'"),
    ("digit", ">P1\nMKVLL\nAAAAAAAAAA7\n", 3, "column 11: character '7'"),
    ("inner_space", ">P1\nMK V\n", 2, "column 3: character ' '"),
    ("no_sequence_mid", ">P1\n>P2\nMKV\n", 1, "header '>P1' has no sequence lines"),
    ("no_sequence_end", ">P1\nMKV\n\n>P2 last one\n\n", 4, "header '>P2' has no sequence lines"),
]


@pytest.mark.parametrize("text,line,fragment", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_input_names_file_and_line(tmp_path, text, line, fragment):
    path = tmp_path / "bad.fasta"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        list(read_fasta(path))
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: ")
    assert fragment in message
    assert "\n" not in message


def test_bad_character_message_lists_the_alphabet(tmp_path):
    path = tmp_path / "b.fasta"
    path.write_text(">P1\nMKB\n")
    with pytest.raises(InputError, match=f"expected one of {AMINO_ACIDS}"):
        list(read_fasta(path))


def test_bytes_that_are_not_utf8_are_reported_on_their_line(tmp_path):
    path = tmp_path / "latin1.fasta"
    path.write_bytes(b">P1 ok\nMKV\n>P2 caf\xe9\nMKV\n")
    with pytest.raises(InputError, match=r"latin1\.fasta:3: column 8: byte 0xe9 is not UTF-8"):
        list(read_fasta(path))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputError, match="nope.fasta: FASTA file not found"):
        list(read_fasta(tmp_path / "nope.fasta"))
    with pytest.raises(InputError, match="found a directory"):
        list(read_fasta(tmp_path))


def test_empty_file_has_no_records(tmp_path):
    path = Path(tmp_path / "empty.fasta")
    path.write_text("")
    assert list(read_fasta(path)) == []

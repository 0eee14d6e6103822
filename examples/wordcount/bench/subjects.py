"""The wordcount subjects: each way of counting, measured against the first one."""
from proofbench import Equivalence, Metric, Size, Subject, Variant, Workload, register
from wordcount import count_by_scanning, count_in_one_pass


def _prepare(ctx):
    words = [f"w{(i * 7919) % ctx.size['distinct']}" for i in range(ctx.size["n"])]
    return Workload(inputs=words, items=len(words))


def _mismatches(expected: dict, got: dict) -> float:
    return float(sum(expected[word] != got.get(word) for word in expected) + len(set(got) - set(expected)))


register(Subject(
    area="text", name="word_count", item="word",
    description="count each word: one scan of the text per distinct word vs one pass with a Counter",
    prepare=_prepare,
    variants=(Variant("baseline", count_by_scanning, "words.count(word) for each distinct word"),
              Variant("optimized", count_in_one_pass, "collections.Counter, one pass")),
    equivalence=Equivalence(Metric("mismatches", "words", higher_is_better=False), 0, _mismatches,
                            "every word counted the same"),
    sizes=(Size.of("tiny", n=2_000, distinct=50), Size.of("small", n=20_000, distinct=200),
           Size.of("large", n=200_000, distinct=1_000)),
))

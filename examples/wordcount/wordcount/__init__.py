"""Count how often each word occurs."""
from collections import Counter


def count_by_scanning(words: list[str]) -> dict[str, int]:
    """The first way anyone writes it: one pass over the text per distinct word."""
    return {word: words.count(word) for word in set(words)}


def count_in_one_pass(words: list[str]) -> dict[str, int]:
    """One pass over the text, counting as it goes."""
    return dict(Counter(words))

"""Two subjects under one name."""
from proofbench.declare import Subject, Variant
from proofbench.registry import register
from tests.faulty.declarations.common import SAME, SIZES, prepare


def _subject() -> Subject:
    return Subject(area="loading", name="twice", item="number", description="declared twice", prepare=prepare,
                   variants=(Variant("baseline", abs), Variant("optimized", abs)), equivalence=SAME, sizes=SIZES)


register(_subject())
register(_subject())  # the error

"""A subject whose optimized variant takes two arguments where the baseline takes one."""
from proofbench.declare import Subject, Variant
from proofbench.registry import register
from tests.faulty.declarations.common import SAME, SIZES, prepare


def _two(inputs, extra):
    return inputs


VARIANTS = (Variant("baseline", abs), Variant("optimized", _two))

register(Subject(  # the error
    area="loading", name="mismatched", item="number", description="variants disagree",
    prepare=prepare, variants=VARIANTS, equivalence=SAME, sizes=SIZES,
))

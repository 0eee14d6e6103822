"""Whole pipelines made of parts: the variants that turn parts on and off, for the whole and its ablation.

A pipeline subject runs one seed system end to end; each optimization the document lists is a
`Part`, and one function runs the pipeline with a given set of parts on. From the parts this
module builds the variants, each naming the parts it turns on (so the report can show them):

- `baseline`: every part off, the naive system the document starts from;
- `optimized`: every part the pipeline turns on (a part with `left_out` stays off, and the
  report says why);
- any other named whole the document describes (seed 002 has a speed and a memory configuration);
- the ablation, when asked for: `only_<part>` (that part alone on) and `without_<part>` (every
  part of `optimized` but that one), measured in the same run as the whole.

A variant needs what its parts need (`Part.requires`), so a variant with `compile` on is skipped
where torch.compile cannot run, with the reason.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable

from proofbench import Part, Variant
from proofbench.errors import DeclarationError

Run = Callable[[frozenset[str], Any], Any]  # run(parts on, workload inputs) -> output


def whole(parts: tuple[Part, ...]) -> tuple[str, ...]:
    """The names of the parts the whole turns on: every part not left out, in declared order."""
    return tuple(p.name for p in parts if not p.left_out)


def pipeline_variants(parts: tuple[Part, ...], run: Run, *, wholes: dict[str, tuple[str, ...]] | None = None,
                      ablate: bool = True) -> tuple[Variant, ...]:
    """baseline, optimized, the other `wholes` and (with `ablate`) only_/without_ each part."""
    by_name = {p.name: p for p in parts}

    def variant(name: str, on: tuple[str, ...], description: str) -> Variant:
        unknown = [p for p in on if p not in by_name]
        if unknown:
            raise DeclarationError(f"variant {name!r}: unknown part(s) {', '.join(unknown)}; "
                                   f"declared: {', '.join(by_name)}")
        requires = tuple(dict.fromkeys(r for p in on for r in by_name[p].requires))
        return Variant(name, partial(run, frozenset(on)), description, requires=requires, parts=on)

    everything = whole(parts)
    out = [variant("baseline", (), "every part off: the naive system the document starts from"),
           variant("optimized", everything, "every part on: " + ", ".join(everything))]
    out += [variant(name, on, "the document's other configuration: " + ", ".join(on))
            for name, on in (wholes or {}).items()]
    if ablate:
        for name in everything:
            out.append(variant(f"only_{name}", (name,), f"{name} alone on"))
            out.append(variant(f"without_{name}", tuple(p for p in everything if p != name),
                               f"every part of optimized but {name}"))
    return tuple(out)


def parts_of(variants: tuple[Variant, ...], name: str) -> frozenset[str]:
    """The parts the variant called `name` turns on (what its `prepare` must get ready)."""
    for v in variants:
        if v.name == name:
            return frozenset(v.parts)
    raise DeclarationError(f"no variant {name!r}; expected one of {', '.join(v.name for v in variants)}")

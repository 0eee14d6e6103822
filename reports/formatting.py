"""How numbers read: the Jinja2 filters the templates and the terminal table share."""
from __future__ import annotations

import datetime as dt
import math
import re

from proofbench.reports.output import slug

# Characters that data may hold but no page or terminal should receive as such: C0 and C1
# controls other than tab and newline (NUL, ESC, CR, DEL...) and the bidirectional marks,
# embeddings, overrides and isolates that reorder what is displayed (U+202E).
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
_ENERGY_UNITS = ((1e3, "kJ"), (1.0, "J"), (1e-3, "mJ"), (1e-6, "µJ"), (1e-9, "nJ"))
_BYTE_UNITS = ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))


def _missing(x: float | None) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _special(x: float | None) -> str | None:
    # what a missing or an infinite value reads as (an overflowing ratio is infinite); None for others
    if _missing(x):
        return "—"
    return ("∞" if x > 0 else "−∞") if math.isinf(x) else None


def _scaled(x: float | None, units: tuple[tuple[float, str], ...]) -> str:
    # the first unit the value reaches, else the smallest
    if (special := _special(x)) is not None:
        return special
    for scale, unit in units:
        if abs(x) >= scale:
            return f"{x / scale:.3g} {unit}"
    scale, unit = units[-1]
    return f"{x / scale:.3g} {unit}"


def seconds(x: float | None) -> str:
    """0.0123 -> '12.3 ms'."""
    return _scaled(x, _TIME_UNITS)


def joules(x: float | None) -> str:
    """0.0123 -> '12.3 mJ'."""
    return _scaled(x, _ENERGY_UNITS)


def byte_size(x: float | None) -> str:
    """1572864 -> '1.5 MiB'."""
    if (special := _special(x)) is not None:
        return special
    for scale, unit in _BYTE_UNITS:
        if abs(x) >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x:.0f} B"


def rate(x: float | None) -> str:
    """12345.6 -> '12.3k'."""
    if (special := _special(x)) is not None:
        return special
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def si(x: float | None, unit: str) -> str:
    """A rate with an SI prefix and its unit: (1.07e11, 'FLOP/s') -> '107 GFLOP/s'."""
    if (special := _special(x)) is not None:
        return special
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def factor(x: float | None) -> str:
    """1.234 -> '1.23x'."""
    special = _special(x)
    return f"{x:.2f}x" if special is None else special if special == "—" else f"{special}x"


def interval(low: float | None, high: float | None) -> str:
    """A ratio interval: '[1.10, 1.40]'."""
    if _missing(low) or _missing(high):
        return ""
    return "[" + ", ".join(_special(v) or f"{v:.2f}" for v in (low, high)) + "]"


def percent(x: float | None) -> str:
    """0.25 -> '25%'."""
    return _special(x) or f"{x:.0%}"


def confidence(level: float) -> str:
    """A confidence level with the digits it needs, never rounded up to 100%: 0.95 -> '95%',
    0.99583 -> '99.58%', 0.99999 -> '99.999%'."""
    for digits in range(0, 6):
        shown = f"{level:.{digits}%}"
        if abs(float(shown[:-1]) / 100 - level) < 0.5e-4 and (level >= 1 or float(shown[:-1]) < 100):
            return shown
    return f"{level:.6%}"


def error_document(kind: str, version: int, message: str, exit_code: int) -> dict:
    """The JSON a command that failed prints in its own format (`kind`, `version`): an object
    still, so a bot reading it gets the failure (exit status 2, or 3 for an internal error)."""
    return {"format": kind, "version": version, "status": "error", "exit_code": exit_code, "error": message}


def failed_markdown(command: str, message: str, exit_code: int) -> str:
    """The Markdown a command that failed prints where its comment or summary was asked for."""
    return f"**proofbench {command} failed** (exit status {exit_code}): {message}"


def signed_percent(x: float | None) -> str:
    """A relative change: 0.123 -> '+12.3%', -0.05 -> '−5.0%'."""
    if (special := _special(x)) is not None:
        return special
    return f"+{x:.1%}" if x >= 0 else f"−{-x:.1%}"


def amount(x: float | None, kind: str) -> str:
    """A value in its kind's unit: seconds, bytes, rate or factor."""
    shown = {"seconds": seconds, "bytes": byte_size, "rate": rate, "factor": factor}.get(kind)
    if shown is None:
        return _special(x) or f"{x:.4g}"
    return shown(x)


def measured(x: float | None, unit: str) -> str:
    """A value in asv's `unit`: seconds and bytes scaled ('12.3 ms', '1.5 MiB'), any other
    unit named after the number ('44.9 x')."""
    if x is None:
        return "—"
    kind = unit if unit in ("seconds", "bytes") else ""
    return amount(x, kind) + ("" if kind else f" {unit}")


def when(x: dt.datetime | None) -> str:
    """A timestamp as 'YYYY-MM-DD HH:MM UTC' (naive ones are taken as UTC)."""
    if x is None:
        return "—"
    if x.tzinfo is not None:
        x = x.astimezone(dt.timezone.utc)
    return x.strftime("%Y-%m-%d %H:%M UTC")


def day(x: dt.datetime | None) -> str:
    """A timestamp's date: 'YYYY-MM-DD'."""
    return "—" if x is None else x.strftime("%Y-%m-%d")


def short(text: str | None, length: int = 72) -> str:
    """The first line of `text`, cut to `length` characters with an ellipsis."""
    line = (text or "").splitlines()[0] if text else ""
    return line if len(line) <= length else line[:length - 1] + "…"


def verdict_figure(verdict) -> str:
    """The measured figure of a verdict in the claim's own terms ('—' where there is none: a
    verdict on equivalence carries the equivalence metric, which its reason line states)."""
    from proofbench.analysis.verdict import Why

    if _missing(verdict.value) or verdict.why in (Why.OUTSIDE_TOLERANCE, Why.NOT_DETERMINISTIC):
        return "—"
    if verdict.kind == "speedup":
        return f"{factor(verdict.value)} {interval(verdict.low, verdict.high)}".strip()
    if verdict.kind == "throughput":  # `detail`: the item ("823k sequences/s")
        return f"{rate(verdict.value)} {verdict.detail}s/s" if verdict.detail else f"{rate(verdict.value)}/s"
    if verdict.kind == "memory_reduction":
        return f"{verdict.value:.0%} less"
    return f"{verdict.value:.4g}"


def promise(claim) -> str:
    """A claim's promised figure in words: '2-3x faster', '5000 items/s', '30%-50% less peak memory'."""
    low, high = claim.low, claim.high
    if low is None:
        return "quality kept"
    if claim.kind == "speedup" and low == 1.0 and high in (None, 1.0):
        return "faster (no figure given)"
    span = f"{low:g}" if high in (None, low) else f"{low:g}-{high:g}"
    if claim.kind == "speedup":
        return f"{span}x faster"
    if claim.kind == "throughput":
        return f"{span} items/s"
    lo = f"{low:.0%}" if high in (None, low) else f"{low:.0%}-{high:.0%}"
    return f"{lo} less {claim.metric.replace('_', ' ')}"


def _half_width(estimate: float | None, low: float | None, high: float | None) -> str:
    if _missing(estimate) or _missing(low) or _missing(high) or not estimate or not low:
        return ""
    return f"±{max(estimate / low, high / estimate) - 1:.1%}"


def _interval(low: float | None, high: float | None) -> str:
    if _missing(low) or _missing(high):
        return ""
    return f"interval {low:.3f}-{high:.3f}"


def undecided(why: str, estimate: float | None = None, low: float | None = None, high: float | None = None,
              rounds: tuple[int, int] | None = None) -> str:
    """Why a paired speedup decides nothing (`proofbench.stats.Why`), in a few words."""
    from proofbench.stats import Why

    kept, total = rounds if rounds else (None, None)
    words = {
        Why.TOO_NOISY: lambda: f"too noisy here ({_half_width(estimate, low, high)} after {total} rounds)",
        Why.TOO_FEW_ROUNDS: lambda: f"too few rounds ({kept} kept of {total})",
        Why.UNEQUAL_LOAD: lambda: f"baseline and variant saw unlike load ({total - kept} of {total} rounds left out)",
        Why.NOT_PAIRED: lambda: "baseline and variant measured in separate processes, not in alternating rounds",
        Why.PROCESSES_DISAGREE: lambda: f"its processes disagreed beyond the run's variation between processes "
                                        f"({_half_width(estimate, low, high)} after {total} rounds)",
        Why.UNDECIDED: lambda: f"cannot tell it from no difference ({_interval(low, high)} after {total} rounds)",
        Why.BORDERLINE: lambda: f"too close to call ({_interval(low, high)} after {total} rounds: an edge "
                                f"within the variation between runs of no difference)",
        Why.NOT_NEGLIGIBLE: lambda: f"too close to call ({_interval(low, high)} after {total} rounds: it holds no "
                                    f"difference and differences beyond what the profile counts as none)",
    }
    return words[why]() if why in words else str(why)


def _processes(s) -> str:
    # ' in 2 processes; between processes ±1.3%, pooled over 27 speedups' for rounds from several
    if getattr(s, "processes", 1) <= 1:
        return ""
    pool = s.between
    pooled = f"; between processes ±{pool.relative:.1%}, pooled over {pool.comparisons} speedups" if pool else ""
    return f" in {s.processes} processes{pooled}"


def _runs(s) -> str:
    # '; between runs ±1.0%' where the profile's variation from run to run is in the interval
    between_runs = getattr(s, "between_runs", 0.0)
    return f"; between runs ±{between_runs:.1%}" if between_runs else ""


def speedup_words(s) -> str:
    """A paired speedup's outcome as the reports say it: 'faster', 'no significant difference',
    'inconclusive: too noisy here (±7.1% after 12 rounds)', with the rounds left out for load."""
    from proofbench.stats import Difference

    if s is None:
        return ""
    if s.difference == Difference.INCONCLUSIVE:
        return f"inconclusive: {undecided(s.why, s.estimate, s.low, s.high, (s.kept, s.rounds))}"
    dropped = f"; {s.left_out} of {s.rounds} rounds left out for load" if s.left_out else ""
    return f"{s.difference} ({s.kept} rounds{_processes(s)}{_runs(s)}{dropped})"


def verdict_reason(verdict) -> str:
    """Why a verdict is what it is, in one short line."""
    from proofbench.analysis.verdict import Why

    v = verdict
    rounds = f"{v.rounds[0]} rounds" if v.rounds else ""
    words = {
        Why.RUN_STATUS: lambda: v.detail,
        Why.VARIANT_NOT_MEASURED: lambda: f"variant {v.detail!r} was not measured",
        Why.OUTSIDE_TOLERANCE: lambda: f"{v.detail} {amount(v.value, '')} outside tolerance {v.tolerance}",
        Why.NOT_DETERMINISTIC: lambda: f"the baseline's own answers differ beyond {v.detail} tolerance {v.tolerance}",
        Why.STATE_MOVED: lambda: "its declared kept state moved between timed calls",
        Why.GPU_CLAIM: lambda: "the claim is about GPUs and this machine has none; the CPU figure is shown",
        Why.UNDECIDED: lambda: undecided(v.detail, v.value, v.low, v.high, v.rounds),
        Why.SIGNIFICANT: lambda: rounds,
        Why.SHORT_OF_PROMISE: lambda: f"faster ({rounds}) but below the promised {v.promised:g}x",
        Why.NOT_BETTER: lambda: f"{v.detail} ({rounds})",
        Why.BELOW_PROMISE: lambda: f"{undecided(v.detail, v.value, v.low, v.high, v.rounds)}; the whole interval "
                                   f"lies below the promised {v.promised:g}x",
        Why.ABOVE_PROMISE: lambda: f"{undecided(v.detail, v.value, v.low, v.high, v.rounds)}; the whole interval "
                                   f"lies above the promised {v.promised:g}x",
        Why.WITHIN_PROMISE: lambda: f"{undecided(v.detail, v.value, v.low, v.high, v.rounds)}; the whole interval "
                                    f"lies above 1 and below the promised {v.promised:g}x",
        Why.RATE_REACHED: lambda: "",  # the figure says it, with its unit
        Why.RATE_SHORT: lambda: f"baseline {rate(v.baseline)} {v.detail}s/s" if not _missing(v.baseline) else "",
        Why.NO_FIGURE: lambda: f"no {v.detail} figure for both variants",
        Why.REDUCTION: lambda: f"{v.detail}: {amount(v.baseline, _unit_of(v.detail))} -> "
                               f"{amount(v.measured, _unit_of(v.detail))}",
        Why.GPU_THROTTLED: lambda: gpu_throttled_words(v.detail.split(", ") if v.detail else ()),
        Why.GPU_SHARED: lambda: gpu_shared_words(v.detail.split(", ") if v.detail else ()),
    }
    said = words[v.why]() if v.why in words else str(v.why)
    return "; ".join(x for x in (said, isa_words(v.isa)) if x)


def _unit_of(metric: str) -> str:
    # a memory reduction's metric in bytes (peak_memory, model_bytes, tensor_bytes), else a bare number
    return "bytes" if metric.endswith(("memory", "bytes")) else ""


def gpu_throttled_words(reasons) -> str:
    """'GPU throttled (sw_power_cap) while measured'; without reasons, without the parenthesis."""
    named = f" ({', '.join(reasons)})" if reasons else ""
    return f"GPU throttled{named} while measured"


def gpu_shared_words(pids) -> str:
    """'another process used the GPU meanwhile (pid 4242)'; without ids, without the parenthesis."""
    pids = [str(p) for p in pids]
    named = f" ({'pid' if len(pids) == 1 else 'pids'} {', '.join(pids)})" if pids else ""
    return f"another process used the GPU meanwhile{named}"


def gpu_words(conditions) -> str:
    """What a watched GPU run's conditions (`proofbench.measure.gpu_watch.GpuConditions`) say
    against its timing, in a few words; empty when nothing does."""
    if conditions is None:
        return ""
    said = [gpu_throttled_words(conditions.throttle_reasons)] if conditions.throttled else []
    if conditions.shared:
        said.append(gpu_shared_words(conditions.other_pids))
    return "; ".join(said)


def isa_words(note) -> str:
    """What the CPU offers a bf16 or int8 variant: 'bf16 without avx512_bf16/amx_bf16 is emulated
    on this CPU (torch: AVX2)', or 'bf16 runs on avx512_bf16 here (torch: AVX512)'."""
    if note is None:
        return ""
    torch = f" (torch: {note.capability})" if note.capability else ""
    if note.emulated:
        return f"{note.dtype} without {'/'.join(note.native)} is emulated on this CPU{torch}"
    return f"{note.dtype} runs on {', '.join(note.present)} here{torch}"


def source(name: str) -> str:
    """A claim's source document, short: the seed's number ('000') or the file's name."""
    head = name.split("_", 1)[0]
    return head if head.isdigit() else name.rsplit("/", 1)[-1]


def visible(text: str) -> str:
    """`text` with every control or bidirectional-override character shown as its code point:
    'a\u202eb' -> 'a<U+202E>b'. Text from data passes through this before a page or a terminal."""
    return _HIDDEN.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)


def cell(value: object):
    """`value` as terminal text (a rich Text): shown as written, never read as markup."""
    from rich.text import Text

    return Text(visible(str(value)))


def css_class(label: str) -> str:
    """A verdict label (or a status) as a CSS class name."""
    return "v-" + re.sub(r"[^a-z0-9]+", "-", str(label).lower()).strip("-")


def anchor(text: str, prefix: str) -> str:
    """An HTML id made from data: 'claim-loading.lmdb_read_000-speed-1a2b3c4d'."""
    return f"{prefix}-{slug(str(text))}"


FILTERS = {"seconds": seconds, "joules": joules, "si": si, "byte_size": byte_size, "rate": rate, "factor": factor, "interval": interval,
           "percent": percent, "signed_percent": signed_percent, "amount": amount, "when": when, "day": day,
           "short": short, "anchor": anchor, "verdict_figure": verdict_figure, "verdict_reason": verdict_reason,
           "promise": promise, "source": source, "css_class": css_class, "speedup_words": speedup_words,
           "isa_words": isa_words, "gpu_words": gpu_words}

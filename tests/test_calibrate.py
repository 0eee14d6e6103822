"""Distance to the limit: exact FLOP counts, this machine's calibration (small sizes, few repeats),
stored once per machine fingerprint, and achieved rates set against it (above 100% flagged)."""
from __future__ import annotations

import math

import pytest
import torch
from sqlalchemy import func, select
from sqlalchemy.orm import Session
from torch.utils.flop_counter import FlopCounterMode

from proofbench.analysis.limits import limit
from proofbench.cli import main
from proofbench.db.profiles import CalibrationRow
from proofbench.db.session import connect
from proofbench.errors import DeclarationError, InputError
from proofbench.machine import calibrate as calibration_module
from proofbench.machine.calibrate import Calibration, Timing, calibrate
from proofbench.measure.flops import count_flops

SMALL = dict(sizes=(32, 64), repeats=2, copy_bytes=2**20)


# --- FLOPs --------------------------------------------------------------------------------

@pytest.mark.parametrize("m, k, n", [(64, 32, 16), (7, 129, 3)])
def test_a_matmul_counts_exactly_two_m_k_n(m, k, n):
    a, b = torch.randn(m, k), torch.randn(k, n)
    count, out = count_flops(lambda: a @ b)
    assert count.by_dtype == {"float32": 2 * m * k * n} and count.total == 2 * m * k * n
    assert out.shape == (m, n) and count.uncounted == ()
    with FlopCounterMode(display=False) as reference:
        a @ b
    assert reference.get_total_flops() == count.total  # the same formulas as torch's own counter


def test_a_linear_layer_forward_and_backward():
    layer, x = torch.nn.Linear(32, 8), torch.randn(16, 32, requires_grad=True)
    count, _ = count_flops(lambda: layer(x).sum().backward())
    # forward 2*16*32*8; backward: grad of input and of weight, each as large
    assert count.total == 3 * 2 * 16 * 32 * 8 and count.dominant() == "float32"


def test_composite_ops_under_inference_mode_are_decomposed_and_counted():
    layer, q = torch.nn.Linear(64, 32), torch.randn(1, 2, 8, 16)
    with torch.inference_mode():
        count, _ = count_flops(lambda: (layer(torch.randn(8, 64)),
                                        torch.nn.functional.scaled_dot_product_attention(q, q, q)))
    assert count.ops == {"aten.addmm": 2 * 8 * 64 * 32,
                         "aten._scaled_dot_product_flash_attention_for_cpu": 2 * (2 * 2 * 8 * 8 * 16)}
    assert count.uncounted == ()


def test_autocast_files_the_matmuls_under_bfloat16():
    layer, x = torch.nn.Linear(64, 64), torch.randn(8, 64)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        count, _ = count_flops(lambda: layer(x))
    assert count.by_dtype == {"bfloat16": 2 * 8 * 64 * 64} and count.dominant() == "bfloat16"


def test_cpu_attention_is_counted_with_torch_sdpa_formula():
    q = torch.randn(2, 4, 16, 8)
    count, _ = count_flops(lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q))
    # QK^T and PV: two batched products of 2*b*h*s*s*d each
    assert count.total == 2 * (2 * 2 * 4 * 16 * 16 * 8) and count.uncounted == ()


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")
def test_a_quantized_linear_has_no_formula_and_is_listed_as_uncounted():
    engines = torch.backends.quantized.supported_engines
    if not any(e in engines for e in ("fbgemm", "x86", "onednn", "qnnpack")):
        pytest.skip(f"no int8 quantized engine in this torch build ({engines})")
    model = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(32, 32)), {torch.nn.Linear},
                                                   dtype=torch.qint8)
    count, _ = count_flops(lambda: model(torch.randn(4, 32)))
    assert any("linear" in op for op in count.uncounted) and count.total == 0


# --- calibration --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def measured() -> Calibration:
    return calibrate("cpu", 1, dtypes=("float32", "bfloat16", "int8"), **SMALL)


def test_calibration_figures_are_positive_with_raw_repeats_kept(measured):
    before = torch.get_num_threads()
    assert measured.threads == 1 and measured.device == "cpu" and measured.torch_version == torch.__version__
    peak = measured.peak("float32")
    assert peak.rate > 0 and peak.slowest > 0 and peak.rate >= peak.median >= peak.slowest and 0 <= peak.spread < 1
    assert peak.size in (32, 64) and peak.repeats == 2
    for timing in measured.timings:
        assert len(timing.seconds) == 2 and all(s > 0 for s in timing.seconds)
    assert measured.bandwidth.rate > 0 and measured.bandwidth.size == 2**20
    for dtype in ("bfloat16", "int8"):  # measured where the build runs it, else the reason is kept
        assert (measured.peak(dtype) is not None and measured.peak(dtype).rate > 0) != (dtype in measured.unavailable)
    assert torch.get_num_threads() == before  # the thread count is restored
    assert measured.other_load_cores is not None and measured.other_load_cores >= 0  # the rest of the machine, kept


def test_calibration_round_trips_and_refuses_another_format(measured):
    assert Calibration.from_dict(measured.to_dict()) == measured
    with pytest.raises(InputError, match="field 'format'"):
        Calibration.from_dict({**measured.to_dict(), "format": 99})
    with pytest.raises(InputError, match="malformed"):
        Calibration.from_dict({"format": 1, "device": "cpu"})


def test_calibrate_refuses_unknown_dtypes_and_bad_counts():
    with pytest.raises(DeclarationError, match="dtypes must be among"):
        calibrate(dtypes=("float8",), **SMALL)
    with pytest.raises(DeclarationError, match="repeats >= 1"):
        calibrate(sizes=(32,), repeats=0)


def test_a_gpu_calibration_times_gpu_sized_matrices_unless_told_otherwise(monkeypatch):
    # A GPU's matmul peak needs far larger matrices than a CPU's (n = 1024 is launch-bound on an
    # H100); the sizes are checked here without a GPU, the timing itself replaced.
    seen = []
    monkeypatch.setattr(calibration_module, "_unsupported", lambda torch, dtype, device: None)
    monkeypatch.setattr(calibration_module, "_matmuls",
                        lambda torch, dtype, device, sizes, *rest: seen.append((device, sizes)) or [])
    monkeypatch.setattr(calibration_module, "_copy", lambda torch, device, nbytes, repeats, clock:
                        Timing("copy", "bytes", nbytes, 2.0 * nbytes, (1.0,)))
    calibrate("cuda", 1, dtypes=("float32",))
    calibrate("cpu", 1, dtypes=("float32",))
    calibrate("cuda", 1, dtypes=("float32",), sizes=(64,))
    assert seen == [("cuda", calibration_module.GPU_SIZES), ("cpu", calibration_module.SIZES), ("cuda", (64,))]
    assert min(calibration_module.GPU_SIZES) > max(calibration_module.SIZES)


def test_calibrate_command_stores_once_per_machine_fingerprint(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(calibration_module, "COPY_BYTES", 2**20)
    url = f"sqlite:///{tmp_path / 'cal.sqlite'}"
    args = ["calibrate", "--db", url, "--profile", "smoke", "--sizes", "32,64", "--repeats", "2"]
    assert main(args) == 0
    first = capsys.readouterr()
    assert "float32 matmul peak (cpu, 1 thread(s)" in first.out and "memory bandwidth" in first.out
    assert main(args) == 0
    assert "calibrated already" in capsys.readouterr().err
    with Session(connect(url)) as session:
        assert session.scalar(select(func.count()).select_from(CalibrationRow)) == 1
        stored = session.scalars(select(CalibrationRow)).one()
        first_at, document = stored.measured_at, stored.document
    assert Calibration.from_dict(document).peak("float32").rate > 0
    assert main(args + ["--again"]) == 0
    with Session(connect(url)) as session:
        again = session.scalars(select(CalibrationRow)).one()
        assert again.id == stored.id and again.measured_at >= first_at and again.document != document
    assert main(["calibrate", "--db", url, "--sizes", "8,x"]) == 2
    assert "--sizes" in capsys.readouterr().err


# --- achieved against the peak ------------------------------------------------------------

def _synthetic(float32: float, bfloat16: float | None, bandwidth: float) -> Calibration:
    n = 256
    work = 2.0 * n**3
    timings = [Timing("matmul", "float32", n, work, (work / float32,))]
    if bfloat16:
        timings.append(Timing("matmul", "bfloat16", n, work, (work / bfloat16,)))
    timings.append(Timing("copy", "bytes", 2**28, 2.0**29, (2.0**29 / bandwidth,)))
    return Calibration("cpu", 1, "test", tuple(timings), {} if bfloat16 else {"bfloat16": "not available here: x"})


def test_share_of_the_peak_of_the_variants_dtype():
    cal = _synthetic(100e9, 400e9, 20e9)
    bf16 = limit("bf16", "compute", {"bfloat16": 1.24e9}, None, cal, results_seconds=0.01)
    assert bf16.share == pytest.approx(0.31) and bf16.dtype == "bfloat16" and bf16.timed_by == "results"
    assert bf16.rate == pytest.approx(124e9) and bf16.peak == pytest.approx(400e9)
    # mixed: the time the work would take at each dtype's peak, over the time it took
    mixed = limit("amp", "compute", {"bfloat16": 4e9, "float32": 1e9}, None, cal, profiled_seconds=0.1)
    assert mixed.dtype == "mixed" and mixed.timed_by == "profile"
    assert mixed.share == pytest.approx((4e9 / 400e9 + 1e9 / 100e9) / 0.1)


def test_a_reading_above_the_measured_peak_is_flagged():
    over = limit("fast", "compute", {"float32": 3e9}, None, _synthetic(100e9, None, 20e9), results_seconds=0.02)
    assert over.share == pytest.approx(1.5) and over.over_peak
    assert not limit("ok", "compute", {"float32": 1e9}, None, _synthetic(100e9, None, 20e9), 0.02).over_peak


def test_data_bound_share_and_the_reasons_there_is_none():
    cal = _synthetic(100e9, None, 20e9)
    data = limit("batched", "data", {}, 2e8, cal, results_seconds=0.1)
    assert data.share == pytest.approx(0.1) and data.dtype == "memory" and data.rate == pytest.approx(2e9)
    assert "not available here: x" in limit("bf16", "compute", {"bfloat16": 1e9}, None, cal, 0.01).reason
    assert limit("x", "compute", {"float32": 1e9}, None, None, 0.01).reason == "no calibration"
    assert limit("x", "compute", {}, None, cal, 0.01).reason == "no matmul-class operations counted"
    assert limit("x", "data", {}, None, cal, 0.01).reason == "no bytes moved declared"
    nothing = limit("x", "compute", {"float32": 1e9}, None, cal, math.nan, None)
    assert nothing.share is None and nothing.reason == "no time per call measured"

"""The machines page's hardware table: a captured profile, and a machine known only from asv results.

A machine known only from foreign asv results holds those results' `params` as its profile: asv's
machine description (`cpu`, `num_cpu`, `ram` in bytes or, from older asv, in kB) with the
environment's Python and packages mixed in. Its facts must land in the same rows as a captured
profile's, its RAM with a unit, its environment nowhere; a captured profile reads as before.
"""
from __future__ import annotations

import re
import tarfile
from html import unescape

import pytest

from proofbench.cli import main
from proofbench.db.models import Machine
from proofbench.machine.capture import MachineProfile, fingerprint
from proofbench.machine.nvml import GpuProfile
from proofbench.reports.machines import column, profile_rows
from tools.real_data import shared_data

DATA = shared_data()
needs_data = pytest.mark.skipif(DATA is None or not (DATA / "asv-results").is_dir(),
                                reason="../shared/data/asv-results is absent (a clone without the shared data): "
                                       "the real asv results cannot be read")
LABELS = ["CPU", "architecture", "instruction sets for ML", "torch CPU capability", "cores (physical / logical)",
          "CPU frequency (min / max / now)", "CPU governor", "RAM", "GPUs", "GPU note", "CUDA / cuDNN",
          "operating system", "kernel", "Python", "torch (default threads)", "hostname", "fingerprint"]
# conda-benchmarks' params (asv format 2): asv's machine.json, then the environment's python and packages
MBP = {"arch": "arm64", "cpu": "Apple M1 Pro", "machine": "Daniels-MBP", "num_cpu": "10", "os": "Darwin 21.6.0",
       "ram": "17179869184", "python": "3.10", "conda-package-handling": "2.0.2", "conda-libmamba-solver": ""}
# plasmapy-benchmarks' (asv format 1): ram is /proc/meminfo's kB
DELL = {"arch": "x86_64", "cpu": "Intel(R) Core(TM) i7-7700HQ CPU @ 2.80GHz", "machine": "dell_laptop",
        "num_cpu": "4", "os": "Linux 5.6.8-arch1-1", "ram": "16261472", "python": "3.8", "astropy": "",
        "numba": "", "h5py": ""}


def _asv(params: dict, fingerprint: str = "813e19bc7d871163", id: int = 1) -> Machine:
    return Machine(id=id, name=params.get("machine", "m"), fingerprint=fingerprint, profile=params)


def _captured() -> dict:
    gpu = GpuProfile(index=0, name="NVIDIA H100 80GB HBM3", memory_total_bytes=85520809984, driver_version="550.90.07",
                     cuda_driver_version="12.4", compute_capability=(9, 0), power_limit_mw=700000,
                     max_sm_clock_mhz=1980, max_memory_clock_mhz=2619, uuid="GPU-1")
    made = MachineProfile(
        name="box", hostname="box.local", cpu_model="AMD EPYC 9654", arch="x86_64", isa=("avx2", "avx512f"),
        torch_cpu_capability="AVX512", physical_cores=96, logical_cores=192, cpu_freq_min_mhz=1500.0,
        cpu_freq_max_mhz=3700.0, cpu_freq_current_mhz=2400.0, cpu_governor="performance",
        ram_total_bytes=512 * 2**30, os="Linux", os_release="Ubuntu 22.04", kernel="6.5.0", python_version="3.11.7",
        torch_version="2.5.0", cuda_version="12.4", cudnn_version=90100, torch_threads=96, gpus=(gpu,),
        gpu_note=None)
    return {"fingerprint": fingerprint(made), **made.to_dict()}  # as `proofbench run` writes it


def test_a_captured_profile_fills_every_row_and_nothing_else():
    p = _captured()
    rows = profile_rows([Machine(id=1, name="box", fingerprint="stored", profile=p)])
    assert rows == [(label, [value]) for label, value in zip(LABELS, [
        "AMD EPYC 9654", "x86_64", "avx2, avx512f", "AVX512", "96 / 192", "1500 / 3700 / 2400 MHz", "performance",
        "512 GiB",
        "NVIDIA H100 80GB HBM3, 79.6 GiB, driver 550.90.07, compute 9.0, 700 W, SM 1980 MHz", "—", "12.4 / 90100",
        "Linux (Ubuntu 22.04)", "6.5.0", "3.11.7", "2.5.0 (96)", "box.local", p["fingerprint"]])]


def test_an_asv_only_machine_shows_its_hardware_in_the_captured_rows():
    rows = dict(profile_rows([_asv(MBP), _asv(DELL, "9ef3cf85775459e0", id=2)]))
    assert rows["CPU"] == ["Apple M1 Pro", "Intel(R) Core(TM) i7-7700HQ CPU @ 2.80GHz"]
    assert rows["architecture"] == ["arm64", "x86_64"]
    assert rows["cores (physical / logical)"] == ["— / 10", "— / 4"]  # asv counts logical CPUs only
    assert rows["RAM"] == ["16 GiB", "15.5 GiB"]  # bytes (asv 0.6), kB (older asv)
    assert rows["operating system"] == ["Darwin 21.6.0", "Linux 5.6.8-arch1-1"]
    assert rows["GPUs"] == ["—", "—"]  # asv names no GPUs: unknown, not none
    assert rows["fingerprint"] == ["813e19bc7d871163", "9ef3cf85775459e0"]  # the stored one
    assert rows["Python"] == ["3.10", "3.8"]  # the results' Python, from their params
    assert list(rows) == LABELS  # no raw asv keys, no packages of the asv matrix


def test_the_index_names_an_asv_only_machines_cpu_and_cores():
    assert column(_asv(MBP), "Daniels-MBP", [], [], None, None).hardware == "Apple M1 Pro, 10 cores; GPU unknown"


def test_beside_a_captured_profile_an_asv_one_adds_no_rows():
    rows = profile_rows([Machine(id=1, name="box", fingerprint="f", profile=_captured()), _asv(MBP, id=2)])
    assert [label for label, _ in rows] == LABELS
    shown = dict(rows)
    assert shown["CPU"] == ["AMD EPYC 9654", "Apple M1 Pro"] and shown["RAM"] == ["512 GiB", "16 GiB"]
    assert shown["operating system"] == ["Linux (Ubuntu 22.04)", "Darwin 21.6.0"]


def test_proofbench_s_own_asv_machine_entry_shows_its_gpu_and_fingerprint():
    # what capture.to_asv_machine_json writes: asv's six keys, `gpu` and `proofbench_fingerprint`
    entry = {"machine": "box", "os": "Linux 6.5.0", "arch": "x86_64", "cpu": "AMD EPYC 9654", "num_cpu": "192",
             "ram": str(512 * 2**30), "gpu": "2x NVIDIA H100 80GB HBM3", "proofbench_fingerprint": "0123456789abcdef",
             "python": "3.11", "torch": "2.5.0"}
    rows = dict(profile_rows([_asv(entry, "0123456789abcdef")]))
    assert rows["GPUs"] == ["2x NVIDIA H100 80GB HBM3"] and rows["fingerprint"] == ["0123456789abcdef"]
    assert rows["RAM"] == ["512 GiB"] and list(rows) == LABELS


@pytest.mark.parametrize("ram, shown", [
    ("17179869184", "16 GiB"),  # bytes: a whole number of KiB, 1 GiB or more
    ("16261472", "15.5 GiB"),  # not a whole number of KiB: kB
    ("1003908", "980 MiB"),  # kB too, however small
    ("536870912", "512 MiB or 512 GiB (asv's ram 536870912: bytes or kB)"),  # either, so both
    ("", "—"),  # asv could not read it
    ("16 GB", "16 GB"),  # hand-written: as it is
])
def test_asv_ram_is_a_size_with_its_unit_where_the_unit_can_be_told(ram, shown):
    assert dict(profile_rows([_asv({"machine": "m", "ram": ram})]))["RAM"] == [shown]


@pytest.fixture(scope="module")
def foreign_site(tmp_path_factory):
    """conda-benchmarks' and plasmapy-benchmarks' published results ingested, and the report of them."""
    where = tmp_path_factory.mktemp("foreign")
    url = f"sqlite:///{where / 'db.sqlite'}"
    for name, inner in (("conda", "results"), ("plasmapy", "plasmapy-benchmarks/results")):
        with tarfile.open(DATA / "asv-results" / f"{name}-results.tar.xz") as archive:
            archive.extractall(where / name, filter="data")
        assert main(["ingest", str(where / name / inner), "--db", url]) == 0
    assert main(["report", "--db", url, "--out", str(where / "site")]) == 0
    return where / "site"


def _hardware_table(html: str) -> dict[str, list[str]]:
    table = html[html.index('<table class="profiles">'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r"<tr><th>(.*?)</th>(.*?)</tr>", table, re.S)
    return {unescape(label): [unescape(c) for c in re.findall(r"<td>(.*?)</td>", cells, re.S)] for label, cells in rows}


@needs_data
def test_real_asv_only_machines_show_their_hardware(foreign_site):
    rows = _hardware_table((foreign_site / "machines.html").read_text())
    cpus = rows["CPU"]
    mbp, dell = cpus.index("Apple M1 Pro"), cpus.index("Intel(R) Core(TM) i7-7700HQ CPU @ 2.80GHz")
    assert [rows["RAM"][i] for i in (mbp, dell)] == ["16 GiB", "15.5 GiB"]
    assert [rows["cores (physical / logical)"][i] for i in (mbp, dell)] == ["— / 10", "— / 4"]
    assert [rows["architecture"][i] for i in (mbp, dell)] == ["arm64", "x86_64"]
    assert [rows["operating system"][i] for i in (mbp, dell)] == ["Darwin 21.6.0", "Linux 5.6.8-arch1-1"]
    assert all(re.fullmatch(r"[0-9a-f]{16}", f) for f in rows["fingerprint"])
    for key in ("python", "astropy", "numba", "h5py", "conda-package-handling", "cpu", "num_cpu", "ram"):
        assert key not in rows

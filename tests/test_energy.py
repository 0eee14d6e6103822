"""Energy: RAPL (a fake powercap tree, and the real one where this machine has it) and NVML (a fake).

The fake tree has what the kernel writes: top-level package zones with `name`, `energy_uj` and
`max_energy_range_uj`, a sub-zone (core) and a psys zone that must not be added to the
packages. The counters move while the metered block runs, one of them through its restart at
max_energy_range_uj. A root-only energy_uj (mode 0400, as Linux 5.10 and later set it) is read by
an unprivileged process, so the permission path is real even when the tests run as root.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import pynvml
import pytest
from nvml_fake import FakeNvml

from proofbench.analysis.limits import energy
from proofbench.errors import DeclarationError, InputError
from proofbench.measure.energy import POWERCAP, RAPL_CAVEAT, EnergyMeter, EnergyReading, counter_delta, rapl_zones

MAX_RANGE = 262_143_328_850  # a real package's max_energy_range_uj


def _zone(root: Path, name: str, label: str, energy_uj: int) -> Path:
    zone = root / name
    zone.mkdir(parents=True)
    (zone / "name").write_text(label + "\n")
    (zone / "energy_uj").write_text(f"{energy_uj}\n")
    (zone / "max_energy_range_uj").write_text(f"{MAX_RANGE}\n")
    return zone


@pytest.fixture
def powercap(tmp_path) -> Path:
    root = tmp_path / "powercap"
    _zone(root, "intel-rapl:0", "package-0", 5_000_000)
    _zone(root, "intel-rapl:1", "package-1", MAX_RANGE - 1_000_000)  # restarts during the block
    _zone(root, "intel-rapl:0:0", "core", 1_000)
    _zone(root, "intel-rapl:2", "psys", 9_000_000)
    return root


def _set(root: Path, zone: str, energy_uj: int) -> None:
    (root / zone / "energy_uj").write_text(f"{energy_uj}\n")


def test_counter_delta_undoes_one_restart():
    assert counter_delta(100, 350, 1000) == 250
    assert counter_delta(900, 50, 1000) == 150  # 100 to the top, 50 after the restart


def test_rapl_sums_the_packages_across_a_counter_restart(powercap):
    zones, reason = rapl_zones(powercap)
    assert reason is None and [z.name for z in zones] == ["package-0", "package-1"]  # not core, not psys
    with EnergyMeter("cpu", powercap=powercap) as meter:
        _set(powercap, "intel-rapl:0", 7_500_000)  # +2.5 J
        _set(powercap, "intel-rapl:1", 500_000)  # +1.0 J before the restart, +0.5 J after
        _set(powercap, "intel-rapl:2", 99_000_000)  # psys moves a lot: not counted
    reading = meter.reading
    assert reading.measured and reading.source == "rapl"
    assert reading.joules == pytest.approx(4.0)
    assert reading.caveat == RAPL_CAVEAT and "whole CPU package" in reading.caveat and reading.seconds >= 0


def test_psys_alone_is_used_when_there_is_no_package_zone(tmp_path):
    root = tmp_path / "powercap"
    _zone(root, "intel-rapl:0", "psys", 0)
    with EnergyMeter("cpu", powercap=root) as meter:
        _set(root, "intel-rapl:0", 1_500_000)
    assert meter.reading.joules == pytest.approx(1.5)


def test_no_powercap_is_not_measurable_with_the_reason(tmp_path):
    with EnergyMeter("cpu", powercap=tmp_path / "absent") as meter:
        pass
    reading = meter.reading
    assert not reading.measured and reading.source == "none"
    assert "no RAPL" in reading.reason and "does not exist" in reading.reason
    (tmp_path / "empty").mkdir()
    assert "no intel-rapl zones" in rapl_zones(tmp_path / "empty")[1]


def _as_nobody(root: Path) -> tuple[int, str | None]:
    # A forked child that drops to uid/gid 65534 reads the tree: the kernel's permission check is real.
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            zones, reason = rapl_zones(root)
            os.write(write_end, json.dumps([len(zones), reason]).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        text = pipe.read()
    assert os.waitpid(pid, 0)[1] == 0, "the unprivileged reader failed"
    count, reason = json.loads(text)
    return count, reason


def test_a_root_only_energy_counter_is_not_measurable_with_the_reason(tmp_path):
    if os.geteuid() != 0:
        root = tmp_path / "powercap"
        (_zone(root, "intel-rapl:0", "package-0", 5_000_000) / "energy_uj").chmod(0o400)
        zones, reason = rapl_zones(root)
        count = len(zones)
    else:
        # root reads any file, so the reader the kernel restricts is an unprivileged process; the tree
        # lies in a directory it can enter (pytest's own tmp directories are root's alone)
        with tempfile.TemporaryDirectory(dir="/tmp") as where:
            Path(where).chmod(0o755)
            root = Path(where) / "powercap"
            (_zone(root, "intel-rapl:0", "package-0", 5_000_000) / "energy_uj").chmod(0o400)
            count, reason = _as_nobody(root)
    assert count == 0 and "readable by root only" in reason and "energy_uj" in reason
    assert "CVE-2020-8694" in reason


def test_rapl_on_this_machine():
    zones, reason = rapl_zones(POWERCAP)
    if not zones:
        pytest.skip(f"this machine cannot give RAPL energy: {reason}")
    with EnergyMeter("cpu") as meter:
        sum(i * i for i in range(3_000_000))
    assert meter.reading.measured and meter.reading.joules > 0


def test_nvml_energy_from_the_fake_h100():
    nvml = FakeNvml()
    with EnergyMeter("cuda", nvml=nvml) as meter:
        nvml.energy_added_mj += 35_000  # 35 J while the block ran
    assert meter.reading.joules == pytest.approx(35.0) and meter.reading.source == "nvml"
    assert "whole GPU board" in meter.reading.caveat
    assert nvml.open_sessions == 0


def test_nvml_energy_not_supported_or_absent_says_why(monkeypatch):
    with EnergyMeter("cuda", nvml=FakeNvml(unsupported=("nvmlDeviceGetTotalEnergyConsumption",))) as meter:
        pass
    assert not meter.reading.measured and "energy counter" in meter.reading.reason and "Volta" in meter.reading.reason
    with EnergyMeter("cuda", nvml=FakeNvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)) as meter:
        pass
    assert meter.reading.reason.startswith("NVML not available")
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with EnergyMeter("cuda") as meter:
        pass
    assert "nvidia-ml-py is not installed" in meter.reading.reason


def test_bad_device_and_reading_round_trip():
    with pytest.raises(DeclarationError, match="device must be one of cpu, cuda"):
        EnergyMeter("tpu")
    reading = EnergyReading(1.5, 2.0, "rapl", RAPL_CAVEAT)
    assert EnergyReading.from_dict(reading.to_dict()) == reading
    with pytest.raises(InputError, match="energy reading"):
        EnergyReading.from_dict({"joules": 1})


def test_energy_per_item_and_items_per_kwh():
    e = energy(joules=36.0, calls=10, items=100, source="rapl", caveat=RAPL_CAVEAT, reason="")
    assert e.joules_per_call == pytest.approx(3.6) and e.joules_per_item == pytest.approx(0.036)
    assert e.items_per_kwh == pytest.approx(3.6e6 / 0.036)
    missing = energy(None, 0, 100, "none", "", "no RAPL: test")
    assert missing.joules_per_item is None and missing.items_per_kwh is None and missing.reason == "no RAPL: test"

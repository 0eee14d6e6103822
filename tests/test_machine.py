"""Machine profiles, asv's machine file, fingerprints, and NVML profiles and telemetry.

GPU values come from tests/fixtures/nvml_h100.json (a fixture, not a live reading) served
by a fake `pynvml` module; nothing here needs a GPU.
"""
from __future__ import annotations

import dataclasses
import json
import platform
import sys
import time

import pynvml
import pytest
from asv.graph import Graph
from asv.machine import Machine, MachineCollection
from nvml_fake import FakeNvml

from proofbench.analysis.isa import isa_note
from proofbench.errors import DeclarationError, InputError
from proofbench.machine.capture import (
    MachineProfile,
    capture,
    default_name,
    fingerprint,
    isa_flags,
    to_asv_machine_json,
    write_asv_machine_file,
)
from proofbench.machine.nvml import GpuProfile, NvmlSampler, decode_reasons, gpu_profiles

H100 = GpuProfile(
    index=0, name="NVIDIA H100 80GB HBM3", memory_total_bytes=85520809984, driver_version="550.90.07",
    cuda_driver_version="12.4", compute_capability=(9, 0), power_limit_mw=700000,
    max_sm_clock_mhz=1980, max_memory_clock_mhz=2619, uuid="GPU-5d1f0c3e-7a2b-4c6d-9e8f-0a1b2c3d4e5f",
)


# --- capture() on this machine -------------------------------------------------------

def test_capture_reads_this_machine():
    import torch

    profile = capture()
    assert profile.hostname == platform.uname().node and profile.name.startswith(profile.hostname + "-")
    assert profile.cpu_model and profile.arch == platform.machine()
    assert profile.torch_cpu_capability == torch.backends.cpu.get_cpu_capability()
    assert profile.logical_cores >= 1 and profile.ram_total_bytes > 0
    assert profile.python_version == platform.python_version()
    assert (profile.torch_version, profile.cuda_version) == (torch.__version__, torch.version.cuda)
    assert profile.torch_threads == torch.get_num_threads()
    if profile.gpus:  # a GPU machine: NVML answered, so there is nothing to explain
        assert profile.gpu_note is None
    else:
        assert profile.gpu_note.startswith(("NVML not available: ", "no GPU: "))


def test_capture_without_the_nvml_library_says_so_plainly():
    profile = capture("ci-runner", nvml=FakeNvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND))
    assert profile.name == "ci-runner" and profile.gpus == ()
    assert profile.gpu_note == "NVML not available: NVML Shared Library Not Found"


def test_no_devices_and_no_package_are_reasons_not_crashes(monkeypatch):
    assert gpu_profiles(FakeNvml(count=0)) == ((), "no GPU: NVML is installed but reports 0 devices")
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    gpus, reason = gpu_profiles()
    assert gpus == () and reason.startswith("NVML not available: nvidia-ml-py is not installed")


def test_capture_without_torch_leaves_the_torch_stack_empty(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # find_spec answers None, as with no torch
    profile = capture(nvml=FakeNvml(count=0))
    assert (profile.torch_version, profile.cuda_version, profile.cudnn_version, profile.torch_threads) == (
        None, None, None, None)


# --- GPU profiles from the H100 fixture ------------------------------------------------

def test_h100_fixture_builds_the_gpu_profile():
    nvml = FakeNvml()
    assert gpu_profiles(nvml) == ((H100,), None)
    assert nvml.open_sessions == 0  # nvmlShutdown matched nvmlInit


def test_unsupported_readings_are_none():
    (gpu,), _ = gpu_profiles(FakeNvml(unsupported=("nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetUUID")))
    assert gpu.power_limit_mw is None and gpu.uuid is None and gpu.name == H100.name


def test_capture_carries_the_gpus():
    profile = capture(nvml=FakeNvml())
    assert profile.gpus == (H100,) and profile.gpu_note is None


# --- asv's machine file ---------------------------------------------------------------

def test_asv_machine_json_is_accepted_by_asvs_loader(tmp_path):
    profile = capture("bench-host", nvml=FakeNvml())
    path = tmp_path / "asv-machine.json"
    path.write_text(json.dumps(to_asv_machine_json(profile)))
    machine = Machine.load(machine_name="bench-host", _path=str(path))
    assert (machine.machine, machine.arch, machine.cpu) == ("bench-host", profile.arch, profile.cpu_model)
    assert (machine.num_cpu, machine.ram) == (str(profile.logical_cores), str(profile.ram_total_bytes))
    assert machine.gpu == "NVIDIA H100 80GB HBM3"
    assert machine.proofbench_fingerprint == fingerprint(profile)
    # asv saved it back on load and reads it again; publish turns every key into a graph parameter
    assert MachineCollection.load("bench-host", _path=str(path))["gpu"] == machine.gpu
    assert "gpu-NVIDIA H100 80GB HBM3" in Graph("bench.time_x", dict(machine.__dict__)).path


def test_write_asv_machine_file_keeps_other_machines(tmp_path):
    path = tmp_path / "asv-machine.json"
    path.write_text(json.dumps({"version": 1, "other": {"machine": "other", "os": "Linux 6", "arch": "x86_64",
                                                        "cpu": "x", "num_cpu": "4", "ram": "1"}}))
    write_asv_machine_file(capture("mine", nvml=FakeNvml(count=0)), path)
    data = json.loads(path.read_text())
    assert set(data) == {"version", "other", "mine"} and data["mine"]["gpu"] == "none"
    path.write_text(json.dumps({"version": 2}))
    with pytest.raises(InputError, match="'version' is 2; expected 1"):
        write_asv_machine_file(capture("mine", nvml=FakeNvml(count=0)), path)


# --- fingerprint and persistence -------------------------------------------------------

def test_fingerprint_is_stable_and_ignores_volatile_readings():
    first, second = capture(nvml=FakeNvml()), capture(nvml=FakeNvml(reading="idle"))
    assert fingerprint(first) == fingerprint(second)
    moved = dataclasses.replace(first, name="renamed", hostname="renamed", cpu_freq_current_mhz=1234.5,
                                cpu_governor="powersave", torch_threads=1)
    assert fingerprint(moved) == fingerprint(first)


@pytest.mark.parametrize("change", [
    {"cpu_model": "Intel(R) Xeon(R) Platinum 8480+"},
    {"gpus": (dataclasses.replace(H100, name="NVIDIA A100-SXM4-80GB", compute_capability=(8, 0)),)},
    {"gpus": (dataclasses.replace(H100, driver_version="555.42.06"),)},
    {"gpus": ()},
    {"torch_version": "2.12.0"},
    {"ram_total_bytes": 2 * 85520809984},
    {"isa": ("avx2", "fma", "avx512f")},  # the same CPU model, with bf16 and VNNI hidden by a hypervisor
])
def test_fingerprint_changes_with_the_hardware_or_stack(change):
    profile = capture(nvml=FakeNvml())
    assert fingerprint(dataclasses.replace(profile, **change)) != fingerprint(profile)


def test_to_dict_round_trips_through_json():
    profile = capture(nvml=FakeNvml())
    restored = MachineProfile.from_dict(json.loads(json.dumps(profile.to_dict())))
    assert restored == profile and fingerprint(restored) == fingerprint(profile)


def test_from_dict_refuses_other_formats_and_fields():
    data = capture(nvml=FakeNvml(count=0)).to_dict()
    with pytest.raises(InputError, match="'format' is 7; expected 2"):
        MachineProfile.from_dict({**data, "format": 7})
    with pytest.raises(InputError, match="gpu_count"):
        MachineProfile.from_dict({**data, "gpu_count": 0})
    with pytest.raises(DeclarationError, match="name"):
        MachineProfile.from_dict({**data, "name": "a/b"})


def test_a_version_1_profile_reads_with_no_instruction_sets():
    data = capture(nvml=FakeNvml(count=0)).to_dict()
    old = {k: v for k, v in data.items() if k not in ("isa", "torch_cpu_capability")}
    restored = MachineProfile.from_dict({**old, "format": 1})
    assert restored.isa == () and restored.torch_cpu_capability is None


# --- instruction sets and names ---------------------------------------------------------

@pytest.mark.parametrize("fixture, expected", [
    # An Azure VM (GitHub Actions): Ice Lake, but the hypervisor exposes no bf16, VNNI or AMX.
    ("intel_xeon_8370c_vm.txt", ("avx2", "fma", "avx512f")),
    # An AMD EPYC (Zen 5) KVM guest: bf16 and VNNI, no AMX.
    ("amd_epyc_kvm.txt", ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni")),
    # An NVIDIA Grace (Neoverse V2): SVE2 with bf16 and int8 matrix multiply.
    ("arm_neoverse_v2.txt", ("asimddp", "bf16", "i8mm", "sve", "sve2", "svebf16", "svei8mm")),
])
def test_isa_flags_from_captured_cpuinfo(fixture, expected):
    from conftest import REPO

    assert isa_flags((REPO / "tests" / "fixtures" / "cpuinfo" / fixture).read_text()) == expected


def test_isa_flags_of_an_unreadable_cpuinfo_are_none():
    assert isa_flags("") == () and isa_flags("processor\t: 0\nmodel name\t: x\n") == ()


def test_two_hosts_called_vm_get_different_names(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.write_text("3f1c0a9e5b7d4e2f8a6b1c0d9e8f7a6b\n")
    second.write_text("9a8b7c6d5e4f30211203f4e5d6c7b8a9\n")
    names = {default_name("vm", first), default_name("vm", second)}
    assert len(names) == 2 and all(n.startswith("vm-") for n in names)
    assert default_name("vm", first) == default_name("vm", first)  # stable
    missing = tmp_path / "none"
    assert default_name("vm", missing, "EPYC|2|24") != default_name("vm", missing, "Xeon|2|24")


def test_every_measuring_command_takes_its_machine_name_from_the_environment(monkeypatch):
    # `machine --name` names its own profile only: `run` measured under the default name
    from proofbench.machine.capture import NAME_VAR, capture

    monkeypatch.setenv(NAME_VAR, "laptop-b")
    assert capture(nvml=FakeNvml()).name == "laptop-b" and capture("given", nvml=FakeNvml()).name == "given"
    monkeypatch.setenv(NAME_VAR, "  ")
    assert capture(nvml=FakeNvml()).name != "  " and capture(nvml=FakeNvml()).name.startswith(platform.node())


@pytest.mark.parametrize("requires, profile, expected", [
    (("bf16",), {"arch": "x86_64", "isa": ["avx2", "fma", "avx512f"], "gpus": [], "torch_cpu_capability": "AVX512"},
     ("bf16", (), True)),
    (("bf16",), {"arch": "x86_64", "isa": ["avx512f", "avx512_bf16"], "gpus": []}, ("bf16", ("avx512_bf16",), False)),
    (("int8_cpu",), {"arch": "aarch64", "isa": ["asimddp", "i8mm"], "gpus": []}, ("int8", ("i8mm", "asimddp"), False)),
])
def test_a_dtype_variant_is_told_what_the_cpu_offers_it(requires, profile, expected):
    note = isa_note(requires, profile)
    assert (note.dtype, note.present, note.emulated) == expected


def test_no_note_without_a_dtype_or_without_captured_instruction_sets():
    assert isa_note((), {"isa": ["avx2"]}) is None
    assert isa_note(("bf16",), {"arch": "x86_64"}) is None  # a profile from before the capture


# --- telemetry ----------------------------------------------------------------------

def test_decode_reasons_names_each_bit():
    assert decode_reasons(0x24) == ("sw_power_cap", "sw_thermal_slowdown")
    assert decode_reasons(0x1 | 0x10000) == ("gpu_idle", "unknown_0x10000")
    assert decode_reasons(0) == ()


def _sampled(nvml: FakeNvml, seconds: float = 0.03):
    with NvmlSampler(interval=0.005, nvml=nvml) as sampler:
        time.sleep(seconds)
    return sampler.telemetry()


def test_sampler_flags_a_thermal_slowdown_as_throttled():
    summary = _sampled(FakeNvml(reading="thermal_slowdown")).to_dict()
    assert summary["throttled"] and summary["thermal_throttled"]
    assert summary["throttle_reasons"] == ["sw_thermal_slowdown"]
    assert summary["max_temperature_c"] == 87 and summary["min_sm_clock_mhz"] == 1410
    assert summary["samples"] >= 2 and summary["mean_utilization_pct"] == 100


def test_sampler_at_full_clock_is_not_throttled():
    nvml = FakeNvml(reading="load")
    summary = _sampled(nvml).to_dict()
    assert not summary["throttled"] and summary["reasons_seen"] == []
    assert summary["min_sm_clock_mhz"] == summary["mean_sm_clock_mhz"] == 1980
    assert nvml.open_sessions == 0


def test_idle_samples_neither_throttle_nor_lower_the_clock():
    nvml = FakeNvml(reading="idle")
    with NvmlSampler(interval=0.005, nvml=nvml) as sampler:
        nvml.reading = "load"  # the entry sample saw an idle GPU; the exit sample sees it busy
    summary = sampler.telemetry().to_dict(include_samples=True)
    assert summary["reasons_seen"] == ["gpu_idle"] and not summary["throttled"]
    assert summary["min_sm_clock_mhz"] == 1980 and summary["raw"][0]["sm_clock_mhz"] == 345


def test_sampler_falls_back_to_throttle_reasons_on_old_drivers():
    class OldDriver(FakeNvml):
        def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)

    assert _sampled(OldDriver(reading="thermal_slowdown")).thermal_throttled


def test_sampler_without_nvml_runs_the_block_and_says_why():
    ran = []
    with NvmlSampler(nvml=FakeNvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)) as sampler:
        ran.append(True)
    telemetry = sampler.telemetry()
    assert ran and telemetry.samples == () and not telemetry.throttled
    assert telemetry.note == "NVML not available: NVML Shared Library Not Found"


def test_sampler_refuses_a_non_positive_interval():
    with pytest.raises(DeclarationError, match="interval must be a positive number"):
        NvmlSampler(interval=0)

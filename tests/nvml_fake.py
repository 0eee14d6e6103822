"""A stand-in for the `pynvml` module, serving tests/fixtures/nvml_h100.json (a fixture, not a live
reading), shared by the machine-profile, telemetry and energy tests. Nothing here needs a GPU."""
from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pynvml

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "nvml_h100.json").read_text())
_CLOCKS = {pynvml.NVML_CLOCK_GRAPHICS: "NVML_CLOCK_GRAPHICS", pynvml.NVML_CLOCK_SM: "NVML_CLOCK_SM",
           pynvml.NVML_CLOCK_MEM: "NVML_CLOCK_MEM"}
_SENSORS = {pynvml.NVML_TEMPERATURE_GPU: "NVML_TEMPERATURE_GPU"}


class FakeNvml:
    """Stands in for the pynvml module: the fixture's values, pynvml's constants and errors.

    `reading` picks the fixture's telemetry scenario and may change while a sampler runs.
    """

    NVMLError = pynvml.NVMLError
    NVML_CLOCK_GRAPHICS = pynvml.NVML_CLOCK_GRAPHICS
    NVML_CLOCK_SM = pynvml.NVML_CLOCK_SM
    NVML_CLOCK_MEM = pynvml.NVML_CLOCK_MEM
    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU

    def __init__(self, reading: str = "load", init_error: int | None = None, count: int | None = None,
                 unsupported: tuple[str, ...] = ()):
        self.reading = reading
        self.init_error = init_error
        self.count = FIXTURE["system"]["nvmlDeviceGetCount"] if count is None else count
        self.unsupported = unsupported
        self.open_sessions = 0
        self.energy_added_mj = 0

    def _device(self, handle: int, function: str):
        if function in self.unsupported:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        device = FIXTURE["devices"][handle]
        return device[function] if function in device else device["readings"][self.reading][function]

    def nvmlInit(self):
        if self.init_error is not None:
            raise pynvml.NVMLError(self.init_error)
        self.open_sessions += 1

    def nvmlShutdown(self):
        self.open_sessions -= 1

    def nvmlDeviceGetCount(self):
        return self.count

    def nvmlSystemGetDriverVersion(self):
        return FIXTURE["system"]["nvmlSystemGetDriverVersion"]

    def nvmlSystemGetCudaDriverVersion(self):
        return FIXTURE["system"]["nvmlSystemGetCudaDriverVersion"]

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlDeviceGetName(self, handle):
        return self._device(handle, "nvmlDeviceGetName")

    def nvmlDeviceGetUUID(self, handle):
        return self._device(handle, "nvmlDeviceGetUUID")

    def nvmlDeviceGetMemoryInfo(self, handle):
        return SimpleNamespace(**self._device(handle, "nvmlDeviceGetMemoryInfo"))

    def nvmlDeviceGetCudaComputeCapability(self, handle):
        return tuple(self._device(handle, "nvmlDeviceGetCudaComputeCapability"))

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        return self._device(handle, "nvmlDeviceGetEnforcedPowerLimit")

    def nvmlDeviceGetMaxClockInfo(self, handle, clock):
        return self._device(handle, "nvmlDeviceGetMaxClockInfo")[_CLOCKS[clock]]

    def nvmlDeviceGetClockInfo(self, handle, clock):
        return self._device(handle, "nvmlDeviceGetClockInfo")[_CLOCKS[clock]]

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return self._device(handle, "nvmlDeviceGetTemperature")[_SENSORS[sensor]]

    def nvmlDeviceGetUtilizationRates(self, handle):
        return SimpleNamespace(**self._device(handle, "nvmlDeviceGetUtilizationRates"))

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        return self._device(handle, "nvmlDeviceGetCurrentClocksEventReasons")

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle):
        return self._device(handle, "nvmlDeviceGetCurrentClocksEventReasons")

    def nvmlDeviceGetPowerUsage(self, handle):
        return self._device(handle, "nvmlDeviceGetPowerUsage")

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        # "self" in the fixture is the process reading it
        return [SimpleNamespace(pid=os.getpid() if p["pid"] == "self" else p["pid"], usedGpuMemory=p["usedGpuMemory"])
                for p in self._device(handle, "nvmlDeviceGetComputeRunningProcesses")]

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        # millijoules since the driver loaded: the fixture's count plus what a test adds
        return self._device(handle, "nvmlDeviceGetTotalEnergyConsumption") + self.energy_added_mj

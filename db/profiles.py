"""Why and how far: each machine's calibrated peaks, and per-variant profiles (operators, FLOPs, energy).

A calibration belongs to a machine row (a name at one hardware fingerprint), a device and a
thread count: it is measured once there and kept (raw timings included) until asked to be
measured again. A variant profile is one `proofbench profile` of one variant at one size on
one machine; every run adds rows and the report shows the newest of each.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Optional

from sqlalchemy import DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint, select
from sqlalchemy.orm import Mapped, Session, mapped_column, relationship

from proofbench.db.models import Base, Machine, now
from proofbench.measure.variant_profile import VariantProfile


class CalibrationRow(Base):
    """A machine's measured matmul peaks and copy bandwidth at one device and thread count.

    `document` is `proofbench.machine.calibrate.Calibration.to_dict()`: raw seconds of every
    repeat, from which the peaks are derived.
    """

    __tablename__ = "calibrations"
    __table_args__ = (UniqueConstraint("machine_id", "device", "threads"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    machine_id: Mapped[int] = mapped_column(ForeignKey("machines.id"), index=True)
    device: Mapped[str] = mapped_column(String(10))
    threads: Mapped[int] = mapped_column(Integer)
    torch_version: Mapped[str] = mapped_column(String(100), default="")
    document: Mapped[dict[str, Any]] = mapped_column(default=dict)
    measured_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=now)

    machine: Mapped[Machine] = relationship()


class VariantProfileRow(Base):
    """One profiled variant: its top operators, operations per dtype, bytes moved, energy, traces.

    `status` is ok, skipped or failed (`reason` says why). `flops` maps dtype names to the
    operations of one call ({} when none were counted; `flops_note` says why). Energy is the
    joules of `energy_calls` calls, or None with `energy_reason`; `energy_caveat` says what else
    the counter counts. `operators` holds the top rows of the profile that explains the call
    (`kind` torch or python); `traces` the trace files by kind.
    """

    __tablename__ = "variant_profiles"

    id: Mapped[int] = mapped_column(primary_key=True)
    machine_id: Mapped[int] = mapped_column(ForeignKey("machines.id"), index=True)
    subject: Mapped[str] = mapped_column(String(200), index=True)
    size: Mapped[str] = mapped_column(String(50))
    variant: Mapped[str] = mapped_column(String(100))
    device: Mapped[str] = mapped_column(String(10))
    threads: Mapped[int] = mapped_column(Integer)
    commit: Mapped[str] = mapped_column(String(64), default="")
    status: Mapped[str] = mapped_column(String(10))
    reason: Mapped[str] = mapped_column(Text, default="")
    bound: Mapped[str] = mapped_column(String(10), default="compute")
    kind: Mapped[Optional[str]] = mapped_column(String(10))
    items: Mapped[Optional[int]] = mapped_column(Integer)
    call_seconds: Mapped[Optional[float]] = mapped_column(Float)
    flops: Mapped[dict[str, Any]] = mapped_column(default=dict)
    flops_note: Mapped[str] = mapped_column(Text, default="")
    bytes_moved: Mapped[Optional[float]] = mapped_column(Float)
    energy_joules: Mapped[Optional[float]] = mapped_column(Float)
    energy_calls: Mapped[int] = mapped_column(Integer, default=0)
    energy_source: Mapped[str] = mapped_column(String(10), default="none")
    energy_caveat: Mapped[str] = mapped_column(Text, default="")
    energy_reason: Mapped[str] = mapped_column(Text, default="")
    operators: Mapped[list[Any]] = mapped_column(default=list)
    traces: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=now)

    machine: Mapped[Machine] = relationship()


def find_calibration(session: Session, machine_id: int, device: str, threads: int) -> CalibrationRow | None:
    """The machine's calibration at `device` and `threads`, or None."""
    return session.scalar(select(CalibrationRow).where(CalibrationRow.machine_id == machine_id,
                                                       CalibrationRow.device == device,
                                                       CalibrationRow.threads == threads))


def store_calibration(session: Session, machine_id: int, document: dict[str, Any],
                      replace: bool = False) -> tuple[CalibrationRow, bool]:
    """The calibration row for `document`'s device and threads, and whether it was written now.

    An existing row is kept unless `replace`: a machine is calibrated once per fingerprint.
    """
    device, threads = document["device"], int(document["threads"])
    row = find_calibration(session, machine_id, device, threads)
    if row is not None and not replace:
        return row, False
    if row is None:
        row = CalibrationRow(machine_id=machine_id, device=device, threads=threads)
        session.add(row)
    row.document, row.torch_version, row.measured_at = document, document.get("torch_version", ""), now()
    session.flush()
    return row, True


def calibrations(session: Session, machine_ids: set[int] | None = None) -> list[CalibrationRow]:
    """Every calibration (of `machine_ids` when given), by machine, device and threads."""
    query = select(CalibrationRow).order_by(CalibrationRow.machine_id, CalibrationRow.device, CalibrationRow.threads)
    if machine_ids is not None:
        query = query.where(CalibrationRow.machine_id.in_(machine_ids))
    return list(session.scalars(query))


def latest_profiles(session: Session, machine_ids: set[int] | None = None) -> list[VariantProfileRow]:
    """The newest profile of each (machine, subject, size, variant, device, threads)."""
    query = select(VariantProfileRow).order_by(VariantProfileRow.id)
    if machine_ids is not None:
        query = query.where(VariantProfileRow.machine_id.in_(machine_ids))
    newest: dict[tuple, VariantProfileRow] = {}
    for row in session.scalars(query):
        newest[(row.machine_id, row.subject, row.size, row.variant, row.device, row.threads)] = row
    return list(newest.values())


def profile_row(machine_id: int, profile: VariantProfile, device: str, threads: int, commit: str = "") -> VariantProfileRow:
    """The row that stores one variant's profile."""
    explaining = profile.explaining
    energy = profile.energy
    return VariantProfileRow(
        machine_id=machine_id, subject=profile.subject, size=profile.size, variant=profile.variant, device=device,
        threads=threads, commit=commit, status=profile.status, reason=profile.reason, bound=profile.bound,
        kind=explaining.kind if explaining else None, items=profile.items, call_seconds=profile.call_seconds,
        flops=dict(profile.flops.by_dtype) if profile.flops else {},
        flops_note=profile.flops_note or _uncounted(profile), bytes_moved=profile.bytes_moved,
        energy_joules=energy.joules if energy else None, energy_calls=profile.energy_calls,
        energy_source=energy.source if energy else "none", energy_caveat=(energy.caveat or "") if energy else "",
        energy_reason=(energy.reason or "") if energy else "",
        operators=[r.to_dict() for r in explaining.rows] if explaining else [], traces=profile.traces)


def _uncounted(profile: VariantProfile) -> str:
    # Matmul-like operators with no FLOP formula: the count is a floor, and the note says so.
    if profile.flops is None or not profile.flops.uncounted:
        return ""
    return "not counted (no FLOP formula): " + ", ".join(profile.flops.uncounted)

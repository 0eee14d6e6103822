"""Drives `asv run` over a range of commits, each built into asv's virtualenv environment.

Where `proofbench.pipeline.runner` measures the checkout in hand (asv's `existing` environment), this
measures history: for every commit of the range, in first-parent order, asv checks the
commit out, builds a wheel of it, installs it into a virtualenv and runs the benchmark
suite of the working tree (`<repo>/benchmarks`, asv's model: one suite, the project varies)
against it. The suite's modules import `proofbench.measure.bench` and the subjects from the installed
commit, so each commit is measured with its own code.

Building that virtualenv must not take minutes, nor the network: torch alone is a large
wheel. The environment is given a read-only view of this project's own site-packages (a
directory of symlinks, without pip, setuptools and proofbench itself), in two steps:

1. `asv setup` creates the environment. asv's virtualenv plugin drops PYTHONPATH from the
   commands it runs there but sets it from ASV_PYTHONPATH, which names the view, so asv's
   `pip install` of the matrix (`torch==2.13.0`, transformers, ...) finds every requirement
   already satisfied, offline: the packages measured are the ones on disk.
2. A `.pth` file naming the view is put in the environment's site-packages, after which
   `asv run` builds, installs and measures each commit. (ASV_PYTHONPATH cannot serve the
   benchmark processes: asv's runner script removes PYTHONPATH entries from sys.path,
   asv issue #1463.) The view comes after the environment's own site-packages, so the
   commit's wheel, the only thing installed there, is what `import harness` finds.

The environment lives in asv's env_dir and is reused by later runs (asv recreates it only
when the Python or the matrix changes; the `.pth` is written again every run).

A commit that fails to build, or whose benchmarks crash, is recorded by asv as failed
(None) for that commit, and the range goes on.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from proofbench import git
from proofbench.errors import InputError, RunError
from proofbench.machine.capture import MachineProfile
from proofbench.measure import sidecar
from proofbench.pipeline import asv_log, results_file, runner
from proofbench.profile import Profile

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"  # the shared packages' ABI
ENVIRONMENT = f"virtualenv:{PYTHON}"
SHARED_SITE = "history-site"
SHARED_PTH = "proofbench-history-site.pth"
BUILD_FAILED = "the commit did not build or install (see asv's output of the history run)"
# What the environment must not see of this project's site-packages: the installers it has
# its own copies of, path hooks (.pth files are not read from PYTHONPATH anyway), and
# proofbench itself, which comes from the commit being measured.
_PRIVATE = re.compile(r"^(pip|setuptools|pkg_resources|_distutils_hack|wheel|proofbench)([-_.].*)?$"
                      r"|^__editable__|\.pth$|^__pycache__$")
_PROGRESS = re.compile(r"^\[\s*(\d+(?:\.\d+)?)%\]\s+\S+\s+(.*)$")
_COMMIT_LINE = re.compile(r"For \S+ commit ([0-9a-f]{8})")


@dataclass(frozen=True)
class HistoryOutcome:
    """What one history run left behind: the commits asked for, the results files of
    those that have any, and the commits asv could not build (their results are failed)."""

    returncode: int
    commits: tuple[str, ...]
    machine: str
    environment_dir: Path
    results: tuple[Path, ...]
    failed_builds: tuple[str, ...]
    log: str


def default_branch(repo: Path = runner.ROOT) -> str:
    """The branch the repository's asv.conf.json tracks first (this project's when it has none)."""
    config = repo / "asv.conf.json"
    branches = _read_conf(config if config.is_file() else runner.ROOT / "asv.conf.json").get("branches")
    return str((branches or ["main"])[0])


def commits(repo: Path, branch: str, spec: str | None = None, since: str | None = None) -> tuple[str, ...]:
    """The commits of `spec` (`A..B`, or a revision and its history; default: the branch),
    committed at or after `since`, oldest first, on `branch`'s first-parent history."""
    found = tuple(git.first_parent(repo, spec or branch, since))
    if not found:
        raise InputError(f"{repo}: no commits in {spec or branch!r}" + (f" since {since}" if since else ""))
    on_branch = set(git.first_parent(repo, branch))
    stray = [c for c in found if c not in on_branch]
    if stray:
        raise InputError(f"{repo}: commit {stray[0][:8]} of {spec or branch!r} is not on {branch}'s first-parent "
                         f"history (series follow one branch; pass --branch)")
    return found


def _project_site() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def shared_site(target: Path, site: Path | None = None) -> Path:
    """(Re)make `target` as symlinks to this project's site-packages, private entries left out."""
    site = site or _project_site()
    target.mkdir(parents=True, exist_ok=True)
    wanted = {entry.name: entry for entry in site.iterdir() if not _PRIVATE.search(entry.name)}
    for link in target.iterdir():
        if link.name not in wanted or not link.is_symlink() or Path(os.readlink(link)) != wanted[link.name]:
            link.unlink()
    for name, entry in wanted.items():
        if not (target / name).is_symlink():
            (target / name).symlink_to(entry)
    return target


def _absolute(conf: dict, key: str, base: Path) -> str:
    path = Path(conf[key])
    return str(path if path.is_absolute() else base / path)


def _read_conf(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise RunError(f"{path}: cannot read asv's configuration: {exc}") from None


def write_config(layout: runner.Layout, repo: Path, branch: str) -> Path:
    """asv's configuration for a history run, written beside the results: the measured
    repository's own asv.conf.json (its matrix, build and install commands; the layout's
    when it has none) with the layout's directories, this Python and absolute paths."""
    own = repo / "asv.conf.json"
    conf = _read_conf(own if own.is_file() else layout.config)
    where = _read_conf(layout.config)
    base = layout.config.parent
    conf.update(repo=str(repo), branches=[branch], pythons=[PYTHON], benchmark_dir=str(repo / "benchmarks"),
                env_dir=_absolute(where, "env_dir", base), results_dir=str(layout.results),
                html_dir=_absolute(where, "html_dir", base))
    path = layout.results.parent / "history.asv.conf.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(conf, indent=2))
    return path


def history_environment(profile: Profile, layout: runner.Layout) -> dict[str, str]:
    """The environment of the asv process: the runner's, without the project on PYTHONPATH
    (each commit brings its own proofbench)."""
    env = runner.run_environment(profile, "", layout)
    env.pop("PYTHONPATH", None)
    env.pop("ASV_PYTHONPATH", None)  # it would put the project's own tree before the commit's
    env.pop(sidecar.COMMIT_VAR, None)  # asv tells each benchmark its commit (ASV_COMMIT)
    # asv looks for `python3.11` on PATH: this interpreter's, so the ABI matches the shared packages.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def setup_command(config: Path) -> list[str]:
    """The `asv setup` command line that creates (or checks) the history environment."""
    return [sys.executable, "-m", "asv", "setup", "--config", str(config), "--environment", ENVIRONMENT]


def link_shared(env_dir: Path, shared: Path) -> list[Path]:
    """Put a .pth naming `shared` into every virtualenv of this Python under `env_dir`."""
    written = []
    for info_file in sorted(env_dir.glob("*/asv-env-info.json")):
        try:
            info = json.loads(info_file.read_text())
        except (OSError, ValueError):
            continue  # not an environment asv finished creating
        site = info_file.parent / "lib" / f"python{PYTHON}" / "site-packages"
        if info.get("tool_name") == "virtualenv" and info.get("python") == PYTHON and site.is_dir():
            (site / SHARED_PTH).write_text(f"{shared}\n")
            written.append(site / SHARED_PTH)
    return written


def asv_command(config: Path, machine: str, hashfile: Path, bench: str | None, rerun: bool) -> list[str]:
    """The `asv run` command line over the commits listed in `hashfile`."""
    cmd = [sys.executable, "-m", "asv", "run", "--config", str(config), "--environment", ENVIRONMENT,
           "--record-samples", "--launch-method", "forkserver", "--machine", machine, "--show-stderr"]
    if not rerun:
        cmd.append("--skip-existing")
    if bench:
        cmd += ["--bench", bench]
    return cmd + [f"HASHFILE:{hashfile}"]


def sections(log: str, hashes: tuple[str, ...]) -> list[tuple[str, str]]:
    """asv's log cut at each 'For <project> commit <hash8>' heading: (full hash, its text)."""
    out: list[tuple[str, list[str]]] = []
    for line in log.splitlines(keepends=True):
        heading = _COMMIT_LINE.search(line)
        commit = next((h for h in hashes if h.startswith(heading.group(1))), None) if heading else None
        if commit:
            out.append((commit, []))
        elif out:
            out[-1][1].append(line)
    return [(commit, "".join(lines)) for commit, lines in out]


def failed_builds(log: str, hashes: tuple[str, ...]) -> tuple[str, ...]:
    """Commits whose build asv gave up on: it logs 'Skipping <env>' under the commit's heading."""
    return tuple(dict.fromkeys(c for c, text in sections(log, hashes) if re.search(r"·+ Skipping ", text)))


def diagnose(log: str, hashes: tuple[str, ...], results: tuple[Path, ...], path: Path) -> int:
    """Append to the sidecar why benchmarks failed, as `proofbench run` does: what asv printed
    under each commit, and for a commit that did not build, that it did not. Returns the count."""
    records = [r for commit, text in sections(log, hashes) for r in asv_log.from_asv_log(text, commit)]
    broken = set(failed_builds(log, hashes))
    for results_path in results:
        try:
            parsed = results_file.read(results_path)
        except InputError:
            continue  # ingest refuses it, naming it
        if parsed.commit in broken:
            records += [sidecar.Record(benchmark=point.benchmark.rsplit(".", 1)[0], params=point.params,
                                       status="failed", reason=BUILD_FAILED, commit=parsed.commit)
                        for point in parsed.points]
    sidecar.append(path, records)
    return len(records)


def run(hashes: tuple[str, ...], profile: Profile, machine_profile: MachineProfile, *, repo: Path = runner.ROOT,
        branch: str = "main", bench: str | None = None, rerun: bool = False, layout: runner.Layout | None = None,
        on_progress: Callable[[float, str], None] | None = None) -> HistoryOutcome:
    """Measure `hashes` (oldest first) with asv in its virtualenv environment."""
    layout = layout or runner.Layout.default()
    runner.write_machine_files(machine_profile, layout)
    config = write_config(layout, repo, branch)
    hashfile = config.with_name("history.hashes")
    hashfile.write_text("\n".join(hashes) + "\n")
    env = history_environment(profile, layout)
    env_dir, setup = prepare_environment(config, repo, env, shared_site(layout.results.parent / SHARED_SITE))
    cmd = asv_command(config, machine_profile.name, hashfile, bench or profile.bench or None, rerun)
    log = _stream(cmd, repo, env, on_progress)
    results = tuple(path for h in hashes for path in _results_files(layout.results / machine_profile.name, h))
    if log.returncode != 0 and not results:
        raise RunError("asv run over the range failed:\n" + "".join(log.lines[-30:]))
    text = "".join(log.lines)
    diagnose(text, hashes, results, layout.sidecar)
    return HistoryOutcome(log.returncode, hashes, machine_profile.name, env_dir, results,
                          failed_builds(text, hashes), setup + text)


def prepare_environment(config: Path, repo: Path, env: dict[str, str], shared: Path) -> tuple[Path, str]:
    """Create (or find) the history environment with `asv setup` and hand it the shared
    packages; returns its env_dir and asv's output."""
    setup = _stream(setup_command(config), repo, {**env, "ASV_PYTHONPATH": str(shared)}, None)
    env_dir = Path(json.loads(config.read_text())["env_dir"])
    # `asv setup` exits non-zero even when it succeeds (it returns its environments): the
    # environment's info file, which asv writes last, is what says it exists.
    if not link_shared(env_dir, shared):
        raise RunError(f"asv could not create the history environment ({ENVIRONMENT}) in {env_dir}:\n"
                       + "".join(setup.lines[-30:]))
    return env_dir, "".join(setup.lines)


def _results_files(directory: Path, commit: str) -> list[Path]:
    # asv names a file <commit8>-<env name>, or -env-<hash> when the name is long: read it.
    out = []
    for path in sorted(directory.glob(f"{commit[:8]}-*.json")):
        try:
            env_name = str(json.loads(path.read_text()).get("env_name", ""))
        except (OSError, ValueError):
            env_name = "virtualenv-"  # unreadable: let ingest refuse it by name
        if env_name.startswith("virtualenv-"):
            out.append(path)
    return out


@dataclass(frozen=True)
class _Log:
    returncode: int
    lines: list[str]


def _stream(cmd: list[str], cwd: Path, env: dict[str, str],
            on_progress: Callable[[float, str], None] | None) -> _Log:
    # cwd is the measured repository: asv reads build requirements from ./pyproject.toml.
    lines: list[str] = []
    with subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          bufsize=1) as proc:
        for line in proc.stdout or ():
            lines.append(line)
            match = _PROGRESS.match(line.strip())
            if match and on_progress:
                on_progress(float(match.group(1)), match.group(2))
    return _Log(proc.returncode, lines)

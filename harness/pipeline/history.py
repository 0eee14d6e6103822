"""Measures a range of commits, each built into asv's virtualenv environment.

Where `proofbench.pipeline.runner` measures the checkout in hand (asv's `existing` environment),
this measures history, asv's model: the suite is fixed (the project's suite directory, as it is
in the working tree) and the repository under test (asv.conf.json's `repo`: the project itself,
or any other checkout) is built at each commit of the range, in first-parent order, and
installed into a virtualenv. Where the subjects live decides what varies: subjects inside the
package under test are measured as they were at each commit (proofbench's own catalogue works
this way: its subjects are the code under test); subjects in the suite directory stay fixed
while the package under them changes.

Building that virtualenv must not take minutes, nor the network: torch alone is a large
wheel. The environment is given a read-only view of the site-packages proofbench runs from (a
directory of symlinks, without pip, setuptools and the distribution under test), in two steps:

1. `asv setup` creates the environment. asv's virtualenv plugin drops PYTHONPATH from the
   commands it runs there but sets it from ASV_PYTHONPATH, which names the view, so asv's
   `pip install` of the matrix finds every requirement already satisfied, offline: the
   packages measured are the ones on disk.
2. A `.pth` file naming the view is put in the environment's site-packages, after which
   `asv run` builds, installs and measures each commit. (ASV_PYTHONPATH cannot serve the
   benchmark processes: asv's runner script removes PYTHONPATH entries from sys.path,
   asv issue #1463.) The view comes after the environment's own site-packages, so the
   commit's wheel, the only thing installed there, is what its imports find.

The environment lives in asv's env_dir and is reused by later runs (asv recreates it only
when the Python or the matrix changes; the `.pth` is written again every run).

A commit that fails to build, or whose benchmarks crash, is recorded by asv as failed
(None) for that commit, and the range goes on. Building a commit runs the repository's own
build command: point proofbench only at repositories whose code you would run.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import sys
import sysconfig
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from proofbench import git
from proofbench.catalogue import Catalogue
from proofbench.db.commits import place
from proofbench.errors import InputError, RunError
from proofbench.machine.capture import MachineProfile
from proofbench.measure import sidecar
from proofbench.pipeline import asv_log, discovery, results_file, runner
from proofbench.pipeline.asv import Layout, Progress, building, drive, environment, read_config
from proofbench.pipeline.ingest import IngestReport, ingest_run
from proofbench.profile import Profile

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"  # the shared packages' ABI
ENVIRONMENT = f"virtualenv:{PYTHON}"
SHARED_SITE = "history-site"
SHARED_PTH = "proofbench-history-site.pth"
BUILD_FAILED = "the commit did not build or install"  # and where asv's output of the run is kept
LOG = "history.log"  # asv's output of the newest run, beside its results directory
# What the environment must not see of the site-packages proofbench runs from: the installers
# it has its own copies of, path hooks (.pth files are not read from a path entry anyway), and
# the distribution under test, which comes from the commit being measured.
_PRIVATE = r"^(pip|setuptools|pkg_resources|_distutils_hack|wheel)([-_.].*)?$|^__editable__|\.pth$|^__pycache__$"
HASHFILE = "HASHFILE:"  # asv's prefix of a range given as a file of commits
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
    log_path: Path | None = None  # where `log` is kept

    def no_benchmark_ran(self) -> tuple[str, ...]:
        """The commits (of those asked for, built) where no benchmark gave a measurement: none
        imported, say, or asv wrote no results for them."""
        ran = set()
        for path in self.results:
            try:
                parsed = results_file.read(path)
            except InputError:
                continue
            if any(p.value is not None for p in parsed.points):
                ran.add(parsed.commit)
        return tuple(c for c in self.commits if c not in ran and c not in self.failed_builds)


def repository(layout: Layout) -> Path:
    """The repository asv builds: asv.conf.json's `repo`, relative to the configuration."""
    repo = str(read_config(layout.project.asv_config).get("repo", "."))
    if "://" in repo or repo.startswith("git@"):
        raise InputError(f"{layout.project.asv_config}: repo {repo!r} is not a local checkout; clone it and pass "
                         f"--repo with its path")
    path = Path(repo)
    return path if path.is_absolute() else (layout.project.asv_config.parent / path).resolve()


def default_branch(layout: Layout, repo: Path) -> str:
    """The branch asv.conf.json tracks first, else the repository's current branch."""
    branches = read_config(layout.project.asv_config).get("branches") or []
    if not isinstance(branches, list) or not all(isinstance(b, str) for b in branches):
        raise InputError(f"{layout.project.asv_config}: branches must be a list of branch names, got {branches!r:.80}")
    return next((b for b in branches if b), None) or git.current_branch(repo) or "main"


def commits(repo: Path, branch: str, spec: str | None = None, since: str | None = None) -> tuple[str, ...]:
    """The commits of `spec` (`A..B`, a revision and its history, or as asv takes them
    `HASHFILE:PATH`, a file of revisions one a line; default: the branch), committed at or after
    `since`, oldest first, on `branch`'s first-parent history."""
    _check_since(since)
    first_parents = git.branch_history(repo, branch)  # a shallow clone would place commits wrongly
    on_branch = set(first_parents)
    if spec and spec.startswith(HASHFILE):
        listed = spec[len(HASHFILE):]
        if not listed.strip():
            raise InputError(f"{spec!r} names no file (expected {HASHFILE}PATH, a file of commits one a line)")
        named = _listed(repo, Path(listed).expanduser())
        in_order = git.first_parent(repo, branch, since) if since else first_parents
        found = tuple(c for c in in_order if c in named) + tuple(sorted(named - on_branch))
    else:
        found = tuple(git.first_parent(repo, spec or branch, since))
    if not found and (spec and spec.startswith(HASHFILE) or since and _read_as_now(repo, since)):
        raise InputError(none_in(repo, branch, spec, since))
    stray = [c for c in found if c not in on_branch]
    if stray:
        raise InputError(f"{repo}: commit {stray[0][:8]} of {spec or branch!r} is not on {branch}'s first-parent "
                         f"history (series follow one branch; pass --branch)")
    return found


def _check_since(since: str | None) -> None:
    # git reads what it cannot parse as a date without a word (2026-13-45 read as some other
    # moment, '' as no bound): a date written as one must be one
    if since is None:
        return
    if not since.strip():
        raise InputError("--since '' names no date (expected a date, YYYY-MM-DD, or git's '7 days ago')")
    if re.fullmatch(r"\d{4}-\d{1,2}-\d{1,2}", since.strip()):
        try:
            dt.date(*map(int, since.strip().split("-")))
        except ValueError as exc:
            raise InputError(f"--since {since!r} is not a date ({exc}; expected YYYY-MM-DD)") from None


def none_in(repo: Path, branch: str, spec: str | None, since: str | None) -> str:
    """Why `commits` found none: '<repo>: no commits in 'main' since '7 days ago' (git reads it
    as ...)'. A range or a date with nothing in it is no error (a quiet week of a nightly job);
    a hash file that names none, or a date git could not read (it reads such text as now), is."""
    return f"{repo}: no commits in {spec or branch!r}" + (_since_read(repo, since) if since else "")


def _read_as_now(repo: Path, since: str) -> bool:
    # git reads text it cannot parse as a date as now, and then nothing is ever since it
    when = git.date_read(repo, since)
    return when is None or when >= dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)


def _since_read(repo: Path, since: str) -> str:
    # ' since ...', with the moment git read it as: git reads text it cannot parse as now
    when = git.date_read(repo, since)
    return f" since {since!r}" + (f" (git reads it as {when:%Y-%m-%d %H:%M} UTC; give a date, YYYY-MM-DD, or "
                                  f"git's '7 days ago')" if when else "")


def _listed(repo: Path, path: Path) -> set[str]:
    """The full hashes of the commits a hash file names (blank lines and `#` comments skipped)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the list of commits ({exc.__class__.__name__}: {exc})") from None
    named = set()
    for number, line in enumerate(lines, 1):
        rev = line.split("#", 1)[0].strip()
        if not rev:
            continue
        full = git.rev_parse(repo, rev)
        if full is None:
            raise InputError(f"{path}, line {number}: {rev!r} names no commit of {repo} (expected a revision a line)")
        named.add(full)
    return named


def _project_site() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def distribution_name(repo: Path) -> str | None:
    """The name of the distribution `repo` builds (pyproject.toml's [project] name), if it says."""
    try:
        data = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = data.get("project", {}).get("name") if isinstance(data.get("project"), dict) else None
    return name if isinstance(name, str) and name else None


def shared_site(target: Path, under_test: str | None, site: Path | None = None) -> Path:
    """(Re)make `target` as symlinks to the site-packages proofbench runs from, leaving out the
    installers, path hooks and the distribution `under_test`."""
    site = site or _project_site()
    private = _PRIVATE
    if under_test:
        name = "[-_.]".join(re.escape(part) for part in re.split(r"[-_.]+", under_test.lower()))
        private += rf"|^({name})([-_.].*)?$"
    hidden = re.compile(private, re.IGNORECASE)
    target.mkdir(parents=True, exist_ok=True)
    wanted = {entry.name: entry for entry in site.iterdir() if not hidden.search(entry.name)}
    for link in target.iterdir():
        if link.name not in wanted or not link.is_symlink() or Path(os.readlink(link)) != wanted[link.name]:
            link.unlink()
    for name, entry in wanted.items():
        if not (target / name).is_symlink():
            (target / name).symlink_to(entry)
    return target


def write_config(layout: Layout, repo: Path, branch: str) -> Path:
    """asv's configuration for a history run, written into the work directory: the project's own
    asv.conf.json (its matrix, build and install commands) with the repository, the branch, this
    Python and the layout's directories, as absolute paths."""
    conf = read_config(layout.config)
    conf.update(repo=str(repo), branches=[branch], pythons=[PYTHON], benchmark_dir=str(layout.benchmarks),
                env_dir=str(layout.env_dir), results_dir=str(layout.results),
                html_dir=str(layout.workdir / "html"))
    path = layout.workdir / "history.asv.conf.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(conf, indent=2))
    return path


def history_environment(layout: Layout, profile: Profile) -> dict[str, str]:
    """The environment of the asv process: the runner's, without the project on PYTHONPATH
    (each commit brings its own code)."""
    env = environment(layout, profile)
    env.pop("PYTHONPATH", None)
    env.pop("ASV_PYTHONPATH", None)  # it would put the working tree before the commit's
    env.pop(sidecar.COMMIT_VAR, None)  # asv tells each benchmark its commit (ASV_COMMIT)
    # asv looks for `python3.11` on PATH: this interpreter's, so the ABI matches the shared packages.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def setup_command(config: Path) -> list[str]:
    """The `asv setup` command line that creates (or checks) the history environment."""
    return [sys.executable, "-m", "asv", "setup", f"--config={config}", f"--environment={ENVIRONMENT}"]


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


def asv_command(config: Path, machine: str, hashfile: Path, bench: str | None, rerun: bool,
                keep_discovery: bool = False) -> list[str]:
    """The `asv run` command line over the commits listed in `hashfile` (through
    `proofbench.pipeline.discovery` where the discovery is kept between runs)."""
    # Values go in the option's own argument (--bench=...), so none can be read as an option.
    entry = "proofbench.pipeline.discovery" if keep_discovery else "asv"
    cmd = [sys.executable, "-m", entry, "run", f"--config={config}", f"--environment={ENVIRONMENT}",
           "--record-samples", "--launch-method=forkserver", f"--machine={machine}", "--show-stderr"]
    if not rerun:
        cmd.append("--skip-existing")
    if bench:
        cmd.append(f"--bench={bench}")
    return cmd + [f"{HASHFILE}{hashfile}"]


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


def diagnose(log: str, hashes: tuple[str, ...], results: tuple[Path, ...], path: Path,
             kept: Path | None = None) -> int:
    """Append to the sidecar why benchmarks failed, as `proofbench run` does: what asv printed
    under each commit, and for a commit that did not build, that it did not (and where asv's
    output is `kept`). Returns the count."""
    records = [r for commit, text in sections(log, hashes) for r in asv_log.from_asv_log(text, commit)]
    broken, now = set(failed_builds(log, hashes)), dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    why = BUILD_FAILED + (f" (asv's output: {kept})" if kept else "")
    for results_path in results:
        try:
            parsed = results_file.read(results_path)
        except InputError:
            continue  # ingest refuses it, naming it
        if parsed.commit in broken:
            records += [sidecar.Record(benchmark=point.benchmark.rsplit(".", 1)[0], params=point.params,
                                       status="failed", reason=why, commit=parsed.commit, at=now)
                        for point in parsed.points]
    sidecar.append(path, records)
    return len(records)


def run(layout: Layout, hashes: tuple[str, ...], profile: Profile, machine_profile: MachineProfile, *,
        repo: Path, branch: str, bench: str | None = None, rerun: bool = False,
        on_progress: Progress | None = None, discovered: Path | None = None) -> HistoryOutcome:
    """Measure `hashes` (oldest first) of `repo` with asv in its virtualenv environment, holding
    the layout's environments (`asv.building`: RunError where another process holds them) and
    keeping asv's output beside the results (`LOG`); where `discovered` names a directory, asv's
    discovery of the suite is kept there for later runs that start at the same commit
    (`proofbench.pipeline.discovery`)."""
    with building(layout):  # its configuration, hash file and environments are this run's alone
        runner.write_machine_files(machine_profile, layout)
        config = write_config(layout, repo, branch)
        hashfile = config.with_name("history.hashes")
        hashfile.write_text("\n".join(hashes) + "\n")
        env = history_environment(layout, profile)
        under_test = repo / str(json.loads(config.read_text()).get("repo_subdir") or "")  # where asv builds it
        shared = shared_site(layout.workdir / SHARED_SITE, distribution_name(under_test))
        cmd = asv_command(config, machine_profile.name, hashfile, bench or profile.bench or None, rerun,
                          keep_discovery=discovered is not None)
        kept = layout.results.parent / LOG
        kept.parent.mkdir(parents=True, exist_ok=True)  # a round's folder, emptied before it, if asv made none
        with open(kept, "w", encoding="utf-8", errors="replace") as written:  # as asv goes: a killed job's too
            setup = prepare_environment(config, layout, env, shared, tee=written)
            if discovered is not None:
                env[discovery.KEPT] = str(discovered.absolute())
            log = drive(cmd, layout.project.root, env, on_progress, tee=written)
    results = tuple(path for h in hashes for path in _results_files(layout.results / machine_profile.name, h))
    if log.returncode != 0 and not results:
        raise RunError(f"asv run over the range failed (its output: {kept}):\n" + log.tail())
    diagnose(log.text, hashes, results, layout.sidecar, kept)
    return HistoryOutcome(log.returncode, hashes, machine_profile.name, layout.env_dir, results,
                          failed_builds(log.text, hashes), setup + log.text, kept)


def prepare_environment(config: Path, layout: Layout, env: dict[str, str], shared: Path,
                        tee: TextIO | None = None) -> str:
    """Create (or find) the history environment with `asv setup` and hand it the shared
    packages; returns asv's output (written to `tee` too, as it comes)."""
    setup = drive(setup_command(config), layout.project.root, {**env, "ASV_PYTHONPATH": str(shared)}, tee=tee)
    # `asv setup` exits non-zero even when it succeeds (it returns its environments): the
    # environment's info file, which asv writes last, is what says it exists.
    if not link_shared(layout.env_dir, shared):
        raise RunError(f"asv could not create the history environment ({ENVIRONMENT}) in {layout.env_dir}:\n"
                       + setup.tail())
    return setup.text


def _results_files(directory: Path, commit: str) -> list[Path]:
    # asv names a file <commit8>-<env name>, or -env-<hash> when the name is long: read it.
    out = []
    for path in sorted(directory.glob(f"{commit[:8]}-*.json")):
        if not path.is_file():
            continue  # not a file asv wrote (a FIFO would be waited on)
        try:
            env_name = str(json.loads(path.read_text()).get("env_name", ""))
        except (OSError, ValueError):
            env_name = "virtualenv-"  # unreadable: let ingest refuse it by name
        if env_name.startswith("virtualenv-"):
            out.append(path)
    return out


@dataclass(frozen=True)
class MeasuredRange:
    """What `proofbench history` did: asv's run over the range, and what went into the database."""

    outcome: HistoryOutcome
    ingested: IngestReport
    placed: int


def measure(engine: Engine, layout: Layout, catalogue: Catalogue, hashes: tuple[str, ...], profile: Profile,
            machine_profile: MachineProfile, *, repo: Path, branch: str, bench: str | None = None,
            rerun: bool = False, on_progress: Progress | None = None) -> MeasuredRange:
    """Measure `hashes` of `repo`, ingest them, and place every known commit on `branch`'s history."""
    runner.check_selection(bench or profile.bench, catalogue.registry, profile)
    outcome = run(layout, hashes, profile, machine_profile, repo=repo, branch=branch, bench=bench, rerun=rerun,
                  on_progress=on_progress)
    ingested = ingest_run(engine, layout, list(outcome.results), catalogue.claims, repo=repo)
    with Session(engine) as session, session.begin():
        placed = place(session, git.branch_history(repo, branch), branch)
    return MeasuredRange(outcome, ingested, placed)

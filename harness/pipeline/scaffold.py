"""Sets a repository up for proofbench (`proofbench init`): the project file, asv's configuration when
there is none, and a subjects module to start from. It asks nothing and never overwrites a file; the
directories it makes (its database and site, and asv's environments and results where it wrote asv's
configuration) are added to `.gitignore` where it does not name them yet.

An existing asv.conf.json and suite are used as they are: the subjects module goes into the suite
directory asv already reads (`benchmark_dir`), where asv's benchmark processes import it too.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from proofbench import git
from proofbench.errors import InputError
from proofbench.pipeline.asv import read_config
from proofbench.pipeline.history import distribution_name
from proofbench.project import FILE, PYPROJECT

NEW_SUITE = "bench"  # the suite directory of a repository that has no asv.conf.json yet

_ASV_CONF = """{{
    // asv's configuration, written by `proofbench init`: edit it as any asv configuration.
    "version": 1,
    "project": "{name}",
    "project_url": "",
    "repo": ".",
    "branches": ["{branch}"],
    "dvcs": "git",
    "environment_type": "virtualenv",
    // `proofbench history` builds the repository at each commit offline and installs it into a
    // virtualenv that sees the packages proofbench runs with (torch is not downloaded again).
    "build_command": ["python -m pip wheel --no-deps --no-build-isolation --no-index -w {{build_cache_dir}} {{build_dir}}"],
    "install_command": ["in-dir={{env_dir}} python -m pip install --no-deps --no-build-isolation --force-reinstall {{wheel_file}}"],
    "matrix": {{"req": {{"setuptools": [""], "wheel": [""]}}}},
    "benchmark_dir": "{suite}",
    "env_dir": ".asv/env",
    "results_dir": ".asv/results",
    "html_dir": ".asv/html",
    "launch_method": "forkserver"
}}
"""

_PROJECT = """# proofbench's project file (written by `proofbench init`): see `proofbench --help` and the README.
# Subjects modules are imported from this directory: put them in the suite directory asv reads
# ({suite}/), so its benchmark processes import them as well.
subjects = ["{module}"]
# claims = "{suite}/claims.toml"        # what your documents promise, judged by the report
# database = "sqlite:///.proofbench/proofbench.sqlite"
# site = ".proofbench/site"

[check]
min_step = 0.03        # steps smaller than 3% are not regressions
significance = 0.001
"""

_SUBJECTS = '''"""The subjects of this project: each optimization with its baseline, its variants and an equivalence check.

Declare them here and run `proofbench run`. An example (remove the quotes around it to use it):

from proofbench import Equivalence, Metric, Size, Subject, Variant, Workload, register


def _prepare(ctx):                            # ctx.size, ctx.device, ctx.cache_dir, ctx.threads, ctx.variant
    numbers = list(range(ctx.size["n"]))
    return Workload(inputs=numbers, items=len(numbers))


def _baseline(numbers):                       # one call of the work; returns what is compared
    return sum(x * x for x in numbers)


def _optimized(numbers):
    import numpy as np
    values = np.asarray(numbers, dtype=np.int64)
    return int(values @ values)


register(Subject(
    area="math", name="sum_of_squares", item="number",
    description="sum of squares: a Python generator vs one numpy dot product",
    prepare=_prepare,
    variants=(Variant("baseline", _baseline), Variant("optimized", _optimized)),
    equivalence=Equivalence(Metric("difference", "units", False), 0, compare=lambda a, b: abs(a - b)),
    sizes=(Size.of("tiny", n=100), Size.of("small", n=100_000), Size.of("large", n=10_000_000)),
))
"""
'''


@dataclass(frozen=True)
class Written:
    """What `init` did with one file: wrote it, or found it there and left it; `added`, the lines
    it added to a file that was there (.gitignore)."""

    path: Path
    written: bool
    added: tuple[str, ...] = ()


def init(root: Path) -> list[Written]:
    """Set `root` (a git checkout) up for proofbench; returns each file with what was done to it."""
    root = root.resolve()
    git.head(root)  # asv stores results per commit: a checkout with a commit is needed
    config = root / "asv.conf.json"
    suite = _suite(config) if config.is_file() else NEW_SUITE
    package = Path(suite).name
    if not package.isidentifier():
        raise InputError(f"{config}: benchmark_dir {suite!r}: asv imports the suite as the package {package!r}, "
                         f"which is not a Python name")
    module = f"{package}.subjects"
    name = distribution_name(root) or root.name  # asv uninstalls the project by this name between commits
    out = [_write(config, _ASV_CONF.format(name=name, branch=git.current_branch(root) or "main", suite=suite)),
           _write(root / FILE, _PROJECT.format(suite=suite, module=module), taken=_has_table(root / PYPROJECT)),
           _write(root / suite / "__init__.py", '"""asv\'s benchmark suite: proofbench writes its modules here."""\n'),
           _write(root / suite / "subjects.py", _SUBJECTS)]
    made = [".asv/"] if out[0].written else []  # an asv configuration of the user's keeps its own places
    return [*out, _ignore(root / ".gitignore", [*made, ".proofbench/"])]


def _ignore(path: Path, entries: list[str]) -> Written:
    # `entries` added to the .gitignore at `path` where no line names them yet
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read it ({exc}); add {', '.join(entries)} to it yourself") from None
    named = {line.strip().strip("/") for line in text.splitlines()}
    missing = tuple(e for e in entries if e.strip("/") not in named)
    if not missing:
        return Written(path, False)
    path.write_text(text + ("\n" if text and not text.endswith("\n") else "") + "".join(f"{e}\n" for e in missing),
                    encoding="utf-8")
    return Written(path, not text, () if not text else missing)


def _suite(config: Path) -> str:
    value = read_config(config).get("benchmark_dir", "benchmarks")
    if not isinstance(value, str) or not value or Path(value).is_absolute() or ".." in Path(value).parts:
        raise InputError(f"{config}: benchmark_dir must be a directory inside the repository, got {value!r}")
    return value


def _has_table(pyproject: Path) -> bool:
    return pyproject.is_file() and "[tool.proofbench]" in pyproject.read_text(encoding="utf-8", errors="replace")


def _write(path: Path, text: str, taken: bool = False) -> Written:
    if taken or path.exists():
        return Written(path, False)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return Written(path, True)

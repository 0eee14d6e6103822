"""The house plan: each folder is one stage of the data flow, and imports only go down the stages.

foundation (errors, declarations, project file, statistics, git) -> measure and machine (inside
asv's benchmark process, and what machine this is) -> db -> pipeline (subjects -> asv -> rows)
-> analysis -> reports -> cli. The seed catalogue (subjects/) uses the foundation only, as any
project's subjects do; nothing imports it. Development scripts (tools/) are outside the package.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import REPO

STAGES = ("foundation", "measure", "db", "pipeline", "analysis", "reports", "cli")
PACKAGE_DIRS = {"proofbench": "harness", "proofbench.db": "db", "proofbench.reports": "reports",
                "proofbench.subjects": "subjects"}


def _stage(module: str) -> str:
    parts = module.split(".")
    if parts[:2] == ["proofbench", "subjects"]:
        return "catalogue"
    if parts[:2] in (["proofbench", "db"], ["proofbench", "reports"]):
        return parts[1]
    if len(parts) > 1 and parts[1] in ("measure", "machine"):
        return "measure"
    if len(parts) > 1 and parts[1] in ("pipeline", "analysis", "cli"):
        return parts[1]
    if len(parts) > 1 and parts[1] == "__main__":
        return "cli"
    return "foundation"


def _modules() -> dict[str, Path]:
    out = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            relative = path.relative_to(REPO / folder).with_suffix("")
            parts = [p for p in relative.parts if p != "__init__"]
            out[".".join([package, *parts])] = path
    return out


def _imports(path: Path, module: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import: resolve against this module's package
                package = module.split(".")[: -node.level if path.name != "__init__.py" else len(module.split("."))]
                base = ".".join(package + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in found if name.split(".")[0] == "proofbench"}


MODULES = _modules()


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_only_go_down_the_stages(module):
    stage = _stage(module)
    allowed = ("foundation", "catalogue") if stage == "catalogue" else STAGES[: STAGES.index(stage) + 1]
    imported = {name for name in _imports(MODULES[module], module) if name in MODULES or name.rsplit(".", 1)[0] in MODULES}
    wrong = sorted(name for name in imported if _stage(name if name in MODULES else name.rsplit(".", 1)[0]) not in allowed)
    assert not wrong, f"{module} ({stage}) imports from a later stage: {', '.join(wrong)}"


def test_nothing_imports_the_catalogue():
    users = sorted(module for module, path in MODULES.items() if _stage(module) != "catalogue"
                   and any(name.startswith("proofbench.subjects") for name in _imports(path, module)))
    assert not users, f"imported by {', '.join(users)}"


def test_no_module_is_over_about_400_lines():
    long = {str(path.relative_to(REPO)): n for path in MODULES.values()
            if (n := len(path.read_text().splitlines())) > 420}
    assert not long, long


def test_every_module_opens_with_a_docstring():
    bare = [str(path.relative_to(REPO)) for path in MODULES.values()
            if path.read_text().strip() and ast.get_docstring(ast.parse(path.read_text())) is None]
    assert not bare, bare

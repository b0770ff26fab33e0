"""Which files of Liger-Kernel make a benchmark's numbers: computed from the source at a commit.

For a kernel (the ``kernel_name`` a benchmark script writes) at a commit:

- **script**: the benchmark script that writes that kernel name (found by parsing every
  ``benchmark/scripts/benchmark_*.py`` with `ast` for a ``kernel_name`` string, an f-string's fixed
  prefix included, e.g. ``f"dyt_beta={beta}"``), else ``benchmark_<kernel>.py``; plus the shared
  benchmark utilities it imports (``utils``, ``benchmark_model_configs``: modules beside it);
- **kernel**: the ``liger_kernel`` modules the script imports (its module wrapper under
  ``transformers/`` or ``chunked_loss/``) and, transitively, every package module those import (the op
  module under ``ops/``, ``ops/utils.py``, ...), resolved to files under ``src/liger_kernel/``;
- **environment**: the benchmark workflow, the Modal image definition it runs and ``setup.py`` (which
  names the unpinned torch/triton/transformers the image installs).

Parsing imports with `ast` (never a hand-kept list) follows Liger's code as it changes; a package's
``__init__`` is not followed (it re-exports every kernel), only the modules named.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .source_history import LigerSourceHistory

SCRIPTS_DIR = "benchmark/scripts/"
PACKAGE_ROOT = "src/"
PACKAGE = "liger_kernel"
ENVIRONMENT_PATHS = (".github/workflows/benchmark.yml", "dev/modal/benchmarks.py", "setup.py")
MAX_MODULES = 400  # a closure larger than this is a sign of a parse gone wrong, not of a kernel


@dataclass(frozen=True)
class KernelPaths:
    kernel: frozenset[str]  # liger_kernel source files the benchmark imports, transitively
    script: frozenset[str]  # the benchmark script and the shared benchmark utilities it imports
    environment: frozenset[str] = frozenset(ENVIRONMENT_PATHS)
    depth: tuple[tuple[str, int], ...] = ()  # import steps from the script to each file (0: imported by it)

    def union(self, other: KernelPaths) -> KernelPaths:
        """Both ends of a boundary: a file imported at either end counts (nearest import step kept)."""
        steps = dict(other.depth)
        for path, step in self.depth:
            steps[path] = min(step, steps.get(path, step))
        return KernelPaths(self.kernel | other.kernel, self.script | other.script, self.environment | other.environment,
                           tuple(sorted(steps.items())))

    def distance(self, path: str) -> int:
        """How directly a file makes the benchmark: 0 the script itself or a module it imports, then one
        more per import step; the shared benchmark utilities count 1."""
        steps = dict(self.depth)
        if path in steps:
            return steps[path]
        return 1 if path in self.script and path.startswith(SCRIPTS_DIR) and "/benchmark_" not in path else 0


class KernelSources:
    """KernelPaths per (commit, kernel), cached; one `git cat-file --batch` per commit and import depth."""

    def __init__(self, history: LigerSourceHistory) -> None:
        self.history = history
        self._scripts: dict[str, dict[str, str]] = {}  # sha -> script path -> its text
        self._paths: dict[tuple[str, str], KernelPaths] = {}
        self._imports: dict[tuple[str, str], tuple[str, ...]] = {}  # (package, text) -> imported names
        self._kernel_names: dict[str, tuple[set[str], set[str]]] = {}

    def paths(self, sha: str, kernel: str) -> KernelPaths:
        key = (sha, kernel)
        if key not in self._paths:
            script = self.script_for(sha, kernel)
            text = self._script_texts(sha).get(script) if script else None
            imported, local_modules = _imports_of(text or "", "")
            tree = set(self.history.tree(sha))
            shared = {f"{SCRIPTS_DIR}{m}.py" for m in local_modules if f"{SCRIPTS_DIR}{m}.py" in tree}
            depth = self._closure(sha, imported, tree)
            found = set(depth)
            kernel_files = {f for f in found if f.startswith(PACKAGE_ROOT)}
            harness = found - kernel_files  # e.g. test/transformers/test_dyt.py, whose modules the script times
            self._paths[key] = KernelPaths(frozenset(kernel_files),
                                           frozenset(({script} if script else set()) | shared | harness),
                                           depth=tuple(sorted(depth.items())))
        return self._paths[key]

    def script_for(self, sha: str, kernel: str) -> str | None:
        """The benchmark script that writes `kernel` as its kernel_name at a commit."""
        texts = self._script_texts(sha)
        exact = f"{SCRIPTS_DIR}benchmark_{kernel}.py"
        written = {path: self._names(text) for path, text in texts.items()}
        for path, (names, _) in written.items():
            if kernel in names:
                return path
        for path, (_, prefixes) in written.items():
            if any(kernel.startswith(p) for p in prefixes):
                return path
        return exact if exact in texts else None

    def _names(self, text: str) -> tuple[set[str], set[str]]:
        """Kernel names of a script text (cached by text: most scripts are the same at most commits)."""
        if text not in self._kernel_names:
            self._kernel_names[text] = _kernel_names(text)
        return self._kernel_names[text]

    def _script_texts(self, sha: str) -> dict[str, str]:
        if sha not in self._scripts:
            names = [p for p in self.history.tree(sha)
                     if p.startswith(SCRIPTS_DIR) and p.endswith(".py") and "/benchmark_" in p and "/" not in p[len(SCRIPTS_DIR):]]
            self._scripts[sha] = {p: t for p, t in self.history.read(sha, names).items() if t is not None}
        return self._scripts[sha]

    def _closure(self, sha: str, modules: set[str], tree: set[str]) -> dict[str, int]:
        """Files of the repository's modules named (liger_kernel under src/, harness modules such as
        ``test.transformers.test_dyt`` at the top) and everything they import within the repository;
        third-party modules (torch, triton) are not in the tree and end the walk."""
        files: dict[str, int] = {}  # file -> import steps from the script
        frontier = set(modules)
        seen: set[str] = set()
        steps = 0
        while frontier and len(seen) < MAX_MODULES:
            level = []
            for module in sorted(frontier - seen):
                seen.add(module)
                path = self._module_file(sha, module, tree)
                if path is not None and path not in files:
                    files[path] = steps
                    level.append((module, path))
            steps += 1
            texts = self.history.read(sha, [p for _, p in level])
            frontier = set()
            for _, path in level:
                frontier.update(self._package_imports(sha, path, texts.get(path) or ""))
        return files

    def _package_imports(self, sha: str, path: str, text: str) -> tuple[str, ...]:
        inside = path[len(PACKAGE_ROOT):] if path.startswith(PACKAGE_ROOT) else path
        key = (inside.rpartition("/")[0].replace("/", "."), text)  # by content: a file is parsed once
        if key not in self._imports:
            found, _ = _imports_of(text, key[0])
            self._imports[key] = tuple(sorted(found))
        return self._imports[key]

    def _module_file(self, sha: str, module: str, tree: set[str], depth: int = 0) -> str | None:
        """A dotted name's module file under src/: the module itself, or for a name inside a module that
        module. A package's ``__init__`` is not a kernel's source (it re-exports every kernel): a name it
        re-exports is followed to the module it comes from."""
        parts = module.split(".")
        root = PACKAGE_ROOT if parts[0] == PACKAGE else ""  # the package under src/, harness modules (test.*) at the top
        while parts:
            base = root + "/".join(parts)
            if f"{base}.py" in tree:
                return f"{base}.py"
            init = f"{base}/__init__.py"
            if init in tree and len(parts) < len(module.split(".")) and depth < 4:
                name = module.split(".")[len(parts)]
                text = self.history.read(sha, [init])[init] or ""
                origin = _reexport_origin(text, ".".join(parts), name)
                return self._module_file(sha, origin, tree, depth + 1) if origin else None
            parts = parts[:-1]
        return None


def _reexport_origin(text: str, package: str, name: str) -> str | None:
    """The module a package's __init__ imports `name` from (``from .rms_norm import LigerRMSNorm``)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            return f"{base}.{name}" if base else None
    return None


def _imports_of(text: str, package: str) -> tuple[set[str], set[str]]:
    """(absolute dotted names imported, top-level names of `import x`/`from x import` without a package).
    `from a.b import c` yields ``a.b.c`` (c may be a module; `_module_file` falls back to ``a.b``);
    relative imports are resolved against `package`."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set(), set()
    found: set[str] = set()
    local: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add(alias.name)
                if "." not in alias.name:
                    local.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: max(0, len(package.split(".")) - (node.level - 1))] if package else []
                base = ".".join(anchor + ([base] if base else []))
            elif "." not in base:
                local.add(base)
            found.update(f"{base}.{alias.name}" if base else alias.name for alias in node.names if alias.name != "*")
            if base:
                found.add(base)
    return found, local


def _kernel_names(text: str) -> tuple[set[str], set[str]]:
    """Kernel names a script writes: string values of a ``kernel_name`` dict key or keyword (exact), and
    the fixed prefixes of f-strings there."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set(), set()
    values: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            values += [v for k, v in zip(node.keys, node.values, strict=True)
                       if isinstance(k, ast.Constant) and k.value == "kernel_name"]
        elif isinstance(node, ast.keyword) and node.arg == "kernel_name":
            values.append(node.value)
    names, prefixes = set(), set()
    for value in values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            names.add(value.value)
        elif isinstance(value, ast.JoinedStr) and value.values and isinstance(value.values[0], ast.Constant):
            prefixes.add(str(value.values[0].value))
    return names, prefixes

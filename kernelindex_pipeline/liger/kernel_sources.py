"""Which files of Liger-Kernel make a benchmark's numbers: computed from the source at a commit.

For a kernel (the ``kernel_name`` a benchmark script writes) at a commit:

- **script**: the benchmark script that writes that kernel name (found by parsing every
  ``benchmark/scripts/benchmark_*.py`` with `ast` for a ``kernel_name`` string, an f-string's fixed
  prefix included, e.g. ``f"dyt_beta={beta}"``), else ``benchmark_<kernel>.py``; plus the shared
  benchmark utilities it imports (``utils``, ``benchmark_model_configs``: modules beside it);
- **kernel**: the ``liger_kernel`` modules the script imports (its module wrapper under
  ``transformers/`` or ``chunked_loss/``) and, transitively, every package module those import (the op
  module under ``ops/``, ``ops/utils.py``, ...), resolved to files under ``src/liger_kernel/``;
- **environment**: the Modal image definition the workflow runs (the image, the GPU request, the
  command) and the requirements (``setup.py``, ``pyproject.toml``: the unpinned torch/transformers the
  image installs). The workflow file itself is not one: it runs on GitHub's runner, and what it decides
  for the GPU host (which code and which benchmark scripts) is the run's checkout (`harness.py`);
- **packages**: the third-party modules that the script, its utilities, the harness modules and the
  kernel files import (``torch``, ``transformers``): a package release can move a series only if the code
  it times imports that package.

A commit is read as a `harness.Checkout` (the run's commit, with the paths its workflow took from the
default branch at measurement time) or a plain sha.

Parsing imports with `ast` (never a hand-kept list) follows Liger's code as it changes; a package's
``__init__`` is not followed (it re-exports every kernel), only the modules named.
"""

from __future__ import annotations

import ast
import copy
import hashlib
from dataclasses import dataclass

from .harness import Checkout
from .source_history import LigerSourceHistory

SCRIPTS_DIR = "benchmark/scripts/"
PACKAGE_ROOT = "src/"
PACKAGE = "liger_kernel"
MODAL_IMAGE = "dev/modal/benchmarks.py"
REQUIREMENT_FILES = ("setup.py", "pyproject.toml")
ENVIRONMENT_PATHS = (MODAL_IMAGE, *REQUIREMENT_FILES)
MAX_MODULES = 400  # a closure larger than this is a sign of a parse gone wrong, not of a kernel


@dataclass(frozen=True)
class KernelPaths:
    kernel: frozenset[str]  # liger_kernel source files the benchmark imports, transitively
    script: frozenset[str]  # the benchmark script and the shared benchmark utilities it imports
    environment: frozenset[str] = frozenset(ENVIRONMENT_PATHS)
    depth: tuple[tuple[str, int], ...] = ()  # import steps from the script to each file (0: imported by it)
    used: tuple[tuple[str, str], ...] = ()  # per file, a digest of the parts the benchmark uses
    names: tuple[tuple[str, tuple[str, ...]], ...] = ()  # per file, the names followed ("" = the whole file)
    packages: frozenset[str] = frozenset()  # top-level third-party modules the timed code imports

    def between(self, later: KernelPaths) -> KernelPaths:
        """Both ends of a boundary: the files of either end whose used parts differ between the two (a
        commit that changes only code the benchmark does not reach cannot move it, net of the range),
        with the nearest import step of either end."""
        old, new = dict(self.used), dict(later.used)
        changed = {f for f in set(old) | set(new) if old.get(f) != new.get(f)}
        steps = dict(later.depth)
        for path, step in self.depth:
            steps[path] = min(step, steps.get(path, step))
        names = {f: set(n) for f, n in self.names}
        for f, n in later.names:
            names.setdefault(f, set()).update(n)
        return KernelPaths(
            (self.kernel | later.kernel) & changed,
            (self.script | later.script) & changed,
            self.environment | later.environment,
            tuple(sorted(steps.items())),
            names=tuple(sorted((f, tuple(sorted(n))) for f, n in names.items())),
            packages=self.packages | later.packages,
        )

    def names_in(self, path: str) -> tuple[str, ...]:
        return dict(self.names).get(path, ("",))

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
        self._imports: dict[tuple, tuple[tuple[str, ...], str]] = {}  # (package, text, name) -> (refs, source)
        self._kernel_names: dict[str, tuple[set[str], set[str]]] = {}
        self._commit_changes: dict[tuple, bool] = {}
        self._third_party: dict[str, set[str]] = {}  # file text -> top-level modules it imports

    def paths(self, sha: str | Checkout, kernel: str) -> KernelPaths:
        checkout = sha if isinstance(sha, Checkout) else Checkout(sha, sha)
        key = (checkout.key, kernel)
        if key not in self._paths:
            script = self.script_for(checkout, kernel)
            text = self._script_texts(checkout).get(script) if script else None
            imported, local_modules = _imports_of(text or "", "")
            tree = self._tree(checkout)
            shared = {f"{SCRIPTS_DIR}{m}.py" for m in local_modules if f"{SCRIPTS_DIR}{m}.py" in tree}
            depth, used, followed, external = self._closure(checkout, imported, tree)
            found = set(depth)
            kernel_files = {f for f in found if f.startswith(PACKAGE_ROOT)}
            harness = found - kernel_files  # e.g. test/transformers/test_dyt.py, whose modules the script times
            whole = self._read(checkout, sorted(shared | ({script} if script else set())))
            used.update({path: [code_of(text or "")] for path, text in whole.items()})
            followed.update({path: {""} for path in whole})
            self._paths[key] = KernelPaths(
                frozenset(kernel_files),
                frozenset(({script} if script else set()) | shared | harness),
                depth=tuple(sorted(depth.items())),
                used=tuple(sorted((f, _digest(parts)) for f, parts in used.items())),
                names=tuple(sorted((f, tuple(sorted(n))) for f, n in followed.items())),
                packages=frozenset(external | {p for t in whole.values() for p in self._packages(t or "", tree)}),
            )
        return self._paths[key]

    def _read(self, checkout: Checkout, paths: list[str]) -> dict[str, str | None]:
        """Files of a checkout, each from the commit it came from."""
        by_commit: dict[str, list[str]] = {}
        for path in paths:
            by_commit.setdefault(checkout.commit_for(path), []).append(path)
        out: dict[str, str | None] = {}
        for sha, wanted in by_commit.items():
            out.update(self.history.read(sha, wanted))
        return out

    def _tree(self, checkout: Checkout) -> set[str]:
        if not checkout.mixed:
            return set(self.history.tree(checkout.code))
        code = {p for p in self.history.tree(checkout.code) if checkout.commit_for(p) == checkout.code}
        return code | {p for p in self.history.tree(checkout.harness) if checkout.commit_for(p) == checkout.harness}

    def _packages(self, text: str, tree: set[str]) -> set[str]:
        """Top-level modules a script file imports anywhere (its functions are what is timed) that are not
        the repository's own (torch, transformers, ...)."""
        if text not in self._third_party:
            imported, _ = _imports_of(text, "")
            self._third_party[text] = {ref.split(".")[0] for ref in imported if ref}
        own = {PACKAGE, "test", "benchmark"}
        return {
            p
            for p in self._third_party[text]
            if p not in own
            and f"{SCRIPTS_DIR}{p}.py" not in tree
            and f"{p}.py" not in tree
            and f"{p}/__init__.py" not in tree
        }

    def script_for(self, sha: str | Checkout, kernel: str) -> str | None:
        """The benchmark script that writes `kernel` as its kernel_name at a commit."""
        texts = self._script_texts(sha if isinstance(sha, Checkout) else Checkout(sha, sha))
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

    def _script_texts(self, checkout: Checkout) -> dict[str, str]:
        sha = checkout.commit_for(SCRIPTS_DIR)
        if sha not in self._scripts:
            names = [
                p
                for p in self.history.tree(sha)
                if p.startswith(SCRIPTS_DIR)
                and p.endswith(".py")
                and "/benchmark_" in p
                and "/" not in p[len(SCRIPTS_DIR) :]
            ]
            self._scripts[sha] = {p: t for p, t in self.history.read(sha, names).items() if t is not None}
        return self._scripts[sha]

    def _closure(
        self, checkout: Checkout, modules: set[str], tree: set[str]
    ) -> tuple[dict[str, int], dict[str, list[str]], dict[str, set[str]], set[str]]:
        """Files of the repository's code the names imported depend on (liger_kernel under src/, harness
        modules such as ``test.transformers.test_dyt`` at the top), with the import steps to reach each.

        Followed by name, not by module: ``from liger_kernel.chunked_loss.functional import
        liger_fused_linear_kto`` follows what that one name is built from (``LigerFusedLinearKTOFunction``
        of ``kto_loss``), not every loss ``functional`` imports; a package ``__init__`` is passed through
        (the module a name comes from counts, not the package re-exporting it). A name that is not found
        (built dynamically) falls back to every import of its module. Third-party modules (torch, triton)
        are not in the tree and end the walk: they are returned, as top-level module names, with the rest."""
        files: dict[str, int] = {}  # file -> import steps from the script
        used: dict[str, list[str]] = {}  # file -> the source of the parts followed
        followed: dict[str, set[str]] = {}  # file -> the names followed in it ("": all of it)
        frontier = set(modules)
        external: set[str] = set()  # third-party modules the names followed depend on
        seen: set[tuple[str, str | None]] = set()
        steps = 0
        while frontier and len(seen) < MAX_MODULES:
            level = []
            for ref in sorted(frontier):
                found = self._module_file(ref, tree)
                if found is None:
                    external.add(ref.split(".")[0])
                if found is None or found in seen:
                    continue
                seen.add(found)
                if not found[0].endswith("/__init__.py"):
                    files.setdefault(found[0], steps)
                level.append(found)
            texts = self._read(checkout, sorted({path for path, _ in level}))
            frontier = set()
            for path, name in level:
                refs, part = self._dependencies(path, texts.get(path) or "", name)
                frontier.update(refs)
                if not path.endswith("/__init__.py"):
                    used.setdefault(path, []).append(part)
                    followed.setdefault(path, set()).add(name or "")
            steps += 1
        return files, used, followed, external - {PACKAGE}

    def commit_changes_code(self, sha: str, path: str, names: tuple[str, ...]) -> bool:
        """Whether a commit changes what the benchmark uses of a file (the names followed, "" the whole
        file), comparing the file at the commit and at its first parent: a commit that only reformats,
        comments or documents it, or changes a function the benchmark never calls, changes nothing."""
        key = (sha, path, names)
        if key not in self._commit_changes:
            texts = [self.history.read(ref, [path])[path] for ref in (f"{sha}^", sha)]
            if None in texts:
                changed = True  # added, removed, or over the size cap: counts
            else:
                package = (
                    (path[len(PACKAGE_ROOT) :] if path.startswith(PACKAGE_ROOT) else path)
                    .rpartition("/")[0]
                    .replace("/", ".")
                )
                changed = any(
                    self._code_used(texts[0], package, n) != self._code_used(texts[1], package, n) for n in names
                )
            self._commit_changes[key] = changed
        return self._commit_changes[key]

    def _code_used(self, text: str, package: str, name: str) -> str:
        if not name:
            return code_of(text)
        found = _name_dependencies(text, package, name)
        return found[1] if found is not None else code_of(text)

    def _dependencies(self, path: str, text: str, name: str | None) -> tuple[tuple[str, ...], str]:
        """What a module (name None) or one name of it imports, as dotted references, and the source of
        what was followed (the name's definitions, or the whole module); cached by content."""
        inside = path[len(PACKAGE_ROOT) :] if path.startswith(PACKAGE_ROOT) else path
        package = inside.rpartition("/")[0].replace("/", ".")
        key = (package, text, name)
        if key not in self._imports:
            found = _name_dependencies(text, package, name) if name else None
            if found is None:
                refs, part = _imports_of(text, package)[0], code_of(text)
            else:
                refs, part = found
            self._imports[key] = (tuple(sorted(refs)), part)
        return self._imports[key]

    @staticmethod
    def _module_file(ref: str, tree: set[str]) -> tuple[str, str | None] | None:
        """(file, name) of a dotted reference: the longest prefix that is a module or a package, and the
        name after it (None: the module itself)."""
        parts = ref.split(".")
        root = (
            PACKAGE_ROOT if parts[0] == PACKAGE else ""
        )  # the package under src/, harness modules (test.*) at the top
        for cut in range(len(parts), 0, -1):
            base = root + "/".join(parts[:cut])
            name = parts[cut] if cut < len(parts) else None
            if f"{base}.py" in tree:
                return f"{base}.py", name
            if f"{base}/__init__.py" in tree:
                return f"{base}/__init__.py", name
        return None


def _top_level(tree: ast.Module) -> list[ast.stmt]:
    """Module-level statements, those inside top-level if/try blocks included (optional imports)."""
    out: list[ast.stmt] = []
    stack = list(tree.body)
    while stack:
        stmt = stack.pop(0)
        if isinstance(stmt, (ast.If, ast.Try)):
            stack[:0] = [
                *stmt.body,
                *stmt.orelse,
                *[s for h in getattr(stmt, "handlers", []) for s in h.body],
                *getattr(stmt, "finalbody", []),
            ]
        else:
            out.append(stmt)
    return out


def _name_dependencies(text: str, package: str, name: str) -> tuple[set[str], str] | None:
    """The dotted references one top-level name of a module depends on: the imports its definition (and
    the module's own definitions it uses, transitively) refers to, and the source of those definitions.
    None: the name is not defined there."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    definitions: dict[str, list[ast.stmt]] = {}
    imported: dict[str, str] = {}
    for stmt in _top_level(tree):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            definitions.setdefault(stmt.name, []).append(stmt)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for node in (n for target in targets for n in ast.walk(target)):
                if isinstance(node, ast.Name):
                    definitions.setdefault(node.id, []).append(stmt)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                imported[alias.asname or alias.name.split(".")[0]] = alias.name
        elif isinstance(stmt, ast.ImportFrom):
            base = _absolute(stmt, package)
            for alias in stmt.names:
                if alias.name != "*":
                    imported[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
    if name not in definitions and name not in imported:
        return None
    refs: set[str] = set()
    seen: set[str] = set()
    followed: dict[int, ast.stmt] = {}
    stack = [name]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if current in imported:
            refs.add(imported[current])
            continue
        for stmt in definitions.get(current, []):
            followed[id(stmt)] = stmt
            stack += [n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id != current]
    return refs, "\n".join(code_of(stmt) for stmt in sorted(followed.values(), key=lambda s: s.lineno))


def code_of(source: str | ast.AST) -> str:
    """What a piece of Python does, as text to compare: its syntax tree without positions, comments,
    formatting or docstrings (a commit that only reformats or documents a function changes no timing).
    Text that does not parse is compared as it is."""
    if isinstance(source, str):
        try:
            tree: ast.AST = ast.parse(source)
        except (SyntaxError, ValueError):
            return source
    else:
        tree = copy.deepcopy(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def _digest(parts: list[str]) -> str:
    return hashlib.sha256("\x00".join(sorted(parts)).encode()).hexdigest()


def _absolute(node: ast.ImportFrom, package: str) -> str:
    """The absolute module of a (possibly relative) `from ... import`."""
    base = node.module or ""
    if node.level:
        anchor = package.split(".")[: max(0, len(package.split(".")) - (node.level - 1))] if package else []
        base = ".".join(anchor + ([base] if base else []))
    return base


def _imports_of(text: str, package: str) -> tuple[set[str], set[str]]:
    """(absolute dotted names imported, top-level names of `import x`/`from x import` without a package).
    `from a.b import c` yields ``a.b.c`` (c may be a module or a name of ``a.b``: `_module_file` tells);
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
            base = _absolute(node, package)
            if not node.level and "." not in base:
                local.add(base)
            found.update(f"{base}.{alias.name}" if base else alias.name for alias in node.names if alias.name != "*")
            if base and any(alias.name == "*" for alias in node.names):
                found.add(base)  # everything of it
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
            values += [
                v
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and k.value == "kernel_name"
            ]
        elif isinstance(node, ast.keyword) and node.arg == "kernel_name":
            values.append(node.value)
    names, prefixes = set(), set()
    for value in values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            names.add(value.value)
        elif isinstance(value, ast.JoinedStr) and value.values and isinstance(value.values[0], ast.Constant):
            prefixes.add(str(value.values[0].value))
    return names, prefixes

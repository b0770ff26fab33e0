"""Liger-Kernel's source history, read from a local clone with the `git` command.

Attribution asks a clone three things: which commit a run's code reference names (a short sha from a CI
file, a release tag such as ``v0.6.3``), which commits lie between two runs' commits (with their files),
and the text of a few source files at a commit (to compute what a kernel imports). `git` answers all of
them through its porcelain/plumbing commands (``rev-parse``, ``log``, ``cat-file --batch``); objects are
never parsed by hand. Every call is bounded (a timeout, an output cap) and cached, so attribution costs a
few git calls per boundary, never per series.

Production keeps a blob-less clone (``git clone --filter=blob:none --bare
https://github.com/linkedin/Liger-Kernel``) and refreshes it with ``git fetch``; blobs the import
analysis reads are fetched lazily by git itself on first use.

Hostile input: a missing directory, a directory that is not a git repository, a shallow clone (commit
ranges would stop silently at its boundary) and a commit the clone lacks each give a
`SourceHistoryError` / a note naming the input and the fix; the caller goes on without git (cause
``unknown``).
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

GIT_TIMEOUT_S = 60.0  # one git call; a refresh of a big clone is the operator's job, not ours
MAX_OUTPUT_BYTES = 64 * 1024 * 1024  # a log of the whole history with file names is ~5 MB
MAX_FILE_BYTES = 2 * 1024 * 1024  # a Python source file we parse for imports
MAX_COMMITS = 5000  # commits listed between two runs (Liger's whole history is ~1,000)
COMMIT_URL = "https://github.com/linkedin/Liger-Kernel/commit/{sha}"
_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")  # a sha, a tag or a branch; never an option


class SourceHistoryError(ValueError):
    """The clone cannot be used (names the directory and what to do)."""


@dataclass(frozen=True)
class Commit:
    sha: str
    date: str  # committer date, ISO 8601
    subject: str
    files: tuple[str, ...]

    @property
    def url(self) -> str:
        return COMMIT_URL.format(sha=self.sha)

    def to_dict(self, files: tuple[str, ...] | None = None) -> dict:
        return {
            "sha": self.sha,
            "date": self.date,
            "subject": self.subject,
            "url": self.url,
            "files": list(self.files if files is None else files),
        }


class LigerSourceHistory:
    """A local clone of Liger-Kernel (bare or not, complete history), read with `git`."""

    def __init__(self, path: str | os.PathLike[str], *, git: str = "git") -> None:
        self.path = Path(path)
        self._git = git
        if not self.path.exists():
            raise SourceHistoryError(
                f"--liger-git {self.path}: no such directory (clone it: git clone --filter=blob:none "
                "--bare https://github.com/linkedin/Liger-Kernel DIR)"
            )
        try:
            inside = self._run("rev-parse", "--git-dir")
        except SourceHistoryError:
            raise SourceHistoryError(
                f"--liger-git {self.path}: not a git repository (give a clone of "
                "https://github.com/linkedin/Liger-Kernel)"
            ) from None
        if not inside.strip():
            raise SourceHistoryError(f"--liger-git {self.path}: not a git repository")
        if self._run("rev-parse", "--is-shallow-repository").strip() == "true":
            raise SourceHistoryError(
                f"--liger-git {self.path}: a shallow clone; commits between runs would be cut at its "
                "boundary (run `git fetch --unshallow` in it, or clone with --filter=blob:none)"
            )
        self._resolved: dict[str, str | None] = {}
        self._ranges: dict[tuple[str, str], list[Commit]] = {}
        self._files: dict[tuple[str, str], str | None] = {}
        self._trees: dict[str, tuple[str, ...]] = {}
        self._times: dict[str, int] = {}
        self._stats: dict[tuple, str] = {}
        self._tips: dict[tuple | str, str] = {}  # the default branch, and its tip at a time

    # -------------------------------------------------------------------------------- plumbing

    def _run(self, *args: str, stdin: bytes | None = None) -> str:
        try:
            done = subprocess.run(
                [self._git, "-C", str(self.path), *args],
                input=stdin,
                capture_output=True,
                timeout=GIT_TIMEOUT_S,
                check=False,
                env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
            )
        except subprocess.TimeoutExpired:
            raise SourceHistoryError(
                f"--liger-git {self.path}: `git {args[0]}` took over {GIT_TIMEOUT_S:.0f} s"
            ) from None
        except OSError as exc:
            raise SourceHistoryError(f"--liger-git {self.path}: cannot run git ({exc})") from None
        if done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise SourceHistoryError(
                f"--liger-git {self.path}: `git {args[0]}` failed: {message[-1] if message else done.returncode}"
            )
        if len(done.stdout) > MAX_OUTPUT_BYTES:
            raise SourceHistoryError(f"--liger-git {self.path}: `git {args[0]}` wrote over {MAX_OUTPUT_BYTES} bytes")
        return done.stdout.decode("utf-8", "replace")

    # ------------------------------------------------------------------------------------ facts

    def resolve(self, ref: str) -> str | None:
        """The full sha of a commit named by a (short) sha or a tag; None when the clone lacks it."""
        if ref not in self._resolved:
            sha = None
            if _REF.match(ref) and ".." not in ref:
                try:
                    sha = self._run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip() or None
                except SourceHistoryError:
                    sha = None
            self._resolved[ref] = sha
        return self._resolved[ref]

    def commit_time(self, sha: str) -> int:
        """Committer time (epoch seconds) of a resolved commit: the order of code along Liger's main branch."""
        if sha not in self._times:
            self._times[sha] = int(self._run("log", "-1", "--format=%ct", sha).strip())
        return self._times[sha]

    def is_ancestor(self, older: str, newer: str) -> bool:
        try:
            self._run("merge-base", "--is-ancestor", older, newer)
            return True
        except SourceHistoryError:
            return False

    def commits_between(self, before: str, after: str) -> list[Commit]:
        """Commits in `after` that are not in `before` (``git log before..after``), newest first, with the
        files each changed. Both are resolved shas."""
        key = (before, after)
        if key not in self._ranges:
            text = self._run(
                "log",
                "--no-renames",
                "--name-only",
                f"--max-count={MAX_COMMITS}",
                "--format=%x1e%H%x1f%cI%x1f%s",
                f"{before}..{after}",
                "--",
            )
            commits = []
            for block in text.split("\x1e")[1:]:
                head, _, names = block.partition("\n")
                sha, date, subject = (head.split("\x1f") + ["", ""])[:3]
                commits.append(Commit(sha, date, subject, tuple(n for n in names.splitlines() if n)))
            self._ranges[key] = commits
        return self._ranges[key]

    def diffstat(self, before: str, after: str, paths: list[str]) -> str:
        """``git diff --stat`` of some files between two commits (the summary line and one line per file)."""
        key = (before, after, tuple(paths))
        if key not in self._stats:
            self._stats[key] = (
                self._run("diff", "--no-renames", "--stat=120", f"{before}..{after}", "--", *paths).strip()
                if paths
                else ""
            )
        return self._stats[key]

    def tree(self, sha: str) -> tuple[str, ...]:
        """Every file path at a commit."""
        if sha not in self._trees:
            self._trees[sha] = tuple(self._run("ls-tree", "-r", "--name-only", sha).splitlines())
        return self._trees[sha]

    def read(self, sha: str, paths: list[str]) -> dict[str, str | None]:
        """The text of files at a commit (None: absent, or over MAX_FILE_BYTES), one `git cat-file --batch`."""
        wanted = [p for p in dict.fromkeys(paths) if (sha, p) not in self._files]
        if wanted:
            self._batch(sha, wanted)
        return {p: self._files[(sha, p)] for p in paths}

    def _batch(self, sha: str, paths: list[str]) -> None:
        request = "".join(f"{sha}:{p}\n" for p in paths).encode()
        try:
            done = subprocess.run(
                [self._git, "-C", str(self.path), "cat-file", "--batch"],
                input=request,
                capture_output=True,
                timeout=GIT_TIMEOUT_S,
                check=False,
            )
        except (subprocess.TimeoutExpired, OSError) as exc:
            raise SourceHistoryError(f"--liger-git {self.path}: `git cat-file` failed ({exc})") from None
        out, at = done.stdout, 0
        for path in paths:
            # cat-file --batch's documented output: "<sha> <type> <size>\n<content>\n" or "<name> missing\n"
            end = out.find(b"\n", at)
            header = out[at:end].decode("utf-8", "replace").split() if end >= 0 else []
            if len(header) == 3 and header[1] == "blob" and header[2].isdigit():
                size = int(header[2])
                body = out[end + 1 : end + 1 + size]
                self._files[(sha, path)] = body.decode("utf-8", "replace") if size <= MAX_FILE_BYTES else None
                at = end + 1 + size + 1
            else:
                self._files[(sha, path)] = None
                at = end + 1 if end >= 0 else len(out)

    # ------------------------------------------------------------------- the default branch over time

    def default_branch(self) -> str | None:
        """The clone's default branch as a ref (``refs/heads/main`` in a bare clone, the remote's HEAD in a
        working clone); None when neither names one (a detached HEAD)."""
        if "default" not in self._tips:
            found = None
            for ref in ("refs/remotes/origin/HEAD", "HEAD"):
                try:
                    found = self._run("symbolic-ref", "--quiet", ref).strip() or None
                except SourceHistoryError:
                    found = None
                if found:
                    break
            self._tips["default"] = found or ""
        return self._tips["default"] or None

    def tip_at(self, ref: str, epoch: float) -> str | None:
        """The commit a branch held at a time: the newest commit of its first-parent line committed at or
        before `epoch` (Liger merges by squash, so its main branch's committer times follow the merges)."""
        key = (ref, int(epoch))
        if key not in self._tips:
            found = ""
            if _REF.match(ref) and ".." not in ref:
                try:
                    found = self._run("rev-list", "-1", "--first-parent", f"--before=@{int(epoch)}", ref, "--").strip()
                except SourceHistoryError:
                    found = ""
            self._tips[key] = found
        return self._tips[key] or None

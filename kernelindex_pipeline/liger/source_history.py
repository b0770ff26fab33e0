"""Liger-Kernel's source history, read from a local clone with the `git` command.

Attribution asks a clone three things: which commit a run's code reference names (a short sha from a CI
file, a release tag such as ``v0.6.3``), which commits lie between two runs' commits (with their files),
and the text of a few source files at a commit (to compute what a kernel imports). `git` answers all of
them through its porcelain/plumbing commands (``rev-parse``, ``log``, ``cat-file --batch``); objects are
never parsed by hand. Every call is bounded (a timeout; its output is streamed and the process stopped at
the cap) and cached, so attribution costs a few git calls per boundary, never per series.

Production keeps a blob-less clone (``git clone --filter=blob:none --bare
https://github.com/linkedin/Liger-Kernel``) and refreshes it with ``git fetch``.

**The clone is hostile input.** Its own configuration could make git run commands (a lazy fetch runs
``remote.origin.uploadpack`` or ``core.sshCommand``; ``log.showSignature`` runs ``gpg.program``; an
``ext::`` URL runs anything). Every call (`_run`, the one way this module starts git) gets a minimal
environment (no inherited ``GIT_*``, an empty ``HOME``, no system or global config) and command-line
config above the clone's (`_CONFIG`): no hooks, pager, fsmonitor, external diff, signature check or
credential helper, and no transport at all (``GIT_ALLOW_PROTOCOL`` empty), so git never fetches by
itself. The blobs a blob-less clone lacks are fetched through one path of ours (`_fetch_blobs`): ``git
fetch`` of exactly those objects from the promisor remote's URL, only over ``https://`` or ``file://``,
with ``--upload-pack=git-upload-pack`` on the command line; a clone whose remote is anything else (ssh,
ext, a plain path) gets an error naming the missing files and the fix. The operator's own
``safe.directory`` entries (system and global config) are passed on; nothing else of theirs is read.

Hostile input: a missing directory, a directory that is not a git repository, one owned by another user
(git's ``safe.directory`` refusal, with its fix), a shallow clone (commit ranges would stop silently at
its boundary) and a commit the clone lacks each give a `SourceHistoryError` / a note naming the input
and the fix; the caller goes on without git (cause ``unknown``).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import secrets
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

GIT_TIMEOUT_S = 60.0  # one git call; a refresh of a big clone is the operator's job, not ours
MAX_OUTPUT_BYTES = 64 * 1024 * 1024  # a log of the whole history with file names is ~5 MB
MAX_FILE_BYTES = 2 * 1024 * 1024  # a Python source file we parse for imports
MAX_COMMITS = 5000  # commits listed between two runs (Liger's whole history is ~1,000)
MAX_SUBJECT_CHARS = 500  # a commit subject as git writes it (longer ones end in ".."): Liger's are < 100
MAX_ERROR_BYTES = 64 * 1024  # git's stderr kept for the error message (its tail)
MAX_ARCHIVE_BYTES = 1024 * 1024 * 1024  # a commit's tree as tar, for a build (Liger's is ~40 MB)
COMMIT_URL = "https://github.com/linkedin/Liger-Kernel/commit/{sha}"
FETCH_PROTOCOLS = ("https", "file")  # the only transports a blob fetch may use (never ssh, ext, git)
_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")  # a sha, a tag or a branch; never an option
_OID = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_CHUNK = 64 * 1024

# Command-line config (GIT_CONFIG_COUNT: above the clone's own config, and inherited by every git process
# git starts itself). Each key is one the clone's config could use to run a command or to reach out.
_CONFIG = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.pager", "cat"),
    ("core.sshCommand", ""),
    ("core.askPass", ""),
    ("credential.helper", ""),  # empty: forget every helper configured before (URL-specific ones too)
    ("diff.external", ""),
    ("log.showSignature", "false"),  # would run gpg.program on a signed commit
    ("protocol.allow", "never"),  # GIT_ALLOW_PROTOCOL decides; this is the fallback
    ("remote.origin.uploadpack", "git-upload-pack"),
    ("fetch.negotiationAlgorithm", "noop"),  # a blob fetch sends no haves (as git's own lazy fetch)
)
# The environment variables of ours a git call keeps: how to find programs, and the operator's network
# settings for the https blob fetch (proxies, CA bundles). Never GIT_* (GIT_SSH_COMMAND, GIT_DIR, ...).
_KEPT_ENV = (
    "PATH",
    "TMPDIR",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)


def _git_environment(protocols: str, ceiling: str, safe: Iterable[str] = ()) -> dict[str, str]:
    """The whole environment of a git call: nothing inherited but `_KEPT_ENV`; `protocols` the transports
    allowed (``""``: none, so git cannot fetch anything by itself); never a repository above `ceiling`."""
    home = _empty_home()
    env = {k: os.environ[k] for k in _KEPT_ENV if k in os.environ}
    env.update(
        HOME=home,
        XDG_CONFIG_HOME=home,
        LC_ALL="C",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_SYSTEM=os.devnull,
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_NO_LAZY_FETCH="1",  # git >= 2.44; older ones are stopped by the empty protocol list
        GIT_ALLOW_PROTOCOL=protocols,
        GIT_NO_REPLACE_OBJECTS="1",  # refs/replace/ of the clone would rewrite its history
        GIT_LITERAL_PATHSPECS="1",  # a file name from the tree is a name, never a pattern
        GIT_OPTIONAL_LOCKS="0",
        GIT_CEILING_DIRECTORIES=ceiling,
    )
    config = [*_CONFIG, *(("safe.directory", d) for d in safe)]
    env["GIT_CONFIG_COUNT"] = str(len(config))
    for i, (key, value) in enumerate(config):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    return env


class SourceHistoryError(ValueError):
    """The clone cannot be used (names the directory and what to do)."""


class _Refused(SourceHistoryError):
    """git refuses the repository as a whole (its safe.directory check)."""


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


_HOME: str | None = None


def _empty_home() -> str:
    """An empty directory of ours for git's HOME (no ~/.gitconfig, ~/.netrc or XDG config is read)."""
    global _HOME
    if _HOME is None or not os.path.isdir(_HOME):
        _HOME = tempfile.mkdtemp(prefix="kernelindex-git-home-")
        atexit.register(shutil.rmtree, _HOME, True)
    return _HOME


def _operator_safe_directories(git: str) -> list[str]:
    """The operator's own `safe.directory` entries (system, then global config), in order, so the clone
    they trust is trusted here too although this module reads no other config of theirs. Read with their
    environment, from no repository (a clone's own safe.directory is never honoured, by git either)."""
    found: list[str] = []
    scopes = ["--global"] if os.environ.get("GIT_CONFIG_NOSYSTEM") else ["--system", "--global"]
    for scope in scopes:
        try:
            done = subprocess.run(
                [git, "config", scope, "--includes", "-z", "--get-all", "safe.directory"],
                capture_output=True,
                timeout=GIT_TIMEOUT_S,
                check=False,
                cwd=_empty_home(),
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            found += [v for v in done.stdout.decode("utf-8", "replace").split("\0")[:-1]]
    return found


LIGER_URL = "https://github.com/linkedin/Liger-Kernel"
CLONE_TIMEOUT_S = 600.0  # a blob-less clone of Liger's whole history is ~30 MB; a fetch of a night's commits, KBs


def clone_blobless(dest: str | os.PathLike[str], url: str = LIGER_URL, *, git: str = "git") -> str:
    """Make `dest` a blob-less bare clone of `url` (what attribution reads; blobs come later, only those a
    commit's files need), or, where it is one already, fetch its branches and tags. A new clone is made
    beside `dest` and renamed into place, so an interrupted one leaves nothing there. Only FETCH_PROTOCOLS;
    neither the operator's git config nor the remote's can run anything (`_git_environment`). Returns what
    it did in a few words; raises `SourceHistoryError` naming the URL (redacted) and git's reason."""
    from kernelindex_pipeline.redaction import redact_url, scheme_of

    dest = Path(dest)
    shown = redact_url(url)
    if scheme_of(url) not in FETCH_PROTOCOLS:
        raise SourceHistoryError(f"{shown}: only {' or '.join(FETCH_PROTOCOLS)} URLs are cloned")
    env = _git_environment(":".join(FETCH_PROTOCOLS), str(dest.resolve().parent))
    if dest.exists():
        LigerSourceHistory(dest, git=git)  # refuses anything but a usable clone before fetching into it
        command = [git, "--no-pager", "-C", str(dest), "fetch", "--quiet", "--prune", "--tags", "--no-auto-maintenance"]
        command += ["--upload-pack=git-upload-pack", "--filter=blob:none", "--", url, "+refs/heads/*:refs/heads/*"]
        _run_network_git(command, env, shown, "fetch")
        return f"fetched {shown} into {dest}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        command = [git, "--no-pager", "clone", "--quiet", "--bare", "--filter=blob:none", "--no-hardlinks"]
        command += ["--upload-pack=git-upload-pack", "--", url, str(partial / "clone")]
        _run_network_git(command, env, shown, "clone")
        (partial / "clone").rename(dest)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return f"cloned {shown} (blob-less) into {dest}"


def _run_network_git(command: list[str], env: dict[str, str], shown: str, what: str) -> None:
    """One git call that reaches out, in its own process group (a timeout stops what it started too);
    of what it writes only stderr's tail is kept (`_pump`)."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=_empty_home(),
        start_new_session=True,
    )
    try:
        stderr = _pump(process, b"", time.monotonic() + CLONE_TIMEOUT_S, lambda _chunk: None)
        process.wait(timeout=GIT_TIMEOUT_S)
    except (_Timeout, subprocess.TimeoutExpired):
        raise SourceHistoryError(f"{shown}: `git {what}` took over {CLONE_TIMEOUT_S:.0f} s") from None
    finally:
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except OSError:
                pass
            process.wait()
    if process.returncode != 0:
        reason = stderr.decode("utf-8", "replace").strip().splitlines()
        raise SourceHistoryError(f"{shown}: `git {what}` failed: {reason[-1] if reason else process.returncode}")


class LigerSourceHistory:
    """A local clone of Liger-Kernel (bare or not, complete history), read with `git`."""

    def __init__(self, path: str | os.PathLike[str], *, git: str = "git") -> None:
        self.path = Path(path)
        self._git = git
        self.notes: list[str] = []  # what a caller should tell (a range cut at MAX_COMMITS)
        if not self.path.exists():
            raise SourceHistoryError(
                f"--liger-git {self.path}: no such directory (clone it: git clone --filter=blob:none "
                "--bare https://github.com/linkedin/Liger-Kernel DIR)"
            )
        self._top = self.path.resolve()
        self._safe = _operator_safe_directories(git)
        try:
            inside = self._run("rev-parse", "--git-dir")
        except _Refused:
            raise
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
        self._ranges: dict[tuple, list[Commit]] = {}
        self._files: dict[tuple[str, str], str | None] = {}
        self._trees: dict[str, tuple[str, ...]] = {}
        self._entries: dict[str, dict[str, tuple[str, str]]] = {}  # commit -> path -> (type, object id)
        self._missing: dict[str, set[str]] = {}  # commit -> blobs of its tree the clone lacks
        self._times: dict[str, int] = {}
        self._stats: dict[tuple, str] = {}
        self._tips: dict[tuple | str, str] = {}  # the default branch, and its tip at a time
        self._promisor = self._promisor_remote()

    # -------------------------------------------------------------------------------- plumbing

    def _environment(self, protocols: str) -> dict[str, str]:
        """The whole environment of a git call on this clone (`_git_environment`)."""
        return _git_environment(protocols, str(self._top.parent), self._safe)

    def refs_fingerprint(self) -> str:
        """A digest of every ref and what it points to: changes when a fetch brings commits (a detection's
        attribution depends on what the clone holds)."""
        return hashlib.sha256(self._run("for-each-ref", "--format=%(objectname) %(refname)").encode()).hexdigest()

    def _run(
        self,
        *args: str,
        stdin: bytes | None = None,
        sink: Callable[[bytes], None] | None = None,
        protocols: str = "",
    ) -> str:
        """Run ``git -C DIR ARGS`` (every git call of this class comes here). Its stdout is read as it
        arrives: given to `sink` chunk by chunk (which may raise to stop git; then "" is returned), else
        kept up to MAX_OUTPUT_BYTES, where git is stopped. A failure, the timeout or the cap is a
        `SourceHistoryError` naming the command and git's reason."""
        command = args[0] if args else "git"
        kept = bytearray()

        def keep(chunk: bytes) -> None:
            kept.extend(chunk)
            if len(kept) > MAX_OUTPUT_BYTES:
                raise SourceHistoryError(
                    f"--liger-git {self.path}: `git {command}` wrote over {MAX_OUTPUT_BYTES} bytes (stopped there)"
                )

        try:
            process = subprocess.Popen(
                [self._git, "--no-pager", "-C", str(self.path), *args],
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self._environment(protocols),
                start_new_session=True,  # its own process group: a stop takes what git started along
            )
        except OSError as exc:
            raise SourceHistoryError(f"--liger-git {self.path}: cannot run git ({exc})") from None
        try:
            stderr = _pump(process, stdin or b"", time.monotonic() + GIT_TIMEOUT_S, sink or keep)
            returncode = process.wait(timeout=max(0.1, GIT_TIMEOUT_S))
        except _Timeout:
            raise SourceHistoryError(
                f"--liger-git {self.path}: `git {command}` took over {GIT_TIMEOUT_S:.0f} s"
            ) from None
        finally:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except OSError:
                    pass
                process.wait()
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
        if returncode != 0:
            raise self._failure(command, stderr.decode("utf-8", "replace"), returncode)
        return kept.decode("utf-8", "replace")

    def _failure(self, command: str, stderr: str, returncode: int) -> SourceHistoryError:
        lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
        if "detected dubious ownership" in stderr:
            owner = f"uid {self._top.stat().st_uid}" if self._top.exists() else "another user"
            found = re.search(r"safe\.directory (\S+)", stderr)
            trusted = found.group(1) if found else str(self._top)
            return _Refused(
                f"--liger-git {self.path}: git refuses a repository owned by another user ({owner}; this "
                f"process runs as uid {os.getuid()}), git's safe.directory check: run as its owner, or trust "
                f"it with `git config --global --add safe.directory {trusted}`"
            )
        found = re.search(r"could not fetch ([0-9a-f]+) from promisor remote", stderr)
        if found:
            return SourceHistoryError(
                f"--liger-git {self.path}: `git {command}` needs object {found.group(1)[:12]}, which the "
                "blob-less clone lacks (git may not fetch by itself here: the clone's config could run "
                "commands); a complete clone (without --filter) has it"
            )
        reason = next((line for line in lines if line.startswith(("fatal:", "error:"))), lines[-1] if lines else "")
        return SourceHistoryError(f"--liger-git {self.path}: `git {command}` failed: {reason or returncode}")

    def _config(self, key: str) -> str | None:
        try:
            return self._run("config", "--get", key).strip() or None
        except SourceHistoryError:
            return None  # unset

    def _promisor_remote(self) -> str | None:
        """The remote a blob-less clone gets its missing objects from (None: a complete clone)."""
        name = self._config("extensions.partialclone")
        if name:
            return name
        try:
            listed = self._run("config", "-z", "--get-regexp", r"^remote\..*\.promisor$")
        except SourceHistoryError:
            return None
        for entry in listed.split("\0"):
            key, _, value = entry.partition("\n")
            if value.strip().lower() in ("true", "yes", "on", "1"):
                return key[len("remote.") : -len(".promisor")]
        return None

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

    def commits_between(self, before: str, after: str, paths: Iterable[str] | None = None) -> list[Commit]:
        """Commits in `after` that are not in `before` (``git log before..after``), newest first, with the
        files each changed. Both are resolved shas. Over MAX_COMMITS a note says so (`notes`) and, given
        `paths` (the files that matter), the list is the commits that touch them (``git log before..after
        -- paths``), not the newest MAX_COMMITS, so the oldest culprit of a long range is still named."""
        key = (before, after)
        if key not in self._ranges:
            self._ranges[key] = self._log(f"{before}..{after}", ())
        commits = self._ranges[key]
        if len(commits) <= MAX_COMMITS:
            return commits
        span = f"{before[:12]}..{after[:12]}"
        if paths is None:
            self._note_once(
                f"--liger-git {self.path}: over {MAX_COMMITS} commits in {span}; only the newest {MAX_COMMITS} "
                "are looked at"
            )
            return commits[:MAX_COMMITS]
        wanted = tuple(sorted(set(paths)))
        narrow = (before, after, wanted)
        if narrow not in self._ranges:
            self._ranges[narrow] = self._log(f"{before}..{after}", wanted) if wanted else []
        found = self._ranges[narrow]
        cut = f"; only the newest {MAX_COMMITS} of those" if len(found) > MAX_COMMITS else ""
        self._note_once(
            f"--liger-git {self.path}: over {MAX_COMMITS} commits in {span}; looked only at those that touch "
            f"the files of the changes judged there{cut}"
        )
        return found[:MAX_COMMITS]

    def _note_once(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def _log(self, revisions: str, paths: tuple[str, ...]) -> list[Commit]:
        """``git log`` in a form no commit can forge: NUL-separated fields (a subject holds no NUL, a file
        name none either), each commit opened by a random token made for this call, which no subject or
        file name can know; at most MAX_COMMITS + 1 commits, subjects cut at MAX_SUBJECT_CHARS."""
        token = secrets.token_hex(16)
        text = self._run(
            "log",
            "-z",
            "--no-renames",
            "--full-history",  # with paths: every commit that touches them, never a simplified history
            "--name-only",
            f"--max-count={MAX_COMMITS + 1}",
            f"--format={token}%x00%H%x00%cI%x00%<({MAX_SUBJECT_CHARS},trunc)%s",
            revisions,
            "--",
            *paths,
        )
        commits: list[Commit] = []
        fields = text.split("\0")
        at = 0
        while at < len(fields):
            if fields[at] != token:
                at += 1  # the empty tail after the last NUL
                continue
            sha, date, subject = (fields[at + 1 : at + 4] + ["", "", ""])[:3]
            if not _OID.match(sha):
                raise SourceHistoryError(f"--liger-git {self.path}: `git log` wrote a commit id {sha[:50]!r}")
            at += 4
            names = []
            while at < len(fields) and fields[at] != token:
                name = fields[at].removeprefix("\n") if not names else fields[at]
                if name:
                    names.append(name)
                at += 1
            commits.append(Commit(sha, date, subject.rstrip(" "), tuple(names)))
        return commits

    def diffstat(self, before: str, after: str, paths: list[str]) -> str:
        """``git diff --stat`` of some files between two commits (the summary line and one line per file)."""
        key = (before, after, tuple(paths))
        if key not in self._stats:
            if paths and self._promisor:
                for sha in (before, after):
                    self._fetch_blobs(sha, paths)
            self._stats[key] = (
                self._run(
                    "diff", "--no-ext-diff", "--no-textconv", "--no-renames", "--stat=120", before, after, "--", *paths
                ).strip()
                if paths
                else ""
            )
        return self._stats[key]

    def tree(self, sha: str) -> tuple[str, ...]:
        """Every file path at a commit."""
        if sha not in self._trees:
            self._trees[sha] = tuple(self._tree_entries(sha))
        return self._trees[sha]

    def _tree_entries(self, sha: str) -> dict[str, tuple[str, str]]:
        """path -> (object type, object id) of every entry at a commit (``ls-tree -r -z``: a name may hold
        any byte but NUL, and is after the first tab)."""
        if sha not in self._entries:
            entries = {}
            for line in self._run("ls-tree", "-r", "-z", "--full-tree", sha).split("\0"):
                meta, tab, path = line.partition("\t")
                parts = meta.split(" ")
                if tab and len(parts) == 3:
                    entries[path] = (parts[1], parts[2])
            self._entries[sha] = entries
        return self._entries[sha]

    def read(self, sha: str, paths: list[str]) -> dict[str, str | None]:
        """The text of files at a commit (None: absent, or over MAX_FILE_BYTES), one `git cat-file --batch`
        (in a blob-less clone, after fetching the blobs it lacks through `_fetch_blobs`)."""
        wanted = [p for p in dict.fromkeys(paths) if (sha, p) not in self._files]
        for path in [p for p in wanted if "\n" in p or not p]:
            self._files[(sha, path)] = None  # cannot be asked for on cat-file's line protocol (and is no source)
            wanted.remove(path)
        if wanted:
            if self._promisor:
                self._fetch_blobs(sha, wanted)
            self._batch(sha, wanted)
        return {p: self._files[(sha, p)] for p in paths}

    def _batch(self, sha: str, paths: list[str]) -> None:
        request = "".join(f"{sha}:{p}\n" for p in paths).encode()
        reader = _BatchReader(f"--liger-git {self.path}: `git cat-file`")
        self._run("cat-file", "--batch", stdin=request, sink=reader)
        if len(reader.texts) != len(paths):
            raise SourceHistoryError(
                f"--liger-git {self.path}: `git cat-file` answered {len(reader.texts)} of {len(paths)} requests"
            )
        for path, text in zip(paths, reader.texts, strict=True):
            self._files[(sha, path)] = text

    def archive(self, sha: str, dest: Path, paths: Iterable[str] = ()) -> Path:
        """The tree of a commit, or only its `paths` that exist there (directories or files), as an
        uncompressed tar file at `dest` (``git archive``): what a build of Liger at that commit, or its
        benchmark harness, is made from. A blob-less clone first fetches the blobs of those files it lacks
        (`_fetch_blobs`, the one way objects come in); a clone that cannot fetch them is a
        `SourceHistoryError` naming the files and the fix. At most MAX_ARCHIVE_BYTES are written."""
        if not _OID.match(sha):
            raise SourceHistoryError(f"--liger-git {self.path}: an archive needs a full commit id, not {sha[:50]!r}")
        entries = self._tree_entries(sha)
        asked = [p.strip("/") for p in paths]
        present = [p for p in asked if p in entries or any(e.startswith(p + "/") for e in entries)]
        if asked and not present:
            raise SourceHistoryError(f"--liger-git {self.path}: {sha[:12]} has none of {', '.join(asked)}")
        blobs = [
            p
            for p, (kind, _) in entries.items()
            if kind == "blob" and (not present or any(p == q or p.startswith(q + "/") for q in present))
        ]
        if self._promisor:
            self._fetch_blobs(sha, blobs)
        written = 0
        with open(dest, "wb") as out:

            def write(chunk: bytes) -> None:
                nonlocal written
                written += len(chunk)
                if written > MAX_ARCHIVE_BYTES:
                    raise SourceHistoryError(
                        f"--liger-git {self.path}: the tree of {sha[:12]} is over {MAX_ARCHIVE_BYTES} bytes as tar (stopped there)"
                    )
                out.write(chunk)

            self._run("archive", "--format=tar", sha, "--", *present, sink=write)
        return dest

    # ------------------------------------------------------------------------------ blob fetch

    def _missing_blobs(self, sha: str) -> set[str]:
        """Blobs of a commit's tree the clone lacks (``rev-list --missing=print``, which never fetches)."""
        if sha not in self._missing:
            listed = self._run("rev-list", "--objects", "--no-walk", "--missing=print", "--no-object-names", sha)
            self._missing[sha] = {line[1:] for line in listed.splitlines() if line.startswith("?")}
        return self._missing[sha]

    def _fetch_blobs(self, sha: str, paths: list[str]) -> None:
        """Fetch the blobs of `paths` at a commit that a blob-less clone lacks: the one way objects come in.
        ``git fetch`` of exactly those objects from the promisor remote's URL, only over FETCH_PROTOCOLS, with
        the upload-pack program given on the command line (never the clone's ``remote.*.uploadpack``)."""
        entries = self._tree_entries(sha)
        missing = self._missing_blobs(sha)
        need = {
            p: entries[p][1] for p in paths if p in entries and entries[p][0] == "blob" and entries[p][1] in missing
        }
        if not need:
            return
        named = ", ".join(sorted(need)[:3]) + (f" and {len(need) - 3} more" if len(need) > 3 else "")
        url = self._config(f"remote.{self._promisor}.url") or ""
        fix = (
            f"point it at Liger's https URL (git -C {self.path} remote set-url {self._promisor} "
            "https://github.com/linkedin/Liger-Kernel) or clone without --filter"
        )
        if not url.startswith(tuple(f"{p}://" for p in FETCH_PROTOCOLS)):
            raise SourceHistoryError(
                f"--liger-git {self.path}: the blob-less clone lacks {named} at {sha[:12]}, and its remote "
                f"{self._promisor} ({url or 'no URL'}) is not fetched from (only {' or '.join(FETCH_PROTOCOLS)}): {fix}"
            )
        oids = sorted(set(need.values()))
        try:
            self._run(
                "fetch",
                "--no-tags",
                "--no-write-fetch-head",
                "--recurse-submodules=no",
                "--no-auto-maintenance",
                "--upload-pack=git-upload-pack",
                "--stdin",
                "--",
                url,
                stdin="".join(f"{oid}\n" for oid in oids).encode(),
                protocols=":".join(FETCH_PROTOCOLS),
            )
        except SourceHistoryError as exc:
            raise SourceHistoryError(f"{exc} (fetching {named} at {sha[:12]} from {url}; or {fix})") from None
        for cached in self._missing.values():
            cached.difference_update(oids)
        self._missing.pop(sha, None)
        still = set(oids) & self._missing_blobs(sha)
        if still:
            raise SourceHistoryError(
                f"--liger-git {self.path}: {url} did not send {len(still)} of the blobs of {named} at {sha[:12]}: {fix}"
            )

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


class _Timeout(Exception):
    pass


def _pump(process: subprocess.Popen, data: bytes, deadline: float, take: Callable[[bytes], None]) -> bytes:
    """Feed `data` to the process and read its stdout (to `take`, chunk by chunk) and stderr (its last
    MAX_ERROR_BYTES) at once, until both end or the deadline; returns stderr."""
    error = bytearray()
    with selectors.DefaultSelector() as selector:
        if process.stdin is not None:
            if data:
                os.set_blocking(process.stdin.fileno(), False)
                selector.register(process.stdin, selectors.EVENT_WRITE)
            else:
                process.stdin.close()
        selector.register(process.stdout, selectors.EVENT_READ)
        selector.register(process.stderr, selectors.EVENT_READ)
        view, sent = memoryview(data), 0
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Timeout
            for key, _ in selector.select(left):
                stream = key.fileobj
                if stream is process.stdin:
                    try:
                        sent += os.write(stream.fileno(), view[sent : sent + _CHUNK])
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:
                        sent = len(view)  # git stopped reading (it failed: its stderr says why)
                    if sent >= len(view):
                        selector.unregister(stream)
                        stream.close()
                    continue
                chunk = os.read(stream.fileno(), _CHUNK)
                if not chunk:
                    selector.unregister(stream)
                elif stream is process.stdout:
                    take(chunk)
                else:
                    error += chunk
                    del error[:-MAX_ERROR_BYTES]
    return bytes(error)


class _BatchReader:
    """`git cat-file --batch` output, parsed as it arrives: per request a header ("<oid> <type> <size>",
    or "<request> missing"), then that many bytes and a newline. A blob over MAX_FILE_BYTES (or anything
    that is not a blob) is counted through, never held; `texts` are in request order (None: absent, not a
    blob or too big). The texts kept are at most MAX_OUTPUT_BYTES in all."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.texts: list[str | None] = []
        self._header = bytearray()
        self._body: bytearray | None = None
        self._left = 0  # body bytes (and its newline) still to come
        self._kept = 0

    def __call__(self, chunk: bytes) -> None:
        at = 0
        while at < len(chunk):
            if self._left:
                take = min(self._left, len(chunk) - at)
                if self._body is not None:
                    self._body += chunk[at : at + take]
                self._left -= take
                at += take
                if not self._left:
                    body, self._body = self._body, None
                    if body is not None:
                        self.texts.append(bytes(body[:-1]).decode("utf-8", "replace"))
                continue
            end = chunk.find(b"\n", at)
            if end < 0:
                self._header += chunk[at:]
                if len(self._header) > 64 * 1024:
                    raise SourceHistoryError(f"{self.name} wrote a header line over 64 KiB")
                return
            self._header += chunk[at:end]
            at = end + 1
            self._start(bytes(self._header))
            self._header.clear()

    def _start(self, header: bytes) -> None:
        parts = header.split(b" ")
        if len(parts) == 3 and _OID.match(parts[0].decode("ascii", "replace")) and parts[2].isdigit():
            size = int(parts[2])
            if parts[1] == b"blob" and size <= MAX_FILE_BYTES:
                self._kept += size
                if self._kept > MAX_OUTPUT_BYTES:
                    raise SourceHistoryError(f"{self.name}: files over {MAX_OUTPUT_BYTES} bytes in all")
                self._body = bytearray()
            else:
                self.texts.append(None)  # counted through: never held
            self._left = size + 1
        else:
            self.texts.append(None)  # "<request> missing" / "ambiguous"

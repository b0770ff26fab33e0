"""What every command group shares: its two error kinds and the shape of a command's entry."""

from __future__ import annotations

import argparse
from collections.abc import Callable


class CommandError(Exception):
    """A failure the user can fix; printed as one line, exit code 1."""


class UsageError(Exception):
    """Wrong arguments: exit code 2."""


# name -> (help text, add_arguments, run); each command group's module has a COMMANDS dict of these.
Command = tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]

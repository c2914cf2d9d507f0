"""Progress messages of the launcher: one line per step on stderr, a spinner while Maven downloads.

Messages go to a :class:`rich.console.Console` on stderr (created on first use) or the one the caller
passes (the CLI's); ``quiet=True`` silences them. Nothing here touches the server.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = ["Progress"]


class Progress:
    """Where the launcher reports what it is doing (``quiet`` drops every message)."""

    def __init__(self, console: Any = None, *, quiet: bool = False):
        self.console = console
        self.quiet = quiet

    def say(self, message: str) -> None:
        """Print ``message`` as is (no markup highlighting)."""
        if self.quiet:
            return
        if self.console is None:
            from rich.console import Console

            self.console = Console(stderr=True, soft_wrap=True)  # one message, one line (never cut at 80 columns)
        self.console.print(message, highlight=False)

    @contextlib.contextmanager
    def spinner(self, message: str) -> Iterator[None]:
        """Show ``message`` with a spinner while the block runs, on a terminal only."""
        if not self.quiet and self.console is not None and self.console.is_terminal:
            with self.console.status(message):
                yield
        else:
            yield

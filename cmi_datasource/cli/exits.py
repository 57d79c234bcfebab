"""Exit codes a script can rely on, and the errors that carry them.

0 success; 1 the capture is damaged or cannot be read as asked (``CmiFormatError`` and its
subclasses; an input file the system refuses to read; ``ls`` listing an attachment with a problem
or a damaged stretch; ``extract`` leaving out a damaged attachment in FAILFAST mode); 2 usage
(click's usage errors, and ``CmiOptionError``: an unknown data set, path or option, a bad option
value, a data set to choose); 3 an output problem (the destination of ``extract`` or ``convert``, or
``spool``'s folder, cannot be written); 4 ``spool``'s MQTT broker cannot be reached or refuses the
connection or the subscription. Anything else is a bug and keeps its traceback.
"""
from __future__ import annotations

import contextlib
from typing import IO, Iterator, Optional

import click

from ..errors import CmiError, CmiOptionError

DAMAGED, USAGE, OUTPUT, BROKER = 1, 2, 3, 4

EXIT_CODES_HELP = """\b
Exit codes:
  0  success
  1  the capture is damaged or cannot be read as asked (CmiFormatError);
     ls: an attachment has a problem or a stretch of a file is damaged;
     extract: an attachment was left out because it is incomplete or damaged
  2  usage: a bad argument, an unknown data set, path or option (CmiOptionError),
     or several data sets to choose from
  3  output: the destination of extract or convert cannot be written,
     or the spool folder of spool
  4  spool: the MQTT broker cannot be reached or refuses the connection
     or the subscription"""


class Failure(click.ClickException):
    """A failure shown as its text alone on stderr (no traceback), with its exit code."""

    def __init__(self, text: str, exit_code: int):
        super().__init__(text)
        self.exit_code = exit_code  # type: ignore[misc]  # click types it a ClassVar; ours differs per failure

    def show(self, file: Optional[IO] = None) -> None:
        click.echo(self.format_message(), file=file, err=file is None)


def failure_of(error: BaseException) -> Failure:
    """The failure a CmiError (or an input file the system refuses) ends the command with: the
    error's class, then its own text (the problem; ``what to do``; one line per known place)."""
    if isinstance(error, CmiOptionError):
        return Failure(f"{type(error).__name__}: {error}", USAGE)
    if isinstance(error, CmiError):
        return Failure(f"{type(error).__name__}: {error}", DAMAGED)
    if isinstance(error, OSError):
        return Failure(f"cannot read the capture: {error}", DAMAGED)
    raise TypeError(f"no exit code for {type(error).__name__}")


@contextlib.contextmanager
def writing(what: str) -> Iterator[None]:
    """Within the block, the system refusing a write ends the command with exit code 3."""
    try:
        yield
    except OSError as e:
        raise Failure(f"cannot write {what}: {e.strerror or e}", OUTPUT) from e


class CmiGroup(click.Group):
    """The command group: a CmiError or an OSError leaving a command becomes its failure."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (CmiError, OSError) as e:
            raise failure_of(e) from None

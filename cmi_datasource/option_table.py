"""What an option is: one entry of the options tables (the core's in ``engine/options.py``, each
transport's in its ``Transport.options``), and the value parsers entries share.

An entry is everything said about one option: its name as documented, which side takes it
(``spark.read`` or ``df.write``), how its text becomes a value (and which texts are refused, with
a message naming the option), its default, its documentation and the transport that owns it.
The tables parse and validate what Spark hands over, and generate ``docs/options.md`` and the
options part of ``CmiDataSource``'s docstring: nothing else lists options."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

from .errors import CmiOptionError, not_one_of

READ, WRITE = "read", "write"

# (the text given, the option's documented name) -> its value; a CmiOptionError naming the
# option when the text is not one.
Parse = Callable[[str, str], Any]


@dataclass(frozen=True)
class Option:
    name: str  # as documented (camelCase; "<transport>.<name>" for a transport's); matched without case
    side: str  # READ or WRITE
    parse: Parse
    doc: str  # one paragraph, Markdown
    default: Any = None  # the value when not given; a callable gives it then (a property of the machine)
    shown_default: Optional[str] = None  # the default as the docs say it, when not the value itself
    transport: Optional[str] = None  # the transport that owns it; None: the core's
    # The ReadOptions/SaveOptions field that holds its value as parsed; None: the value goes
    # into a field made of several options (charsets, codec), or, for a transport's, to the
    # transport as the text given (transport_options).
    field: Optional[str] = None
    # A read option only a stream read takes (``spark.readStream``): a batch read refuses it.
    stream_only: bool = False

    @property
    def key(self) -> str:
        """Its name as Spark hands it over: lower-cased."""
        return self.name.lower()

    def value(self, given: Mapping[str, Any]) -> Any:
        """Its value among ``given`` options (keys lower-cased): parsed, or the default."""
        raw = given.get(self.key)
        if raw is None:
            return self.default() if callable(self.default) else self.default
        return self.parse(str(raw), self.name)

    def default_text(self) -> str:
        """The default as the documentation shows it."""
        if self.shown_default is not None:
            return self.shown_default
        if self.default is None:
            return "-"
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        return str(self.default) if self.default != "" else "empty"


def named(options: Sequence[Option], key: str) -> Optional[Option]:
    """The entry of ``options`` called ``key`` (without regard to case)."""
    return next((o for o in options if o.key == key.lower()), None)


# -- the parsers entries share --------------------------------------------------------------------

def text(raw: str, name: str) -> str:
    """Any text, as given."""
    return raw


def boolean(raw: str, name: str) -> bool:
    value = raw.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise CmiOptionError(f"option {name} must be true or false, not {raw!r}")


def whole_number(low: int = 1, high: Optional[int] = None, why_high: str = "") -> Parse:
    """A whole number from ``low`` up to ``high`` (``why_high``: what the error says above it)."""
    def parse(raw: str, name: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            raise CmiOptionError(f"option {name} must be a whole number, not {raw!r}") from None
        if value < low:
            raise CmiOptionError(f"option {name} must be at least {low}, not {value}")
        if high is not None and value > high:
            raise CmiOptionError(f"option {name} {why_high or f'must be at most {high}'} ({value})")
        return value
    return parse


def seconds(raw: str, name: str) -> float:
    """A number of seconds above 0."""
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise CmiOptionError(f"option {name} must be a number of seconds above 0, not {raw!r}")
    return value


def one_of(*choices: str) -> Parse:
    """One of ``choices`` (lower-case), given in any case."""
    def parse(raw: str, name: str) -> str:
        value = raw.strip().lower()
        if value not in choices:
            raise not_one_of(name, raw, choices)
        return value
    return parse


def nonblank(raw: str, name: str) -> str:
    value = raw.strip()
    if not value:
        raise CmiOptionError(f"option {name} must not be empty")
    return value

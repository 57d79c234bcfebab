"""Reader options: parsed once, validated with messages that name the option."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping, Optional, Tuple

from ..charsets import CCSID_CODECS, CharsetPolicy
from ..errors import CmiOptionError
from ..payload.sas_dataset import DEFAULT_BATCH_ROWS

VIEWS = ("dataset", "attachments", "variables", "files", "messages")


def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    raw = options.get(key)
    if raw is None:
        return default
    value = str(raw).strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise CmiOptionError(f"option {key} must be true or false, not {raw!r}")


def _int(options: Mapping[str, str], key: str, default: Optional[int], low: int = 1) -> Optional[int]:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise CmiOptionError(f"option {key} must be a whole number, not {raw!r}") from None
    if value < low:
        raise CmiOptionError(f"option {key} must be at least {low}, not {value}")
    return value


def _ccsid(options: Mapping[str, str], key: str) -> Optional[int]:
    value = _int(options, key, None)
    if value is not None and value not in CCSID_CODECS:
        raise CmiOptionError(f"option {key}: CCSID {value} is not supported; supported: {sorted(CCSID_CODECS)}")
    return value


@dataclass(frozen=True)
class ReadOptions:
    paths: Tuple[str, ...]
    view: str = "dataset"
    dataset: Optional[str] = None
    attachment: Optional[str] = None
    charsets: CharsetPolicy = CharsetPolicy()
    temporal: bool = True
    batch_rows: int = DEFAULT_BATCH_ROWS

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "ReadOptions":
        # Spark hands options over lower-cased.
        options = {str(k).lower(): v for k, v in options.items()}
        paths: Tuple[str, ...] = ()
        if options.get("paths"):
            paths = tuple(json.loads(options["paths"]))
        elif options.get("path"):
            paths = (options["path"],)
        if not paths:
            raise CmiOptionError("no path given: spark.read.format('cmi').load('<dump file, directory or glob>')")
        view = str(options.get("view", "dataset")).strip().lower()
        if view not in VIEWS:
            raise CmiOptionError(f"option view must be one of {', '.join(VIEWS)}, not {view!r}")
        attachment = options.get("attachment")
        if attachment is not None:
            attachment = attachment.strip().upper()
            if len(attachment) != 32 or any(c not in "0123456789ABCDEF" for c in attachment):
                raise CmiOptionError(f"option attachment must be 32 hex digits (the attachment key), "
                                     f"not {options.get('attachment')!r}")
        default_ccsid = _ccsid(options, "defaultccsid") or 1208
        return cls(paths=paths, view=view, dataset=options.get("dataset"), attachment=attachment,
                   charsets=CharsetPolicy(default_ccsid, _ccsid(options, "ccsid")),
                   temporal=_bool(options, "temporaltypes", True),
                   batch_rows=_int(options, "batchrows", DEFAULT_BATCH_ROWS))

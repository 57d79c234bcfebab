"""Read and write options: parsed once from the strings Spark (or a caller) hands over, and
validated with messages that name the option.

The tables ``READ_OPTIONS`` and ``WRITE_OPTIONS`` are the one list of what each side accepts:
a name in neither (nor a ``<transport>.<name>`` option the transport declares) is an error that
lists the valid names and suggests the closest, so a misspelled option is never ignored."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Mapping, Optional, Tuple

from .. import cache
from ..charsets import CCSID_CODECS, CharsetPolicy
from ..encoding import ENCODING_BIG_ENDIAN, ENCODING_LITTLE_ENDIAN, ENCODING_ZOS
from .. import transports
from ..containers import DEFAULT_MAX_RECORD_BYTES, limit_records
from ..errors import CmiOptionError, not_one_of
from ..payload.sas_dataset import DEFAULT_BATCH_ROWS
from ..payload.sas_dataset_writer import MAX_MESSAGE_BYTES, NAME_RULES
from ..storage import local_path
from .write import WriteOptions

# Room for a header with a few attachments and any one variable definition.
MIN_MESSAGE_BYTES = 512
DEFAULT_MAX_PARTITION_BYTES = 128 << 20


# Spark's own keys: load(path) arrives as "path", load([a, b]) as "paths" (JSON); a catalog table
# (CREATE TABLE ... USING cmi) adds "owner", "provider" and, with LOCATION, "location" (its path).
_SPARK_KEYS = ("path", "paths", "owner", "provider", "location")
READ_OPTIONS = ("format", "view", "dataset", "attachment", "mode", "columnNameOfCorruptRecord", "ccsid",
                "defaultCcsid", "temporalTypes", "batchRows", "maxPartitionBytes", "minPartitions", "cacheDir",
                "maxRecordBytes")
# What a read does about damage, as Spark's file sources name it (README "Damaged captures"):
# FAILFAST raises, PERMISSIVE adds a row per damaged stretch, DROPMALFORMED keeps trusted rows only.
FAILFAST, PERMISSIVE, DROPMALFORMED = "failfast", "permissive", "dropmalformed"
READ_MODES = (FAILFAST, PERMISSIVE, DROPMALFORMED)
CORRUPT_RECORD = "_corrupt_record"
WRITE_OPTIONS = ("dataset", "encoding", "ccsid", "longSize", "maxMessageBytes", "message", "description",
                 "label", "truncate", "attachmentPerPartition", "deterministic", "kind", "lrecl", "transport",
                 "validVarName", "lossyNumbers")


def documented(key: str) -> str:
    """An option's name as the documentation spells it (Spark hands them over lower-cased)."""
    return next((name for name in READ_OPTIONS + WRITE_OPTIONS if name.lower() == key.lower()), key)


def check_option_names(given: Mapping[str, str], own: Tuple[str, ...], side: str) -> None:
    """Every option in ``given`` is one of ``own`` or a "<transport>.<name>" option that transport
    declares (names without regard to case), and a transport option's value suits it."""
    known = {name.lower() for name in own + _SPARK_KEYS}
    writing = side == "write"
    other_side = {name.lower() for name in (READ_OPTIONS if writing else WRITE_OPTIONS)}
    for key, value in given.items():
        lowered = str(key).lower()
        if "." in lowered:
            transport = transports.transport_of_option(lowered)
            declared = tuple(transport.write_options if writing else transport.read_options)
            if lowered not in {name.lower() for name in declared}:
                raise not_one_of(f"{side} option", key, declared or own)
            transport.check_option(lowered, str(value), writing)
        elif lowered in other_side and lowered not in known:
            raise CmiOptionError(f"{documented(lowered)} is a {'read' if writing else 'write'} option, not a "
                                 f"{side} option; {side} options: {', '.join(own)}")
        elif lowered not in known:
            raise not_one_of(f"{side} option", key, own)


def _choice(options: Mapping[str, str], name: str, default: str, choices: Tuple[str, ...]) -> str:
    """The value of option ``name`` (as documented; looked up lower-cased), one of ``choices``."""
    given = options.get(name.lower())
    value = str(given if given is not None else default).strip().lower()
    if value not in choices:
        raise not_one_of(name, given, choices)
    return value


def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    raw = options.get(key)
    if raw is None:
        return default
    value = str(raw).strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise CmiOptionError(f"option {documented(key)} must be true or false, not {raw!r}")


def _int(options: Mapping[str, str], key: str, default: Optional[int], low: int = 1) -> Optional[int]:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise CmiOptionError(f"option {documented(key)} must be a whole number, not {raw!r}") from None
    if value < low:
        raise CmiOptionError(f"option {documented(key)} must be at least {low}, not {value}")
    return value


def _ccsid(options: Mapping[str, str], key: str) -> Optional[int]:
    value = _int(options, key, None)
    if value is not None and value not in CCSID_CODECS:
        raise CmiOptionError(f"option {documented(key)}: CCSID {value} is not supported; supported: "
                             f"{sorted(CCSID_CODECS)}")
    return value


@dataclass(frozen=True)
class ReadOptions:
    paths: Tuple[str, ...]
    view: str = "dataset"  # a name in views.VIEWS, checked there
    format: Optional[str] = None  # a capture format name; None: recognised per file
    dataset: Optional[str] = None
    attachment: Optional[str] = None
    charsets: CharsetPolicy = CharsetPolicy()
    temporal: bool = True
    batch_rows: int = DEFAULT_BATCH_ROWS
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES
    min_partitions: int = 1
    # FAILFAST by default: a silently partial data set is the worst outcome when replaying a transfer.
    mode: str = FAILFAST
    corrupt_column: str = CORRUPT_RECORD  # PERMISSIVE's column saying what was lost and where
    transport_options: Tuple[Tuple[str, str], ...] = ()  # "<transport>.<name>" options, e.g. sapdb.port
    # Option cacheDir (cache.setting_of: an absolute directory or cache.OFF); None: not given, the
    # environment variable CMI_DATASOURCE_CACHE or the default decides (cache.py).
    cache_dir: Optional[str] = None
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES  # what one record of a capture may take (containers.py)

    # The parsers read the bound of their process (containers.max_record_bytes): options made here,
    # or unpickled in a Spark worker, set it there.
    def __post_init__(self) -> None:
        limit_records(self.max_record_bytes)

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        limit_records(self.max_record_bytes)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "ReadOptions":
        # Spark hands options over lower-cased.
        options = {str(k).lower(): v for k, v in options.items()}
        check_option_names(options, READ_OPTIONS, "read")
        paths: Tuple[str, ...] = ()
        if options.get("paths"):
            paths = _path_list(options["paths"])
        elif options.get("path") or options.get("location"):
            paths = (options.get("path") or options["location"],)
        if not paths:
            raise CmiOptionError("no path given: spark.read.format('cmi').load('<dump file, directory or glob>'); "
                                 "a catalog table (CREATE TABLE ... USING cmi) cannot stand in for it: Spark 4.3 "
                                 "hands a Python data source none of a table's options when it is read")
        view = str(options.get("view", "dataset")).strip().lower()
        capture_format = options.get("format")
        if capture_format is not None:
            capture_format = transports.capture_format(capture_format.strip().lower()).name
        dataset = options.get("dataset")
        if dataset is not None and (dataset.count(".") > 1 or not all(p.strip() for p in dataset.split("."))):
            raise CmiOptionError(f"option dataset must be LIB.MEMBER or MEMBER, not {dataset!r}")
        attachment = options.get("attachment")
        if attachment is not None:
            attachment = attachment.strip().upper()
            if len(attachment) != 32 or any(c not in "0123456789ABCDEF" for c in attachment):
                raise CmiOptionError(f"option attachment must be 32 hex digits (the attachment key), "
                                     f"not {options.get('attachment')!r}")
        default_ccsid = _ccsid(options, "defaultccsid") or 1208
        return cls(paths=paths, view=view, format=capture_format,
                   dataset=dataset, attachment=attachment,
                   charsets=CharsetPolicy(default_ccsid, _ccsid(options, "ccsid")),
                   temporal=_bool(options, "temporaltypes", True),
                   batch_rows=_int(options, "batchrows", DEFAULT_BATCH_ROWS),
                   max_partition_bytes=_int(options, "maxpartitionbytes", DEFAULT_MAX_PARTITION_BYTES),
                   min_partitions=_int(options, "minpartitions", os.cpu_count() or 1),
                   mode=_choice(options, "mode", FAILFAST, READ_MODES),
                   corrupt_column=_corrupt_column(options),
                   max_record_bytes=_int(options, "maxrecordbytes", DEFAULT_MAX_RECORD_BYTES),
                   transport_options=tuple(sorted((k, str(v)) for k, v in options.items() if "." in k)),
                   cache_dir=_cache_dir(options))


def _cache_dir(options: Mapping[str, str]) -> Optional[str]:
    given = options.get("cachedir")
    if given is None:
        return None
    try:
        return cache.setting_of(given, "option cacheDir")
    except ValueError as e:
        raise CmiOptionError(str(e)) from None


def _corrupt_column(options: Mapping[str, str]) -> str:
    name = str(options.get("columnnameofcorruptrecord", CORRUPT_RECORD)).strip()
    if not name:
        raise CmiOptionError("option columnNameOfCorruptRecord must name a column")
    return name


def _path_list(raw: str) -> Tuple[str, ...]:
    """Option paths: the JSON list Spark makes of load([a, b])."""
    try:
        paths = json.loads(raw)
    except ValueError:
        paths = None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise CmiOptionError(f"option paths must be a JSON list of paths (what load([a, b]) passes), not {raw!r}; "
                             f"give one path with load(path)")
    return tuple(paths)


_SAS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
WRITE_KINDS = ("dataset", "text", "binary")


@dataclass(frozen=True)
class SaveOptions:
    directory: str
    library: str
    member: str
    codec: WriteOptions
    kind: str = "dataset"
    description: str = ""
    label: str = ""
    attachment_per_partition: bool = False
    lrecl: Optional[int] = None
    write_format: str = "dmpmqmsg"  # the capture format of the transport chosen (option transport)
    transport: str = "mq"
    transport_options: Tuple[Tuple[str, str], ...] = ()  # "<transport>.<name>" options, e.g. mqtt.broker

    @property
    def dataset_name(self) -> str:
        return f"{self.library}.{self.member}"

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "SaveOptions":
        options = {str(k).lower(): v for k, v in options.items()}
        check_option_names(options, WRITE_OPTIONS, "write")
        directory = options.get("path")
        transport = str(options.get("transport", "mq")).strip().lower()
        transport_options = tuple(sorted((k, str(v)) for k, v in options.items() if "." in k))
        for key, _ in transport_options:
            if key.split(".", 1)[0] != transport:
                raise CmiOptionError(f"option {key} goes with option('transport', '{key.split('.', 1)[0]}')")
        write_format = transports.write_format(transport).name
        if not directory and transports.write_format(transport).transport.sends_live(dict(transport_options)):
            # Sent live, nothing is written; the tasks' spills still need a place the commit can read,
            # and one nobody else can plant or read (not a fixed name in the shared temp dir).
            directory = cache.private_temp_directory("send")
        if not directory:
            raise CmiOptionError("no destination: df.write.format('cmi').mode('append').save('<directory>')")
        directory = local_path(directory)  # file: URIs; other URIs are kept (storage.py)
        library, member = _dataset_name(options.get("dataset", "WORK.DATA"))
        kind = _choice(options, "kind", "dataset", WRITE_KINDS)
        # TIB/RV sends numbers as big-endian IEEE doubles (seed 001): its records are written so.
        big_endian_only = transport == "tibrv"
        encoding = _int(options, "encoding", ENCODING_BIG_ENDIAN if big_endian_only else ENCODING_LITTLE_ENDIAN)
        if encoding not in (ENCODING_LITTLE_ENDIAN, ENCODING_BIG_ENDIAN, ENCODING_ZOS):
            raise CmiOptionError(f"option encoding must be 546 (little-endian), 273 (big-endian) or "
                                 f"785 (z/OS, S/390 floats), not {encoding}")
        if big_endian_only and encoding != ENCODING_BIG_ENDIAN:
            raise CmiOptionError(f"option encoding must be 273 with transport tibrv (RV numbers are "
                                 f"big-endian IEEE), not {encoding}")
        long_size = _int(options, "longsize", 4)
        if long_size not in (4, 8):
            raise CmiOptionError(f"option longSize must be 4 or 8, not {long_size}")
        max_bytes = _int(options, "maxmessagebytes", MAX_MESSAGE_BYTES, low=MIN_MESSAGE_BYTES)
        if max_bytes > MAX_MESSAGE_BYTES:
            raise CmiOptionError(f"option maxMessageBytes may lower the limit of {MAX_MESSAGE_BYTES} bytes, "
                                 f"not raise it ({max_bytes})")
        deterministic = _bool(options, "deterministic", False)
        codec = WriteOptions(encoding=encoding, ccsid=_ccsid(options, "ccsid") or 1208, long_size=long_size,
                             max_message_bytes=max_bytes, application_message=options.get("message", ""),
                             deterministic_seed=f"{library}.{member}" if deterministic else None,
                             truncate=_bool(options, "truncate", False),
                             valid_var_name=_choice(options, "validVarName", "v7", NAME_RULES),
                             lossy_numbers=_bool(options, "lossynumbers", False))
        return cls(directory=directory, library=library, member=member, codec=codec, kind=kind,
                   description=options.get("description", ""), label=options.get("label", ""),
                   attachment_per_partition=_bool(options, "attachmentperpartition", False),
                   lrecl=_int(options, "lrecl", None), write_format=write_format, transport=transport,
                   transport_options=transport_options)


def _dataset_name(text: str) -> Tuple[str, str]:
    parts = text.strip().split(".")
    if len(parts) == 1:
        parts = ["WORK"] + parts
    if (len(parts) != 2 or not all(_SAS_NAME.fullmatch(p) for p in parts)
            or len(parts[0]) > 8 or len(parts[1]) > 32):
        raise CmiOptionError(f"option dataset must be LIB.MEMBER with SAS names (library up to 8, member "
                             f"up to 32 characters), not {text!r}")
    return parts[0].upper(), parts[1].upper()

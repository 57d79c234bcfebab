"""Read and write options: one table of entries (``option_table.Option``: name, parser, default,
documentation, side, transport), from which the options Spark (or a caller) hands over are parsed
and validated with messages that name the option, and from which ``docs/options.md`` and the
options part of ``CmiDataSource``'s docstring are generated::

    python -m cmi_datasource.engine.options --markdown > docs/options.md

``OPTIONS`` is the core's table; each transport adds its "<transport>.<name>" options through
``Transport.options``. A name neither declares is an error that lists the valid names and
suggests the closest, so a misspelled option is never ignored."""
from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from dataclasses import dataclass, fields
from typing import Any, Dict, List, Mapping, Optional, Tuple

from .. import cache
from ..charsets import CCSID_CODECS, CharsetPolicy
from ..encoding import ENCODING_BIG_ENDIAN, ENCODING_LITTLE_ENDIAN, ENCODING_ZOS
from .. import transports
from ..containers import DEFAULT_MAX_RECORD_BYTES, limit_records
from ..errors import CmiOptionError, not_one_of
from ..option_table import READ, WRITE, Option, boolean, named, nonblank, one_of, text, whole_number
from ..payload.sas_dataset import DEFAULT_BATCH_ROWS, TIME_AS_INTERVAL, TIME_MAPPINGS, TemporalTypes
from ..payload.sas_dataset_writer import MAX_MESSAGE_BYTES, NAME_RULES
from .. import storage
from ..storage import exists, local_path
from .paths import instant, instant_text, name_matcher, resolve_paths
from .write import WriteOptions

# Room for a header with a few attachments and any one variable definition.
MIN_MESSAGE_BYTES = 512
DEFAULT_MAX_PARTITION_BYTES = 128 << 20

# Spark's own keys: load(path) arrives as "path", load([a, b]) as "paths" (JSON); a catalog table
# (CREATE TABLE ... USING cmi) adds "owner", "provider" and, with LOCATION, "location" (its path).
_SPARK_KEYS = ("path", "paths", "owner", "provider", "location")
# What a read does about damage, as Spark's file sources name it (README "Damaged captures"):
# FAILFAST raises, PERMISSIVE adds a row per damaged stretch, DROPMALFORMED keeps trusted rows only.
FAILFAST, PERMISSIVE, DROPMALFORMED = "failfast", "permissive", "dropmalformed"
READ_MODES = (FAILFAST, PERMISSIVE, DROPMALFORMED)
CORRUPT_RECORD = "_corrupt_record"
WRITE_KINDS = ("dataset", "text", "binary")
_SAS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ENCODINGS = {ENCODING_LITTLE_ENDIAN: "little-endian", ENCODING_BIG_ENDIAN: "big-endian",
             ENCODING_ZOS: "z/OS, S/390 floats"}


# -- parsers of the core's options ----------------------------------------------------------------

def _ccsid(raw: str, name: str) -> int:
    value = whole_number()(raw, name)
    if value not in CCSID_CODECS:
        raise CmiOptionError(f"option {name}: CCSID {value} is not supported; supported: {sorted(CCSID_CODECS)}")
    return value


def _capture_format(raw: str, name: str) -> str:
    return transports.capture_format(raw.strip().lower()).name


def _read_dataset(raw: str, name: str) -> str:
    if raw.count(".") > 1 or not all(p.strip() for p in raw.split(".")):
        raise CmiOptionError(f"option {name} must be LIB.MEMBER or MEMBER, not {raw!r}")
    return raw


def _attachment_key(raw: str, name: str) -> str:
    key = raw.strip().upper()
    if len(key) != 32 or any(c not in "0123456789ABCDEF" for c in key):
        raise CmiOptionError(f"option {name} must be 32 hex digits (the attachment key), not {raw!r}")
    return key


def _cache_dir(raw: str, name: str) -> str:
    try:
        return cache.setting_of(raw, f"option {name}")
    except ValueError as e:
        raise CmiOptionError(str(e)) from None


def _name_glob(raw: str, name: str) -> str:
    name_matcher(raw)  # refuses a glob no file name can match
    return raw


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _duration(raw: str, name: str) -> float:
    """Seconds, given as a number of seconds or with a unit: ``90s``, ``30m``, ``2h``, ``1d``."""
    given = raw.strip().lower()
    unit = _DURATION_UNITS.get(given[-1:], None)
    try:
        value = float(given[:-1] if unit else given) * (unit or 1)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise CmiOptionError(f"option {name} must be a positive duration such as '90s', '30m', '2h', '1d' or a "
                             f"number of seconds, not {raw!r}")
    return value


def _view_name(raw: str, name: str) -> str:
    return raw.strip().lower()  # a name in views.VIEWS or a transport's view: checked there


def _write_dataset(raw: str, name: str) -> Tuple[str, str]:
    parts = raw.strip().split(".")
    if len(parts) == 1:
        parts = ["WORK"] + parts
    if (len(parts) != 2 or not all(_SAS_NAME.fullmatch(p) for p in parts)
            or len(parts[0]) > 8 or len(parts[1]) > 32):
        raise CmiOptionError(f"option {name} must be LIB.MEMBER with SAS names (library up to 8, member "
                             f"up to 32 characters), not {raw!r}")
    return parts[0].upper(), parts[1].upper()


def _encoding(raw: str, name: str) -> int:
    value = whole_number()(raw, name)
    if value not in ENCODINGS:
        raise CmiOptionError(f"option {name} must be " + ", ".join(f"{e} ({what})" for e, what in ENCODINGS.items())
                             + f", not {value}")
    return value


def _long_size(raw: str, name: str) -> int:
    value = whole_number()(raw, name)
    if value not in (4, 8):
        raise CmiOptionError(f"option {name} must be 4 or 8, not {value}")
    return value


def _transport(raw: str, name: str) -> str:
    value = raw.strip().lower()
    transports.write_format(value)  # refuses a transport that is not known or writes nothing
    return value


# -- the table ------------------------------------------------------------------------------------

def _read(name: str, parse, doc: str, default: Any = None, shown: Optional[str] = None,
          field: Optional[str] = None) -> Option:
    return Option(name, READ, parse, doc, default, shown, None, field)


def _write(name: str, parse, doc: str, default: Any = None, shown: Optional[str] = None,
           field: Optional[str] = None) -> Option:
    return Option(name, WRITE, parse, doc, default, shown, None, field)


# The core's options, each side in the order the documentation lists them. Adding one: an entry
# here, a field of that name in ReadOptions or SaveOptions, and the code that acts on it.
OPTIONS: Tuple[Option, ...] = (
    _read("format", _capture_format, "The capture format of every file, one of those the transports register "
          "(`dmpmqmsg`, `amqsbcg`, `mqget`, `tibrv`, `mqtt`, `pcap`, `sapdb`). By default each file's format is "
          "recognised from its first bytes (compressed files too); a file no format recognises is an "
          "`UnknownCaptureFormatError` naming the formats known.", shown="recognised per file", field="format"),
    _read("view", _view_name, "`dataset`: the rows of one SAS dataset. "
          "`attachments`: one row per attachment. `variables`: one row per variable per dataset (like PROC "
          "CONTENTS). `files`: one row per external file attachment. `messages`: one row per physical message. "
          "A transport may add its own: `sapdb`, one row per part of every SAP DB / MaxDB SQL packet.",
          "dataset", field="view"),
    _read("dataset", _read_dataset, "`LIB.MEMBER` (or just `MEMBER`), case-insensitive, from the header's "
          "qualifiers. With neither `dataset` nor `attachment`: the only complete dataset; several complete "
          "datasets with identical variables are unioned; otherwise the error lists every candidate.",
          field="dataset"),
    _read("attachment", _attachment_key, "The attachment key: 32 hex digits (the first 16 bytes of the "
          "attachment's CorrelId).", field="attachment"),
    _read("mode", one_of(*READ_MODES), "What a read does about damage, as Spark's file sources: `FAILFAST` "
          "raises a typed error naming where; `PERMISSIVE` returns the rows that can be trusted plus a row of "
          "nulls per damaged stretch, whose `columnNameOfCorruptRecord` column says what was lost and where; "
          "`DROPMALFORMED` returns the trusted rows only.", FAILFAST, "FAILFAST", field="mode"),
    _read("columnNameOfCorruptRecord", nonblank, "`PERMISSIVE`'s column saying what was lost and where.",
          CORRUPT_RECORD, field="corrupt_column"),
    _read("ccsid", _ccsid, "Decode characters in this CCSID whatever the messages say."),
    _read("defaultCcsid", _ccsid, "The CCSID of messages whose CodedCharSetId is 0 (1208 is UTF-8).", 1208),
    _read("temporalTypes", boolean, "`true`: date, datetime and time formats give `date`, `timestamp_ntz` and "
          "the columns `timeType` says; `false`: plain SAS numbers (days and seconds), whatever `timeType` says.",
          True, field="temporal"),
    _read("timeType", one_of(*TIME_MAPPINGS), "What a numeric with a time format (`TIME8.`, `HHMM.`, ...) "
          "becomes; SAS stores elapsed seconds, which may exceed a day or be negative. `interval`: Spark's "
          "`interval day to second`, every value to the microsecond, filtered, compared and written to Parquet "
          "or CSV in any session. `time`: Spark's `time` (a time of day), which Spark 4.x keeps behind "
          "`spark.sql.timeType.enabled=true`; a value outside 0 to 24 hours is a `ValueConversionError`. "
          "`seconds`: a `double`, the SAS number. The `format` metadata is kept each way "
          "([SAS TIME values](reading.md#sas-time-values)).", TIME_AS_INTERVAL, field="time_type"),
    _read("batchRows", whole_number(), "Observations per Arrow record batch.", DEFAULT_BATCH_ROWS,
          field="batch_rows"),
    _read("maxPartitionBytes", whole_number(), "The most observation bytes (rows × observation length, as "
          "decoded) one partition produces; a large attachment is cut at observation boundaries.",
          DEFAULT_MAX_PARTITION_BYTES, "128 MiB", field="max_partition_bytes"),
    _read("minPartitions", whole_number(), "The fewest partitions.", lambda: os.cpu_count() or 1,
          "the CPU count where planning runs", field="min_partitions"),
    _read("cacheDir", _cache_dir, "The disk cache of message indexes and plans: an absolute directory, or `off` "
          "(also `none`, `0`) for none.", shown="`CMI_DATASOURCE_CACHE`, else `~/.cache/cmi-datasource`",
          field="cache_dir"),
    _read("maxRecordBytes", whole_number(), "The most bytes one record of a capture may take, decompressed: a "
          "text line or message, an MQGET record, an RV message, an MQTT or RTE packet, the unread bytes of a "
          "TCP stream.", DEFAULT_MAX_RECORD_BYTES, "64 MiB", field="max_record_bytes"),
    _read("recursiveFileLookup", boolean, "`true`: a directory in `load()` is read with the files of all its "
          "subdirectories, at any depth; `false`: only its own files. Either way, names starting with `_` or `.` "
          "are skipped.", True, field="recursive_file_lookup"),
    _read("pathGlobFilter", _name_glob, "Read only the files whose names match this glob, as in Spark's file "
          "sources: `*`, `?`, `[abc]`, `[^abc]` and `{a,b}` alternatives, case-sensitive (`*.dmp`, "
          "`*.{dmp,rv}`). As in Spark, it applies to files named in `load()` too.",
          field="path_glob_filter"),
    _read("modifiedBefore", instant, "Read only the files last modified before this time, as in Spark's file "
          "sources: an ISO 8601 timestamp (`2020-06-01T13:00:00`, `2020-06-01 13:00:00`, `2020-06-01`), in UTC "
          "unless it ends with an offset (`Z`, `+02:00`). Spark's sources take the session time zone, which a "
          "Python data source cannot see. As in Spark, it applies to files named in `load()` too.",
          field="modified_before"),
    _read("modifiedAfter", instant, "Read only the files last modified after this time (written as for "
          "`modifiedBefore`); it applies to files named in `load()` too.", field="modified_after"),
    _read("ignoreCorruptFiles", boolean, "`true`: a file that is no capture is left out of the read instead of "
          "failing it: one no capture format recognises (a stray `notes.txt`; or, with option `format`, one "
          "nothing of which reads as that format), one that is no regular file or that the system fails to read, "
          "a compressed file whose stream breaks before its format is known. Each is logged and shown in the "
          "`messages` and `attachments` views, and in `PERMISSIVE`'s corrupt-record rows. Damage inside a "
          "capture is no corrupt file: option `mode` decides about it. Spark's session conf "
          "`spark.sql.files.ignoreCorruptFiles` does not reach a Python data source: set the option.", False,
          field="ignore_corrupt_files"),
    _read("ignoreMissingFiles", boolean, "`true`: a file listed while planning and gone when it is opened or read "
          "(removed by another process) is left out instead of failing the read; the rows a partition would have "
          "read from it are reported by `PERMISSIVE`'s corrupt-record rows. A path given to `load()` that names "
          "nothing still fails, as in Spark. Spark's session conf `spark.sql.files.ignoreMissingFiles` does not "
          "reach a Python data source: set the option.", False, field="ignore_missing_files"),
    _read("maxFilesPerTrigger", whole_number(), "A stream (`spark.readStream`): the most new capture files one "
          "micro-batch takes, oldest first, as in Spark's file sources (`trigger(availableNow=True)` honours it "
          "too); files still holding incomplete attachments are read again besides. Not with "
          "`maxBytesPerTrigger`. Batch reads ignore it ([streaming](streaming.md)).", field="max_files_per_trigger"),
    _read("maxBytesPerTrigger", whole_number(), "A stream: the most bytes of new capture files (as stored, "
          "compressed or not) one micro-batch takes; a micro-batch takes at least one file. Not with "
          "`maxFilesPerTrigger`.", field="max_bytes_per_trigger"),
    _read("attachmentTimeout", _duration, "A stream: how long an incomplete attachment (its messages spread over "
          "files still to land) waits for the rest, counted from the modification time of the newest file "
          "holding any of its messages: `90s`, `30m`, `2h`, `1d`, or seconds. Then it is given up and option "
          "`mode` decides, as for an incomplete attachment in a batch read.", 3600.0, "1h",
          field="attachment_timeout"),

    _write("dataset", _write_dataset, "Library and member name of the attachment (SAS names).", ("WORK", "DATA"),
           "WORK.DATA"),
    _write("encoding", _encoding, "MQ Encoding of the numbers: 546 little-endian IEEE, 273 big-endian IEEE, 785 "
           "z/OS (S/390 floats).", ENCODING_LITTLE_ENDIAN),
    _write("ccsid", _ccsid, "Code page of the characters; a character the code page lacks is an error naming "
           "the column.", 1208),
    _write("longSize", _long_size, "Size of CMI `long` fields: 4, or 8 for 64-bit receivers.", 4),
    _write("maxMessageBytes", whole_number(MIN_MESSAGE_BYTES, MAX_MESSAGE_BYTES,
                                           f"may lower the limit of {MAX_MESSAGE_BYTES} bytes, not raise it"),
           "The largest message payload (may be lowered, down to 512).", MAX_MESSAGE_BYTES),
    _write("message", text, "The application message text.", ""),
    _write("description", text, "The attachment description in the header.", "", field="description"),
    _write("label", text, "The dataset label.", "", field="label"),
    _write("truncate", boolean, "Cut character values longer than 32767 bytes (or their `sas_length`) instead "
           "of failing.", False),
    _write("attachmentPerPartition", boolean, "One attachment per non-empty partition instead of one per save.",
           False, field="attachment_per_partition"),
    _write("deterministic", boolean, "Fixed ids and times, so the same input gives a byte-identical capture.",
           False),
    _write("kind", one_of(*WRITE_KINDS), "`dataset`, or `text` / `binary`: write a DataFrame of `name` + `text` "
           "(or `content`) as file attachments.", "dataset", field="kind"),
    _write("lrecl", whole_number(), "Logical record length of written files.", shown="longest line / 256",
           field="lrecl"),
    _write("transport", _transport, "How the messages go: `mq`, a dmpmqmsg dump `cmi-<lib>.<member>-<id>.dmp`; "
           "`tibrv`, a TIB/Rendezvous capture `....rv` (HDR, MSG, DAT, VAR, ATO..., LST per attachment); `mqtt`, a "
           "raw MQTT 5 stream `....mqtt`, or with `mqtt.broker`, publishing to a live broker.",
           transports.DEFAULT_TRANSPORT, field="transport"),
    _write("validVarName", one_of(*NAME_RULES), "Which column names are SAS variable names, after SAS's "
           "`VALIDVARNAME=`: `v7` 1 to 32 letters, digits and underscores, not starting with a digit, written as "
           "given; `upcase` the same rule, names written upper-cased; `any` SAS name literals: any characters in "
           "up to 32 bytes of the target CCSID, not all blanks, no trailing blank, no NUL. Under every rule names "
           "must differ in more than case, and `_N_`, `_ERROR_`, `_NUMERIC_`, `_CHARACTER_`, `_ALL_` are refused.",
           "v7"),
    _write("lossyNumbers", boolean, "Write decimals of more than 15 significant digits and longs beyond ±2^53 "
           "rounded to the nearest double instead of failing.", False),
)


def core_options(side: str) -> Tuple[Option, ...]:
    return tuple(o for o in OPTIONS if o.side == side)


READ_OPTIONS = tuple(o.name for o in core_options(READ))
WRITE_OPTIONS = tuple(o.name for o in core_options(WRITE))


def documented(key: str) -> str:
    """An option's name as the documentation spells it (Spark hands them over lower-cased)."""
    found = named(OPTIONS, key)
    return found.name if found else key


def transport_options(transport: transports.Transport, side: str) -> Tuple[Option, ...]:
    return tuple(o for o in transport.options if o.side == side)


def check_option_names(given: Mapping[str, str], side: str) -> None:
    """Every option in ``given`` (keys lower-cased) is one of the core's for ``side`` or a
    "<transport>.<name>" option that transport declares, and a transport option's value suits it."""
    own = core_options(side)
    names = tuple(o.name for o in own)
    other_side = WRITE if side == READ else READ
    for key, value in given.items():
        if "." in key:
            declared = transport_options(transports.transport_of_option(key), side)
            found = named(declared, key)
            if found is None:
                raise not_one_of(f"{side} option", key, [o.name for o in declared] or names)
            found.parse(str(value), found.name)
        elif named(own, key) is None and key not in _SPARK_KEYS:
            if named(core_options(other_side), key):
                raise CmiOptionError(f"{documented(key)} is a {other_side} option, not a {side} option; "
                                     f"{side} options: {', '.join(names)}")
            raise not_one_of(f"{side} option", key, names)


def _given(options: Mapping[str, Any], side: str) -> Tuple[Dict[str, str], Dict[str, Any]]:
    """The options lower-cased and checked, and the value of every core option of ``side`` by name."""
    given = {str(k).lower(): v for k, v in options.items()}  # Spark hands options over lower-cased
    check_option_names(given, side)
    return given, {o.name: o.value(given) for o in core_options(side)}


def _refuse_stream_options(given: Mapping[str, str]) -> None:
    for key in given:
        option = named(transport_options(transports.transport_of_option(key), READ), key) if "." in key else None
        if option is not None and option.stream_only:
            raise CmiOptionError(f"option {option.name} is a stream read's (spark.readStream): {option.doc}")


def _held(cls, side: str, values: Mapping[str, Any]) -> Dict[str, Any]:
    """The fields of ``cls`` that hold an option's value as parsed."""
    held = {o.field: values[o.name] for o in core_options(side) if o.field}
    unknown = set(held) - {f.name for f in fields(cls)}
    assert not unknown, f"options table names fields {cls.__name__} lacks: {unknown}"
    return held


def _transport_given(given: Mapping[str, str]) -> Tuple[Tuple[str, str], ...]:
    return tuple(sorted((k, str(v)) for k, v in given.items() if "." in k))


@dataclass(frozen=True)
class ReadOptions:
    paths: Tuple[str, ...]
    view: str = "dataset"  # a name in views.VIEWS, checked there
    format: Optional[str] = None  # a capture format name; None: recognised per file
    dataset: Optional[str] = None
    attachment: Optional[str] = None
    charsets: CharsetPolicy = CharsetPolicy()
    temporal: bool = True  # option temporalTypes
    time_type: str = TIME_AS_INTERVAL  # option timeType: one of TIME_MAPPINGS
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
    path_glob_filter: Optional[str] = None  # the names of the files read in directories match it (paths.py)
    recursive_file_lookup: bool = True  # directories read with their subdirectories (paths.py)
    modified_before: Optional[int] = None  # nanoseconds since the epoch: files modified before it (paths.py)
    modified_after: Optional[int] = None  # nanoseconds since the epoch: files modified after it (paths.py)
    ignore_corrupt_files: bool = False  # a file that is no capture is left out (capture.py)
    ignore_missing_files: bool = False  # a file gone between listing and reading is left out (paths, capture, views)
    max_files_per_trigger: Optional[int] = None  # a stream's micro-batch takes at most this many new files
    max_bytes_per_trigger: Optional[int] = None  # ... or new files of at most this many bytes (one at least)
    attachment_timeout: float = 3600.0  # seconds a stream waits for the rest of an incomplete attachment
    # Not options: what a stream's micro-batch reads of its files (engine/stream.py). ``attachments``:
    # the keys of the attachments it emits (the views of attachments read those alone; None:
    # options dataset and attachment choose). ``new_files``: the files it takes new, beside those
    # re-read for the attachments they hold (the views of messages and files read these alone;
    # None: every file).
    attachments: Optional[Tuple[str, ...]] = None
    new_files: Optional[Tuple[str, ...]] = None

    # The parsers read the bound of their process (containers.max_record_bytes): options made here,
    # or unpickled in a Spark worker, set it there.
    def __post_init__(self) -> None:
        limit_records(self.max_record_bytes)

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        limit_records(self.max_record_bytes)

    @property
    def temporal_types(self) -> TemporalTypes:
        """What the numerics with date, datetime and time formats become."""
        return TemporalTypes(self.temporal, self.time_type)

    def file_filters(self) -> Dict[str, Any]:
        """The options that choose the files read under the paths, as ``paths.resolve_paths``
        takes them (the one place that knows which options those are)."""
        return {"name_glob": self.path_glob_filter, "recursive": self.recursive_file_lookup,
                "modified_before": self.modified_before, "modified_after": self.modified_after,
                "ignore_missing": self.ignore_missing_files}

    @property
    def files_listed(self) -> bool:
        """Whether the paths are files a stream listed before (a micro-batch's): read as they
        are, not resolved again."""
        return self.new_files is not None

    def files(self) -> List[str]:
        """The capture files of the read: its paths, resolved with its file filters; of a
        stream's micro-batch, the files its stream listed (those removed since left out with
        ignoreMissingFiles)."""
        if self.files_listed:
            return [p for p in self.paths if not self.ignore_missing_files or exists(p)]
        return resolve_paths(self.paths, **self.file_filters())

    @classmethod
    def parse(cls, options: Mapping[str, Any], streaming: bool = False) -> "ReadOptions":
        """The options of a read; ``streaming``: of a stream read, which alone takes the options
        marked ``stream_only`` (a batch read refuses them)."""
        given, values = _given(options, READ)
        if not streaming:
            _refuse_stream_options(given)
        paths: Tuple[str, ...] = ()
        if given.get("paths"):
            paths = _path_list(given["paths"])
        elif given.get("path") or given.get("location"):
            paths = (given.get("path") or given["location"],)
        if not paths:
            raise CmiOptionError("no path given: spark.read.format('cmi').load('<dump file, directory or glob>'); "
                                 "a catalog table (CREATE TABLE ... USING cmi) cannot stand in for it: Spark 4.3 "
                                 "hands a Python data source none of a table's options when it is read")
        before, after = values["modifiedBefore"], values["modifiedAfter"]
        if before is not None and after is not None and before <= after:
            raise CmiOptionError(f"options modifiedBefore ({instant_text(before)}) and modifiedAfter "
                                 f"({instant_text(after)}) leave no time a file could have been modified in")
        if values["maxFilesPerTrigger"] is not None and values["maxBytesPerTrigger"] is not None:
            raise CmiOptionError("options maxFilesPerTrigger and maxBytesPerTrigger cannot both be given: a "
                                 "micro-batch is limited one way (Spark takes one read limit of a Python source)")
        return cls(paths=paths, charsets=CharsetPolicy(values["defaultCcsid"], values["ccsid"]),
                   transport_options=_transport_given(given), **_held(cls, READ, values))


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
    write_format: str = ""  # the capture format of the transport chosen (option transport)
    transport: str = transports.DEFAULT_TRANSPORT
    transport_options: Tuple[Tuple[str, str], ...] = ()  # "<transport>.<name>" options, e.g. mqtt.broker

    @property
    def dataset_name(self) -> str:
        return f"{self.library}.{self.member}"

    def check_destination(self) -> None:
        """The rule of a save's path: it names a folder, where each save adds one capture named
        ``cmi-<lib>.<member>-<id><suffix>``. A file there is refused (it is no folder, and is
        kept); so is a new path whose name ends like a capture file (``out.dmp``): the user
        means a file, and a folder of that name would hide the capture one level down. A
        folder of that name that exists already is used as it is."""
        where = self.directory
        if storage.is_file(where):
            raise CmiOptionError(f"the path {where} is a file; df.write.format('cmi') writes a folder of captures "
                                 f"(each save adds one): save to a folder's path")
        name = where.rstrip("/").rsplit("/", 1)[-1].lower()
        looks_like = next((s for s in capture_suffixes() if name.endswith(s)), None)
        if looks_like and not storage.is_dir(where):
            raise CmiOptionError(
                f"the path {where} names a {looks_like} file, but df.write.format('cmi').save() takes a folder, to "
                f"which each save adds one capture named cmi-{self.dataset_name.lower()}-<job id>"
                f"{transports.write_format(self.transport).suffix}: save to a folder's path (for example "
                f"{where[:len(where.rstrip('/')) - len(looks_like)]!r}), or make the folder {where} first to "
                f"use that name")

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> "SaveOptions":
        given, values = _given(options, WRITE)
        transport = transports.write_format(values["transport"]).transport
        transport_given = _transport_given(given)
        for key, _ in transport_given:
            if key.split(".", 1)[0] != transport.name:
                raise CmiOptionError(f"option {key} goes with option('transport', '{key.split('.', 1)[0]}')")
        for name, (required, why) in transport.required_write_options.items():
            if name.lower() in given and values[name] != required:
                raise CmiOptionError(f"option {name} must be {required} with transport {transport.name} ({why}), "
                                     f"not {values[name]}")
            values[name] = required
        directory = given.get("path")
        if not directory and transport.sends_live(dict(transport_given)):
            # Sent live, nothing is written; the tasks' spills still need a place the commit can read,
            # and one nobody else can plant or read (not a fixed name in the shared temp dir).
            directory = cache.private_temp_directory("send")
        if not directory:
            raise CmiOptionError("no destination: df.write.format('cmi').mode('append').save('<directory>')")
        library, member = values["dataset"]
        codec = WriteOptions(encoding=values["encoding"], ccsid=values["ccsid"], long_size=values["longSize"],
                             max_message_bytes=values["maxMessageBytes"], application_message=values["message"],
                             deterministic_seed=f"{library}.{member}" if values["deterministic"] else None,
                             truncate=values["truncate"], valid_var_name=values["validVarName"],
                             lossy_numbers=values["lossyNumbers"])
        return cls(directory=local_path(directory),  # file: URIs; other URIs are kept (storage.py)
                   library=library, member=member, codec=codec,
                   write_format=transports.write_format(transport.name).name,
                   transport_options=transport_given, **_held(cls, WRITE, values))


def capture_suffixes() -> List[str]:
    """The endings of capture files the known formats write (``.dmp``, ``.rv``, ...)."""
    return sorted({f.suffix.lower() for t in transports.transports() for f in t.formats if f.suffix})


# -- the documentation the table generates --------------------------------------------------------

def documented_options(side: str) -> List[Option]:
    """The options of ``side`` as documented: the core's, then each built-in transport's."""
    return list(core_options(side)) + [o for t in transports.builtin_transports() for o in transport_options(t, side)]


def _meaning(option: Option) -> str:
    """Its documentation, with what the transports require of it."""
    rules = [f"Transport `{t.name}` requires `{required}` ({why})."
             for t in transports.builtin_transports()
             for name, (required, why) in t.required_write_options.items() if option.transport is None
             and option.side == WRITE and name == option.name]
    return " ".join([option.doc] + rules)


def _default(option: Option) -> str:
    """Its default in Markdown: a value as code, a description (or none) as text."""
    shown = option.default_text()
    return shown if shown.startswith("`") or shown in ("-", "empty") or " " in shown else f"`{shown}`"


def markdown() -> str:
    """docs/options.md."""
    lines = ["# Options", "",
             "<!-- Generated by `python -m cmi_datasource.engine.options --markdown > docs/options.md` from the "
             "options table (cmi_datasource/engine/options.py and each transport's `options`): edit those. -->", "",
             "Names are matched without regard to case (Spark hands options over lower-cased). An option no "
             "table lists is a `CmiOptionError` that lists the valid names and suggests the closest; so is a bad "
             "value, naming the option. A `<transport>.<name>` option belongs to that transport.", ""]
    for side, title, intro in ((READ, "Read options", "`spark.read.format(\"cmi\").option(name, value).load(path)`: "
                                "`path` is a capture file, a directory, a glob, or a list of them "
                                "(`load([a, b])`); the messages of one attachment may be spread over several "
                                "files of one load."),
                               (WRITE, "Write options", "`df.write.format(\"cmi\").mode(\"append\")"
                                ".option(name, value).save(directory)`; `mode` is `append` or `overwrite`.")):
        lines += [f"## {title}", "", intro, "", "| option | default | meaning |", "|---|---|---|"]
        for o in documented_options(side):
            lines.append(f"| `{o.name}` | {_default(o)} | {_meaning(o).replace('|', '&#124;')} |")
        lines.append("")
    return "\n".join(lines)


def _rst(markdown_text: str) -> str:
    return re.sub(r"(?<!`)`([^`]+)`(?!`)", r"``\1``", markdown_text)


def docstring_list(side: str, width: int = 100) -> str:
    """The options of ``side`` as a reST list, for a docstring."""
    items = []
    for o in documented_options(side):
        default = "" if o.default_text() == "-" else f" (default {_rst(_default(o))})"
        items.append(textwrap.fill(f"``{o.name}``{default}: {_rst(_meaning(o))}", width,
                                   initial_indent="- ", subsequent_indent="  ",
                                   break_on_hyphens=False, break_long_words=False))
    return "\n".join(items)


if __name__ == "__main__":
    if sys.argv[1:] != ["--markdown"]:
        sys.exit("usage: python -m cmi_datasource.engine.options --markdown > docs/options.md")
    from cmi_datasource.engine.options import markdown as _markdown  # the module, not this __main__ copy
    sys.stdout.write(_markdown())

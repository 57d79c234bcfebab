"""Trust on TIB/RV captures (issue 26, findings 5 and 6), on RV bytes built from the tables of docs/spec/tibrv.md
by ``spark_tests/rv_messages.py`` (none of the package's code).

Attachment keys come from the capture's content: the same bytes give the same keys, and rows,
wherever they are stored and however the file is named. Order: RV numbers nothing, so capture
order is the order (``transports/tibrv/sequence.py``) and what the content contradicts is found
out. Every ATO message of attachments of 1, 2, 3 and 7 ATO messages is lost, duplicated and
garbled (five ways) in turn, and the last one exchanged with its LST: DROPMALFORMED and
PERMISSIVE return only rows of the clean capture, in order (the reports name exactly the
observations missing when they say where), rows returned and rows reported add up to the
declared count, and FAILFAST raises a typed error. Two ATO messages exchanged leave every count
right: the content cannot show it, and a test pins what is read.
"""
from __future__ import annotations

import os
import re
import struct
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa
import pytest

import cmi_datasource
from cmi_datasource import Capture
from cmi_datasource.errors import CmiError

from rv_messages import BLANKS, ato, dat, hdr, i32, lst, message, msg, var

VARIABLES = [("ID", "", 0, 0, "Row id", True, 8), ("NAME", "$", 8, 0, "Name", False, 8)]
OBS_LENGTH = 16
COUNTS = (3, 5, 2, 4)  # observations in the ATO messages, in turn: uneven, so that places differ


def rows_of(total: int) -> List[Tuple[float, str]]:
    return [(float(i), f"n{i}") for i in range(total)]


def attachment_messages(atos: int, member: str = "T") -> List[bytes]:
    """HDR, MSG, DAT, VAR, ``atos`` ATO messages, LST: one dataset attachment, message by message."""
    counts = [COUNTS[i % len(COUNTS)] for i in range(atos)]
    rows = rows_of(sum(counts))
    starts = [sum(counts[:i]) for i in range(atos)]
    body = [dat(len(rows), len(VARIABLES), OBS_LENGTH), var(VARIABLES)]
    body += [ato(rows[s:s + c], [True, False]) for s, c in zip(starts, counts)]
    return [hdr([(1, BLANKS, "WORK", member, "")]), msg([(4, "run 1")]), *body, lst(len(body))]


FIRST_ATO = 4  # HDR, MSG, DAT, VAR come first


def write(directory, data: bytes, name: str = "capture.rv") -> str:
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(str(directory), name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def read(path: str, mode: str, **options) -> pa.Table:
    """The dataset view as Spark reads it: schema, plan, each partition's batches."""
    return cmi_datasource.read(path, mode=mode, **options)


def data_rows(table: pa.Table) -> List[Tuple[float, str]]:
    return [(r["ID"], r["NAME"]) for r in table.to_pylist() if (r["ID"], r["NAME"]) != (None, None)]


def reports(table: pa.Table) -> List[str]:
    if "_corrupt_record" not in table.column_names:
        return []
    return [t for t in table.column("_corrupt_record").to_pylist() if t is not None]


def reported(text: str) -> Tuple[Optional[range], Optional[int]]:
    """The observations a report says are lost: their range (0-based) when it names one, and how
    many when it says."""
    found = re.search(r"observations (\d+) to (\d+) lost", text)
    if found:
        first, last = int(found.group(1)) - 1, int(found.group(2))
        return range(first, last), last - first
    found = re.search(r"observation (\d+) lost", text)
    if found:
        return range(int(found.group(1)) - 1, int(found.group(1))), 1
    found = re.search(r"(\d+) observations? lost|cost (\d+) observations in all", text)
    return None, int(next(g for g in found.groups() if g)) if found else None


def check_trust(path: str, sent: Sequence[Tuple[float, str]]) -> Dict[str, object]:
    """DROPMALFORMED and PERMISSIVE return rows of ``sent`` only, in order, each at its place;
    what is missing is reported, at its place when the report names one; returned + reported =
    sent; FAILFAST raises a typed error. Returns what each mode gave."""
    with pytest.raises(CmiError) as failfast:
        read(path, "FAILFAST")
    permissive = read(path, "PERMISSIVE")
    returned, texts = data_rows(permissive), reports(permissive)
    places = [int(r[0]) for r in returned]
    assert all(0 <= p < len(sent) and sent[p] == r for p, r in zip(places, returned)), returned  # none invented
    assert places == sorted(set(places)), places  # none repeated or out of order
    missing = sorted(set(range(len(sent))) - set(places))
    ranges, counts = zip(*map(reported, texts)) if texts else ((), ())
    assert None not in counts, texts
    assert len(returned) + sum(counts) == len(sent), (len(returned), texts)
    if ranges and None not in ranges:  # the reports say where: exactly the rows missing
        assert sorted(p for r in ranges for p in r) == missing, (missing, texts)
    dropped = read(path, "DROPMALFORMED")
    assert data_rows(dropped) == returned and "_corrupt_record" not in dropped.column_names
    return {"failfast": failfast.value, "returned": returned, "reports": texts}


# -- keys ---------------------------------------------------------------------------------------


def keys_and_rows(path: str):
    capture = Capture.open(path, use_index_cache=False)
    return [a.key_hex for a in capture.attachments], cmi_datasource.read(capture).to_pylist()


def test_the_same_capture_anywhere_has_the_same_keys_and_rows(tmp_path):
    data = b"".join(attachment_messages(3))
    here = write(tmp_path / "landing", data, "capture.rv")
    there = write(tmp_path / "archive" / "2026" / "11", data, "renamed-copy.rv")
    keys, rows = keys_and_rows(here)
    assert len(keys) == 1 and len(rows) == 10
    assert keys_and_rows(there) == (keys, rows)
    assert keys_and_rows("file://" + there) == (keys, rows)
    # A key saved from one read selects the attachment wherever the file went.
    assert data_rows(read(there, "FAILFAST", attachment=keys[0])) == rows_of(10)


def test_identical_attachments_in_one_capture_keep_distinct_keys(tmp_path):
    once = attachment_messages(2)
    path = write(tmp_path, b"".join(once + once))
    capture = Capture.open(path, use_index_cache=False)
    first, second = capture.attachments
    assert first.key != second.key and first.complete and second.complete
    for att in (first, second):
        assert data_rows(read(path, "FAILFAST", attachment=att.key_hex)) == rows_of(8)
    # Moved with more traffic before it, each keeps its key: the occurrence counts, not the place.
    other = attachment_messages(1, member="OTHER")
    moved = write(tmp_path / "moved", b"".join(other + once + once))
    assert [a.key_hex for a in Capture.open(moved, use_index_cache=False).attachments][1:] == [
        first.key_hex, second.key_hex]


def test_two_copies_of_a_capture_in_one_load_are_duplicates_read_once(tmp_path):
    data = b"".join(attachment_messages(2))
    write(tmp_path / "load", data, "a.rv")
    write(tmp_path / "load", data, "b.rv")
    capture = Capture.open(str(tmp_path / "load"), use_index_cache=False)
    [att] = capture.attachments
    assert att.complete and att.duplicate_messages == len(attachment_messages(2))  # each of the copy's
    assert data_rows(read(str(tmp_path / "load"), "FAILFAST")) == rows_of(8)


def test_different_data_under_the_same_header_gets_different_keys(tmp_path):
    """Nightly captures of one data set: same HDR, same place in the file, other rows."""
    night1 = attachment_messages(2)
    night2 = list(night1)
    night2[FIRST_ATO] = ato([(100.0, "other"), (101.0, "rows"), (102.0, "here")], [True, False])
    write(tmp_path / "nights", b"".join(night1), "1.rv")
    write(tmp_path / "nights", b"".join(night2), "2.rv")
    capture = Capture.open(str(tmp_path / "nights"), use_index_cache=False)
    assert len({a.key for a in capture.attachments}) == 2 and all(a.complete for a in capture.attachments)


def test_a_correlid_sent_is_the_key(tmp_path):
    messages = attachment_messages(1)
    messages[0] = hdr([(1, "SENTKEY0123456789ABCDEFG", "WORK", "T", "")])
    [att] = Capture.open(write(tmp_path, b"".join(messages)), use_index_cache=False).attachments
    assert att.key == b"SENTKEY0123456789ABCDEFG"[:16]


# -- order and damage ---------------------------------------------------------------------------


def dropped(messages: List[bytes], i: int) -> List[bytes]:
    return messages[:i] + messages[i + 1:]


def duplicated(messages: List[bytes], i: int) -> List[bytes]:
    return messages[:i + 1] + [messages[i]] + messages[i + 1:]


def exchanged(messages: List[bytes], i: int) -> List[bytes]:
    """Message i and the one after it exchange places (the last ATO's next is the LST)."""
    return messages[:i] + [messages[i + 1], messages[i]] + messages[i + 2:]


def _patched(message: bytes, at: int, new: bytes) -> bytes:
    return message[:at] + new + message[at + len(new):]


def _vtype_type_byte(message: bytes) -> int:
    """Where the type byte of the first observation's vtype (ATO field 3) lies."""
    return message.index(b"ATO\0\x00\x03") + 6


def _count_at(message: bytes) -> int:
    """Where the value of ATO field 1 (the observations it holds) lies: after its name, id, type and size."""
    return message.index(b"ATO\0\x00\x01") + 8


def _count(message: bytes) -> int:
    return struct.unpack_from(">i", message, _count_at(message))[0]


GARBLES: Dict[str, Callable[[bytes], bytes]] = {
    "a vtype's type": lambda m: _patched(m, _vtype_type_byte(m), b"\x08"),  # an int made a string
    "the count one short": lambda m: _patched(m, _count_at(m), struct.pack(">i", _count(m) - 1)),
    "the magic": lambda m: _patched(m, 4, b"\x00\x00\x00\x00"),
    "the size too large": lambda m: _patched(m, 0, struct.pack(">I", 0x7FFFFFF0)),
    "the size too small": lambda m: _patched(m, 0, struct.pack(">I", len(m) - 5)),
}


def garbled(how: str) -> Callable[[List[bytes], int], List[bytes]]:
    return lambda messages, i: messages[:i] + [GARBLES[how](messages[i])] + messages[i + 1:]


DAMAGES = {"lost": dropped, "duplicated": duplicated, **{f"garbled ({how})": garbled(how) for how in GARBLES}}
SIZES = (1, 2, 3, 7)


@pytest.mark.parametrize("atos", SIZES)
@pytest.mark.parametrize("damage", list(DAMAGES))
def test_every_ato_message_damaged_in_turn_never_gives_a_wrong_row(tmp_path, damage, atos):
    clean = attachment_messages(atos)
    sent = data_rows(read(write(tmp_path, b"".join(clean), "clean.rv"), "FAILFAST"))
    assert len(sent) == sum(COUNTS[i % len(COUNTS)] for i in range(atos))
    for i in range(FIRST_ATO, FIRST_ATO + atos):
        outcome = check_trust(write(tmp_path / f"{i}", b"".join(DAMAGES[damage](clean, i))), sent)
        if damage == "duplicated":  # the copy repeats the message before it: nothing is lost
            assert outcome["returned"] == sent and outcome["reports"] == []
        if damage.startswith("garbled"):  # the damaged message keeps its place: only its rows are lost
            first = sum(COUNTS[j % len(COUNTS)] for j in range(i - FIRST_ATO))
            assert outcome["returned"] == sent[:first] + sent[first + COUNTS[(i - FIRST_ATO) % len(COUNTS)]:]


@pytest.mark.parametrize("atos", SIZES)
def test_the_last_ato_message_after_its_lst_is_found_out(tmp_path, atos):
    clean = attachment_messages(atos)
    sent = rows_of(len(data_rows(read(write(tmp_path, b"".join(clean), "clean.rv"), "FAILFAST"))))
    outcome = check_trust(write(tmp_path / "late", b"".join(exchanged(clean, FIRST_ATO + atos - 1))), sent)
    assert outcome["returned"] == []  # a message is missing before the LST, and nothing says where


def test_an_ato_message_before_the_var_is_found_out(tmp_path):
    clean = attachment_messages(2)
    path = write(tmp_path, b"".join(exchanged(clean, FIRST_ATO - 1)))  # VAR and the first ATO exchanged
    for mode in ("FAILFAST", "DROPMALFORMED"):  # DROPMALFORMED: no definitions, nothing can be trusted
        with pytest.raises(CmiError, match="ATO message with no DAT and VAR before it"):
            read(path, mode)
    permissive = read(path, "PERMISSIVE")  # no definitions: the schema is the report column alone
    assert permissive.column_names == ["_corrupt_record"] and len(reports(permissive)) == 1


def test_a_copy_away_from_its_original_makes_every_place_unproven(tmp_path):
    clean = attachment_messages(3)
    copy_at_the_end = clean[:-1] + [clean[FIRST_ATO]] + clean[-1:]
    outcome = check_trust(write(tmp_path, b"".join(copy_at_the_end)), rows_of(10))
    assert outcome["returned"] == [] and "cannot be placed" in outcome["reports"][0]


def test_a_loss_and_a_copy_whose_observations_differ_make_every_place_unproven(tmp_path):
    """The LST counts right (one lost, one repeated), but the ATO messages hold 12 observations
    where the DAT declares 10."""
    clean = attachment_messages(3)  # ATO messages of 3, 5 and 2 observations
    path = write(tmp_path, b"".join(duplicated(dropped(clean, FIRST_ATO), FIRST_ATO)))
    outcome = check_trust(path, rows_of(10))
    assert outcome["returned"] == [] and "hold 12 observations, more than the 10" in outcome["reports"][0]


def test_a_capture_cut_before_the_lst_keeps_the_rows_before_the_cut(tmp_path):
    clean = attachment_messages(3)
    outcome = check_trust(write(tmp_path, b"".join(clean[:FIRST_ATO + 2])), rows_of(10))
    assert outcome["returned"] == rows_of(8)


def test_a_lost_message_that_held_no_observations_costs_none(tmp_path):
    clean = attachment_messages(2)  # HDR, MSG, DAT, VAR, ATO, ATO, LST
    with_index = clean[:-1] + [message([i32("ATI", 1, 4), i32("ATI", 2, 0)]), lst(5)]
    path = write(tmp_path, b"".join(dropped(with_index, len(with_index) - 2)))  # the ATI lost
    with pytest.raises(CmiError, match="its LST counts 5 messages, 4 were found"):
        read(path, "FAILFAST")
    for mode in ("PERMISSIVE", "DROPMALFORMED"):
        table = read(path, mode)
        assert data_rows(table) == rows_of(8) and reports(table) == []


def test_two_ato_messages_exchanged_are_read_in_capture_order(tmp_path):
    """The limit: RV numbers nothing, and two ATO messages exchanged contradict nothing the
    content says (counts, LST, DAT all agree). Their rows are read in the order captured; this
    pins that, so that a check added later shows here."""
    clean = attachment_messages(3)
    path = write(tmp_path, b"".join(exchanged(clean, FIRST_ATO)))
    rows = rows_of(10)
    for mode in ("FAILFAST", "PERMISSIVE", "DROPMALFORMED"):
        assert data_rows(read(path, mode)) == rows[3:8] + rows[:3] + rows[8:]

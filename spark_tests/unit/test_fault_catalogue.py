"""The fault catalogue (docs/damage-and-read-modes.md#the-fault-catalogue): each fault a capture can hold, and what a
read gives in each mode. FAILFAST raises a typed error naming the file, message, offset,
attachment and sequence number; PERMISSIVE returns the trusted rows and one row per damaged
stretch whose ``_corrupt_record`` says what was lost and where; DROPMALFORMED returns the
trusted rows only. Every test checks that no observation is lost without being reported: the
rows returned and the rows the reports count add up to the rows sent.

The captures are dmpmqmsg dumps written by the independent encoder (spark_tests/
independent_encoder.py, which shares no code with the package), then damaged here, byte by byte.
Rows go through the same views, plans and partitions Spark reads them through.
"""
from __future__ import annotations

import re
from typing import List, Optional

import pyarrow as pa
import pytest

import cmi_datasource
from cmi_datasource.errors import (CmiFormatError, CmiOptionError, DatasetLayoutError,
                                   IncompleteAttachmentError, TruncatedError, ValueConversionError)
from cmi_datasource.transports.mq.errors import DumpSyntaxError

from independent_encoder import Encoder, Var, dump_text, shuffled, with_duplicates

ROWS = 40
VARIABLES = [Var("X"), Var("NAME", "char", 8)]
OBS_LENGTH = 16
PER_MESSAGE = 5  # observations in each observation message when they do not straddle
KEY = bytes(range(1, 17))
KEY_HEX = KEY.hex().upper()


def rows_sent():
    return [(float(i), f"name{i}") for i in range(ROWS)]


def transmission(straddle: bool = False, rows=None, count_delta: int = 0):
    """Header, application message, sequenced 1..N, count; observation messages hold whole
    observations unless ``straddle`` (then 7 bytes more each, so observations straddle them)."""
    enc = Encoder()
    payload = 4 + OBS_LENGTH * PER_MESSAGE + (7 if straddle else 0)
    attachment = enc.dataset_attachment(KEY, "WORK", "CLASS", VARIABLES, rows or rows_sent(), max_payload=payload)
    msgs = enc.transmission(b"\x11" * 24, b"\x22" * 24, b"app", [attachment])
    if count_delta:
        msgs[-1].payload = enc.i32(len(attachment["payloads"]) + count_delta)
    return enc, msgs


def sequence_of(msgs, k: int) -> int:
    """The position in ``msgs`` of sequenced message k."""
    return next(i for i, m in enumerate(msgs) if m.correlid == KEY + k.to_bytes(4, "big") + bytes(4))


def observation_sequences(msgs) -> List[int]:
    """The sequence numbers of the observation messages (record type 3)."""
    return [k for k in range(1, 100) if any(m.correlid == KEY + k.to_bytes(4, "big") + bytes(4)
                                           and m.payload[:4] == (3).to_bytes(4, "little") for m in msgs)]


def write(tmp_path, text: str, name: str = "capture.dmp") -> str:
    path = tmp_path / name
    path.write_bytes(text.encode("latin-1") if isinstance(text, str) else text)
    return str(path)


def read(path: str, mode: str, **options) -> pa.Table:
    """The dataset view as Spark reads it: schema, plan, each partition's batches."""
    return cmi_datasource.read(path, mode=mode, **options)


def data_rows(table: pa.Table):
    rows = [(r["X"], r["NAME"]) for r in table.to_pylist()]
    return [r for r in rows if r != (None, None)]


def reports(table: pa.Table) -> List[str]:
    if "_corrupt_record" not in table.column_names:
        return []
    return [t for t in table.column("_corrupt_record").to_pylist() if t is not None]


def lost_count(text: str) -> Optional[int]:
    found = re.search(r"observations? \d+(?: to \d+)? lost(?: \((\d+)\))?", text)
    if found is None:
        found = re.search(r"(\d+) observations? lost", text)
        return int(found.group(1)) if found else None
    return int(found.group(1)) if found.group(1) else 1


def check_modes(path: str, surviving, failfast_error, report_parts: List[List[str]]):
    """FAILFAST raises ``failfast_error``; PERMISSIVE gives ``surviving`` plus one report row per
    entry of ``report_parts`` (each text containing those parts); DROPMALFORMED gives
    ``surviving``; and surviving + reported = sent."""
    with pytest.raises(failfast_error) as raised:
        read(path, "FAILFAST")
    permissive = read(path, "PERMISSIVE")
    assert data_rows(permissive) == surviving
    texts = reports(permissive)
    assert len(texts) == len(report_parts), texts
    for text, parts in zip(texts, report_parts):
        for part in parts:
            assert part in text, (part, text)
    if report_parts:
        counted = [lost_count(t) for t in texts]
        assert None not in counted, texts
        assert len(surviving) + sum(counted) == ROWS, (len(surviving), texts)
    dropped = read(path, "DROPMALFORMED")
    assert "_corrupt_record" not in dropped.column_names
    assert data_rows(dropped) == surviving and dropped.num_rows == len(surviving)
    return raised.value, texts


def without(rows, first: int, count: int):
    return rows[:first] + rows[first + count:]


def test_a_clean_capture_reads_alike_in_every_mode(tmp_path):
    _, msgs = transmission()
    path = write(tmp_path, dump_text(msgs))
    assert data_rows(read(path, "FAILFAST")) == rows_sent()
    permissive = read(path, "PERMISSIVE")
    assert permissive.column_names == ["X", "NAME", "_corrupt_record"] and reports(permissive) == []
    assert data_rows(read(path, "DROPMALFORMED")) == rows_sent()


def test_dropped_message_whole_observations_per_message(tmp_path):
    _, msgs = transmission()
    obs = observation_sequences(msgs)
    k = obs[2]  # the third observation message: observations 11 to 15
    del msgs[sequence_of(msgs, k)]
    path = write(tmp_path, dump_text(msgs))
    error, _ = check_modes(path, without(rows_sent(), 10, 5), IncompleteAttachmentError,
                           [[f"sequenced message {k} is missing from the capture", "observations 11 to 15 lost (5)",
                             f"attachment {KEY_HEX}", f"sequence {k}", "WORK.CLASS"]])
    assert error.attachment == KEY_HEX and f"missing [{k}]" in error.problem


def test_dropped_message_when_observations_straddle_places_the_rest_from_the_end(tmp_path):
    _, msgs = transmission(straddle=True)
    obs = observation_sequences(msgs)
    k = obs[2]
    del msgs[sequence_of(msgs, k)]
    path = write(tmp_path, dump_text(msgs))
    # 40 observations of 16 bytes in messages of 87 data bytes: the two before the gap hold bytes
    # [0, 174), 10 whole observations. The five after it hold the stream's last 379 bytes, which
    # start at 640 - 379 = 261, inside observation 17: observations 18 to 40 are proven from the
    # end, 11 to 17 are lost.
    check_modes(path, rows_sent()[:10] + rows_sent()[17:], IncompleteAttachmentError,
                [[f"sequenced message {k} is missing", "observations 11 to 17 lost (7)"]])


def test_two_gaps_lose_what_lies_between_them_even_in_whole_observation_messages(tmp_path):
    """Messages between two holes cannot be placed: a missing message's length is unknown, so
    that they hold whole observations proves nothing about where they start."""
    _, msgs = transmission()
    obs = observation_sequences(msgs)
    for k in (obs[5], obs[2]):  # observations 11 to 15 and 26 to 30
        del msgs[sequence_of(msgs, k)]
    path = write(tmp_path, dump_text(msgs))
    check_modes(path, rows_sent()[:10] + rows_sent()[30:], IncompleteAttachmentError,
                [[f"sequenced message {obs[2]} is missing", "and 1 more fault after it",
                  "the 2 observation messages present after it cannot be placed", "observations 11 to 30 lost (20)"]])


def test_identical_duplicate_loses_nothing_in_any_mode(tmp_path):
    _, msgs = transmission()
    path = write(tmp_path, dump_text(with_duplicates(msgs, [sequence_of(msgs, observation_sequences(msgs)[1])])))
    for mode in ("FAILFAST", "PERMISSIVE", "DROPMALFORMED"):
        table = read(path, mode)
        assert data_rows(table) == rows_sent() and reports(table) == []


def test_conflicting_duplicate_makes_a_gap(tmp_path):
    _, msgs = transmission()
    k = observation_sequences(msgs)[1]  # observations 6 to 10
    original = msgs[sequence_of(msgs, k)]
    copy = type(original)(original.msgtype, original.correlid, original.payload[:-1] + b"\x01",
                          original.encoding, original.ccsid, b"AMQ COPY" + bytes(16))
    path = write(tmp_path, dump_text(msgs + [copy]))
    error, _ = check_modes(path, without(rows_sent(), 5, 5), IncompleteAttachmentError,
                           [[f"sequenced message {k} its duplicates conflict", "observations 6 to 10 lost (5)"]])
    assert "conflicting duplicates" in error.problem


def test_reordered_messages_lose_nothing(tmp_path):
    _, msgs = transmission()
    path = write(tmp_path, dump_text(shuffled(msgs, seed=3)))
    for mode in ("FAILFAST", "PERMISSIVE", "DROPMALFORMED"):
        assert data_rows(read(path, mode)) == rows_sent()


def test_file_cut_inside_a_line(tmp_path):
    _, msgs = transmission()
    text = dump_text(msgs)
    last_obs = observation_sequences(msgs)[-1]
    # Cut inside the second data line of the last observation message (the count message is lost too).
    start = text.index("\nX ", text.index("* Index %d\n" % (sequence_of(msgs, last_obs) + 1))) + 1
    cut = text.index("\nX ", start) + 1 + 7
    path = write(tmp_path, text[:cut])
    error, _ = check_modes(path, rows_sent()[:35], DumpSyntaxError,
                           [[f"sequence {last_obs}", "not an even run of hex digits",
                             "observations 36 to 40 lost (5)"]])
    assert error.attachment == KEY_HEX and error.sequence == last_obs and error.offset == cut - 7


@pytest.mark.parametrize("damage", ["non-hex", "odd-length"])
def test_damaged_hex_in_one_message(tmp_path, damage):
    _, msgs = transmission()
    k = observation_sequences(msgs)[3]  # observations 16 to 20
    text = dump_text(msgs)
    line = text.index("\nX ", text.index("* Index %d\n" % (sequence_of(msgs, k) + 1))) + 1
    bad = "X 0G" if damage == "non-hex" else "X "  # "X 0G...": a G; "X ...": one digit dropped
    damaged = text[:line] + bad + text[line + 3:]
    path = write(tmp_path, damaged)
    error, texts = check_modes(path, without(rows_sent(), 15, 5), DumpSyntaxError,
                               [[f"sequence {k}", "observations 16 to 20 lost (5)", f"file offset {line}"]])
    assert error.offset == line and error.sequence == k and error.message_number == sequence_of(msgs, k) + 1


def test_count_message_one_too_many_loses_nothing_but_failfast_says_it(tmp_path):
    _, msgs = transmission(count_delta=1)
    path = write(tmp_path, dump_text(msgs))
    check_modes(path, rows_sent(), IncompleteAttachmentError, [])


def test_count_message_one_too_few_loses_nothing_but_failfast_says_it(tmp_path):
    _, msgs = transmission(count_delta=-1)
    path = write(tmp_path, dump_text(msgs))
    check_modes(path, rows_sent(), IncompleteAttachmentError, [])


def test_missing_count_message_and_last_message(tmp_path):
    _, msgs = transmission()
    last_obs = observation_sequences(msgs)[-1]
    del msgs[-1]  # the count message
    del msgs[sequence_of(msgs, last_obs)]
    path = write(tmp_path, dump_text(msgs))
    check_modes(path, rows_sent()[:35], IncompleteAttachmentError,
                [["the observation stream ends early", "observations 36 to 40 lost (5)"]])


def test_observation_length_shorter_than_the_variables(tmp_path):
    enc, msgs = transmission()
    k = 1  # the dataset definition: version, type, label, nobs, nvars, obs_length
    m = msgs[sequence_of(msgs, k)]
    at = m.payload.index(enc.long(ROWS) + enc.long(2) + enc.long(OBS_LENGTH)) + 8
    m.payload = m.payload[:at] + enc.long(OBS_LENGTH - 1) + m.payload[at + 4:]
    path = write(tmp_path, dump_text(msgs))
    with pytest.raises(DatasetLayoutError, match="observation length is 15"):
        read(path, "FAILFAST")
    permissive = read(path, "PERMISSIVE")  # no schema can be known: the report alone
    assert permissive.column_names == ["_corrupt_record"] and permissive.num_rows == 1
    [text] = reports(permissive)
    assert "definitions cannot be read" in text and "observation length is 15" in text
    assert f"attachment {KEY_HEX}" in text
    with pytest.raises(DatasetLayoutError, match="nothing can be trusted"):
        read(path, "DROPMALFORMED")


def test_bad_bytes_for_the_ccsid_lose_that_observation_only(tmp_path):
    rows = rows_sent()
    rows[7] = (7.0, "na\udcffme7")  # a lone continuation byte: not UTF-8
    enc = Encoder()
    enc.text = lambda s: s.encode("utf-8", "surrogateescape")
    attachment = enc.dataset_attachment(KEY, "WORK", "CLASS", VARIABLES, rows, max_payload=4 + OBS_LENGTH * 5)
    msgs = enc.transmission(b"\x11" * 24, b"\x22" * 24, b"app", [attachment])
    path = write(tmp_path, dump_text(msgs))
    check_modes(path, without(rows_sent(), 7, 1), ValueConversionError,
                [["variable NAME, observation 8", "observation 8 lost", f"attachment {KEY_HEX}"]])


def test_two_attachments_sharing_a_key(tmp_path):
    enc, msgs = transmission()
    second = enc.message(100000, b"\x33" * 24, enc.header_payload(b"\x33" * 24, b"\x44" * 24, [dict(
        type=1, key=KEY, q1="WORK", q2="OTHER", description="")]))
    path = write(tmp_path, dump_text(msgs + [second]))
    with pytest.raises(IncompleteAttachmentError, match="listed by two header messages"):
        read(path, "FAILFAST")
    permissive = read(path, "PERMISSIVE", attachment=KEY_HEX)
    assert permissive.column_names == ["_corrupt_record"]
    assert all("none of its messages can be told to be its own" in t for t in reports(permissive))
    with pytest.raises(IncompleteAttachmentError, match="nothing can be trusted"):
        read(path, "DROPMALFORMED", attachment=KEY_HEX)


def test_header_naming_an_attachment_that_never_comes(tmp_path):
    enc, msgs = transmission()
    path = write(tmp_path, dump_text(msgs[:1]))  # the header alone
    with pytest.raises(IncompleteAttachmentError, match="count message is missing"):
        read(path, "FAILFAST")
    [text] = reports(read(path, "PERMISSIVE"))
    assert "no sequenced messages" in text and f"attachment {KEY_HEX}" in text
    with pytest.raises(CmiFormatError, match="nothing can be trusted"):
        read(path, "DROPMALFORMED")


def test_the_corrupt_record_column_can_be_renamed_but_not_onto_a_variable(tmp_path):
    _, msgs = transmission()
    del msgs[sequence_of(msgs, observation_sequences(msgs)[0])]
    path = write(tmp_path, dump_text(msgs))
    table = read(path, "PERMISSIVE", columnNameOfCorruptRecord="damage")
    assert table.column_names == ["X", "NAME", "damage"] and len([t for t in table.column("damage") if t.is_valid]) == 1
    with pytest.raises(CmiOptionError, match="is a column of view dataset"):
        read(path, "PERMISSIVE", columnNameOfCorruptRecord="NAME")
    with pytest.raises(CmiOptionError, match="did you mean 'permissive'"):
        read(path, "PERMISIVE")


def test_missing_mq_segment(tmp_path):
    """An observation message sent in MQ segments, one segment lost: the message is a gap."""
    import dataclasses

    from cmi_datasource.transports.mq.mqmd import MQMD, MQMF_LAST_SEGMENT, MQMF_SEGMENT

    from conftest import dump_messages

    _, msgs = transmission()
    k = observation_sequences(msgs)[4]  # observations 21 to 25

    def mqmd(m) -> MQMD:
        return MQMD(version=2, msg_type=m.msgtype, encoding=m.encoding, ccsid=m.ccsid, correl_id=m.correlid,
                    msg_id=m.msgid)
    pairs = []
    for m in msgs:
        if m.correlid != KEY + k.to_bytes(4, "big") + bytes(4):
            pairs.append((mqmd(m), m.payload))
            continue
        for offset in range(0, len(m.payload), 30):
            last = offset + 30 >= len(m.payload)
            segment = dataclasses.replace(mqmd(m), group_id=b"\x07" * 24, msg_seq_number=1, offset=offset,
                                          msg_flags=MQMF_SEGMENT | (MQMF_LAST_SEGMENT if last else 0))
            if offset != 30:  # the second segment is lost
                pairs.append((segment, m.payload[offset:offset + 30]))
    path = dump_messages(tmp_path, pairs)
    error, _ = check_modes(path, without(rows_sent(), 20, 5), IncompleteAttachmentError,
                           [[f"sequenced message {k} was segmented and cannot be joined",
                             "observations 21 to 25 lost (5)"]])
    assert "segmented" in error.problem


# -- the files view ---------------------------------------------------------------------------------

FILE_KEY, BROKEN_KEY = b"\xf1" * 16, b"\xf2" * 16


def read_view(path: str, view_name: str, mode: str) -> pa.Table:
    return cmi_datasource.read(path, view=view_name, mode=mode)


def files_capture(damage: str):
    """Two text files; the second loses a message (``dropped``) or has a record length that points
    past its message (``lying``)."""
    enc = Encoder()
    good = enc.file_attachment(FILE_KEY, "good.txt", [b"alpha", b"beta"])
    broken = enc.file_attachment(BROKEN_KEY, "broken.txt", [b"x" * 30, b"y" * 30, b"z" * 30], max_payload=40)
    msgs = enc.transmission(b"\x11" * 24, b"\x22" * 24, b"app", [good, broken])
    second = next(i for i, m in enumerate(msgs) if m.correlid == BROKEN_KEY + (2).to_bytes(4, "big") + bytes(4))
    if damage == "dropped":
        del msgs[second]
    else:
        msgs[second].payload = enc.long(999) + msgs[second].payload[4:]
    return msgs


@pytest.mark.parametrize("damage, error", [("dropped", IncompleteAttachmentError), ("lying", TruncatedError)])
def test_files_view_in_each_mode(tmp_path, damage, error):
    path = write(tmp_path, dump_text(files_capture(damage)))
    with pytest.raises(error) as raised:
        read_view(path, "files", "FAILFAST")
    assert raised.value.attachment == BROKEN_KEY.hex().upper()
    permissive = read_view(path, "files", "PERMISSIVE").to_pylist()
    assert [(r["name"], r["text"]) for r in permissive] == [("good.txt", "alpha\nbeta\n"), ("broken.txt", None)]
    report = permissive[1]["_corrupt_record"]
    assert report.startswith("broken.txt: ") and BROKEN_KEY.hex().upper() in report
    assert permissive[0]["_corrupt_record"] is None
    dropped = read_view(path, "files", "DROPMALFORMED")
    assert dropped.column("name").to_pylist() == ["good.txt"] and "_corrupt_record" not in dropped.column_names


def test_the_inventory_views_never_fail_on_damage(tmp_path):
    _, msgs = transmission()
    k = observation_sequences(msgs)[3]
    text = dump_text(msgs)
    line = text.index("\nX ", text.index("* Index %d\n" % (sequence_of(msgs, k) + 1))) + 1
    path = write(tmp_path, text[:line] + "X 0G" + text[line + 4:])
    for mode in ("FAILFAST", "PERMISSIVE", "DROPMALFORMED"):
        messages = read_view(path, "messages", mode).to_pylist()
        assert [m["index"] for m in messages] == list(range(1, len(msgs) + 1))
        [damaged] = [m for m in messages if m["problem"]]
        assert damaged["index"] == sequence_of(msgs, k) + 1 and damaged["sequence"] == k
        [attachment] = read_view(path, "attachments", mode).to_pylist()
        assert attachment["complete"] is False and "not an even run of hex digits" in attachment["problem"]


# -- any mix of faults: what is returned is right, and what is not is reported -----------------------

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402


def lost_in_all(texts: List[str]) -> Optional[int]:
    """How many observations the reports say were lost, when they say."""
    if not texts:
        return 0
    counts = [lost_count(t) for t in texts]
    return None if None in counts else sum(counts)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(straddle=st.booleans(), drop=st.sets(st.integers(0, 7), max_size=3),
       garble=st.sets(st.integers(0, 7), max_size=2), shuffle=st.booleans(), repeat=st.sets(st.integers(0, 7)))
def test_any_mix_of_faults_returns_only_right_rows_and_reports_the_rest(tmp_path_factory, straddle, drop, garble,
                                                                         shuffle, repeat):
    _, msgs = transmission(straddle=straddle)
    obs = observation_sequences(msgs)
    repeated = [msgs[sequence_of(msgs, obs[i])] for i in sorted(repeat) if i < len(obs)]
    text_of = {}
    for i in sorted(garble - drop):
        if i < len(obs):
            text_of[sequence_of(msgs, obs[i])] = True
    dropped = {sequence_of(msgs, obs[i]) for i in drop if i < len(obs)}
    kept = [m for i, m in enumerate(msgs) if i not in dropped]
    garbled_ids = {msgs[i].msgid for i in text_of}
    order = shuffled(kept + repeated, seed=1) if shuffle else kept + repeated
    text = dump_text(order)
    for msgid in garbled_ids:  # a G in the first data line of each garbled message (not its copies)
        at = text.index("A MSI " + msgid.hex().upper())
        line = text.index("\nX ", at) + 1
        text = text[:line] + "X 0G" + text[line + 4:]
    path = write(tmp_path_factory.mktemp("mix"), text)
    permissive = read(path, "PERMISSIVE")
    returned = data_rows(permissive)
    sent = rows_sent()
    assert all(row in sent for row in returned)  # every row returned is right ...
    assert [sent.index(r) for r in returned] == sorted(sent.index(r) for r in returned)  # ... and in order
    texts = reports(permissive)
    damaged = bool(dropped) or any(m.msgid in garbled_ids and m not in repeated for m in kept)
    assert bool(texts) == (len(returned) < ROWS)
    counted = lost_in_all(texts)
    assert counted is not None and len(returned) + counted == ROWS, texts  # ... and the rest is reported
    assert data_rows(read(path, "DROPMALFORMED")) == returned
    if not damaged:
        assert returned == sent

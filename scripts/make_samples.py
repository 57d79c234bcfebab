"""Regenerate sample_queues/: small dmpmqmsg dumps of CMI traffic, byte-stable.

    .venv/bin/python scripts/make_samples.py [out_dir]

Every dump is written by the project's own reverse codec with fixed ids and times,
so running this again gives identical files (the tests check that).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import math
import os
import sys

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cmi_datasource.charsets import code_page  # noqa: E402
from cmi_datasource.cmi.correl import (MSGTYPE_CMI_HEADER, MSGTYPE_CMI_SUBORDINATE, count_correl_id,  # noqa: E402
                                       sequence_correl_id)
from cmi_datasource.cmi.header import ATTACHMENT_TEXT_FILE, AttachmentEntry, CmiHeader, build_header  # noqa: E402
from cmi_datasource.cmi.wire import FieldWriter, WireFormat  # noqa: E402
from cmi_datasource.engine.write import (DatasetToWrite, FileToWrite, WriteOptions, build_messages,  # noqa: E402
                                         write_attachments_dump)
from cmi_datasource.transports import capture_format  # noqa: E402
from cmi_datasource.payload.external_file import file_payloads, text_records  # noqa: E402
from cmi_datasource.transports.mq.dmpmqmsg import write_dump  # noqa: E402
from cmi_datasource.transports.mq.mqmd import MQMD  # noqa: E402

CREATED = "Sat Jan  1 00:00:00 2000"


def field(name, arrow_type, label="", fmt=None, sas_length=None):
    metadata = {"label": label}
    if fmt:
        metadata["format"] = fmt
    if sas_length:
        metadata["sas_length"] = str(sas_length)
    return pa.field(name, arrow_type, metadata=metadata)


def mixed_types_table() -> pa.Table:
    schema = pa.schema([
        field("ID", pa.int64(), "Customer id", "8."),
        field("NAME", pa.string(), "Customer name", "$20.", sas_length=20),
        field("CITY", pa.string(), "City"),
        field("BALANCE", pa.float64(), "Account balance", "COMMA12.2"),
        field("SCORE", pa.float64(), "Risk score (4-byte numeric)", "BEST8.", sas_length=4),
        field("OPENED", pa.date32(), "Date opened", "DATE9."),
        field("UPDATED", pa.timestamp("us"), "Last update", "DATETIME20."),
        field("CUTOFF", pa.time64("us"), "Daily cut-off", "TIME8."),
        field("ACTIVE", pa.bool_(), "Active flag", "1."),
    ])
    return pa.table({
        "ID": [1, 2, 3, 4, 5, 6],
        "NAME": ["Ada Lovelace", "Grace Hopper", "Jürgen Müller", "Zoë Saldaña", None, "Søren Kierkegaard"],
        "CITY": ["London", "New York", "München", "São Paulo", "", "København"],
        "BALANCE": [1234.56, -98.5, None, 1e9, 0.0, 42.0],
        "SCORE": [0.5, 0.25, 0.125, None, 1.0, 3.0],
        "OPENED": [dt.date(1815, 12, 10), dt.date(1906, 12, 9), None, dt.date(1978, 6, 12),
                   dt.date(1960, 1, 1), dt.date(2024, 2, 29)],
        "UPDATED": [dt.datetime(2024, 1, 15, 9, 30), dt.datetime(1999, 12, 31, 23, 59, 59), None,
                    dt.datetime(2000, 2, 29, 12, 0, 0, 250000), dt.datetime(1960, 1, 1), dt.datetime(2026, 11, 21, 8)],
        "CUTOFF": [dt.time(17, 0), dt.time(16, 30), dt.time(0, 0), None, dt.time(23, 59, 59), dt.time(12)],
        "ACTIVE": [True, False, True, None, True, False],
    }, schema=schema)


def latin1_table() -> pa.Table:
    schema = pa.schema([field("REGION", pa.string(), "Region"), field("SALES", pa.float64(), "Sales", "DOLLAR12.2"),
                        field("MONTH", pa.date32(), "Month", "MONYY7.")])
    return pa.table({"REGION": ["Nord", "Süd", "Île-de-France", "Ørestad"],
                     "SALES": [1500.25, 980.0, None, 12.5],
                     "MONTH": [dt.date(2024, 1, 1), dt.date(2024, 2, 1), dt.date(2024, 3, 1), None]}, schema=schema)


def zos_table() -> pa.Table:
    schema = pa.schema([field("ACCOUNT", pa.string(), "Account number", sas_length=10),
                        field("AMOUNT", pa.float64(), "Amount", "12.2"),
                        field("POSTED", pa.timestamp("us"), "Posted at", "DATETIME19."),
                        field("BRANCH", pa.float64(), "Branch (3-byte numeric)", sas_length=3)])
    return pa.table({"ACCOUNT": ["0012345678", "0098765432", "0055555555"],
                     "AMOUNT": [-118.625, 1.0, None],
                     "POSTED": [dt.datetime(2023, 3, 1, 8, 15), None, dt.datetime(1987, 10, 19, 16)],
                     "BRANCH": [101.0, 2048.0, None]}, schema=schema)


def seed000_external_file(path: str) -> None:
    """SAS's external-file example (docs/spec/cmi.md#an-example-on-a-queue), byte for byte: correlids
    1111.., 2222.., 3333.., a 3-message text file."""
    codepage = code_page(819)
    wire = WireFormat(">", 4, True)
    key = bytes.fromhex("33" * 16)
    header = CmiHeader(bytes.fromhex("11" * 16) + bytes(8), 1, bytes(24), bytes.fromhex("22" * 16) + bytes(8),
                       (AttachmentEntry(ATTACHMENT_TEXT_FILE, key + bytes(8), "FILENAME", "d:\\mytext.txt",
                                        "Text file...", 0, 0),), wire)
    text = "First line of the text file.\nSecond line.\nThird and last line.\n"
    records = text_records(text, codepage)
    prologue = file_payloads([], 80, len(codepage.encode(text)), wire, 32768)[0]
    body = [file_payloads(records[:2], 80, 0, wire, 32768)[1], file_payloads(records[2:], 80, 0, wire, 32768)[1]]
    sequenced = [prologue] + body

    def md(msg_type, correl, n):
        return MQMD(version=2, msg_type=msg_type, encoding=273, ccsid=819, correl_id=correl,
                    msg_id=bytes([n]) * 24, put_date="20000101", put_time="00000000", persistence=1,
                    priority=0, format="        ")

    messages = [(md(MSGTYPE_CMI_HEADER, header.header_correl_id, 1), build_header(header, codepage)),
                (md(MSGTYPE_CMI_SUBORDINATE, header.message_correl_id, 2),
                 b"This is the actual application message.")]
    for k, payload in enumerate(sequenced, start=1):
        messages.append((md(MSGTYPE_CMI_SUBORDINATE, sequence_correl_id(key, k), 2 + k), payload))
    messages.append((md(MSGTYPE_CMI_SUBORDINATE, count_correl_id(key), 9), FieldWriter(wire).int32(3).getvalue()))
    with open(path, "wb") as out:
        write_dump(out, messages, queue_manager="QM1", queue="SAS.CMI.QUEUE", created=CREATED)


def browsed_table() -> pa.Table:
    return pa.table({
        "ORDER": pa.array([float(1000 + i) for i in range(20)]),
        "ITEM": pa.array([["bolt", "nut", "washer", "gear"][i % 4] for i in range(20)]),
        "QTY": pa.array([float((i * 7) % 13) for i in range(20)]),
    })


def daily_sales_table() -> pa.Table:
    """Half a year of sales in three regions: a weekly rhythm and a slow rise, for a chart."""
    regions = ["NORTH", "SOUTH", "WEST"]
    days = [dt.date(2026, 1, 1) + dt.timedelta(days=d) for d in range(181)]
    rows = [(day, r, region) for d, day in enumerate(days) for r, region in enumerate(regions)]
    schema = pa.schema([field("DAY", pa.date32(), "Business day", "DATE9."),
                        field("REGION", pa.string(), "Sales region", "$8.", sas_length=8),
                        field("AMOUNT", pa.float64(), "Net sales", "DOLLAR12.2"),
                        field("UNITS", pa.float64(), "Units sold", "8.")])
    amount = [round(1000 + 250 * r + 2.5 * (day - days[0]).days
                    + 300 * math.sin(2 * math.pi * (day.toordinal() % 7) / 7)
                    + (day.toordinal() * 37 + r * 11) % 101, 2) for day, r, _ in rows]
    return pa.table({"DAY": [day for day, _, _ in rows], "REGION": [region for _, _, region in rows],
                     "AMOUNT": amount, "UNITS": [float(int(a // 25)) for a in amount]}, schema=schema)


def inventory_table() -> pa.Table:
    schema = pa.schema([field("PART", pa.string(), "Part number", sas_length=8),
                        field("WAREHOUSE", pa.string(), "Warehouse", sas_length=12),
                        field("ON_HAND", pa.float64(), "Units on hand", "8."),
                        field("COUNTED", pa.timestamp("us"), "Counted at", "DATETIME19.")])
    warehouses = ["Zürich", "Göteborg", "Kraków", "Lyon"]
    return pa.table({"PART": [f"P-{1000 + i}" for i in range(40)],
                     "WAREHOUSE": [warehouses[i % 4] for i in range(40)],
                     "ON_HAND": [float((i * 53) % 400) if i % 9 else None for i in range(40)],
                     "COUNTED": [dt.datetime(2026, 11, 20, 6, 0) + dt.timedelta(minutes=7 * i) for i in range(40)]},
                    schema=schema)


def returns_table() -> pa.Table:
    schema = pa.schema([field("RETURN_ID", pa.float64(), "Return id", "8."),
                        field("DAY", pa.date32(), "Returned on", "DATE9."),
                        field("REASON", pa.string(), "Reason", sas_length=16),
                        field("AMOUNT", pa.float64(), "Refund", "DOLLAR10.2")])
    reasons = ["damaged", "wrong size", "late delivery", "changed mind"]
    return pa.table({"RETURN_ID": [float(5000 + i) for i in range(120)],
                     "DAY": [dt.date(2026, 1, 1) + dt.timedelta(days=(i * 3) % 181) for i in range(120)],
                     "REASON": [reasons[(i * 7) % 4] for i in range(120)],
                     "AMOUNT": [round(10 + (i * 17) % 190 + 0.99, 2) for i in range(120)]}, schema=schema)


def nightly_batch(path: str) -> None:
    """One night's queue as a user would dump it: three senders, one transfer of which lost a
    message. The sales data set with a notes file (UTF-8, little-endian), an inventory from z/OS
    (EBCDIC CCSID 37, Encoding 785, S/390 floats), and returns whose second observation message
    never arrived, so that attachment is incomplete. Put times are spread over the night, one
    second a message, as a real queue would show them."""
    transfers = [
        (dt.datetime(2026, 11, 20, 22, 0, 0),
         build_messages([DatasetToWrite(daily_sales_table(), "FIN", "DAILY_SALES", label="Daily sales by region",
                                        description="Sales, first half of 2026")],
                        [FileToWrite("sales_notes.txt", text="Sales extract, first half of 2026.\n"
                                     "Amounts are net of returns; see FIN.RETURNS.\nRegions: NORTH, SOUTH, WEST.\n")],
                        WriteOptions(deterministic_seed="nightly/sales", max_message_bytes=2048,
                                     application_message="Nightly sales extract"))),
        (dt.datetime(2026, 11, 20, 22, 5, 0),
         build_messages([DatasetToWrite(inventory_table(), "PROD", "INVENTORY", description="Inventory from z/OS")],
                        options=WriteOptions(deterministic_seed="nightly/inventory", encoding=785, ccsid=37,
                                             max_message_bytes=1024, application_message="Inventory count"))),
        (dt.datetime(2026, 11, 20, 22, 10, 0),
         build_messages([DatasetToWrite(returns_table(), "FIN", "RETURNS", description="Returns, first half of 2026")],
                        options=WriteOptions(deterministic_seed="nightly/returns", max_message_bytes=1024,
                                             application_message="Returns extract"))),
    ]
    # FIN.RETURNS lost its sequence 4, the second observation message (after the header and the
    # application message, sequence k is message k + 1 counting from 0).
    lost = 4 + 1
    messages = []
    for start, sent in transfers:
        if sent is transfers[-1][1]:
            sent = sent[:lost] + sent[lost + 1:]
        epoch = start.replace(tzinfo=dt.timezone.utc).timestamp()
        messages += [dataclasses.replace(m, put_time=epoch + n) for n, m in enumerate(sent)]
    with open(path, "wb") as out:
        capture_format("dmpmqmsg").write(out, messages, deterministic=True, queue_manager="QM1",
                                         queue="SAS.CMI.NIGHTLY")


def sapdb_session(path: str) -> None:
    """A SAP DB / MaxDB session as RTE frames logged back to back (docs/spec/sapdb.md): connect, the spec's
    two examples (a dbs command with a typing error; a parse and execute of SELECT ... INTO),
    a mass insert of three rows, commit and release. The parse replies name their columns (a
    columnnames part: the select's outputs, the insert's parameters)."""
    from cmi_datasource.transports.sapdb.packet import (COLUMN_NAME, PARAM_INFO, PartSpec, SegmentSpec, build_packet,
                                                        pack)
    from cmi_datasource.transports.sapdb.rte import rte_frame

    def info(io_type, data_type, length, in_out_len, bufpos, frac=0):
        return pack(PARAM_INFO, {"mode": 2, "io_type": io_type, "data_type": data_type, "frac": frac,
                                 "length": length, "in_out_len": in_out_len, "bufpos": bufpos}, 2)

    def column_names(*names):
        return PartSpec(2, b"".join(pack(COLUMN_NAME, {"name_len": len(n)}, 2) + n for n in names), len(names))

    def command(mess_type, *parts, **fields):
        return build_packet([SegmentSpec({"mess_type": mess_type, "with_info": True, **fields}, list(parts))],
                            varpart_size=28176)

    def answer(*parts, **fields):
        return build_packet([SegmentSpec({"segm_kind": 2, **fields}, list(parts))], varpart_size=32120)

    select = b"SELECT NUMB, TIME INTO :NUMB, :TIME FROM T WHERE KEYCOL = :KEYC"
    parse_id = bytes.fromhex("00000019 00000601 3C000000")
    insert = b"INSERT INTO ORDERS (ORDERNO, ITEM, QTY) VALUES (?, ?, ?)"
    insert_id = bytes.fromhex("00000019 00000701 23460000")
    insert_info = info(0, 0, 10, 7, 1) + info(0, 2, 8, 9, 8) + info(0, 0, 5, 5, 17, frac=2)
    rows = b"".join(b"\0" + number + b" " + item.ljust(8) + b"\0" + qty for number, item, qty in (
        (bytes.fromhex("C4 10 01 00 00 00"), b"bolt", bytes.fromhex("C2 12 50 00")),
        (bytes.fromhex("C4 10 02 00 00 00"), b"nut", bytes.fromhex("C1 70 00 00")),
        (bytes.fromhex("C4 10 03 00 00 00"), b"washer", bytes.fromhex("C2 10 00 00"))))
    connect = b"\x00\x02" + (40).to_bytes(2, "little") + bytes(4) + (32768).to_bytes(4, "little") * 2 \
        + (131072).to_bytes(4, "little") + (4096).to_bytes(4, "little") + b"MAXDB   " + b"        "
    frames = [
        rte_frame(61, connect), rte_frame(62, connect),
        rte_frame(63, command(2, PartSpec(3, b"SELECT EMPNAME, EMPNO FROM EMP WHRE FIRST_NAME = 'Martin'"))),
        rte_frame(64, answer(PartSpec(6, b"Invalid end of SQL statement"), returncode=-3014, sqlstate=b"42000",
                             errorpos=37, function_code=4)),
        rte_frame(63, command(3, PartSpec(3, select))),
        rte_frame(64, answer(PartSpec(10, parse_id), PartSpec(14, info(0, 2, 8, 9, 1) + info(1, 0, 12, 8, 1)
                                                              + info(1, 11, 8, 9, 9), arg_count=3),
                             column_names(b"NUMB", b"TIME"), function_code=244)),
        rte_frame(63, command(13, PartSpec(10, parse_id), PartSpec(5, b" keyval1 "))),
        rte_frame(64, answer(PartSpec(12, bytes.fromhex("00C11000000000")),
                             PartSpec(5, bytes.fromhex("00C44711 00000000 20303031 34333934 34")),
                             function_code=244)),
        rte_frame(63, command(3, PartSpec(3, insert), mass_cmd=True)),
        rte_frame(64, answer(PartSpec(10, insert_id), PartSpec(14, insert_info, arg_count=3),
                             column_names(b"ORDERNO", b"ITEM", b"QTY"), function_code=1003)),
        rte_frame(63, command(13, PartSpec(10, insert_id), PartSpec(5, rows, arg_count=3), mass_cmd=True)),
        rte_frame(64, answer(PartSpec(12, bytes.fromhex("00C13000000000")), function_code=1003)),
        rte_frame(63, command(2, PartSpec(3, b"COMMIT WORK"))),
        rte_frame(64, answer(function_code=54)),
        rte_frame(66, b""),
    ]
    with open(path, "wb") as out:
        out.write(b"".join(frames))


def main(out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)

    def dump(name, datasets=(), files=(), format="dmpmqmsg", **options):
        header = {"queue_manager": "QM1", "queue": "SAS.CMI.QUEUE"} if format == "dmpmqmsg" else {}
        with open(os.path.join(out_dir, name), "wb") as out:
            write_attachments_dump(out, datasets, files, WriteOptions(deterministic_seed=name, **options),
                                   format=format, **header)

    dump("mixed_types.dmp", [DatasetToWrite(mixed_types_table(), "WORK", "CUSTOMERS", description="Customer extract")],
         application_message="Nightly customer extract", max_message_bytes=256)
    dump("big_endian_273_819.dmp", [DatasetToWrite(latin1_table(), "SALES", "MONTHLY", description="Monthly sales")],
         encoding=273, ccsid=819, application_message="Sales, Latin-1, big-endian")
    dump("zos_785_37.dmp", [DatasetToWrite(zos_table(), "PROD", "LEDGER", description="z/OS ledger")],
         encoding=785, ccsid=37, application_message="Ledger from z/OS")
    dump("files.dmp", files=[FileToWrite("report.txt", text="Quarterly report\nRevenue: 1.2M\nStatus: grün\n"),
                             FileToWrite("logo.bin", content=bytes(range(256)) * 4, lrecl=100)],
         application_message="Report and logo")
    seed000_external_file(os.path.join(out_dir, "seed000_external_file.dmp"))
    # What IBM's browse sample amqsbcg prints for the same kind of traffic (docs/spec/mq.md#amqsbcg-output).
    dump("amqsbcg_browse.txt", [DatasetToWrite(browsed_table(), "WORK", "ORDERS", description="Orders browsed")],
         format="amqsbcg", application_message="Orders, as amqsbcg shows them", max_message_bytes=512)
    # The same kind of traffic over the other transports (docs/spec/tibrv.md, docs/spec/mqtt.md).
    dump("tibrv_capture.rv", [DatasetToWrite(browsed_table(), "RV", "ORDERS", description="Orders over RV")],
         [FileToWrite("rv_note.txt", text="Sent over TIB/Rendezvous\n")], format="tibrv", encoding=273,
         application_message="Orders over TIB/RV", max_message_bytes=512)
    dump("mqtt_stream.mqtt", [DatasetToWrite(browsed_table(), "MQTT", "ORDERS", description="Orders over MQTT")],
         format="mqtt", application_message="Orders over MQTT 5", max_message_bytes=512)
    sapdb_session(os.path.join(out_dir, "sapdb_session.rte"))
    nightly_batch(os.path.join(out_dir, "nightly_batch.dmp"))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                          "..", "sample_queues"))

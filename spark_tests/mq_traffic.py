"""IBM MQ traffic around the messages of one plain dataset attachment, built from the MQ structure
tables (transports/mq/headers.py, mqmd.py): transmission and dead-letter queues, MQMDE, MQRFH2,
segments. Shared by the envelope unit tests and the Spark tests."""
from __future__ import annotations

import dataclasses
import datetime as dt
import struct

import pyarrow as pa

from cmi_datasource.engine.write import DatasetToWrite, WriteOptions
from cmi_datasource.layout import BIG, LITTLE
from cmi_datasource.transports.mq.headers import MQDLH, MQMDE, MQRFH2, MQXQH
from cmi_datasource.transports.mq.mqmd import MQMF_LAST_SEGMENT, MQMF_SEGMENT, descriptor_to_bytes

from support import build_mq_messages

TABLE = pa.table({
    "ID": pa.array([float(i) for i in range(400)]),
    "NAME": pa.array([f"person {i} Ünïcode" if i % 7 else None for i in range(400)]),
    "BORN": pa.array([dt.date(1950, 1, 1) + dt.timedelta(days=37 * i) for i in range(400)]),
})


def plain(encoding=546, ccsid=1208):
    options = WriteOptions(encoding=encoding, ccsid=ccsid, max_message_bytes=1024, deterministic_seed="env")
    return build_mq_messages([DatasetToWrite(TABLE, "LIB", "PEOPLE")], options=options)


def order_of(d):
    return LITTLE if d.encoding & 0x0F == 2 else BIG


def codec_of(d):
    return "cp037" if d.ccsid in (37, 500, 1047, 1140, 273) else "latin-1"


def text(value: str, size: int, codec: str) -> bytes:
    return value.ljust(size).encode(codec)


def xmitq(d, payload):
    """As on a transmission queue: MQXQH with the message's version-1 MQMD, then the data."""
    codec, order = codec_of(d), order_of(d)
    inner = dataclasses.replace(d, version=1)
    xqh = MQXQH.pack({"struc_id": "XQH ".encode(codec), "remote_q_name": text("SAS.IN", 48, codec),
                      "remote_q_mgr_name": text("QM.TARGET", 48, codec)}, order)
    outer = dataclasses.replace(d, version=1, format="MQXMIT  ", msg_type=8)
    return outer, xqh + descriptor_to_bytes(inner, order, codec) + payload


def dead_letter(d, payload):
    codec, order = codec_of(d), order_of(d)
    dlh = MQDLH.pack({"struc_id": "DLH ".encode(codec), "reason": 2053, "dest_q_name": text("SAS.FULL", 48, codec),
                      "dest_q_mgr_name": text("QM1", 48, codec), "encoding": d.encoding, "ccsid": d.ccsid,
                      "format": d.format.encode(codec)}, order)
    return dataclasses.replace(d, format="MQDEAD  "), dlh + payload


def mqmde(d, payload, **fields):
    codec = codec_of(d)
    values = {"struc_id": "MDE ".encode(codec), "encoding": d.encoding, "ccsid": d.ccsid,
              "format": d.format.encode(codec)}
    values.update(fields)
    return MQMDE.pack(values, order_of(d))


def v1_with_mqmde(d, payload):
    return dataclasses.replace(d, version=1, format="MQHMDE  "), mqmde(d, payload) + payload


def rfh2(d, payload):
    folder = b"<usr><origin>SAS</origin></usr>    "  # padded to a multiple of 4
    header = MQRFH2.pack({"struc_id": b"RFH ", "struc_length": MQRFH2.size + 4 + len(folder),
                          "encoding": d.encoding, "ccsid": d.ccsid, "format": d.format.encode("latin-1"),
                          "name_value_ccsid": 1208}, order_of(d))
    wrapped = header + struct.pack(order_of(d) + "i", len(folder)) + folder + payload
    return dataclasses.replace(d, format="MQHRF2  "), wrapped



def segmented(messages, size=100, rng=None, with_mqmde=False):
    """Each sequenced message cut into segments of ``size`` bytes (MQMD v2, or v1 + MQMDE)."""
    out = []
    for n, (d, p) in enumerate(messages):
        if d.msg_type != 100001 or len(p) <= size:
            out.append((d, p))
            continue
        group = struct.pack(">I", n) * 6
        for offset in range(0, len(p), size):
            flags = MQMF_SEGMENT | (MQMF_LAST_SEGMENT if offset + size >= len(p) else 0)
            piece = p[offset:offset + size]
            if with_mqmde:
                out.append((dataclasses.replace(d, version=1, format="MQHMDE  "),
                            mqmde(d, piece, group_id=group, offset=offset, msg_flags=flags) + piece))
            else:
                out.append((dataclasses.replace(d, version=2, group_id=group, msg_seq_number=1, offset=offset,
                                                msg_flags=flags), piece))
    if rng is not None:
        out = out + rng.sample(out, len(out) // 5)  # duplicates
        rng.shuffle(out)
    return out



EXPECTED = TABLE.to_pylist()

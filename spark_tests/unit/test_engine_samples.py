"""sample_queues/ is exactly what scripts/make_samples.py writes, and every sample reads back."""
from __future__ import annotations

import importlib.util
import os

from cmi_datasource import Capture, read

from conftest import ROOT, SAMPLES


def load_script():
    spec = importlib.util.spec_from_file_location("make_samples", os.path.join(ROOT, "scripts", "make_samples.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_samples_are_regenerated_byte_for_byte(tmp_path):
    load_script().main(str(tmp_path))
    generated = sorted(os.listdir(tmp_path))
    assert generated == sorted(os.listdir(SAMPLES))
    for name in generated:
        assert (tmp_path / name).read_bytes() == open(os.path.join(SAMPLES, name), "rb").read(), name


def test_every_sample_attachment_decodes_and_only_the_lost_one_is_incomplete():
    capture = Capture.open(SAMPLES)
    attachments = read(capture, view="attachments").to_pylist()
    assert len(attachments) == 14
    [incomplete] = [a for a in attachments if not a["complete"]]
    assert incomplete["name"] == "FIN.RETURNS" and incomplete["problem"].endswith("missing [4]")
    assert all(a["problem"] is None for a in attachments if a is not incomplete)
    assert len(read(capture, view="files")) == 5
    assert set(capture.formats.values()) == {"dmpmqmsg", "amqsbcg", "tibrv", "mqtt", "sapdb"}
    for a in attachments:
        if a["kind"] == "dataset" and a["complete"]:
            assert read(capture, attachment=a["attachment"]).num_rows == a["observations"]


def test_the_nightly_batch_has_three_senders_spread_over_the_night():
    """nightly_batch.dmp, the notebook's story: UTF-8 sales with a notes file, an EBCDIC inventory
    from z/OS, and returns that lost their second observation message."""
    capture = Capture.open(os.path.join(SAMPLES, "nightly_batch.dmp"))
    messages = read(capture, view="messages").to_pylist()
    assert {(m["encoding"], m["ccsid"]) for m in messages} == {(546, 1208), (785, 37)}
    assert [m["put_time"] for m in messages][:3] == ["22000000", "22000100", "22000200"]
    assert sorted({m["put_time"][:4] for m in messages}) == ["2200", "2205", "2210"]
    sales = read(capture, dataset="FIN.DAILY_SALES")
    assert sales.num_rows == 543 and sales.column_names == ["DAY", "REGION", "AMOUNT", "UNITS"]
    inventory = read(capture, dataset="PROD.INVENTORY").to_pylist()
    assert inventory[2]["WAREHOUSE"] == "Kraków" and inventory[0]["ON_HAND"] is None
    returns = [m for m in messages if m["attachment"] is not None and m["sequence"] is not None
               and m["put_time"].startswith("2210")]
    assert sorted(m["sequence"] for m in returns) == [0, 1, 2, 3, 5, 6, 7]  # 0: the count message

"""sample_queues/ is exactly what scripts/make_samples.py writes, and every sample reads back."""
from __future__ import annotations

import importlib.util
import os

from cmi_datasource import Capture

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


def test_every_sample_attachment_is_complete_and_decodes():
    capture = Capture.open(SAMPLES)
    attachments = capture.attachments_table().to_pylist()
    assert len(attachments) == 10 and all(a["complete"] and a["problem"] is None for a in attachments)
    assert len(capture.files_table()) == 4
    assert set(capture.formats.values()) == {"dmpmqmsg", "amqsbcg", "tibrv", "mqtt", "sapdb"}
    for a in attachments:
        if a["kind"] == "dataset":
            assert capture.dataset_table(attachment=a["attachment"]).num_rows == a["observations"]

"""Arrow columns and record batches built from decoded payloads, with numpy, without per-value Python."""

"""Capture containers: files that hold physical messages (IBM MQ text dumps, ...)."""

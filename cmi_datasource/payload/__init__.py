"""Payload codecs: SAS datasets and external files carried by CMI attachments."""

"""IBM MQ structures: the message descriptor and the Encoding/CCSID rules."""

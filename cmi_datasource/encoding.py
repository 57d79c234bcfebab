"""Encoding numbers: which byte order a message's integers use and which float format its numbers use.

CMI (docs/spec/cmi.md#primitive-types, docs/spec/mq.md#encoding) states both in IBM MQ's Encoding
numbering, whatever transport carried
the message: every transport gives its messages' ``Descriptor.encoding`` in these numbers (an MQ
message has it in its MQMD; a TIB/RV or MQTT message gets it from the transport's own rules)."""
from __future__ import annotations

from enum import Enum

from .layout import BIG, LITTLE

MQENC_INTEGER_MASK = 0x0F
MQENC_INTEGER_NORMAL = 0x01
MQENC_INTEGER_REVERSED = 0x02
MQENC_FLOAT_MASK = 0xF00

ENCODING_LITTLE_ENDIAN = 546  # 0x222: x86 Linux and Windows
ENCODING_BIG_ENDIAN = 273  # 0x111: AIX, Solaris SPARC, ...
ENCODING_ZOS = 785  # 0x311: z/OS, S/390 hexadecimal floats


class FloatFormat(Enum):
    IEEE_BIG = "ieee-big"
    IEEE_LITTLE = "ieee-little"
    S390 = "s390-hex"


def integer_order(encoding: int) -> str:
    """struct byte-order character for integers under an MQ Encoding.

    Undefined integer bits (0) are read as big-endian, MQ's "normal" order.
    """
    return LITTLE if encoding & MQENC_INTEGER_MASK == MQENC_INTEGER_REVERSED else BIG


def float_format(encoding: int) -> FloatFormat:
    """Float representation under an MQ Encoding; ValueError for TNS or unknown bits."""
    bits = encoding & MQENC_FLOAT_MASK
    if bits == 0x100:
        return FloatFormat.IEEE_BIG
    if bits == 0x200:
        return FloatFormat.IEEE_LITTLE
    if bits == 0x300:
        return FloatFormat.S390
    if bits == 0:
        # Undefined float bits: follow the integer byte order, as MQ's own conversion does.
        return FloatFormat.IEEE_LITTLE if integer_order(encoding) == LITTLE else FloatFormat.IEEE_BIG
    raise ValueError(f"MQ Encoding {encoding} (0x{encoding:X}) has float format bits "
                     f"0x{bits:X}, which is not IEEE or S/390 hexadecimal")

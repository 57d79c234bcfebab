"""The numbers of the SAP DB / MaxDB order interface and their names (docs/spec/sapdb.md;
the MaxDB GPL sources' vsp001, gsp00 and geo003). Each table is code -> name, as the MaxDB
sources spell the names without their prefixes; an unknown code shows as its number."""
from __future__ import annotations

from typing import Mapping


def _named(names: str, first: int = 0) -> Mapping[int, str]:
    """Consecutive codes from ``first``, in the order the sources declare them."""
    return {code: name for code, name in enumerate(names.split(), start=first)}


def name_of(table: Mapping[int, str], code: int) -> str:
    return table.get(code, str(code))


def codes_of(table: Mapping[int, str], names: str) -> tuple:
    """The codes of the space-separated ``names`` in ``table``: code lists read by name."""
    by_name = {name: code for code, name in table.items()}
    return tuple(by_name[name] for name in names.split())


# RTE message classes (geo003 RSQL_*): what an RTE frame on the wire is.
RTE_CLASSES = {
    1: "request_conn", 2: "reply_conn", 3: "request_user", 4: "reply_user", 16: "open_session",
    17: "close_session", 18: "send_data", 19: "open_session_reply", 31: "cancel", 32: "dump",
    41: "address_request", 42: "address_reply", 49: "info_request_keep_alive", 51: "info_request",
    52: "info_reply", 53: "ping_request", 54: "ping_reply", 61: "user_conn_request", 62: "user_conn_reply",
    63: "user_data_request", 64: "user_data_reply", 65: "user_cancel_request", 66: "user_release_request",
    71: "kern_conn_request", 72: "kern_conn_reply", 73: "kern_data_request", 74: "kern_data_reply",
    76: "kern_release_request", 81: "dump_request", 91: "ctrl_conn_request", 92: "ctrl_conn_reply",
    93: "ctrl_cancel_request", 94: "cert_request", 95: "cert_reply", 100: "new_user_conn_request",
}
USER_DATA_REQUEST, USER_DATA_REPLY = 63, 64  # the frames that carry SQL packets
RTE_PROTOCOL_TCP = 3

# sp1h_mess_code (tsp00_CodeType): the character set of the packet's texts.
MESS_CODES = {0: "ascii", 1: "ebcdic", 2: "codeneutral", 19: "unicode_swap", 20: "unicode",
              21: "unicode_native", 22: "utf8"}
# sp1h_mess_swap (tsp00_SwapKind): the byte order of the packet's binary integers.
SWAP_KINDS = _named("dummy normal full_swapped part_swapped")
SWAP_NORMAL, SWAP_FULL, SWAP_PART = 1, 2, 3

SEGMENT_KINDS = _named("nil cmd return proccall procreply")
SEGMENT_RETURN_KINDS = (2, 4)  # segments with the return variant of the header

# sp1c_mess_type (tsp1_cmd_mess_type); vsp001's fillers keep their place in the numbering.
MESS_TYPES = _named(
    "nil cmd_lower_bound dbs parse getparse syntax cfill1 cfill2 cfill3 cfill4 cfill5 cmd_upper_bound "
    "no_cmd_lower_bound execute getexecute putval getval load unload ncfill1 ncfill2 ncfill3 ncfill4 "
    "ncfill5 no_cmd_upper_bound hello util_lower_bound utility incopy ufill1 outcopy diag_outcopy ufill3 "
    "ufill4 ufill5 ufill6 ufill7 util_upper_bound specials_lower_bound switch switchlimit buflength "
    "minbuf maxbuf state_utility get_challenge sfill3 sfill4 sfill5 specials_upper_bound wait_for_event "
    "procserv_lower_bound procserv_call procserv_reply")
SQLMODES = _named("nil session_sqlmode internal ansi db2 oracle")
PRODUCERS = _named("nil user_cmd internal_cmd kernel installation view_optimizer complex_view_handling "
                   "queryrewrite")

PART_KINDS = _named(
    "nil appl_parameter_description columnnames command conv_tables_returned data errortext getinfo "
    "modulname page parsid parsid_of_select resultcount resulttablename shortinfo user_info_returned "
    "surrogate bdinfo longdata tablename session_info_returned output_cols_no_parameter key serial "
    "relative_pos abap_istream abap_ostream abap_info checkpoint_info procid long_demand message_list "
    "vardata_shortinfo vardata feature clientid")
(PART_COLUMNNAMES, PART_COMMAND, PART_DATA, PART_ERRORTEXT, PART_PARSID, PART_RESULTCOUNT, PART_RESULTTABLENAME,
 PART_SHORTINFO) = codes_of(PART_KINDS,
                            "columnnames command data errortext parsid resultcount resulttablename shortinfo")
TEXT_PARTS = (PART_COMMAND, PART_ERRORTEXT)  # parts whose buffer is text in the packet's mess_code
PART_ALIGNMENT = 8  # csp1_part_align_length: parts (and segments) start on 8-byte boundaries

# sp1r_function_code (csp1_*_fc): what a statement turned out to be; mass commands are 1000 + fc.
FUNCTION_CODES = {
    0: "nil", 1: "create_table", 3: "insert", 4: "select", 5: "update", 7: "drop_view", 8: "drop_table",
    9: "delete", 10: "create_view", 11: "drop_user", 13: "create_sequence", 16: "drop_sequence",
    17: "create_schema", 19: "create_user", 20: "create_index", 21: "drop_index", 24: "create_procedure",
    26: "alter_table", 27: "explain", 28: "grant", 29: "revoke", 30: "create_synonym", 31: "drop_synonym",
    34: "pl_sql_execute", 35: "lock_table", 36: "drop_schema", 37: "rename", 38: "comment", 53: "alter_user",
    54: "commit", 55: "rollback", 56: "savepoint", 59: "create_trigger", 61: "drop_trigger",
    62: "analyze_table", 68: "drop_procedure", 71: "create_sl_snapshot_log", 73: "drop_sl_snapshot_log",
    74: "create_snapshot", 201: "select_direct", 202: "select_first", 203: "select_last", 204: "select_next",
    205: "select_prev", 206: "fetch_first", 207: "fetch_last", 208: "fetch_next", 209: "fetch_prev",
    210: "fetch_pos", 211: "fetch_same", 212: "string_command", 213: "connect", 214: "drop_parseid",
    215: "close", 216: "show", 217: "usage", 218: "serverdb", 219: "monitor", 220: "set", 221: "link",
    222: "create_domain", 223: "drop_domain", 224: "describe", 225: "alter_password", 233: "putval",
    234: "getval", 235: "diagnose", 236: "unlock", 237: "refresh", 238: "clear_snapshot_log",
    239: "next_stamp", 240: "exists_table", 241: "commit_release", 242: "rollback_release",
    243: "drda_native_ddl", 244: "select_into", 247: "fetch_relative", 248: "cursor_pl_sql_execute",
    249: "administrator", 250: "reset",
}
MASS_COMMAND_OFFSET = 1000


def function_name(code: int) -> str:
    if code >= MASS_COMMAND_OFFSET and code - MASS_COMMAND_OFFSET in FUNCTION_CODES:
        return "m" + FUNCTION_CODES[code - MASS_COMMAND_OFFSET]
    return name_of(FUNCTION_CODES, code)


# sp1i_io_type of a shortinfo entry
IO_INPUT, IO_OUTPUT, IO_INOUT = 0, 1, 2

# sp1i_data_type (tsp00_DataType)
DATA_TYPES = _named(
    "fixed float cha che chb rowid stra stre strb strdb date time vfloat timestamp unknown number "
    "nonumber duration dbyteebcdic longa longe longb longdb boolean unicode dtfiller1 dtfiller2 "
    "dtfiller3 dtfiller4 smallint integer varchara varchare varcharb struni longuni varcharuni udt "
    "abaptabhandle wyde")

# Defined bytes (csp_*_byte): the byte in front of every data field.
UNDEF_BYTE = 0xFF  # NULL
OVERFLOW_BYTE = 0xFE  # "special null": a numeric overflow in a computed value

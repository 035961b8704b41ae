#!/usr/bin/env python3
"""A PACS that lies about a series, on 127.0.0.1, for the query/retrieve tests (tests/e2e/pacs_query.sh).

usage: lying_pacs.py MODE PORTFILE
Writes the port it listens on to PORTFILE, serves every connection in a thread of its own, stops after 60 s.
It accepts every proposed presentation context with its first transfer syntax (and every SCP/SCU role
selection), answers a C-FIND with one match (series 1.2.3.4 of study 1.2.3, NumberOfSeriesRelatedInstances 3),
then treats the C-GET as MODE says:
  fewer    sends one valid 2x2 MR instance as a C-STORE sub-operation, then a final C-GET response "success,
           3 completed" (it announced and claims 3, delivered 1);
  failure  answers the C-GET with the final status 0xC000 (unable to process);
  baduid   sends an instance whose SOP Instance UID is "../../evil" (a path, not a UID);
  silent   says nothing after the C-GET request.
PS3.8 9.3 (PDUs), PS3.7 E (command sets, Implicit VR Little Endian), PS3.5 7.1.2 (data sets, Explicit VR Little
Endian: the transfer syntax Larmor proposes first). Standard library only (plain python3).
"""
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slow_pacs import item, listen_and_serve, read_pdu  # noqa: E402

MR = b"1.2.840.10008.5.1.4.1.1.4"
STUDY, SERIES = b"1.2.3", b"1.2.3.4"


def associate_ac(rq):
    """A-ASSOCIATE-AC: the fixed fields echoed, every context accepted with its first transfer syntax, every
    role selection accepted as proposed. Also returns {abstract syntax: context ID}."""
    fixed, items, contexts, roles, pos = rq[:68], [], {}, [], 68
    while pos + 4 <= len(rq):
        kind, length = rq[pos], struct.unpack(">H", rq[pos + 2:pos + 4])[0]
        body = rq[pos + 4:pos + 4 + length]
        pos += 4 + length
        if kind == 0x10:
            items.append(item(0x10, body))
        elif kind == 0x20:
            sub, abstract, transfer = 4, None, None
            while sub + 4 <= len(body):
                skind, slen = body[sub], struct.unpack(">H", body[sub + 2:sub + 4])[0]
                value = body[sub + 4:sub + 4 + slen]
                if skind == 0x30:
                    abstract = value.rstrip(b"\0")
                if skind == 0x40 and transfer is None:
                    transfer = value
                sub += 4 + slen
            contexts[abstract] = body[0]
            items.append(item(0x21, bytes([body[0], 0, 0, 0]) + item(0x40, transfer)))
        elif kind == 0x50:
            sub = 0
            while sub + 4 <= len(body):
                skind, slen = body[sub], struct.unpack(">H", body[sub + 2:sub + 4])[0]
                if skind == 0x54:
                    roles.append(item(0x54, body[sub + 4:sub + 4 + slen]))
                sub += 4 + slen
    user = item(0x51, struct.pack(">I", 16384)) + item(0x52, b"1.2.826.0.1.3680043.9.7433.1.2") + b"".join(roles)
    items.append(item(0x50, user))
    body = fixed + b"".join(items)
    return bytes([0x02, 0]) + struct.pack(">I", len(body)) + body, contexts


def read_message(conn):
    """One DIMSE message: (context ID, command elements, data set bytes or None); None on A-RELEASE/A-ABORT."""
    command, data, pcid, want_data = b"", b"", 0, None
    while True:
        kind, pdu = read_pdu(conn)
        if kind == 0x05:  # A-RELEASE-RQ
            conn.sendall(bytes([0x06, 0]) + struct.pack(">I", 4) + b"\0" * 4)
            return None
        if kind != 0x04:
            return None
        pos = 0
        while pos + 6 <= len(pdu):
            (length,) = struct.unpack(">I", pdu[pos:pos + 4])
            pcid, header, value = pdu[pos + 4], pdu[pos + 5], pdu[pos + 6:pos + 4 + length]
            pos += 4 + length
            if header & 1:
                command += value
                if header & 2:
                    elements = parse_command(command)
                    want_data = struct.unpack("<H", elements[0x00000800])[0] != 0x0101
                    if not want_data:
                        return pcid, elements, None
            else:
                data += value
                if header & 2:
                    return pcid, parse_command(command), data


def parse_command(b):
    """Implicit VR Little Endian elements: {(group << 16) | element: value bytes}."""
    out, pos = {}, 0
    while pos + 8 <= len(b):
        group, element, length = struct.unpack("<HHI", b[pos:pos + 8])
        out[(group << 16) | element] = b[pos + 8:pos + 8 + length]
        pos += 8 + length
    return out


def even(v, pad):
    return v + pad if len(v) % 2 else v


def command(elements):
    """A command set: (element, value) pairs of group 0000 in order, US values as ints, UIDs as bytes."""
    body = b""
    for element, value in elements:
        v = struct.pack("<H", value) if isinstance(value, int) else even(value, b"\0")
        body += struct.pack("<HHI", 0, element, len(v)) + v
    return struct.pack("<HHI", 0, 0, 4) + struct.pack("<I", len(body)) + body


def dataset(elements):
    """Explicit VR Little Endian: (group, element, VR, value bytes) in ascending tag order."""
    out = b""
    for group, element, vr, value in elements:
        value = even(value, b"\0" if vr in ("UI", "OB", "OW") else b" ")
        if vr in ("OB", "OW", "SQ", "UN", "UT"):
            out += struct.pack("<HH", group, element) + vr.encode() + b"\0\0" + struct.pack("<I", len(value)) + value
        else:
            out += struct.pack("<HH", group, element) + vr.encode() + struct.pack("<H", len(value)) + value
    return out


def send_message(conn, pcid, cmd, data=None):
    pdvs = struct.pack(">I", len(cmd) + 2) + bytes([pcid, 0x03]) + cmd
    if data is not None:
        pdvs += struct.pack(">I", len(data) + 2) + bytes([pcid, 0x02]) + data
    conn.sendall(bytes([0x04, 0]) + struct.pack(">I", len(pdvs)) + pdvs)


def instance(uid):
    return dataset([
        (0x0008, 0x0016, "UI", MR), (0x0008, 0x0018, "UI", uid), (0x0008, 0x0060, "CS", b"MR"),
        (0x0020, 0x000D, "UI", STUDY), (0x0020, 0x000E, "UI", SERIES), (0x0020, 0x0013, "IS", b"1"),
        (0x0028, 0x0002, "US", struct.pack("<H", 1)), (0x0028, 0x0004, "CS", b"MONOCHROME2"),
        (0x0028, 0x0010, "US", struct.pack("<H", 2)), (0x0028, 0x0011, "US", struct.pack("<H", 2)),
        (0x0028, 0x0100, "US", struct.pack("<H", 16)), (0x0028, 0x0101, "US", struct.pack("<H", 16)),
        (0x0028, 0x0102, "US", struct.pack("<H", 15)), (0x0028, 0x0103, "US", struct.pack("<H", 0)),
        (0x7FE0, 0x0010, "OW", struct.pack("<4H", 1, 2, 3, 4)),
    ])


def store(conn, contexts, uid):
    """One C-STORE sub-operation of `uid`; waits for the client's C-STORE response."""
    cmd = command([(0x0002, MR), (0x0100, 0x0001), (0x0110, 7), (0x0700, 0), (0x0800, 0x0000), (0x1000, uid)])
    send_message(conn, contexts[MR], cmd, instance(uid))
    return read_message(conn)


def get_response(conn, pcid, rq, status, completed=0):
    sop = rq[0x00000002].rstrip(b"\0")
    msg_id = struct.unpack("<H", rq[0x00000110])[0]
    send_message(conn, pcid, command([(0x0002, sop), (0x0100, 0x8010), (0x0120, msg_id), (0x0800, 0x0101),
                                      (0x0900, status), (0x1020, 0), (0x1021, completed), (0x1022, 0),
                                      (0x1023, 0)]))


def serve(conn, mode):
    try:
        kind, rq = read_pdu(conn)
        if kind != 0x01:
            return
        ac, contexts = associate_ac(rq)
        conn.sendall(ac)
        while True:
            m = read_message(conn)
            if m is None:
                return
            pcid, rq_cmd, _ = m
            field = struct.unpack("<H", rq_cmd[0x00000100])[0]
            sop = rq_cmd[0x00000002].rstrip(b"\0")
            msg_id = struct.unpack("<H", rq_cmd[0x00000110])[0]
            if field == 0x0020:  # C-FIND-RQ: one match, then success
                match = dataset([(0x0008, 0x0052, "CS", b"SERIES"), (0x0008, 0x0060, "CS", b"MR"),
                                 (0x0020, 0x000D, "UI", STUDY), (0x0020, 0x000E, "UI", SERIES),
                                 (0x0020, 0x1209, "IS", b"3")])
                head = [(0x0002, sop), (0x0100, 0x8020), (0x0120, msg_id)]
                send_message(conn, pcid, command(head + [(0x0800, 0x0000), (0x0900, 0xFF00)]), match)
                send_message(conn, pcid, command(head + [(0x0800, 0x0101), (0x0900, 0x0000)]))
            elif field == 0x0010:  # C-GET-RQ
                if mode == "silent":
                    time.sleep(60)
                elif mode == "failure":
                    get_response(conn, pcid, rq_cmd, 0xC000)
                elif mode == "baduid":
                    store(conn, contexts, b"../../evil")
                    get_response(conn, pcid, rq_cmd, 0x0000, 1)
                elif mode == "fewer":
                    store(conn, contexts, b"1.2.3.4.1")
                    get_response(conn, pcid, rq_cmd, 0x0000, 3)
    except (ConnectionError, OSError, KeyError, struct.error):
        pass
    finally:
        conn.close()


if __name__ == "__main__":
    listen_and_serve(serve, ("fewer", "failure", "baduid", "silent"), "lying_pacs.py")

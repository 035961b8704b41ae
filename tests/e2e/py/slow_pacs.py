#!/usr/bin/env python3
"""A hostile DICOM peer on 127.0.0.1 for the network deadline tests (tests/e2e/pacs_slow_peer.sh).

usage: slow_pacs.py MODE PORTFILE
Writes the port it listens on to PORTFILE, serves every connection in a thread of its own, and stops after
60 s. MODE is how it treats a Storage/Verification SCU (PS3.8 9.3 for the PDUs):
  association  reads the A-ASSOCIATE-RQ, sends a valid A-ASSOCIATE-AC header (type 02, length 256), then
               one byte of the PDU a second: every read of the client gets data within any per-read timeout;
  response     accepts the association with a well-formed A-ASSOCIATE-AC (every proposed context, its first
               transfer syntax), reads the first P-DATA-TF, then sends a P-DATA-TF header and one byte a
               second;
  vanish       accepts the association, then closes the connection on the first P-DATA-TF;
  lie          answers the A-ASSOCIATE-RQ with an A-ASSOCIATE-AC header claiming 2 GiB, 64 bytes of
               garbage, then silence.
Standard library only (plain python3).
"""
import os
import socket
import struct
import sys
import threading
import time


def read_exactly(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("peer closed")
        data += chunk
    return data


def read_pdu(conn):
    head = read_exactly(conn, 6)
    (length,) = struct.unpack(">I", head[2:6])
    return head[0], read_exactly(conn, length)


def item(kind, body):
    return bytes([kind, 0]) + struct.pack(">H", len(body)) + body


def associate_ac(rq):
    """A-ASSOCIATE-AC for an A-ASSOCIATE-RQ body: the fixed fields echoed, every presentation context
    accepted with its first transfer syntax."""
    fixed, items, pos = rq[:68], [], 68
    while pos + 4 <= len(rq):
        kind, length = rq[pos], struct.unpack(">H", rq[pos + 2:pos + 4])[0]
        body = rq[pos + 4:pos + 4 + length]
        pos += 4 + length
        if kind == 0x10:  # application context, as proposed
            items.append(item(0x10, body))
        elif kind == 0x20:  # presentation context: ID, 3 reserved, sub-items (abstract, transfer syntaxes)
            sub, transfer = 4, None
            while sub + 4 <= len(body):
                skind, slen = body[sub], struct.unpack(">H", body[sub + 2:sub + 4])[0]
                if skind == 0x40 and transfer is None:
                    transfer = body[sub + 4:sub + 4 + slen]
                sub += 4 + slen
            items.append(item(0x21, bytes([body[0], 0, 0, 0]) + item(0x40, transfer)))
    user = item(0x51, struct.pack(">I", 16384)) + item(0x52, b"1.2.826.0.1.3680043.9.7433.1.1")
    items.append(item(0x50, user))
    body = fixed + b"".join(items)
    return bytes([0x02, 0]) + struct.pack(">I", len(body)) + body


def trickle(conn, seconds=60):
    """One byte a second; the bytes themselves never complete the PDU."""
    conn.setblocking(False)
    end = time.time() + seconds
    while time.time() < end:
        try:
            conn.send(b"\x00")
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            return  # the client gave up: what we want
        try:  # drain whatever the client sends (an A-ABORT ends it)
            if conn.recv(65536) == b"":
                return
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            return
        time.sleep(1)


def serve(conn, mode):
    try:
        kind, rq = read_pdu(conn)
        if kind != 0x01:
            return
        if mode == "association":
            conn.sendall(bytes([0x02, 0]) + struct.pack(">I", 256))
            trickle(conn)
        elif mode == "lie":
            conn.sendall(bytes([0x02, 0]) + struct.pack(">I", 0x7FFFFFF0) + b"\x5a" * 64)
            time.sleep(60)
        else:
            conn.sendall(associate_ac(rq))
            kind, _ = read_pdu(conn)  # the first P-DATA-TF (command of C-ECHO-RQ or C-STORE-RQ)
            if mode == "response" and kind == 0x04:
                conn.sendall(bytes([0x04, 0]) + struct.pack(">I", 100))
                trickle(conn)
    except (ConnectionError, OSError):
        pass
    finally:
        conn.close()


def listen_and_serve(serve, modes, name):
    """argv: MODE PORTFILE. Listens on a free loopback port, writes it to PORTFILE (whole, by a rename), and for
    60 s serves each connection with serve(conn, MODE) on a thread of its own (lying_pacs.py uses it too)."""
    mode, portfile = sys.argv[1], sys.argv[2]
    if mode not in modes:
        sys.exit(f"{name}: unknown mode {mode}")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(1)
    with open(portfile + ".part", "w") as f:
        f.write(str(srv.getsockname()[1]))
    os.rename(portfile + ".part", portfile)
    end = time.time() + 60
    while time.time() < end:
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            continue
        conn.settimeout(None)
        threading.Thread(target=serve, args=(conn, mode), daemon=True).start()


if __name__ == "__main__":
    listen_and_serve(serve, ("association", "response", "vanish", "lie"), "slow_pacs.py")

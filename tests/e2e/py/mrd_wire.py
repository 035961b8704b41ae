"""The ISMRMRD streaming protocol from the outside, for tests/e2e/serve_*.sh: capture what a client sends (a fake
server), replay bytes to a server in parts, read its replies (TEXT, IMAGE, CLOSE). Only the framing, from the MRD
message table (ismrmrd.readthedocs.io, "Message Types"): uint16 id; CONFIG_FILE 1 + 1024 bytes; CONFIG_TEXT 2,
HEADER 3, TEXT 5 + uint32 length; CLOSE 4; ACQUISITION 1008 = 340-byte header (flags at byte 2,
number_of_samples at 34, active_channels at 38, trajectory_dimensions at 176, idx.slice at 248) + trajectory + data;
IMAGE 1022 = 198-byte header (data_type at 2, matrix_size at 16, channels at 34, slice at 98) + uint64 attribute length + attributes + pixels."""
import socket
import struct

SIZES = {1: 2, 2: 2, 3: 4, 4: 4, 5: 4, 6: 8, 7: 8, 8: 16}


def recv_exact(sock, n):
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise EOFError(f"closed after {len(out)} of {n} bytes")
        out += chunk
    return bytes(out)


def read_message(sock):
    """(id, payload): TEXT's text, IMAGE's (header, pixels), CLOSE's None; the client-side messages too."""
    mid = struct.unpack("<H", recv_exact(sock, 2))[0]
    if mid == 4:
        return mid, None
    if mid == 1:
        return mid, recv_exact(sock, 1024).split(b"\0")[0].decode()
    if mid in (2, 3, 5):
        n = struct.unpack("<I", recv_exact(sock, 4))[0]
        return mid, recv_exact(sock, n).decode(errors="replace")
    if mid == 1008:
        head = recv_exact(sock, 340)
        samples, channels = struct.unpack_from("<H", head, 34)[0], struct.unpack_from("<H", head, 38)[0]
        dims = struct.unpack_from("<H", head, 176)[0]
        return mid, head + recv_exact(sock, samples * dims * 4 + samples * channels * 8)
    if mid == 1022:
        head = recv_exact(sock, 198)
        dtype = struct.unpack_from("<H", head, 2)[0]
        nx, ny, nz = struct.unpack_from("<3H", head, 16)
        channels = struct.unpack_from("<H", head, 34)[0]
        n = struct.unpack("<Q", recv_exact(sock, 8))[0]
        recv_exact(sock, n)
        return mid, (head, recv_exact(sock, nx * ny * nz * channels * SIZES[dtype]))
    raise ValueError(f"unexpected message id {mid}")


def capture(port_file, out_file):
    """A fake server: accepts one client, records its messages until CLOSE (as (id, raw bytes) frames in
    out_file), answers CLOSE."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    open(port_file, "w").write(str(srv.getsockname()[1]))
    conn, _ = srv.accept()
    frames = []
    while True:
        mid, payload = read_message(conn)
        frames.append(frame(mid, payload))
        if mid == 4:
            break
    conn.sendall(struct.pack("<H", 4))
    conn.close()
    with open(out_file, "wb") as f:
        for fr in frames:
            f.write(struct.pack("<Q", len(fr)) + fr)


def frame(mid, payload):
    head = struct.pack("<H", mid)
    if mid == 4:
        return head
    if mid == 1:
        return head + payload.encode().ljust(1024, b"\0")
    if mid in (2, 3, 5):
        data = payload.encode()
        return head + struct.pack("<I", len(data)) + data
    return head + payload


def load_frames(path):
    data, out, pos = open(path, "rb").read(), [], 0
    while pos < len(data):
        n = struct.unpack_from("<Q", data, pos)[0]
        out.append(data[pos + 8:pos + 8 + n])
        pos += 8 + n
    return out


def replies(sock):
    """Every message until CLOSE or the end of the connection: [(id, payload)]."""
    got = []
    try:
        while True:
            mid, payload = read_message(sock)
            got.append((mid, payload))
            if mid == 4:
                break
    except EOFError:
        pass
    return got


def last_in_slice(frame_bytes):
    """An ACQUISITION frame (id + header + ...) flagged ACQ_LAST_IN_SLICE (flag 8: bit 7)."""
    if struct.unpack_from("<H", frame_bytes, 0)[0] != 1008:
        return False
    return bool(struct.unpack_from("<Q", frame_bytes, 2 + 2)[0] >> 7 & 1)


def image_slice(payload):
    return struct.unpack_from("<H", payload[0], 98)[0]

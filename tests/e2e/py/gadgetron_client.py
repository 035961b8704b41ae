"""A client framed as Gadgetron's gadgetron_ismrmrd_client frames its messages, written from the protocol's public
description (the MRD message table, ismrmrd.readthedocs.io "Message Types"; libismrmrd's AcquisitionHeader and
ImageHeader structs; Gadgetron's client: CONFIG_FILE's name copied into 1024 bytes, then the XML header as message 3
with a uint32 length, which older Gadgetron clients count with the string's terminating NUL, then the acquisitions,
then CLOSE; images read until the server's CLOSE), not from Larmor's code. Its scan is its own too: a Cartesian
phantom made here with numpy, its header XML written here, so what the server makes of it can be checked against
numpy's own inverse FFT (the coils' root sum of squares).

usage: gadgetron_client.py HOST PORT CONFIG [--nul]   (prints one line; exit 1 on a mismatch)"""
import socket
import struct
import sys
import threading

import numpy as np

N, COILS = 64, 4
FLAG_FIRST_IN_SLICE, FLAG_LAST_IN_SLICE = 1 << 6, 1 << 7

HEADER = f"""<?xml version="1.0" encoding="utf-8"?>
<ismrmrdHeader xmlns="http://www.ismrm.org/ISMRMRD">
  <experimentalConditions><H1resonanceFrequency_Hz>63500000</H1resonanceFrequency_Hz></experimentalConditions>
  <acquisitionSystemInformation><receiverChannels>{COILS}</receiverChannels></acquisitionSystemInformation>
  <encoding>
    <encodedSpace><matrixSize><x>{N}</x><y>{N}</y><z>1</z></matrixSize>
      <fieldOfView_mm><x>256</x><y>256</y><z>5</z></fieldOfView_mm></encodedSpace>
    <reconSpace><matrixSize><x>{N}</x><y>{N}</y><z>1</z></matrixSize>
      <fieldOfView_mm><x>256</x><y>256</y><z>5</z></fieldOfView_mm></reconSpace>
    <encodingLimits>
      <kspace_encoding_step_1><minimum>0</minimum><maximum>{N - 1}</maximum><center>{N // 2}</center></kspace_encoding_step_1>
      <slice><minimum>0</minimum><maximum>0</maximum><center>0</center></slice>
    </encodingLimits>
    <trajectory>cartesian</trajectory>
  </encoding>
</ismrmrdHeader>"""


def phantom():
    """Coil images (COILS, y, x) of two ellipses under smooth coil sensitivities."""
    y, x = np.mgrid[-1:1:N * 1j, -1:1:N * 1j]
    img = (x ** 2 / 0.6 + y ** 2 / 0.8 < 0.7).astype(float) + 0.5 * ((x - 0.2) ** 2 + (y + 0.1) ** 2 < 0.05)
    coils = [np.exp(-((x - cx) ** 2 + (y - cy) ** 2)) * np.exp(1j * (cx * x + cy * y))
             for cx, cy in ((-1, -1), (1, -1), (-1, 1), (1, 1))]
    return np.array([img * c for c in coils])


def kspace(images):
    """Centred 2D DFT of each coil image: k-space line ky, sample kx, the centre at N/2."""
    return np.fft.fftshift(np.fft.fft2(np.fft.ifftshift(images, axes=(1, 2))), axes=(1, 2))


def acquisition(line, data):
    """Message 1008: the 340-byte AcquisitionHeader (libismrmrd's field order), no trajectory, then the samples
    channel by channel (complex64)."""
    flags = (FLAG_FIRST_IN_SLICE if line == 0 else 0) | (FLAG_LAST_IN_SLICE if line == N - 1 else 0)
    h = bytearray(340)
    struct.pack_into("<HQ", h, 0, 1, flags)                       # version, flags
    struct.pack_into("<I", h, 14, line)                           # scan_counter
    struct.pack_into("<HHH", h, 34, N, COILS, COILS)              # samples, available, active channels
    struct.pack_into("<Q", h, 40, (1 << COILS) - 1)               # channel_mask[0]
    struct.pack_into("<HHHHH", h, 168, 0, 0, N // 2, 0, 0)        # discard pre/post, centre, space, traj dims
    struct.pack_into("<f", h, 178, 5.0)                           # sample_time_us
    struct.pack_into("<3f", h, 194, 1, 0, 0)                      # read_dir
    struct.pack_into("<3f", h, 206, 0, 1, 0)                      # phase_dir
    struct.pack_into("<3f", h, 218, 0, 0, 1)                      # slice_dir
    struct.pack_into("<H", h, 242, line)                          # idx.kspace_encode_step_1
    return struct.pack("<H", 1008) + bytes(h) + np.ascontiguousarray(data, dtype="<c8").tobytes()


def recv_exact(sock, n):
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise EOFError(f"closed after {len(out)} of {n} bytes")
        out += chunk
    return bytes(out)


def read_replies(sock, images, errors):
    """Messages until CLOSE: IMAGE 1022 (198-byte ImageHeader, uint64 attribute length, attributes, pixels), TEXT 5."""
    while True:
        mid = struct.unpack("<H", recv_exact(sock, 2))[0]
        if mid == 4:
            return
        if mid == 5:
            errors.append(recv_exact(sock, struct.unpack("<I", recv_exact(sock, 4))[0]).decode(errors="replace"))
            continue
        if mid != 1022:
            raise ValueError(f"unexpected message {mid}")
        head = recv_exact(sock, 198)
        dtype = struct.unpack_from("<H", head, 2)[0]
        nx, ny, nz = struct.unpack_from("<3H", head, 16)
        channels = struct.unpack_from("<H", head, 34)[0]
        recv_exact(sock, struct.unpack("<Q", recv_exact(sock, 8))[0])
        if dtype != 7:
            raise ValueError(f"image data type {dtype}, not complex float (7)")
        pixels = np.frombuffer(recv_exact(sock, nx * ny * nz * channels * 8), dtype="<c8")
        images.append(pixels.reshape(channels, nz, ny, nx)[0, 0])


def main():
    host, port, config = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    nul = "--nul" in sys.argv[4:]
    coil_images = phantom()
    k = kspace(coil_images)  # (coils, ky, kx)
    sock = socket.create_connection((host, port), timeout=60)
    images, errors = [], []
    reader = threading.Thread(target=read_replies, args=(sock, images, errors))
    reader.start()
    sock.sendall(struct.pack("<H", 1) + config.encode().ljust(1024, b"\0")[:1024])
    xml = HEADER.encode() + (b"\0" if nul else b"")
    sock.sendall(struct.pack("<HI", 3, len(xml)) + xml)
    for line in range(N):
        sock.sendall(acquisition(line, k[:, line, :]))
    sock.sendall(struct.pack("<H", 4))
    reader.join()
    sock.close()
    if errors or len(images) != 1:
        sys.exit(f"FAIL: {len(images)} images, errors {errors}")
    got = np.abs(images[0])
    want = np.sqrt((np.abs(coil_images) ** 2).sum(axis=0))
    got, want = got / got.max(), want / want.max()
    err = np.abs(got - want).max()
    print(f"{config}{' (header with its NUL)' if nul else ''}: 1 image {got.shape}, max |difference| {err:.2e} "
          "against numpy's root sum of squares")
    if err > 1e-4:
        sys.exit("FAIL: the server's image is not the phantom")


if __name__ == "__main__":
    main()

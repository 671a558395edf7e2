#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A stranger (or a forger of a server's address) on the servers' own ports, for the tests.

  peer_msg.py resolver --dst IP [--src IP] [--port P] --op OP --txn T [--flags F]
                       [--from I] [--secret FILE] [--stamp-age S] [--count N]
                       [--distinct] [--twice]
      sends N resolver peer messages (user/xtxd/resolve/peer_msg.h): OP is query,
      decide, hquery or hdecide; --src forges the source address (a raw socket);
      --secret seals them, --twice sends each sealed message a second time
      (a replay), --stamp-age backdates the stamp, --distinct gives each its own txn
  peer_msg.py copy-silent --dst IP [--port P] [--wait S]
      connects to the copy port and sends nothing; prints "closed after S s" when the
      server closes it, "open after S s" when it has not within --wait
  peer_msg.py copy-request --dst IP [--port P] [--epoch E] [--from I] [--wait S]
      sends a copier's request without the secret's seal; prints "closed", "answered"
      or "open" (after S s)
"""
import argparse
import socket
import struct
import sys
import time

MAGIC = 0x31585458
VERSION = 2
F_REPLY = 0x01
OPS = {"query": 24, "decide": 25, "hquery": 26, "hdecide": 27}
MAC_PEER = 1
M64 = (1 << 64) - 1


def rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M64


def sipround(v):
    v0, v1, v2, v3 = v
    v0 = (v0 + v1) & M64; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
    v2 = (v2 + v3) & M64; v3 = rotl(v3, 16); v3 ^= v2
    v0 = (v0 + v3) & M64; v3 = rotl(v3, 21); v3 ^= v0
    v2 = (v2 + v1) & M64; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
    return [v0, v1, v2, v3]


def sipmac(k0, k1, domain, data):
    """SipHash-2-4 of data, its key's first half mixed with domain (user/lib/sipmac.c)."""
    k0 ^= (domain * 0x9e3779b97f4a7c15) & M64
    v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d,
         k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573]
    n = len(data)
    for i in range(0, n - n % 8, 8):
        m = struct.unpack_from("<Q", data, i)[0]
        v[3] ^= m
        v = sipround(sipround(v))
        v[0] ^= m
    tail = data[n - n % 8:] + bytes(8 - n % 8)
    m = struct.unpack("<Q", tail)[0] | ((n & 0xff) << 56)
    v[3] ^= m
    v = sipround(sipround(v))
    v[0] ^= m
    v[2] ^= 0xff
    for _ in range(4):
        v = sipround(v)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def read_secret(path):
    hexs = open(path).read().strip()
    return int(hexs[:16], 16), int(hexs[16:32], 16)


def message(op, txn, flags, sender, secret, stamp):
    hdr = struct.pack("<IBBBBHHIQQ", MAGIC, VERSION, 0, 1, 0, 0, 0, 0, 1, 0)
    body = struct.pack("<BBBBIQQQQ", OPS[op], 0, 0, 0, flags, 0, txn, 0, sender) + bytes(40)
    msg = hdr + body
    if secret:
        msg += struct.pack("<Q", stamp)
        msg += struct.pack("<Q", sipmac(secret[0], secret[1], MAC_PEER, msg))
    return msg


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def sender(src, dst, port):
    """A function that sends one payload to dst:port, from src when forged."""
    if not src:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        return lambda p: s.sendto(p, (dst, port))
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)

    def send(payload):
        udp = struct.pack("!HHHH", 40000, port, 8 + len(payload), 0) + payload
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                         socket.inet_aton(src), socket.inet_aton(dst))
        ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
        raw.sendto(ip + udp, (dst, 0))
    return send


def cmd_resolver(a):
    send = sender(a.src, a.dst, a.port)
    secret = read_secret(a.secret) if a.secret else None
    for i in range(a.count):
        stamp = time.time_ns() - int(a.stamp_age * 1e9)
        txn = a.txn + i if a.distinct else a.txn
        m = message(a.op, txn, a.flags, getattr(a, "from"), secret, stamp)
        send(m)
        if a.twice:
            send(m)
    print("sent %d" % (a.count * (2 if a.twice else 1)))


def cmd_copy_silent(a):
    s = socket.create_connection((a.dst, a.port), timeout=5)
    t0 = time.monotonic()
    s.settimeout(a.wait)
    try:
        closed = s.recv(1) == b""
    except socket.timeout:
        closed = False
    except ConnectionResetError:
        closed = True
    print("%s after %.2f s" % ("closed" if closed else "open", time.monotonic() - t0))


def cmd_copy_request(a):
    """A copier's request (user/xtxd/copy/copy_wire.h) with no seal: every shard wanted."""
    req = struct.pack("<IIII", 0x33504358, a.epoch, getattr(a, "from"), a.nshards)
    req += b"\xff" * 128 + struct.pack("<QQ", time.time_ns(), 0)
    s = socket.create_connection((a.dst, a.port), timeout=5)
    s.sendall(req)
    t0 = time.monotonic()
    s.settimeout(a.wait)
    try:
        got = s.recv(16)
    except socket.timeout:
        got = None
    except ConnectionResetError:
        got = b""
    print("%s after %.2f s" % ("closed" if got == b"" else "answered" if got else "open",
                               time.monotonic() - t0))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("resolver")
    r.add_argument("--dst", required=True)
    r.add_argument("--src")
    r.add_argument("--port", type=int, default=7371)
    r.add_argument("--op", choices=sorted(OPS), required=True)
    r.add_argument("--txn", type=lambda x: int(x, 0), required=True)
    r.add_argument("--flags", type=int, default=0)
    r.add_argument("--from", type=int, default=0)
    r.add_argument("--secret")
    r.add_argument("--stamp-age", type=float, default=0.0)
    r.add_argument("--count", type=int, default=1)
    r.add_argument("--distinct", action="store_true")
    r.add_argument("--twice", action="store_true")
    c = sub.add_parser("copy-silent")
    c.add_argument("--dst", required=True)
    c.add_argument("--port", type=int, default=7371)
    c.add_argument("--wait", type=float, default=5.0)
    q = sub.add_parser("copy-request")
    q.add_argument("--dst", required=True)
    q.add_argument("--port", type=int, default=7371)
    q.add_argument("--epoch", type=int, default=1)
    q.add_argument("--from", type=int, default=0)
    q.add_argument("--nshards", type=int, default=12)
    q.add_argument("--wait", type=float, default=5.0)
    a = p.parse_args()
    {"resolver": cmd_resolver, "copy-silent": cmd_copy_silent,
     "copy-request": cmd_copy_request}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())

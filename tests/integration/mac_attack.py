#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Usage: mac_attack.py SERVER_IP PORT SECRET_FILE CASE COUNTER

Requests MACed with a cluster's secret (include/xtx/mac.h: SipHash-1-3 of the
whole UDP payload, hdr.mac read as zero), then changed on the way, sent to a
server started with that secret.  COUNTER is a server counter (COUNTER_ADD's
key) the case may add to.  Prints one line:
  flips   a COUNTER_ADD of 1 to COUNTER and a GET with a 64-byte value area,
          sent once with each single byte flipped, then once as signed:
          "sent=N replies=R version=V" (V: the counter's total in the reply
          to the signed one; R counts every reply that came back)
  swap    a GET signed, then its header and MAC over a COUNTER_ADD of
          1000000 to COUNTER: "get=ok|noreply swapped=answered|noreply"
"""
import os
import socket
import struct
import sys
import time

MAGIC, VERSION, CLIENT = 0x31585458, 2, 11
HDR = struct.Struct("<IBBBBHHIQQ")  # struct xtx_hdr: ... req_id, mac
OP = struct.Struct("<BBBBIQQQQ40s")  # struct xtx_op
EXT = struct.Struct("<HHHH")
MAC_OFF = 24
COUNTER_ADD, GET, F_EXT = 3, 16, 0x0400
M64 = (1 << 64) - 1


def rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M64


def siphash13(k0, k1, data):
    v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d,
         k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573]

    def rnd():
        v[0] = (v[0] + v[1]) & M64; v[1] = rotl(v[1], 13) ^ v[0]; v[0] = rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & M64; v[3] = rotl(v[3], 16) ^ v[2]
        v[0] = (v[0] + v[3]) & M64; v[3] = rotl(v[3], 21) ^ v[0]
        v[2] = (v[2] + v[1]) & M64; v[1] = rotl(v[1], 17) ^ v[2]; v[2] = rotl(v[2], 32)

    def block(m):
        v[3] ^= m
        rnd()
        v[0] ^= m

    n = len(data) // 8 * 8
    for i in range(0, n, 8):
        block(int.from_bytes(data[i:i + 8], "little"))
    block(int.from_bytes(data[n:], "little") | (len(data) & 0xff) << 56)
    v[2] ^= 0xff
    rnd(); rnd(); rnd()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


# the reference implementation's first vectors (key 0, message 00 01 02 ...)
assert siphash13(0, 0, b"") == 0xd1fba762150c532c
assert siphash13(0, 0, bytes(range(15))) == 0xf30eb725bb91c9ea


def sign(key, payload):
    b = bytearray(payload)
    b[MAC_OFF:MAC_OFF + 8] = bytes(8)
    mac = siphash13(key[0], key[1], bytes(b)) or 1
    b[MAC_OFF:MAC_OFF + 8] = mac.to_bytes(8, "little")
    return bytes(b)


def hdr(nops, req_id):
    return HDR.pack(MAGIC, VERSION, 0, nops, 0, CLIENT, 0, 0, req_id, 0)


def op(opcode, key, version=0, flags=0, slot=b""):
    return OP.pack(opcode, 0, 0, 0, flags, key, 0, version, 0, slot.ljust(40, b"\0"))


def read_key(path):
    # as common/secret.c reads it: k0 the first 16 digits, k1 the next
    h = open(path).read().strip()
    return int(h[:16], 16), int(h[16:32], 16)


def replies(s, wait):
    got = []
    end = time.time() + wait
    while time.time() < end:
        s.settimeout(max(0.01, end - time.time()))
        try:
            got.append(s.recv(2048))
        except socket.timeout:
            break
    return got


def main():
    server, port, key, case, ctr = (sys.argv[1], int(sys.argv[2]), read_key(sys.argv[3]),
                                    sys.argv[4], int(sys.argv[5]))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((server, port))
    # fresh ids across runs: the server keeps a window of ids per client
    req = time.time_ns() >> 4
    if case == "flips":
        area_off = HDR.size + 2 * OP.size
        body = (op(COUNTER_ADD, ctr, version=1) +
                op(GET, 0xdead0000beef, flags=F_EXT, slot=EXT.pack(area_off, 64, 0, 0)) +
                bytes([0x5c]) * 64)
        good = sign(key, hdr(2, req) + body)
        for i in range(len(good)):
            bad = bytearray(good)
            bad[i] ^= 0xff
            s.send(bytes(bad))
        time.sleep(0.2)
        s.send(good)
        got = replies(s, 1.0)
        version = "none"
        for r in got:
            if HDR.unpack_from(r)[8] == req and len(r) >= HDR.size + OP.size:
                version = OP.unpack_from(r, HDR.size)[7]
        print("sent=%d replies=%d version=%s" % (len(good), len(got), version))
    elif case == "swap":
        get = sign(key, hdr(1, req) + op(GET, 0xdead0001beef))
        s.send(get)
        a = "ok" if replies(s, 0.5) else "noreply"
        swapped = get[:HDR.size] + op(COUNTER_ADD, ctr, version=1000000)
        s.send(swapped)
        b = "answered" if replies(s, 0.5) else "noreply"
        print("get=%s swapped=%s" % (a, b))
    else:
        raise SystemExit("unknown case " + case)


main()

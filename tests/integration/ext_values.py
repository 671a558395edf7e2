#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Usage: ext_values.py SERVER_IP PORT CASE [ARGS...]

Value areas (include/xtx/proto.h) by hand.  Values are a pattern of their
key and length, so a read checks what it got.  Prints one line per reply:
"status=N op=S ..." (numeric XTX_ST_* codes) or "noreply".  Cases:
  put OP KEY LEN          OP insert|update, table 0, LEN bytes (area over 40)
  get KEY ROOM            GET with an area of ROOM bytes (0: none): prints
                          op status, vlen, ext.len, and "value=ok|bad" (an OK
                          answer compared with what was written) or "-"
  two KEY1 LEN1 KEY2 LEN2 two INSERTs with areas in one packet
  log SEQ VERSION KEY LEN [KEY LEN]
                          a transaction of this client (SEQ) logs its writes,
                          the last with LOG_LAST and their count: version=seq
  bad-off | trailing | short-area | over-request | cap-zero
                          broken tilings: MALFORMED expected
  ext-small | ext-over | len-over-cap | ext-vlen | ext-delete | read-len
                          area fields an op may not carry: BAD_ARG expected
"""
import os
import socket
import struct
import sys
import time

MAGIC = 0x31585458
VERSION = 2
HDR = struct.Struct("<IBBBBHHIQQ")  # struct xtx_hdr, mac last
OP = struct.Struct("<BBBBIQQQQ40s")
EXT = struct.Struct("<HHHH")
CLIENT = 7
GET, INSERT, UPDATE, DELETE = 16, 17, 18, 19
F_EXT = 0x0400
LOG_APPEND, LOG_LAST = 23, 0x4000


def pattern(key, n):
    return bytes(((key * 31 + i * 7 + n) & 0xff) for i in range(n))


def hdr(nops):
    # strictly increasing across runs: the server keeps a window of ids per client
    req_id = time.time_ns()
    return HDR.pack(MAGIC, VERSION, 0, nops, 0, CLIENT, 0, 0, req_id, 0)


def op(opcode, key, value=b"", flags=0, ext=None, vlen=None, txn=0, version=0):
    if ext is not None:
        slot = EXT.pack(*ext)
        vl = 0 if vlen is None else vlen
        flags |= F_EXT
    else:
        slot = value
        vl = len(value)
    return OP.pack(opcode, 0, 0, vl, flags, key, txn, version, 0, slot.ljust(40, b"\0"))


def r8(x):
    return (x + 7) & ~7


def packet(ops):
    """ops: (opcode, key, value or None, room[, flags, txn, version]); areas tiled canonically."""
    end = HDR.size + OP.size * len(ops)
    slots, areas = [], b""
    for o in ops:
        opcode, key, value, room = o[:4]
        flags, txn, version = (o[4:] + (0, 0, 0))[:3]
        kw = dict(flags=flags, txn=txn, version=version)
        if value is not None and len(value) <= 40:
            slots.append(op(opcode, key, value, **kw))
            continue
        if value is None and room == 0:
            slots.append(op(opcode, key, **kw))
            continue
        off = r8(end)
        cap = len(value) if value is not None else room
        body = value if value is not None else bytes(cap)
        areas += bytes(off - end) + body
        end = off + cap
        slots.append(op(opcode, key, ext=(off, cap, len(value) if value else 0, 0), **kw))
    areas += bytes(r8(end) - end)
    return hdr(len(ops)) + b"".join(slots) + areas


def send(data):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.5)
    s.sendto(data, (SERVER, PORT))
    try:
        return s.recv(4096)
    except socket.timeout:
        return None


def reply_ops(data):
    st = HDR.unpack_from(data)[4]
    nops = HDR.unpack_from(data)[3]
    return st, [OP.unpack_from(data, HDR.size + i * OP.size) for i in range(nops)]


def show(data):
    if data is None:
        print("noreply")
        return None
    st, ops = reply_ops(data)
    print("status=%d ops=%s" % (st, ",".join(str(o[1]) for o in ops)))
    return ops


def broken(case):
    big = pattern(1, 100)
    base = HDR.size + OP.size
    if case == "bad-off":
        return hdr(1) + op(INSERT, 1, ext=(base + 8, 104, 100, 0)) + bytes(8) + big.ljust(104, b"\0")
    if case == "trailing":
        return hdr(1) + op(INSERT, 1, b"\x01") + bytes(8)
    if case == "short-area":
        return hdr(1) + op(INSERT, 1, ext=(base, 104, 100, 0)) + big[:96]
    if case == "over-request":
        # 11 ops and a 1024-byte area: 1936 bytes, beyond XTX_MAX_REQUEST
        ops = [op(GET, k) for k in range(10)]
        n = 11
        off = HDR.size + OP.size * n
        return hdr(n) + b"".join(ops) + op(INSERT, 1, ext=(off, 1024, 1024, 0)) + pattern(1, 1024)
    if case == "cap-zero":
        return hdr(1) + op(GET, 1, ext=(base, 0, 0, 0))
    if case == "ext-small":
        return hdr(1) + op(INSERT, 1, ext=(base, 40, 40, 0)) + pattern(1, 40)
    if case == "ext-over":
        return hdr(1) + op(INSERT, 1, ext=(base, 1024, 1025, 0)) + pattern(1, 1024)
    if case == "len-over-cap":
        return hdr(1) + op(INSERT, 1, ext=(base, 96, 100, 0)) + big[:96]
    if case == "ext-vlen":
        return hdr(1) + op(INSERT, 1, ext=(base, 104, 100, 0), vlen=3) + big.ljust(104, b"\0")
    if case == "ext-delete":
        return hdr(1) + op(DELETE, 1, ext=(base, 64, 0, 0)) + bytes(64)
    if case == "read-len":
        return hdr(1) + op(GET, 1, ext=(base, 64, 50, 0)) + bytes(64)
    raise SystemExit("unknown case " + case)


def main():
    global SERVER, PORT
    SERVER, PORT, case = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    a = sys.argv[4:]
    if case == "put":
        opcode = {"insert": INSERT, "update": UPDATE}[a[0]]
        key, n = int(a[1]), int(a[2])
        ops = show(send(packet([(opcode, key, pattern(key, n), 0)])))
        if ops:
            print("version=%d" % ops[0][7])
    elif case == "two":
        k1, n1, k2, n2 = map(int, a)
        show(send(packet([(INSERT, k1, pattern(k1, n1), 0), (INSERT, k2, pattern(k2, n2), 0)])))
    elif case == "log":
        seq, version = int(a[0]), int(a[1])
        pairs = [(int(a[i]), int(a[i + 1])) for i in range(2, len(a), 2)]
        txn = (CLIENT << 48) | seq
        ops = []
        for i, (key, n) in enumerate(pairs):
            flags = 0
            if i == len(pairs) - 1:
                flags = LOG_LAST | (len(pairs) << 16)
            ops.append((LOG_APPEND, key, pattern(key, n), 0, flags, txn, version))
        show(send(packet(ops)))
    elif case == "get":
        key, room = int(a[0]), int(a[1])
        data = send(packet([(GET, key, None, room)]))
        ops = show(data)
        if not ops:
            return
        o = ops[0]
        off, cap, elen, _ = EXT.unpack_from(o[9])
        if o[4] & F_EXT:
            val = data[off:off + elen]
            n = elen
        else:
            val = o[9][:o[3]]
            n = o[3]
        same = "-" if o[1] != 1 else "ok" if val == pattern(key, n) else "bad"
        print("op=%d vlen=%d ext=%d len=%d value=%s" % (o[1], o[3], 1 if o[4] & F_EXT else 0,
              elen, same))
    else:
        show(send(broken(case)))


main()

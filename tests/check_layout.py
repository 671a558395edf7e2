#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# checks: 5 (tests/run.sh fails the suite when fewer verdicts come out)
"""Checks the tree's layout rules (rooms.mk): one PASS/FAIL line per rule.

- every quoted #include resolves inside the rooms its file may use;
- no include cycle between files, and none between rooms;
- a private folder is included only from its own room (and the tests);
- no protocol of libxtx calls another (from the built objects' symbols).
"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
SOURCES = ('bpf', 'common', 'include', 'user', 'clients', 'tests')
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]', re.M)
failed = False


def verdict(ok, what):
    global failed
    print(('PASS: ' if ok else 'FAIL: ') + what)
    failed |= not ok


def read_rooms():
    """rooms.mk: ROOM_<name> := <folder> <folders it may include>... (with \\ continuations)."""
    text = open(os.path.join(ROOT, 'rooms.mk')).read().replace('\\\n', ' ')
    rooms, private = {}, []
    for m in re.finditer(r'^ROOM_(\w+)\s*:=\s*(.*)$', text, re.M):
        dirs = m.group(2).split()
        if m.group(1) == 'PRIVATE':
            private = dirs
        else:
            rooms[m.group(1)] = dirs
    return rooms, private


def room_of(path, rooms):
    best = None
    for name, dirs in rooms.items():
        d = dirs[0]
        if path.startswith(d + '/') and (best is None or len(d) > len(rooms[best][0])):
            best = name
    return best


def sources():
    for top in SOURCES:
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith(('.c', '.h')):
                    yield os.path.relpath(os.path.join(d, f), ROOT)


def resolve(src, name, angle, dirs):
    """The file an include names, as the compiler with the room's -I list finds it."""
    cands = [] if angle else [os.path.dirname(src)]
    cands += dirs
    for d in cands:
        p = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(os.path.join(ROOT, p)):
            return p
    return None


def find_cycle(graph):
    """A cycle in graph (node -> set of nodes) as a list, or None; iterative DFS."""
    color = {}
    for start in graph:
        if start in color:
            continue
        stack = [(start, iter(sorted(graph.get(start, ()))))]
        color[start] = 1
        path = [start]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[node] = 2
                stack.pop()
                path.pop()
                continue
            if color.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in color:
                color[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(sorted(graph.get(nxt, ())))))
    return None


def protocol_calls():
    """Pairs (a, b): libxtx protocol object a uses a symbol protocol object b defines."""
    objdir = os.path.join(ROOT, 'build/obj/clients/libxtx/txn')
    srcdir = os.path.join(ROOT, 'clients/libxtx/txn')
    objs = sorted(f[:-2] + '.o' for f in os.listdir(srcdir)
                  if f.startswith('proto_') and f.endswith('.c'))
    defined, undefined = {}, {}
    for o in objs:
        out = subprocess.run(['nm', os.path.join(objdir, o)], capture_output=True, text=True,
                             check=True).stdout
        defined[o] = {l.split()[-1] for l in out.splitlines() if re.match(r'^\S+ [TDRB] ', l)}
        undefined[o] = {l.split()[-1] for l in out.splitlines() if re.match(r'^\s+U ', l)}
    return objs, [(a, b, s) for a in objs for b in objs if a != b
                  for s in sorted(undefined[a] & defined[b])]


def main():
    rooms, private = read_rooms()
    # the checker's own cycle finder, on graphs whose answer is known
    verdict(find_cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}) == ['a', 'b', 'c', 'a'] and
            find_cycle({'a': {'b', 'c'}, 'b': {'c'}, 'c': set()}) is None,
            'the cycle finder finds a 3-cycle and no cycle in a diamond')
    files = list(sources())
    bad, graph, room_graph = [], {}, {}
    for src in files:
        room = room_of(src, rooms)
        if room is None:
            bad.append(f'{src}: in no room of rooms.mk')
            continue
        text = open(os.path.join(ROOT, src), errors='replace').read()
        for angle, name in INCLUDE.findall(text):
            angle = angle == '<'
            if angle and not name.startswith('xtx/'):
                continue		# system headers
            if name.endswith('.skel.h') or name == 'xtx_version.h':
                continue		# generated into build/
            dst = resolve(src, name, angle, rooms[room])
            if dst is None:
                bad.append(f'{src}: #include {name} is outside the rooms {room} may use')
                continue
            graph.setdefault(src, set()).add(dst)
            droom = room_of(dst, rooms)
            for p in private:
                if dst.startswith(p + '/') and droom != room and room != 'tests':
                    bad.append(f'{src}: includes {dst}, private to room {droom}')
            if droom != room:
                room_graph.setdefault(room, set()).add(droom)
    verdict(not bad, f'every include of {len(files)} files stays in its rooms'
            + ''.join('\n  ' + b for b in bad))
    cyc = find_cycle(graph)
    verdict(cyc is None, 'no include cycle between files'
            + (': ' + ' -> '.join(cyc) if cyc else ''))
    cyc = find_cycle(room_graph)
    verdict(cyc is None, f'no include cycle between the {len(rooms)} rooms'
            + (': ' + ' -> '.join(cyc) if cyc else ''))
    try:
        objs, calls = protocol_calls()
        verdict(len(objs) >= 3 and not calls,
                f'no libxtx protocol calls another ({", ".join(objs)})'
                + ''.join(f'\n  {a} uses {s} of {b}' for a, b, s in calls))
    except (OSError, subprocess.CalledProcessError) as e:
        verdict(False, f'protocol objects readable with nm (build first): {e}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())

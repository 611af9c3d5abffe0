#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""pngcolours.py [--rows N] SHOT.png COLOUR...: for each COLOUR, 'COLOUR yes'
when some pixel of the 8-bit RGB(A) PNG (its first N rows with --rows) has
it, else 'COLOUR no'. COLOUR is RRGGBB (exactly) or RRGGBB~T (each channel
within T). Decoded with zlib alone (no imaging library)."""
import struct
import sys
import zlib


def pixels(path, rows):
    data = open(path, 'rb').read()
    assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
    pos, idat = 8, b''
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            w, h, _depth, ctype = struct.unpack('>IIBB', body[:10])
            bpp = {2: 3, 6: 4}[ctype]
        elif kind == b'IDAT':
            idat += body
        pos += 12 + n
    raw, stride, prev, seen = zlib.decompress(idat), w * bpp, None, set()
    for y in range(min(h, rows)):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i] if prev else 0
            c = prev[i - bpp] if prev and i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for x in range(0, stride, bpp):
            seen.add(bytes(line[x:x + 3]))
        prev = line
    return seen


def has(seen, spec):
    rgb, _, tol = spec.partition('~')
    want = bytes.fromhex(rgb)
    if not tol:
        return want in seen
    return any(all(abs(p[k] - want[k]) < int(tol) for k in range(3)) for p in seen)


args = sys.argv[1:]
rows = 1 << 30
if args[:1] == ['--rows']:
    rows, args = int(args[1]), args[2:]
seen = pixels(args[0], rows)
for spec in args[1:]:
    print(spec, 'yes' if has(seen, spec) else 'no')

#!/usr/bin/env python3
"""mandel_ctypes.py - the book's own way into compiled CUDA code: Python's ctypes calls
mandel_run in libmandel.so (the shared library of compiled_code's path 1), then compares the
image with the one compiled_code wrote (the C paths' image, equal to the CPU's).

    make compiled_code && ./compiled_code --size 400x300 --output c.png
    python3 mandel_ctypes.py --size 400x300 --compare c.png

Only the standard library. Exit 0: the same image; 1: different; 2: bad arguments or a missing
file; 3: a CUDA error; 77: no GPU.
"""
import argparse
import ctypes
import os
import struct
import sys
import zlib

X_MIN, Y_MIN, SPAN = -2.0, -1.25, 2.5  # as in compiled_code.c


def gpu_image(lib_path, width, height, max_iter):
    """The iteration counts, computed on the GPU by the library's mandel_run."""
    lib = ctypes.CDLL(lib_path)  # the twin of dlopen
    lib.mandel_run.restype = ctypes.c_int  # and of its prototype: say what C expects
    lib.mandel_run.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int, ctypes.c_float,
                               ctypes.c_float, ctypes.c_float, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    iters = (ctypes.c_int * (width * height))()  # a C array Python owns: the host buffer
    err = ctypes.create_string_buffer(256)
    # step = SPAN / width in float, as the C code computes it (c_float rounds the quotient once)
    if lib.mandel_run(iters, width, height, X_MIN, Y_MIN, SPAN / width, max_iter, err, len(err)):
        message = err.value.decode()
        no_gpu = "NoDevice" in message or "InsufficientDriver" in message or "StubLibrary" in message
        print(f"mandel_ctypes: mandel_run failed: {message}", file=sys.stderr)
        sys.exit(77 if no_gpu else 3)
    return iters


def png_gray_pixels(path):
    """The pixels of an 8-bit grayscale PNG as written by the lab book (filter type 0 rows)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG file")
    pos, idat, width, height = 8, b"", 0, 0
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            if (depth, color) != (8, 0):
                raise ValueError(f"{path}: not 8-bit grayscale")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    rows = [raw[r * (width + 1):(r + 1) * (width + 1)] for r in range(height)]
    if any(len(row) != width + 1 or row[0] != 0 for row in rows):
        raise ValueError(f"{path}: rows not as the lab book writes them")
    return width, height, b"".join(row[1:] for row in rows)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="1024x768", help="WxH, as compiled_code's --size")
    p.add_argument("--max-iter", type=int, default=256)
    p.add_argument("--lib", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "libmandel.so"))
    p.add_argument("--compare", default="compiled_code.png", help="the PNG compiled_code wrote")
    a = p.parse_args()
    try:
        width, height = (int(v) for v in a.size.lower().split("x"))
        if not (1 <= width <= 16384 and 1 <= height <= 16384 and 1 <= a.max_iter <= 1000000):
            raise ValueError
    except ValueError:
        p.error("--size WxH with each side 1..16384, --max-iter 1..1000000")
    for path, what in ((a.lib, "the shared library"), (a.compare, "compiled_code's image")):
        if not os.path.isfile(path):
            print(f"mandel_ctypes: {path}: no such file ({what}); build and run compiled_code first", file=sys.stderr)
            sys.exit(2)
    try:
        png_w, png_h, want = png_gray_pixels(a.compare)
    except (ValueError, zlib.error, struct.error) as e:
        print(f"mandel_ctypes: {e}", file=sys.stderr)
        sys.exit(2)
    if (png_w, png_h) != (width, height):
        print(f"mandel_ctypes: {a.compare} is {png_w}x{png_h}, not {width}x{height}: run both with the same --size",
              file=sys.stderr)
        sys.exit(2)

    iters = gpu_image(a.lib, width, height, a.max_iter)
    # shaded as compiled_code shades it: inside black, outside brighter the sooner it escapes
    got = bytes(0 if it >= a.max_iter else 255 - (255 * it) // a.max_iter for it in iters)
    wrong = sum(g != w for g, w in zip(got, want))
    print(f"mandel_ctypes: {width}x{height}, libmandel.so through ctypes vs {a.compare}: "
          + ("PASS (the same image)" if wrong == 0 else f"FAIL ({wrong} pixels differ)"))
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()

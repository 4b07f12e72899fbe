#!/usr/bin/env python3
"""Development checks of csrc/codecs/blosclz.c against python-blosc2 (FORMAT.md 3.3).

Builds the codec as a shared library in /tmp and loads it with ctypes, then:

  golden   decode every BloscLZ stream of the golden chunks
           (tests/data/vectors/chunks/*blosclz*.cdata) and check the
           *_nofilter ones against their inputs;
  decode   decode the BloscLZ streams inside chunks that python-blosc2 writes for
           many inputs / clevels / blocksizes;
  interop  compress many inputs with our encoder, wrap the streams in hand-built
           chunks and have python-blosc2 decompress them;
  ratio    compare stream sizes and throughput with python-blosc2's BloscLZ.

Usage: python3 csrc/tests/blosclz_vectors.py [golden|decode|interop|ratio|all] ...
Exit status is non-zero when a check fails.  Nothing is written to the repo.
"""
import ctypes
import glob
import os
import struct
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CSRC = os.path.dirname(HERE)
VECTORS = os.environ.get("NDPACK_VECTORS",
                         os.path.join(os.path.dirname(CSRC), "tests", "data", "vectors"))
LIB = os.environ.get("BLZ_LIB", "/tmp/ndpack_blosclz_dev.so")


def build_lib():
    src = os.path.join(CSRC, "codecs", "blosclz.c")
    if not os.path.exists(LIB) or os.path.getmtime(LIB) < os.path.getmtime(src):
        subprocess.check_call(["gcc", "-O3", "-std=c11", "-Wall", "-Wextra", "-Werror",
                               "-fPIC", "-shared", "-I" + os.path.join(CSRC, "codecs"),
                               *os.environ.get("BLZ_CFLAGS", "").split(),
                               src, "-o", LIB])
    lib = ctypes.CDLL(LIB)
    for fn in (lib.ndp_blosclz_compress,):
        fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        fn.restype = ctypes.c_int
    lib.ndp_blosclz_decompress.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                                           ctypes.c_int]
    lib.ndp_blosclz_decompress.restype = ctypes.c_int
    return lib


LIBC = None


def lib():
    global LIBC
    if LIBC is None:
        LIBC = build_lib()
    return LIBC


def decode(stream, n):
    out = ctypes.create_string_buffer(max(n, 1))
    r = lib().ndp_blosclz_decompress(stream, len(stream), out, n)
    if r != n:
        raise ValueError("decoder returned %d for a %d-byte stream, expected %d" % (r, len(stream), n))
    return out.raw[:n]


def encode(data, clevel, maxout=None):
    if maxout is None:
        maxout = len(data)
    out = ctypes.create_string_buffer(max(maxout, 1))
    r = lib().ndp_blosclz_compress(clevel, data, len(data), out, maxout)
    return out.raw[:r] if r > 0 else None


# --------------------------------------------------------------------------
# Chunk parsing (FORMAT.md 1.6): yields (block index, stream index, kind,
# payload, neblock) for every stream of a regular chunk.

def chunk_streams(chunk):
    flags, typesize = chunk[2], chunk[3]
    nbytes, blocksize, cbytes = struct.unpack_from("<iii", chunk, 4)
    ext = (flags & 0x05) == 0x05
    hlen = 32 if ext else 16
    if flags & 0x02:
        return None  # memcpyed
    if ext and (chunk[31] & 0x70):
        return None  # special value chunk
    if blocksize > nbytes:
        blocksize = nbytes
    nblocks = (nbytes + blocksize - 1) // blocksize
    bstarts = struct.unpack_from("<%di" % nblocks, chunk, hlen)
    out = []
    for j in range(nblocks):
        bsize = min(blocksize, nbytes - j * blocksize)
        nstreams = typesize if (bsize == blocksize and not (flags & 0x10)) else 1
        neblock = bsize // nstreams
        pos = bstarts[j]
        for k in range(nstreams):
            (csize,) = struct.unpack_from("<i", chunk, pos)
            pos += 4
            if csize == neblock:
                out.append((j, k, "raw", chunk[pos:pos + csize], neblock))
                pos += csize
            elif csize == 0:
                out.append((j, k, "zeros", b"", neblock))
            elif csize < 0:
                out.append((j, k, "run", bytes([(-csize) & 0xFF]), neblock))
                pos += 1
            else:
                out.append((j, k, "lz", chunk[pos:pos + csize], neblock))
                pos += csize
    return out


def stream_bytes(kind, payload, neblock):
    if kind == "raw":
        return payload
    if kind == "zeros":
        return bytes(neblock)
    if kind == "run":
        return payload * neblock
    return decode(payload, neblock)


def golden():
    import hashlib
    files = sorted(glob.glob(os.path.join(VECTORS, "chunks", "*blosclz*.cdata")))
    i64 = np.arange(1000, dtype=np.int64).tobytes()
    f32 = np.load(os.path.join(VECTORS, "input_f32_sin.npy")).tobytes()
    nstreams = nfail = 0
    for fn in files:
        chunk = open(fn, "rb").read()
        st = chunk_streams(chunk)
        name = os.path.basename(fn)
        if st is None:
            print("  %-40s memcpyed/special, skipped" % name)
            continue
        nlz = 0
        try:
            blocks = {}
            for j, k, kind, payload, neblock in st:
                blocks.setdefault(j, []).append(stream_bytes(kind, payload, neblock))
                nlz += kind == "lz"
            filtered = b"".join(b"".join(blocks[j]) for j in sorted(blocks))
        except ValueError as e:
            print("  %-40s FAIL %s" % (name, e))
            nfail += 1
            continue
        nstreams += nlz
        msg = "%d BloscLZ streams decoded" % nlz
        ref = i64 if name.startswith("i64") else f32
        if name.endswith("_nofilter.cdata") or name.endswith("_shuffle.cdata"):
            if name.endswith("_shuffle.cdata"):
                # undo the byte shuffle block by block (FORMAT.md 2.2)
                ts = chunk[3]
                bs = struct.unpack_from("<i", chunk, 8)[0]
                un = []
                for j in range(0, len(filtered), bs):
                    b = np.frombuffer(filtered[j:j + bs], np.uint8)
                    m = len(b) // ts
                    un.append(b[:m * ts].reshape(ts, m).T.tobytes() + b[m * ts:].tobytes())
                filtered = b"".join(un)
            ok = filtered == ref
            msg += ", data %s" % ("matches input" if ok else "MISMATCH")
            nfail += not ok
        print("  %-40s %s (sha %s)" % (name, msg, hashlib.sha256(filtered).hexdigest()[:12]))
    print("golden: %d streams, %d failures" % (nstreams, nfail))
    return nfail == 0


# --------------------------------------------------------------------------
# Test inputs

def inputs(seed=1234):
    rng = np.random.default_rng(seed)
    d = {}
    x = np.linspace(0, 1000, 1 << 17)
    d["linspace_f64"] = x.tobytes()
    d["linspace_f64_shuf"] = x.view(np.uint8).reshape(-1, 8).T.copy().tobytes()
    s = (np.sin(np.linspace(0, 60, 1 << 17)) + rng.normal(0, 0.01, 1 << 17)).astype(np.float32)
    d["sin_noise_f32"] = s.tobytes()
    d["sin_noise_f32_shuf"] = s.view(np.uint8).reshape(-1, 4).T.copy().tobytes()
    d["arange_i64"] = np.arange(1 << 16, dtype=np.int64).tobytes()
    d["arange_i64_shuf"] = np.arange(1 << 16, dtype=np.int64).view(np.uint8).reshape(-1, 8).T.copy().tobytes()
    words = [b"the", b"quick", b"brown", b"fox", b"jumps", b"over", b"lazy", b"dog", b"lorem",
             b"ipsum", b"dolor", b"sit", b"amet", b"compression", b"block", b"chunk", b"array",
             b"frame", b"\n", b"data", b"value", b"of", b"and", b"a", b"in", b"to"]
    w = rng.zipf(1.4, 200000) % len(words)
    d["text"] = b" ".join(words[i] for i in w)[: 1 << 20]
    try:
        src = open(os.path.join(CSRC, "codecs", "blosclz.c"), "rb").read()
        d["c_source_x4"] = src * 4
    except OSError:
        pass
    d["random"] = rng.integers(0, 256, 1 << 18, dtype=np.uint8).tobytes()
    d["random_lowbits"] = rng.integers(0, 16, 1 << 18, dtype=np.uint8).tobytes()
    d["zeros"] = bytes(1 << 18)
    d["runs"] = np.repeat(rng.integers(0, 256, 4096, dtype=np.uint8), rng.integers(1, 100, 4096)).tobytes()
    ints = rng.integers(0, 1000, 1 << 16).astype(np.int32)
    d["small_ints_i32"] = ints.tobytes()
    d["small_ints_i32_shuf"] = ints.view(np.uint8).reshape(-1, 4).T.copy().tobytes()
    ts = (1_700_000_000_000 + np.cumsum(rng.integers(900, 1100, 1 << 16))).astype(np.int64)
    d["timestamps_i64_shuf"] = ts.view(np.uint8).reshape(-1, 8).T.copy().tobytes()
    temp = (20 + 5 * np.sin(np.arange(1 << 16) / 500) + rng.normal(0, .1, 1 << 16)).round(1)
    d["temp_f64"] = temp.tobytes()
    yy, xx = np.mgrid[0:256, 0:512]
    d["image_u16"] = ((xx + yy) // 4 + rng.integers(0, 3, (256, 512))).astype(np.uint16).tobytes()
    return d


def mixed(rng, n):
    """Random segments of runs, noise, repeats (near and far) and ramps."""
    out = bytearray()
    while len(out) < n:
        k = int(rng.integers(1, 3000))
        kind = int(rng.integers(0, 5))
        if kind == 0:
            out += bytes([int(rng.integers(0, 256))]) * k
        elif kind == 1:
            out += rng.integers(0, 256, k, dtype=np.uint8).tobytes()
        elif kind == 2 and len(out) > 0:
            dist = int(rng.integers(1, min(len(out), 80000) + 1))
            for _ in range(k):
                out.append(out[-dist])
        elif kind == 3:
            out += (np.arange(k) // int(rng.integers(1, 9))).astype(np.uint8).tobytes()
        else:
            out += rng.integers(0, 4, k, dtype=np.uint8).tobytes()
    return bytes(out[:n])


def blosc2_chunk(data, clevel, blocksize):
    import blosc2
    return blosc2.compress2(data, codec=blosc2.Codec.BLOSCLZ, clevel=clevel,
                            filters=[blosc2.Filter.NOFILTER], splitmode=blosc2.SplitMode.NEVER_SPLIT,
                            nthreads=1, typesize=1, blocksize=blocksize)


def decode_check():
    """Decode the streams of python-blosc2 BloscLZ chunks for many inputs."""
    nst = nfail = 0
    rng = np.random.default_rng(7)
    cases = list(inputs().items())
    for n in (17, 33, 100, 1000, 5000, 70000, 200000):
        cases.append(("mix%d" % n, (rng.integers(0, 4, n, dtype=np.uint8) * 50).tobytes()))
    for i in range(40):
        n = int(rng.integers(16, 1 << 20))
        cases.append(("mixed%d_%d" % (i, n), mixed(rng, n)))
    for name, data in cases:
        for clevel in range(1, 10):
            for bs in (4096, 65536, 1 << 20):
                chunk = blosc2_chunk(data, clevel, bs)
                st = chunk_streams(chunk)
                if st is None:
                    continue
                got = []
                for j, k, kind, payload, neblock in st:
                    try:
                        got.append(stream_bytes(kind, payload, neblock))
                    except ValueError as e:
                        print("  FAIL %s clevel %d bs %d block %d: %s" % (name, clevel, bs, j, e))
                        nfail += 1
                        got.append(b"")
                    nst += kind == "lz"
                if b"".join(got) != data:
                    print("  MISMATCH %s clevel %d bs %d" % (name, clevel, bs))
                    nfail += 1
    print("decode: %d python-blosc2 BloscLZ streams decoded, %d failures" % (nst, nfail))
    return nfail == 0


def make_chunk(data, clevel, blocksize):
    """Hand-built chunk (FORMAT.md 1.6) whose streams come from our encoder."""
    nbytes = len(data)
    nblocks = (nbytes + blocksize - 1) // blocksize
    parts = []
    for j in range(nblocks):
        blk = data[j * blocksize:(j + 1) * blocksize]
        s = encode(blk, clevel)
        if s is None:
            parts.append(struct.pack("<i", len(blk)) + blk)
        else:
            assert len(s) < len(blk)
            parts.append(struct.pack("<i", len(s)) + s)
    off = 32 + 4 * nblocks
    bstarts = []
    for p in parts:
        bstarts.append(off)
        off += len(p)
    hdr = bytearray(32)
    hdr[0], hdr[1], hdr[2], hdr[3] = 5, 1, 0x05 | 0x10 | (0 << 5), 1
    struct.pack_into("<iii", hdr, 4, nbytes, blocksize, off)
    return bytes(hdr) + struct.pack("<%di" % nblocks, *bstarts) + b"".join(parts)


def interop_check():
    import blosc2
    nchunks = nfail = 0
    nlz = 0
    rng = np.random.default_rng(99)
    cases = list(inputs().items())
    for n in (32, 33, 47, 64, 65, 100, 257, 1000, 4097, 65536 + 7, 300001):
        cases.append(("mix%d" % n, (rng.integers(0, 3, n, dtype=np.uint8) * 7).tobytes()))
        cases.append(("ramp%d" % n, (np.arange(n) // 5).astype(np.uint8).tobytes()))
    for i in range(150):
        n = int(rng.integers(16, 400000))
        cases.append(("mixed%d_%d" % (i, n), mixed(rng, n)))
    for name, data in cases:
        for clevel in range(1, 10):
            bss = (2048, 32768, 262144, 1 << 21)
            if name.startswith("mixed"):
                bss = (int(rng.integers(16, 300000)),)
            for bs in bss:
                bs = min(bs, len(data))
                chunk = make_chunk(data, clevel, bs)
                nlz += sum(1 for s in chunk_streams(chunk) if s[2] == "lz")
                nchunks += 1
                try:
                    out = blosc2.decompress2(chunk)
                except Exception as e:  # noqa: BLE001
                    print("  FAIL %s clevel %d bs %d: python-blosc2 raised %r" % (name, clevel, bs, e))
                    nfail += 1
                    continue
                if out != data:
                    print("  MISMATCH %s clevel %d bs %d" % (name, clevel, bs))
                    nfail += 1
    print("interop: %d chunks (%d of our BloscLZ streams) decoded by python-blosc2, %d failures"
          % (nchunks, nlz, nfail))
    return nfail == 0


def best_time(fn, reps):
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def ratio_report(clevels=(1, 3, 5, 7, 9), blocksize=262144, names=None):
    """Stream bytes (sum over blocks) and single-thread MB/s, ours vs python-blosc2."""
    import blosc2
    d = inputs()
    if names:
        d = {k: v for k, v in d.items() if k in names}
    L = lib()
    print("blocksize %d; sizes are total stream bytes (raw blocks count as their size);"
          " MB/s of uncompressed data" % blocksize)
    print("%-20s %2s %9s %9s %7s | %7s %7s | %7s %7s" % (
        "input", "cl", "ours", "blosc2", "ours/b2", "c ours", "c b2", "d ours", "d b2"))
    for name, data in d.items():
        n = len(data)
        nb = (n + blocksize - 1) // blocksize
        blocks = [data[j * blocksize:(j + 1) * blocksize] for j in range(nb)]
        outbuf = ctypes.create_string_buffer(blocksize)
        decbuf = ctypes.create_string_buffer(blocksize)
        for cl in clevels:
            streams = []

            def comp():
                streams.clear()
                for b in blocks:
                    r = L.ndp_blosclz_compress(cl, b, len(b), outbuf, len(b))
                    streams.append(outbuf.raw[:r] if r > 0 else None)

            reps = max(3, int(2e7 // max(n, 1)))
            tc = best_time(comp, reps)
            ours = sum(len(s) if s else len(b) for s, b in zip(streams, blocks))

            def dec():
                for s, b in zip(streams, blocks):
                    if s:
                        L.ndp_blosclz_decompress(s, len(s), decbuf, len(b))

            td = best_time(dec, reps)
            chunk = blosc2_chunk(data, cl, blocksize)
            theirs = 0
            for _, _, kind, payload, neblock in chunk_streams(chunk) or []:
                theirs += len(payload) if kind in ("lz", "raw") else 1
            if chunk_streams(chunk) is None:
                theirs = n
            tcb = best_time(lambda: blosc2_chunk(data, cl, blocksize), reps)
            tdb = best_time(lambda: blosc2.decompress2(chunk), reps)
            dec_ours = "%7.0f" % (n / td / 1e6) if any(streams) else "    raw"
            print("%-20s %2d %9d %9d %7.3f | %7.0f %7.0f | %s %7.0f" % (
                name, cl, ours, theirs, ours / theirs, n / tc / 1e6, n / tcb / 1e6,
                dec_ours, n / tdb / 1e6))


def main(argv):
    what = argv[1] if len(argv) > 1 else "all"
    ok = True
    if what in ("golden", "all"):
        ok &= golden()
    if what in ("decode", "all"):
        ok &= decode_check()
    if what in ("interop", "all"):
        ok &= interop_check()
    if what in ("ratio", "all"):
        bs = int(argv[2]) if len(argv) > 2 else 262144
        ratio_report(blocksize=bs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))

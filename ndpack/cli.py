"""The ``ndpack`` command: inspect, convert and compute on Blosc2 files.

    ndpack info PATH|URL [--json]           what a file holds (array, frame, saved expression)
    ndpack compress IN OUT [--codec --clevel --filter --chunksize]
    ndpack decompress IN OUT                .b2nd/.b2frame -> .npy (or raw bytes)
    ndpack eval EXPR NAME=PATH... -o OUT    evaluate an expression over files, with progress
    ndpack bench                            the quick benchmark suite
    ndpack verify PATH...                   check every chunk of files/stores (checksums)
    ndpack verify --add-checksums PATH...   give files chunk and block checksums (atomically)

``compress`` reads ``.npy`` files (streamed through a memory map, chunk by chunk) or
any other file as raw bytes; ``decompress`` writes ``.npy`` for arrays.  Errors go to
stderr with exit status 1 (2 for bad usage, as argparse does); Ctrl-C exits with 130
and leaves no partial output under the target name.  Every error is one line
(``ndpack COMMAND: message``); ``ndpack --debug COMMAND ...`` shows the traceback.
Progress of ``eval`` uses tqdm when it is installed, else one plain line on a terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

from ndpack.codecs import Codec, Filter, codec_status
from ndpack.engine.api import lazyexpr
from ndpack.engine.expr.lazyexpr import LazyExpr
from ndpack.engine.persist import open as nd_open
from ndpack.errors import NdpackError, ParameterError
from ndpack.storage.constructors import asarray
from ndpack.storage.atomic import replacing
from ndpack.storage.ndarray import NDArray, holding
from ndpack.storage.remote import RemoteSource
from ndpack.storage.schunk import SChunk
from ndpack.storage.verify import add_checksums, verify_path

__all__ = ["main"]


def _describe(obj, path) -> dict:
    if isinstance(obj, LazyExpr):
        return {"path": path, "kind": "saved expression", "shape": list(obj.shape),
                "dtype": str(obj.dtype), "expression": repr(obj.node),
                "operands": {k: getattr(v, "urlpath", None) for k, v in obj.operands.items()}}
    if hasattr(obj, "func") and hasattr(obj, "chunks"):          # a saved LazyUDF
        return {"path": path, "kind": "saved user function", "shape": list(obj.shape),
                "dtype": str(obj.dtype)}
    schunk = obj.schunk if isinstance(obj, NDArray) else obj
    cp = schunk.cparams
    out = {"path": path, "kind": "NDArray" if isinstance(obj, NDArray) else "SChunk",
           "nbytes": int(schunk.nbytes), "cbytes": int(schunk.cbytes),
           "cratio": round(float(schunk.cratio), 3), "nchunks": int(schunk.nchunks),
           "chunksize": int(schunk.chunksize), "typesize": int(schunk.typesize),
           "codec": Codec(cp.codec).name, "clevel": int(cp.clevel),
           "filters": [Filter(f).name for f in cp.filters if f],
           "contiguous": bool(schunk.contiguous),
           "checksums": ("crc32c" if schunk.frame.crcs is not None else
                         "stale" if schunk.frame.crc_stale else "none"),
           "block_checksums": (schunk.frame.crcs.with_blocks()
                               if schunk.frame.crcs is not None else 0),
           "metalayers": sorted(schunk.meta), "vlmeta": _plain(dict(schunk.vlmeta))}
    # the codec and filters of the file in this build: built in, or why not
    status = codec_status()
    used = [Codec(cp.codec).name] + [Filter(f).name for f in cp.filters if f]
    out["support"] = {name: status.get(name, "registered or unknown") for name in used}
    if isinstance(obj, NDArray):
        out.update(shape=list(obj.shape), dtype=str(obj.dtype), chunks=list(obj.chunks),
                   blocks=list(obj.blocks))
    return out


def _plain(v):
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (np.generic, np.ndarray)):
        return v.tolist()
    if isinstance(v, bytes):
        return v.hex()
    return v if isinstance(v, (str, int, float, bool, type(None))) else repr(v)


def cmd_info(args) -> int:
    obj = nd_open(args.path, mode="r")
    info = _describe(obj, args.path)
    reader = getattr(getattr(getattr(obj, "schunk", None), "frame", None), "reader", None)
    if isinstance(reader, RemoteSource):        # a URL: what reading the metadata cost
        info["remote"] = {"requests": reader.requests, "bytes": reader.fetched,
                          "etag": reader.etag}
    if args.json:
        print(json.dumps(info, indent=1))
    else:
        width = max(len(k) for k in info)
        for k, v in info.items():
            print(f"{k:<{width}}  {v}")
    return 0


def _cparams(args) -> dict:
    cp = {"codec": Codec[args.codec.upper()], "clevel": args.clevel}
    if args.filter:
        cp["filters"] = [Filter[args.filter.upper()]]
        cp["filters_meta"] = [0]
    return cp


def cmd_compress(args) -> int:
    # outputs appear under their name only when complete (ndpack/storage/atomic.py)
    if args.input.endswith(".npy"):
        src = np.load(args.input, mmap_mode="r")       # streamed: chunk by chunk
        asarray(src, cparams=_cparams(args), urlpath=args.output, mode="w")
    else:
        cp = _cparams(args)
        s = SChunk(chunksize=args.chunksize, cparams=cp, urlpath=args.output, mode="w",
                   _commit=False)
        with holding(s), open(args.input, "rb") as f:
            while block := f.read(args.chunksize):
                s.append_data(block)
            s.vlmeta["ndpack:file"] = {"name": os.path.basename(args.input)}
        s.close()
    return 0


def cmd_decompress(args) -> int:
    obj = nd_open(args.input, mode="r")
    if isinstance(obj, LazyExpr):
        obj = obj.compute()
    with replacing(args.output) as tmp:          # in place only when complete
        if isinstance(obj, NDArray):
            out = np.lib.format.open_memmap(tmp, mode="w+", dtype=obj.dtype, shape=obj.shape)
            for n in range(obj.schunk.nchunks):            # one chunk in memory at a time
                region = obj.chunk_region(n)
                out[region] = obj[region]
            out.flush()
            del out
        else:
            with open(tmp, "wb") as f:
                for n in range(obj.nchunks):
                    f.write(obj.decompress_chunk(n))
    return 0


def cmd_eval(args) -> int:
    operands = {}
    for item in args.operands:
        name, sep, path = item.partition("=")
        if not sep or not name.isidentifier():
            raise ParameterError(f"operand {item!r} is not NAME=PATH")
        operands[name] = nd_open(path, mode="r")
    expr = lazyexpr(args.expression, operands=operands)
    kwargs = {"cparams": _cparams(args)} if args.codec else {}
    expr.compute(urlpath=args.output, progress=not args.quiet, **kwargs)
    return 0


def cmd_bench(args) -> int:
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "benchmarks")
    if not os.path.isdir(root):
        raise FileNotFoundError("the benchmarks/ folder of a source checkout is needed "
                                "(it is not installed with the package)")
    status = 0
    for name in sorted(os.listdir(root)):
        if name.startswith("bench_") and name.endswith(".py"):
            print(f"== {name}", flush=True)
            status |= subprocess.call([sys.executable, name, "--quick"], cwd=root)
    return status


def cmd_verify(args) -> int:
    if args.add_checksums:
        for path in args.paths:
            print(add_checksums(path), flush=True)
        return 0
    bad = 0
    for path in args.paths:
        for res in verify_path(path):
            bad += not res.ok
            if not (args.quiet and res.ok):
                print(res.line(), flush=True)
    return 1 if bad else 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ndpack", description=__doc__.splitlines()[0])
    p.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = p.add_subparsers(dest="command", required=True)
    debug = argparse.ArgumentParser(add_help=False)       # --debug after the command too
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show tracebacks of errors")
    q = sub.add_parser("info", parents=[debug],
                       help="describe a .b2nd/.b2frame/sparse frame/saved expression")
    q.add_argument("path")
    q.add_argument("--json", action="store_true")
    q.set_defaults(run=cmd_info)
    for name, run in (("compress", cmd_compress), ("decompress", cmd_decompress)):
        q = sub.add_parser(name, parents=[debug], help=f"{name} a file")
        q.add_argument("input")
        q.add_argument("output")
        if name == "compress":
            q.add_argument("--codec", default="zstd", choices=[c.name.lower() for c in Codec])
            q.add_argument("--clevel", type=int, default=5)
            q.add_argument("--filter", choices=[f.name.lower() for f in Filter])
            q.add_argument("--chunksize", type=int, default=8 * 2**20,
                           help="bytes per chunk for raw files (default 8 MiB)")
        q.set_defaults(run=run)
    q = sub.add_parser("eval", parents=[debug],
                       help="evaluate an expression over files into a .b2nd file")
    q.add_argument("expression")
    q.add_argument("operands", nargs="+", metavar="NAME=PATH")
    q.add_argument("-o", "--output", required=True)
    q.add_argument("--codec", choices=[c.name.lower() for c in Codec])
    q.add_argument("--clevel", type=int, default=5)
    q.add_argument("--filter", choices=[f.name.lower() for f in Filter])
    q.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    q.set_defaults(run=cmd_eval)
    q = sub.add_parser("verify", parents=[debug],
                       help="read every chunk of files or stores, checking the checksums "
                            "they carry; exit status 1 if anything is wrong")
    q.add_argument("paths", nargs="+", metavar="PATH")
    q.add_argument("-q", "--quiet", action="store_true", help="print only problems")
    q.add_argument("--add-checksums", action="store_true",
                   help="give the files chunk and block checksums (python-blosc2's, older "
                        "ndpack's), atomically, without rewriting their data")
    q.set_defaults(run=cmd_verify)
    q = sub.add_parser("bench", parents=[debug], help="run the quick benchmark suite")
    q.set_defaults(run=cmd_bench)
    return p


def main(argv=None) -> int:
    """Entry point of the ``ndpack`` command; returns the exit status.

    Errors are one line on stderr (``ndpack COMMAND: message``) with status 1; ``--debug``
    shows the traceback instead.
    """
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print("ndpack: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:        # noqa: BLE001 -- a command never shows a traceback
        if args.debug:
            raise
        print(f"ndpack {args.command}: {_one_line(exc)}", file=sys.stderr)
        return 1


def _one_line(exc: BaseException) -> str:
    """The exception as one line; its type is named unless it is one of ours or a plain
    file error, whose messages say what went wrong on their own."""
    text = " ".join(str(exc).split()) or "(no message)"
    if isinstance(exc, (NdpackError, OSError)):
        return text
    return f"{type(exc).__name__}: {text}"


if __name__ == "__main__":
    raise SystemExit(main())

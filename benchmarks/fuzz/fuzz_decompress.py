"""Coverage-guided fuzzing of the Python decoding entry points with atheris (long mode).

    pip install atheris
    python benchmarks/fuzz/fuzz_decompress.py -atheris_runs=2000000 [corpus_dir]

Every input is fed to decompress, getitem, decompress_blocks and chunk_info; the only
acceptable outcomes are a result or an ndpack error (FormatError, CodecError,
FilterError, ParameterError).  Anything else -- another exception or a crash -- is a
finding.  The quick mode that CI runs is the C mutation fuzzer (`make asan`); the long
C run is `make fuzz`.
"""

import sys

import atheris

with atheris.instrument_imports():
    import ndpack
    from ndpack import chunks

EXPECTED = (ndpack.NdpackError,)


def test_one(data: bytes) -> None:
    try:
        info = ndpack.chunk_info(data)
    except EXPECTED:
        return
    if info["nbytes"] > 1 << 24:
        return
    for call in (lambda: ndpack.decompress(data),
                 lambda: chunks.getitem(data, 1, max(0, info["nbytes"] // max(1, info["typesize"]) - 2)),
                 lambda: chunks.decompress_blocks(data, [max(0, info["nblocks"] - 1), 0])):
        try:
            call()
        except EXPECTED:
            pass


def main() -> None:
    atheris.Setup(sys.argv, test_one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

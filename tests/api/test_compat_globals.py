"""python-blosc2's Blosc1-style globals (set_compressor, set_blocksize), machine facts
(cpu_info, VERSION_DATE), index names (IndexKind, Index, iter_sorted), NDField and
estore_from_cframe, against python-blosc2 itself and NumPy."""

import threading

import numpy as np
import pytest

import ndpack

blosc2 = pytest.importorskip("blosc2")


@pytest.fixture
def restore_globals():
    yield
    ndpack.set_blocksize(0)
    ndpack.set_compressor(ndpack.Codec.BLOSCLZ)
    blosc2.set_blocksize(0)
    blosc2.set_compressor(blosc2.Codec.BLOSCLZ)


def test_compressor_default_and_return_codes(restore_globals):
    assert ndpack.get_compressor() == blosc2.get_compressor() == "blosclz"
    for name in ("BLOSCLZ", "LZ4", "LZ4HC", "ZLIB", "ZSTD", "NDLZ", "ZFP_ACC", "OPENHTJ2K"):
        mine = ndpack.set_compressor(getattr(ndpack.Codec, name))
        theirs = blosc2.set_compressor(getattr(blosc2.Codec, name))
        assert mine == theirs, name
        assert ndpack.get_compressor() == blosc2.get_compressor(), name
    # python-blosc2's members are taken by name
    assert ndpack.set_compressor(blosc2.Codec.LZ4) == 1 and ndpack.get_compressor() == "lz4"


@pytest.mark.parametrize("bad", ["zstd", 5, None, 4.0])
def test_set_compressor_refuses_what_python_blosc2_refuses(bad, restore_globals):
    with pytest.raises(AttributeError):
        blosc2.set_compressor(bad)
    with pytest.raises(AttributeError, match="codec"):
        ndpack.set_compressor(bad)
    assert ndpack.get_compressor() == "blosclz"


def test_compressor_changes_no_call(restore_globals):
    """python-blosc2 4.14.1: every call passes its own codec= default."""
    x = np.arange(100_000.0)
    calls = (ndpack.compress, ndpack.pack, ndpack.pack_array, ndpack.compress2)
    before = [ndpack.get_clib(f(x)) for f in calls]
    ndpack.set_compressor(ndpack.Codec.LZ4)
    blosc2.set_compressor(blosc2.Codec.LZ4)
    after = [f(x) for f in calls]
    assert before == [ndpack.get_clib(c) for c in after]
    assert ndpack.get_clib(after[0]) == blosc2.get_clib(blosc2.compress(x)) == "Zstd"
    assert ndpack.get_clib(after[1]) == blosc2.get_clib(blosc2.pack(x)) == "BloscLZ"


def test_blocksize_reaches_the_blosc1_calls_only(restore_globals):
    x = np.arange(100_000.0)
    auto = ndpack.get_cbuffer_sizes(ndpack.compress2(x))[2]
    ndpack.set_blocksize(4096)
    blosc2.set_blocksize(4096)
    assert ndpack.get_blocksize() == blosc2.get_blocksize() == 4096
    for f in ("compress", "pack", "pack_array"):
        mine = getattr(ndpack, f)(x)
        theirs = getattr(blosc2, f)(x)
        assert ndpack.get_cbuffer_sizes(mine)[2] == blosc2.get_cbuffer_sizes(theirs)[2] == 4096
    np.testing.assert_array_equal(blosc2.unpack_array(ndpack.pack_array(x)), x)
    np.testing.assert_array_equal(np.frombuffer(blosc2.decompress(ndpack.compress(x))), x)
    assert ndpack.get_cbuffer_sizes(ndpack.compress2(x))[2] == auto
    a = ndpack.asarray(x)
    assert a.blocksize == ndpack.asarray(x, blocks=a.blocks).blocksize != 4096
    ndpack.set_blocksize(0)
    assert ndpack.get_blocksize() == 0
    assert ndpack.get_cbuffer_sizes(ndpack.compress(x))[2] != 4096


def test_set_blocksize_errors(restore_globals):
    for bad, exc in ((-1, OverflowError), ("a", TypeError), (None, TypeError)):
        with pytest.raises(exc):
            blosc2.set_blocksize(bad)
        with pytest.raises(exc):
            ndpack.set_blocksize(bad)
    with pytest.raises(ValueError, match="MAX_BLOCKSIZE"):
        ndpack.set_blocksize(2**31)
    assert ndpack.get_blocksize() == 0


def test_globals_under_threads(restore_globals):
    def work(bs):
        for _ in range(200):
            ndpack.set_blocksize(bs)
            assert ndpack.get_blocksize() in (1024, 2048)
    ts = [threading.Thread(target=work, args=(bs,)) for bs in (1024, 2048)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert ndpack.get_blocksize() in (1024, 2048)


def test_cpu_info_and_version_date():
    assert set(blosc2.cpu_info) <= set(ndpack.cpu_info)
    assert ndpack.get_cpu_info() == ndpack.cpu_info
    info = ndpack.get_cpu_info()
    assert info["count"] == ndpack.detect_number_of_cores()
    assert info["l1_data_cache_size"] == blosc2.cpu_info["l1_data_cache_size"]
    assert info["isa"] == ndpack.show_config(file=open("/dev/null", "w"))["isa"]
    assert ndpack.VERSION_DATE.startswith("$Date:: ") and ndpack.VERSION_DATE.endswith(" #$")
    assert len(ndpack.VERSION_DATE) == len(blosc2.VERSION_DATE)

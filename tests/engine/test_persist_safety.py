"""Saved expressions from untrusted files (issue 23, item 4): cycles, malformed carriers
and operand paths outside the carrier's folder are clean errors, and refused paths are
never opened."""

import os

import blosc2
import numpy as np
import pytest

import ndpack
from ndpack.errors import FormatError
from ndpack.storage.constructors import uninit

KIND = {"kind": "lazyexpr", "version": 1}


def carrier(path, meta, vlmeta, shape=(3,)):
    c = uninit(shape, urlpath=path, mode="w", meta=meta)
    for k, v in vlmeta.items():
        c.vlmeta[k] = v
    c.schunk.close()


def expr_carrier(path, text, operands, shape=(3,)):
    ops = {k: {"kind": "urlpath", "version": 1, "urlpath": v} for k, v in operands.items()}
    carrier(path, {"b2o": dict(KIND)}, {"b2o": {**KIND, "expression": text, "operands": ops}},
            shape)


@pytest.fixture
def operand(tmp_path):
    ndpack.asarray(np.arange(3.0), urlpath=tmp_path / "a.b2nd", mode="w")
    return tmp_path


# ---------------------------------------------------------------------------------------
# cycles

def test_carrier_naming_itself(tmp_path):
    expr_carrier(tmp_path / "self.b2nd", "x + 1", {"x": "self.b2nd"})
    with pytest.raises(FormatError, match=r"cycle: .*self\.b2nd.* -> .*self\.b2nd"):
        ndpack.open(tmp_path / "self.b2nd")


def test_two_carriers_naming_each_other(tmp_path):
    expr_carrier(tmp_path / "p.b2nd", "q * 2", {"q": "q.b2nd"})
    expr_carrier(tmp_path / "q.b2nd", "p + 1", {"p": "p.b2nd"})
    with pytest.raises(FormatError, match=r"p\.b2nd.* -> .*q\.b2nd.* -> .*p\.b2nd"):
        ndpack.open(tmp_path / "p.b2nd")


def test_cycle_through_legacy_layout_and_a_subfolder(tmp_path):
    os.mkdir(tmp_path / "sub")
    expr_carrier(tmp_path / "top.b2nd", "s - 1", {"s": "sub/s.b2nd"})
    carrier(tmp_path / "sub" / "s.b2nd", {"LazyArray": 0},
            {"_LazyArray": {"expression": "o0 * 3", "operands": {"o0": "s.b2nd"}}})
    with pytest.raises(FormatError, match="cycle"):
        ndpack.open(tmp_path / "top.b2nd")


def test_a_long_chain_is_cut(tmp_path):
    n = 70
    for i in range(n):
        expr_carrier(tmp_path / f"c{i}.b2nd", "x + 1", {"x": f"c{i + 1}.b2nd"})
    ndpack.asarray(np.zeros(3), urlpath=tmp_path / f"c{n}.b2nd", mode="w")
    with pytest.raises(FormatError, match="nested more than"):
        ndpack.open(tmp_path / "c0.b2nd")
    np.testing.assert_array_equal(ndpack.open(tmp_path / "c40.b2nd")[()], np.full(3, 30.0))


def test_a_diamond_is_not_a_cycle(operand):
    tmp = operand
    expr_carrier(tmp / "l.b2nd", "a + 1", {"a": "a.b2nd"})
    expr_carrier(tmp / "d.b2nd", "l * l + a", {"l": "l.b2nd", "a": "a.b2nd"})
    x = np.arange(3.0)
    np.testing.assert_array_equal(ndpack.open(tmp / "d.b2nd")[()], (x + 1) ** 2 + x)


# ---------------------------------------------------------------------------------------
# malformed carriers

MALFORMED = {
    "no b2o vlmeta": ({"b2o": dict(KIND)}, {}),
    "payload a list": ({"b2o": dict(KIND)}, {"b2o": [1, 2]}),
    "payload a string": ({"b2o": dict(KIND)}, {"b2o": "x"}),
    "operands a list": ({"b2o": dict(KIND)}, {"b2o": {**KIND, "expression": "x",
                                                       "operands": ["a.b2nd"]}}),
    "operand an int": ({"b2o": dict(KIND)}, {"b2o": {**KIND, "expression": "x",
                                                      "operands": {"x": 3}}}),
    "urlpath an int": ({"b2o": dict(KIND)}, {"b2o": {**KIND, "expression": "x", "operands": {
        "x": {"kind": "urlpath", "urlpath": 7}}}}),
    "urlpath empty": ({"b2o": dict(KIND)}, {"b2o": {**KIND, "expression": "x", "operands": {
        "x": {"kind": "urlpath", "urlpath": ""}}}}),
    "urlpath with NUL": ({"b2o": dict(KIND)}, {"b2o": {**KIND, "expression": "x", "operands": {
        "x": {"kind": "urlpath", "urlpath": "a\x00b"}}}}),
    "expression missing": ({"b2o": dict(KIND)}, {"b2o": {**KIND, "operands": {}}}),
    "expression bytes": ({"b2o": dict(KIND)}, {"b2o": {**KIND, "expression": b"a",
                                                        "operands": {}}}),
    "unknown name": ({"b2o": dict(KIND)}, {"b2o": {**KIND, "expression": "zz + 1",
                                                    "operands": {}}}),
    "syntax error": ({"b2o": dict(KIND)}, {"b2o": {**KIND, "expression": "a +* 1",
                                                    "operands": {}}}),
    "b2o meta a list": ({"b2o": [1]}, {}),
    "b2o meta None": ({"b2o": None}, {}),
    "legacy without vlmeta": ({"LazyArray": 0}, {}),
    "legacy payload a list": ({"LazyArray": 0}, {"_LazyArray": [1]}),
    "legacy operands a list": ({"LazyArray": 0}, {"_LazyArray": {"expression": "o0",
                                                                  "operands": ["a"]}}),
    "legacy kind a string": ({"LazyArray": "x"}, {"_LazyArray": {"expression": "1",
                                                                 "operands": {}}}),
    "operand name an int": ({"LazyArray": 0}, {"_LazyArray": {"expression": "o0",
                                                              "operands": {1: "a.b2nd"}}}),
    "shapes disagree": ({"b2o": dict(KIND)}, {"b2o": {**KIND, "expression": "a + b",
                                                       "operands": {
        "a": {"kind": "urlpath", "urlpath": "a.b2nd"},
        "b": {"kind": "urlpath", "urlpath": "b4.b2nd"}}}}),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_carriers_are_format_errors(case, operand):
    tmp = operand
    ndpack.asarray(np.arange(4.0), urlpath=tmp / "b4.b2nd", mode="w")
    meta, vlmeta = MALFORMED[case]
    carrier(tmp / "bad.b2nd", meta, vlmeta)
    with pytest.raises(FormatError):
        ndpack.open(tmp / "bad.b2nd")


def test_malformed_user_function_needs_trust_first(operand):
    tmp = operand
    carrier(tmp / "u.b2nd", {"LazyArray": 1}, {"_LazyArray": {"UDF": 5, "operands": {}}})
    with pytest.raises(PermissionError, match="trust_code"):
        ndpack.open(tmp / "u.b2nd")
    with pytest.raises(FormatError):
        ndpack.open(tmp / "u.b2nd", trust_code=True)


# ---------------------------------------------------------------------------------------
# operand paths

@pytest.fixture
def opened(monkeypatch):
    """Every path ndpack opens a file or directory at (os.open and builtins.open)."""
    seen = []
    real_os_open, real_open = os.open, open

    def os_open(path, *a, **k):
        seen.append(os.fspath(path))
        return real_os_open(path, *a, **k)

    def b_open(path, *a, **k):
        if isinstance(path, (str, bytes, os.PathLike)):
            seen.append(os.fspath(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr("builtins.open", b_open)
    return seen


HOSTILE = ["/dev/zero", "/proc/self/mem", "/etc/passwd", "../../x.b2nd", "../a.b2nd",
           "sub/../../a.b2nd", "/"]


@pytest.mark.parametrize("path", HOSTILE)
def test_paths_outside_the_folder_are_refused_before_opening(path, tmp_path, opened):
    folder = tmp_path / "deep" / "er"
    os.makedirs(folder)
    ndpack.asarray(np.arange(3.0), urlpath=tmp_path / "deep" / "a.b2nd", mode="w")
    expr_carrier(folder / "e.b2nd", "x + 1", {"x": path})
    del opened[:]
    with pytest.raises(PermissionError, match="operand_paths"):
        ndpack.open(folder / "e.b2nd")
    target = os.path.normpath(os.path.join(folder, path))
    assert [p for p in opened if os.path.normpath(p) == target] == []
    assert all(str(folder) in p for p in opened), opened     # only the carrier itself


def test_symlink_leaving_the_folder_is_refused(tmp_path):
    os.mkdir(tmp_path / "c")
    ndpack.asarray(np.arange(3.0), urlpath=tmp_path / "outside.b2nd", mode="w")
    os.symlink(tmp_path / "outside.b2nd", tmp_path / "c" / "link.b2nd")
    expr_carrier(tmp_path / "c" / "e.b2nd", "x + 1", {"x": "link.b2nd"})
    with pytest.raises(PermissionError):
        ndpack.open(tmp_path / "c" / "e.b2nd")
    e = ndpack.open(tmp_path / "c" / "e.b2nd", operand_paths=tmp_path)
    np.testing.assert_array_equal(e[()], np.arange(3.0) + 1)


def test_fifo_and_device_inside_allowed_folders_are_refused(tmp_path, opened):
    os.mkfifo(tmp_path / "f.b2nd")                  # opening it would block for ever
    expr_carrier(tmp_path / "e.b2nd", "x + 1", {"x": "f.b2nd"})
    with pytest.raises(PermissionError, match="not a regular file"):
        ndpack.open(tmp_path / "e.b2nd")
    expr_carrier(tmp_path / "z.b2nd", "x + 1", {"x": "/dev/zero"})
    with pytest.raises(PermissionError, match="not a regular file"):
        ndpack.open(tmp_path / "z.b2nd", operand_paths=["/dev"])
    assert not [p for p in opened if p.endswith(("f.b2nd", "zero"))]


def test_allow_list_opens_sibling_folders(tmp_path):
    os.mkdir(tmp_path / "data")
    os.mkdir(tmp_path / "exprs")
    a = ndpack.asarray(np.arange(4.0), urlpath=tmp_path / "data" / "a.b2nd", mode="w")
    (a * 3).save(tmp_path / "exprs" / "e.b2nd")
    with pytest.raises(PermissionError):
        ndpack.open(tmp_path / "exprs" / "e.b2nd")
    with pytest.raises(PermissionError):          # the allow-list is of directories
        ndpack.open(tmp_path / "exprs" / "e.b2nd", operand_paths=[tmp_path / "exprs"])
    e = ndpack.open(tmp_path / "exprs" / "e.b2nd", operand_paths=[tmp_path / "data"])
    np.testing.assert_array_equal(e[()], np.arange(4.0) * 3)
    with pytest.raises(ndpack.ParameterError, match="not a directory"):
        ndpack.open(tmp_path / "exprs" / "e.b2nd", operand_paths=[tmp_path / "nope"])


def test_subfolders_and_absolute_paths_inside_the_folder_open(operand):
    tmp = operand
    os.mkdir(tmp / "s")
    ndpack.asarray(np.ones(3), urlpath=tmp / "s" / "b.b2nd", mode="w")
    expr_carrier(tmp / "e.b2nd", "a + b + c", {"a": "a.b2nd", "b": "s/b.b2nd",
                                               "c": str(tmp / "a.b2nd")})
    np.testing.assert_array_equal(ndpack.open(tmp / "e.b2nd")[()], np.arange(3.0) * 2 + 1)


def test_python_blosc2_cwd_relative_paths_open(tmp_path, monkeypatch):
    """python-blosc2 stores operand paths as given (here relative to the directory it
    ran in): operands beside the carrier still open from there."""
    monkeypatch.chdir(tmp_path)
    os.mkdir("sub")
    a = blosc2.asarray(np.arange(5.0), urlpath="sub/a.b2nd", mode="w")
    b = blosc2.asarray(np.ones(5), urlpath=str(tmp_path / "sub" / "b.b2nd"), mode="w")
    blosc2.lazyexpr("a * 2 + b", operands={"a": a, "b": b}).save("sub/e.b2nd")
    want = np.arange(5.0) * 2 + 1
    np.testing.assert_array_equal(ndpack.open("sub/e.b2nd")[()], want)
    np.testing.assert_array_equal(ndpack.open(tmp_path / "sub" / "e.b2nd")[()], want)


def test_missing_operands_still_listed(operand):
    tmp = operand
    expr_carrier(tmp / "e.b2nd", "a + m", {"a": "a.b2nd", "m": "gone.b2nd"})
    with pytest.raises(ndpack.MissingOperandsError) as info:
        ndpack.open(tmp / "e.b2nd")
    assert set(info.value.missing) == {"m"}

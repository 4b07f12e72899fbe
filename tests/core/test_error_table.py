"""The binding's one error table: every C status code arrives as an ndpack error that is
also the builtin users expect (docs: ndpack/errors.py), with the status name as message
when the core gives none.  The codes are the header's enum (``ndp_status`` of
csrc/include/ndpack.h, declared in ``ndpack/_core.pxd``)."""

from __future__ import annotations

import pathlib
import re

import pytest

from ndpack import _core, errors

EXPECTED = {   # code: (class, the builtin it must also be)
    -1: (errors.FormatError, ValueError),
    -2: (errors.CodecError, ValueError),
    -3: (errors.FilterError, ValueError),
    -4: (errors.ParameterError, ValueError),
    -5: (errors.ParameterError, ValueError),
    -6: (errors.NdpackMemoryError, MemoryError),
    -7: (errors.CallbackError, RuntimeError),
    -8: (errors.ThreadError, RuntimeError),
}

HEADER = pathlib.Path(__file__).resolve().parents[2] / "csrc" / "include" / "ndpack.h"


def test_the_table_covers_the_enum():
    assert _core.ERROR_CODES == tuple(sorted(EXPECTED, reverse=True))
    if HEADER.is_file():                      # absent in the wheel's run (.ci/wheel.sh)
        enum = re.search(r"typedef enum \{(.*?)\} ndp_status;", HEADER.read_text(), re.S)
        codes = {int(v) for v in re.findall(r"NDP_ERR_\w+ = (-\d+)", enum.group(1))}
        assert codes == set(EXPECTED)


@pytest.mark.parametrize("code", sorted(EXPECTED))
def test_every_code_raises_an_ndpack_error(code):
    cls, builtin = EXPECTED[code]
    with pytest.raises(cls) as info:
        _core.raise_status(code)
    exc = info.value
    assert type(exc) is cls
    assert isinstance(exc, errors.NdpackError) and isinstance(exc, builtin)
    assert str(exc)                           # the status name (no message given)


def test_an_unknown_code_is_still_ours():
    with pytest.raises(errors.NdpackError):
        _core.raise_status(-99)

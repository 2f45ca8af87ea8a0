"""The control client's format <-> proto mode rule against the Go side's
mode table (the proto enum's values are cxl.Mode + 1)."""

import pytest

from nfabric._proto.nfabric.v1 import controller_pb2 as cpb
from nfabric.lowbit import Format
from nfabric.torch.control import format_of_mode, mode_name

# Go's cxl.Aggregate, written out by hand: the oracle of the rule.
GO_MODE_OF = {Format.FP32: "MODE_FP32_BYPASS", Format.BINARY: "MODE_G_BINARY", Format.TERNARY: "MODE_G_TERNARY",
              Format.INT8: "MODE_INT8", Format.BFP8: "MODE_BFP8"}


def test_mode_of_every_format():
    assert set(GO_MODE_OF) == set(Format)
    for f, want in GO_MODE_OF.items():
        assert mode_name(f) == want
        cpb.Mode.Value(want)  # the proto has it
        assert format_of_mode(want) == f


def test_mode_without_format_is_an_error():
    with pytest.raises(ValueError, match="MODE_IDENTITY"):
        format_of_mode("MODE_IDENTITY")

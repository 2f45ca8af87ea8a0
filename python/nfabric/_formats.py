"""The payload format table, generated from Go's lowbit.formatTraits.

Do not edit: go test ./lowbit -run Golden -update rewrites it, and the Go
tests fail when it is stale. Each entry is (number, name, aliases, family,
bits per element, paper): number as in Go and the payload header; family
"fp32" (the software collective), "vote" (G-Binary, G-Ternary: a sign vote)
or "sum" (INT8, BFP8: an integer lane sum decoded to the mean); bits per
element and worker under every accounting, None where the accounting
decides (G-Ternary: 1.58 by the paper's, 1 or 2 stored); paper: the paper
evaluates it.
"""

FORMATS = (
    (0, "fp32", ("float32",), "fp32", 32.0, True),
    (1, "g-binary", ("gbinary", "binary", "bin"), "vote", 1.0, True),
    (2, "g-ternary", ("gternary", "ternary", "ter"), "vote", None, True),
    (3, "int8", ("int-8", "fixed8"), "sum", 8.0, False),
    (4, "bfp8", ("bfp", "block-fp8"), "sum", 8.125, False),
)

BFP_BLOCK = 64
INT8_MAX = 127
SCALE_BITS = 32
SUM_MIN, SUM_MAX = -32768, 32767

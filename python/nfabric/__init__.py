"""nfabric: NEURON-Fabric low-bit gradient aggregation.

``nfabric.lowbit`` and ``nfabric.payload`` are the torch twins of the Go
packages of the same names (bit-exact); ``nfabric.policy`` holds the
aggregation policies; ``nfabric.torch`` the DDP hook and virtual workers.
"""

__version__ = "0.1.0"

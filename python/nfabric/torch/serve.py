"""Clients of ``nfabric serve`` (the Go controller model and control plane
over gRPC, ``api/nfabric/v1``).

* :class:`Client` connects (``unix:///path``, a socket path, or
  ``host:port`` with a bearer token) and checks that the server speaks
  nfabric.v1 before anything else happens.
* :class:`ControllerBackend` is the hook's ``backend="controller"``: every
  rank opens its own device, maps one region per parameter tensor (its
  flattened index as ``element0``, so the positional gate is the model's),
  writes the W workers' payload lines (all-gathered, as on the
  ``collective`` path) under the step's mode latch and reads the
  aggregate back: the paper's Fig. 1 path, for fidelity checks. INT8 and
  BFP8 groups (beyond the paper) go through a sum region per tensor
  (:meth:`ControllerBackend.sum_fixed`). It gives updates bit-identical
  to the ``collective`` backend.
* :class:`SharedBuffer` is the shared-memory data path (Unix socket
  only): a staging buffer of the server mapped into this process, whose
  lines a Transact commits (``shared_write``) or fills with an aggregate
  (``shared_read``); ``ControllerBackend(shared=True)`` uses it instead of
  sending payload bytes in messages. Same semantics, same bytes.
* :class:`ServeControl` is a controller (``control=``): rank 0 holds a
  session with the control service, sends each step, the loss the loop
  reports, NaN/Inf reports and optional per-group diagnostics, and applies
  the mode writes the plane returns. A failing call raises, and the hook
  then runs that step on FP32 with a warning.
"""

from __future__ import annotations

import base64
import os
import time
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from .. import lowbit
from ..lowbit import Format, GateKind, Layout
from .control import format_of_mode, mode_name

__all__ = ["Client", "ControllerBackend", "ServeControl", "ServeError", "SharedBuffer"]


class ServeError(RuntimeError):
    """nfabric serve could not be used: unreachable, another API version,
    or a call it rejected."""


def _modules():
    try:
        import grpc  # noqa: F401
    except ImportError:
        raise ServeError("talking to nfabric serve needs grpcio (Debian: python3-grpcio; pip: grpcio)") from None
    try:
        from .._proto.nfabric.v1 import control_pb2, control_pb2_grpc, controller_pb2, controller_pb2_grpc
    except ImportError as e:
        raise ServeError(f"the generated nfabric.v1 modules (nfabric._proto, made by api/generate.sh) are missing "
                         f"or unusable: {e}") from None
    import grpc
    return grpc, controller_pb2, controller_pb2_grpc, control_pb2, control_pb2_grpc


def _target(address: str) -> str:
    if address.startswith(("unix:", "dns:", "ipv4:", "ipv6:")):
        return address
    if address.startswith("/") or address.startswith("."):
        return "unix://" + os.path.abspath(address)
    return address


def _unix_path(target: str) -> Optional[str]:
    if target.startswith("unix://"):
        return target[len("unix://"):]
    if target.startswith("unix:"):
        return target[len("unix:"):]
    return None


def check_socket(path: str) -> None:
    """Checks a Unix socket before the client trusts it, as the Go client
    does (serve.CheckSocket): a socket owned by this user or root, in a
    directory owned by this user or root that no one else can write unless
    it is sticky (as /tmp is). A socket another user bound in a shared
    directory is a ServeError, so the client never talks to their server."""
    import stat
    uid = os.geteuid()
    try:
        st = os.lstat(path)
    except OSError as e:
        raise ServeError(f"nfabric serve at {path} is unreachable: {e.strerror}") from None
    if not stat.S_ISSOCK(st.st_mode):
        raise ServeError(f"socket {path}: not a socket")
    if st.st_uid not in (uid, 0):
        raise ServeError(f"socket {path}: owned by uid {st.st_uid}, not by this user (uid {uid}) or root: refusing it")
    d = os.path.dirname(os.path.abspath(path))
    ds = os.stat(d)
    if ds.st_uid not in (uid, 0):
        raise ServeError(f"socket directory {d}: owned by uid {ds.st_uid}, not by this user (uid {uid}) or root: refusing it")
    if ds.st_mode & 0o022 and not ds.st_mode & stat.S_ISVTX:
        raise ServeError(f"socket directory {d}: writable by others (mode {ds.st_mode & 0o7777:04o}) and not sticky: "
                         "another user could replace the socket")


class Client:
    """A connection to nfabric serve. ``token``: the bearer token for TCP
    servers (``--token-file``). The constructor checks the server: an
    unreachable address, a Unix socket that fails :func:`check_socket`, or
    a server without the nfabric.v1 services (a different version of
    nfabric serve), is a ServeError naming it.

    Each Client has a connection of its own (its channel uses a local
    subchannel pool): grpc would otherwise share one connection between
    channels of equal options in a process, and the server, whose devices
    and sessions belong to the connection, would see two clients as one."""

    def __init__(self, address: str, token: Optional[str] = None, timeout: float = 10.0):
        grpc, self.cpb, cg, self.kpb, kg = _modules()
        self.grpc = grpc
        self.address = address
        self.timeout = timeout
        target = _target(address)
        path = _unix_path(target)
        self.unix_path = path
        if path is not None:
            check_socket(path)
        opts = [("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 64 << 20),
                ("grpc.use_local_subchannel_pool", 1)]
        self.channel = grpc.insecure_channel(target, options=opts)
        self.metadata = (("authorization", f"Bearer {token}"),) if token else None
        self.controller = cg.ControllerStub(self.channel)
        self.control = kg.ControlStub(self.channel)
        self._check()

    def call(self, method, request, what: str):
        try:
            return method(request, timeout=self.timeout, metadata=self.metadata)
        except self.grpc.RpcError as e:
            code = e.code() if hasattr(e, "code") else None
            if code == self.grpc.StatusCode.UNAVAILABLE:
                raise ServeError(f"nfabric serve at {self.address} is unreachable ({what}): {e.details()}") from None
            if code == self.grpc.StatusCode.UNIMPLEMENTED:
                raise ServeError(f"the server at {self.address} does not implement {what}: it is not an nfabric serve "
                                 "speaking nfabric.v1 (a different version?)") from None
            raise ServeError(f"nfabric serve at {self.address}: {what}: {code}: {e.details()}") from None

    def _check(self) -> None:
        # Device and session 0 never exist: NOT_FOUND proves both services
        # are there and speak nfabric.v1; UNIMPLEMENTED means they are not.
        for method, req, what in [(self.controller.GetStats, self.cpb.GetStatsRequest(device=0), "nfabric.v1.Controller"),
                                  (self.control.Status, self.kpb.StatusRequest(session=0), "nfabric.v1.Control")]:
            try:
                method(req, timeout=self.timeout, metadata=self.metadata)
            except self.grpc.RpcError as e:
                if e.code() in (self.grpc.StatusCode.NOT_FOUND, self.grpc.StatusCode.INVALID_ARGUMENT):
                    continue
                self.call(method, req, what)  # raises the ServeError for this code

    def close(self) -> None:
        self.channel.close()


def read_lines(response, lines: int) -> Tuple[List[int], List[bool]]:
    """Each read line's mode (the pb Mode enum value) and transformed flag,
    in op order, from a TransactResponse's ``read_spans`` (one span per run
    of lines sharing both); ``lines`` is the batch's read line count
    (reads and shared reads). Spans of zero lines, or that do not cover
    exactly ``lines`` lines, are a malformed response: ServeError."""
    total = 0
    for i, sp in enumerate(response.read_spans):
        if sp.lines == 0:
            raise ServeError(f"Transact response: read_spans[{i}].lines: zero lines (a span has at least one)")
        total += sp.lines
    if total != lines:
        raise ServeError(f"Transact response: read_spans cover {total} lines, want the {lines} read lines")
    modes: List[int] = []
    trans: List[bool] = []
    for sp in response.read_spans:
        modes.extend([sp.mode] * sp.lines)
        trans.extend([sp.transformed] * sp.lines)
    return modes, trans


# The descriptor handoff (controller.proto, SharedBuffer): these 16 bytes,
# then the ticket; the answer is b"Y" with one descriptor, or an error line.
HANDOFF_MAGIC = b"NFABRIC-SHM/1\n\x00\x00"


class SharedBuffer:
    """A shared-memory staging buffer of ``nbytes`` bytes (a multiple of
    64) on nfabric serve, mapped here (``mem``, an ``mmap``; ``tensor()``
    is a zero-copy uint8 view). Store payload lines into it, then commit
    them with :meth:`write_op` in a Transact; :meth:`read_op` puts read
    lines (an aggregate) into it before the Transact returns.

    Consistency rule (the server's): a Transact copies all its shared
    writes out of the buffer when it starts, before its first transaction,
    so do not store into a range while a Transact that reads it is in
    flight; bytes stored after the call reach the device only with a later
    Transact. Needs a Client on a Unix socket; the buffer is freed by
    :meth:`close` or when the client's connection ends."""

    def __init__(self, client: "Client", nbytes: int):
        import mmap
        import socket
        if client.unix_path is None:
            raise ServeError("shared memory needs nfabric serve on a Unix socket (unix:///path)")
        self.c = client
        r = client.call(client.controller.OpenShared, client.cpb.OpenSharedRequest(bytes=nbytes), "OpenShared")
        self.id = r.buffer
        self.nbytes = r.bytes
        fds: List[int] = []
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(client.timeout)
                s.connect(client.unix_path)
                s.sendall(HANDOFF_MAGIC + bytes(r.ticket))
                msg, fds, _, _ = socket.recv_fds(s, 512, 4)
            if msg != b"Y" or len(fds) != 1:
                raise ServeError(f"nfabric serve refused the shared-buffer handoff ({len(fds)} descriptors): "
                                 f"{msg.decode(errors='replace').strip()}")
            st = os.fstat(fds[0])
            import stat
            if not stat.S_ISREG(st.st_mode) or st.st_size < self.nbytes:
                raise ServeError(f"shared-buffer handoff: the descriptor is not a file of {self.nbytes} bytes")
            self.mem = mmap.mmap(fds[0], self.nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as e:
            self._free()
            raise ServeError(f"shared-buffer handoff on {client.unix_path}: {e}") from None
        except ServeError:
            self._free()
            raise
        finally:
            for fd in fds:
                os.close(fd)

    def _free(self) -> None:
        try:
            self.c.call(self.c.controller.CloseShared, self.c.cpb.CloseSharedRequest(buffer=self.id), "CloseShared")
        except ServeError:
            pass

    def tensor(self) -> torch.Tensor:
        """The buffer as a uint8 tensor sharing its memory."""
        return torch.frombuffer(self.mem, dtype=torch.uint8)

    def write_op(self, offset: int, addr: int, lines: int, tag: int = 0):
        """A Transact op that writes ``lines`` lines of the buffer from byte
        ``offset`` at consecutive lines from ``addr``."""
        pb = self.c.cpb
        return pb.Op(shared_write=pb.SharedWrite(buffer=self.id, offset=offset, addr=addr, lines=lines, tag=tag))

    def read_op(self, offset: int, addr: int, lines: int, tag: int = 0):
        """A Transact op that reads ``lines`` lines from ``addr`` into the
        buffer from byte ``offset``."""
        pb = self.c.cpb
        return pb.Op(shared_read=pb.SharedRead(buffer=self.id, offset=offset, addr=addr, lines=lines, tag=tag))

    def close(self) -> None:
        """Frees the buffer on the server and unmaps it here (tensor views
        must be gone first)."""
        self._free()
        self.mem.close()


_MODE = {Format.BINARY: "MODE_G_BINARY", Format.TERNARY: "MODE_G_TERNARY"}


class _Batch:
    """One Transact's ops. put_rows writes payload lines and get reads
    lines, through the shared buffer sb when there is one (buf is its
    tensor, stored into through a numpy view, and get returns the read's
    offset in it) or in the messages (get returns -1: the lines come back
    in the response, in op order)."""

    def __init__(self, pb, sb: Optional["SharedBuffer"]) -> None:
        self.pb, self.sb, self.ops, self.off = pb, sb, [], 0
        self.buf: Optional[torch.Tensor] = sb.tensor() if sb is not None else None
        self.np = self.buf.numpy() if self.buf is not None else None

    def put_rows(self, addr: int, rows: torch.Tensor, row_bytes: int) -> None:
        """Writes rows [R, m] (any 1-byte dtype, m <= row_bytes, a multiple
        of 64) at consecutive lines from addr: row r at addr + r *
        row_bytes, zero-padded to row_bytes; one op for all R rows."""
        rows = rows.detach().cpu()
        if rows.dtype != torch.uint8:
            rows = rows.view(torch.uint8)
        r, m = rows.shape
        nbytes = r * row_bytes
        if self.buf is None:
            data = torch.zeros(r, row_bytes, dtype=torch.uint8)
            data[:, :m] = rows
            self.ops.append(self.pb.Op(write=self.pb.Write(addr=addr, data=data.numpy().tobytes())))
            return
        dst = self.np[self.off:self.off + nbytes].reshape(r, row_bytes)
        dst[:, :m] = rows.numpy()
        dst[:, m:] = 0
        self.ops.append(self.sb.write_op(self.off, addr, nbytes // 64))
        self.off += nbytes

    def get(self, addr: int, lines: int) -> int:
        if self.buf is None:
            self.ops.append(self.pb.Op(read=self.pb.Read(addr=addr, lines=lines)))
            return -1
        self.ops.append(self.sb.read_op(self.off, addr, lines))
        self.off += lines * 64
        return self.off - lines * 64


class ControllerBackend:
    """One rank's device on nfabric serve, with a region per parameter tensor."""

    def __init__(self, client: Client, assignment, workers: int, layout: Layout, gates: Mapping[str, lowbit.Gate],
                 chunk_bytes: int = 4 << 20, shared: Optional[bool] = None):
        self.c = client
        self.w = workers
        # shared: payload lines and aggregates go through a SharedBuffer
        # (grown to the largest chunk) instead of the messages; None means
        # on a Unix socket, falling back to messages with a warning when
        # the server cannot share memory.
        self.shared = (client.unix_path is not None) if shared is None else shared
        self.shared_auto = shared is None
        self.buf: Optional[SharedBuffer] = None
        self.layout = Layout(layout)
        self.chunk = chunk_bytes
        pb = client.cpb
        self.pb = pb
        self.gates = dict(gates)
        epl = self.layout_elements()
        # Footprint upper bound: data slabs plus the view window.
        cap = 64
        for p in assignment.params:
            lines = (p.numel + epl - 1) // epl
            cap += (self.w + 2) * 2 * lines * 64 if self.layout == Layout.WORKER_MAJOR else 2 * lines * 64
        # Room for the integer-sum regions (one INT8, one BFP8) of every
        # tensor, mapped on first use after the sign-plane regions
        # (sum_fixed): code slabs and the sum view, exponent slabs and view.
        for p in assignment.params:
            lines = (p.numel + 63) // 64
            exp_lines = (lines + 63) // 64
            cap += 2 * ((self.w + 2) * lines * 64 + 64) + (self.w + 1) * exp_lines * 64
        lay = pb.LAYOUT_WORKER_MAJOR if self.layout == Layout.WORKER_MAJOR else pb.LAYOUT_ELEMENT_MAJOR
        r = client.call(client.controller.OpenDevice,
                        pb.OpenDeviceRequest(capacity_bytes=cap, workers=workers, layout=lay), "OpenDevice")
        self.device = r.device
        self.regions: Dict[int, object] = {}
        base = 0
        for p in assignment.params:
            gate = self.gates.get(p.group, lowbit.PAPER_GATE)
            if gate.kind == GateKind.WORKER:
                raise ServeError(f"group {p.group}: the worker gate needs gate slabs; the controller backend runs "
                                 "the pattern and margin gates")
            # The server sizes the data window for the element count.
            req = pb.MapRegionRequest(device=self.device, name=p.name, base=base, elements=p.numel,
                                      mode=pb.MODE_FP32_BYPASS, gate=str(gate), element0=p.flat_base)
            reg = client.call(client.controller.MapRegion, req, f"MapRegion {p.name}").region
            self.regions[id(p.param)] = reg
            base = reg.end
        self.end = base
        self.sum_regions: Dict[Tuple[int, str], object] = {}

    def layout_elements(self) -> int:
        return lowbit.PLANE_ELEMENTS if self.layout == Layout.WORKER_MAJOR else lowbit.PACKET_ELEMENTS

    def aggregate(self, items: Sequence[Tuple[object, torch.Tensor, Format]], step: int) -> List[torch.Tensor]:
        """The int8 aggregates of parameter tensors from their W workers'
        sign planes: items are (ParamInfo, planes [W, nb], mode). Writes
        the mode latch, the lines, and reads the aggregate in one batch per
        chunk."""
        out: List[Optional[torch.Tensor]] = [None] * len(items)
        chunk, size = [], 0
        for i, it in enumerate(items):
            reg = self.regions[id(it[0].param)]
            chunk.append((i, it, reg))
            size += (self.w + 2) * reg.payload_lines * 64
            if size >= self.chunk:
                self._chunk(chunk, size, out, step)
                chunk, size = [], 0
        if chunk:
            self._chunk(chunk, size, out, step)
        return out  # type: ignore[return-value]

    def _chunk(self, chunk, size: int, out, step: int) -> None:
        """One batch: per item, its mode latch, its lines and the read of its
        aggregate, through messages or (shared) the buffer, which holds the
        chunk's payload lines and then its aggregate lines."""
        pb = self.pb
        reads = []
        b = self._batch(size)
        batch, get, buf = b.ops, b.get, b.buf
        for i, (info, planes, mode), reg in chunk:
            n = info.numel
            lines = reg.payload_lines
            batch.append(pb.Op(set_mode=pb.SetMode(region=reg.id, mode=getattr(pb, _MODE[mode]), time=step)))
            if self.layout == Layout.WORKER_MAJOR:
                # The W sign slabs follow each other (slab_bytes apart): one write.
                b.put_rows(reg.base, planes, reg.slab_bytes)
                at = get(reg.view_base, 2 * lines)
            else:
                b.put_rows(reg.base, lowbit.planes_to_packet(planes.cpu(), n).view(1, n), lines * 64)
                at = get(reg.view_base, lines)
            reads.append((i, info, mode, lines, at, planes.device))
        self._run(batch, reads, out, buf)

    def _batch(self, size: int) -> "_Batch":
        """A batch of ops whose payload lines (size bytes in all) go through
        the shared buffer, grown to size first, or, without one, in the
        messages; an automatic shared path that cannot be opened falls back
        to messages with a warning."""
        if self.shared and (self.buf is None or self.buf.nbytes < size):
            if self.buf is not None:
                self.buf.close()
            self.buf = None
            try:
                self.buf = SharedBuffer(self.c, (size + 63) // 64 * 64)
            except ServeError as e:
                if not self.shared_auto:
                    raise
                import warnings
                warnings.warn(f"nfabric serve: no shared memory ({e}); sending payload lines in messages")
                self.shared = False
        return _Batch(self.pb, self.buf if self.shared else None)

    def _run(self, ops, reads, out, buf: Optional[torch.Tensor]) -> None:
        r = self.c.call(self.c.controller.Transact, self.pb.TransactRequest(device=self.device, ops=ops), "Transact")
        data = torch.frombuffer(bytearray(r.data), dtype=torch.uint8) if buf is None else buf
        o = 0
        for i, info, mode, lines, at, device in reads:
            n = info.numel
            if at >= 0:
                o = at
            if self.layout == Layout.WORKER_MAJOR:
                view = data[o:o + 2 * lines * 64].view(lines, 2, 64)
                o += 2 * lines * 64
                u = lowbit.unpack_planes(view[:, 0].reshape(-1), view[:, 1].reshape(-1), n)
            else:
                view = data[o:o + lines * 64]
                o += lines * 64
                if mode == Format.BINARY:  # the count byte c: u = sgn(2c - W) = [2c > W] - [2c < W]
                    c = view[:n].numpy()
                    u = torch.from_numpy((c > self.w // 2).view(np.int8) - (c < (self.w + 1) // 2).view(np.int8))
                else:  # int8 m u
                    u = view[:n].view(torch.int8).clone()
            out[i] = u.to(device)

    def _sum_region(self, info, fmt: str):
        """The integer-sum region of a parameter tensor for fmt ("int8" or
        "bfp8"), mapped (with the proto's Format) on first use."""
        key = (id(info.param), fmt)
        reg = self.sum_regions.get(key)
        if reg is None:
            pb = self.pb
            f = pb.FORMAT_INT8 if fmt == "int8" else pb.FORMAT_BFP8
            mode = getattr(pb, mode_name(lowbit.parse_format(fmt)))
            req = pb.MapRegionRequest(device=self.device, name=f"{info.name}/{fmt}", base=self.end,
                                      elements=info.numel, mode=mode, format=f, element0=info.flat_base)
            reg = self.c.call(self.c.controller.MapRegion, req, f"MapRegion {info.name} ({fmt})").region
            self.sum_regions[key] = reg
            self.end = reg.end
        return reg

    def sum_fixed(self, items: Sequence[Tuple[object, str, torch.Tensor, Optional[torch.Tensor]]],
                  step: int) -> List[Tuple[torch.Tensor, Optional[torch.Tensor]]]:
        """The controller's integer sums of parameter tensors under INT8 or
        BFP8 (beyond the paper): items are (ParamInfo, fmt, codes [W, n]
        int8, exponents [W, ceil(n/64)] int8 or None for INT8). Per item it
        writes the mode latch, each worker's code lines (and BFP8 exponent
        lines) into the tensor's sum region and reads the int16 sum view
        (and BFP8's exponent view E), all in one Transact. Returns per item
        (sums [n] int16, E [blocks] int8 or None), on the codes' device:
        lowbit.SumInt8 / SumBFP8 of the written payloads."""
        from .. import fixed
        pb = self.pb
        regs, size = [], 0
        for info, fmt, codes, exps in items:
            fmt = fixed.parse_sum_format(fmt)
            if codes.shape != (self.w, info.numel) or (fmt == "bfp8") != (exps is not None):
                raise ValueError(f"{info.name}: {fmt} codes {tuple(codes.shape)}, want ({self.w}, {info.numel}) "
                                 "and exponents exactly for bfp8")
            reg = self._sum_region(info, fmt)
            regs.append((fmt, reg))
            size += (self.w + 2) * reg.payload_lines * 64 + (self.w + 1) * reg.exp_lines * 64
        b = self._batch(size)
        batch, get, buf = b.ops, b.get, b.buf
        reads = []
        for (info, _, codes, exps), (fmt, reg) in zip(items, regs):
            batch.append(pb.Op(set_mode=pb.SetMode(region=reg.id, mode=reg.mode, time=step)))
            # The W code slabs, and the W exponent slabs, follow each other.
            b.put_rows(reg.base, codes.reshape(self.w, -1), reg.slab_bytes)
            if exps is not None:
                b.put_rows(reg.exp_base, exps.reshape(self.w, -1), reg.exp_lines * 64)
            at = get(reg.view_base, 2 * reg.payload_lines)
            at_e = get(reg.exp_view_base, reg.exp_lines) if exps is not None else -1
            reads.append((info.numel, reg, at, at_e, exps is not None, codes.device))
        r = self.c.call(self.c.controller.Transact, pb.TransactRequest(device=self.device, ops=batch), "Transact")
        data = torch.frombuffer(bytearray(r.data), dtype=torch.uint8) if buf is None else buf
        out, o = [], 0
        for n, reg, at, at_e, bfp, device in reads:
            if at >= 0:
                o = at
            nb = 2 * reg.payload_lines * 64
            sums = data[o:o + nb].clone().view(torch.int16)[:n]  # little-endian int16 lanes
            o += nb
            e = None
            if bfp:
                if at_e >= 0:
                    o = at_e
                e = data[o:o + reg.exp_lines * 64].clone().view(torch.int8)[:fixed.bfp_blocks(n)]
                o += reg.exp_lines * 64
                e = e.to(device)
            out.append((sums.to(device), e))
        return out

    def close(self) -> None:
        if self.buf is not None:
            try:
                self.buf.close()
            except (ServeError, BufferError):
                pass
            self.buf = None
        try:
            self.c.call(self.c.controller.CloseDevice, self.pb.CloseDeviceRequest(device=self.device), "CloseDevice")
        except ServeError:
            pass


def _rung_formats(rungs: object) -> Tuple[Format, ...]:
    """The summed formats a ladder_rungs string ("format:min,...", as Go's
    control.ParseRungs) names, in table order; its other checks are the
    plane's, when the session opens. ValueError for an entry that is not
    format:min or an unknown format."""
    if rungs is None:
        return ()
    s = str(rungs).strip()
    if s == "" or s.lower() == "none":
        return ()
    named = set()
    for part in s.split(","):
        name, sep, _ = part.partition(":")
        if not sep:
            raise ValueError(f"ladder_rungs {s!r}: entry {part!r} is not format:min_cosine")
        named.add(lowbit.parse_format(name))
    return tuple(f for f in Format if f.sum() and f in named)


class ServeControl:
    """A controller backed by a session of nfabric serve's control plane.

    ``default``: "fp32" (admission: FP32 until the ladder admits a mode on
    diagnostics) or "lowbit" (the low-bit ``lowbit_mode`` after warm-up;
    the Supervisor recovers to FP32 on a loss alarm). warmup, cooldown,
    calibration, cusum_k, cusum_h, cusum_alpha, ladder_rungs (the whole
    ladder, every rung as "format:min,...", e.g.
    "g-binary:0.75,g-ternary:0.5,int8:0.95,bfp8:0.95"; unset: the paper's
    two), ladder_demote: as ``nfabric pilot``'s flags (None: the plane's
    defaults). diag_every = N measures the cosine diagnostics of the groups
    running FP32 every N steps (an extra all-gather of their sign planes in
    DDP) and sends them. Give the same ServeControl on every rank; only rank
    0's opens a session. The session is opened when the hook binds the
    groups.
    """

    def __init__(self, address: str, default: str = "fp32", lowbit_mode: str = "g-binary", token: Optional[str] = None,
                 diag_every: int = 0, **config: Union[float, str, bool]):
        if default not in ("fp32", "lowbit"):
            raise ValueError(f"default {default!r}: want fp32 or lowbit")
        self.address, self.token = address, token
        self.default, self.lowbit_mode = default, lowbit.parse_format(lowbit_mode)
        allowed = {"warmup", "cooldown", "calibration", "cusum_k", "cusum_h", "cusum_alpha", "ladder_rungs",
                   "ladder_demote"}
        bad = sorted(set(config) - allowed)
        if bad:
            raise ValueError(f"unknown control setting(s) {bad} (want {sorted(allowed)})")
        self.config = config
        self.diag_formats = _rung_formats(config.get("ladder_rungs"))
        """The summed formats (INT8, BFP8) ladder_rungs names: the hook
        measures their cosines too and sends them in diag(cosines=...)."""
        # Steps between cosine diagnostics of FP32 groups (0: none); the
        # admission ladder ("fp32" default) admits on them.
        self.diag_every = diag_every
        self.client: Optional[Client] = None
        self.session: Optional[int] = None
        self.modes: Dict[str, Format] = {}
        self.actions: List[Tuple[int, str, str, str]] = []
        self.alarms = 0
        self._loss_sent: Optional[int] = None

    def bind(self, groups: Mapping[str, int]) -> None:
        """Opens the session for these groups (name -> parameter count)."""
        self.client = Client(self.address, self.token)
        k = self.client.kpb
        from google.protobuf import wrappers_pb2 as w
        cfg = k.SessionConfig(groups=[k.Group(name=g, parameters=int(n)) for g, n in groups.items()],
                              default=k.DEFAULT_FP32 if self.default == "fp32" else k.DEFAULT_LOWBIT,
                              lowbit_mode=getattr(self.client.cpb, mode_name(self.lowbit_mode)))
        for name, v in self.config.items():
            if name == "ladder_demote":
                cfg.ladder_demote = bool(v)
                continue
            if name == "ladder_rungs":
                wrap = w.StringValue(value=str(v))
            elif name in ("warmup", "cooldown", "calibration"):
                wrap = w.Int64Value(value=int(v))
            else:
                wrap = w.DoubleValue(value=float(v))
            getattr(cfg, name).CopyFrom(wrap)
        r = self.client.call(self.client.control.OpenSession, k.OpenSessionRequest(config=cfg), "OpenSession")
        self.session = r.session
        self.modes = {g: Format.FP32 for g in groups}

    def state_dict(self) -> Dict[str, object]:
        """The session as a checkpoint holds it: the plane's dump (its
        configuration and every event it was fed, base64 protobuf) and what
        this client derived from it. A ServeControl with no session (ranks
        other than 0) has none."""
        if self.session is None:
            return {"session": None}
        c = self.client
        d = c.call(c.control.Dump, c.kpb.DumpRequest(session=self.session), "Dump")  # type: ignore[union-attr]
        return {"session": base64.b64encode(d.SerializeToString()).decode(), "alarms": self.alarms,
                "loss_sent": self._loss_sent, "modes": {g: str(f) for g, f in self.modes.items()}}

    def load_state_dict(self, sd: Mapping[str, object]) -> None:
        """Rebuilds a saved session in this ServeControl's fresh one: the
        saved events are fed again (the plane is deterministic in them) and
        the actions must come out as recorded. ValueError when the saved
        session was configured otherwise or does not replay the same."""
        blob = sd.get("session") if isinstance(sd, Mapping) else None
        if blob is None:
            return
        if self.session is None:
            raise ValueError("the checkpoint holds a control session but this ServeControl has none open "
                             "(it is opened on rank 0 when the Fabric binds)")
        c = self.client
        k = c.kpb  # type: ignore[union-attr]
        d = k.SessionDump()
        try:
            d.ParseFromString(base64.b64decode(str(blob), validate=True))
        except Exception as e:  # noqa: BLE001 - a malformed checkpoint, whatever the decoder raises
            raise ValueError(f"the checkpoint's control session does not decode ({e})") from None
        mine = c.call(c.control.Dump, k.DumpRequest(session=self.session), "Dump")  # type: ignore[union-attr]
        if len(mine.events):
            raise ValueError("load_state_dict needs a fresh control session (this one was already fed events)")
        if d.config.SerializeToString(deterministic=True) != mine.config.SerializeToString(deterministic=True):
            raise ValueError("the checkpoint's control session was configured differently from this ServeControl "
                             "(groups, default, ladder or thresholds)")
        self.actions = []
        for ev in d.events:
            try:
                self._send(ev.event)
            except ServeError as e:
                if not ev.error:
                    raise ValueError(f"replaying the saved control session: an event the plane accepted is now "
                                     f"rejected ({e})") from None
        names = {v: n for n, v in c.cpb.Mode.items()}  # type: ignore[union-attr]
        want = [(a.step, a.group, names[a.mode], a.reason) for a in d.actions]
        if self.actions != want:
            raise ValueError("replaying the saved control session gave other actions than it recorded")
        self.alarms = int(sd.get("alarms", self.alarms))  # type: ignore[arg-type]
        ls = sd.get("loss_sent")
        self._loss_sent = None if ls is None else int(ls)  # type: ignore[arg-type]

    def _send(self, event) -> None:
        assert self.client is not None and self.session is not None
        k = self.client.kpb
        r = self.client.call(self.client.control.Send, k.SendRequest(session=self.session, event=event), "Send")
        self.alarms = r.alarms
        names = {v: n for n, v in self.client.cpb.Mode.items()}
        for a in r.actions:
            mode = names[a.mode]
            self.actions.append((a.step, a.group, mode, a.reason))
            self.modes[a.group] = format_of_mode(mode)

    def decide(self, ctx) -> Dict[str, Format]:
        if self.session is None:
            raise ServeError("the control session is not open (ServeControl.bind was not called)")
        k = self.client.kpb  # type: ignore[union-attr]
        if ctx.loss is not None and ctx.step > 0 and self._loss_sent != ctx.step - 1:
            self._send(k.Event(loss=k.LossEvent(step=ctx.step - 1, loss=float(ctx.loss))))
            self._loss_sent = ctx.step - 1
        self._send(k.Event(step=k.StepEvent(step=ctx.step, time_ns=time.time_ns())))
        return dict(self.modes)

    def diag(self, step: int, group: str, cos_binary: float, cos_ternary: float,
             cosines: Optional[Mapping[Union[str, Format], float]] = None) -> None:
        """Reports a group's cosine diagnostics (the ladder admits on them):
        G-Binary's and G-Ternary's, and in ``cosines`` those of the other
        rungs (format name or Format -> cosine, e.g. {"int8": 0.97}); a rung
        not reported was not measured and admits nothing. On the wire every
        rung's cosine, the paper's two first, is one entry of the event's
        cosines."""
        k = self.client.kpb  # type: ignore[union-attr]
        each = [(Format.BINARY, cos_binary), (Format.TERNARY, cos_ternary)]
        for f, c in (cosines or {}).items():
            each.append((f if isinstance(f, Format) else lowbit.parse_format(str(f)), c))
        wire = [k.ModeCosine(mode=getattr(self.client.cpb, mode_name(f)), cosine=float(c))  # type: ignore[union-attr]
                for f, c in each]
        self._send(k.Event(diag=k.DiagEvent(step=step, group=group, cosines=wire)))

    def telemetry(self, demand_gbps: float, capacity_gbps: float, line_reads_per_s: float = 0.0,
                  time_ns: Optional[int] = None) -> None:
        """Feeds a network telemetry sample to the plane's Commander (what a
        runtime measures of its links; nothing here measures it for you)."""
        k = self.client.kpb  # type: ignore[union-attr]
        self._send(k.Event(telemetry=k.TelemetryEvent(time_ns=time.time_ns() if time_ns is None else time_ns,
                                                      demand_gbps=demand_gbps, capacity_gbps=capacity_gbps,
                                                      line_reads_per_s=line_reads_per_s)))

    def non_finite(self, step: int, group: str) -> None:
        k = self.client.kpb  # type: ignore[union-attr]
        self._send(k.Event(non_finite=k.NonFiniteEvent(step=step, group=group)))

    def replay_matches(self) -> Tuple[bool, str]:
        """Dumps the session and replays it through a fresh Go plane: whether
        the actions are identical (the service's own check)."""
        c = self.client
        k = c.kpb  # type: ignore[union-attr]
        d = c.call(c.control.Dump, k.DumpRequest(session=self.session), "Dump")  # type: ignore[union-attr]
        r = c.call(c.control.Replay, d, "Replay")  # type: ignore[union-attr]
        return bool(r.matches), r.mismatch

    def close(self) -> None:
        if self.client is not None and self.session is not None:
            try:
                self.client.call(self.client.control.CloseSession,
                                 self.client.kpb.CloseSessionRequest(session=self.session), "CloseSession")
            except ServeError:
                pass

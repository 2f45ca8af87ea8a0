// Package serve is 'nfabric serve': the controller model (package cxl) and
// the control plane (package control) as gRPC services, so that a training
// runtime in another process or language (the PyTorch package first) uses
// the one Go implementation of the device semantics and of the policy. The
// API is nfabric.v1 (api/nfabric/v1/*.proto); package wire converts its
// messages, package client is the Go client.
//
// # Shape
//
// Server is a thin concurrent shell around deterministic cores: every
// device is a host.Device (the host runtime: a cxl.Core and its
// accounting), every control session a control.Plane behind a mutex. The
// server decodes requests (errors name the field), runs them on the core
// and encodes the result; it holds no semantics, accounting or policy of
// its own.
//
// # Ownership
//
// Devices and sessions belong to the client connection (the HTTP/2
// transport) that opened them: the server tags each connection when it is
// accepted (a grpc stats.Handler), resolves ids only within it, and frees
// everything the connection owned when it ends: the client closed it,
// exited or was killed (the kernel closes its sockets), or stopped
// answering keepalive pings (a vanished TCP peer). Tying resources to the
// connection rather than to a stream keeps every call unary and simple to
// use from grpcurl or Python, and needs no lease renewals; the price is that
// a client that reconnects starts afresh, which a training job does anyway.
//
// # Limits
//
// Every allocation a request can cause counts against one of these
// (Options fields and 'nfabric serve' flags; defaults in brackets). A
// request over a limit fails with RESOURCE_EXHAUSTED (a count or size the
// server holds) or INVALID_ARGUMENT (a size one request asks for) and
// changes nothing.
//
//	limit                                    bounds
//	MaxMessageBytes  --max-message-bytes     a request and a reply [16 MiB]; a batch's transactions and
//	                                         mode writes together (2 per 64 message bytes) and its lines read
//	MaxConnections   --max-connections       connections served at once [64]; more wait in the backlog
//	MaxStreams       --max-streams           calls in flight per connection [4], a call counting until
//	                                         its reply is written: the replies a slow client leaves unread
//	MaxDevices       --max-devices           open devices [64]
//	MaxDeviceBytes   --max-device-bytes      the sum of the open devices' capacities [4 GiB]; a device's
//	                                         lines_hint is clamped to its capacity's lines
//	MaxRegions       --max-regions           regions per device [4096]
//	MaxModeChanges   --max-mode-changes      a device's mode-change log [65536]; a batch whose set_mode
//	                                         ops could pass it is refused whole
//	MaxNameBytes     (constant, 256)         a region name, a session group name, an event's group name
//	MaxSessions      --max-sessions          open control sessions [256]
//	MaxSessionEvents --max-session-events    events one session records [1 Mi]; a session's record also
//	                                         stops at a quarter of the message limit (encoded), so that
//	                                         its Dump is one reply
//	MaxSharedBuffers --max-shared-buffers    open shared-memory buffers [64]
//	MaxSharedBytes   --max-shared-bytes      the sum of their sizes [1 GiB]; a batch's shared writes (its
//	                                         snapshot) are at most one message's size of lines, its shared
//	                                         reads count 4 bytes a line against the reply
//
// Replies are bounded by construction: a Dump by the record's size limit,
// a GetStats by MaxRegions and MaxModeChanges (Validate refuses options
// whose GetStats could exceed the message limit; New fits them), a read
// batch by its lines. Error messages and BadRequest details truncate every
// echoed value to 256 bytes with its length, and the detail lists the
// first 64 bad fields.
//
// Bound returns what these limits bound in memory, by row: devices
// (2 x MaxDeviceBytes, the factor being the garbage collector's headroom
// over the stored pages, plus 64 KiB a device), tables (MaxDevices x
// (MaxRegions x 4 KiB + MaxModeChanges x 256 B)), sessions (MaxSessions x
// MaxMessageBytes/4 x 10, the record's in-memory size per encoded byte) and
// transport (MaxConnections x (1 MiB + MaxStreams x 4 x MaxMessageBytes),
// a call's request, reply and decoding) and shared (MaxSharedBytes + 4 KiB
// a buffer: the buffers' pages, which the server touches). The factors are rounded up from
// the peak resident set of a server process with every limit filled
// (TestLimitsRSS). With the defaults the sum is large, about 37 GiB (device
// memory 8, tables 2, sessions 10, transport 16, shared 1): lower the limits to fit
// the host ('nfabric serve --max-sessions 16 --max-connections 16' and so on).
//
// # Shared memory
//
// A client on the same host can move payload lines through shared memory
// instead of messages, as a CXL.mem host stores into device memory, with
// gRPC as the control path (controller.proto, SharedBuffer). OpenShared
// (Unix socket only: FAILED_PRECONDITION on TCP) makes a memfd, sealed so
// that its size never changes (a client cannot shrink it under the
// server's mapping), maps it, and returns a one-use ticket; the client
// sends HandoffMagic and the ticket on a second connection to the same
// socket and gets the descriptor as SCM_RIGHTS (a process of another user
// is refused; a connection that says nothing is dropped after 5 s; bytes
// that are not a handoff go to gRPC). Transact's shared_write and
// shared_read ops then name lines of the buffer.
//
// The buffer is a staging area, not the line store: the device's memory
// stays the host.Device's, the one the gRPC path writes, so there is one
// data model. Consistency rule: a Transact copies all its shared writes
// out of the buffer (a snapshot) when it starts, before its first
// transaction is accepted, and runs them as writes of those bytes;
// stores into the buffer after that reach the device only through a later
// Transact, and stores during the call may or may not be in the snapshot,
// per byte. The server reads only payload bytes from the buffer (any 64
// bytes are a valid line); offsets, line counts and addresses come in the
// request and are checked like a Write's. shared_read lines are written
// into the buffer before the reply. The snapshot costs one copy
// (BenchmarkWriteAggregate/shared measures the whole path); mapping the
// line store itself would let a client change stored bytes while the
// read transform runs, which no device invariant survives.
//
// A buffer belongs to its connection like a device: CloseShared, the
// connection's end and Shutdown unmap the server's side (after the calls
// using it finish) and close its descriptor; the client's mapping stays
// memory until it unmaps. A client that scribbles over its buffer, unmaps
// it, never fetches its descriptor or sends descriptors of its own to the
// server harms only its own batches (TestSharedHostile).
//
// # Authentication
//
// On a Unix socket (created 0600; the default one in a 0700 directory,
// DefaultSocket) the file system decides who may connect, and clients
// check that the socket and its directory are this user's (CheckSocket),
// so that none talks to a server another user bound at the path.
// On TCP the server requires a bearer token (Options.Token, checked on every
// call, including health and reflection; the scheme name is
// case-insensitive) or TLS with client certificates; other clients get
// UNAUTHENTICATED, a client without a certificate too (the handshake
// accepts it and every call is refused).
package serve

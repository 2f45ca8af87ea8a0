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
// Options bound the message size, the regions per device, the sessions and
// events per session, and device memory: the sum of open devices'
// capacities (memory is sparse, so a device's capacity bounds the host
// memory its stored lines can take). A request over a limit fails with
// RESOURCE_EXHAUSTED and changes nothing.
//
// # Authentication
//
// On a Unix socket (created 0600) the file system decides who may connect.
// On TCP the server requires a bearer token (Options.Token, checked on every
// call, including health and reflection) or TLS with client certificates;
// other clients get UNAUTHENTICATED.
package serve

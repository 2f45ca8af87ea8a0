package main

import (
	"net"

	"github.com/neuronfabric/nfabric/serve"
)

// maxSocketPath is the longest Unix socket path Linux accepts (sun_path
// holds 108 bytes with the terminating NUL).
const maxSocketPath = 107

// check refuses, as usage errors, the serve and serve check addresses
// that cannot work (an empty --socket, a --tcp that is not host:port with
// a port in 0..65535) and reads --token-file through serve.ReadToken,
// which bounds it (a regular file, mode 0600, at most 4 KiB, one line of
// 16+ characters). It runs before anything listens or dials and returns
// the token ("" without --token-file).
func (a *serveAddr) check() (token string, err error) {
	if a.tcp != "" {
		_, port, err := net.SplitHostPort(a.tcp)
		if err != nil {
			return "", usagef("--tcp %q: want HOST:PORT, e.g. 127.0.0.1:7878: %v", a.tcp, err)
		}
		if _, err := net.LookupPort("tcp", port); err != nil {
			return "", usagef("--tcp %q: %v", a.tcp, err)
		}
	} else if a.socket == "" {
		return "", usagef("--socket is empty: give a path (or --tcp HOST:PORT)")
	} else if len(a.socket) > maxSocketPath {
		return "", usagef("--socket %s: %d bytes, longer than the %d a Unix socket path may hold", a.socket, len(a.socket), maxSocketPath)
	}
	if a.tokenFile == "" {
		return "", nil
	}
	tok, err := serve.ReadToken(a.tokenFile)
	if err != nil {
		return "", usagef("--token-file: %v", err)
	}
	return tok, nil
}

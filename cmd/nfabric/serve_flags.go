package main

import (
	"net"
	"os"
)

// maxTokenFileBytes bounds --token-file: a token is one line of 16 or more
// characters, so a larger file is a mistake (and /dev/zero would be read
// until memory runs out).
const maxTokenFileBytes = 4096

// maxSocketPath is the longest Unix socket path Linux accepts (sun_path
// holds 108 bytes with the terminating NUL).
const maxSocketPath = 107

// check refuses, as usage errors, the serve and serve check addresses
// that cannot work: an empty --socket, a --tcp that is not host:port with a
// port in 0..65535, and a --token-file that is not a regular file of at
// most maxTokenFileBytes. It runs before anything listens or dials.
func (a *serveAddr) check() error {
	if a.tcp != "" {
		_, port, err := net.SplitHostPort(a.tcp)
		if err != nil {
			return usagef("--tcp %q: want HOST:PORT, e.g. 127.0.0.1:7878: %v", a.tcp, err)
		}
		if _, err := net.LookupPort("tcp", port); err != nil {
			return usagef("--tcp %q: %v", a.tcp, err)
		}
	} else if a.socket == "" {
		return usagef("--socket is empty: give a path (or --tcp HOST:PORT)")
	} else if len(a.socket) > maxSocketPath {
		return usagef("--socket %s: %d bytes, longer than the %d a Unix socket path may hold", a.socket, len(a.socket), maxSocketPath)
	}
	if a.tokenFile != "" {
		st, err := os.Stat(a.tokenFile)
		switch {
		case err != nil:
			return usagef("--token-file: %v", err)
		case !st.Mode().IsRegular():
			return usagef("--token-file %s: not a regular file", a.tokenFile)
		case st.Size() > maxTokenFileBytes:
			return usagef("--token-file %s: %d bytes; a token file holds one line (at most %d bytes)", a.tokenFile, st.Size(), maxTokenFileBytes)
		}
	}
	return nil
}

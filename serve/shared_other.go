//go:build !linux

package serve

import (
	"errors"
	"net"
)

var errNoShared = errors.New("shared memory needs Linux (memfd_create, SCM_RIGHTS)")

func newShared(uint64) (int, []byte, error) { return -1, nil, errNoShared }
func unmapShared([]byte) error              { return nil }
func closeFD(int)                           {}
func peerUID(*net.UnixConn) (uint32, error) { return 0, errNoShared }
func sendFD(*net.UnixConn, int) error       { return errNoShared }

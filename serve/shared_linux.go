package serve

import (
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// newShared creates a memfd of n bytes, sealed so that its size can never
// change (a client that could shrink it would make the server's accesses
// fault), and maps it read-write in the server.
func newShared(n uint64) (int, []byte, error) {
	if n > 1<<47 {
		return -1, nil, fmt.Errorf("%d bytes: too large", n)
	}
	fd, err := unix.MemfdCreate("nfabric-shared", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, nil, fmt.Errorf("memfd_create: %w", err)
	}
	fail := func(what string, err error) (int, []byte, error) {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := unix.Ftruncate(fd, int64(n)); err != nil {
		return fail("ftruncate", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		return fail("sealing", err)
	}
	mem, err := unix.Mmap(fd, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fail("mmap", err)
	}
	return fd, mem, nil
}

func unmapShared(mem []byte) error { return unix.Munmap(mem) }

func closeFD(fd int) { unix.Close(fd) }

// peerUID returns the user id of the process at the other end of c.
func peerUID(c *net.UnixConn) (uint32, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, cerr
	}
	return cred.Uid, nil
}

// sendFD sends one byte "Y" carrying fd as SCM_RIGHTS.
func sendFD(c *net.UnixConn, fd int) error {
	n, oobn, err := c.WriteMsgUnix([]byte("Y"), unix.UnixRights(fd), nil)
	if err == nil && (n != 1 || oobn == 0) {
		err = errors.New("short write")
	}
	return err
}

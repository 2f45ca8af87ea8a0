package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/serve"
)

// Shared is a shared-memory staging buffer of the server, mapped into
// this process (controller.proto, SharedBuffer): store payload lines into
// Mem and commit them with a SharedWriteOp in a Transact; a SharedReadOp
// puts read lines (an aggregate) into Mem before the Transact returns.
// The device copies a batch's shared writes when the call starts, so do
// not store into a range while a Transact that reads it is in flight.
type Shared struct {
	c  *Client
	ID uint64
	// Mem is the mapping; it stays valid until Close.
	Mem []byte
}

// OpenShared creates a buffer of n bytes (a multiple of 64) on the
// server and maps it. It needs a client dialed on a Unix socket: the
// descriptor comes over a second connection to it (SCM_RIGHTS).
func (c *Client) OpenShared(ctx context.Context, n uint64) (*Shared, error) {
	if c.socket == "" {
		return nil, errors.New("client: shared memory needs a Unix-socket connection (unix:///path)")
	}
	r, err := c.Controller.OpenShared(ctx, &pb.OpenSharedRequest{Bytes: n})
	if err != nil {
		return nil, err
	}
	s := &Shared{c: c, ID: r.GetBuffer()}
	mem, err := fetchShared(ctx, c.socket, r.GetTicket(), r.GetBytes())
	if err != nil {
		c.Controller.CloseShared(ctx, &pb.CloseSharedRequest{Buffer: s.ID})
		return nil, fmt.Errorf("client: shared buffer %d: %w", s.ID, err)
	}
	s.Mem = mem
	return s, nil
}

// fetchShared redeems a ticket on the socket and maps the descriptor it
// gets: exactly one, a file of at least n bytes.
func fetchShared(ctx context.Context, socket string, ticket []byte, n uint64) ([]byte, error) {
	if len(ticket) != serve.TicketBytes {
		return nil, fmt.Errorf("ticket of %d bytes, want %d", len(ticket), serve.TicketBytes)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, fmt.Errorf("handoff: %w", err)
	}
	defer conn.Close()
	uc := conn.(*net.UnixConn)
	deadline := time.Now().Add(10 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	uc.SetDeadline(deadline)
	if _, err := uc.Write(append([]byte(serve.HandoffMagic), ticket...)); err != nil {
		return nil, fmt.Errorf("handoff: %w", err)
	}
	buf := make([]byte, 512)
	oob := make([]byte, unix.CmsgSpace(4*4))
	k, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("handoff: %w", err)
	}
	fds, err := rights(oob[:oobn])
	if err != nil {
		return nil, fmt.Errorf("handoff: %w", err)
	}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	if k != 1 || buf[0] != 'Y' || len(fds) != 1 {
		msg := strings.TrimSpace(string(buf[:k]))
		return nil, fmt.Errorf("handoff refused (%d descriptors): %q", len(fds), msg)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fds[0], &st); err != nil {
		return nil, fmt.Errorf("handoff: fstat: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || uint64(st.Size) < n {
		return nil, fmt.Errorf("handoff: the descriptor is not a file of %d bytes (mode %o, size %d)", n, st.Mode, st.Size)
	}
	mem, err := unix.Mmap(fds[0], 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("handoff: mmap: %w", err)
	}
	return mem, nil
}

// rights returns the descriptors in SCM_RIGHTS messages.
func rights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		f, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		fds = append(fds, f...)
	}
	return fds, nil
}

// Close frees the buffer on the server and unmaps it here.
func (s *Shared) Close(ctx context.Context) error {
	_, err := s.c.Controller.CloseShared(ctx, &pb.CloseSharedRequest{Buffer: s.ID})
	if s.Mem != nil {
		if uerr := unix.Munmap(s.Mem); uerr != nil && err == nil {
			err = uerr
		}
		s.Mem = nil
	}
	return err
}

// SharedWriteOp writes lines lines of buffer buf, from byte off, at
// consecutive lines from addr.
func SharedWriteOp(buf, off, addr uint64, lines int) *pb.Op {
	return &pb.Op{Op: &pb.Op_SharedWrite{SharedWrite: &pb.SharedWrite{Buffer: buf, Offset: off, Addr: addr, Lines: uint32(lines)}}}
}

// SharedReadOp reads lines lines from addr into buffer buf from byte off.
func SharedReadOp(buf, off, addr uint64, lines int) *pb.Op {
	return &pb.Op{Op: &pb.Op_SharedRead{SharedRead: &pb.SharedRead{Buffer: buf, Offset: off, Addr: addr, Lines: uint32(lines)}}}
}

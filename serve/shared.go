package serve

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/cxl"
)

// The shared-memory data path (api/nfabric/v1/controller.proto,
// SharedBuffer). A buffer is a staging area, not device memory: the line
// store stays the host.Device's, and a Transact copies a shared_write's
// lines out of the buffer before the batch starts (the snapshot), so
// whatever a client stores into its mapping, and whenever, the device
// sees the bytes of one instant and runs them through the same
// transactions as a Write's.

// HandoffMagic opens a descriptor-handoff connection: these 16 bytes, then
// the 16-byte ticket from OpenShared. Any other first bytes are a gRPC
// connection (whose HTTP/2 preface starts "PRI * HTTP/2.0").
const HandoffMagic = "NFABRIC-SHM/1\n\x00\x00"

// TicketBytes is the length of an OpenShared ticket.
const TicketBytes = 16

// handoffTimeout bounds how long a new connection on the Unix socket may
// take to send its first 16 bytes (a gRPC client sends its preface at
// once), and a handoff its ticket.
const handoffTimeout = 5 * time.Second

// sharedBuf is one staging buffer. mu is held for reading while a call
// copies from or into mem, and for writing to unmap it, so that CloseShared
// and the connection's end wait for calls in flight and a later call finds
// mem nil instead of unmapped memory.
type sharedBuf struct {
	id    uint64
	bytes uint64

	// fd is the server's descriptor until the handoff (or close), -1
	// after; guarded by Server.mu, as is ticket's entry in Server.tickets.
	fd     int
	ticket [TicketBytes]byte

	mu  sync.RWMutex
	mem []byte // nil once unmapped
}

// unmap closes the buffer's descriptor, if the client never fetched it,
// and unmaps the server's side once no call is using it. The client's
// mapping stays valid memory (the pages live until it unmaps too).
func (s *Server) unmap(b *sharedBuf) {
	s.mu.Lock()
	delete(s.tickets, b.ticket)
	fd := b.fd
	b.fd = -1
	s.mu.Unlock()
	if fd >= 0 {
		closeFD(fd)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mem != nil {
		if err := unmapShared(b.mem); err != nil {
			s.log.Error("unmapping a shared buffer", "buffer", b.id, "err", err)
		}
		b.mem = nil
	}
}

func sharedOf(o *owner) map[uint64]*sharedBuf { return o.shared }

func (c *controllerService) OpenShared(ctx context.Context, req *pb.OpenSharedRequest) (*pb.OpenSharedResponse, error) {
	s := c.s
	if p, ok := peer.FromContext(ctx); !ok || p.Addr == nil || p.Addr.Network() != "unix" {
		return nil, status.Error(codes.FailedPrecondition, "shared memory is served only over the Unix socket (a client on the same host); use Write and Read ops over TCP")
	}
	n := req.GetBytes()
	if n == 0 || n%cxl.LineBytes != 0 || n > s.opts.MaxSharedBytes {
		return nil, fieldStatus("bytes", fmt.Errorf("%d is not a positive multiple of 64 up to the server's shared-memory limit %d", n, s.opts.MaxSharedBytes))
	}
	// Reserve first, so that concurrent opens cannot pass the limits.
	s.mu.Lock()
	o, err := s.ownerOf(ctx)
	if err == nil {
		switch {
		case s.shared >= s.opts.MaxSharedBuffers:
			err = exhausted("the server holds %d shared buffers, its limit", s.shared)
		case s.sharedBytes+n > s.opts.MaxSharedBytes:
			err = exhausted("bytes: %d more bytes of shared memory would exceed the server's limit of %d (%d in use)", n, s.opts.MaxSharedBytes, s.sharedBytes)
		}
	}
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.shared++
	s.sharedBytes += n
	s.mu.Unlock()
	unreserve := func() {
		s.mu.Lock()
		s.shared--
		s.sharedBytes -= n
		s.mu.Unlock()
	}

	b := &sharedBuf{bytes: n, fd: -1}
	if _, err := rand.Read(b.ticket[:]); err != nil {
		unreserve()
		return nil, status.Errorf(codes.Internal, "ticket: %v", err)
	}
	if b.fd, b.mem, err = newShared(n); err != nil {
		unreserve()
		return nil, status.Errorf(codes.ResourceExhausted, "bytes: creating %d bytes of shared memory: %v", n, err)
	}
	s.mu.Lock()
	if o.closed {
		// The connection ended while the buffer was made: free it here,
		// as release would have.
		s.shared--
		s.sharedBytes -= n
		s.mu.Unlock()
		s.unmap(b)
		return nil, status.Error(codes.Unavailable, "connection is closing")
	}
	b.id = s.newID()
	o.shared[b.id] = b
	s.tickets[b.ticket] = b
	s.mu.Unlock()
	s.log.Info("shared buffer opened", "buffer", b.id, "bytes", n)
	return &pb.OpenSharedResponse{Buffer: b.id, Bytes: n, Ticket: b.ticket[:]}, nil
}

func (c *controllerService) CloseShared(ctx context.Context, req *pb.CloseSharedRequest) (*pb.CloseSharedResponse, error) {
	s := c.s
	b, err := owned(s, ctx, "buffer", req.GetBuffer(), sharedOf, func(b *sharedBuf) {
		s.shared--
		s.sharedBytes -= b.bytes
	})
	if err != nil {
		return nil, err
	}
	s.unmap(b)
	s.log.Info("shared buffer closed", "buffer", b.id)
	return &pb.CloseSharedResponse{}, nil
}

// attached is what a batch holds of the shared buffers it names: their
// read locks (released by done) and the snapshot of its shared writes.
type attached struct {
	bufs []*sharedBuf
	snap *[]byte
}

var snapPool = sync.Pool{New: func() any { return new([]byte) }}

func (a *attached) done() {
	for _, b := range a.bufs {
		b.mu.RUnlock()
	}
	if a.snap != nil {
		snapPool.Put(a.snap)
	}
}

// attach resolves the batch's shared ops on the calling connection's
// buffers: it checks each op's range against its buffer, read-locks the
// buffers (in id order, so that two batches and a CloseShared cannot
// deadlock), copies every shared_write's lines into one private snapshot
// (the consistency rule: the bytes of this instant, before the first
// transaction is accepted) and points the steps at it, and points each
// shared_read at its lines of the buffer. The caller must call done
// after running the steps.
func (c *controllerService) attach(ctx context.Context, steps []step) (*attached, error) {
	a := &attached{}
	var ids []uint64
	for i := range steps {
		if steps[i].shared {
			ids = append(ids, steps[i].buf)
		}
	}
	if len(ids) == 0 {
		return a, nil
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	s := c.s
	s.mu.Lock()
	o, err := s.ownerOf(ctx)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	byID := map[uint64]*sharedBuf{}
	for k, id := range ids {
		if k > 0 && id == ids[k-1] {
			continue
		}
		b := o.shared[id]
		if b == nil {
			s.mu.Unlock()
			return nil, notFound("buffer", id)
		}
		byID[id] = b
		a.bufs = append(a.bufs, b)
	}
	s.mu.Unlock()
	locked := 0
	fail := func(err error) (*attached, error) {
		a.bufs = a.bufs[:locked]
		a.done()
		return nil, err
	}
	for _, b := range a.bufs {
		b.mu.RLock()
		locked++
		if b.mem == nil { // closed since the lookup
			return fail(notFound("buffer", b.id))
		}
	}
	snap, err := bindShared(steps, byID, snapPool.Get().(*[]byte))
	a.snap = snap
	if err != nil {
		return fail(err)
	}
	return a, nil
}

// bindShared checks each shared op's range against its buffer in byID,
// copies the shared writes' lines into one snapshot (grown from *snap)
// and points them at it, and points each shared read at its lines of the
// buffer. It returns snap and a BadRequest status naming every bad op.
func bindShared(steps []step, byID map[uint64]*sharedBuf, snap *[]byte) (*[]byte, error) {
	var bad []violation
	snapBytes := 0
	for i := range steps {
		st := &steps[i]
		if !st.shared {
			continue
		}
		b := byID[st.buf]
		f := fmt.Sprintf("ops[%d].shared_read", i)
		if st.op == cxl.MemWr {
			f = fmt.Sprintf("ops[%d].shared_write", i)
		}
		n := uint64(st.n) * cxl.LineBytes
		switch {
		case b == nil:
			bad = append(bad, violation{f + ".buffer", fmt.Sprintf("%d: no such buffer on this connection", st.buf)})
		case st.off%cxl.LineBytes != 0:
			bad = append(bad, violation{f + ".offset", fmt.Sprintf("%d is not a multiple of 64", st.off)})
		case st.off > b.bytes || n > b.bytes-st.off:
			bad = append(bad, violation{f + ".lines", fmt.Sprintf("offset %d + %d lines runs past buffer %d's %d bytes", st.off, st.n, b.id, b.bytes)})
		case st.op == cxl.MemWr:
			snapBytes += int(n)
		}
	}
	if len(bad) > 0 {
		return snap, badRequest(bad)
	}
	if cap(*snap) < snapBytes {
		*snap = make([]byte, snapBytes)
	}
	*snap = (*snap)[:snapBytes]
	at := 0
	for i := range steps {
		st := &steps[i]
		if !st.shared {
			continue
		}
		region := byID[st.buf].mem[st.off : st.off+uint64(st.n)*cxl.LineBytes]
		if st.op == cxl.MemWr {
			st.data = (*snap)[at : at+len(region)]
			copy(st.data, region)
			at += len(region)
		} else {
			st.dst = region
		}
	}
	return snap, nil
}

// handoffListener serves descriptor handoffs on a Unix socket and passes
// every other connection on to gRPC: a goroutine accepts, and each new
// connection's first 16 bytes (read with a deadline, a bounded number at
// a time) say which it is.
type handoffListener struct {
	net.Listener
	s     *Server
	conns chan net.Conn
	errc  chan error
	sem   chan struct{}
	done  chan struct{}
	once  sync.Once
}

func newHandoffListener(s *Server, l net.Listener) *handoffListener {
	h := &handoffListener{Listener: l, s: s, conns: make(chan net.Conn), errc: make(chan error, 1),
		sem: make(chan struct{}, s.opts.MaxConnections), done: make(chan struct{})}
	go h.loop()
	return h
}

func (h *handoffListener) loop() {
	for {
		c, err := h.Listener.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			h.errc <- err
			return
		}
		select {
		case h.sem <- struct{}{}:
		case <-h.done:
			c.Close()
			return
		}
		go h.classify(c)
	}
}

func (h *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-h.conns:
		return c, nil
	case err := <-h.errc:
		h.errc <- err
		return nil, err
	case <-h.done:
		return nil, net.ErrClosed
	}
}

func (h *handoffListener) Close() error {
	h.once.Do(func() { close(h.done) })
	return h.Listener.Close()
}

func (h *handoffListener) classify(c net.Conn) {
	defer func() { <-h.sem }()
	var head [len(HandoffMagic)]byte
	c.SetReadDeadline(time.Now().Add(handoffTimeout))
	n, err := io.ReadFull(c, head[:])
	if err == nil && isHandoff(head[:]) {
		h.s.handoff(c)
		c.Close()
		return
	}
	if err != nil && n == 0 {
		c.Close()
		return
	}
	// A gRPC connection (or junk, which gRPC refuses): replay the bytes.
	c.SetReadDeadline(time.Time{})
	select {
	case h.conns <- &prefixConn{Conn: c, head: append([]byte(nil), head[:n]...)}:
	case <-h.done:
		c.Close()
	}
}

// prefixConn is a connection whose first bytes were already read.
type prefixConn struct {
	net.Conn
	head []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.head) > 0 {
		n := copy(p, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// handoff answers one handoff connection whose magic was read: it reads
// the ticket, checks that the peer runs as the server's user, and sends
// the buffer's descriptor (once) or an error line.
func (s *Server) handoff(c net.Conn) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return
	}
	refuse := func(msg string) {
		s.log.Info("shared handoff refused", "err", msg)
		c.SetWriteDeadline(time.Now().Add(handoffTimeout))
		io.WriteString(c, "error: "+msg+"\n")
	}
	var t [TicketBytes]byte
	if _, err := io.ReadFull(c, t[:]); err != nil {
		refuse(fmt.Sprintf("reading the ticket: %v", err))
		return
	}
	if uid, err := peerUID(uc); err != nil || uid != uint32(os.Geteuid()) {
		refuse(fmt.Sprintf("the peer is not this server's user (uid %d): %v", uid, err))
		return
	}
	s.mu.Lock()
	b := s.tickets[t]
	fd := -1
	if b != nil {
		delete(s.tickets, t)
		fd, b.fd = b.fd, -1
	}
	s.mu.Unlock()
	if fd < 0 {
		refuse("unknown or used ticket (a ticket fetches its buffer once, while it is open)")
		return
	}
	defer closeFD(fd)
	c.SetWriteDeadline(time.Now().Add(handoffTimeout))
	if err := sendFD(uc, fd); err != nil {
		s.log.Info("shared handoff failed", "buffer", b.id, "err", err)
		return
	}
	s.log.Info("shared buffer handed off", "buffer", b.id)
}

// isHandoff reports whether b starts a handoff connection (the fuzzed
// decoder: a prefix of the magic is not one).
func isHandoff(b []byte) bool {
	return len(b) >= len(HandoffMagic) && bytes.Equal(b[:len(HandoffMagic)], []byte(HandoffMagic))
}

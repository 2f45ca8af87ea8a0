package cxl

import (
	"errors"
	"fmt"

	"github.com/neuronfabric/nfabric/lowbit"
)

// LineBytes is the size of one cache line and of every data payload: 64.
const LineBytes = lowbit.LineBytes

// Line is one 64-byte cache line.
type Line = [LineBytes]byte

// Opcode is the opcode of a host-to-device (M2S) request.
type Opcode uint8

const (
	// MemRd is an M2S Req: read one line. The device answers with an S2M
	// DRS carrying the (possibly transformed) line.
	MemRd Opcode = iota + 1
	// MemWr is an M2S RwD: write one full line. The device answers with an
	// S2M NDR completion.
	MemWr
)

func (o Opcode) String() string {
	switch o {
	case MemRd:
		return "MemRd"
	case MemWr:
		return "MemWr"
	}
	return fmt.Sprintf("Opcode(%d)", uint8(o))
}

// Req is one M2S request. Addr is a device physical address and must be
// 64-byte aligned. A MemWr carries exactly LineBytes of Data; a MemRd
// carries none. Tag is echoed in the response.
type Req struct {
	Op   Opcode
	Tag  uint16
	Addr uint64
	Data []byte
}

// Read returns a MemRd request for addr.
func Read(tag uint16, addr uint64) Req { return Req{Op: MemRd, Tag: tag, Addr: addr} }

// Write returns a MemWr request writing data at addr.
func Write(tag uint16, addr uint64, data []byte) Req {
	return Req{Op: MemWr, Tag: tag, Addr: addr, Data: data}
}

// RespKind is the S2M channel a response travels on.
type RespKind uint8

const (
	// DRS is an S2M data response (MemData), the answer to a MemRd.
	DRS RespKind = iota + 1
	// NDR is an S2M no-data response (Cmp), the answer to a MemWr.
	NDR
)

func (k RespKind) String() string {
	switch k {
	case DRS:
		return "DRS"
	case NDR:
		return "NDR"
	}
	return fmt.Sprintf("RespKind(%d)", uint8(k))
}

// Resp is one S2M response. Every accepted request, valid or not, gets
// exactly one, in acceptance order.
type Resp struct {
	Kind RespKind
	Tag  uint16
	// Seq is the transaction's sequence number, the model's logical time:
	// the n-th request accepted has Seq n (from 1).
	Seq  uint64
	Addr uint64
	// Mode is the mode latched when the request was accepted; the
	// response completed under it. Identity for plain memory.
	Mode Mode
	// Region is the region the address fell in, or NoRegion.
	Region RegionID
	// Transformed is true when Data is an aggregate, not stored bytes.
	Transformed bool
	// Data is the returned line (DRS only; zero on error, like a
	// poisoned line).
	Data Line
	// Err is nil on success. On failure it is an *Error, the response
	// is still delivered (a poisoned DRS or an NDR with error status),
	// and no stored byte changed.
	Err error
}

// OK reports whether the transaction succeeded.
func (r *Resp) OK() bool { return r.Err == nil }

// Sentinel errors; an *Error matches one of them with errors.Is.
var (
	ErrUnaligned    = errors.New("address not 64-byte aligned")
	ErrOutOfRange   = errors.New("address beyond device capacity")
	ErrBadLength    = errors.New("wrong data length")
	ErrBadOpcode    = errors.New("unknown opcode")
	ErrUnmappedView = errors.New("read of an unmapped aggregate view")
	ErrReadOnlyView = errors.New("write to a read-only aggregate view")
)

// ErrKinds lists the sentinel errors in a fixed order (for statistics).
var ErrKinds = []error{ErrUnaligned, ErrOutOfRange, ErrBadLength, ErrBadOpcode, ErrUnmappedView, ErrReadOnlyView}

// Error is the Go error of a failed transaction. It names the request and
// wraps the sentinel that says what was wrong.
type Error struct {
	Op     Opcode
	Tag    uint16
	Seq    uint64
	Addr   uint64
	Kind   error // one of the sentinels above
	Detail string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("cxl: %v tag %d seq %d addr %#x: %v", e.Op, e.Tag, e.Seq, e.Addr, e.Kind)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *Error) Unwrap() error { return e.Kind }

// errIndex returns the position of err's kind in ErrKinds, or -1.
func errIndex(err error) int {
	for i, k := range ErrKinds {
		if errors.Is(err, k) {
			return i
		}
	}
	return -1
}

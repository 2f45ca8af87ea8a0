package cxl

import (
	"math/rand/v2"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
)

// byteReader hands out fuzz bytes, then zeros.
type byteReader struct {
	b []byte
	i int
}

func (r *byteReader) next() byte {
	if r.i >= len(r.b) {
		return 0
	}
	r.i++
	return r.b[r.i-1]
}

func (r *byteReader) more() bool { return r.i < len(r.b) }

// fuzzRegion builds a valid region from four bytes.
func fuzzRegion(br *byteReader, base uint64) Region {
	b0, b1, b2, b3 := br.next(), br.next(), br.next(), br.next()
	r := Region{Base: base, Layout: lowbit.Layout(b0 & 1), Element0: int(b3)}
	if r.Layout == lowbit.ElementMajor {
		r.Workers = 1 + int(b0>>1)%8
	} else {
		r.Workers = 1 + int(b0>>1)%70
	}
	switch b1 % 4 {
	case 0:
		r.Gate = lowbit.PaperGate
	case 1:
		r.Gate = lowbit.Gate{Kind: lowbit.GatePattern, Period: 2 + int(b1>>2)%63}
	case 2:
		r.Gate = lowbit.Gate{Kind: lowbit.GateWorker}
	case 3:
		r.Gate = lowbit.Gate{Kind: lowbit.GateMargin, Threshold: 1 + int(b1>>2)%20}
	}
	r.Mode = Mode(b2 % 4)
	lines := 1 + int(b2>>2)%3
	if s := (b2 >> 4) % 4; s >= 2 && r.Layout == lowbit.WorkerMajor {
		// An integer-sum region; b3's low bit adds 63 lines, so that BFP8
		// reaches its second exponent line.
		r.Sum, r.Gate = lowbit.Int8, lowbit.PaperGate
		if s == 3 {
			r.Sum = lowbit.BFP8
		}
		lines += 63 * int(b3&1)
	}
	r.Size = r.DataBytes(lines)
	return r
}

// FuzzController drives random transaction sequences (writes, reads,
// split accept/complete, mode changes, bad requests) against the
// controller and the independent reference model, and checks stored
// bytes after every step.
func FuzzController(f *testing.F) {
	f.Add([]byte{0x10, 0, 0x05, 0, 0x03, 0x02, 0x0e, 7, 0, 1, 2, 1, 3, 4, 0, 2, 1, 5, 1, 5, 2, 3, 3})
	f.Add([]byte{0x00, 0x02, 0x06, 0, 0x7f, 0x03, 0x03, 9, 0, 9, 9, 1, 9, 9, 2, 5, 5, 6, 1, 1, 3, 3, 4, 1, 3, 1, 3, 3})
	f.Add([]byte{0x0e, 0x01, 0x02, 1, 0x21, 0x00, 0x01, 0, 4, 0, 3, 6, 0, 0, 5, 3, 2, 0, 0, 4, 1, 2, 2, 1, 0, 3, 3, 3, 7})
	f.Add([]byte{0x11, 0, 0x25, 1, 0x07, 0x01, 0x35, 0, 1, 2, 4, 0, 4, 1, 9, 1, 4, 9, 1, 3, 1, 0, 2, 1, 9, 4, 1, 5, 1, 1, 4, 1, 4, 1, 0, 0})
	f.Add([]byte{0x21, 0, 0x39, 3, 0x15, 0x00, 0x2a, 1, 0, 4, 0, 5, 0, 1, 7, 0, 0, 4, 0, 4, 1, 6, 1, 6, 2, 3, 3, 1, 5, 1, 4, 0, 6, 1, 8, 1, 3, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		br := &byteReader{b: data}
		ra := fuzzRegion(br, 0)
		rb := fuzzRegion(br, ra.End()+64*uint64(br.next()%3))
		end := rb.End() + 256
		capacity := end + 64*uint64(br.next()%4)
		c, err := NewCore(Config{Capacity: capacity})
		if err != nil {
			t.Fatal(err)
		}
		m := newRefModel(capacity)
		for _, r := range []Region{ra, rb} {
			if _, err := c.Map(r); err != nil {
				t.Fatalf("map %+v: %v", r, err)
			}
			m.mapRegion(r)
		}
		addr := func() uint64 {
			v := uint64(br.next()) | uint64(br.next())<<8
			return (v % (end / 64)) * 64
		}
		tag := uint16(0)
		accept := func(req Req) {
			tag++
			req.Tag = tag
			_, err := c.Accept(req)
			m.accept(req)
			if want := m.inflight[len(m.inflight)-1].err; !sameErrKind(err, want) {
				t.Fatalf("accept %v %#x len %d: error %v, want %v", req.Op, req.Addr, len(req.Data), err, want)
			}
		}
		complete := func() {
			got, ok := c.Complete()
			if !ok {
				t.Fatal("core has nothing to complete; reference has")
			}
			want, wantErr := m.complete()
			if !sameErrKind(got.Err, wantErr) {
				t.Fatalf("seq %d: error %v, want %v", want.Seq, got.Err, wantErr)
			}
			got.Err = nil
			if got != want {
				t.Fatalf("seq %d:\n got %+v\nwant %+v", want.Seq, got, want)
			}
		}
		line := func() []byte {
			r := rand.New(rand.NewPCG(uint64(br.next()), uint64(br.i)))
			b := make([]byte, 64)
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			return b
		}
		for steps := 0; br.more() && steps < 2000; steps++ {
			switch op := br.next(); op % 8 {
			case 0:
				a := addr()
				accept(Write(0, a, line()))
				complete()
			case 1:
				accept(Read(0, addr()))
				complete()
			case 2:
				if len(m.inflight) < 8 {
					accept(Read(0, addr()))
				}
			case 6:
				if len(m.inflight) < 8 {
					a := addr()
					accept(Write(0, a, line()))
				}
			case 3:
				if len(m.inflight) > 0 {
					complete()
				}
			case 4:
				id, mode := int(br.next()%2), Mode(int(br.next())%NumModes)
				if err := c.SetMode(RegionID(id), mode, int64(steps)); err != nil {
					t.Fatal(err)
				}
				m.setMode(id, mode)
			case 5:
				a, x := addr(), br.next()
				var req Req
				switch x % 5 {
				case 0:
					req = Read(0, a+1+uint64(x)%63)
				case 1:
					req = Write(0, capacity+64*uint64(x), line())
				case 2:
					n := int(x) % 130
					if n == 64 {
						n = 0
					}
					req = Write(0, a, make([]byte, n))
				case 3:
					req = Req{Op: Opcode(3 + x%200), Addr: a}
				case 4:
					req = Req{Op: MemRd, Addr: a, Data: []byte{x}}
				}
				accept(req)
				complete()
			case 7:
				for len(m.inflight) > 0 {
					complete()
				}
			}
			if c.Pending() != len(m.inflight) || c.Seq() != m.seq {
				t.Fatalf("pending %d seq %d, reference %d %d", c.Pending(), c.Seq(), len(m.inflight), m.seq)
			}
			checkStored(t, c, m)
		}
		for len(m.inflight) > 0 {
			complete()
		}
		checkStored(t, c, m)
	})
}

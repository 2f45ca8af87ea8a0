package host

import (
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
)

// FuzzPayloadVote reads arbitrary bytes as a payload's data window (as a
// payload file's reader hands them over) and checks that Check, Counts and
// Vote never panic and that Vote equals the reference loops on the same
// bytes whenever Check accepts them.
func FuzzPayloadVote(f *testing.F) {
	f.Add([]byte{0b00111111, 0b11110011, 0b00111111}, uint8(8), false, uint8(0), uint16(0))
	f.Add(make([]byte, 200), uint8(3), true, uint8(1), uint16(17))
	f.Add([]byte{0xff, 0x01, 0x80, 0x7f}, uint8(2), true, uint8(3), uint16(5))
	f.Fuzz(func(t *testing.T, data []byte, w uint8, workerMajor bool, gateSel uint8, base uint16) {
		s := lowbit.Spec{Workers: 1 + int(w)%8, Layout: lowbit.ElementMajor, Format: lowbit.Ternary}
		if workerMajor {
			s.Layout = lowbit.WorkerMajor
			s.Workers = 1 + int(w)%16
		}
		switch gateSel % 4 {
		case 0:
			s.Format = lowbit.Binary
		case 1:
			s.Gate = lowbit.Gate{Kind: lowbit.GatePattern, Period: 2 + int(gateSel)%20}
		case 2:
			s.Gate = lowbit.Gate{Kind: lowbit.GateMargin, Threshold: 1 + int(gateSel)%(2*s.Workers)}
		case 3:
			s.Gate = lowbit.Gate{Kind: lowbit.GateWorker}
		}
		// The element count that data fills: the data window of n elements
		// must be exactly len(data).
		n := 0
		for m := 1; m <= 4096 && DataBytes(s, m) <= int64(len(data)); m++ {
			if DataBytes(s, m) == int64(len(data)) {
				n = m
			}
		}
		if n == 0 {
			return
		}
		p := &Payload{Spec: s, Elements: n, Base: int(base)}
		half := len(data)
		if s.GateBits() {
			half /= 2
			p.Gates = data[half:]
		}
		p.Signs = data[:half]
		p.Counts()
		err := p.Check()
		u, verr := p.Vote(s)
		if err != nil {
			return
		}
		if verr != nil {
			t.Fatalf("Vote after a clean Check: %v", verr)
		}
		var want []int8
		if s.Layout == lowbit.ElementMajor {
			var gates []byte
			if p.Gates != nil {
				gates = p.Gates[:n]
			}
			want = lowbit.RefAggregatePacket(p.Signs[:n], gates, s, int(base))
		} else {
			signs, gates := p.slabs(p.Signs), [][]byte(nil)
			if p.Gates != nil {
				gates = p.slabs(p.Gates)
			}
			want = lowbit.RefAggregatePlanes(signs, gates, n, s, int(base))
		}
		for i := range want {
			if u[i] != want[i] {
				t.Fatalf("element %d: vote %d, reference %d (spec %+v, n %d)", i, u[i], want[i], s, n)
			}
		}
	})
}

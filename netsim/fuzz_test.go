package netsim

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// FuzzReadLinks checks that ReadLinks never panics and that what it
// accepts survives a write-read round trip.
func FuzzReadLinks(f *testing.F) {
	f.Add(LinksHeader + "\n1000,h0>s0,800,300,0,0,0,0\n1000,s0>h0,800,0,600,7,9,0\n")
	f.Add("")
	f.Add(LinksHeader + "\n-1,a,1,0,0,0,0,0\n")
	f.Fuzz(func(t *testing.T, in string) {
		ls, err := ReadLinks(strings.NewReader(in), "fuzz")
		if err != nil {
			return
		}
		var b bytes.Buffer
		fmt.Fprintln(&b, LinksHeader)
		for _, l := range ls {
			fmt.Fprintf(&b, "%d,%s,%d,%d,%d,%d,%d,%d\n", l.TNS, l.Link, l.RateBps, l.BusyGradNS, l.BusyBgNS, l.QueueBytes, l.QueueMaxBytes, l.DropBytes)
		}
		back, err := ReadLinks(&b, "again")
		if err != nil || len(back) != len(ls) {
			t.Fatalf("round trip: %v, %d of %d", err, len(back), len(ls))
		}
		for i := range ls {
			if back[i] != ls[i] {
				t.Fatalf("round trip: %+v became %+v", ls[i], back[i])
			}
		}
	})
}

func FuzzReadBuckets(f *testing.F) {
	f.Add(BucketsHeader + "\n0,0,1000003,0,6375628,8000024,8000024\n0,1,12,100,-1,0,0\n")
	f.Fuzz(func(t *testing.T, in string) {
		bs, err := ReadBuckets(strings.NewReader(in), "fuzz")
		if err != nil {
			return
		}
		for _, b := range bs {
			if b.FinishNS < -1 || (b.FinishNS >= 0 && b.FinishNS < b.ReleaseNS) || b.Bytes < 0 {
				t.Fatalf("accepted %+v", b)
			}
		}
	})
}

func FuzzReadTotals(f *testing.F) {
	f.Add(TotalsHeader + "\nh0>s0,10000000000,14690200,0,15521116,0,0\n")
	f.Fuzz(func(t *testing.T, in string) {
		ts, err := ReadTotals(strings.NewReader(in), "fuzz")
		if err != nil {
			return
		}
		for _, x := range ts {
			if x.RateBps <= 0 || x.Link == "" {
				t.Fatalf("accepted %+v", x)
			}
		}
	})
}

func FuzzParseBackground(f *testing.F) {
	for _, s := range []string{"none", "bulk=2", "onoff=8@0.9,off=0", "bulk=1,onoff=2,on=1ms,off=2ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		b, err := ParseBackground(in)
		if err != nil {
			return
		}
		back, err := ParseBackground(b.String())
		if err != nil || back != b {
			t.Fatalf("ParseBackground(%q) = %+v; its String %q reads back as %+v, %v", in, b, b.String(), back, err)
		}
	})
}

func FuzzReadHosts(f *testing.F) {
	f.Add(HostsHeader + "\n1000,h0,60\n1000,h1,100\n")
	f.Fuzz(func(t *testing.T, in string) {
		hs, err := ReadHosts(strings.NewReader(in), "fuzz")
		if err != nil {
			return
		}
		for i, h := range hs {
			if h.Delivered < 0 || h.TNS < 1 || (i > 0 && h.TNS < hs[i-1].TNS) {
				t.Fatalf("accepted %+v", h)
			}
		}
	})
}

package dram

import (
	"fmt"
	"io"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/timing/sim"
)

// RowMissRead returns the DRAM part of a read that finds its bank closed
// on an idle channel: tRCD + tCL + the burst, in whole clock cycles (the
// activate waits for the next clock edge and the front end comes on top:
// see the timing model's closed forms).
func (d Spec) RowMissRead() sim.Time {
	t := makeConstraints(d)
	return t.rcd + t.cl + t.burst
}

// WritePresets writes each speed grade in the clock cycles a channel uses
// (after JEDEC rounding) with one channel's peak bandwidth, as
// tab-separated lines under a header line, each prefixed with indent.
func WritePresets(w io.Writer, indent string) {
	fmt.Fprintln(w, indent+"name\tprotocol\tMT/s\ttCK ps\tCL\tCWL\tRCD\tRP\tRAS\tRTP\tWR\tCCD_S\tCCD_L\tCCD_L_WR\tRRD_S\tRRD_L\tFAW\tWTR_S\tWTR_L\tREFI\tRFC\tGB/s per channel")
	for _, n := range Presets() {
		d, _ := Preset(n)
		t := makeConstraints(d)
		c := func(v sim.Time) int64 { return int64(v / t.ck) }
		fmt.Fprintf(w, "%s%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\n",
			indent, n, d.Protocol, d.DataRateMTs, t.ck, c(t.cl), c(t.cwl), c(t.rcd), c(t.rp), c(t.ras), c(t.rtp), c(t.wr),
			c(t.ccds), c(t.ccdl), c(t.ccdlwr), c(t.rrds), c(t.rrdl), c(t.faw), c(t.wtrs), c(t.wtrl), c(t.refi), c(t.rfc),
			float64(lowbit.LineBytes)/(float64(t.burst)/1e12)/1e9)
	}
}

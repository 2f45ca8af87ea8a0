package timing

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// DescribePresets writes every preset with the values it sets: the model
// presets, each DDR5 speed bin in the clock cycles the channel uses (after
// JEDEC rounding) with its peak bandwidth, and each CXL link with its flit
// time and the most line data it carries per direction.
func DescribePresets(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "model presets (--memory, memory.model / link.model):")
	fmt.Fprintln(tw, "  ideal\tthe paper's abstraction (Sec. 4): fixed 200 ns memory, unlimited concurrency, one 128 GiB/s gate on responses; the paper's 128 GiB/s, 200 ns point")
	fmt.Fprintln(tw, "  ddr5\tDDR5 channels (ddr5-4800, 8 sub-channels per stack) behind a two-way CXL link (pcie6-x16), finite queues and credits")
	fmt.Fprintln(tw, "")
	fmt.Fprintln(tw, "DDR5 presets (--dram-preset, memory.ddr5.preset), in cycles of tCK:")
	fmt.Fprintln(tw, "  name\tMT/s\ttCK ps\tCL\tCWL\tRCD\tRP\tRAS\tRTP\tWR\tCCD_S\tCCD_L\tCCD_L_WR\tRRD_S\tRRD_L\tFAW\tWTR_S\tWTR_L\tREFI\tRFC\tGB/s per sub-channel")
	for _, n := range DDR5Presets() {
		d, err := DDR5Preset(n)
		if err != nil {
			return err
		}
		t := makeDDR5Timing(d)
		c := func(v Time) int64 { return int64(v / t.ck) }
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\n",
			n, d.DataRateMTs, t.ck, c(t.cl), c(t.cwl), c(t.rcd), c(t.rp), c(t.ras), c(t.rtp), c(t.wr),
			c(t.ccds), c(t.ccdl), c(t.ccdlwr), c(t.rrds), c(t.rrdl), c(t.faw), c(t.wtrs), c(t.wtrl), c(t.refi), c(t.rfc),
			float64(LineBytes)/(float64(t.burst)/1e12)/1e9)
	}
	fmt.Fprintln(tw, "")
	fmt.Fprintln(tw, "CXL link presets (--cxl-preset, link.cxl.preset), per direction:")
	fmt.Fprintln(tw, "  name\tflit B\traw GB/s\tflit ns\tread-response line GiB/s")
	for _, n := range CXLPresets() {
		x, err := CXLPreset(n)
		if err != nil {
			return err
		}
		l := MakeFlitLinkBuilder().WithConfig(x).Build("L")
		fmt.Fprintf(tw, "  %s\t%d\t%.2f\t%.4f\t%.2f\n", n, x.FlitBytes, x.RawBytesPerSec()/1e9, float64(l.flitFS)/1e6, x.LineGiBps(1))
	}
	return tw.Flush()
}

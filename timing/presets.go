package timing

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/neuronfabric/nfabric/timing/cxldev"
	"github.com/neuronfabric/nfabric/timing/dram"
)

// DescribePresets writes every preset with the values it sets: the model
// presets (ideal and the CXL devices, with their stages, published
// anchors and the provenance of each parameter), each DRAM speed grade in
// the clock cycles the channel uses (after JEDEC rounding) with its peak
// bandwidth, and each CXL link with its flit time and the most line data
// it carries per direction.
func DescribePresets(w io.Writer) error {
	fmt.Fprintln(w, "model presets (--memory ideal, or --cxl-device NAME: memory.model dram behind that device):")
	fmt.Fprintln(w, "  ideal (paper): the paper's abstraction (Sec. 4): fixed 200 ns memory, unlimited concurrency, one 128 GiB/s gate on responses")
	cxldev.WriteDevices(w, "  ")
	fmt.Fprintln(w, "")
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "DRAM presets (--dram-preset, device.media.preset), in cycles of tCK:")
	dram.WritePresets(tw, "  ")
	fmt.Fprintln(tw, "")
	fmt.Fprintln(tw, "CXL link presets (--cxl-link, device.link.preset), per direction:")
	cxldev.WriteLinkPresets(tw, "  ")
	return tw.Flush()
}

package cxldev

import (
	"fmt"
	"io"
)

// WriteLinkPresets writes each link preset's flit size, raw rate, flit
// time and most read-response line data per direction, as tab-separated
// lines under a header line, each prefixed with indent.
func WriteLinkPresets(w io.Writer, indent string) {
	fmt.Fprintln(w, indent+"name\tflit B\traw GB/s\tflit ns\tread-response line GB/s")
	for _, n := range LinkPresets() {
		x, _ := LinkPreset(n)
		l := MakeFlitLinkBuilder().WithConfig(x).Build("L")
		fmt.Fprintf(w, "%s%s\t%d\t%.2f\t%.4f\t%.2f\n", indent, n, x.FlitBytes, x.RawBytesPerSec()/1e9, float64(l.flitFS)/1e6, x.LineGiBps(1)*(1<<30)/1e9)
	}
}

// WriteDevices writes each device preset: its class and description, its
// stages and queues, its published anchors and every parameter with what
// set it (calibrated values marked), prefixed with indent.
func WriteDevices(w io.Writer, indent string) {
	for _, p := range Devices() {
		c := p.Config
		fmt.Fprintf(w, "%s%s (%s): %s\n", indent, c.Preset, p.Class, p.Description)
		fmt.Fprintf(w, "%s  stages: host fabric %g + bridge %g + protocol %g ns each way; link %s x%d, %d-byte flits, port %g ns; device protocol %g ns each way; queues %d request / %d response; media %s x %d\n",
			indent, c.Host.FabricNS, c.Host.BridgeNS, c.Host.ProtocolNS, c.Link.Preset, c.Link.Lanes, c.Link.FlitBytes, c.Link.PortLatencyNS,
			c.ProtocolNS, c.RequestQueue, c.ResponseQueue, c.Media.Preset, c.Media.Channels)
		if p.IdleNS > 0 {
			fmt.Fprintf(w, "%s  published idle read %.1f ns: %s\n", indent, p.IdleNS, p.IdleSource)
		}
		if p.ReadHiGBps > 0 {
			fmt.Fprintf(w, "%s  published read bandwidth %s GB/s: %s\n", indent, gbpsRange(p.ReadLoGBps, p.ReadHiGBps), p.ReadSource)
		}
		for _, q := range p.Parameters {
			mark := ""
			if q.Calibrated {
				mark = " [calibrated]"
			}
			fmt.Fprintf(w, "%s  %s = %s: %s%s\n", indent, q.Key, q.Value, q.SetBy, mark)
		}
	}
}

func gbpsRange(lo, hi float64) string {
	if lo == hi {
		return fmt.Sprintf("%.1f", lo)
	}
	return fmt.Sprintf("%.1f-%.1f", lo, hi)
}

package experiments

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/neuronfabric/nfabric/host"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/report"
)

func init() {
	RegisterReport("payload", "Low-bit payload semantics and traffic accounting (Sec. 2)", 5, runPayloadBlock)
}

// runPayloadBlock checks the Sec. 2 semantics on the paper's worked
// example and on random payloads (fast kernels against the reference
// loops), and tabulates bits per element under each accounting.
func runPayloadBlock(ctx context.Context, cfg Config) (*report.Result, error) {
	res := &report.Result{Title: "Low-bit payload semantics and traffic accounting (Sec. 2)"}

	// The paper's example: eight workers, six positive and two negative.
	ex := report.Table{
		Name:    "example",
		Title:   "Sec. 2 worked example: 8 workers, 6 positive and 2 negative",
		Columns: []string{"element (flat index)", "packet byte", "count c", "margin a", "G-Binary u", "G-Ternary m*u", "paper"},
	}
	packet := []byte{0b00111111, 0b11110011, 0b00111111}
	counts := make([]byte, len(packet))
	lowbit.CountPacket(counts, packet, 8)
	bin := make([]int8, len(packet))
	ter := make([]int8, len(packet))
	if err := lowbit.VotePacket(bin, packet, nil, lowbit.Spec{Workers: 8, Format: lowbit.Binary}, 0); err != nil {
		return nil, err
	}
	if err := lowbit.VotePacket(ter, packet, nil, lowbit.Spec{Workers: 8, Format: lowbit.Ternary, Gate: lowbit.PaperGate}, 0); err != nil {
		return nil, err
	}
	paperEx := []string{"u = +1 (G-Ternary keeps)", "u = +1 (G-Ternary keeps)", "u = +1, G-Ternary returns 0 (gate zero)"}
	for i := range packet {
		ex.AddRow(i, fmt.Sprintf("%08b", packet[i]), int(counts[i]), 2*int(counts[i])-8, int(bin[i]), int(ter[i]), paperEx[i])
	}
	ex.Notes = []string{"Gate: the paper's fixed 2-of-3 pattern (flat index mod 3 == 2 returns zero)."}
	res.Tables = append(res.Tables, ex)

	// Fast kernels against the reference loops on random payloads.
	n := 1 << 16
	if cfg.Full {
		n = 1 << 20
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x706179))
	chk := report.Table{
		Name:    "kernels",
		Title:   "Kernel cross-check: fast kernels against the per-element reference loops",
		Columns: []string{"layout", "workers", "format", "gate", "elements", "mismatches"},
	}
	gates := []lowbit.Gate{lowbit.PaperGate, {Kind: lowbit.GateWorker}, {Kind: lowbit.GateMargin, Threshold: 2}}
	for _, layout := range []lowbit.Layout{lowbit.ElementMajor, lowbit.WorkerMajor} {
		ws := []int{8, 3}
		if layout == lowbit.WorkerMajor {
			ws = []int{8, 64, 1000}
		}
		for _, w := range ws {
			for _, spec := range append([]lowbit.Spec{{Workers: w, Layout: layout, Format: lowbit.Binary}},
				lowbit.Spec{Workers: w, Layout: layout, Format: lowbit.Ternary, Gate: gates[0]},
				lowbit.Spec{Workers: w, Layout: layout, Format: lowbit.Ternary, Gate: gates[1]},
				lowbit.Spec{Workers: w, Layout: layout, Format: lowbit.Ternary, Gate: gates[2]}) {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				m := n
				if w > 64 {
					m = n / 16
				}
				bad, err := crossCheck(r, spec, m)
				if err != nil {
					return nil, err
				}
				gate := "-"
				if spec.Format == lowbit.Ternary {
					gate = spec.Gate.String()
					if spec.Gate.Extension() {
						gate += " (extension)"
					}
				}
				chk.AddRow(layout.String(), w, spec.Format.String(), gate, m, bad)
				if bad == 0 {
					res.Passed++
				} else {
					res.Failed++
				}
			}
		}
	}
	res.Tables = append(res.Tables, chk)

	bits := report.Table{
		Name:    "bits",
		Title:   "Payload bits per element and ratio to FP32",
		Columns: []string{"format", "gate", "paper accounting (bits)", "ratio", "paper ratio", "stored planes (bits)", "base-3 packing (bits)"},
	}
	for _, row := range []struct {
		f     lowbit.Format
		g     lowbit.Gate
		paper string
	}{
		{lowbit.FP32, lowbit.Gate{}, "1.0000"},
		{lowbit.Binary, lowbit.Gate{}, "0.0313"},
		{lowbit.Ternary, lowbit.PaperGate, "0.0494"},
		{lowbit.Ternary, lowbit.Gate{Kind: lowbit.GateWorker}, "-"},
		{lowbit.Ternary, lowbit.Gate{Kind: lowbit.GateMargin, Threshold: 2}, "-"},
	} {
		gate := "-"
		if row.f == lowbit.Ternary {
			gate = row.g.String()
		}
		pb := lowbit.BitsPerElement(row.f, row.g, lowbit.PaperAccounting)
		bits.AddRow(row.f.String(), gate, pb, pb/32, row.paper,
			lowbit.BitsPerElement(row.f, row.g, lowbit.PlaneAccounting),
			lowbit.BitsPerElement(row.f, row.g, lowbit.Base3Accounting))
	}
	bits.Notes = []string{
		"The paper counts G-Ternary at log2(3) = 1.58 bits whatever the gate; its Table 6 traffic column follows from that.",
		"With the paper's positional gate the controller derives m from the element index, so the stored payload is the 1-bit sign plane; a worker-gate payload stores two planes (2 bits) or packs five trits per byte (1.6 bits).",
	}
	res.Tables = append(res.Tables, bits)
	res.Summary = []string{fmt.Sprintf("%d passed, %d failed", res.Passed, res.Failed)}
	return res, nil
}

// crossCheck encodes random gradients under s through the host runtime,
// aggregates them with the fast kernels (host.Payload.Vote) and counts the
// elements that differ from RefAggregate.
func crossCheck(r *rand.Rand, s lowbit.Spec, n int) (int, error) {
	const tau = 0.5
	g := make([][]float32, s.Workers)
	for k := range g {
		g[k] = make([]float32, n)
		for i := range g[k] {
			if r.IntN(16) == 0 {
				continue // exact zeros encode as 0
			}
			g[k][i] = float32(r.NormFloat64())
		}
	}
	base := r.IntN(1 << 20)
	p, err := host.Encode(s, base, g, tau)
	if err != nil {
		return 0, err
	}
	got, err := p.Vote(s)
	if err != nil {
		return 0, err
	}
	want := lowbit.RefAggregate(g, s, tau, base)
	bad := 0
	for i := range want {
		if got[i] != want[i] {
			bad++
		}
	}
	return bad, nil
}

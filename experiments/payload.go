package experiments

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/host"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/report"
)

func init() {
	run.Register(run.Spec[PayloadUnit]{Name: "payload", Title: payloadTitle, Order: 5,
		Units: costed(payloadUnits, payloadCost), Layout: func(_ run.Config, us []PayloadUnit) (*report.Result, error) { return PayloadLayout(us), nil },
		Claims: func(run.Config) []report.Claim { return payloadClaims(nil) }})
}

const payloadTitle = "Low-bit payload semantics and traffic accounting (Sec. 2)"

// PayloadUnit is one unit of the payload block: the paper's worked
// example, one kernel cross-check, or the bits-per-element accounting.
type PayloadUnit struct {
	Example *PayloadExample `json:"example,omitempty"`
	Check   *KernelCheck    `json:"check,omitempty"`
	Bits    []PayloadBits   `json:"bits,omitempty"`
}

// PayloadExample is the Sec. 2 example through the fast kernels: eight
// workers' packed signs per element, their count c and the G-Binary and
// G-Ternary (2-of-3 gate) results.
type PayloadExample struct {
	Packets []byte `json:"packets"`
	Counts  []int  `json:"counts"`
	Binary  []int  `json:"binary"`
	Ternary []int  `json:"ternary"`
}

// KernelCheck is one cross-check of the fast kernels (encode through the
// host runtime, host.Payload.Vote) against lowbit.RefAggregate on random
// gradients.
type KernelCheck struct {
	Layout     string `json:"layout"`
	Workers    int    `json:"workers"`
	Format     string `json:"format"`
	Gate       string `json:"gate"` // "-" for G-Binary
	Elements   int    `json:"elements"`
	Mismatches int    `json:"mismatches"`
}

// PayloadBits is one format's bits per element under each accounting.
type PayloadBits struct {
	Format string  `json:"format"`
	Gate   string  `json:"gate"`
	Paper  float64 `json:"paper_bits"`
	Ratio  float64 `json:"ratio"`
	Planes float64 `json:"plane_bits"`
	Base3  float64 `json:"base3_bits"`
	// PaperRatio is the paper's Table 6 ratio ("-" where it has none).
	PaperRatio string `json:"paper_ratio"`
}

// payloadSpecs lists the kernel cross-checks: both layouts, several
// worker counts, G-Binary and G-Ternary under three gates.
func payloadSpecs() []lowbit.Spec {
	gates := []lowbit.Gate{lowbit.PaperGate, {Kind: lowbit.GateWorker}, {Kind: lowbit.GateMargin, Threshold: 2}}
	var out []lowbit.Spec
	for _, layout := range []lowbit.Layout{lowbit.ElementMajor, lowbit.WorkerMajor} {
		ws := []int{8, 3}
		if layout == lowbit.WorkerMajor {
			ws = []int{8, 64, 1000}
		}
		for _, w := range ws {
			out = append(out, lowbit.Spec{Workers: w, Layout: layout, Format: lowbit.Binary})
			for _, g := range gates {
				out = append(out, lowbit.Spec{Workers: w, Layout: layout, Format: lowbit.Ternary, Gate: g})
			}
		}
	}
	return out
}

// payloadElements is each cross-check's element count: 2^16, 2^20 in
// the full tier (a sixteenth of it beyond 64 workers).
func payloadElements(cfg run.Config) int {
	if cfg.Full() {
		return 1 << 20
	}
	return 1 << 16
}

// payloadUnits lists the example, one unit per cross-check (each with its
// own random stream, so shards are independent) and the accounting.
func payloadUnits(cfg run.Config) ([]run.Unit[PayloadUnit], error) {
	n := payloadElements(cfg)
	us := []run.Unit[PayloadUnit]{{Key: "example", Cores: 1, Run: func(context.Context, run.Config) (PayloadUnit, error) {
		ex, err := payloadExample()
		return PayloadUnit{Example: ex}, err
	}}}
	for i, s := range payloadSpecs() {
		m := n
		if s.Workers > 64 {
			m = n / 16
		}
		key := fmt.Sprintf("check/%s/w%d/%s", s.Layout, s.Workers, s.Format)
		if s.Format == lowbit.Ternary {
			key += "/" + s.Gate.String()
		}
		us = append(us, run.Unit[PayloadUnit]{Key: key, Cores: 1, Run: func(ctx context.Context, cfg run.Config) (PayloadUnit, error) {
			if err := ctx.Err(); err != nil {
				return PayloadUnit{}, err
			}
			r := rand.New(rand.NewPCG(cfg.Seed, 0x706179+uint64(i)))
			bad, err := crossCheck(r, s, m)
			if err != nil {
				return PayloadUnit{}, err
			}
			gate := "-"
			if s.Format == lowbit.Ternary {
				gate = s.Gate.String()
				if s.Gate.Extension() {
					gate += " (extension)"
				}
			}
			return PayloadUnit{Check: &KernelCheck{Layout: s.Layout.String(), Workers: s.Workers, Format: s.Format.String(), Gate: gate, Elements: m, Mismatches: bad}}, nil
		}})
	}
	us = append(us, run.Unit[PayloadUnit]{Key: "bits", Cores: 1, Run: func(context.Context, run.Config) (PayloadUnit, error) {
		return PayloadUnit{Bits: payloadBits()}, nil
	}})
	return us, nil
}

// payloadExample runs the paper's example: eight workers, six positive
// and two negative, at flat indices 0, 1, 2 (the third is gated).
func payloadExample() (*PayloadExample, error) {
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
	ex := &PayloadExample{Packets: packet}
	for i := range packet {
		ex.Counts = append(ex.Counts, int(counts[i]))
		ex.Binary = append(ex.Binary, int(bin[i]))
		ex.Ternary = append(ex.Ternary, int(ter[i]))
	}
	return ex, nil
}

// paperRatio is the paper's Table 6 traffic ratio of a format under a
// gate (G-Ternary under its positional gate), where it gives one.
func paperRatio(f lowbit.Format, g lowbit.Gate) (float64, bool) {
	switch {
	case f == lowbit.FP32:
		return 1, true
	case f == lowbit.Binary:
		return 0.0313, true
	case f == lowbit.Ternary && g == lowbit.PaperGate:
		return 0.0494, true
	}
	return 0, false
}

// bitsRow is one format and gate of the accounting table.
type bitsRow struct {
	f lowbit.Format
	g lowbit.Gate
}

// gate is the row's gate column: the gate for G-Ternary, "-" otherwise.
func (r bitsRow) gate() string {
	if r.f == lowbit.Ternary {
		return r.g.String()
	}
	return "-"
}

// payloadBitsRows are the formats and gates the accounting table lists.
var payloadBitsRows = []bitsRow{
	{lowbit.FP32, lowbit.Gate{}},
	{lowbit.Binary, lowbit.Gate{}},
	{lowbit.Ternary, lowbit.PaperGate},
	{lowbit.Ternary, lowbit.Gate{Kind: lowbit.GateWorker}},
	{lowbit.Ternary, lowbit.Gate{Kind: lowbit.GateMargin, Threshold: 2}},
}

// payloadBits tabulates lowbit.BitsPerElement under the three accountings.
func payloadBits() []PayloadBits {
	var out []PayloadBits
	for _, row := range payloadBitsRows {
		paper := "-"
		if r, ok := paperRatio(row.f, row.g); ok {
			paper = fmt.Sprintf("%.4f", r)
		}
		pb := lowbit.BitsPerElement(row.f, row.g, lowbit.PaperAccounting)
		out = append(out, PayloadBits{Format: row.f.String(), Gate: row.gate(), Paper: pb, Ratio: pb / 32, PaperRatio: paper,
			Planes: lowbit.BitsPerElement(row.f, row.g, lowbit.PlaneAccounting),
			Base3:  lowbit.BitsPerElement(row.f, row.g, lowbit.Base3Accounting)})
	}
	return out
}

// paperRatioCell is b's paper ratio cell: the paper's number beside its
// text, so the page compares it with the measured ratio by value.
func paperRatioCell(b PayloadBits) any {
	for _, row := range payloadBitsRows {
		if row.f.String() == b.Format && row.gate() == b.Gate {
			if r, ok := paperRatio(row.f, row.g); ok {
				return report.Num{Value: r, Text: b.PaperRatio}
			}
		}
	}
	return b.PaperRatio
}

// PayloadLayout lays the units out: the worked example beside the paper's
// reading, the cross-checks with a pass/fail count, the accounting.
func PayloadLayout(us []PayloadUnit) *report.Result {
	res := &report.Result{Title: payloadTitle}
	ex := report.Table{Name: "example", Title: "Sec. 2 worked example: 8 workers, 6 positive and 2 negative",
		Columns: []string{"element (flat index)", "packet byte", "count c", "margin a", "G-Binary u", "G-Ternary m*u", "paper"}}
	chk := report.Table{Name: "kernels", Title: "Kernel cross-check: fast kernels against the per-element reference loops",
		Columns: []string{"layout", "workers", "format", "gate", "elements", "mismatches"}}
	bits := report.Table{Name: "bits", Title: "Payload bits per element and ratio to FP32",
		Columns: []string{"format", "gate", "bits under the paper's accounting", "ratio", "paper ratio", "stored planes (bits)", "base-3 packing (bits)"}}
	paperEx := []string{"u = +1 (G-Ternary keeps)", "u = +1 (G-Ternary keeps)", "u = +1, G-Ternary returns 0 (gate zero)"}
	for _, u := range us {
		switch {
		case u.Example != nil:
			e := u.Example
			for i := range e.Packets {
				ex.AddRow(i, fmt.Sprintf("%08b", e.Packets[i]), e.Counts[i], 2*e.Counts[i]-8, e.Binary[i], e.Ternary[i], paperEx[i])
			}
		case u.Check != nil:
			c := u.Check
			chk.AddRow(c.Layout, c.Workers, c.Format, c.Gate, c.Elements, c.Mismatches)
			if c.Mismatches == 0 {
				res.Passed++
			} else {
				res.Failed++
			}
		default:
			for _, b := range u.Bits {
				bits.AddRow(b.Format, b.Gate, b.Paper, b.Ratio, paperRatioCell(b), b.Planes, b.Base3)
			}
		}
	}
	ex.Notes = []string{"Gate: the paper's fixed 2-of-3 pattern (flat index mod 3 == 2 returns zero)."}
	bits.Notes = []string{
		"The paper counts G-Ternary at log2(3) = 1.58 bits whatever the gate; its Table 6 traffic column follows from that.",
		"With the paper's positional gate the controller derives m from the element index, so the stored payload is the 1-bit sign plane; a worker-gate payload stores two planes (2 bits) or packs five trits per byte (1.6 bits).",
	}
	res.Tables = append(res.Tables, ex, chk, bits)
	res.Summary = []string{fmt.Sprintf("%d passed, %d failed", res.Passed, res.Failed)}
	res.Claims = payloadClaims(us)
	return res
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

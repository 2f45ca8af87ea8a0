package verify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/usage"
)

// MaxLines bounds Config.Lines: the test holds the written
// lines, their expected responses and the controller's memory, about 285
// bytes per line (2.39 GB peak measured at 2^23 lines), so the bound keeps
// a run near 1.2 GB.
const MaxLines = 1 << 22

// MaxSweeps bounds Config.Sweeps (2^20 random cases).
const MaxSweeps = 1 << 20

// Config configures the functional tester.
type Config struct {
	// Lines is the number of 64-byte packet lines of the Sec. 6 test
	// (default 65536).
	Lines int
	// Workers is W of the Sec. 6 test, 1 to 8 (default 8, the paper's).
	Workers int
	// Sweeps is the number of random cases beyond the paper (0: none):
	// W in 1..64, both layouts, every gate kind, random mode switches
	// between transactions; and as many random integer-sum cases (Int8,
	// BFP8 regions under every mode).
	Sweeps int
	// Seed fixes every random choice: same seed, same result.
	Seed uint64
	// Logf reports progress; nil discards it.
	Logf func(format string, args ...any)
	// Fault injects a deliberate bug into every controller the tester
	// builds (cxl.Config.Fault, tests only): the tester must catch each.
	Fault cxl.Fault `json:"-"`
}

// Validate returns a usage error naming the bad field by the flag of
// `nfabric verify` that sets it.
func (c Config) Validate() error {
	switch {
	case c.Lines < 1 || c.Lines > MaxLines:
		return usage.Errorf("verify: --lines %d out of range [1, %d]", c.Lines, MaxLines)
	case c.Workers < 1 || c.Workers > lowbit.MaxPacketWorkers:
		return usage.Errorf("verify: --workers %d out of range [1, %d] (the paper's packet carries up to 8)", c.Workers, lowbit.MaxPacketWorkers)
	case c.Sweeps < 0 || c.Sweeps > MaxSweeps:
		return usage.Errorf("verify: --sweeps %d out of range [0, %d]", c.Sweeps, MaxSweeps)
	}
	if err := (cxl.Config{Capacity: cxl.LineBytes, Fault: c.Fault}).Validate(); err != nil {
		return usage.Wrap(err)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Lines == 0 {
		c.Lines = 1 << 16
	}
	if c.Workers == 0 {
		c.Workers = 8
	}
	return c
}

func (c Config) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

// Check is one named check of the tester.
type Check struct {
	Group  string `json:"group"` // "sec6", "naive", "latch", "errors", "sweep"
	Name   string `json:"name"`
	Mode   string `json:"mode,omitempty"`
	Oracle string `json:"oracle"`
	// Lines is the number of response lines compared.
	Lines int `json:"lines"`
	// Mismatches counts lines that differ from the oracle (for the naive
	// oracle: lines it flags).
	Mismatches int  `json:"mismatches"`
	Passed     bool `json:"passed"`
	// Detail describes the first failure, or the expectation met.
	Detail string `json:"detail,omitempty"`
}

// ModeRow is one row of the Sec. 6 table: a mode read back over the whole
// address range, judged by its mode-specific oracle and by the naive
// read-equals-write oracle.
type ModeRow struct {
	Mode   string `json:"mode"`
	Oracle string `json:"oracle"`
	Lines  int    `json:"lines"`
	// Mismatches against the mode-specific oracle.
	Mismatches int `json:"mismatches"`
	// NaiveFlagged is the number of lines the read-equals-write oracle
	// flags as failures.
	NaiveFlagged int  `json:"naive_flagged"`
	Match        bool `json:"match"`
}

// Result is what the tester found.
type Result struct {
	Config  Config    `json:"-"`
	Lines   int       `json:"lines"`
	Workers int       `json:"workers"`
	Seed    uint64    `json:"seed"`
	Rows    []ModeRow `json:"rows"`
	Checks  []Check   `json:"checks"`
	Passed  int       `json:"passed"`
	Failed  int       `json:"failed"`
	// Stats are the Sec. 6 controller's counters after all reads.
	Stats cxl.Stats `json:"stats"`
	// SweepLines is the number of response lines compared in the sweeps.
	SweepLines int `json:"sweep_lines"`
}

func (r *Result) add(c Check) {
	if c.Passed {
		r.Passed++
	} else {
		r.Failed++
	}
	r.Checks = append(r.Checks, c)
}

// oracleName names each mode's expected payload.
func oracleName(m cxl.Mode, l lowbit.Layout) string {
	switch m {
	case cxl.Identity, cxl.FP32Bypass:
		return "byte-for-byte read-back"
	case cxl.Aggregate(lowbit.Binary):
		if l == lowbit.ElementMajor {
			return "sign count c_i (lowbit.RefCountPacket)"
		}
		return "sgn(2c-W) planes (lowbit.RefAggregatePlanes)"
	}
	if l == lowbit.ElementMajor {
		return "m_i*u_i (lowbit.RefAggregatePacket)"
	}
	return "m_i*u_i planes (lowbit.RefAggregatePlanes)"
}

// expectPacket returns the oracle's response to reading packet line l of
// an element-major region in mode m: the stored bytes, the count c_i, or
// m_i*u_i as int8.
func expectPacket(r *cxl.Region, m cxl.Mode, l int, signs, gates []byte) (out cxl.Line) {
	switch m {
	case cxl.Identity, cxl.FP32Bypass:
		copy(out[:], signs)
	case cxl.Aggregate(lowbit.Binary):
		for i, c := range lowbit.RefCountPacket(signs, r.Workers) {
			out[i] = byte(c)
		}
	case cxl.Aggregate(lowbit.Ternary):
		for i, v := range lowbit.RefAggregatePacket(signs, gates, r.Spec(m), r.Element0+l*lowbit.PacketElements) {
			out[i] = byte(v)
		}
	}
	return out
}

// expectPlanes returns the oracle's pos and nz planes of aggregate line l
// of a worker-major region.
func expectPlanes(r *cxl.Region, m cxl.Mode, l int, signs, gates [][]byte) (pos, nz cxl.Line) {
	u := lowbit.RefAggregatePlanes(signs, gates, lowbit.PlaneElements, r.Spec(m), r.Element0+l*lowbit.PlaneElements)
	for i, v := range u {
		if v != 0 {
			nz[i/8] |= 1 << (i % 8)
		}
		if v > 0 {
			pos[i/8] |= 1 << (i % 8)
		}
	}
	return pos, nz
}

func (cfg Config) newController(capacity uint64) *cxl.Controller {
	ctl, err := cxl.New(cxl.Config{Capacity: capacity, LinesHint: int(capacity / cxl.LineBytes), Fault: cfg.Fault})
	if err != nil {
		panic("verify: " + err.Error()) // capacities are computed, never user input
	}
	return ctl
}

// Run runs the transformation-aware functional tester: the paper's
// Sec. 6 packet test with mode-specific oracles and the naive
// read-equals-write oracle beside them, then checks beyond the paper
// (mode latching, error responses, random sweeps). Checks that fail are
// counted in the result; the error is for a bad config or ctx ending.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	res := &Result{Config: cfg, Lines: cfg.Lines, Workers: cfg.Workers, Seed: cfg.Seed}
	if err := verifyPaper(ctx, cfg, res); err != nil {
		return nil, err
	}
	verifyLatch(cfg, res)
	verifyErrors(cfg, res)
	if err := verifySweeps(ctx, cfg, res); err != nil {
		return nil, err
	}
	if err := verifySum(ctx, cfg, res); err != nil {
		return nil, err
	}
	return res, nil
}

// paperModes is how many modes the paper's checks draw from: Table 2's
// four (Modes), which come first in the table. The sign-plane sweeps draw
// from them only, so that their random cases stay those of the paper's
// four-mode controller; the sum checks (verifySum) draw from every mode.
var paperModes = len(cxl.Modes())

// paperGradLines is how many leading lines of the Sec. 6 test are packed
// from FP32 gradients (and also checked against the FP32 definitions);
// the rest are random sign packets.
const paperGradLines = 4096

// verifyPaper is Sec. 6: W virtual workers write sign packets over a
// fixed address range, read back under every mode.
func verifyPaper(ctx context.Context, cfg Config, res *Result) error {
	n, w := cfg.Lines, cfg.Workers
	reg := cxl.Region{Name: "sec6", Base: 0, Workers: w, Layout: lowbit.ElementMajor, Gate: lowbit.PaperGate}
	reg.Size = reg.DataBytes(n)
	ctl := cfg.newController(reg.End())
	id, err := ctl.Map(reg)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5ec6))
	written := make([]byte, n*cxl.LineBytes)
	ng := min(n, paperGradLines)
	grads := make([][]float32, w)
	for k := range grads {
		grads[k] = make([]float32, ng*lowbit.PacketElements)
		for i := range grads[k] {
			grads[k][i] = lowbit.EdgeGradient(rng)
		}
	}
	if err := lowbit.PackPacket(written[:ng*cxl.LineBytes], grads); err != nil {
		return fmt.Errorf("verify: pack sign packets: %w", err)
	}
	mask := byte(1<<w - 1)
	for i := ng * cxl.LineBytes; i < len(written); i += 8 {
		v := rng.Uint64()
		for q := range 8 {
			written[i+q] = byte(v>>(8*q)) & mask
		}
	}
	cfg.logf("sec6: writing %d sign packets of %d workers", n, w)
	if err := batchWrite(ctx, ctl, reg.Base, written); err != nil {
		return err
	}

	// End to end on the leading lines: the responses must equal the
	// Sec. 2 definitions applied to the FP32 gradients themselves.
	e2e := Check{Group: "sec6", Name: "FP32 gradients -> packets -> controller", Oracle: "lowbit.RefCount / RefAggregate on the FP32 gradients", Passed: true}
	counts := lowbit.RefCount(grads)
	for _, m := range []cxl.Mode{cxl.Aggregate(lowbit.Binary), cxl.Aggregate(lowbit.Ternary)} {
		if err := ctl.SetMode(id, m, 0); err != nil {
			return err
		}
		want := lowbit.RefAggregate(grads, reg.Spec(m), 0, reg.Element0)
		for l := range ng {
			resp, err := ctl.ReadLine(uint16(l), reg.ViewAddr(l, 0))
			e2e.Lines++
			for i := range lowbit.PacketElements {
				e := l*lowbit.PacketElements + i
				ok := err == nil
				if m == cxl.Aggregate(lowbit.Binary) {
					ok = ok && int(resp.Data[i]) == counts[e]
				} else {
					ok = ok && int8(resp.Data[i]) == want[e]
				}
				if !ok {
					e2e.Mismatches++
					if e2e.Passed {
						e2e.Passed = false
						e2e.Detail = fmt.Sprintf("%v element %d: response %d (err %v), definition says count %d / value %d", m, e, resp.Data[i], err, counts[e], want[e])
					}
					break
				}
			}
		}
	}
	if e2e.Passed {
		e2e.Detail = fmt.Sprintf("%d lines, %d elements per mode", ng, ng*lowbit.PacketElements)
	}

	for ts, m := range cxl.Modes() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := ctl.SetMode(id, m, int64(ts)); err != nil {
			return err
		}
		cfg.logf("sec6: reading %d lines under %v", n, m)
		row, chk, naive, err := readBackPaper(ctx, ctl, &reg, m, written)
		if err != nil {
			return err
		}
		res.Rows = append(res.Rows, row)
		res.add(chk)
		res.add(naive)
	}
	res.add(e2e)
	res.add(storedUnchanged("sec6", ctl, reg.Base, written))
	res.Stats = ctl.Stats()
	return nil
}

const batchLines = 2048

// batchWrite writes data (whole lines) from addr on, in batches.
func batchWrite(ctx context.Context, ctl *cxl.Controller, addr uint64, data []byte) error {
	reqs := make([]cxl.Req, 0, batchLines)
	resps := make([]cxl.Resp, batchLines)
	for off := 0; off < len(data); off += batchLines * cxl.LineBytes {
		if err := ctx.Err(); err != nil {
			return err
		}
		reqs = reqs[:0]
		for o := off; o < min(len(data), off+batchLines*cxl.LineBytes); o += cxl.LineBytes {
			reqs = append(reqs, cxl.Write(uint16(o/cxl.LineBytes), addr+uint64(o), data[o:o+cxl.LineBytes]))
		}
		if failed := ctl.DoBatch(reqs, resps); failed > 0 {
			for _, r := range resps[:len(reqs)] {
				if r.Err != nil {
					return fmt.Errorf("verify: write: %w", r.Err)
				}
			}
		}
	}
	return nil
}

// readBackPaper reads every line of reg under mode m and judges the
// responses with the mode-specific oracle and with the naive one.
func readBackPaper(ctx context.Context, ctl *cxl.Controller, reg *cxl.Region, m cxl.Mode, written []byte) (ModeRow, Check, Check, error) {
	n := reg.PayloadLines()
	row := ModeRow{Mode: m.String(), Oracle: oracleName(m, reg.Layout), Lines: n}
	chk := Check{Group: "sec6", Name: "packet read-back", Mode: m.String(), Oracle: row.Oracle, Lines: n, Passed: true}
	naive := Check{Group: "naive", Name: "read-equals-write oracle", Mode: m.String(), Oracle: "read == last write", Lines: n}
	// Readers split the lines into interleaved batches; the counts and the
	// first (lowest) failing line do not depend on how many there are.
	type part struct {
		mismatches, flagged int
		differ              int // lines whose correct response differs from the write
		first               int // lowest failing line, or n
		detail              string
	}
	nr := max(1, min(4, runtime.GOMAXPROCS(0)))
	parts := make([]part, nr)
	var wg sync.WaitGroup
	for g := range nr {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pt := &parts[g]
			pt.first = n
			reqs := make([]cxl.Req, 0, batchLines)
			resps := make([]cxl.Resp, batchLines)
			for l0 := g * batchLines; l0 < n; l0 += nr * batchLines {
				if ctx.Err() != nil {
					return
				}
				reqs = reqs[:0]
				for l := l0; l < min(n, l0+batchLines); l++ {
					reqs = append(reqs, cxl.Read(uint16(l), reg.ViewAddr(l, 0)))
				}
				ctl.DoBatch(reqs, resps)
				for j, resp := range resps[:len(reqs)] {
					l := l0 + j
					stored := written[l*cxl.LineBytes : (l+1)*cxl.LineBytes]
					want := expectPacket(reg, m, l, stored, nil)
					if resp.Err != nil || resp.Mode != m || resp.Transformed != m.LowBit() || resp.Data != want {
						pt.mismatches++
						if l < pt.first {
							pt.first = l
							pt.detail = fmt.Sprintf("line %d (%#x): got mode %v transformed %v err %v data %x, want %x", l, resp.Addr, resp.Mode, resp.Transformed, resp.Err, resp.Data, want)
						}
					}
					if !bytes.Equal(resp.Data[:], stored) {
						pt.flagged++
					}
					if !bytes.Equal(want[:], stored) {
						pt.differ++
					}
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return row, chk, naive, err
	}
	first, differ := n, 0
	for _, pt := range parts {
		chk.Mismatches += pt.mismatches
		naive.Mismatches += pt.flagged
		differ += pt.differ
		if pt.first < first {
			first, chk.Detail = pt.first, pt.detail
		}
	}
	chk.Passed = chk.Mismatches == 0
	row.Mismatches = chk.Mismatches
	row.NaiveFlagged = naive.Mismatches
	row.Match = chk.Passed
	// The naive oracle flags exactly the lines whose correct response
	// differs from the write: none for identity and FP32 bypass (the
	// right oracle there), most lines of a transformed mode (the wrong
	// oracle) except where the reduction happens to return the written
	// bytes; with W = 1 the G-Binary count byte is the written byte, so it
	// flags none. The check passes when it behaves so.
	naive.Passed = naive.Mismatches == differ
	switch {
	case !m.LowBit():
		naive.Detail = fmt.Sprintf("flags %d of %d lines: correct for an untransformed mode", naive.Mismatches, n)
	case differ == 0:
		naive.Detail = fmt.Sprintf("flags %d of %d lines: with W = %d the correct response equals the write on every line, so the wrong oracle cannot tell", naive.Mismatches, n, reg.Workers)
	default:
		naive.Detail = fmt.Sprintf("flags %d of %d correct lines (%d differ from the write): the wrong oracle for a transformed mode", naive.Mismatches, n, differ)
	}
	return row, chk, naive, nil
}

// storedUnchanged checks, without transactions, that every line from base
// still holds what was written.
func storedUnchanged(group string, ctl *cxl.Controller, base uint64, written []byte) Check {
	c := Check{Group: group, Name: "stored bytes unchanged after all reads", Oracle: "storage == written", Lines: len(written) / cxl.LineBytes, Passed: true}
	for o := 0; o < len(written); o += cxl.LineBytes {
		l, err := ctl.Peek(base + uint64(o))
		if err != nil || !bytes.Equal(l[:], written[o:o+cxl.LineBytes]) {
			c.Mismatches++
			if c.Passed {
				c.Passed = false
				c.Detail = fmt.Sprintf("line %#x holds %x, written %x (%v)", base+uint64(o), l, written[o:o+cxl.LineBytes], err)
			}
		}
	}
	return c
}

// verifyLatch checks, on the deterministic core, that a read accepted
// before a mode change completes under the mode it was accepted with, for
// every ordered pair of distinct modes, and that the change is logged.
func verifyLatch(cfg Config, res *Result) {
	chk := Check{Group: "latch", Name: "mode change takes effect at a transaction boundary", Oracle: "mode latched at acceptance", Passed: true}
	fail := func(format string, args ...any) {
		chk.Mismatches++
		if chk.Passed {
			chk.Passed = false
			chk.Detail = fmt.Sprintf(format, args...)
		}
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x1a7c))
	for _, lay := range []lowbit.Layout{lowbit.ElementMajor, lowbit.WorkerMajor} {
		reg := cxl.Region{Name: "latch", Workers: 5, Layout: lay, Gate: lowbit.PaperGate}
		reg.Size = reg.DataBytes(1)
		c, _ := cxl.NewCore(cxl.Config{Capacity: reg.End(), Fault: cfg.Fault})
		id, err := c.Map(reg)
		if err != nil {
			fail("map: %v", err)
			continue
		}
		signs := make([][]byte, reg.Workers)
		for k := range signs {
			signs[k] = make([]byte, cxl.LineBytes)
			for i := range signs[k] {
				signs[k][i] = byte(rng.Uint32())
			}
			if _, err := c.Do(cxl.Write(0, reg.SignAddr(k, 0), signs[k])); err != nil {
				fail("write: %v", err)
			}
			if lay == lowbit.ElementMajor {
				break
			}
		}
		expect := func(m cxl.Mode) cxl.Line {
			if lay == lowbit.ElementMajor {
				return expectPacket(&reg, m, 0, signs[0], nil)
			}
			if !m.LowBit() {
				return cxl.Line{}
			}
			pos, _ := expectPlanes(&reg, m, 0, signs, nil)
			return pos
		}
		for _, from := range cxl.Modes() {
			for _, to := range cxl.Modes() {
				if from == to {
					continue
				}
				c.SetMode(id, from, 0)
				changes := len(c.ModeChanges())
				_, errA := c.Accept(cxl.Read(1, reg.ViewAddr(0, 0)))
				seqA := c.Seq()
				if err := c.SetMode(id, to, int64(seqA)); err != nil {
					fail("set mode: %v", err)
				}
				_, errB := c.Accept(cxl.Read(2, reg.ViewAddr(0, 0)))
				ra, _ := c.Complete()
				rb, _ := c.Complete()
				chk.Lines += 2
				for _, x := range []struct {
					r   cxl.Resp
					err error
					m   cxl.Mode
				}{{ra, errA, from}, {rb, errB, to}} {
					wantErr := lay == lowbit.WorkerMajor && !x.m.LowBit()
					switch {
					case x.r.Mode != x.m:
						fail("%v %v->%v: read %d completed under %v, want %v", lay, from, to, x.r.Tag, x.r.Mode, x.m)
					case wantErr != (x.r.Err != nil) || wantErr != (x.err != nil):
						fail("%v %v->%v: read %d error %v", lay, from, to, x.r.Tag, x.r.Err)
					case x.r.Data != expect(x.m):
						fail("%v %v->%v: read %d data %x, want the %v oracle %x", lay, from, to, x.r.Tag, x.r.Data, x.m, expect(x.m))
					}
				}
				ch := c.ModeChanges()
				if len(ch) != changes+1 || ch[len(ch)-1] != (cxl.ModeChange{Region: id, From: from, To: to, AfterSeq: seqA, Time: int64(seqA)}) {
					fail("%v %v->%v: mode-change log %v", lay, from, to, ch[changes:])
				}
			}
		}
	}
	if chk.Passed {
		chk.Detail = "12 ordered mode pairs x 2 layouts: reads accepted before the change complete under the old mode"
	}
	res.add(chk)
}

// verifyErrors checks that each kind of bad request gets an error
// response and a Go error of its kind, and stores nothing.
func verifyErrors(cfg Config, res *Result) {
	chk := Check{Group: "errors", Name: "bad requests get error responses", Oracle: "error kind per request", Passed: true}
	reg := cxl.Region{Name: "err", Base: 0, Workers: 2, Layout: lowbit.WorkerMajor}
	reg.Size = reg.DataBytes(1)
	c, _ := cxl.NewCore(cxl.Config{Capacity: reg.End() + cxl.LineBytes, Fault: cfg.Fault})
	c.Map(reg)
	line := make([]byte, cxl.LineBytes)
	cases := []struct {
		req  cxl.Req
		want error
	}{
		{cxl.Read(1, 1), cxl.ErrUnaligned},
		{cxl.Write(2, 63, line), cxl.ErrUnaligned},
		{cxl.Read(3, reg.End()+cxl.LineBytes), cxl.ErrOutOfRange},
		{cxl.Write(4, 1<<60, line), cxl.ErrOutOfRange},
		{cxl.Write(5, 0, line[:32]), cxl.ErrBadLength},
		{cxl.Req{Op: cxl.MemRd, Tag: 6, Data: line}, cxl.ErrBadLength},
		{cxl.Req{Op: 9, Tag: 7}, cxl.ErrBadOpcode},
		{cxl.Read(8, reg.ViewAddr(0, 1)), cxl.ErrUnmappedView},
		{cxl.Write(9, reg.ViewAddr(0, 0), line), cxl.ErrReadOnlyView},
	}
	for _, tc := range cases {
		resp, err := c.Do(tc.req)
		chk.Lines++
		var e *cxl.Error
		ok := err != nil && resp.Err != nil && errors.Is(err, tc.want) && errors.As(resp.Err, &e) && resp.Tag == tc.req.Tag && resp.Data == cxl.Line{} && len(c.StoredLines()) == 0
		if !ok {
			chk.Mismatches++
			if chk.Passed {
				chk.Passed = false
				chk.Detail = fmt.Sprintf("%v tag %d addr %#x: got %v (stored lines %d), want %v", tc.req.Op, tc.req.Tag, tc.req.Addr, err, len(c.StoredLines()), tc.want)
			}
		}
	}
	if chk.Passed {
		chk.Detail = fmt.Sprintf("%d bad requests, one per error kind and channel; nothing stored", len(cases))
	}
	res.add(chk)
}

// sweepCase is one random configuration beyond the paper.
type sweepCase struct {
	reg   cxl.Region
	lines int
}

func randomSweepCase(rng *rand.Rand) sweepCase {
	lay := lowbit.Layout(rng.IntN(2))
	reg := cxl.Region{Layout: lay, Element0: rng.IntN(4096)}
	if lay == lowbit.ElementMajor {
		reg.Workers = 1 + rng.IntN(lowbit.MaxPacketWorkers)
	} else {
		reg.Workers = 1 + rng.IntN(64)
	}
	switch rng.IntN(4) {
	case 0:
		reg.Gate = lowbit.PaperGate
	case 1:
		reg.Gate = lowbit.Gate{Kind: lowbit.GatePattern, Period: 2 + rng.IntN(63)}
	case 2:
		reg.Gate = lowbit.Gate{Kind: lowbit.GateWorker}
	case 3:
		reg.Gate = lowbit.Gate{Kind: lowbit.GateMargin, Threshold: 1 + rng.IntN(2*reg.Workers)}
	}
	lines := 1 + rng.IntN(16)
	reg.Base = cxl.LineBytes * uint64(rng.IntN(64))
	reg.Size = reg.DataBytes(lines)
	reg.Name = fmt.Sprintf("W=%d %v gate %v", reg.Workers, lay, reg.Gate)
	return sweepCase{reg: reg, lines: lines}
}

// verifySweeps runs random cases: one writer goroutine per worker (and
// per gate plane) while a control goroutine flips the mode, then reads of
// every view and raw line in random order with random mode switches
// between transactions, each judged by the oracle of the mode the
// response says it completed under, which must be the mode set.
func verifySweeps(ctx context.Context, cfg Config, res *Result) error {
	cfg.logf("sweep: %d random cases", cfg.Sweeps)
	for i := range cfg.Sweeps {
		if err := ctx.Err(); err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed0000+uint64(i)))
		sc := randomSweepCase(rng)
		chk, lines := runSweep(cfg, rng, sc)
		chk.Name = fmt.Sprintf("case %d: %s, %d lines", i, sc.reg.Name, sc.lines)
		res.SweepLines += lines
		res.add(chk)
	}
	return nil
}

// sweepRun is one random sweep case in progress: the controller, the
// region, the payload each writer wrote (one slab per writer; gate slabs
// follow the sign slabs) and the check being filled in.
type sweepRun struct {
	ctl       *cxl.Controller
	id        cxl.RegionID
	reg       cxl.Region
	lines     int
	data      [][]byte
	signSlabs int
	chk       Check
}

// fail records a mismatch; the first one is the check's detail.
func (r *sweepRun) fail(format string, args ...any) {
	r.chk.Mismatches++
	if r.chk.Passed {
		r.chk.Passed = false
		r.chk.Detail = fmt.Sprintf(format, args...)
	}
}

// runSweep runs one case: concurrent writers and mode flips, random reads
// judged by the oracle of the mode each response completed under, then
// the storage check. The random draws happen in a fixed order.
func runSweep(cfg Config, rng *rand.Rand, sc sweepCase) (Check, int) {
	r := &sweepRun{reg: sc.reg, lines: sc.lines,
		chk: Check{Group: "sweep", Oracle: "mode-specific oracle of the response's mode; storage == written", Passed: true}}
	r.ctl = cfg.newController(r.reg.End() + 4*cxl.LineBytes)
	id, err := r.ctl.Map(r.reg)
	if err != nil {
		r.fail("map: %v", err)
		return r.chk, 0
	}
	r.id = id
	r.write(rng)
	reads := r.readAll(rng)
	r.checkStorage()
	if r.chk.Passed {
		r.chk.Detail = fmt.Sprintf("%d reads, %d mode changes, storage intact", reads, r.ctl.Stats().ModeChanges)
	}
	return r.chk, r.chk.Lines
}

// slabAddr is the address of line l of writer slab s.
func (r *sweepRun) slabAddr(s, l int) uint64 {
	if s < r.signSlabs {
		return r.reg.SignAddr(s, l)
	}
	return r.reg.GateAddr(s-r.signSlabs, l)
}

// write fills every slab with random bytes (including bits at or above W
// in element-major packets, which must be ignored) and writes them, one
// goroutine per writer, while a control goroutine flips the mode.
func (r *sweepRun) write(rng *rand.Rand) {
	slabs := r.reg.Slabs()
	r.data = make([][]byte, slabs)
	for s := range r.data {
		r.data[s] = make([]byte, r.lines*cxl.LineBytes)
		for j := range r.data[s] {
			r.data[s][j] = byte(rng.Uint32())
		}
	}
	r.signSlabs = slabs
	if r.reg.Gate.Kind == lowbit.GateWorker {
		r.signSlabs /= 2
	}
	var wg sync.WaitGroup
	errs := make([]error, slabs)
	for s := range slabs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range r.lines {
				if _, err := r.ctl.WriteLine(uint16(s), r.slabAddr(s, l), r.data[s][l*cxl.LineBytes:(l+1)*cxl.LineBytes]); err != nil && errs[s] == nil {
					errs[s] = err
				}
			}
		}()
	}
	flips := rng.IntN(16)
	wg.Add(1)
	go func() { // the control goroutine
		defer wg.Done()
		for j := range flips {
			r.ctl.SetMode(r.id, cxl.Mode(j%paperModes), int64(j))
		}
	}()
	wg.Wait()
	for s, err := range errs {
		if err != nil {
			r.fail("writer %d: %v", s, err)
		}
	}
}

// sweepProbe is one readable address: a raw slab line, or (slab -1) a
// worker-major view line's part.
type sweepProbe struct {
	addr       uint64
	slab, line int
	part       int
}

func (r *sweepRun) probes() []sweepProbe {
	var ps []sweepProbe
	for s := range r.reg.Slabs() {
		for l := range r.lines {
			ps = append(ps, sweepProbe{r.slabAddr(s, l), s, l, 0})
		}
	}
	if r.reg.Layout == lowbit.WorkerMajor {
		for l := range r.lines {
			for part := range 2 {
				ps = append(ps, sweepProbe{r.reg.ViewAddr(l, part), -1, l, part})
			}
		}
	}
	return ps
}

// signsOf and gatesOf are the oracle's inputs for aggregate line l.
func (r *sweepRun) signsOf(l int) [][]byte {
	p := make([][]byte, r.signSlabs)
	for k := range p {
		p[k] = r.data[k][l*cxl.LineBytes : (l+1)*cxl.LineBytes]
	}
	return p
}

func (r *sweepRun) gatesOf(l int) [][]byte {
	if r.reg.Gate.Kind != lowbit.GateWorker {
		return nil
	}
	p := make([][]byte, r.signSlabs)
	for k := range p {
		p[k] = r.data[r.signSlabs+k][l*cxl.LineBytes : (l+1)*cxl.LineBytes]
	}
	return p
}

// readAll reads three times as many random probes as there are, switching
// the mode between transactions at random, and returns the read count.
func (r *sweepRun) readAll(rng *rand.Rand) int {
	probes := r.probes()
	mode := cxl.Mode(rng.IntN(paperModes))
	r.ctl.SetMode(r.id, mode, 0)
	reads := 3 * len(probes)
	for j := range reads {
		if rng.IntN(4) == 0 { // a mode switch between transactions
			mode = cxl.Mode(rng.IntN(paperModes))
			r.ctl.SetMode(r.id, mode, int64(j))
		}
		r.read(uint16(j), probes[rng.IntN(len(probes))], mode)
	}
	return reads
}

// read issues one read and judges it by the oracle of the latched mode.
func (r *sweepRun) read(tag uint16, p sweepProbe, mode cxl.Mode) {
	resp, err := r.ctl.ReadLine(tag, p.addr)
	r.chk.Lines++
	if resp.Mode != mode {
		r.fail("read %#x completed under %v, the latch holds %v", p.addr, resp.Mode, mode)
		return
	}
	var want cxl.Line
	transformed := false
	switch {
	case p.slab < 0 && !mode.LowBit():
		if !errors.Is(err, cxl.ErrUnmappedView) {
			r.fail("view read %#x in %v: error %v, want %v", p.addr, mode, err, cxl.ErrUnmappedView)
		}
		return
	case p.slab < 0:
		pos, nz := expectPlanes(&r.reg, mode, p.line, r.signsOf(p.line), r.gatesOf(p.line))
		want, transformed = pos, true
		if p.part == 1 {
			want = nz
		}
	case r.reg.Layout == lowbit.ElementMajor && p.slab == 0:
		var gates []byte
		if g := r.gatesOf(p.line); g != nil {
			gates = g[0]
		}
		want, transformed = expectPacket(&r.reg, mode, p.line, r.signsOf(p.line)[0], gates), mode.LowBit()
	default:
		copy(want[:], r.data[p.slab][p.line*cxl.LineBytes:])
	}
	if err != nil || resp.Data != want || resp.Transformed != transformed {
		r.fail("read %#x in %v: err %v transformed %v data %x, want %x", p.addr, mode, err, resp.Transformed, resp.Data, want)
	}
}

// checkStorage checks that reads left every stored line as written.
func (r *sweepRun) checkStorage() {
	slabs := r.reg.Slabs()
	for s := range slabs {
		for l := range r.lines {
			got, err := r.ctl.Peek(r.slabAddr(s, l))
			if err != nil || !bytes.Equal(got[:], r.data[s][l*cxl.LineBytes:(l+1)*cxl.LineBytes]) {
				r.fail("stored line %#x changed: %x, written %x", r.slabAddr(s, l), got, r.data[s][l*cxl.LineBytes:(l+1)*cxl.LineBytes])
			}
		}
	}
	if n := len(r.ctl.StoredLines()); n != slabs*r.lines {
		r.fail("%d lines stored, %d written", n, slabs*r.lines)
	}
}

// CheckConsistent reports the first place where the result contradicts
// itself: a row whose Match flag disagrees with its mismatch count (Match
// is Mismatches == 0), counts outside [0, Lines], a Sec. 6 check whose
// Passed disagrees with its mismatches, or Passed and Failed that do not
// count the checks. A result the tester returned is always consistent; a
// result read back from a file (a shard) may not be.
func (r Result) CheckConsistent() error {
	for i, row := range r.Rows {
		switch {
		case row.Lines < 0 || row.Mismatches < 0 || row.Mismatches > row.Lines || row.NaiveFlagged < 0 || row.NaiveFlagged > row.Lines:
			return fmt.Errorf("row %d (%s): %d mismatches and %d naive flags of %d lines, want each in [0, lines]", i, row.Mode, row.Mismatches, row.NaiveFlagged, row.Lines)
		case row.Match != (row.Mismatches == 0):
			return fmt.Errorf("row %d (%s): mismatches %d with match %v (match means no mismatch)", i, row.Mode, row.Mismatches, row.Match)
		}
	}
	passed := 0
	for i, c := range r.Checks {
		if c.Mismatches < 0 || c.Lines < 0 {
			return fmt.Errorf("check %d (%s): %d mismatches of %d lines, want both >= 0", i, c.Name, c.Mismatches, c.Lines)
		}
		if c.Group == "sec6" && c.Mode != "" && c.Passed != (c.Mismatches == 0) {
			return fmt.Errorf("check %d (%s, %s): mismatches %d with passed %v", i, c.Name, c.Mode, c.Mismatches, c.Passed)
		}
		if c.Passed {
			passed++
		}
	}
	if r.Passed != passed || r.Failed != len(r.Checks)-passed {
		return fmt.Errorf("passed %d and failed %d, but %d of the %d checks passed", r.Passed, r.Failed, passed, len(r.Checks))
	}
	return nil
}

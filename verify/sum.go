package verify

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// This file is the functional tester's part beyond the paper: the
// integer-sum modes (the INT8 and BFP8 aggregates) on regions shaped for
// their formats, judged by oracles built from lowbit's Ref twins over what the
// workers wrote.

// sumWrite is what the workers of one Sum region wrote: codes[k] is
// worker k's code slab (PayloadLines() lines of int8), exps[k] its
// exponent slab (ExpLines() lines; BFP8 only).
type sumWrite struct {
	codes, exps [][]byte
}

// data returns the data window's bytes in address order: the W code
// slabs, then the W exponent slabs.
func (w sumWrite) data() []byte {
	var b []byte
	for _, c := range w.codes {
		b = append(b, c...)
	}
	for _, e := range w.exps {
		b = append(b, e...)
	}
	return b
}

func asInt8(b []byte) []int8 {
	out := make([]int8, len(b))
	for i, v := range b {
		out[i] = int8(v)
	}
	return out
}

// expectSumView is the oracle's response to sum view line 2l+part of r:
// the format's Ref twin (lowbit.Format.RefSumCodes: RefSumInt8,
// RefSumBFP8) over the workers' line l (and, with block exponents, their
// exponents of block l), elements 32 part .. 32 part + 31, as
// little-endian int16.
func expectSumView(r *cxl.Region, w sumWrite, l, part int) (out cxl.Line) {
	src := make([][]int8, r.Workers)
	var exps [][]int8
	if r.Sum.BlockExponents() {
		exps = make([][]int8, r.Workers)
	}
	for k := range r.Workers {
		src[k] = asInt8(w.codes[k][l*cxl.LineBytes : (l+1)*cxl.LineBytes])
		if exps != nil {
			exps[k] = []int8{int8(w.exps[k][l])}
		}
	}
	sums, _ := r.Sum.RefSumCodes(src, exps, cxl.LineBytes)
	for i := range lowbit.SumViewElements {
		v := uint16(sums[part*lowbit.SumViewElements+i])
		out[2*i], out[2*i+1] = byte(v), byte(v>>8)
	}
	return out
}

// expectExpView is the oracle's exponent view line x of a region with
// block exponents (BFP8): the aligned exponents its Ref twin
// (lowbit.RefSumBFP8) reports for blocks 64x ..
// 64x+63 of the workers' exponent bytes (every mantissa zero: E does not
// depend on them).
func expectExpView(r *cxl.Region, w sumWrite, x int) (out cxl.Line) {
	const n = lowbit.BFPExponentsPerLine * lowbit.BFPBlock
	src := make([][]int8, r.Workers)
	exps := make([][]int8, r.Workers)
	for k := range r.Workers {
		src[k] = make([]int8, n)
		exps[k] = asInt8(w.exps[k][x*cxl.LineBytes : (x+1)*cxl.LineBytes])
	}
	_, e := r.Sum.RefSumCodes(src, exps, n)
	for b, v := range e {
		out[b] = byte(v)
	}
	return out
}

// sumOracle names a Sum mode's oracle.
func sumOracle(f lowbit.Format) string {
	if f.BlockExponents() {
		return "aligned int16 sums and exponents (lowbit.RefSumBFP8)"
	}
	return "saturated int16 lane sums (lowbit.RefSumInt8)"
}

// sumFormats lists the integer-sum formats of lowbit's registry, in its
// order: the formats the sum checks cover.
func sumFormats() []lowbit.Format {
	var fs []lowbit.Format
	for _, f := range lowbit.Formats() {
		if f.Sum() {
			fs = append(fs, f)
		}
	}
	return fs
}

// verifySum runs the checks of the integer-sum modes: W workers encode
// FP32 gradients with the lowbit encoders and write them into an Int8
// and a BFP8 region; every view line is judged by the Ref oracle over
// the written lines, and the decoded mean against the FP32 mean; then
// the latch check over every mode, and cfg.Sweeps random cases.
func verifySum(ctx context.Context, cfg Config, res *Result) error {
	for _, f := range sumFormats() {
		if err := ctx.Err(); err != nil {
			return err
		}
		view, e2e, stored, err := verifySumGradients(ctx, cfg, f)
		if err != nil {
			return err
		}
		res.add(view)
		res.add(e2e)
		res.add(stored)
	}
	res.add(verifySumLatch(cfg))
	chk := Check{Group: "sum-sweep", Name: fmt.Sprintf("%d random integer-sum cases beyond the paper", cfg.Sweeps), Mode: "all",
		Oracle: "lowbit.RefSumInt8 / RefSumBFP8 of the response's mode over the written lines; storage == written", Passed: true}
	for i := range cfg.Sweeps {
		if err := ctx.Err(); err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(cfg.Seed, 0x50a70000+uint64(i)))
		runSumSweep(cfg, rng, i, &chk)
	}
	if chk.Passed {
		chk.Detail = "W in 1..64, Int8 and BFP8 regions of 1..70 lines (across exponent lines), random codes and exponents, concurrent writers, random mode switches over every mode"
	}
	res.add(chk)
	return nil
}

// sumCheckFail records a mismatch in c; the first one is its detail.
func sumCheckFail(c *Check, format string, args ...any) {
	c.Mismatches++
	if c.Passed {
		c.Passed = false
		c.Detail = fmt.Sprintf(format, args...)
	}
}

// verifySumGradients is the end-to-end check of format f: gradients ->
// lowbit encoders -> controller -> view, judged by the Ref oracle (view)
// and by the FP32 mean (e2e), and the stored bytes after the reads.
func verifySumGradients(ctx context.Context, cfg Config, f lowbit.Format) (view, e2e, stored Check, err error) {
	w := cfg.Workers
	lines := min(cfg.Lines, paperGradLines)
	n := lines * lowbit.LineBytes
	reg := cxl.Region{Name: f.String(), Workers: w, Layout: lowbit.WorkerMajor, Sum: f}
	reg.Size = reg.DataBytes(lines)
	m := cxl.Aggregate(f)
	reg.Mode = m
	ctl := cfg.newController(reg.End())
	if _, err := ctl.Map(reg); err != nil {
		return view, e2e, stored, fmt.Errorf("verify: %w", err)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5c0de))
	grads := lowbit.EdgeGradients(rng, w, n)
	wr := sumWrite{codes: make([][]byte, w)}
	var scale float32
	if f.Scaled() {
		var agreed float32 // the workers' max-reduce
		for _, g := range grads {
			a, err := lowbit.MaxAbs(g)
			if err != nil {
				return view, e2e, stored, fmt.Errorf("verify: %w", err)
			}
			agreed = max(agreed, a)
		}
		scale = f.AgreedScale(agreed)
	}
	if f.BlockExponents() {
		wr.exps = make([][]byte, w)
	}
	for k, g := range grads {
		codes := make([]int8, n)
		var exp []int8
		if f.BlockExponents() {
			exp = make([]int8, reg.ExpLines()*cxl.LineBytes) // blocks past the payload stay 0
			wr.exps[k] = lowbit.Int8Bytes(exp)
		}
		if err := f.EncodeCodes(codes, exp, g, scale); err != nil {
			return view, e2e, stored, fmt.Errorf("verify: encode worker %d: %w", k, err)
		}
		wr.codes[k] = lowbit.Int8Bytes(codes)
	}
	written := wr.data()
	cfg.logf("sum: writing %d %v lines of %d workers", lines, f, w)
	if err := batchWrite(ctx, ctl, reg.Base, written); err != nil {
		return view, e2e, stored, err
	}

	view = Check{Group: "sum", Name: "view read-back", Mode: m.String(), Oracle: sumOracle(f), Passed: true}
	e2e = Check{Group: "sum", Name: "FP32 gradients -> " + f.String() + " -> controller -> mean", Mode: m.String(), Passed: true}
	if f.Scaled() {
		e2e.Oracle = "|lowbit.RefDecodeInt8(view) - FP32 mean| <= scale/2 (round to nearest, no saturation at W <= 258)"
	} else {
		e2e.Oracle = "|lowbit.RefDecodeBFP8(view) - FP32 mean| <= 2^(E-6) (mantissa rounding and clamp, alignment rounding)"
	}
	sums := make([]int16, n)
	exps := make([]int8, lines)
	for l := range lines {
		for part := range 2 {
			resp, err := ctl.ReadLine(uint16(l), reg.ViewAddr(l, part))
			view.Lines++
			want := expectSumView(&reg, wr, l, part)
			if err != nil || resp.Mode != m || !resp.Transformed || resp.Data != want {
				sumCheckFail(&view, "view line %d (%#x): mode %v transformed %v err %v data %x, want %x", 2*l+part, resp.Addr, resp.Mode, resp.Transformed, err, resp.Data, want)
			}
			lowbit.Int16s(sums[l*cxl.LineBytes+part*lowbit.SumViewElements:][:lowbit.SumViewElements], resp.Data[:])
		}
	}
	for x := range reg.ExpLines() {
		resp, err := ctl.ReadLine(uint16(x), reg.ExpViewAddr(x))
		view.Lines++
		want := expectExpView(&reg, wr, x)
		if err != nil || resp.Mode != m || !resp.Transformed || resp.Data != want {
			sumCheckFail(&view, "exponent view line %d (%#x): err %v data %x, want %x", x, resp.Addr, err, resp.Data, want)
		}
		for b := range min(cxl.LineBytes, lines-x*cxl.LineBytes) {
			exps[x*cxl.LineBytes+b] = int8(resp.Data[b])
		}
	}
	if view.Passed {
		view.Detail = fmt.Sprintf("%d sum view lines and %d exponent view lines of %d workers", 2*lines, reg.ExpLines(), w)
	}

	var mean []float32
	if f.Scaled() {
		mean = lowbit.RefDecodeInt8(sums, scale, w)
	} else {
		mean = lowbit.RefDecodeBFP8(sums, exps, w)
	}
	e2e.Lines = lines
	for i := range n {
		var want float64
		for k := range w {
			want += float64(grads[k][i])
		}
		want /= float64(w)
		bound := float64(scale) / 2
		if f.BlockExponents() {
			bound = math.Ldexp(1, int(exps[i/lowbit.BFPBlock])-6)
		}
		bound = bound*(1+1e-6) + math.Abs(want)*1e-6 // the float32 result's rounding
		if d := math.Abs(float64(mean[i]) - want); !(d <= bound) {
			sumCheckFail(&e2e, "element %d: decoded mean %v, FP32 mean %v, error %g > %g", i, mean[i], want, d, bound)
		}
	}
	if e2e.Passed {
		e2e.Detail = fmt.Sprintf("%d elements of %d workers within the bound", n, w)
	}
	stored = storedUnchanged("sum", ctl, reg.Base, written)
	stored.Mode = m.String()
	return view, e2e, stored, nil
}

// sumPlace is where a line of a Sum region lies: a worker's code (or
// exponent) line, or a view line (and which part of its payload line).
type sumPlace struct {
	view, exp        bool
	slab, line, part int
}

// sumPlaces maps every line address of r to its place, found from the
// region's address methods (CodeAddr, ExpAddr, ViewAddr, ExpViewAddr), not
// from the controller's own decoding of an address.
func sumPlaces(r *cxl.Region) map[uint64]sumPlace {
	m := map[uint64]sumPlace{}
	for k := range r.Workers {
		for l := range r.PayloadLines() {
			m[r.CodeAddr(k, l)] = sumPlace{slab: k, line: l}
		}
		for x := range r.ExpLines() {
			m[r.ExpAddr(k, x)] = sumPlace{exp: true, slab: k, line: x}
		}
	}
	for l := range r.PayloadLines() {
		for part := range r.RespLines() {
			m[r.ViewAddr(l, part)] = sumPlace{view: true, line: l, part: part}
		}
	}
	for x := range r.ExpLines() {
		m[r.ExpViewAddr(x)] = sumPlace{view: true, exp: true, line: x}
	}
	return m
}

// sumExpect returns the oracle's response to a read of the line at t in a
// Sum region under mode m: its stored bytes for a data line, the Ref sums
// or exponents for a view line when the region aggregates in m, and
// unmapped (ErrUnmappedView) for a view line when it does not.
func sumExpect(r *cxl.Region, w sumWrite, m cxl.Mode, t sumPlace) (want cxl.Line, transformed, unmapped bool) {
	if !t.view {
		src := w.codes[t.slab][t.line*cxl.LineBytes:]
		if t.exp {
			src = w.exps[t.slab][t.line*cxl.LineBytes:]
		}
		copy(want[:], src)
		return want, false, false
	}
	if !r.Aggregates(m) {
		return cxl.Line{}, false, true
	}
	if t.exp {
		return expectExpView(r, w, t.line), true, false
	}
	return expectSumView(r, w, t.line, t.part), true, false
}

// runSumSweep is one random integer-sum case: random codes and exponents
// written by concurrent writers while a control goroutine flips the mode,
// then reads of random lines under random mode switches over every mode,
// each judged by sumExpect, then the storage check. Mismatches go to chk.
func runSumSweep(cfg Config, rng *rand.Rand, i int, chk *Check) {
	fs := sumFormats()
	f := fs[rng.IntN(len(fs))]
	lines := 1 + rng.IntN(70)
	reg := cxl.Region{Workers: 1 + rng.IntN(64), Layout: lowbit.WorkerMajor, Sum: f, Base: cxl.LineBytes * uint64(rng.IntN(64))}
	reg.Size = reg.DataBytes(lines)
	reg.Name = fmt.Sprintf("case %d: W=%d %v, %d lines", i, reg.Workers, f, lines)
	ctl := cfg.newController(reg.End() + 4*cxl.LineBytes)
	id, err := ctl.Map(reg)
	if err != nil {
		sumCheckFail(chk, "%s: map: %v", reg.Name, err)
		return
	}
	random := func(n int) []byte {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		return b
	}
	wr := sumWrite{codes: make([][]byte, reg.Workers)}
	for k := range wr.codes {
		wr.codes[k] = random(lines * cxl.LineBytes)
	}
	if f.BlockExponents() {
		wr.exps = make([][]byte, reg.Workers)
		for k := range wr.exps {
			wr.exps[k] = random(reg.ExpLines() * cxl.LineBytes)
		}
	}
	modes := cxl.AllModes()
	flips := rng.IntN(16)
	var wg sync.WaitGroup
	errs := make([]error, reg.Workers)
	for k := range reg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range lines {
				if _, err := ctl.WriteLine(uint16(k), reg.CodeAddr(k, l), wr.codes[k][l*cxl.LineBytes:(l+1)*cxl.LineBytes]); err != nil && errs[k] == nil {
					errs[k] = err
				}
			}
			for x := range reg.ExpLines() {
				if _, err := ctl.WriteLine(uint16(k), reg.ExpAddr(k, x), wr.exps[k][x*cxl.LineBytes:(x+1)*cxl.LineBytes]); err != nil && errs[k] == nil {
					errs[k] = err
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // the control goroutine
		defer wg.Done()
		for j := range flips {
			ctl.SetMode(id, modes[j%len(modes)], int64(j))
		}
	}()
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			sumCheckFail(chk, "%s: writer %d: %v", reg.Name, k, err)
		}
	}
	places := sumPlaces(&reg)
	var addrs []uint64
	for a := reg.Base; a < reg.End(); a += cxl.LineBytes {
		if _, ok := places[a]; !ok {
			sumCheckFail(chk, "%s: line %#x of the footprint is no code, exponent or view line", reg.Name, a)
			return
		}
		addrs = append(addrs, a)
	}
	mode := modes[rng.IntN(len(modes))]
	ctl.SetMode(id, mode, 0)
	for j := range 3 * len(addrs) {
		if rng.IntN(4) == 0 {
			mode = modes[rng.IntN(len(modes))]
			ctl.SetMode(id, mode, int64(j))
		}
		a := addrs[rng.IntN(len(addrs))]
		resp, err := ctl.ReadLine(uint16(j), a)
		chk.Lines++
		want, transformed, unmapped := sumExpect(&reg, wr, mode, places[a])
		switch {
		case resp.Mode != mode:
			sumCheckFail(chk, "%s: read %#x completed under %v, the latch holds %v", reg.Name, a, resp.Mode, mode)
		case unmapped:
			if !errors.Is(err, cxl.ErrUnmappedView) {
				sumCheckFail(chk, "%s: view read %#x in %v: error %v, want %v", reg.Name, a, mode, err, cxl.ErrUnmappedView)
			}
		case err != nil || resp.Data != want || resp.Transformed != transformed:
			sumCheckFail(chk, "%s: read %#x in %v: err %v transformed %v data %x, want %x", reg.Name, a, mode, err, resp.Transformed, resp.Data, want)
		}
	}
	written := wr.data()
	if c := storedUnchanged("sum-sweep", ctl, reg.Base, written); !c.Passed {
		sumCheckFail(chk, "%s: %s", reg.Name, c.Detail)
	}
	if n := len(ctl.StoredLines()); n != len(written)/cxl.LineBytes {
		sumCheckFail(chk, "%s: %d lines stored, %d written", reg.Name, n, len(written)/cxl.LineBytes)
	}
}

// verifySumLatch checks, on the deterministic core, that a view read of a
// Sum region accepted before a mode change completes under the mode it
// was accepted with, for every ordered pair of distinct modes.
func verifySumLatch(cfg Config) Check {
	chk := Check{Group: "latch", Name: "integer-sum regions: mode change at a transaction boundary", Oracle: "mode latched at acceptance", Passed: true}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x1a7d))
	pairs := 0
	for _, f := range sumFormats() {
		reg := cxl.Region{Name: "latch " + f.String(), Workers: 3, Layout: lowbit.WorkerMajor, Sum: f}
		reg.Size = reg.DataBytes(1)
		c, _ := cxl.NewCore(cxl.Config{Capacity: reg.End(), Fault: cfg.Fault})
		id, err := c.Map(reg)
		if err != nil {
			sumCheckFail(&chk, "map: %v", err)
			continue
		}
		wr := sumWrite{codes: make([][]byte, reg.Workers)}
		if f.BlockExponents() {
			wr.exps = make([][]byte, reg.Workers)
		}
		for k := range reg.Workers {
			wr.codes[k] = make([]byte, cxl.LineBytes)
			for j := range wr.codes[k] {
				wr.codes[k][j] = byte(rng.Uint32())
			}
			c.Do(cxl.Write(0, reg.CodeAddr(k, 0), wr.codes[k]))
			if f.BlockExponents() {
				wr.exps[k] = make([]byte, cxl.LineBytes)
				wr.exps[k][0] = byte(rng.IntN(16) - 8)
				c.Do(cxl.Write(0, reg.ExpAddr(k, 0), wr.exps[k]))
			}
		}
		addr := reg.ViewAddr(0, 1)
		place := sumPlaces(&reg)[addr]
		for _, from := range cxl.AllModes() {
			for _, to := range cxl.AllModes() {
				if from == to {
					continue
				}
				pairs++
				c.SetMode(id, from, 0)
				c.Accept(cxl.Read(1, addr))
				c.SetMode(id, to, 0)
				c.Accept(cxl.Read(2, addr))
				for _, m := range []cxl.Mode{from, to} {
					r, _ := c.Complete()
					chk.Lines++
					want, transformed, unmapped := sumExpect(&reg, wr, m, place)
					if r.Mode != m || unmapped != errors.Is(r.Err, cxl.ErrUnmappedView) || (!unmapped && (r.Err != nil || r.Data != want || r.Transformed != transformed)) {
						sumCheckFail(&chk, "%v %v->%v: read %d under %v err %v data %x, want %v data %x", f, from, to, r.Tag, r.Mode, r.Err, r.Data, m, want)
					}
				}
			}
		}
	}
	if chk.Passed {
		chk.Detail = fmt.Sprintf("%d ordered mode pairs over every mode x Int8 and BFP8 regions: reads accepted before the change complete under the old mode", pairs)
	}
	return chk
}

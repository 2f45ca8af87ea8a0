package gemm

import (
	"fmt"
	"math"
)

// Gathered is a matrix that is never stored: element (l, j) is
// X[Rows[l]+Cols[j]], for l < len(Rows) and j < len(Cols). A
// convolution's patch (im2col) matrix is one, with one row offset per
// kernel tap and one column offset per output position into the padded
// input; swapping Rows and Cols gives its transpose. As a BPacker it
// gathers the panels PackedA.MulB asks for straight from X, with AVX2
// gathers where the CPU has them and, with AVX-512, masked loads of the
// runs of consecutive columns.
type Gathered struct {
	X          []float32
	Rows, Cols []int32
}

// gatherAsm, when set (amd64 with AVX2), packs full 16-column slivers.
var gatherAsm func(d *float32, ldd int, x *float32, a *int32, n int, ix *int32)

// runsAsm, when set (amd64 with AVX-512F), lets PackB pack 16 columns
// whose offsets form few runs of consecutive values (a stride-1
// convolution's output positions along a row) with runs16, one masked
// load per run instead of a gather. (runs16 is a direct call, not a
// function value, so that the run table stays on the stack.)
var runsAsm bool

// transposeAsm, when set (amd64 with AVX2), lets packA interleave eight
// rows of A with transpose8, 8×8 blocks transposed in registers, instead
// of one float at a time. Packing only moves values: the bits of every
// product stay the same.
var transposeAsm bool

// maxRuns is the most runs in 16 columns that runsAsm packs; more go to
// the gathers (16 runs of one column each are 16 loads against 2 gathers;
// a 3×3 convolution's taps, runs of 3, make 6).
const maxRuns = 6

// runsOf splits the first 16 offsets of idx (all of them when fewer)
// into runs of consecutive values: for run r, runs[2r] = idx[j0]-j0 with
// j0 its first column and runs[2r+1] the mask of its columns. It returns
// the number of runs, or 0 when there are more than maxRuns (or no
// offsets).
func runsOf(runs *[2 * maxRuns]int32, idx []int32) int {
	n := 0
	for j := range idx[:min(len(idx), 16)] {
		if j == 0 || idx[j] != idx[j-1]+1 {
			if n == maxRuns {
				return 0
			}
			runs[2*n], runs[2*n+1] = idx[j]-int32(j), 0
			n++
		}
		runs[2*n-1] |= 1 << j
	}
	return n
}

// PackB implements BPacker for the len(Rows)×len(Cols) matrix. It panics
// when an element of the block it packs would lie outside X.
func (g *Gathered) PackB(dst []float32, nr, pc, kc, jc, nc int) {
	rows, cols := g.Rows[pc:pc+kc], g.Cols[jc:jc+nc]
	checkGathered(g.X, rows, cols)
	x := g.X
	for s := 0; s < nc; s += nr {
		d := dst[s*kc : (s+nr)*kc]
		n := min(nr, nc-s)
		idx := cols[s : s+n]
		// Each full group of 16 columns (in a last, partial sliver too)
		// through the assembly; what is left one float at a time.
		h := 0
		if nr%16 == 0 && gatherAsm != nil {
			for ; h+16 <= n; h += 16 {
				var runs [2 * maxRuns]int32
				if runsAsm {
					if nrun := runsOf(&runs, idx[h:h+16]); nrun > 0 {
						runs16(&d[h], nr, &x[0], &rows[0], kc, &runs[0], nrun)
						continue
					}
				}
				gatherAsm(&d[h], nr, &x[0], &rows[0], kc, &idx[h])
			}
			// A last, partial group as runs (the lanes past n zero), and
			// the groups past it as zeros (a run with no lanes).
			for ; runsAsm && h < nr; h += 16 {
				runs := [2 * maxRuns]int32{}
				nrun := 1
				if h < n {
					if nrun = runsOf(&runs, idx[h:]); nrun == 0 {
						break
					}
				}
				runs16(&d[h], nr, &x[0], &rows[0], kc, &runs[0], nrun)
			}
		}
		if h == nr {
			continue
		}
		for l, base := range rows {
			dl := d[l*nr : (l+1)*nr]
			for j := h; j < n; j++ {
				dl[j] = x[base+idx[j]]
			}
			clear(dl[n:])
		}
	}
}

// checkGathered panics unless every x[r+c], r in rows and c in cols (both
// non-empty), lies inside x, and x is short enough for the int32 offset
// sums the packers form not to overflow.
func checkGathered(x []float32, rows, cols []int32) {
	rlo, rhi := bounds(rows)
	clo, chi := bounds(cols)
	if rlo+clo < 0 || rhi+chi >= int64(len(x)) || len(x) > math.MaxInt32 {
		panic(fmt.Sprintf("gemm: Gathered offsets %d..%d outside X of %d elements", rlo+clo, rhi+chi, len(x)))
	}
}

// boundsAsm, when set (amd64 with AVX2), finds bounds' extremes of
// whole groups of eight.
var boundsAsm func(s *int32, n int) (lo, hi int32)

// bounds returns the smallest and largest element of a non-empty s.
func bounds(s []int32) (lo, hi int64) {
	lo, hi = int64(s[0]), int64(s[0])
	if n := len(s) &^ 7; n > 0 && boundsAsm != nil {
		l, h := boundsAsm(&s[0], n)
		lo, hi = int64(l), int64(h)
		s = s[n:]
	}
	for _, v := range s {
		lo, hi = min(lo, int64(v)), max(hi, int64(v))
	}
	return lo, hi
}

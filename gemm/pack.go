package gemm

// packA copies rows [ic, ic+mc) and columns [pc, pc+kc) of op(A) into dst
// as slivers of mr rows: element (ic+s+r, pc+l) goes to dst[s*kc+l*mr+r]
// for s a multiple of mr. Rows past mc are zero.
//
// With AVX2 the full slivers of a transposed A (whose steps are rows of
// A) are copied by packRows (rowsAsm), one row of A at a time.
func (p *problem) packA(dst []float32, mr, ic, mc, pc, kc int) {
	s0 := 0
	if p.tA && rowsAsm && kc > 0 {
		if ns := mc / mr; ns > 0 && packRows(dst[:ns*mr*kc], p.a[pc*p.lda+ic:(pc+kc-1)*p.lda+ic+ns*mr], p.lda, kc, ns, mr) {
			s0 = ns * mr
		}
	}
	for s := s0; s < mc; s += mr {
		d := dst[s*kc : (s+mr)*kc]
		rows := min(mr, mc-s)
		if p.tA {
			// op(A)(i, l) = a[l*lda+i]: each step l is a contiguous run of rows.
			for l := 0; l < kc; l++ {
				src := p.a[(pc+l)*p.lda+ic+s:]
				dl := d[l*mr : l*mr+mr]
				copy(dl[:rows], src)
				clear(dl[rows:])
			}
			continue
		}
		// op(A)(i, l) = a[i*lda+l]: interleave the rows, one step at a time.
		if mr == 6 && rows == 6 {
			// With AVX2, 8×8 transposes in registers up to the last
			// multiple of 8 steps, the rest six floats at a time.
			src, kc8 := p.a[(ic+s)*p.lda+pc:], 0
			if transposeAsm && kc >= 8 {
				kc8 = kc &^ 7
				transpose6(d[:kc8*6], src[:5*p.lda+kc8], p.lda, kc8)
			}
			packA6(d[kc8*6:], src[kc8:], p.lda, kc-kc8)
			continue
		}
		// With AVX2, rows 0..7 go through 8×8 transposes in registers up
		// to the last multiple of 8 steps (kc8).
		kc8 := 0
		if transposeAsm && rows >= 8 && kc >= 8 {
			kc8 = kc &^ 7
			transpose8(&d[0], mr, &p.a[(ic+s)*p.lda+pc], p.lda, kc8)
		}
		// The rest one row at a time, its floats stored mr apart: each
		// load is sequential and each store a constant stride.
		for r := 0; r < rows; r++ {
			l0 := 0
			if r < 8 {
				l0 = kc8
			}
			src := p.a[(ic+s+r)*p.lda+pc:][:kc]
			dr := d[r : (kc-1)*mr+r+1]
			for l := l0; l < kc; l++ {
				dr[l*mr] = src[l]
			}
		}
		if rows < mr {
			for l := 0; l < kc; l++ {
				clear(d[l*mr+rows : l*mr+mr])
			}
		}
	}
}

// packB copies rows [pc, pc+kc) and columns [jc, jc+nc) of op(B) into dst
// as slivers of nr columns: element (pc+l, jc+s+j) goes to
// dst[s*kc+l*nr+j] for s a multiple of nr. Columns past nc are zero.
//
// With AVX2 the full slivers of a row-major B are copied by packRows
// (rowsAsm), one row of B at a time in order (one sliver at a time reads
// a cache line from each of kc rows far apart), and a transposed B goes
// through the 8×8 register transposes of transpose8 (transposeAsm), eight
// columns at a time, instead of one float at a time.
func (p *problem) packB(dst []float32, nr, pc, kc, jc, nc int) {
	s0 := 0
	if !p.tB && rowsAsm && kc > 0 {
		if ns := nc / nr; ns > 0 && packRows(dst[:ns*nr*kc], p.b[pc*p.ldb+jc:(pc+kc-1)*p.ldb+jc+ns*nr], p.ldb, kc, ns, nr) {
			s0 = ns * nr
		}
	}
	for s := s0; s < nc; s += nr {
		d := dst[s*kc : (s+nr)*kc]
		cols := min(nr, nc-s)
		if !p.tB {
			// op(B)(l, j) = b[l*ldb+j]: each step l is a contiguous run of columns.
			for l := 0; l < kc; l++ {
				src := p.b[(pc+l)*p.ldb+jc+s:]
				dl := d[l*nr : l*nr+nr]
				copy(dl[:cols], src)
				clear(dl[cols:])
			}
			continue
		}
		// op(B)(l, j) = b[j*ldb+l]: column j is a contiguous run of steps.
		// Groups of eight columns through transpose8 up to the last
		// multiple of 8 steps (kc8); the rest one float at a time.
		kc8, j8 := 0, 0
		if transposeAsm && kc >= 8 {
			kc8 = kc &^ 7
			for ; j8+8 <= cols; j8 += 8 {
				transpose8(&d[j8], nr, &p.b[(jc+s+j8)*p.ldb+pc], p.ldb, kc8)
			}
		}
		for j := 0; j < cols; j++ {
			l0 := 0
			if j < j8 {
				l0 = kc8
			}
			src := p.b[(jc+s+j)*p.ldb+pc:]
			src = src[:kc]
			for l := l0; l < kc; l++ {
				d[l*nr+j] = src[l]
			}
		}
		for j := cols; j < nr; j++ {
			for l := 0; l < kc; l++ {
				d[l*nr+j] = 0
			}
		}
	}
}

// packA6 interleaves six rows of kc floats, lda apart from a[0], into d:
// d[l*6+r] = a[r*lda+l]. It is packA's common case for the 6-row kernels,
// unrolled so that each step is six loads and six stores.
func packA6(d, a []float32, lda, kc int) {
	r0 := a[:kc]
	r1 := a[lda : lda+kc]
	r2 := a[2*lda : 2*lda+kc]
	r3 := a[3*lda : 3*lda+kc]
	r4 := a[4*lda : 4*lda+kc]
	r5 := a[5*lda : 5*lda+kc]
	d = d[:6*kc]
	for l := range kc {
		dl := (*[6]float32)(d[l*6:])
		dl[0], dl[1], dl[2], dl[3], dl[4], dl[5] = r0[l], r1[l], r2[l], r3[l], r4[l], r5[l]
	}
}

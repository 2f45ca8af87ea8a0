package gemm

// packA copies rows [ic, ic+mc) and columns [pc, pc+kc) of op(A) into dst
// as slivers of mr rows: element (ic+s+r, pc+l) goes to dst[s*kc+l*mr+r]
// for s a multiple of mr. Rows past mc are zero.
func (p *problem) packA(dst []float32, mr, ic, mc, pc, kc int) {
	for s := 0; s < mc; s += mr {
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
		var src [maxMR][]float32
		for r := 0; r < rows; r++ {
			src[r] = p.a[(ic+s+r)*p.lda+pc:][:kc]
		}
		for l := 0; l < kc; l++ {
			dl := d[l*mr : l*mr+mr]
			for r := 0; r < rows; r++ {
				dl[r] = src[r][l]
			}
			clear(dl[rows:])
		}
	}
}

// packB copies rows [pc, pc+kc) and columns [jc, jc+nc) of op(B) into dst
// as slivers of nr columns: element (pc+l, jc+s+j) goes to
// dst[s*kc+l*nr+j] for s a multiple of nr. Columns past nc are zero.
func (p *problem) packB(dst []float32, nr, pc, kc, jc, nc int) {
	for s := 0; s < nc; s += nr {
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
		for j := 0; j < cols; j++ {
			src := p.b[(jc+s+j)*p.ldb+pc:]
			src = src[:kc]
			for l, v := range src {
				d[l*nr+j] = v
			}
		}
		for j := cols; j < nr; j++ {
			for l := 0; l < kc; l++ {
				d[l*nr+j] = 0
			}
		}
	}
}

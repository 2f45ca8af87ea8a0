package lowbit

// This file holds the reference loops: plain per-element code written from
// the paper's Section 2 definitions, independent of the packing and SWAR
// tricks of the fast kernels. Tests, the functional tester and the hardware
// co-simulation use them as oracles.

// RefSign returns sgn(a): +1, 0 or -1.
func RefSign(a int) int8 {
	switch {
	case a > 0:
		return 1
	case a < 0:
		return -1
	}
	return 0
}

// RefGateKeeps reports whether the gate keeps element i (flattened index)
// whose vote margin is a. It is meaningful for GatePattern and GateMargin;
// GateWorker gates per worker, not per element, and always keeps here.
func RefGateKeeps(g Gate, i, a int) bool {
	switch g.Kind {
	case GatePattern:
		p := g.period()
		return i%p != p-1
	case GateMargin:
		if a < 0 {
			a = -a
		}
		return a >= g.Threshold
	}
	return true
}

// RefAggregate computes the aggregate of W workers' FP32 gradients g[k][i]
// straight from the definitions, with no packing: b = 1{g > 0}, a = 2c - W,
// u = sgn(a), and for G-Ternary the gate. For GateWorker, worker k votes on
// element i only when |g[k][i]| > tau, and a = P - N over those workers.
// base is the flattened index of element 0. Non-finite inputs are the
// caller's to exclude.
func RefAggregate(g [][]float32, s Spec, tau float32, base int) []int8 {
	w := len(g)
	if w == 0 {
		return nil
	}
	n := len(g[0])
	out := make([]int8, n)
	for i := range n {
		a := 0
		for k := range w {
			v := g[k][i]
			if s.Format == Ternary && s.Gate.Kind == GateWorker {
				if v > tau || v < -tau {
					if v > 0 {
						a++
					} else {
						a--
					}
				}
				continue
			}
			if v > 0 {
				a++
			} else {
				a--
			}
		}
		u := RefSign(a)
		if s.Format == Ternary && !RefGateKeeps(s.Gate, base+i, a) {
			u = 0
		}
		out[i] = u
	}
	return out
}

// RefCount returns c[i], the number of workers with g[k][i] > 0.
func RefCount(g [][]float32) []int {
	if len(g) == 0 {
		return nil
	}
	out := make([]int, len(g[0]))
	for _, gk := range g {
		for i, v := range gk {
			if v > 0 {
				out[i]++
			}
		}
	}
	return out
}

// RefCountPacket returns the byte-level count of each element-major packet
// byte over its low w bits, one bit at a time.
func RefCountPacket(src []byte, w int) []int {
	out := make([]int, len(src))
	for i, b := range src {
		for k := range w {
			if b&(1<<k) != 0 {
				out[i]++
			}
		}
	}
	return out
}

// RefAggregatePacket computes the aggregate of element-major packets one
// bit at a time: a = (#set) - (#clear) over the low W bits, or, for
// GateWorker, over the workers whose gate bit is set. gates may be nil
// unless the spec uses GateWorker.
func RefAggregatePacket(signs, gates []byte, s Spec, base int) []int8 {
	out := make([]int8, len(signs))
	for i, b := range signs {
		a := 0
		for k := range s.Workers {
			if s.GateBits() && gates[i]&(1<<k) == 0 {
				continue
			}
			if b&(1<<k) != 0 {
				a++
			} else {
				a--
			}
		}
		u := RefSign(a)
		if s.Format == Ternary && !RefGateKeeps(s.Gate, base+i, a) {
			u = 0
		}
		out[i] = u
	}
	return out
}

// RefAggregatePlanes computes the aggregate of n elements of worker-major
// bit-planes one bit at a time.
func RefAggregatePlanes(signs, gates [][]byte, n int, s Spec, base int) []int8 {
	out := make([]int8, n)
	for i := range n {
		a := 0
		for k := range s.Workers {
			if s.GateBits() && gates[k][i/8]&(1<<(i%8)) == 0 {
				continue
			}
			if signs[k][i/8]&(1<<(i%8)) != 0 {
				a++
			} else {
				a--
			}
		}
		u := RefSign(a)
		if s.Format == Ternary && !RefGateKeeps(s.Gate, base+i, a) {
			u = 0
		}
		out[i] = u
	}
	return out
}

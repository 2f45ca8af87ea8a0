package timing

import (
	"math/rand/v2"
	"testing"
)

// naiveLRU is the oracle for LLC: per set, a slice of lines with the most
// recently used last, and a dirty set.
type naiveLRU struct {
	sets       [][]uint64
	ways       int
	dirty      map[uint64]bool
	writebacks int64
}

func (c *naiveLRU) access(addr uint64, write bool) bool {
	line := addr / LineBytes
	s := &c.sets[line%uint64(len(c.sets))]
	for i, l := range *s {
		if l == line {
			*s = append(append((*s)[:i:i], (*s)[i+1:]...), line)
			if write {
				c.dirty[line] = true
			}
			return true
		}
	}
	if len(*s) == c.ways {
		if c.dirty[(*s)[0]] {
			c.writebacks++
		}
		delete(c.dirty, (*s)[0])
		*s = (*s)[1:]
	}
	*s = append(*s, line)
	c.dirty[line] = write
	return false
}

// TestLLCAgainstNaive: hits, misses and writebacks match the naive LRU on
// random streams with reuse, for several geometries.
func TestLLCAgainstNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, g := range []struct{ size, ways int }{{64, 1}, {1024, 4}, {4096, 16}, {64 * 24, 3}} {
		c := MakeLLCBuilder().WithSize(int64(g.size)).WithWays(g.ways).Build("Host[0].LLC")
		n := &naiveLRU{sets: make([][]uint64, g.size/(64*g.ways)), ways: g.ways, dirty: map[uint64]bool{}}
		span := uint64(4 * g.size)
		for i := range 20000 {
			addr := r.Uint64N(span)
			w := r.IntN(3) == 0
			if got, want := c.Access(addr, w), n.access(addr, w); got != want {
				t.Fatalf("size %d ways %d access %d (addr %d): hit %v; want %v", g.size, g.ways, i, addr, got, want)
			}
		}
		if c.Writebacks != n.writebacks {
			t.Errorf("size %d ways %d: %d writebacks; want %d", g.size, g.ways, c.Writebacks, n.writebacks)
		}
	}
}

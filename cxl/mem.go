package cxl

import "sort"

// pageLines is how many lines one storage page holds: 64 (4 KiB).
const pageLines = 64

// page is 64 consecutive lines of device memory, line i at bytes
// [64i, 64i+64) of b, so that a run of lines is one slice. written has bit
// i set once line i has been written.
type page struct {
	b       [pageLines * LineBytes]byte
	written uint64
}

// line returns line i of the page.
func (p *page) line(i uint64) *Line { return (*Line)(p.b[i*LineBytes:]) }

// store is the sparse device memory: 4 KiB pages allocated on first
// write, so a multi-GiB device costs only the pages touched. Invariant: a
// line never written reads as 64 zero bytes. Pages rather than single
// lines keep the index small enough to stay in cache: gathering W worker
// planes costs W lookups in a map 64 times smaller than a line map.
type store struct {
	pages map[uint64]*page
	// A one-entry lookup cache; sequential access mostly hits it.
	lastKey  uint64
	lastPage *page
	lines    int // lines written at least once
}

func newStore(linesHint int) store {
	return store{pages: make(map[uint64]*page, (linesHint+pageLines-1)/pageLines)}
}

func (s *store) page(key uint64) *page {
	if s.lastPage != nil && s.lastKey == key {
		return s.lastPage
	}
	p := s.pages[key]
	if p != nil {
		s.lastKey, s.lastPage = key, p
	}
	return p
}

// load returns line number n (address n*64).
func (s *store) load(n uint64) Line {
	if p := s.page(n / pageLines); p != nil {
		return *p.line(n % pageLines)
	}
	return Line{}
}

// loadInto copies line n into dst without an intermediate Line value.
func (s *store) loadInto(dst []byte, n uint64) {
	if p := s.page(n / pageLines); p != nil {
		copy(dst, p.line(n % pageLines)[:])
		return
	}
	clear(dst[:LineBytes])
}

// put writes line n.
func (s *store) put(n uint64, l *Line) {
	key := n / pageLines
	p := s.page(key)
	if p == nil {
		p = new(page)
		s.pages[key] = p
		s.lastKey, s.lastPage = key, p
	}
	i := n % pageLines
	if p.written&(1<<i) == 0 {
		p.written |= 1 << i
		s.lines++
	}
	*p.line(i) = *l
}

// addrs returns the addresses of every line written, sorted.
func (s *store) addrs() []uint64 {
	out := make([]uint64, 0, s.lines)
	for key, p := range s.pages {
		for i := range uint64(pageLines) {
			if p.written&(1<<i) != 0 {
				out = append(out, (key*pageLines+i)*LineBytes)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

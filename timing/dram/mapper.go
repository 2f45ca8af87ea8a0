package dram

import (
	"fmt"

	"github.com/neuronfabric/nfabric/lowbit"
)

// Mapper splits a stack-local line number into a DRAM location by the
// configured bit order (Spec.Mapping, most significant first) and,
// under bank_hash xor, XORs the row folded to the bank address's width
// into bank group and bank (Spec.BankHash).
type Mapper struct {
	shift, mask [6]uint64 // indexed like mappingFields
	// Under bank_hash xor: the bank address width (group and bank bits)
	// and the bank bits' width within it.
	hashBits, bankBits uint64
}

// Mapper returns the address mapper of the builder's configuration. It
// panics on an invalid mapping (Spec.Validate rejects those first).
func (b Builder) Mapper() Mapper {
	d := b.cfg
	fs, err := parseMapping(d.Mapping)
	if err != nil {
		panic(fmt.Sprintf("dram: mapping: %v", err))
	}
	size := map[string]int{"ro": d.Rows, "ra": d.Ranks, "bg": d.BankGroups, "ba": d.BanksPerGroup,
		"co": d.RowBytes / lowbit.LineBytes, "ch": d.Channels}
	var m Mapper
	pos := uint64(0)
	for i := len(fs) - 1; i >= 0; i-- {
		k := indexOf(mappingFields, fs[i])
		bits := uint64(0)
		for 1<<bits < size[fs[i]] {
			bits++
		}
		m.shift[k], m.mask[k] = pos, 1<<bits-1
		pos += bits
	}
	if d.BankHash == BankHashXOR {
		m.bankBits = uint64(bitsOf(m.mask[3]))
		m.hashBits = uint64(bitsOf(m.mask[2])) + m.bankBits
	}
	return m
}

// bitsOf returns the number of set bits of a low mask.
func bitsOf(mask uint64) int {
	n := 0
	for ; mask != 0; mask >>= 1 {
		n++
	}
	return n
}

// Map returns the channel and the access (rank, group, bank, row) of a
// stack-local line number; rows beyond the device wrap around.
func (m Mapper) Map(line uint64) (channel int, a Access) {
	f := func(k int) uint64 { return (line >> m.shift[k]) & m.mask[k] }
	// mappingFields order: ro, ra, bg, ba, co, ch
	row, bg, ba := f(0), f(2), f(3)
	if m.hashBits > 0 {
		x := bg<<m.bankBits | ba
		for r := row; r != 0; r >>= m.hashBits {
			x ^= r & (1<<m.hashBits - 1)
		}
		bg, ba = x>>m.bankBits, x&m.mask[3]
	}
	a.Row, a.Rank, a.Group, a.Bank = int64(row), int32(f(1)), int32(bg), int32(ba)
	return int(f(5)), a
}

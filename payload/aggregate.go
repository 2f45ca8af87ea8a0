package payload

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/neuronfabric/nfabric/lowbit"
)

// Values is one aggregate value per element of a payload file, what
// `nfabric payload aggregate` writes: the sign counts c_i, or the vote
// u_i = sgn(2c_i - W) (G-Binary) or m_i*u_i (G-Ternary). At reads element
// i from the counts or votes the reduction returned (no per-element int64
// copy, so memory stays near the input's).
type Values struct {
	Name  string // CSV column: "count", "u", "t", "sum" or "mean"
	Base  int64  // flattened index of element 0
	Len   int    // elements
	Width int    // bytes per raw value: 1, 2 for counts with W > 255 and lane sums, 4 for means
	At    func(i int) int64
	// Real, when set, gives the value instead of At: a float32, raw as
	// its little-endian bits, CSV in the shortest form that reads back.
	Real func(i int) float32
}

// SumValues returns an Int8 or BFP8 file's int16 lane sums (the
// controller's sum view, computed in software).
func (f *File) SumValues() (Values, error) {
	sums, _, err := f.Payload().Sum()
	if err != nil {
		return Values{}, err
	}
	return Values{Name: "sum", Base: f.Base, Len: len(sums), Width: 2, At: func(i int) int64 { return int64(sums[i]) }}, nil
}

// MeanValues returns an Int8 or BFP8 file's decoded mean of the workers'
// gradients (host.Payload.Mean).
func (f *File) MeanValues() (Values, error) {
	mean, err := f.Payload().Mean()
	if err != nil {
		return Values{}, err
	}
	return Values{Name: "mean", Base: f.Base, Len: len(mean), Width: 4, Real: func(i int) float32 { return mean[i] }}, nil
}

// CountValues returns the file's per-element sign counts.
func (f *File) CountValues() Values {
	counts := f.Counts()
	width := 1
	if f.Spec.Workers > 255 {
		width = 2
	}
	return Values{Name: "count", Base: f.Base, Len: len(counts), Width: width, At: func(i int) int64 { return int64(counts[i]) }}
}

// VoteValues returns the file's vote under s (s.Format Binary: u_i,
// Ternary: m_i*u_i under s.Gate; workers and layout are the file's).
func (f *File) VoteValues(s lowbit.Spec) (Values, error) {
	s.Workers, s.Layout = f.Spec.Workers, f.Spec.Layout
	u, err := f.Vote(s)
	if err != nil {
		return Values{}, err
	}
	name := "u"
	if s.Format == lowbit.Ternary {
		name = "t"
	}
	return Values{Name: name, Base: f.Base, Len: len(u), Width: 1, At: func(i int) int64 { return int64(u[i]) }}, nil
}

// WriteRaw writes the values as raw bytes (Width 1, or 2 little-endian).
// prog, when not nil, is called every 64 Ki elements and at the end.
func (v Values) WriteRaw(w io.Writer, prog func(done, total int64)) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	for i := range v.Len {
		switch {
		case v.Real != nil:
			bw.Write(binary.LittleEndian.AppendUint32(nil, math.Float32bits(v.Real(i))))
		case v.Width == 2:
			bw.Write(binary.LittleEndian.AppendUint16(nil, uint16(v.At(i))))
		default:
			bw.WriteByte(byte(v.At(i)))
		}
		v.tick(i, prog)
	}
	return bw.Flush()
}

// WriteCSV writes a header "element,NAME" and one line "element,value"
// per element, elements numbered from Base. prog as for WriteRaw.
func (v Values) WriteCSV(w io.Writer, prog func(done, total int64)) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	fmt.Fprintf(bw, "element,%s\n", v.Name)
	var num []byte
	for i := range v.Len {
		num = strconv.AppendInt(num[:0], v.Base+int64(i), 10)
		num = append(num, ',')
		if v.Real != nil {
			num = strconv.AppendFloat(num, float64(v.Real(i)), 'g', -1, 32)
		} else {
			num = strconv.AppendInt(num, v.At(i), 10)
		}
		num = append(num, '\n')
		bw.Write(num)
		v.tick(i, prog)
	}
	return bw.Flush()
}

// tick reports progress every 64 Ki elements and at the end.
func (v Values) tick(i int, prog func(done, total int64)) {
	if prog != nil && ((i+1)%(1<<16) == 0 || i+1 == v.Len) {
		prog(int64(i+1), int64(v.Len))
	}
}

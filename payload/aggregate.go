package payload

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"

	"github.com/neuronfabric/nfabric/lowbit"
)

// Values is one aggregate value per element of a payload file, what
// `nfabric payload aggregate` writes: the sign counts c_i, or the vote
// u_i = sgn(2c_i - W) (G-Binary) or m_i*u_i (G-Ternary). At reads element
// i from the counts or votes the reduction returned (no per-element int64
// copy, so memory stays near the input's).
type Values struct {
	Name  string // CSV column: "count", "u" or "t"
	Base  int64  // flattened index of element 0
	Len   int    // elements
	Width int    // bytes per raw value: 1, or 2 for counts with W > 255
	At    func(i int) int64
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
		if v.Width == 2 {
			bw.Write(binary.LittleEndian.AppendUint16(nil, uint16(v.At(i))))
		} else {
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
		num = strconv.AppendInt(num, v.At(i), 10)
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

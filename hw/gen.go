package hw

import (
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// Widths are the line widths the generator is evaluated at (paper Sec. 10).
var Widths = []int{64, 128, 256, 512, 1024}

// DefaultStages is the paper's pipeline depth: five controller cycles.
const DefaultStages = 5

// MaxStages is the deepest pipeline the generator places registers for.
const MaxStages = 5

// Fault names a deliberate bug the generator can inject, so that tests can
// show that co-simulation catches a wrong datapath (Datapath.Faults lists
// each family's). FaultNone is correct.
type Fault string

// FaultNone generates the correct datapath.
const FaultNone Fault = ""

// Config selects one generated datapath.
type Config struct {
	// Width is the line width in bits: 64, 128, 256, 512 or 1024. Each
	// byte is one element, so a line carries Width/8 elements.
	Width int
	// Stages is the pipeline depth k, 1 to MaxStages; 0 means
	// DefaultStages. See StageOps for where the registers go.
	Stages int
	// Workers is how many worker bits of each byte vote, 1 to 8 (a sum
	// datapath: see Datapath below); 0 means 8.
	Workers int
	// SplitCount moves the first half of each popcount (two 4-bit nibble
	// counts) into the unpack operation, which is otherwise empty for the
	// element-major packet; the count operation adds the halves. With
	// k = 5 this balances the count stage over two cycles.
	SplitCount bool
	// Fault injects a deliberate bug (tests only).
	Fault Fault
	// Datapath selects the datapath; the zero value is the paper's vote
	// datapath. For a sum datapath Stages is its fixed Depth (0 means it),
	// Workers is the most worker lines one aggregate sums (1 to
	// lowbit.MaxWorkers; 0 means 8, the vote datapath's W), which sizes
	// the lane accumulators (AccBits), and SplitCount does not apply.
	Datapath Datapath
}

// Normalized returns c with defaults filled in: Stages the datapath's
// Depth, Workers 8.
func (c Config) Normalized() Config {
	if c.Stages == 0 {
		c.Stages = c.Datapath.Depth()
	}
	if c.Workers == 0 {
		c.Workers = 8
	}
	return c
}

// Validate checks the configuration and names the bad field.
func (c Config) Validate() error {
	c = c.Normalized()
	f := c.Datapath.fam()
	if f == nil {
		names := make([]string, 0, 3)
		for _, d := range Datapaths() {
			names = append(names, d.String())
		}
		return fmt.Errorf("unknown datapath %q (known: %s)", string(c.Datapath), strings.Join(names, ", "))
	}
	return f.validate(c)
}

// Elements is the number of elements (bytes) per line.
func (c Config) Elements() int { return c.Width / 8 }

// ModuleName is the generated Verilog module's name: the family's stem
// (nf_agg for the vote datapath, nf_int8sum and nf_bfp8sum for the sum
// datapaths), _w<width>_k<stages>, then _p<workers> when Workers is not
// 8, _split and _fault_<name> when set; e.g. nf_agg_w512_k5.
func (c Config) ModuleName() string {
	c = c.Normalized()
	stem := "nf_unknown"
	if f := c.Datapath.fam(); f != nil {
		stem = f.moduleStem()
	}
	s := fmt.Sprintf("%s_w%d_k%d", stem, c.Width, c.Stages)
	if c.Workers != 8 {
		s += fmt.Sprintf("_p%d", c.Workers)
	}
	if c.SplitCount {
		s += "_split"
	}
	if c.Fault != FaultNone {
		s += "_fault_" + strings.ReplaceAll(string(c.Fault), "-", "_")
	}
	return s
}

// Latency is the number of rising clock edges from presenting a request to
// seeing its response on the outputs: the pipeline depth.
func (c Config) Latency() int { return c.Normalized().Stages }

// Verilog returns the generated module's source.
func (c Config) Verilog() (string, error) {
	var b strings.Builder
	if err := c.WriteVerilog(&b); err != nil {
		return "", err
	}
	return b.String(), nil
}

// WriteVerilog writes the synthesizable Verilog-2005 module for c.
//
// Ports: clk; rst (synchronous, active high, clears the valid pipeline);
// the family's request ports (for the vote datapath in_valid, in_mode[1:0]
// (a cxl.Mode of the paper's Table 2), in_base[1:0] (the flattened element
// index of byte 0, mod 3; 3 acts as 0) and in_data[Width-1:0], whose byte
// i (bits 8i+7..8i) is element i, bit k of it worker k's sign; a sum
// datapath's are in the package documentation); out_valid and out_data,
// Latency() rising edges later. The response per mode is documented in the
// package documentation and the file header.
func (c Config) WriteVerilog(w io.Writer) error {
	if err := c.Validate(); err != nil {
		return err
	}
	c = c.Normalized()
	e := &emitter{}
	c.Datapath.fam().emit(e, c)
	_, err := io.WriteString(w, e.String())
	return err
}

type emitter struct{ strings.Builder }

func (e *emitter) line(format string, args ...any) {
	fmt.Fprintf(e, format, args...)
	e.WriteByte('\n')
}

// vec returns a Verilog range for a width-bit vector ("" for one bit).
func vec(width int) string {
	if width == 1 {
		return ""
	}
	return fmt.Sprintf("[%d:0] ", width-1)
}

// sig is one signal crossing a stage boundary: width bits named q, driven
// by the expression d.
type sig struct {
	w    int
	q, d string
}

// emitModule opens the module: its name and ports, clk and rst, the
// family's request ports, out_valid and out_data (OutWidth bits), the
// ranges in one column.
func (c Config) emitModule(e *emitter) {
	decl := func(dir string, w int, name, sep string) {
		r := ""
		if w > 1 {
			r = fmt.Sprintf("[%d:0]", w-1)
		}
		e.line("  %s wire %-7s %s%s", dir, r, name, sep)
	}
	e.line("`default_nettype none")
	e.line("")
	e.line("module %s (", c.ModuleName())
	decl("input ", 1, "clk", ",")
	decl("input ", 1, "rst", ",")
	for _, p := range c.Datapath.fam().inputs(c) {
		decl("input ", p.w, p.name, ",")
	}
	decl("output", 1, "out_valid", ",")
	decl("output", c.OutWidth(), "out_data", "")
	e.line(");")
}

// port is one request port of a datapath, after clk and rst: its name,
// its width in bits and the value a Vector drives on it, little endian
// (byte 0 holds bits 7..0). The port list drives the co-simulation line
// protocol, both harnesses and the place-and-route wrapper.
type port struct {
	name  string
	w     int
	value func(v Vector) []byte
}

// bit is a one-bit port value.
func bit(b bool) []byte {
	if b {
		return []byte{1}
	}
	return []byte{0}
}

// hexField writes a port value as (w+3)/4 hex digits, most significant
// first: the line protocol's form of one field.
func hexField(v []byte, w int) string {
	digits := (w + 3) / 4
	s := hexMSB(v)
	if len(s) > digits {
		return s[len(s)-digits:]
	}
	return strings.Repeat("0", digits-len(s)) + s
}

// hexMSB renders bytes as hex with the last byte first (Verilog order).
func hexMSB(d []byte) string {
	r := make([]byte, len(d))
	for i, b := range d {
		r[len(d)-1-i] = b
	}
	return hex.EncodeToString(r)
}

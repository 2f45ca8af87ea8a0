package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/payload"
	"github.com/neuronfabric/nfabric/report"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newPayloadCmd) }

func newPayloadCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "payload",
		Short: "encode FP32 gradients into packed low-bit payload files and aggregate them",
		Long: `payload works on files: 'encode' packs raw little-endian float32 gradients of W
workers into a payload file (the layout the runtime writes into the CXL buffer),
'aggregate' reduces a payload file to counts, G-Binary signs or G-Ternary values,
'inspect' prints a payload file's header, and 'random' writes random gradients
to try the others on. The payload file format is documented in package payload.`,
		Example: `  nfabric payload random --workers 8 --elements 4096 -o g.f32
  nfabric payload encode --workers 8 --layout element-major -o g.nfp g.f32
  nfabric payload aggregate --mode counts --out-format csv -o counts.csv g.nfp
  nfabric payload aggregate --raw --workers 8 --mode counts -o counts.bin packets.bin`,
	}
	cmd.AddCommand(newPayloadRandomCmd(), newPayloadEncodeCmd(), newPayloadAggregateCmd(), newPayloadInspectCmd())
	return cmd
}

func newPayloadRandomCmd() *cobra.Command {
	var (
		workers  int
		elements int
		seed     uint64
		out      string
	)
	cmd := &cobra.Command{
		Use:   "random -o FILE",
		Short: "write W workers of random N(0,1) float32 gradients, worker after worker",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if workers < 1 || workers > lowbit.MaxWorkers {
				return usagef("--workers %d out of range [1, %d]", workers, lowbit.MaxWorkers)
			}
			if elements < 0 || elements > 1<<28 {
				return usagef("--elements %d out of range [0, %d]", elements, 1<<28)
			}
			if out == "" {
				return usagef("-o FILE is required")
			}
			r := rand.New(rand.NewPCG(seed, 0x6e666162))
			return writeOutput(cmd, out, func(w io.Writer) error {
				bw := bufio.NewWriter(w)
				var b [4]byte
				for range workers * elements {
					binary.LittleEndian.PutUint32(b[:], math.Float32bits(float32(r.NormFloat64())))
					bw.Write(b[:])
				}
				return bw.Flush()
			})
		},
	}
	cmd.Flags().IntVar(&workers, "workers", 8, "number of workers W")
	cmd.Flags().IntVar(&elements, "elements", 4096, "elements per worker")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed")
	cmd.Flags().StringVarP(&out, "output", "o", "", "output file (- for stdout)")
	return cmd
}

// specFlags are the flags that describe a lowbit.Spec.
type specFlags struct {
	workers int
	layout  string
	format  string
	gate    string
}

func (sf *specFlags) add(cmd *cobra.Command, formatDefault string) {
	cmd.Flags().IntVar(&sf.workers, "workers", 0, "number of workers W (default: from the input)")
	cmd.Flags().StringVar(&sf.layout, "layout", "element-major", "payload layout: element-major (the paper's packet, W <= 8) or worker-major")
	cmd.Flags().StringVar(&sf.format, "format", formatDefault, "payload format: g-binary or g-ternary")
	cmd.Flags().StringVar(&sf.gate, "gate", "pattern", "G-Ternary gate: pattern (the paper's 2-of-3), pattern:P, worker or margin:T (the last two are extensions)")
}

// checkWorkers refuses a negative --workers before any input is read (0
// means "from the input").
func (sf *specFlags) checkWorkers() error {
	if sf.workers < 0 || sf.workers > lowbit.MaxWorkers {
		return usagef("--workers %d out of range [1, %d] (or leave it out to take it from the input)", sf.workers, lowbit.MaxWorkers)
	}
	return nil
}

func (sf *specFlags) spec(workers int) (lowbit.Spec, error) {
	var s lowbit.Spec
	var err error
	if s.Layout, err = lowbit.ParseLayout(sf.layout); err != nil {
		return s, usagef("--layout: %v", err)
	}
	if s.Format, err = lowbit.ParseFormat(sf.format); err != nil {
		return s, usagef("--format: %v", err)
	}
	if s.Format == lowbit.FP32 {
		return s, usagef("--format: fp32 has no packed payload")
	}
	if s.Format == lowbit.Ternary {
		if s.Gate, err = lowbit.ParseGate(sf.gate); err != nil {
			return s, usagef("--gate: %v", err)
		}
	}
	s.Workers = workers
	if err := s.Validate(); err != nil {
		return s, usagef("%v", err)
	}
	return s, checkMargin(s)
}

// checkMargin refuses a margin gate that can never pass: the vote margin
// |2c - W| is at most W, so a threshold above W zeroes every element.
func checkMargin(s lowbit.Spec) error {
	if s.Format == lowbit.Ternary && s.Gate.Kind == lowbit.GateMargin && s.Gate.Threshold > s.Workers {
		return usagef("--gate margin:%d exceeds W = %d: the margin |2c - W| is at most W, so every value would be zero", s.Gate.Threshold, s.Workers)
	}
	return nil
}

func newPayloadEncodeCmd() *cobra.Command {
	var (
		sf    specFlags
		tau   float64
		base  int64
		out   string
		quiet bool
	)
	cmd := &cobra.Command{
		Use:   "encode -o OUT.nfp IN.f32 [IN2.f32 ...]",
		Short: "pack raw little-endian float32 gradients into a payload file",
		Long: `encode reads raw little-endian float32 gradients: either one file holding W
workers one after the other (give --workers), or one file per worker. It packs
them as G-Binary signs b = 1{g > 0} (plus gate bits |g| > --tau for the worker
gate) in the chosen layout. A NaN or Inf is an error naming the file, worker
and element, and no output is written.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("-o FILE is required")
			}
			if err := sf.checkWorkers(); err != nil {
				return err
			}
			gr, err := openGradients(args, sf.workers)
			if err != nil {
				return err
			}
			defer gr.Close()
			spec, err := sf.spec(gr.workers)
			if err != nil {
				return err
			}
			if math.IsNaN(tau) || math.IsInf(tau, 0) || tau < 0 {
				return usagef("--tau %v must be finite and non-negative", tau)
			}
			if cmd.Flags().Changed("tau") && !spec.GateBits() {
				return usagef("--tau applies only to --format g-ternary --gate worker")
			}
			if base < 0 {
				return usagef("--base %d must be non-negative", base)
			}
			f := payload.Header{Spec: spec, Elements: gr.n, Base: base}
			if err := f.Validate(); err != nil {
				return fmt.Errorf("encode %s: %w", args[0], err)
			}
			prog := newProgress(cmd, quiet, "encode "+out)
			err = writeOutput(cmd, out, func(w io.Writer) error {
				return payload.EncodeStream(w, f, gr.read, float32(tau), encodeChunk, prog)
			})
			if err != nil {
				return fmt.Errorf("encode %s: %w", args[0], err)
			}
			if out != "-" {
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d workers x %d elements, %v %v, %d bytes (%d payload lines)\n",
					out, spec.Workers, f.Elements, spec.Layout, spec.Format, f.FileBytes(), (f.FileBytes()-payload.HeaderBytes)/lowbit.LineBytes)
			}
			return nil
		},
	}
	sf.add(cmd, "g-binary")
	cmd.Flags().Float64Var(&tau, "tau", 0, "gate threshold for --gate worker: a worker votes on an element when |g| > tau")
	cmd.Flags().Int64Var(&base, "base", 0, "flattened index of element 0 (the pattern gate depends on it)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "output payload file (- for stdout)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr")
	return cmd
}

// gradients is W workers' little-endian float32 gradients read from files
// on demand: one file split into W equal parts, or one file per worker.
type gradients struct {
	paths   []string
	files   []*os.File
	readers []io.ReaderAt // the files, or what was read from a pipe
	workers int
	n       int64 // elements per worker
	buf     []byte
}

// maxStreamGradientBytes bounds gradients read from a pipe or FIFO, which
// are held in memory (1 GiB: 2^28 float32 values); a regular file is read
// in chunks whatever its size.
const maxStreamGradientBytes = 1 << 30

// openGradients opens and sizes the inputs (one file split into workers
// equal parts, or one file per worker) without reading them.
func openGradients(paths []string, workers int) (*gradients, error) {
	if len(paths) > 1 && workers != 0 && workers != len(paths) {
		return nil, usagef("--workers %d but %d input files (one file per worker)", workers, len(paths))
	}
	if len(paths) == 1 && workers == 0 {
		return nil, usagef("--workers is required with a single input file")
	}
	gr := &gradients{paths: paths, workers: max(workers, len(paths))}
	for i, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			gr.Close()
			return nil, fmt.Errorf("read gradients: %w", err)
		}
		gr.files = append(gr.files, f)
		st, err := f.Stat()
		if err != nil {
			gr.Close()
			return nil, fmt.Errorf("read gradients: %w", err)
		}
		size := st.Size()
		var ra io.ReaderAt = f
		if !st.Mode().IsRegular() {
			// A pipe or FIFO (/dev/stdin, <(cat f)) has no size and no
			// random access: read it whole, up to the limit.
			data, err := io.ReadAll(io.LimitReader(f, maxStreamGradientBytes+1))
			if err != nil {
				gr.Close()
				return nil, fmt.Errorf("read gradients %s: %w", p, err)
			}
			if len(data) > maxStreamGradientBytes {
				gr.Close()
				return nil, fmt.Errorf("read gradients %s: more than %d bytes from a pipe (write them to a file)", p, maxStreamGradientBytes)
			}
			ra, size = bytes.NewReader(data), int64(len(data))
		}
		gr.readers = append(gr.readers, ra)
		if size%4 != 0 {
			gr.Close()
			return nil, fmt.Errorf("read gradients %s: %d bytes is not a whole number of float32 values", p, size)
		}
		v := size / 4
		switch {
		case len(paths) == 1:
			if v%int64(workers) != 0 {
				gr.Close()
				return nil, fmt.Errorf("read gradients %s: %d values do not split into %d equal workers", p, v, workers)
			}
			gr.n = v / int64(workers)
		case i == 0:
			gr.n = v
		case v != gr.n:
			gr.Close()
			return nil, fmt.Errorf("read gradients %s: %d values, %s has %d", p, v, paths[0], gr.n)
		}
	}
	return gr, nil
}

// Close closes the input files.
func (gr *gradients) Close() {
	for _, f := range gr.files {
		f.Close()
	}
}

// read is a payload.Source: it fills dst with worker k's elements from
// off, and names the file and the element (in the worker's whole input)
// of a NaN or Inf.
func (gr *gradients) read(k int, off int64, dst []float32) error {
	f, path, at := gr.readers[0], gr.paths[0], (int64(k)*gr.n+off)*4
	if len(gr.readers) > 1 {
		f, path, at = gr.readers[k], gr.paths[k], off*4
	}
	if cap(gr.buf) < 4*len(dst) {
		gr.buf = make([]byte, 4*len(dst))
	}
	b := gr.buf[:4*len(dst)]
	if _, err := f.ReadAt(b, at); err != nil {
		return fmt.Errorf("read gradients %s: %w", path, err)
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	if err := lowbit.CheckFinite(dst); err != nil {
		var nf *lowbit.NonFiniteError
		if errors.As(err, &nf) {
			err = &lowbit.NonFiniteError{Index: nf.Index + int(off), Value: nf.Value}
		}
		return fmt.Errorf("read gradients %s: %w", path, err)
	}
	return nil
}

func newPayloadAggregateCmd() *cobra.Command {
	var (
		sf      specFlags
		raw     bool
		mode    string
		outFmt  string
		out     string
		rawBase int64
		quiet   bool
	)
	cmd := &cobra.Command{
		Use:   "aggregate -o OUT IN",
		Short: "reduce a payload file to counts, G-Binary signs or G-Ternary values",
		Long: `aggregate reads a payload file (or, with --raw, a headerless file of the paper's
8-worker element-major packets) and writes, per element:
  --mode counts    the sign count c (uint8 for W <= 255, else uint16 little-endian)
  --mode binary    the G-Binary update u = sgn(2c - W) as int8 (-1, 0, +1)
  --mode ternary   the G-Ternary value m*u as int8 under --gate
as raw bytes (--out-format raw) or as CSV lines "element,value".`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("-o FILE is required")
			}
			if outFmt != "raw" && outFmt != "csv" {
				return usagef("--out-format %q: want raw or csv", outFmt)
			}
			if mode != "counts" && mode != "binary" && mode != "ternary" {
				return usagef("--mode %q: want counts, binary or ternary", mode)
			}
			if err := sf.checkWorkers(); err != nil {
				return err
			}
			f, err := readPayload(args[0], raw, sf.workers, rawBase)
			if err != nil {
				return err
			}
			if err := sf.matchFile(cmd, args[0], f); err != nil {
				return err
			}
			n, width, value, err := aggregateValues(cmd, &sf, f, mode, args[0])
			if err != nil {
				return err
			}
			f.Signs, f.Gates = nil, nil // the file's bytes are no longer needed
			return writeOutput(cmd, out, func(w io.Writer) error {
				return writeAggregate(w, outFmt, mode, f.Base, n, width, value, newProgress(cmd, quiet, "aggregate "+out))
			})
		},
	}
	sf.add(cmd, "g-binary")
	cmd.Flags().BoolVar(&raw, "raw", false, "the input is headerless element-major packets (one byte per element); needs --workers")
	cmd.Flags().Int64Var(&rawBase, "base", 0, "with --raw: flattened index of element 0")
	cmd.Flags().StringVar(&mode, "mode", "counts", "what to return: counts, binary or ternary")
	cmd.Flags().StringVar(&outFmt, "out-format", "raw", "output format: raw or csv")
	cmd.Flags().StringVarP(&out, "output", "o", "", "output file (- for stdout)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr")
	return cmd
}

// matchFile checks the spec flags the user gave against the file's header:
// a flag that disagrees with the file is a usage error, not ignored.
func (sf *specFlags) matchFile(cmd *cobra.Command, name string, f *payload.File) error {
	if sf.workers != 0 && sf.workers != f.Spec.Workers {
		return usagef("--workers %d, but %s holds %d workers", sf.workers, name, f.Spec.Workers)
	}
	if cmd.Flags().Changed("format") {
		fm, err := lowbit.ParseFormat(sf.format)
		if err != nil {
			return usagef("--format: %v", err)
		}
		if fm != f.Spec.Format {
			return usagef("--format %v, but %s is %v (--mode chooses what to compute)", fm, name, f.Spec.Format)
		}
	}
	if cmd.Flags().Changed("layout") {
		l, err := lowbit.ParseLayout(sf.layout)
		if err != nil {
			return usagef("--layout: %v", err)
		}
		if l != f.Spec.Layout {
			return usagef("--layout %v, but %s is %v", l, name, f.Spec.Layout)
		}
	}
	return nil
}

// aggregateValues reduces the file under mode and returns the element
// count, the raw output width in bytes and value(i), which reads element i
// from the counts or the votes (no per-element int64 copy: memory stays
// near the input's).
func aggregateValues(cmd *cobra.Command, sf *specFlags, f *payload.File, mode, name string) (n, width int, value func(i int) int64, err error) {
	width = 1
	if mode == "counts" {
		counts := f.Counts()
		if f.Spec.Workers > 255 {
			width = 2
		}
		return len(counts), width, func(i int) int64 { return int64(counts[i]) }, nil
	}
	s := lowbit.Spec{Workers: f.Spec.Workers, Layout: f.Spec.Layout, Format: lowbit.Binary}
	if mode == "ternary" {
		s.Format = lowbit.Ternary
		gateFlag := sf.gate
		if !cmd.Flags().Changed("gate") && f.Spec.Format == lowbit.Ternary {
			gateFlag = f.Spec.Gate.String()
		}
		if s.Gate, err = lowbit.ParseGate(gateFlag); err != nil {
			return 0, 0, nil, usagef("--gate: %v", err)
		}
		if err := checkMargin(s); err != nil {
			return 0, 0, nil, err
		}
	}
	u, err := f.Vote(s)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("aggregate %s: %w", name, err)
	}
	return len(u), width, func(i int) int64 { return int64(u[i]) }, nil
}

// writeAggregate writes n values as raw bytes (width 1 or 2, little
// endian) or as CSV lines "element,value" from flattened index base.
func writeAggregate(w io.Writer, outFmt, mode string, base int64, n, width int, value func(i int) int64, prog func(done, total int64)) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	tick := func(i int) { // progress every 64 Ki elements and at the end
		if prog != nil && ((i+1)%(1<<16) == 0 || i+1 == n) {
			prog(int64(i+1), int64(n))
		}
	}
	if outFmt == "csv" {
		fmt.Fprintf(bw, "element,%s\n", map[string]string{"counts": "count", "binary": "u", "ternary": "t"}[mode])
		var num []byte
		for i := range n {
			num = strconv.AppendInt(num[:0], base+int64(i), 10)
			num = append(num, ',')
			num = strconv.AppendInt(num, value(i), 10)
			num = append(num, '\n')
			bw.Write(num)
			tick(i)
		}
		return bw.Flush()
	}
	for i := range n {
		if width == 2 {
			bw.Write(binary.LittleEndian.AppendUint16(nil, uint16(value(i))))
		} else {
			bw.WriteByte(byte(value(i)))
		}
		tick(i)
	}
	return bw.Flush()
}

// readPayload reads a payload file, or with raw a headerless packet file.
func readPayload(path string, raw bool, workers int, base int64) (*payload.File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read payload: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("read payload %s: %w", path, err)
	}
	if !raw {
		f, err := payload.Read(bufio.NewReader(fh), st.Size())
		if err != nil {
			return nil, fmt.Errorf("read payload %s: %w", path, err)
		}
		return f, nil
	}
	if workers < 1 || workers > lowbit.MaxPacketWorkers {
		return nil, usagef("--raw needs --workers between 1 and %d", lowbit.MaxPacketWorkers)
	}
	if base < 0 {
		return nil, usagef("--base %d must be non-negative", base)
	}
	size := st.Size()
	if !st.Mode().IsRegular() { // a pipe: its size is known only at the end
		data, err := io.ReadAll(io.LimitReader(fh, payload.MaxElements+1))
		if err != nil {
			return nil, fmt.Errorf("read payload %s: %w", path, err)
		}
		size = int64(len(data))
		return rawFile(path, data, size, workers, base)
	}
	if size > payload.MaxElements {
		return nil, fmt.Errorf("read payload %s: %d bytes is more than %d elements", path, size, int64(payload.MaxElements))
	}
	return rawFile(path, fh, size, workers, base)
}

// rawFile reads size bytes of headerless packets from src (a reader or the
// bytes already read) straight into the file's sign section.
func rawFile(path string, src any, size int64, workers int, base int64) (*payload.File, error) {
	if size > payload.MaxElements {
		return nil, fmt.Errorf("read payload %s: %d bytes is more than %d elements", path, size, int64(payload.MaxElements))
	}
	h := payload.Header{Spec: lowbit.Spec{Workers: workers, Layout: lowbit.ElementMajor, Format: lowbit.Binary}, Elements: size, Base: base}
	f := &payload.File{Header: h, Signs: make([]byte, h.SectionBytes())}
	switch s := src.(type) {
	case []byte:
		copy(f.Signs, s)
	case io.Reader:
		if _, err := io.ReadFull(s, f.Signs[:size]); err != nil {
			return nil, fmt.Errorf("read payload %s: %w", path, err)
		}
	}
	if err := f.Check(); err != nil {
		return nil, fmt.Errorf("read payload %s: %w", path, err)
	}
	return f, nil
}

func newPayloadInspectCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect FILE",
		Short: "print a payload file's header and traffic",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := readPayload(args[0], false, 0, 0)
			if err != nil {
				return err
			}
			t := report.Table{Name: "payload", Title: "payload " + args[0], Columns: []string{"field", "value"}}
			t.AddRow("layout", f.Spec.Layout.String())
			t.AddRow("format", f.Spec.Format.String())
			if f.Spec.Format == lowbit.Ternary {
				t.AddRow("gate", f.Spec.Gate.String())
			}
			t.AddRow("workers", f.Spec.Workers)
			t.AddRow("elements", f.Elements)
			t.AddRow("base", f.Base)
			t.AddRow("file bytes", f.FileBytes())
			for _, a := range []lowbit.Accounting{lowbit.PaperAccounting, lowbit.PlaneAccounting} {
				tr := lowbit.Account([]lowbit.Group{{Name: "all", Elements: f.Elements, Format: f.Spec.Format, Gate: f.Spec.Gate}}, a)
				t.AddRow("traffic vs FP32 ("+a.String()+" accounting)", tr.Ratio)
			}
			res := &report.Result{Block: "payload", Title: "payload file", Tables: []report.Table{t}}
			if asJSON {
				return res.WriteJSON(cmd.OutOrStdout())
			}
			fmt.Fprint(cmd.OutOrStdout(), t.Text())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// writeOutput writes a command's output file atomically, or to stdout for
// "-".
func writeOutput(cmd *cobra.Command, path string, fn func(w io.Writer) error) error {
	if path == "-" {
		return fn(cmd.OutOrStdout())
	}
	return report.WriteAtomic(path, fn)
}

package main

import (
	"fmt"
	"io"
	"math"

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
			return writeOutput(cmd, out, func(w io.Writer) error {
				return payload.WriteRandomGradients(w, workers, elements, seed)
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
	cmd.Flags().StringVar(&sf.layout, "layout", "", "payload layout: element-major (the paper's packet, W <= 8; the default for g-binary and g-ternary) or worker-major (the default, and the only layout, for int8 and bfp8)")
	cmd.Flags().StringVar(&sf.format, "format", formatDefault, "payload format: g-binary, g-ternary, or beyond the paper int8 or bfp8")
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
	if s.Format, err = lowbit.ParseFormat(sf.format); err != nil {
		return s, usagef("--format: %v", err)
	}
	if s.Format == lowbit.FP32 {
		return s, usagef("--format: fp32 has no packed payload")
	}
	s.Layout = lowbit.ElementMajor
	if s.Format.Sum() {
		s.Layout = lowbit.WorkerMajor
	}
	if sf.layout != "" {
		if s.Layout, err = lowbit.ParseLayout(sf.layout); err != nil {
			return s, usagef("--layout: %v", err)
		}
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

const payloadEncodeLong = `encode reads raw little-endian float32 gradients: either one file holding W
workers one after the other (give --workers), or one file per worker. It packs
them as G-Binary signs b = 1{g > 0} (plus gate bits |g| > --tau for the worker
gate) in the chosen layout, or, beyond the paper, as --format int8 (8-bit codes
at one scale the workers agree on, the largest |g| / 127) or bfp8 (8-bit
mantissas with one exponent per worker and 64-element block), worker-major. A
NaN or Inf is an error naming the file, worker and element, and no output is
written.`

// checkEncodeFlags refuses a --tau or --base encode cannot use.
func checkEncodeFlags(cmd *cobra.Command, spec lowbit.Spec, tau float64, base int64) error {
	if math.IsNaN(tau) || math.IsInf(tau, 0) || tau < 0 {
		return usagef("--tau %v must be finite and non-negative", tau)
	}
	if cmd.Flags().Changed("tau") && !spec.GateBits() {
		return usagef("--tau applies only to --format g-ternary --gate worker")
	}
	if base < 0 {
		return usagef("--base %d must be non-negative", base)
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
		Long:  payloadEncodeLong,
		Args:  cobra.MinimumNArgs(1),
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
			spec, err := sf.spec(gr.Workers())
			if err != nil {
				return err
			}
			if err := checkEncodeFlags(cmd, spec, tau, base); err != nil {
				return err
			}
			f := payload.Header{Spec: spec, Elements: gr.Elements(), Base: base}
			if err := f.Validate(); err != nil {
				return fmt.Errorf("encode %s: %w", args[0], err)
			}
			prog := newProgress(cmd, quiet, "encode "+out)
			err = writeOutput(cmd, out, func(w io.Writer) error {
				return payload.EncodeStream(w, f, gr.Read, float32(tau), encodeChunk, prog)
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

// openGradients checks the input count against --workers (usage errors)
// and opens the inputs.
func openGradients(paths []string, workers int) (*payload.Gradients, error) {
	if len(paths) > 1 && workers != 0 && workers != len(paths) {
		return nil, usagef("--workers %d but %d input files (one file per worker)", workers, len(paths))
	}
	if len(paths) == 1 && workers == 0 {
		return nil, usagef("--workers is required with a single input file")
	}
	return payload.OpenGradients(paths, workers)
}

const payloadAggregateLong = `aggregate reads a payload file (or, with --raw, a headerless file of the paper's
8-worker element-major packets) and writes, per element:
  --mode counts    the sign count c (uint8 for W <= 255, else uint16 little-endian)
  --mode binary    the G-Binary update u = sgn(2c - W) as int8 (-1, 0, +1)
  --mode ternary   the G-Ternary value m*u as int8 under --gate
and, for the int8 and bfp8 files beyond the paper:
  --mode sum       the controller's lane sum, saturated to int16 (little-endian)
  --mode mean      the workers' mean gradient decoded from it, float32 little-endian
as raw bytes (--out-format raw) or as CSV lines "element,value".`

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
		Long:  payloadAggregateLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("-o FILE is required")
			}
			if outFmt != "raw" && outFmt != "csv" {
				return usagef("--out-format %q: want raw or csv", outFmt)
			}
			if mode != "" && mode != "counts" && mode != "binary" && mode != "ternary" && mode != "sum" && mode != "mean" {
				return usagef("--mode %q: want counts, binary or ternary (g-binary, g-ternary files), sum or mean (int8, bfp8 files)", mode)
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
			v, err := aggregateValues(cmd, &sf, f, mode, args[0])
			if err != nil {
				return err
			}
			f.Signs, f.Gates, f.Codes, f.Exps = nil, nil, nil, nil // the file's bytes are no longer needed
			prog := newProgress(cmd, quiet, "aggregate "+out)
			return writeOutput(cmd, out, func(w io.Writer) error {
				if outFmt == "csv" {
					return v.WriteCSV(w, prog)
				}
				return v.WriteRaw(w, prog)
			})
		},
	}
	sf.add(cmd, "g-binary")
	cmd.Flags().BoolVar(&raw, "raw", false, "the input is headerless element-major packets (one byte per element); needs --workers")
	cmd.Flags().Int64Var(&rawBase, "base", 0, "with --raw: flattened index of element 0")
	cmd.Flags().StringVar(&mode, "mode", "", "what to return: counts, binary or ternary; sum or mean for int8 and bfp8 files (default counts, or sum)")
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

// aggregateValues reduces the file under mode; --gate (or, left out, a
// G-Ternary file's own gate) chooses the ternary vote's gate.
func aggregateValues(cmd *cobra.Command, sf *specFlags, f *payload.File, mode, name string) (payload.Values, error) {
	if f.Spec.Format.Sum() {
		var v payload.Values
		var err error
		switch mode {
		case "", "sum":
			v, err = f.SumValues()
		case "mean":
			v, err = f.MeanValues()
		default:
			return payload.Values{}, usagef("--mode %s, but %s is %v: want sum or mean", mode, name, f.Spec.Format)
		}
		if err != nil {
			return payload.Values{}, fmt.Errorf("aggregate %s: %w", name, err)
		}
		return v, nil
	}
	switch mode {
	case "", "counts":
		return f.CountValues(), nil
	case "sum", "mean":
		return payload.Values{}, usagef("--mode %s, but %s is %v: want counts, binary or ternary", mode, name, f.Spec.Format)
	}
	s := lowbit.Spec{Workers: f.Spec.Workers, Layout: f.Spec.Layout, Format: lowbit.Binary}
	if mode == "ternary" {
		s.Format = lowbit.Ternary
		gateFlag := sf.gate
		if !cmd.Flags().Changed("gate") && f.Spec.Format == lowbit.Ternary {
			gateFlag = f.Spec.Gate.String()
		}
		var err error
		if s.Gate, err = lowbit.ParseGate(gateFlag); err != nil {
			return payload.Values{}, usagef("--gate: %v", err)
		}
		if err := checkMargin(s); err != nil {
			return payload.Values{}, err
		}
	}
	v, err := f.VoteValues(s)
	if err != nil {
		return payload.Values{}, fmt.Errorf("aggregate %s: %w", name, err)
	}
	return v, nil
}

// readPayload reads a payload file, or with raw a headerless packet file
// (--workers and --base checked here, as usage errors).
func readPayload(path string, raw bool, workers int, base int64) (*payload.File, error) {
	if !raw {
		return payload.ReadFile(path)
	}
	if workers < 1 || workers > lowbit.MaxPacketWorkers {
		return nil, usagef("--raw needs --workers between 1 and %d", lowbit.MaxPacketWorkers)
	}
	if base < 0 {
		return nil, usagef("--base %d must be non-negative", base)
	}
	return payload.ReadRawPackets(path, workers, base)
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
			if f.Spec.Format.Scaled() {
				t.AddRow("scale", f.Scale)
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
			return printResult(cmd, res, asJSON, "")
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// writeOutput writes a command's output file atomically, or to stdout for
// "-"; then stdout holds the data, so what the command prints afterwards
// (its summary or table) goes to stderr.
func writeOutput(cmd *cobra.Command, path string, fn func(w io.Writer) error) error {
	if path == "-" {
		err := fn(cmd.OutOrStdout())
		cmd.SetOut(cmd.ErrOrStderr())
		return err
	}
	return report.WriteAtomic(path, fn)
}

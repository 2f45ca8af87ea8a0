package main

import (
	"fmt"
	"io"

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
	fileFlag(cmd.Flags(), &out, "output", "o", "output file (- for stdout)")
	return cmd
}

// specFlags are the flags that describe a payload's spec.
type specFlags payload.SpecOptions

func (sf *specFlags) add(cmd *cobra.Command, formatDefault string) {
	cmd.Flags().IntVar(&sf.Workers, "workers", 0, "number of workers W (default: from the input)")
	cmd.Flags().StringVar(&sf.Layout, "layout", "", "payload layout: element-major (the paper's packet, W <= 8; the default for g-binary and g-ternary) or worker-major (the default, and the only layout, for int8 and bfp8)")
	cmd.Flags().StringVar(&sf.Format, "format", formatDefault, "payload format: g-binary, g-ternary, or beyond the paper int8 or bfp8")
	cmd.Flags().StringVar(&sf.Gate, "gate", "pattern", "G-Ternary gate: pattern (the paper's 2-of-3), pattern:P, worker or margin:T (the last two are extensions)")
}

// given is the options the user gave: what aggregate checks against the
// file (its defaults are the file's).
func (sf *specFlags) given(cmd *cobra.Command) payload.SpecOptions {
	o := payload.SpecOptions(*sf)
	for name, p := range map[string]*string{"format": &o.Format, "gate": &o.Gate} {
		if !cmd.Flags().Changed(name) {
			*p = ""
		}
	}
	return o
}

const payloadEncodeLong = `encode reads raw little-endian float32 gradients: either one file holding W
workers one after the other (give --workers), or one file per worker. It packs
them as G-Binary signs b = 1{g > 0} (plus gate bits |g| > --tau for the worker
gate) in the chosen layout, or, beyond the paper, as --format int8 (8-bit codes
at one scale the workers agree on, the largest |g| / 127) or bfp8 (8-bit
mantissas with one exponent per worker and 64-element block), worker-major. A
NaN or Inf is an error naming the file, worker and element, and no output is
written.`

// payloadEncodeFlags are encode's flags.
type payloadEncodeFlags struct {
	sf    specFlags
	opt   payload.EncodeOptions
	out   string
	quiet bool
}

func newPayloadEncodeCmd() *cobra.Command {
	var e payloadEncodeFlags
	cmd := &cobra.Command{
		Use:   "encode -o OUT.nfp IN.f32 [IN2.f32 ...]",
		Short: "pack raw little-endian float32 gradients into a payload file",
		Long:  payloadEncodeLong,
		Args:  cobra.MinimumNArgs(1),
		RunE:  e.run,
	}
	e.sf.add(cmd, "g-binary")
	f := cmd.Flags()
	f.Float64Var(&e.opt.Tau, "tau", 0, "gate threshold for --gate worker: a worker votes on an element when |g| > tau")
	f.Int64Var(&e.opt.Base, "base", 0, "flattened index of element 0 (the pattern gate depends on it)")
	fileFlag(f, &e.out, "output", "o", "output payload file (- for stdout)")
	f.BoolVarP(&e.quiet, "quiet", "q", false, "no progress on stderr")
	return cmd
}

// header opens the inputs and builds the file's header from the flags.
func (e *payloadEncodeFlags) header(cmd *cobra.Command, args []string) (*payload.Gradients, payload.Header, error) {
	o := payload.SpecOptions(e.sf)
	if err := o.CheckWorkers(); err != nil {
		return nil, payload.Header{}, err
	}
	gr, err := payload.OpenGradients(args, o.Workers)
	if err != nil {
		return nil, payload.Header{}, err
	}
	e.opt.TauSet = cmd.Flags().Changed("tau")
	spec, err := o.Spec(gr.Workers())
	if err == nil {
		err = e.opt.Check(spec)
	}
	if err != nil {
		gr.Close()
		return nil, payload.Header{}, err
	}
	return gr, payload.Header{Spec: spec, Elements: gr.Elements(), Base: e.opt.Base}, nil
}

func (e *payloadEncodeFlags) run(cmd *cobra.Command, args []string) error {
	if e.out == "" {
		return usagef("-o FILE is required")
	}
	gr, h, err := e.header(cmd, args)
	if err != nil {
		return err
	}
	defer gr.Close()
	if err := h.Validate(); err != nil {
		return fmt.Errorf("encode %s: %w", args[0], err)
	}
	prog := newProgress(cmd, e.quiet, "encode "+e.out)
	err = writeOutput(cmd, e.out, func(w io.Writer) error {
		return payload.EncodeStream(w, h, gr.Read, float32(e.opt.Tau), encodeChunk, prog)
	})
	if err != nil {
		return fmt.Errorf("encode %s: %w", args[0], err)
	}
	if e.out != "-" {
		fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d workers x %d elements, %v %v, %d bytes (%d payload lines)\n",
			e.out, h.Spec.Workers, h.Elements, h.Spec.Layout, h.Spec.Format, h.FileBytes(), (h.FileBytes()-payload.HeaderBytes)/lowbit.LineBytes)
	}
	return nil
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

// payloadAggregateFlags are aggregate's flags.
type payloadAggregateFlags struct {
	sf                specFlags
	raw, quiet        bool
	mode, outFmt, out string
	rawBase           int64
}

func newPayloadAggregateCmd() *cobra.Command {
	var a payloadAggregateFlags
	cmd := &cobra.Command{
		Use:   "aggregate -o OUT IN",
		Short: "reduce a payload file to counts, G-Binary signs or G-Ternary values",
		Long:  payloadAggregateLong,
		Args:  cobra.ExactArgs(1),
		RunE:  a.run,
	}
	a.sf.add(cmd, "g-binary")
	f := cmd.Flags()
	f.BoolVar(&a.raw, "raw", false, "the input is headerless element-major packets (one byte per element); needs --workers")
	f.Int64Var(&a.rawBase, "base", 0, "with --raw: flattened index of element 0")
	f.StringVar(&a.mode, "mode", "", "what to return: counts, binary or ternary; sum or mean for int8 and bfp8 files (default counts, or sum)")
	f.StringVar(&a.outFmt, "out-format", "raw", "output format: raw or csv")
	fileFlag(f, &a.out, "output", "o", "output file (- for stdout)")
	f.BoolVarP(&a.quiet, "quiet", "q", false, "no progress on stderr")
	return cmd
}

// values reads the input and reduces it under the flags.
func (a *payloadAggregateFlags) values(cmd *cobra.Command, name string) (payload.Values, error) {
	o := a.sf.given(cmd)
	if err := o.CheckWorkers(); err != nil {
		return payload.Values{}, err
	}
	read := payload.ReadFile
	if a.raw {
		read = func(name string) (*payload.File, error) { return payload.ReadRawPackets(name, o.Workers, a.rawBase) }
	}
	f, err := read(name) // f is dropped on return: the values keep only what they need
	if err != nil {
		return payload.Values{}, err
	}
	if err := o.Match(name, f); err != nil {
		return payload.Values{}, err
	}
	return f.Aggregate(name, a.mode, o.Gate)
}

func (a *payloadAggregateFlags) run(cmd *cobra.Command, args []string) error {
	if a.out == "" {
		return usagef("-o FILE is required")
	}
	if a.outFmt != "raw" && a.outFmt != "csv" {
		return usagef("--out-format %q: want raw or csv", a.outFmt)
	}
	if err := payload.CheckMode(a.mode); err != nil {
		return err
	}
	v, err := a.values(cmd, args[0])
	if err != nil {
		return err
	}
	prog := newProgress(cmd, a.quiet, "aggregate "+a.out)
	return writeOutput(cmd, a.out, func(w io.Writer) error {
		if a.outFmt == "csv" {
			return v.WriteCSV(w, prog)
		}
		return v.WriteRaw(w, prog)
	})
}

func newPayloadInspectCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect FILE",
		Short: "print a payload file's header and traffic",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := payload.ReadFile(args[0])
			if err != nil {
				return err
			}
			return printResult(cmd, f.Describe(args[0]), asJSON, "")
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

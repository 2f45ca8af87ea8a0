package experiments

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/neuronfabric/nfabric/strictyaml"
	"github.com/neuronfabric/nfabric/timing"
	"gopkg.in/yaml.v3"
)

// TimingParams holds the parameters of the timing block's drivers: the
// Table 4 rows (RunTable4, RunLayouts), the Fig. 3 sweeps (RunEnvelope),
// the loaded-latency curve and the paper's exposure budget. They are the
// "experiments" section of a timing configuration file (TimingSetup).
type TimingParams struct {
	// CongestedShare is link.share in the congested rows: the fraction of
	// the link left to gradient lines while background traffic holds the
	// rest. Default 0.25 (32 GiB/s of 128): the smallest round share at
	// which the default offered load (8 streams x 16 lines per ~210 ns,
	// about 36 GiB/s) exceeds one stack's gate, which is what "congested"
	// means here.
	CongestedShare float64 `yaml:"congested_share" json:"congested_share"`
	// StreamCounts are the W values of the "1-8 request streams" rows.
	StreamCounts []int `yaml:"stream_counts" json:"stream_counts"`
	// StackCounts are the N values of the scale-out rows (paper: 1,2,4,8).
	StackCounts []int `yaml:"stack_counts" json:"stack_counts"`
	// BandwidthsGiBps and Depths span Fig. 3(a) (paper depths 5, 10, 20).
	BandwidthsGiBps []float64 `yaml:"bandwidths_gibps" json:"bandwidths_gibps"`
	Depths          []int     `yaml:"depths" json:"depths"`
	// LatenciesNS span Fig. 3(b).
	LatenciesNS []float64 `yaml:"latencies_ns" json:"latencies_ns"`
	// FootprintRatios span Fig. 3(c): total active footprint / LLC size.
	FootprintRatios []float64 `yaml:"footprint_ratios" json:"footprint_ratios"`
	// DelaysMS span Fig. 3(d): how late the mode-latch update lands.
	DelaysMS []float64 `yaml:"delays_ms" json:"delays_ms"`
	// StepMS is the training-step time that Fig. 3(d)'s cost is relative
	// to. Assumption: 1000 ms (the paper states none); the cost scales as
	// 1/StepMS and the table reports the break-even step as well.
	StepMS float64 `yaml:"step_ms" json:"step_ms"`
	// LoadOutstanding are the per-stream outstanding limits the
	// loaded-latency curve sweeps (timing.RunLoadedLatency).
	LoadOutstanding []int `yaml:"load_outstanding" json:"load_outstanding"`
	// ExposureBudgetPct is the exposed-cost budget a configuration must stay
	// under (paper Sec. 5.3: 2%).
	ExposureBudgetPct float64 `yaml:"exposure_budget_pct" json:"exposure_budget_pct"`
}

// DefaultTimingParams returns the full sweeps.
func DefaultTimingParams() TimingParams {
	return TimingParams{
		CongestedShare:    0.25,
		StreamCounts:      []int{1, 2, 3, 4, 5, 6, 7, 8},
		StackCounts:       []int{1, 2, 4, 8},
		BandwidthsGiBps:   []float64{8, 16, 32, 64, 128, 256, 512},
		Depths:            []int{5, 10, 20},
		LatenciesNS:       []float64{50, 100, 200, 400, 800},
		FootprintRatios:   []float64{0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 4},
		DelaysMS:          []float64{0, 0.1, 1, 2, 5, 10},
		StepMS:            1000,
		LoadOutstanding:   []int{1, 2, 4, 8, 16, 32, 64},
		ExposureBudgetPct: 2,
	}
}

// QuickTimingParams returns shorter sweeps with the same end points.
func QuickTimingParams() TimingParams {
	e := DefaultTimingParams()
	e.BandwidthsGiBps = []float64{16, 32, 64, 128, 512}
	e.LatenciesNS = []float64{50, 200, 800}
	e.FootprintRatios = []float64{0.5, 1, 2, 4}
	e.DelaysMS = []float64{0, 1, 10}
	e.LoadOutstanding = []int{1, 4, 16, 64}
	return e
}

// QuickSweeps shortens e's Fig. 3 sweeps (bandwidths, latencies,
// footprint ratios, update delays) to QuickTimingParams' values, which keep
// the same end points: 'nfabric timing --quick'. Everything else,
// the loaded-latency limits included, stays e's, so a --config file's
// other values survive --quick.
func (e *TimingParams) QuickSweeps() {
	q := QuickTimingParams()
	e.BandwidthsGiBps, e.LatenciesNS = q.BandwidthsGiBps, q.LatenciesNS
	e.FootprintRatios, e.DelaysMS = q.FootprintRatios, q.DelaysMS
}

func checkList[T int | float64](field string, vs []T, lo, hi T) error {
	if len(vs) == 0 || len(vs) > 64 {
		return fmt.Errorf("%s: want 1 to 64 values, got %d", field, len(vs))
	}
	for i, v := range vs {
		if !isFinite(float64(v)) || v < lo || v > hi {
			return fmt.Errorf("%s[%d]: must be in [%v, %v], got %v", field, i, lo, hi, v)
		}
	}
	return nil
}

// Validate returns an error naming the first invalid field.
func (e TimingParams) Validate() error {
	if !isFinite(e.CongestedShare) || e.CongestedShare <= 0 || e.CongestedShare > 1 {
		return fmt.Errorf("congested_share: must be in (0, 1], got %g", e.CongestedShare)
	}
	if err := checkList("stream_counts", e.StreamCounts, 1, 4096); err != nil {
		return err
	}
	if err := checkList("stack_counts", e.StackCounts, 1, 1024); err != nil {
		return err
	}
	if err := checkList("bandwidths_gibps", e.BandwidthsGiBps, 1e-3, 1e6); err != nil {
		return err
	}
	if err := checkList("depths", e.Depths, 0, 1<<16); err != nil {
		return err
	}
	if err := checkList("latencies_ns", e.LatenciesNS, 0, 1e6); err != nil {
		return err
	}
	if err := checkList("footprint_ratios", e.FootprintRatios, 1.0/64, 64); err != nil {
		return err
	}
	if err := checkList("delays_ms", e.DelaysMS, 0, 1000); err != nil {
		return err
	}
	if err := checkList("load_outstanding", e.LoadOutstanding, 1, 1<<16); err != nil {
		return err
	}
	if !isFinite(e.StepMS) || e.StepMS <= 0 || e.StepMS > 1e7 {
		return fmt.Errorf("step_ms: must be in (0, 1e7], got %g", e.StepMS)
	}
	if !isFinite(e.ExposureBudgetPct) || e.ExposureBudgetPct <= 0 || e.ExposureBudgetPct > 100 {
		return fmt.Errorf("exposure_budget_pct: must be in (0, 100], got %g", e.ExposureBudgetPct)
	}
	return nil
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// TimingSetup is a whole timing configuration file (`nfabric timing
// --config`): the model, which package timing defines and validates, and
// the timing block's parameters.
type TimingSetup struct {
	Model       timing.Config `yaml:"model" json:"model"`
	Experiments TimingParams  `yaml:"experiments" json:"experiments"`
}

// DefaultTimingSetup returns timing.DefaultConfig and DefaultTimingParams.
func DefaultTimingSetup() TimingSetup {
	return TimingSetup{Model: timing.DefaultConfig(), Experiments: DefaultTimingParams()}
}

// Validate checks the model and the experiments.
func (s TimingSetup) Validate() error {
	if err := s.Model.Validate(); err != nil {
		return fmt.Errorf("model.%w", err)
	}
	if err := s.Experiments.Validate(); err != nil {
		return fmt.Errorf("experiments.%w", err)
	}
	for _, w := range s.Experiments.StreamCounts {
		if n := int64(w) * int64(s.Model.Streams.Outstanding); n > timing.MaxInFlight {
			return fmt.Errorf("experiments.stream_counts %d x model.streams.outstanding %d = %d requests in flight, above the limit %d", w, s.Model.Streams.Outstanding, n, timing.MaxInFlight)
		}
	}
	for _, d := range s.Experiments.LoadOutstanding {
		if n := int64(s.Model.Streams.Count) * int64(d); n > timing.MaxInFlight {
			return fmt.Errorf("model.streams.count %d x experiments.load_outstanding %d = %d requests in flight, above the limit %d", s.Model.Streams.Count, d, n, timing.MaxInFlight)
		}
	}
	return nil
}

// DecodeTimingSetup reads a YAML TimingSetup. Fields the document leaves out keep
// their defaults; unknown fields, a second document and invalid values are
// errors naming the field. An empty document gives DefaultTimingSetup.
func DecodeTimingSetup(r io.Reader) (TimingSetup, error) {
	doc, err := io.ReadAll(io.LimitReader(r, 1<<20+1))
	if err != nil {
		return TimingSetup{}, err
	}
	if len(doc) > 1<<20 {
		return TimingSetup{}, errors.New("configuration larger than 1 MiB")
	}
	s := DefaultTimingSetup()
	if err := strictyaml.CheckIntsIn(doc, &s); err != nil {
		return TimingSetup{}, err
	}
	// A device, DRAM or link block that names a preset starts from it
	// (cxldev.Config, dram.Spec and cxldev.LinkConfig decode themselves).
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return DefaultTimingSetup(), nil
		}
		return TimingSetup{}, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err == nil {
			return TimingSetup{}, errors.New("more than one YAML document")
		}
		return TimingSetup{}, err
	}
	if err := s.Validate(); err != nil {
		return TimingSetup{}, err
	}
	return s, nil
}

// EncodeTimingSetup writes s as YAML that DecodeTimingSetup reads back
// unchanged.
func EncodeTimingSetup(w io.Writer, s TimingSetup) error {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

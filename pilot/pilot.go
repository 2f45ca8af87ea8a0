// Package pilot runs the control-plane pilots of paper Sec. 8: virtual-worker
// training whose layer groups follow the controller's mode latches, with the
// control plane (package control) writing those latches from training-health
// telemetry, warm-up diagnostics and, optionally, network telemetry.
//
// A pilot is a closed loop at step granularity, run by train.Loop (the one
// training loop) with the pilot's hooks:
//
//	before step:      plane.Step(telemetry due, step)  ->  control.Apply (mode latches only)
//	train.Loop:       forward/backward of W shards  ->  latched aggregation (FP32 mean or
//	                  controller)  ->  SGD with each group's learning rate (the low-bit
//	                  rate on a low-bit latch; velocity cleared on a rule switch)
//	after aggregation: plane.Step(loss); every DiagEvery steps plane.Step(diagnostics)
//
// Each pilot runs one Scenario of the paper's Fig. 6 (always-fp32,
// always-g-binary, fp32-default admission, g-binary-default recovery).
//
// The control plane never sees gradients or payloads: it gets the loss,
// cosine diagnostics and telemetry, and returns mode writes.
//
// # Fault
//
// The degradation window of Fig. 6 is injected as label noise (documented in
// Fault): during the window each training label is replaced, with
// probability Rate, by a uniformly drawn label. The loss rises, the
// Supervisor's CUSUM alarms, and low-bit groups return to FP32 for cooldown
// and calibration before re-admission.
//
// # Calibration
//
// Every pilot records each step's loss, and always-FP32 records the cosine
// diagnostics too, though no plane reads them: its fault-free steps are the
// record Calibrate derives the CUSUM and ladder thresholds from
// (control.CalibrateCUSUM, control.CalibrateLadder), so that the
// thresholds come from the workload they steer.
package pilot

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/train"
	"github.com/neuronfabric/nfabric/usage"
)

// Scenario is one of the Fig. 6 pilot scenarios: which latches the run
// starts on and whether the control plane may change them.
type Scenario uint8

const (
	// AlwaysFP32 keeps every latch on FP32 bypass (reference).
	AlwaysFP32 Scenario = iota
	// AlwaysGBinary keeps every latch on G-Binary (reference).
	AlwaysGBinary
	// FP32Default starts on FP32 and admits low-bit modes through the
	// ladder (admission).
	FP32Default
	// GBinaryDefault runs G-Binary after warm-up and recovers to FP32 on
	// a Supervisor alarm (recovery).
	GBinaryDefault
)

var scenarioNames = [...]string{"always-fp32", "always-g-binary", "fp32-default", "g-binary-default"}

func (s Scenario) String() string {
	if int(s) < len(scenarioNames) {
		return scenarioNames[s]
	}
	return fmt.Sprintf("Scenario(%d)", uint8(s))
}

// ParseScenario accepts the names String returns.
func ParseScenario(s string) (Scenario, error) {
	for i, n := range scenarioNames {
		if s == n {
			return Scenario(i), nil
		}
	}
	return 0, fmt.Errorf("unknown scenario %q (want %s)", s, strings.Join(scenarioNames[:], ", "))
}

// Scenarios lists the four scenarios of Fig. 6.
func Scenarios() []Scenario {
	return []Scenario{AlwaysFP32, AlwaysGBinary, FP32Default, GBinaryDefault}
}

// ParseEpochs reads a fault window's epochs, "FIRST-LAST" (1-based,
// inclusive, FIRST <= LAST), into f.
func (f *Fault) ParseEpochs(s string) error {
	a, b, ok := strings.Cut(s, "-")
	first, err1 := strconv.Atoi(a)
	last, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || first < 1 || last < first {
		return usage.Errorf("--fault-epochs %q: want FIRST-LAST, e.g. 4-5", s)
	}
	f.StartEpoch, f.EndEpoch = first, last
	return nil
}

// Groups returns the names the control plane knows the layer groups by
// (nn.Group.String, in index order): the value of control.Config.Groups
// for a pilot.
func Groups() []string {
	names := make([]string, 0, nn.NumGroups)
	for _, g := range nn.Groups() {
		names = append(names, g.String())
	}
	return names
}

// Fault is the injected degradation window: from the first step of epoch
// StartEpoch to the last of EndEpoch (1-based, inclusive), each training
// label is replaced with probability Rate by a label drawn uniformly from
// all classes. Rate 0 disables it.
type Fault struct {
	StartEpoch, EndEpoch int
	Rate                 float64
}

// Config is one pilot run.
type Config struct {
	Scenario Scenario
	// Train holds the model, workers, batch, epochs, learning rates and
	// seed; its Policy is ignored (the latches decide).
	Train train.Config
	// Control configures the plane for the controlled scenarios; its
	// Groups are set to Groups(), and Default from the scenario.
	Control control.Config
	// Gate is G-Ternary's gate in the latched regions.
	Gate lowbit.Gate
	// DiagEvery is the step interval of cosine diagnostics (0: never).
	DiagEvery int
	// Fault is the degradation window.
	Fault Fault
	// Telemetry is the telemetry source of the Commander, in time order
	// (e.g. control.Episodes, or a CSV read by control.ReadTelemetry);
	// nil means none. Sample t is delivered once the step clock
	// (step × StepNS) reaches t.TimeNS + TelemetryDelayNS.
	Telemetry        []control.Telemetry
	TelemetryDelayNS int64
	// StepNS is the step clock the telemetry is matched against.
	StepNS int64
	// Record, when not nil, receives the run's conversation with its
	// control plane (controlled scenarios only); it is off by default and
	// never part of the Result or its JSON.
	Record *Recording `json:"-"`
}

// Recording is a pilot's conversation with its control plane, enough to
// replay it elsewhere (a control session of nfabric serve, say): the
// plane's configuration, every event the pilot stepped the plane with in
// order, and the actions the plane returned, which the pilot applied to
// its mode latches in that order.
type Recording struct {
	Control control.Config
	Events  []control.Event
	Actions []control.Action
}

// EpochStat is one epoch of a pilot.
type EpochStat struct {
	Epoch     int     `json:"epoch"`
	TrainLoss float64 `json:"train_loss"`
	ValAcc    float64 `json:"val_acc"`
	// LowBit is, per group, the share of the epoch's steps on which the
	// group ran a low-bit mode; Traffic the mean traffic ratio to FP32
	// (paper accounting).
	LowBit  train.PerGroup[float64] `json:"lowbit"`
	Traffic float64                 `json:"traffic"`
	// Modes is each group's mode at the end of the epoch.
	Modes train.PerGroup[string] `json:"modes"`
	Fault bool                   `json:"fault"`
}

// Result is a finished pilot.
type Result struct {
	Scenario string `json:"scenario"`
	Seed     uint64 `json:"seed"`
	Steps    int    `json:"steps"`
	// LowBitSteps is the share of steps on which any group ran low-bit
	// (the paper's "steps low-bit").
	LowBitSteps float64 `json:"lowbit_steps"`
	// Traffic is the mean per-step traffic ratio to FP32 (paper accounting).
	Traffic float64          `json:"traffic"`
	Final   float64          `json:"final_acc"`
	Epochs  []EpochStat      `json:"epochs"`
	Actions []control.Action `json:"actions,omitempty"`
	Alarms  int              `json:"alarms"`
	// Losses is every step's training loss (the batch mean, before the
	// update): the Supervisor's input, and the record the CUSUM is
	// calibrated on (control.CalibrateCUSUM).
	Losses []float64 `json:"losses"`
	// Diags are the cosine diagnostics of the controlled scenarios, sent
	// to the plane, and of always-FP32, the calibration record of the
	// ladder (control.CalibrateLadder).
	Diags []Diag `json:"diags,omitempty"`
	// Settled is each group's mode at the end of the run.
	Settled train.PerGroup[string] `json:"settled"`
	// Warmup is the last diagnostics sample at or before the end of the
	// warm-up (Control.WarmupSteps): what the ladder admits on.
	Warmup   *Diag `json:"warmup,omitempty"`
	LatchOps int   `json:"latch_writes"`
	// VelocityResets counts group rule switches, at each of which the
	// group's SGD velocity was cleared (train.Loop).
	VelocityResets int `json:"velocity_resets"`
}

// Diag is one diagnostics sample sent to the plane.
type Diag struct {
	Step    int           `json:"step"`
	Binary  train.Cosines `json:"binary"`
	Ternary train.Cosines `json:"ternary"`
}

// latchCounter counts the latch writes the control plane makes.
type latchCounter struct {
	w cxl.ModeWriter
	n int
}

func (l *latchCounter) SetMode(id cxl.RegionID, m cxl.Mode, ts int64) error {
	l.n++
	return l.w.SetMode(id, m, ts)
}

// Run runs one pilot on sets: the latched aggregator of cfg.Train's model
// under cfg.Scenario, trained by train.Loop with the pilot's hooks (see the
// package doc). It stops with ctx's error once ctx is done.
func Run(ctx context.Context, cfg Config, sets *data.Sets) (*Result, error) {
	tc, err := cfg.trainConfig(sets)
	if err != nil {
		return nil, fmt.Errorf("pilot: %w", err)
	}
	m, err := train.NewModel(tc, sets.Train, tc.Seed)
	if err != nil {
		return nil, fmt.Errorf("pilot: %w", err)
	}
	agg, err := train.NewLatchedAggregator(m, tc.Workers, tc.Layout, cfg.Gate)
	if err != nil {
		return nil, fmt.Errorf("pilot: %w", err)
	}
	l := train.NewLoop(tc, m, agg, sets.Train, sets.Test)
	if sets.Train.Len() < len(l.Stepper.Y) {
		return nil, fmt.Errorf("pilot: training split smaller than one batch of %d", len(l.Stepper.Y))
	}
	p, err := newRun(cfg, tc, l)
	if err != nil {
		return nil, fmt.Errorf("pilot: %w", err)
	}
	l.Hooks = train.Hooks{BeforeStep: p.beforeStep, AfterAggregate: p.afterAggregate, EndEpoch: p.endEpoch}
	if err := l.Run(ctx, 1, tc.Epochs); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("pilot: %s: %w", cfg.Scenario, err)
	}
	return p.result(), nil
}

// trainConfig validates cfg and sets and returns the training
// configuration the loop runs (FP32 policy: the latches decide).
func (cfg Config) trainConfig(sets *data.Sets) (train.Config, error) {
	tc := cfg.Train
	tc.Policy = train.Uniform(train.RuleSpec{Rule: train.FormatRule(lowbit.FP32)})
	if tc.Workers == 0 {
		tc.Workers = 8
	}
	if err := tc.Validate(); err != nil {
		return tc, err
	}
	if err := cfg.Control.Ladder.CheckWorkers(tc.Workers); err != nil {
		return tc, err
	}
	switch {
	case cfg.Fault.Rate < 0 || cfg.Fault.Rate > 1 || math.IsNaN(cfg.Fault.Rate):
		return tc, fmt.Errorf("fault rate %v out of [0, 1]", cfg.Fault.Rate)
	case cfg.DiagEvery < 0:
		return tc, fmt.Errorf("diag_every %d is negative", cfg.DiagEvery)
	case sets == nil || sets.Train == nil || sets.Test == nil:
		return tc, fmt.Errorf("no training or test split")
	case cfg.Scenario > GBinaryDefault:
		return tc, fmt.Errorf("unknown scenario %d", cfg.Scenario)
	}
	return tc, nil
}

// run is the state of one pilot: the loop, the control plane (nil for
// the fixed scenarios), the latches and the statistics.
type run struct {
	cfg     Config
	tc      train.Config
	loop    *train.Loop
	plane   *control.Plane
	latch   *latchCounter
	regions map[string][]cxl.RegionID
	noise   *rand.Rand
	tel     []control.Telemetry
	res     *Result
	es      EpochStat // the epoch being run

	epochSteps int
	lowSteps   int
	trafficSum float64
}

// newRun maps the latches: the plane of a controlled scenario, or every
// latch written once to the fixed scenario's mode.
func newRun(cfg Config, tc train.Config, l *train.Loop) (*run, error) {
	lw, regions := l.Agg.Latches()
	p := &run{cfg: cfg, tc: tc, loop: l, latch: &latchCounter{w: lw}, regions: regions,
		noise: rand.New(rand.NewPCG(tc.Seed, 0x6e6f6973)), tel: cfg.Telemetry,
		res: &Result{Scenario: cfg.Scenario.String(), Seed: tc.Seed}}
	fixed := cxl.FP32Bypass
	switch cfg.Scenario {
	case AlwaysGBinary:
		fixed = cxl.Aggregate(lowbit.Binary)
	case FP32Default, GBinaryDefault:
		cc := cfg.Control
		cc.Groups = Groups()
		cc.Default = control.FP32Default
		if cfg.Scenario == GBinaryDefault {
			cc.Default, cc.LowBitMode = control.LowBitDefault, cxl.Aggregate(lowbit.Binary)
		}
		plane, err := control.New(cc)
		if err != nil {
			return nil, err
		}
		p.plane = plane
		if cfg.Record != nil {
			*cfg.Record = Recording{Control: cc}
		}
		return p, nil
	}
	for _, g := range Groups() {
		for _, id := range regions[g] {
			if err := p.latch.SetMode(id, fixed, 0); err != nil {
				return nil, fmt.Errorf("latch %s: %w", g, err)
			}
		}
	}
	return p, nil
}

// beforeStep delivers the telemetry that is due and the step to the plane,
// applies its mode writes, and injects the fault's label noise.
func (p *run) beforeStep(s *train.Step) error {
	if p.es.Epoch != s.Epoch {
		p.es, p.epochSteps = EpochStat{Epoch: s.Epoch, Fault: p.faulty(s.Epoch)}, 0
	}
	if p.plane != nil {
		now := int64(s.Index) * p.cfg.StepNS
		for len(p.tel) > 0 && p.tel[0].TimeNS+p.cfg.TelemetryDelayNS <= now {
			if _, err := p.step(control.Event{Type: control.EvTelemetry, Telemetry: p.tel[0]}); err != nil {
				return err
			}
			p.tel = p.tel[1:]
		}
		acts, err := p.step(control.Event{Type: control.EvStep, Step: int64(s.Index), TimeNS: now})
		if err != nil {
			return err
		}
		if err := control.Apply(p.latch, p.regions, acts); err != nil {
			return err
		}
	}
	if p.es.Fault {
		y := p.loop.Stepper.Y[:s.N]
		for i := range y {
			if p.noise.Float64() < p.cfg.Fault.Rate {
				y[i] = p.noise.IntN(p.loop.Stepper.Model.Classes)
			}
		}
	}
	return nil
}

// step steps the plane with ev and records both when asked to.
func (p *run) step(ev control.Event) ([]control.Action, error) {
	acts, err := p.plane.Step(ev)
	if r := p.cfg.Record; r != nil {
		r.Events = append(r.Events, ev)
		r.Actions = append(r.Actions, acts...)
	}
	return acts, err
}

func (p *run) faulty(epoch int) bool {
	f := p.cfg.Fault
	return f.Rate > 0 && epoch >= f.StartEpoch && epoch <= f.EndEpoch
}

// afterAggregate counts the step's low-bit groups and traffic, records the
// loss, and sends it and, every DiagEvery steps, the cosine diagnostics to
// the plane (always-FP32 computes the diagnostics too, as the ladder's
// calibration record).
func (p *run) afterAggregate(s *train.Step) error {
	for _, g := range nn.Groups() {
		if s.Policy[g].Rule.Format() != lowbit.FP32 {
			p.es.LowBit[g]++
		}
	}
	if s.Policy.LowBit() {
		p.lowSteps++
	}
	tratio := train.PolicyTraffic(p.loop.Stepper.Model, s.Policy).Paper.Ratio
	p.trafficSum += tratio
	p.es.Traffic += tratio
	p.epochSteps++
	p.res.Losses = append(p.res.Losses, s.Loss)
	step := int64(s.Index)
	if p.plane != nil {
		if _, err := p.step(control.Event{Type: control.EvLoss, Step: step, Loss: s.Loss}); err != nil {
			return err
		}
	}
	diag := p.plane != nil || p.cfg.Scenario == AlwaysFP32
	if !diag || p.cfg.DiagEvery == 0 || s.Index%p.cfg.DiagEvery != 0 {
		return nil
	}
	cos, err := p.cosines()
	if err != nil {
		return fmt.Errorf("diagnostics at step %d: %w", s.Index, err)
	}
	bin, ter := cos[lowbit.Binary], cos[lowbit.Ternary]
	d := Diag{Step: s.Index, Binary: bin, Ternary: ter}
	p.res.Diags = append(p.res.Diags, d)
	if p.res.Warmup == nil && step >= p.cfg.Control.WarmupSteps-int64(p.cfg.DiagEvery) {
		p.res.Warmup = &d
	}
	if p.plane == nil {
		return nil
	}
	for _, g := range nn.Groups() {
		ev := control.Event{Type: control.EvDiag, Step: step, Group: g.String(), Cos: map[lowbit.Format]float64{}}
		for _, f := range p.diagFormats() {
			ev.Cos[f] = cos[f].Groups[g]
		}
		if _, err := p.step(ev); err != nil {
			return err
		}
	}
	return nil
}

// diagFormats are the formats the diagnostics measure: the paper's two,
// and every other rung of the plane's ladder.
func (p *run) diagFormats() []lowbit.Format {
	fs := []lowbit.Format{lowbit.Binary, lowbit.Ternary}
	for _, r := range p.cfg.Control.Ladder.Ordered() {
		if !slices.Contains(fs, r.Format) {
			fs = append(fs, r.Format)
		}
	}
	return fs
}

// cosines measures the step's diagnostics: train.StepCosines for the
// paper's two formats, train.StepFormatCosines (the same two, and the
// others) when the ladder has a rung beyond them.
func (p *run) cosines() (train.FormatCosines, error) {
	var out train.FormatCosines
	m, grads := p.loop.Stepper.Model, p.loop.Stepper.Grads
	if len(p.diagFormats()) > 2 {
		return train.StepFormatCosines(m, grads)
	}
	out[lowbit.Binary], out[lowbit.Ternary] = train.StepCosines(m, grads)
	return out, nil
}

// endEpoch closes the epoch's statistics.
func (p *run) endEpoch(e *train.EpochStat) error {
	if p.es.Epoch != e.Epoch {
		p.es, p.epochSteps = EpochStat{Epoch: e.Epoch, Fault: p.faulty(e.Epoch)}, 0
	}
	es := &p.es
	es.TrainLoss = e.TrainLoss
	if steps := float64(p.epochSteps); steps > 0 {
		for g := range es.LowBit {
			es.LowBit[g] /= steps
		}
		es.Traffic /= steps
	}
	pol := p.loop.Agg.Policy()
	for _, g := range nn.Groups() {
		// The latch's mode: a summed rule's region is latched in its sum
		// mode, though Rule.Mode (the unlatched path's) is FP32 bypass.
		es.Modes[g] = cxl.Aggregate(pol[g].Rule.Format()).String()
	}
	es.ValAcc = e.ValAcc
	p.res.Epochs = append(p.res.Epochs, *es)
	if p.tc.Logf != nil {
		var low strings.Builder
		for _, g := range nn.Groups() {
			fmt.Fprintf(&low, " %v %.0f%%", g, 100*es.LowBit[g])
		}
		p.tc.Logf("%s seed %d epoch %d/%d: loss %.4f val acc %.4f, low-bit%s, traffic %.4f%s",
			p.cfg.Scenario, p.tc.Seed, e.Epoch, p.tc.Epochs, es.TrainLoss, es.ValAcc, low.String(), es.Traffic, map[bool]string{true: " (fault)"}[es.Fault])
	}
	return nil
}

// result closes the run's statistics.
func (p *run) result() *Result {
	res := p.res
	res.Steps = p.loop.Timing.Steps
	if res.Steps > 0 {
		res.LowBitSteps = float64(p.lowSteps) / float64(res.Steps)
		res.Traffic = p.trafficSum / float64(res.Steps)
	}
	if n := len(res.Epochs); n > 0 {
		res.Final = res.Epochs[n-1].ValAcc
		res.Settled = res.Epochs[n-1].Modes
	}
	if p.plane != nil {
		res.Actions = p.plane.Log()
		res.Alarms = p.plane.Alarms()
	}
	res.LatchOps = p.latch.n
	res.VelocityResets = p.loop.VelocityResets
	return res
}

// ModeTimeline expands the run's actions into the modes of each of its
// first steps steps: the groups' modes in index order, joined by "/"
// (e.g. "g-binary/fp32-bypass"). Every group starts on FP32 bypass, as
// the control plane's latches do.
func (r *Result) ModeTimeline(steps int) []string {
	out := make([]string, steps)
	names := Groups()
	cur := make(map[string]string, len(names))
	for _, g := range names {
		cur[g] = cxl.FP32Bypass.String()
	}
	modes := make([]string, len(names))
	ai := 0
	for s := range out {
		for ai < len(r.Actions) && r.Actions[ai].Step == int64(s) {
			cur[r.Actions[ai].Group] = r.Actions[ai].Mode.String()
			ai++
		}
		for i, g := range names {
			modes[i] = cur[g]
		}
		out[s] = strings.Join(modes, "/")
	}
	return out
}

// Calibration is the control thresholds derived from a fault-free FP32
// record of the workload (control.CalibrateCUSUM, control.CalibrateLadder),
// with the cosines the ladder was derived from.
type Calibration struct {
	// Seed and Steps identify the record: the run's seed and how many of
	// its first steps were used.
	Seed  uint64 `json:"seed"`
	Steps int    `json:"steps"`
	// Loss is the Supervisor's CUSUM calibration.
	Loss control.LossCalibration `json:"loss"`
	// Ladder is calibrated on the backbone's warm-up cosines, which are
	// WarmupBinary and WarmupTernary.
	Ladder        control.Ladder `json:"ladder"`
	WarmupBinary  float64        `json:"warmup_binary"`
	WarmupTernary float64        `json:"warmup_ternary"`
}

// Calibrate derives the control thresholds from the first steps steps of
// r, an always-FP32 pilot (fault-free over those steps, e.g. the steps
// before the fault window): the CUSUM from the losses after cc's warm-up,
// with cc's loss-average weight, and the ladder from the backbone's
// diagnostics at the end of the warm-up (Result.Warmup).
func Calibrate(r *Result, steps int, cc control.Config) (Calibration, error) {
	if r.Scenario != AlwaysFP32.String() {
		return Calibration{}, fmt.Errorf("pilot: calibrate on %s, want an %s record", r.Scenario, AlwaysFP32)
	}
	if steps > len(r.Losses) {
		return Calibration{}, fmt.Errorf("pilot: calibrate on %d steps, the record has %d", steps, len(r.Losses))
	}
	if r.Warmup == nil || int64(r.Warmup.Step) >= cc.WarmupSteps {
		return Calibration{}, fmt.Errorf("pilot: calibrate: the record has no diagnostics before step %d", cc.WarmupSteps)
	}
	lc, err := control.CalibrateCUSUM(r.Losses[:steps], cc.LossAlpha, int(cc.WarmupSteps))
	if err != nil {
		return Calibration{}, fmt.Errorf("pilot: %w", err)
	}
	bin, ter := r.Warmup.Binary.Groups[nn.Backbone], r.Warmup.Ternary.Groups[nn.Backbone]
	var cos [lowbit.NumFormats]float64
	cos[lowbit.Binary], cos[lowbit.Ternary] = bin, ter
	l, err := control.CalibrateLadder([]lowbit.Format{lowbit.Binary, lowbit.Ternary}, cos)
	if err != nil {
		return Calibration{}, fmt.Errorf("pilot: %w", err)
	}
	return Calibration{Seed: r.Seed, Steps: steps, Loss: lc, Ladder: l, WarmupBinary: bin, WarmupTernary: ter}, nil
}

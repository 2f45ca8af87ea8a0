// Package pilot runs the control-plane pilots of paper Sec. 8: virtual-worker
// training whose layer groups follow the controller's mode latches, with the
// control plane (package control) writing those latches from training-health
// telemetry, warm-up diagnostics and, optionally, network telemetry.
//
// A pilot is a closed loop at step granularity:
//
//	plane.Step(step)  ->  control.Apply (mode latches only)
//	forward/backward of W shards  ->  latched aggregation (FP32 mean or controller)
//	SGD with each group's learning rate (the low-bit rate on a low-bit latch)
//	plane.Step(loss); every DiagEvery steps plane.Step(diagnostics)
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
package pilot

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/train"
)

// Trace is one of the Fig. 6 traces.
type Trace uint8

const (
	// AlwaysFP32 keeps every latch on FP32 bypass (reference).
	AlwaysFP32 Trace = iota
	// AlwaysGBinary keeps every latch on G-Binary (reference).
	AlwaysGBinary
	// FP32Default starts on FP32 and admits low-bit modes through the
	// ladder (admission).
	FP32Default
	// GBinaryDefault runs G-Binary after warm-up and recovers to FP32 on
	// a Supervisor alarm (recovery).
	GBinaryDefault
)

var traceNames = [...]string{"always-fp32", "always-g-binary", "fp32-default", "g-binary-default"}

func (t Trace) String() string {
	if int(t) < len(traceNames) {
		return traceNames[t]
	}
	return fmt.Sprintf("Trace(%d)", uint8(t))
}

// ParseTrace accepts the names String returns.
func ParseTrace(s string) (Trace, error) {
	for i, n := range traceNames {
		if s == n {
			return Trace(i), nil
		}
	}
	return 0, fmt.Errorf("unknown trace %q (want always-fp32, always-g-binary, fp32-default or g-binary-default)", s)
}

// Traces lists the four traces of Fig. 6.
func Traces() []Trace { return []Trace{AlwaysFP32, AlwaysGBinary, FP32Default, GBinaryDefault} }

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
	Trace Trace
	// Train holds the model, workers, batch, epochs, learning rates and
	// seed; its Policy is ignored (the latches decide).
	Train train.Config
	// Control configures the plane for the controlled traces; its Groups
	// are set to backbone and head, and Default from the trace.
	Control control.Config
	// Gate is G-Ternary's gate in the latched regions.
	Gate lowbit.Gate
	// DiagEvery is the step interval of cosine diagnostics (0: never).
	DiagEvery int
	// Fault is the degradation window.
	Fault Fault
	// Telemetry, when not nil, is replayed to the Commander: sample t is
	// delivered once the step clock passes t.TimeNS + TelemetryDelayNS.
	Telemetry        []control.Telemetry
	TelemetryDelayNS int64
	// StepNS is the step clock the telemetry is matched against.
	StepNS int64
}

// EpochStat is one epoch of a pilot.
type EpochStat struct {
	Epoch     int     `json:"epoch"`
	TrainLoss float64 `json:"train_loss"`
	ValAcc    float64 `json:"val_acc"`
	// LowBit is the share of the epoch's steps on which each group ran a
	// low-bit mode; Traffic the mean traffic ratio to FP32 (paper
	// accounting).
	LowBitBackbone float64 `json:"lowbit_backbone"`
	LowBitHead     float64 `json:"lowbit_head"`
	Traffic        float64 `json:"traffic"`
	// Modes is each group's mode at the end of the epoch.
	Backbone string `json:"backbone_mode"`
	Head     string `json:"head_mode"`
	Fault    bool   `json:"fault"`
}

// Result is a finished pilot.
type Result struct {
	Trace string `json:"trace"`
	Seed  uint64 `json:"seed"`
	Steps int    `json:"steps"`
	// LowBitSteps is the share of steps on which any group ran low-bit
	// (the paper's "steps low-bit").
	LowBitSteps float64 `json:"lowbit_steps"`
	// Traffic is the mean per-step traffic ratio to FP32 (paper accounting).
	Traffic  float64          `json:"traffic"`
	Final    float64          `json:"final_acc"`
	Epochs   []EpochStat      `json:"epochs"`
	Actions  []control.Action `json:"actions,omitempty"`
	Alarms   int              `json:"alarms"`
	Diags    []Diag           `json:"diags,omitempty"`
	Settled  [2]string        `json:"settled"` // final backbone and head modes
	Warmup   *Diag            `json:"warmup,omitempty"`
	LatchOps int              `json:"latch_writes"`
	// VelocityResets counts group rule switches, at each of which the
	// group's SGD velocity was cleared.
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

// Run runs one pilot on sets.
func Run(ctx context.Context, cfg Config, sets *data.Sets) (*Result, error) {
	tc := cfg.Train
	tc.Policy = train.Uniform(train.RuleSpec{Rule: train.FP32})
	if err := tc.Validate(); err != nil {
		return nil, fmt.Errorf("pilot: %w", err)
	}
	if cfg.Fault.Rate < 0 || cfg.Fault.Rate > 1 || math.IsNaN(cfg.Fault.Rate) {
		return nil, fmt.Errorf("pilot: fault rate %v out of [0, 1]", cfg.Fault.Rate)
	}
	if cfg.DiagEvery < 0 {
		return nil, fmt.Errorf("pilot: diag_every %d is negative", cfg.DiagEvery)
	}
	if sets == nil || sets.Train == nil || sets.Test == nil {
		return nil, fmt.Errorf("pilot: no training or test split")
	}
	tr := sets.Train
	m, err := train.NewModel(tc, tr, tc.Seed)
	if err != nil {
		return nil, fmt.Errorf("pilot: %w", err)
	}
	st := train.NewStepper(tc, m, tr)
	if tr.Len() < len(st.Y) {
		return nil, fmt.Errorf("pilot: training split smaller than one batch of %d", len(st.Y))
	}
	w := len(st.Reps)
	reps := st.Reps
	opt := nn.NewSGD(m, tc.LR, tc.Momentum, tc.WeightDecay)
	agg, err := train.NewLatchedAggregator(m, w, tc.Layout, cfg.Gate)
	if err != nil {
		return nil, fmt.Errorf("pilot: %w", err)
	}
	lw, regions := agg.Latches()
	latch := &latchCounter{w: lw}

	var plane *control.Plane
	fixed := cxl.FP32Bypass
	switch cfg.Trace {
	case AlwaysFP32:
	case AlwaysGBinary:
		fixed = cxl.GBinary
	case FP32Default, GBinaryDefault:
		cc := cfg.Control
		cc.Groups = []string{"backbone", "head"}
		cc.Default = control.FP32Default
		if cfg.Trace == GBinaryDefault {
			cc.Default, cc.LowBitMode = control.LowBitDefault, cxl.GBinary
		}
		if plane, err = control.New(cc); err != nil {
			return nil, fmt.Errorf("pilot: %w", err)
		}
	default:
		return nil, fmt.Errorf("pilot: unknown trace %d", cfg.Trace)
	}
	if plane == nil {
		for g, ids := range regions {
			for _, id := range ids {
				if err := latch.SetMode(id, fixed, 0); err != nil {
					return nil, fmt.Errorf("pilot: latch %s: %w", g, err)
				}
			}
		}
	}

	res := &Result{Trace: cfg.Trace.String(), Seed: tc.Seed}
	dst := m.NewGrads()
	grads := st.Grads
	noise := rand.New(rand.NewPCG(tc.Seed, 0x6e6f6973))
	tel := cfg.Telemetry
	var lowSteps, step int
	var prev train.Policy
	var trafficSum float64
	for epoch := 1; epoch <= tc.Epochs; epoch++ {
		b, err := st.Batches(epoch)
		if err != nil {
			return nil, fmt.Errorf("pilot: %w", err)
		}
		fault := cfg.Fault.Rate > 0 && epoch >= cfg.Fault.StartEpoch && epoch <= cfg.Fault.EndEpoch
		var es EpochStat
		es.Epoch, es.Fault = epoch, fault
		steps := 0
		for n := b.Next(st.X, st.Y); n > 0; n = b.Next(st.X, st.Y) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			now := int64(step) * cfg.StepNS
			if plane != nil {
				for len(tel) > 0 && tel[0].TimeNS+cfg.TelemetryDelayNS <= now {
					if _, err := plane.Step(control.Event{Type: control.EvTelemetry, Telemetry: tel[0]}); err != nil {
						return nil, fmt.Errorf("pilot: step %d: %w", step, err)
					}
					tel = tel[1:]
				}
				acts, err := plane.Step(control.Event{Type: control.EvStep, Step: int64(step), TimeNS: now})
				if err != nil {
					return nil, fmt.Errorf("pilot: step %d: %w", step, err)
				}
				if err := control.Apply(latch, regions, acts); err != nil {
					return nil, fmt.Errorf("pilot: step %d: %w", step, err)
				}
			}
			if fault {
				for i := range st.Y[:n] {
					if noise.Float64() < cfg.Fault.Rate {
						st.Y[i] = noise.IntN(tr.Classes)
					}
				}
			}
			loss, _, err := st.Step(n)
			if err != nil {
				return nil, fmt.Errorf("pilot: %s epoch %d step %d: %w", cfg.Trace, epoch, step, err)
			}
			if err := agg.Aggregate(grads, dst); err != nil {
				return nil, fmt.Errorf("pilot: step %d: %w", step, err)
			}
			pol := agg.Policy()
			// A group whose rule changed starts with a clear velocity: the
			// velocity accumulates update directions, whose scale differs
			// by orders of magnitude between a sign vote (|d| = 1) and an
			// FP32 mean, so carrying it across a switch would turn the
			// last sign steps into a huge FP32 step (we saw training
			// diverge that way). A runtime switching precision would
			// re-initialise that optimizer state too.
			for g := range pol {
				if step > 0 && pol[g].Rule != prev[g].Rule {
					for i, prm := range m.Params {
						if int(prm.Group) == g {
							clear(opt.Vel[i])
						}
					}
					res.VelocityResets++
				}
			}
			prev = pol
			var lrs [2]float32
			low := false
			for g := range pol {
				lrs[g] = tc.LR
				if pol[g].Rule.Sign() {
					lrs[g] = tc.SignLR
					low = true
					if g == int(nn.Backbone) {
						es.LowBitBackbone++
					} else {
						es.LowBitHead++
					}
				}
			}
			for i, prm := range m.Params {
				opt.StepParam(i, dst[i], lrs[prm.Group])
			}
			tratio := train.PolicyTraffic(m, pol).Paper.Ratio
			trafficSum += tratio
			es.Traffic += tratio
			if low {
				lowSteps++
			}
			if plane != nil {
				if _, err := plane.Step(control.Event{Type: control.EvLoss, Step: int64(step), Loss: loss}); err != nil {
					return nil, fmt.Errorf("pilot: step %d: %w", step, err)
				}
				if cfg.DiagEvery > 0 && step%cfg.DiagEvery == 0 {
					bin, ter := train.StepCosines(m, grads)
					d := Diag{Step: step, Binary: bin, Ternary: ter}
					res.Diags = append(res.Diags, d)
					if res.Warmup == nil && int64(step) >= cfg.Control.WarmupSteps-int64(cfg.DiagEvery) {
						dd := d
						res.Warmup = &dd
					}
					for _, ev := range []control.Event{
						{Type: control.EvDiag, Step: int64(step), Group: "backbone", CosBinary: bin.Backbone, CosTernary: ter.Backbone},
						{Type: control.EvDiag, Step: int64(step), Group: "head", CosBinary: bin.Head, CosTernary: ter.Head},
					} {
						if _, err := plane.Step(ev); err != nil {
							return nil, fmt.Errorf("pilot: step %d: %w", step, err)
						}
					}
				}
			}
			es.TrainLoss += loss
			steps++
			step++
		}
		if steps > 0 {
			es.TrainLoss /= float64(steps)
			es.LowBitBackbone /= float64(steps)
			es.LowBitHead /= float64(steps)
			es.Traffic /= float64(steps)
		}
		pol := agg.Policy()
		es.Backbone, es.Head = pol[nn.Backbone].Rule.Mode().String(), pol[nn.Head].Rule.Mode().String()
		_, va, err := train.Evaluate(reps, sets.Test, 8*64)
		if err != nil {
			return nil, fmt.Errorf("pilot: %w", err)
		}
		es.ValAcc = va
		res.Epochs = append(res.Epochs, es)
		if tc.Logf != nil {
			tc.Logf("%s seed %d epoch %d/%d: loss %.4f val acc %.4f, low-bit backbone %.0f%% head %.0f%%, traffic %.4f%s",
				cfg.Trace, tc.Seed, epoch, tc.Epochs, es.TrainLoss, va, 100*es.LowBitBackbone, 100*es.LowBitHead, es.Traffic, map[bool]string{true: " (fault)"}[fault])
		}
	}
	res.Steps = step
	if step > 0 {
		res.LowBitSteps = float64(lowSteps) / float64(step)
		res.Traffic = trafficSum / float64(step)
	}
	if n := len(res.Epochs); n > 0 {
		res.Final = res.Epochs[n-1].ValAcc
		res.Settled = [2]string{res.Epochs[n-1].Backbone, res.Epochs[n-1].Head}
	}
	if plane != nil {
		res.Actions = plane.Log()
		res.Alarms = plane.Alarms()
	}
	res.LatchOps = latch.n
	return res, nil
}

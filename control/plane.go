package control

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// Default is what a group runs once warm-up is over and nothing argues
// against it: the two policies of the paper's Fig. 6 pilot.
type Default uint8

const (
	// FP32Default keeps a group on FP32 until the admission ladder, fed
	// with warm-up diagnostics, admits a low-bit mode (admission).
	FP32Default Default = iota
	// LowBitDefault runs the configured low-bit mode after warm-up and
	// relies on the Supervisor to fall back to FP32 (recovery).
	LowBitDefault
)

func (d Default) String() string {
	if d == LowBitDefault {
		return "lowbit-default"
	}
	return "fp32-default"
}

// Config is the control plane's configuration. Steps are training steps;
// times are nanoseconds of the caller's clock.
type Config struct {
	// Groups are the layer groups the plane controls, e.g. backbone, head.
	Groups []string
	// Default selects admission (FP32Default) or recovery (LowBitDefault).
	Default Default
	// LowBitMode is the mode LowBitDefault runs (G-Binary in the paper).
	LowBitMode cxl.Mode
	// WarmupSteps run on FP32 before any admission: every run starts on
	// FP32 (paper Sec. 3, "Admission and recovery").
	WarmupSteps int64
	// Ladder maps diagnostics to a mode: its rungs are tried lowest
	// traffic first (Ladder.Admit). DefaultConfig has the paper's two
	// (DefaultLadder); INT8 and BFP8 rungs make a ladder on which groups
	// settle on different formats (a mixed plan).
	Ladder Ladder
	// Demote lets a diagnostic move an admitted group up the ladder, rung
	// by rung: when the cosine of its own rung's format fails that rung,
	// the group falls back to the lowest rung above it that passes, or to
	// FP32 (rejected) when none does. The paper's ladder has no such step
	// (DefaultConfig leaves it off): there only the Supervisor returns an
	// admitted group to FP32.
	Demote bool
	// LossK and LossH are the CUSUM slack and threshold on the relative
	// loss excess; LossAlpha is the weight of the exponential loss average
	// the excess is measured against.
	LossK, LossH, LossAlpha float64
	// CooldownSteps stay on FP32 after a recovery alarm; CalibrationSteps
	// follow, still on FP32, before re-admission is considered.
	CooldownSteps, CalibrationSteps int64
	// Commander gates low-bit relief on network telemetry.
	Commander CommanderConfig
}

// DefaultConfig returns the configuration the pilots start from; each value
// is documented on its field and the calibration notes of Ladder.
func DefaultConfig(groups ...string) Config {
	return Config{
		Groups:           groups,
		Default:          FP32Default,
		LowBitMode:       cxl.Aggregate(lowbit.Binary),
		WarmupSteps:      100,
		Ladder:           DefaultLadder(),
		LossK:            0.02,
		LossH:            0.5,
		LossAlpha:        0.02,
		CooldownSteps:    100,
		CalibrationSteps: 20,
		Commander:        CommanderConfig{Enabled: false, RelievePressure: 0.7, ReleasePressure: 0.4, StaleNS: 0},
	}
}

// Validate checks every field and names the bad one.
func (c Config) Validate() error {
	if len(c.Groups) == 0 {
		return errors.New("control: config: no groups")
	}
	seen := map[string]bool{}
	for _, g := range c.Groups {
		if g == "" || strings.ContainsAny(g, " \t\n,=") {
			return fmt.Errorf("control: config: bad group name %q", g)
		}
		if seen[g] {
			return fmt.Errorf("control: config: duplicate group %q", g)
		}
		seen[g] = true
	}
	if c.Default != FP32Default && c.Default != LowBitDefault {
		return fmt.Errorf("control: config: unknown default %d", c.Default)
	}
	if !c.LowBitMode.LowBit() {
		return fmt.Errorf("control: config: low-bit mode %v is not a low-bit mode", c.LowBitMode)
	}
	if c.WarmupSteps < 0 || c.CooldownSteps < 0 || c.CalibrationSteps < 0 {
		return errors.New("control: config: negative warm-up, cooldown or calibration steps")
	}
	for name, v := range map[string]float64{"loss_k": c.LossK, "loss_h": c.LossH} {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("control: config: %s = %v must be finite and non-negative", name, v)
		}
	}
	if !(c.LossAlpha > 0 && c.LossAlpha <= 1) {
		return fmt.Errorf("control: config: loss_alpha = %v must be in (0, 1]", c.LossAlpha)
	}
	if err := c.Ladder.Validate(); err != nil {
		return fmt.Errorf("control: config: %w", err)
	}
	return c.Commander.Validate()
}

// EventType is the kind of an Event.
type EventType uint8

const (
	// EvStep starts training step Step at time TimeNS; the plane answers
	// with the modes this step's gradient buckets use.
	EvStep EventType = iota + 1
	// EvLoss reports the training loss of step Step.
	EvLoss
	// EvDiag reports diagnostics of one group at step Step: per format,
	// the cosine alignment of the format's aggregate with the FP32
	// aggregate (the paper's G-Binary and G-Ternary, and any other rung's).
	EvDiag
	// EvTelemetry delivers a network telemetry sample.
	EvTelemetry
	// EvNonFinite reports that the runtime found NaN or Inf in Group's
	// gradients at step Step (and kept those buckets on FP32, as the host
	// runtime does). An admitted group takes a recovery alarm, as on a
	// loss CUSUM alarm but for that group only: cooldown on FP32 from the
	// next step. Other phases already run FP32 and are unchanged.
	EvNonFinite
)

func (t EventType) String() string {
	switch t {
	case EvStep:
		return "step"
	case EvLoss:
		return "loss"
	case EvDiag:
		return "diag"
	case EvTelemetry:
		return "telemetry"
	case EvNonFinite:
		return "non-finite"
	}
	return fmt.Sprintf("EventType(%d)", uint8(t))
}

// Event is the one input of the control plane, as raft's Message is.
type Event struct {
	Type   EventType
	Step   int64
	TimeNS int64
	// Loss is the training loss (EvLoss).
	Loss float64
	// Group and Cos are the diagnostics (EvDiag): Cos holds, per format
	// other than FP32, the cosine of the format's aggregate of the group's
	// gradients with their FP32 mean (train.StepFormatCosines); a format
	// not in Cos was not measured and passes no rung. Group is also the
	// group of an EvNonFinite report.
	Group string
	Cos   map[lowbit.Format]float64
	// Telemetry is the sample (EvTelemetry).
	Telemetry Telemetry
}

// Action asks the edge to write a mode into a group's mode latch. It is
// the plane's only output: the control plane never reads or writes
// gradient payloads.
type Action struct {
	Step   int64
	Group  string
	Mode   cxl.Mode
	Reason string
}

func (a Action) String() string {
	return fmt.Sprintf("step %d: %s -> %v (%s)", a.Step, a.Group, a.Mode, a.Reason)
}

// Phase is a group's place in the admission and recovery cycle.
type Phase uint8

const (
	Warmup      Phase = iota // FP32 before any admission
	Admitted                 // a low-bit mode is admitted
	Rejected                 // the ladder found no low-bit mode safe; FP32
	Cooldown                 // FP32 after a recovery alarm
	Calibrating              // FP32, collecting diagnostics before re-admission
)

var phaseNames = [...]string{"warmup", "admitted", "rejected", "cooldown", "calibrating"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("Phase(%d)", uint8(p))
}

// diag is a group's latest diagnostics, NaN where a format was not
// measured (Ladder.Admit passes no rung on a NaN).
type diag struct {
	step int64
	cos  [lowbit.NumFormats]float64
	ok   bool
}

type groupState struct {
	name     string
	phase    Phase
	since    int64    // step the phase began
	admitted cxl.Mode // the ladder's (or the default's) low-bit choice
	alarm    string   // why the last recovery alarm was raised
	latched  cxl.Mode // the mode last written to the latch
	diag     diag
	steps    [cxl.NumModes]int64 // steps run in each mode
}

// Plane is the control plane: Predictor forecasts come in as
// configuration, the Commander reads network telemetry, the Supervisor
// reads training health, and the admission ladder maps diagnostics to
// modes. It is deterministic and single-threaded: no goroutines, clocks or
// I/O; callers feed Events to Step and apply the returned Actions.
type Plane struct {
	cfg    Config
	groups []*groupState
	byName map[string]*groupState
	step   int64 // last EvStep, -1 before the first
	cusum  CUSUM
	loss   lossAverage
	alarms int
	cmd    commander
	log    []Action
}

// New returns a plane with every group on FP32 in warm-up.
func New(cfg Config) (*Plane, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Plane{cfg: cfg, byName: map[string]*groupState{}, step: -1}
	p.cusum = CUSUM{K: cfg.LossK, H: cfg.LossH}
	p.cmd = commander{cfg: cfg.Commander, lastTime: math.MinInt64}
	for _, g := range cfg.Groups {
		gs := &groupState{name: g, phase: Warmup, latched: cxl.FP32Bypass, diag: diag{cos: notMeasured()}}
		p.groups = append(p.groups, gs)
		p.byName[g] = gs
	}
	return p, nil
}

// Step feeds one event to the plane and returns the mode writes it asks
// for. A bad event (a NaN, a step or time that goes backwards, an unknown
// group) returns an error and changes nothing, except that bad telemetry
// makes the Commander distrust telemetry, so low-bit relief falls back to
// FP32 until a good sample arrives.
func (p *Plane) Step(ev Event) ([]Action, error) {
	switch ev.Type {
	case EvStep:
		if ev.Step <= p.step {
			return nil, fmt.Errorf("control: step %d after step %d", ev.Step, p.step)
		}
		p.step = ev.Step
		return p.decide(ev.TimeNS), nil
	case EvLoss:
		return nil, p.observeLoss(ev)
	case EvDiag:
		g, ok := p.byName[ev.Group]
		if !ok {
			return nil, fmt.Errorf("control: diagnostics for unknown group %q", ev.Group)
		}
		d, err := diagOf(ev)
		if err != nil {
			return nil, err
		}
		g.diag = d
		return nil, nil
	case EvTelemetry:
		return nil, p.cmd.observe(ev.Telemetry)
	case EvNonFinite:
		g, ok := p.byName[ev.Group]
		if !ok {
			return nil, fmt.Errorf("control: NaN/Inf report for unknown group %q", ev.Group)
		}
		if g.phase == Admitted {
			p.raise(g, "NaN/Inf gradients reported")
			p.alarms++
		}
		return nil, nil
	}
	return nil, fmt.Errorf("control: unknown event type %d", ev.Type)
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// diagOf checks an EvDiag's cosines (at least one, each of a format other
// than FP32, finite and in [-1, 1]) and returns them as a diag.
func diagOf(ev Event) (diag, error) {
	d := diag{step: ev.Step, ok: true, cos: notMeasured()}
	if len(ev.Cos) == 0 {
		return diag{}, fmt.Errorf("control: diagnostics for %s at step %d carry no cosine", ev.Group, ev.Step)
	}
	for _, f := range lowbit.Formats() {
		c, ok := ev.Cos[f]
		if !ok {
			continue
		}
		if f == lowbit.FP32 {
			return diag{}, fmt.Errorf("control: diagnostics for %s at step %d: an FP32 cosine is no rung's", ev.Group, ev.Step)
		}
		if !finite(c) || math.Abs(c) > 1+1e-9 {
			return diag{}, fmt.Errorf("control: diagnostics for %s at step %d: %v cosine %v is not in [-1, 1]", ev.Group, ev.Step, f, c)
		}
		d.cos[f] = c
	}
	for f := range ev.Cos {
		if !f.Valid() {
			return diag{}, fmt.Errorf("control: diagnostics for %s at step %d: unknown format %v", ev.Group, ev.Step, f)
		}
	}
	return d, nil
}

// lossAverage is the Supervisor's slow exponential average L of past
// losses, which starts at the first loss: the CUSUM observes each loss's
// relative excess over it, and the CUSUM calibration replays the same.
type lossAverage struct {
	l       float64
	started bool
}

// excess is loss_t / L_{t-1} - 1, with L started at loss when no loss has
// been added; ok is false (and x 0) while L is 0.
func (a *lossAverage) excess(loss float64) (x float64, ok bool) {
	l := a.l
	if !a.started {
		l = loss
	}
	if l <= 0 {
		return 0, false
	}
	return loss/l - 1, true
}

// add folds loss into L with weight alpha.
func (a *lossAverage) add(loss, alpha float64) {
	if !a.started {
		a.l, a.started = loss, true
	}
	a.l = (1-alpha)*a.l + alpha*loss
}

// observeLoss runs the Supervisor's CUSUM on the relative loss excess.
func (p *Plane) observeLoss(ev Event) error {
	if !finite(ev.Loss) || ev.Loss < 0 {
		return fmt.Errorf("control: loss %v at step %d is not a finite non-negative number", ev.Loss, ev.Step)
	}
	x, _ := p.loss.excess(ev.Loss)
	alarm, err := p.cusum.Observe(x)
	if err != nil {
		return err
	}
	p.loss.add(ev.Loss, p.cfg.LossAlpha)
	if !alarm {
		return nil
	}
	p.cusum.Reset()
	raised := false
	for _, g := range p.groups {
		if g.phase == Admitted {
			raised = true
			p.raise(g, "loss CUSUM exceeded threshold")
		}
	}
	if raised {
		p.alarms++
	}
	return nil
}

// raise sends an admitted group to cooldown from the next step.
func (p *Plane) raise(g *groupState, why string) {
	g.phase, g.since, g.alarm = Cooldown, p.step+1, why
}

// decide runs the per-group state machine for the step that starts now and
// returns the latch writes.
func (p *Plane) decide(now int64) []Action {
	var acts []Action
	relief, why := p.cmd.relief(now)
	for _, g := range p.groups {
		reason := p.advance(g)
		want := cxl.FP32Bypass
		if g.phase == Admitted {
			if relief {
				want = g.admitted
				reason = joinReason(reason, why)
			} else {
				reason = joinReason(reason, why)
			}
		}
		if want != g.latched {
			a := Action{Step: p.step, Group: g.name, Mode: want, Reason: reason}
			acts = append(acts, a)
			p.log = append(p.log, a)
			g.latched = want
		}
		g.steps[g.latched]++
	}
	return acts
}

func joinReason(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// advance moves g through its phases at the current step and returns why,
// if anything changed.
func (p *Plane) advance(g *groupState) string {
	s := p.step
	switch g.phase {
	case Warmup:
		if s < p.cfg.WarmupSteps {
			return ""
		}
		return p.admit(g, "warm-up over")
	case Cooldown:
		if s-g.since >= p.cfg.CooldownSteps {
			g.phase, g.since = Calibrating, s
			return "recovery alarm: cooldown over, calibrating"
		}
		if s == g.since {
			return "recovery alarm: " + g.alarm + ", cooldown on FP32"
		}
	case Calibrating:
		if s-g.since >= p.cfg.CalibrationSteps {
			return p.admit(g, "calibration over")
		}
	case Rejected:
		if g.diag.ok && g.diag.step > g.since {
			return p.admit(g, "new diagnostics")
		}
	case Admitted:
		if p.cfg.Demote && g.diag.ok && g.diag.step > g.since {
			return p.demote(g)
		}
	}
	return ""
}

// demote judges an admitted group's rung on diagnostics newer than its
// admission (Config.Demote): when the cosine of the group's format is
// below its rung's threshold, the group falls back to the lowest rung
// above that passes, or to FP32 (rejected). A format not measured, or a
// group on a mode that is no rung of the ladder (LowBitDefault's), stays.
func (p *Plane) demote(g *groupState) string {
	f := g.admitted.Format()
	min, ok := p.cfg.Ladder.Min(f)
	c := g.diag.cos[f]
	if !ok || !(c < min) {
		return ""
	}
	to, rung := p.cfg.Ladder.above(f).Admit(g.diag.cos)
	g.since = p.step
	if to == lowbit.FP32 {
		g.phase = Rejected
	} else {
		g.admitted = cxl.Aggregate(to)
	}
	return fmt.Sprintf("new diagnostics: %s cosine %s < %s, fall back; %s", f.Label(),
		strconv.FormatFloat(c, 'f', 3, 64), strconv.FormatFloat(min, 'f', 3, 64), rung)
}

// admit applies the admission rule (Ladder.Admit) on the latest
// diagnostics for FP32Default; LowBitDefault (the recovery pilot) admits
// its configured mode without a ladder.
func (p *Plane) admit(g *groupState, why string) string {
	if p.cfg.Default == LowBitDefault {
		g.phase, g.since, g.admitted = Admitted, p.step, p.cfg.LowBitMode
		return why + ": " + p.cfg.LowBitMode.String() + " by default"
	}
	f, rung := p.cfg.Ladder.Admit(g.diag.cos)
	g.since = p.step
	if f == lowbit.FP32 {
		g.phase = Rejected
	} else {
		g.phase = Admitted
		g.admitted = cxl.Aggregate(f)
	}
	return why + ": " + rung
}

// Mode returns the mode last written for group g.
func (p *Plane) Mode(group string) (cxl.Mode, bool) {
	g, ok := p.byName[group]
	if !ok {
		return 0, false
	}
	return g.latched, true
}

// GroupStatus is a snapshot of one group.
type GroupStatus struct {
	Group string
	Phase Phase
	Mode  cxl.Mode
	// Steps counts the steps run in each mode, indexed by cxl.Mode.
	Steps [cxl.NumModes]int64
}

// Status returns every group's state, in configuration order.
func (p *Plane) Status() []GroupStatus {
	out := make([]GroupStatus, len(p.groups))
	for i, g := range p.groups {
		out[i] = GroupStatus{Group: g.name, Phase: g.phase, Mode: g.latched, Steps: g.steps}
	}
	return out
}

// Alarms returns how many recovery alarms returned low-bit groups to FP32.
func (p *Plane) Alarms() int { return p.alarms }

// Log returns every action taken so far.
func (p *Plane) Log() []Action { return append([]Action(nil), p.log...) }

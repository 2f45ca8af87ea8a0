package train

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/neuronfabric/nfabric/usage"
)

// ScheduleKind is the shape of a learning-rate schedule after its
// warm-up.
type ScheduleKind int

// The schedule kinds; the zero value is Constant.
const (
	// Constant keeps every rate at its value (the paper's runs say
	// nothing; every run before schedules existed was constant).
	Constant ScheduleKind = iota
	// Cosine decays the factor from 1 to Schedule.Floor along half a
	// cosine over the steps after the warm-up (Loshchilov and Hutter's
	// SGDR without restarts; PyTorch's CosineAnnealingLR stepped every
	// batch).
	Cosine
	// StepDecay multiplies the factor by Schedule.Gamma at each of
	// Schedule.At's epochs (PyTorch's MultiStepLR stepped every epoch).
	StepDecay
)

var scheduleKindNames = [...]string{"constant", "cosine", "step"}

func (k ScheduleKind) String() string {
	if k < 0 || int(k) >= len(scheduleKindNames) {
		return fmt.Sprintf("schedule(%d)", int(k))
	}
	return scheduleKindNames[k]
}

// Schedule is the learning-rate schedule of a run. Each step, every
// group's rate (Config.RuleLR of the rule it ran) is multiplied by
// Factor of the step's place in the run; the factor depends on the step
// alone, never on the rule, so every policy of a seed follows the same
// schedule (the policies stay paired), and a resumed run continues it
// exactly. The zero value is constant: the factor is 1 on every step.
//
// With T the run's steps (Config.Epochs × the batches of an epoch), t the
// step's index from 0 and w the warm-up's steps (Warmup epochs, rounded
// to whole steps):
//
//	warm-up (t < w)   f = (t+1)/w
//	constant          f = 1
//	cosine            f = Floor + (1 − Floor)·(1 + cos(π·(t − w)/(T − w)))/2
//	step decay        f = Gamma^k, k = the milestones of At at or before the step's epoch
//
// so the warm-up climbs linearly to the peak (PyTorch's LinearLR with
// start_factor 1/w over w − 1 steps) and the cosine starts at the peak on
// the first step after it. Step decay without At decays after half and
// after three quarters of the epochs (At = {⌊E/2⌋+1, ⌊3E/4⌋+1}).
type Schedule struct {
	Kind ScheduleKind
	// Warmup is the linear warm-up in epochs (0: none); it must end
	// before the run's last epoch.
	Warmup float64
	// Floor is cosine's last factor, a fraction of the peak in [0, 1).
	Floor float64
	// Gamma is step decay's factor per milestone, in (0, 1]; 0 means 0.1.
	Gamma float64
	// At are step decay's milestones: the 1-based epochs from which the
	// factor is multiplied by Gamma once more, increasing, each in
	// [2, Epochs]; nil means half and three quarters of the run.
	At []int
}

// defaultGamma is step decay's factor when Schedule.Gamma is 0: a tenfold
// decay, the usual choice for SGD on ResNets (He et al. decay by 10 at
// 32k and 48k iterations).
const defaultGamma = 0.1

// IsConstant reports whether s leaves every rate as it is: constant with
// no warm-up.
func (s Schedule) IsConstant() bool { return s.Kind == Constant && s.Warmup == 0 }

// gamma is step decay's factor per milestone.
func (s Schedule) gamma() float64 {
	if s.Gamma == 0 {
		return defaultGamma
	}
	return s.Gamma
}

// milestones are step decay's epochs for a run of epochs epochs.
func (s Schedule) milestones(epochs int) []int {
	if s.At != nil {
		return s.At
	}
	return []int{epochs/2 + 1, 3*epochs/4 + 1}
}

// warmupSteps is the warm-up in whole steps (at least 1 when Warmup > 0).
func (s Schedule) warmupSteps(batches int) int {
	if s.Warmup <= 0 {
		return 0
	}
	return max(1, int(math.Round(s.Warmup*float64(batches))))
}

// Factor is the multiplier of every rate on step `step` (0-based, across
// epochs) of a run of epochs epochs of batches steps each. It is 1 for a
// constant schedule; s must have passed Validate for epochs.
func (s Schedule) Factor(step, batches, epochs int) float64 {
	if w := s.warmupSteps(batches); step < w {
		return float64(step+1) / float64(w)
	}
	switch s.Kind {
	case Cosine:
		w, total := s.warmupSteps(batches), batches*epochs
		if total <= w {
			return 1
		}
		return s.Floor + (1-s.Floor)*(1+math.Cos(math.Pi*float64(step-w)/float64(total-w)))/2
	case StepDecay:
		epoch := step/batches + 1
		f := 1.0
		for _, m := range s.milestones(epochs) {
			if epoch >= m {
				f *= s.gamma()
			}
		}
		return f
	}
	return 1
}

// Validate checks s for a run of epochs epochs, naming the bad setting; a
// schedule the user asked for that cannot apply is a usage error.
func (s Schedule) Validate(epochs int) error {
	switch {
	case s.Kind < Constant || s.Kind > StepDecay:
		return usage.Errorf("schedule kind %d: want constant, cosine or step", int(s.Kind))
	case math.IsNaN(s.Warmup) || math.IsInf(s.Warmup, 0) || s.Warmup < 0:
		return usage.Errorf("schedule %s: warm-up %v epochs must be a number >= 0", s, s.Warmup)
	case s.Warmup > 0 && s.Warmup >= float64(epochs):
		return usage.Errorf("schedule %s: the warm-up of %g epochs must end before the last of %d epochs", s, s.Warmup, epochs)
	case math.IsNaN(s.Floor) || s.Floor < 0 || s.Floor >= 1:
		return usage.Errorf("schedule %s: floor %v must be in [0, 1)", s, s.Floor)
	case s.Floor != 0 && s.Kind != Cosine:
		return usage.Errorf("schedule %s: floor is cosine's setting", s)
	case math.IsNaN(s.Gamma) || s.Gamma < 0 || s.Gamma > 1:
		return usage.Errorf("schedule %s: gamma %v must be in (0, 1]", s, s.Gamma)
	case (s.Gamma != 0 || s.At != nil) && s.Kind != StepDecay:
		return usage.Errorf("schedule %s: gamma and at are step decay's settings", s)
	}
	if s.Kind != StepDecay {
		return nil
	}
	at := s.milestones(epochs)
	for i, m := range at {
		if m < 2 || m > epochs || (i > 0 && m <= at[i-1]) {
			return usage.Errorf("schedule %s: milestones %v must increase, each in [2, %d] (the epochs from which the rate decays)", s, at, epochs)
		}
	}
	return nil
}

// String writes s in ParseSchedule's grammar: "constant", "cosine",
// "cosine:warmup=1:floor=0.01", "step:gamma=0.1:at=6+8", ...
func (s Schedule) String() string {
	var b strings.Builder
	b.WriteString(s.Kind.String())
	if s.Warmup != 0 {
		fmt.Fprintf(&b, ":warmup=%g", s.Warmup)
	}
	if s.Floor != 0 {
		fmt.Fprintf(&b, ":floor=%g", s.Floor)
	}
	if s.Gamma != 0 {
		fmt.Fprintf(&b, ":gamma=%g", s.Gamma)
	}
	if s.At != nil {
		at := make([]string, len(s.At))
		for i, m := range s.At {
			at[i] = strconv.Itoa(m)
		}
		fmt.Fprintf(&b, ":at=%s", strings.Join(at, "+"))
	}
	return b.String()
}

// ParseSchedule reads a schedule: a kind (constant, cosine, step) and
// then any of its settings as ":key=value": warmup=EPOCHS (every kind),
// floor=F (cosine), gamma=G and at=E1+E2+... (step). "" is constant. The
// settings' ranges are checked by Validate, which needs the run's epochs.
func ParseSchedule(text string) (Schedule, error) {
	var s Schedule
	if strings.TrimSpace(text) == "" {
		return s, nil
	}
	parts := strings.Split(strings.TrimSpace(text), ":")
	k := slices.Index(scheduleKindNames[:], parts[0])
	if k < 0 {
		return s, usage.Errorf("schedule %q: kind %q: want constant, cosine or step", text, parts[0])
	}
	s.Kind = ScheduleKind(k)
	seen := map[string]bool{}
	for _, p := range parts[1:] {
		key, val, ok := strings.Cut(p, "=")
		if !ok || seen[key] {
			return s, usage.Errorf("schedule %q: setting %q: want key=value, each key once", text, p)
		}
		seen[key] = true
		var err error
		switch key {
		case "warmup":
			s.Warmup, err = parseFinite(val)
		case "floor":
			s.Floor, err = parseFinite(val)
		case "gamma":
			s.Gamma, err = parseFinite(val)
			if err == nil && s.Gamma == 0 {
				err = fmt.Errorf("gamma 0 stops training")
			}
		case "at":
			s.At = []int{}
			for _, e := range strings.Split(val, "+") {
				m, perr := strconv.Atoi(e)
				if perr != nil {
					err = fmt.Errorf("milestone %q is not an epoch", e)
					break
				}
				s.At = append(s.At, m)
			}
		default:
			return s, usage.Errorf("schedule %q: unknown setting %q (warmup, floor, gamma, at)", text, key)
		}
		if err != nil {
			return s, usage.Errorf("schedule %q: %s: %v", text, key, err)
		}
	}
	return s, nil
}

// parseFinite parses a finite float.
func parseFinite(v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a finite number", v)
	}
	return f, nil
}

package control

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/neuronfabric/nfabric/lowbit"
)

// ScriptLine is one line of a control scenario script, the format of
// control/testdata (in the manner of raft's interaction tests), which the
// plane's own tests and the control service's tests both replay:
//
//	config key=value ...           groups= default=fp32|lowbit warmup= cooldown= calibration= k= h= alpha=
//	                               commander=on relieve= release= stale= binary_min= ternary_min=
//	                               rungs=FORMAT:MIN,... (ParseLadder) demote=on
//	step N [TIME]                  EvStep
//	loss N VALUE                   EvLoss
//	diag N GROUP COSBIN COSTER [FORMAT=COS ...]
//	                               EvDiag: G-Binary's and G-Ternary's cosines, then other formats'
//	telemetry TIME DEMAND CAP RATE EvTelemetry
//	nonfinite N GROUP              EvNonFinite
//	expect GROUP MODE              the group's latched mode
//	expect-phase GROUP PHASE
//	expect-alarms N
//	expect-error EVENT...          the event must be rejected
//
// Blank lines and lines starting with # are skipped.
type ScriptLine struct {
	Line int    // 1-based line number
	Text string // the line, trimmed
	// Op is "config", "event", "expect", "expect-phase", "expect-alarms"
	// or "expect-error".
	Op     string
	Config Config   // Op "config": DefaultConfig with the line's keys
	Event  Event    // Op "event" and "expect-error"
	Args   []string // the fields after Op for the other expectations
}

// ParseScript reads a scenario script. An unknown key, event or
// expectation, a malformed number or a missing field is an error naming
// the line.
func ParseScript(r io.Reader) ([]ScriptLine, error) {
	var out []ScriptLine
	sc := bufio.NewScanner(r)
	for ln := 1; sc.Scan(); ln++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		l, err := parseScriptLine(strings.Fields(text))
		if err != nil {
			return nil, fmt.Errorf("script line %d %q: %w", ln, text, err)
		}
		l.Line, l.Text = ln, text
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	return out, nil
}

func parseScriptLine(f []string) (ScriptLine, error) {
	l := ScriptLine{Op: f[0]}
	var err error
	switch f[0] {
	case "config":
		l.Config, err = scriptConfig(f[1:])
	case "expect", "expect-phase":
		if len(f) != 3 {
			return l, fmt.Errorf("%s wants GROUP and a value", f[0])
		}
		l.Args = f[1:]
	case "expect-alarms":
		if len(f) != 2 {
			return l, fmt.Errorf("expect-alarms wants N")
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			return l, err
		}
		l.Args = f[1:]
	case "expect-error":
		if len(f) < 2 {
			return l, fmt.Errorf("expect-error wants an event")
		}
		l.Event, err = scriptEvent(f[1:])
	default:
		l.Op = "event"
		l.Event, err = scriptEvent(f)
	}
	return l, err
}

func scriptConfig(kv []string) (Config, error) {
	cfg := DefaultConfig()
	for _, f := range kv {
		k, v, _ := strings.Cut(f, "=")
		num := 0.0
		if k != "groups" && k != "default" && k != "commander" && k != "rungs" && k != "demote" {
			var err error
			if num, err = strconv.ParseFloat(v, 64); err != nil {
				return cfg, fmt.Errorf("config %s: %w", k, err)
			}
		}
		switch k {
		case "groups":
			cfg.Groups = strings.Split(v, ",")
		case "default":
			if v == "lowbit" {
				cfg.Default = LowBitDefault
			}
		case "warmup":
			cfg.WarmupSteps = int64(num)
		case "cooldown":
			cfg.CooldownSteps = int64(num)
		case "calibration":
			cfg.CalibrationSteps = int64(num)
		case "k":
			cfg.LossK = num
		case "h":
			cfg.LossH = num
		case "alpha":
			cfg.LossAlpha = num
		case "commander":
			cfg.Commander.Enabled = v == "on"
		case "relieve":
			cfg.Commander.RelievePressure = num
		case "release":
			cfg.Commander.ReleasePressure = num
		case "stale":
			cfg.Commander.StaleNS = int64(num)
		case "binary_min":
			cfg.Ladder = cfg.Ladder.With(lowbit.Binary, num)
		case "ternary_min":
			cfg.Ladder = cfg.Ladder.With(lowbit.Ternary, num)
		case "rungs":
			r, err := ParseLadder(v)
			if err != nil {
				return cfg, fmt.Errorf("config rungs: %w", err)
			}
			cfg.Ladder = r
		case "demote":
			cfg.Demote = v == "on"
		default:
			return cfg, fmt.Errorf("unknown config key %q", k)
		}
	}
	return cfg, nil
}

// scriptFields is how many fields each event takes (its name included),
// at least and at most.
var scriptFields = map[string][2]int{"step": {2, 3}, "loss": {3, 3}, "diag": {5, 5 + lowbit.NumFormats}, "telemetry": {5, 5}, "nonfinite": {3, 3}}

func scriptEvent(f []string) (Event, error) {
	n, ok := scriptFields[f[0]]
	if !ok {
		return Event{}, fmt.Errorf("unknown event %q", f[0])
	}
	if len(f) < n[0] || len(f) > n[1] {
		return Event{}, fmt.Errorf("%s wants %d to %d fields, not %d", f[0], n[0]-1, n[1]-1, len(f)-1)
	}
	var bad error
	num := func(i int) float64 {
		if i >= len(f) {
			return 0
		}
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil && bad == nil {
			bad = err
		}
		return v
	}
	var ev Event
	switch f[0] {
	case "step":
		ev = Event{Type: EvStep, Step: int64(num(1)), TimeNS: int64(num(2))}
	case "loss":
		ev = Event{Type: EvLoss, Step: int64(num(1)), Loss: num(2)}
	case "diag":
		ev = Event{Type: EvDiag, Step: int64(num(1)), Group: f[2], Cos: map[lowbit.Format]float64{lowbit.Binary: num(3), lowbit.Ternary: num(4)}}
		for _, kv := range f[5:] {
			name, v, ok := strings.Cut(kv, "=")
			ft, err := lowbit.ParseFormat(name)
			if !ok || err != nil {
				return ev, fmt.Errorf("diag: %q is not FORMAT=COS", kv)
			}
			c, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return ev, fmt.Errorf("diag %s: %w", name, err)
			}
			ev.Cos[ft] = c
		}
	case "telemetry":
		ev = Event{Type: EvTelemetry, Telemetry: Telemetry{TimeNS: int64(num(1)), DemandGBps: num(2), CapacityGBps: num(3), LineReads: num(4)}}
	case "nonfinite":
		ev = Event{Type: EvNonFinite, Step: int64(num(1)), Group: f[2]}
	}
	return ev, bad
}

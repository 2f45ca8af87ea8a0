package wire

import (
	"google.golang.org/protobuf/types/known/wrapperspb"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/cxl"
)

// ParseSessionConfig returns the control configuration of a wire session
// config, starting from control.DefaultConfig (the defaults of 'nfabric
// pilot') and overriding what is set, and the groups' parameter counts. The
// result is validated; errors name the field.
func ParseSessionConfig(field string, c *pb.SessionConfig) (control.Config, []uint64, error) {
	cfg := control.DefaultConfig()
	var params []uint64
	for _, g := range c.GetGroups() {
		cfg.Groups = append(cfg.Groups, g.GetName())
		params = append(params, g.GetParameters())
	}
	switch c.GetDefault() {
	case pb.Default_DEFAULT_FP32:
		cfg.Default = control.FP32Default
	case pb.Default_DEFAULT_LOWBIT:
		cfg.Default = control.LowBitDefault
	default:
		return cfg, nil, Fieldf(field+".default", "unknown default %d (want DEFAULT_FP32 or DEFAULT_LOWBIT)", int32(c.GetDefault()))
	}
	if c.GetLowbitMode() != pb.Mode_MODE_UNSPECIFIED {
		m, err := ParseMode(field+".lowbit_mode", c.GetLowbitMode())
		if err != nil {
			return cfg, nil, err
		}
		if !m.LowBit() {
			return cfg, nil, Fieldf(field+".lowbit_mode", "%v is not a low-bit mode", m)
		}
		cfg.LowBitMode = m
	}
	for _, o := range []struct {
		v   *wrapperspb.Int64Value
		dst *int64
	}{{c.GetWarmup(), &cfg.WarmupSteps}, {c.GetCooldown(), &cfg.CooldownSteps}, {c.GetCalibration(), &cfg.CalibrationSteps}} {
		if o.v != nil {
			*o.dst = o.v.GetValue()
		}
	}
	if r := c.GetLadderRungs(); r != nil {
		rungs, err := control.ParseLadder(r.GetValue())
		if err != nil {
			return cfg, nil, &FieldError{Field: field + ".ladder_rungs", Err: err}
		}
		cfg.Ladder = rungs
	}
	cfg.Demote = c.GetLadderDemote()
	for _, o := range []struct {
		v   *wrapperspb.DoubleValue
		dst *float64
	}{{c.GetCusumK(), &cfg.LossK}, {c.GetCusumH(), &cfg.LossH}, {c.GetCusumAlpha(), &cfg.LossAlpha}} {
		if o.v != nil {
			*o.dst = o.v.GetValue()
		}
	}
	if cm := c.GetCommander(); cm != nil {
		cfg.Commander = control.CommanderConfig{Enabled: cm.GetEnabled(), RelievePressure: cm.GetRelievePressure(),
			ReleasePressure: cm.GetReleasePressure(), StaleNS: cm.GetStaleNs(), Smooth: cm.GetSmooth()}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, nil, &FieldError{Field: field, Err: err}
	}
	return cfg, params, nil
}

// SessionConfig returns the wire form of a control configuration with
// every value set.
func SessionConfig(cfg control.Config, params []uint64) *pb.SessionConfig {
	out := &pb.SessionConfig{
		LowbitMode:   Mode(cfg.LowBitMode),
		Warmup:       wrapperspb.Int64(cfg.WarmupSteps),
		Cooldown:     wrapperspb.Int64(cfg.CooldownSteps),
		Calibration:  wrapperspb.Int64(cfg.CalibrationSteps),
		LadderRungs:  wrapperspb.String(cfg.Ladder.String()),
		LadderDemote: cfg.Demote,
		CusumK:       wrapperspb.Double(cfg.LossK),
		CusumH:       wrapperspb.Double(cfg.LossH),
		CusumAlpha:   wrapperspb.Double(cfg.LossAlpha),
		Commander: &pb.Commander{Enabled: cfg.Commander.Enabled, RelievePressure: cfg.Commander.RelievePressure,
			ReleasePressure: cfg.Commander.ReleasePressure, StaleNs: cfg.Commander.StaleNS, Smooth: cfg.Commander.Smooth},
	}
	if cfg.Default == control.LowBitDefault {
		out.Default = pb.Default_DEFAULT_LOWBIT
	}
	for i, g := range cfg.Groups {
		var n uint64
		if i < len(params) {
			n = params[i]
		}
		out.Groups = append(out.Groups, &pb.Group{Name: g, Parameters: n})
	}
	return out
}

// GroupStatus returns the wire form of a group's status.
func GroupStatus(s control.GroupStatus, params uint64) *pb.GroupStatus {
	out := &pb.GroupStatus{Group: s.Group, Parameters: params, Phase: s.Phase.String(), Mode: Mode(s.Mode)}
	for m := range cxl.NumModes {
		out.Steps = append(out.Steps, s.Steps[m])
	}
	return out
}

package train

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
)

// Rule is an aggregation rule: how the W workers' gradients of one layer
// group become the update direction the optimizer applies. A rule is
// either a payload format of lowbit's registry (FormatRule), aggregated in
// that format, or one of the two software baselines, MajoritySign and
// SignOfMean, which no controller mode carries:
//
//   - FormatRule(lowbit.FP32) is the data-parallel mean (1/W) Σ_k g_k,
//     summed in float32 in worker order (nn.MeanGrads).
//   - FormatRule(lowbit.Binary) is the paper's G-Binary, computed by the cxl
//     controller model: workers write sign payloads, the update
//     u = sgn(2c - W) comes from the controller's aggregate read.
//   - FormatRule(lowbit.Ternary) is the paper's G-Ternary through the
//     controller: u times the region's zero gate (the paper's 2-of-3
//     pattern unless a gate extension is chosen).
//   - FormatRule(lowbit.Int8) goes beyond the paper: the workers agree on
//     one scale per parameter tensor (a max-reduce of max_j |g_kj|,
//     lowbit.Int8Scale), encode 8-bit codes, and the controller sums them
//     lane by lane into int16 (cxl.Aggregate(lowbit.Int8)); the sum decodes
//     to the mean. The update is that approximate mean, so it trains with
//     the FP32 learning rate.
//   - FormatRule(lowbit.BFP8) goes beyond the paper: each worker encodes
//     64-element blocks with its own exponent and 8-bit mantissas, which
//     the controller aligns to each block's largest exponent and sums;
//     as INT8, an approximate mean with the FP32 learning rate.
//
// Every further format of the registry is a rule of its family (a vote or
// a summed mean) without a line here.
type Rule uint8

const (
	// MajoritySign is MajoritySignSGD, the software baseline that is
	// communication-comparable to G-Binary: u = sgn(#{g_k > 0} - #{g_k <= 0}),
	// counted in Go from the FP32 gradients with no packing and no
	// controller. It is the same math as G-Binary.
	MajoritySign Rule = Rule(lowbit.NumFormats) + iota
	// SignOfMean is sgn((1/W) Σ_k g_k): a stronger optimizer reference that
	// is not communication-comparable (the FP32 reduction already ran).
	// sgn(0) = 0.
	SignOfMean
	numRules
)

// FormatRule returns the rule that aggregates in payload format f (an
// invalid format gives an invalid rule).
func FormatRule(f lowbit.Format) Rule {
	if !f.Valid() {
		return numRules
	}
	return Rule(f)
}

// baseline reports whether r is a software baseline, and so no format's.
func (r Rule) baseline() bool { return r == MajoritySign || r == SignOfMean }

// format reports the format r aggregates in, and whether r is a format's
// rule.
func (r Rule) format() (lowbit.Format, bool) {
	if r >= Rule(lowbit.NumFormats) {
		return lowbit.FP32, false
	}
	return lowbit.Format(r), true
}

// baselineNames are the software baselines' names and labels, in
// declaration order after the formats' rules.
var baselineNames = [numRules - Rule(lowbit.NumFormats)]struct{ name, label string }{
	{"majority-sign", "MajoritySignSGD"},
	{"sign-of-mean", "SignOfMean"},
}

func (r Rule) String() string {
	if f, ok := r.format(); ok {
		return f.String()
	}
	if r < numRules {
		return baselineNames[r-Rule(lowbit.NumFormats)].name
	}
	return fmt.Sprintf("Rule(%d)", uint8(r))
}

// Label names r as the paper's tables do: its format's label (FP32,
// G-Binary, G-Ternary, INT8, BFP8), MajoritySignSGD or SignOfMean.
func (r Rule) Label() string {
	if f, ok := r.format(); ok {
		return f.Label()
	}
	if r < numRules {
		return baselineNames[r-Rule(lowbit.NumFormats)].label
	}
	return r.String()
}

// Format is the payload format r sends, for traffic accounting: its own
// format, except that MajoritySign sends signs (G-Binary's bits, without
// the controller) and SignOfMean reduces FP32 first.
func (r Rule) Format() lowbit.Format {
	if r == MajoritySign {
		return lowbit.Binary
	}
	f, _ := r.format()
	return f
}

// Sign reports whether r applies a {-1, 0, +1} update (the vote formats
// and both baselines), and so trains with the sign learning rate by
// default.
func (r Rule) Sign() bool {
	f, ok := r.format()
	return r.baseline() || ok && f.Vote()
}

// Sum reports whether r aggregates by an integer lane sum of fixed-point
// codes decoded to the mean (a sum format: INT8, BFP8).
func (r Rule) Sum() bool {
	f, ok := r.format()
	return ok && f.Sum()
}

// Mode is the controller mode that carries r: the mode that aggregates
// its format (cxl.Aggregate), FP32 bypass for FP32 and for the software
// baselines MajoritySign and SignOfMean.
func (r Rule) Mode() cxl.Mode {
	f, _ := r.format()
	return cxl.Aggregate(f)
}

// ViaController reports whether r's aggregate is read from the cxl
// controller model.
func (r Rule) ViaController() bool { return r.Mode().LowBit() }

// Rules lists every rule: each format's, in lowbit's registry order, then
// the baselines.
func Rules() []Rule {
	rs := make([]Rule, numRules)
	for i := range rs {
		rs[i] = Rule(i)
	}
	return rs
}

// ParseRule accepts a format's name or alias (lowbit.ParseFormat: fp32,
// g-binary, binary, g-ternary, ternary, int8, bfp8, ...; also "mean" for
// fp32), majority-sign (majority, majoritysignsgd, majoritysign) and
// sign-of-mean (signofmean), in any case.
func ParseRule(s string) (Rule, error) {
	if f, err := lowbit.ParseFormat(s); err == nil {
		return FormatRule(f), nil
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "mean":
		return FormatRule(lowbit.FP32), nil
	case "majority-sign", "majority", "majoritysign", "majoritysignsgd":
		return MajoritySign, nil
	case "sign-of-mean", "signofmean":
		return SignOfMean, nil
	}
	names := make([]string, 0, numRules)
	for _, r := range Rules() {
		names = append(names, r.String())
	}
	return 0, fmt.Errorf("unknown rule %q (want %s)", s, strings.Join(names, ", "))
}

// RuleSpec is the aggregation of one layer group: a rule, its extensions
// and its learning rate.
type RuleSpec struct {
	Rule Rule
	// Gate is G-Ternary's zero gate; the zero value is the paper's 2-of-3
	// pattern. lowbit.GateWorker and lowbit.GateMargin are extensions.
	Gate lowbit.Gate
	// GateTau is the relative threshold of the worker gate (extension):
	// worker k sets the gate bit of element j of a parameter tensor when
	// |p_kj| > GateTau · mean_j |p_kj|. 0 means 1.
	GateTau float32
	// EF enables error feedback (extension beyond the paper, EF-SignSGD
	// style): worker k keeps a residual e_k per element, sends the sign of
	// p_k = g_k + e_k, and keeps e_k ← p_k − s_k·(2b_k − 1) with
	// s_k = mean |p_k| over the parameter tensor and b_k = 1{p_k > 0}.
	// Only for G-Binary, G-Ternary and MajoritySign.
	EF bool
	// LR is the group's learning rate; 0 takes the config's default for
	// the rule (Config.LR for FP32, Config.SignLR for sign rules).
	LR float32
}

// Extension reports whether the spec uses anything beyond the paper.
func (s RuleSpec) Extension() bool {
	return s.EF || (s.Rule == FormatRule(lowbit.Ternary) && s.Gate.Extension()) || s.Rule.Sum()
}

// Validate checks the spec.
func (s RuleSpec) Validate() error {
	if s.Rule >= numRules {
		return fmt.Errorf("unknown rule %d", uint8(s.Rule))
	}
	if s.Rule != FormatRule(lowbit.Ternary) && s.Gate != (lowbit.Gate{}) {
		return fmt.Errorf("%v: a gate applies to g-ternary only", s.Rule)
	}
	if s.Rule == FormatRule(lowbit.Ternary) {
		if err := s.Gate.Validate(); err != nil {
			return fmt.Errorf("g-ternary gate: %w", err)
		}
	}
	if s.GateTau != 0 && (s.Rule != FormatRule(lowbit.Ternary) || s.Gate.Kind != lowbit.GateWorker) {
		return fmt.Errorf("%v: a gate threshold applies to the worker gate only", s.Rule)
	}
	if !finite32(s.GateTau) || s.GateTau < 0 {
		return fmt.Errorf("worker gate threshold %v must be finite and >= 0", s.GateTau)
	}
	if s.EF && !(s.Rule.Sign() && s.Rule != SignOfMean) {
		return fmt.Errorf("%v: error feedback applies to the vote formats (g-binary, g-ternary) and majority-sign only", s.Rule)
	}
	if !finite32(s.LR) || s.LR < 0 {
		return fmt.Errorf("learning rate %v must be finite and >= 0", s.LR)
	}
	return nil
}

func finite32(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }

// String formats the spec in the syntax ParseRuleSpec reads:
// rule[+ef][/gate][@lr].
func (s RuleSpec) String() string {
	var b strings.Builder
	b.WriteString(s.Rule.String())
	if s.EF {
		b.WriteString("+ef")
	}
	if s.Rule == FormatRule(lowbit.Ternary) && s.Gate != (lowbit.Gate{}) {
		b.WriteString("/")
		if s.Gate.Kind == lowbit.GateWorker {
			b.WriteString("worker")
			if s.GateTau != 0 {
				b.WriteString(":" + strconv.FormatFloat(float64(s.GateTau), 'g', -1, 32))
			}
		} else {
			b.WriteString(s.Gate.String())
		}
	}
	if s.LR != 0 {
		b.WriteString("@" + strconv.FormatFloat(float64(s.LR), 'g', -1, 32))
	}
	return b.String()
}

// ParseRuleSpec reads rule[+ef][/gate][@lr], e.g. "g-binary",
// "g-ternary/margin:2", "g-ternary/worker:0.5", "majority-sign+ef@0.001",
// "fp32@0.05". The gate is one lowbit.ParseGate accepts, or "worker:TAU"
// for the worker gate with a relative threshold.
func ParseRuleSpec(s string) (RuleSpec, error) {
	var spec RuleSpec
	rest := strings.TrimSpace(s)
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		lr, err := strconv.ParseFloat(strings.TrimSpace(rest[i+1:]), 32)
		if err != nil || lr <= 0 || math.IsInf(lr, 0) || math.IsNaN(lr) {
			return spec, fmt.Errorf("rule %q: learning rate %q is not a positive number", s, rest[i+1:])
		}
		spec.LR = float32(lr)
		rest = rest[:i]
	}
	gate := ""
	hasGate := false
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		gate, hasGate = strings.TrimSpace(rest[i+1:]), true
		rest = rest[:i]
	}
	rest = strings.TrimSpace(rest)
	if strings.HasSuffix(strings.ToLower(rest), "+ef") {
		spec.EF = true
		rest = rest[:len(rest)-3]
	}
	r, err := ParseRule(rest)
	if err != nil {
		return spec, fmt.Errorf("rule %q: %w", s, err)
	}
	spec.Rule = r
	if hasGate {
		if r != FormatRule(lowbit.Ternary) {
			return spec, fmt.Errorf("rule %q: a gate applies to g-ternary only", s)
		}
		lg := strings.ToLower(gate)
		if lg == "worker" || strings.HasPrefix(lg, "worker:") {
			spec.Gate = lowbit.Gate{Kind: lowbit.GateWorker}
			if t, ok := strings.CutPrefix(lg, "worker:"); ok {
				tau, err := strconv.ParseFloat(t, 32)
				if err != nil || tau <= 0 || math.IsInf(tau, 0) || math.IsNaN(tau) {
					return spec, fmt.Errorf("rule %q: worker gate threshold %q is not a positive number", s, t)
				}
				spec.GateTau = float32(tau)
			}
		} else {
			g, err := lowbit.ParseGate(gate)
			if err != nil {
				return spec, fmt.Errorf("rule %q: %w", s, err)
			}
			spec.Gate = g
		}
	}
	if err := spec.Validate(); err != nil {
		return spec, fmt.Errorf("rule %q: %w", s, err)
	}
	return spec, nil
}

// Policy maps each layer group to its aggregation (paper Sec. 7.3):
// Policy[g] is group g's, for every nn.Group.
type Policy [nn.NumGroups]RuleSpec

// Uniform returns the policy that applies s to every group.
func Uniform(s RuleSpec) Policy {
	var p Policy
	for g := range p {
		p[g] = s
	}
	return p
}

// Split returns the policy with backbone rule b and head rule h.
func Split(b, h RuleSpec) Policy {
	p := Uniform(b)
	p[nn.Head] = h
	return p
}

// Validate checks every group.
func (p Policy) Validate() error {
	for g, s := range p {
		if err := s.Validate(); err != nil {
			return fmt.Errorf("%v: %w", nn.Group(g), err)
		}
	}
	return nil
}

// Extension reports whether any group uses an extension beyond the paper.
func (p Policy) Extension() bool { return p.any(RuleSpec.Extension) }

// Cxl reports whether any group goes through the controller model.
func (p Policy) Cxl() bool { return p.any(func(s RuleSpec) bool { return s.Rule.ViaController() }) }

// packets reports whether some group's controller regions carry sign
// planes (G-Binary, G-Ternary), whose element-major packet holds at most
// lowbit.MaxPacketWorkers workers; integer-sum regions are worker-major
// whatever the layout.
func (p Policy) packets() bool {
	return p.any(func(s RuleSpec) bool { return s.Rule.ViaController() && !s.Rule.Sum() })
}

// LowBit reports whether any group sends a low-bit payload: a format
// other than FP32 (SignOfMean reduces FP32 first, so it does not).
func (p Policy) LowBit() bool {
	return p.any(func(s RuleSpec) bool { return s.Rule.Format() != lowbit.FP32 })
}

func (p Policy) any(f func(RuleSpec) bool) bool {
	for _, s := range p {
		if f(s) {
			return true
		}
	}
	return false
}

// uniform reports whether every group has the same spec as the first.
func (p Policy) uniform(same func(a, b RuleSpec) bool) bool {
	for _, s := range p[1:] {
		if !same(p[0], s) {
			return false
		}
	}
	return true
}

// String formats the policy as ParsePolicy reads it: one spec when every
// group agrees, else "backbone=...,head=..." (groups in index order).
func (p Policy) String() string {
	if p.uniform(func(a, b RuleSpec) bool { return a == b }) {
		return p[0].String()
	}
	parts := make([]string, len(p))
	for g, s := range p {
		parts[g] = nn.Group(g).String() + "=" + s.String()
	}
	return strings.Join(parts, ",")
}

// Label is a human name in the style of the paper's Table 6, e.g.
// "G-Binary backbone + FP32 head".
func (p Policy) Label() string {
	name := func(s RuleSpec) string {
		n := s.Rule.Label()
		if s.EF {
			n += "+EF"
		}
		if s.Rule == FormatRule(lowbit.Ternary) && s.Gate != (lowbit.Gate{}) && s.Gate != lowbit.PaperGate {
			n += " (" + s.Gate.String() + ")"
		}
		return n
	}
	if p.uniform(func(a, b RuleSpec) bool { return a.Rule == b.Rule && a.EF == b.EF && a.Gate == b.Gate }) {
		return name(p[0]) + " all"
	}
	parts := make([]string, len(p))
	for g, s := range p {
		parts[g] = name(s) + " " + nn.Group(g).String()
	}
	return strings.Join(parts, " + ")
}

// ParseGroup accepts a group's name as nn.Group.String writes it, in any
// case.
func ParseGroup(s string) (nn.Group, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	names := make([]string, 0, nn.NumGroups)
	for _, g := range nn.Groups() {
		if g.String() == name {
			return g, nil
		}
		names = append(names, g.String())
	}
	return 0, fmt.Errorf("unknown group %q (want %s)", strings.TrimSpace(s), strings.Join(names, " or "))
}

// ParsePolicy reads a policy: either one rule spec for every group
// ("g-binary", "g-ternary/margin:2@0.001") or comma-separated
// group=spec entries naming each group once, e.g.
// "backbone=g-ternary,head=fp32". A group left out of a group list is an
// error, so a typo never silently trains on FP32.
func ParsePolicy(s string) (Policy, error) {
	var p Policy
	s = strings.TrimSpace(s)
	if s == "" {
		return p, fmt.Errorf("empty policy")
	}
	if !strings.Contains(s, "=") {
		spec, err := ParseRuleSpec(s)
		if err != nil {
			return p, fmt.Errorf("policy %q: %w", s, err)
		}
		return Uniform(spec), nil
	}
	var seen [nn.NumGroups]bool
	for _, part := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return p, fmt.Errorf("policy %q: entry %q is not group=rule", s, part)
		}
		g, err := ParseGroup(name)
		if err != nil {
			return p, fmt.Errorf("policy %q: %w", s, err)
		}
		if seen[g] {
			return p, fmt.Errorf("policy %q: group %v given twice", s, g)
		}
		spec, err := ParseRuleSpec(val)
		if err != nil {
			return p, fmt.Errorf("policy %q: %v: %w", s, g, err)
		}
		p[g], seen[g] = spec, true
	}
	for g, ok := range seen {
		if !ok {
			return p, fmt.Errorf("policy %q: no rule for group %v", s, nn.Group(g))
		}
	}
	return p, nil
}

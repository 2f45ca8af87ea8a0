package train

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
)

// Cosines are cosine alignments for the whole model and each layer group.
// They marshal as one JSON object: "global", then one key per group named
// by nn.Group.String ({"global":…,"backbone":…,"head":…}).
type Cosines struct {
	Global float64
	Groups PerGroup[float64]
}

// MarshalJSON writes "global" first, then the groups in index order.
func (c Cosines) MarshalJSON() ([]byte, error) {
	v, err := json.Marshal(c.Global)
	if err != nil {
		return nil, fmt.Errorf("global cosine: %w", err)
	}
	gs, err := c.Groups.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b := append([]byte(`{"global":`), v...)
	if len(gs) > 2 {
		b = append(b, ',')
	}
	return append(b, gs[1:]...), nil
}

// UnmarshalJSON reads what MarshalJSON writes; a missing key reads as 0,
// an unknown one is an error.
func (c *Cosines) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("cosines: %w", err)
	}
	var out Cosines
	if raw, ok := m["global"]; ok {
		if err := json.Unmarshal(raw, &out.Global); err != nil {
			return fmt.Errorf("cosines: global: %w", err)
		}
		delete(m, "global")
	}
	rest, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("cosines: %w", err)
	}
	if err := out.Groups.UnmarshalJSON(rest); err != nil {
		return fmt.Errorf("cosines: %w", err)
	}
	*c = out
	return nil
}

// Diag is the low-bit/FP32 cosine diagnostic of one epoch (paper Table 5):
// at each measured step, the cosine between the G-Binary (and G-Ternary,
// with the paper's 2-of-3 gate) aggregate of the workers' raw gradients and
// their FP32 mean, per group and globally; averaged over the measured steps.
// It is measured on the gradients of whatever policy the run trains with.
type Diag struct {
	Epoch   int     `json:"epoch"`
	Steps   int     `json:"steps"`
	Binary  Cosines `json:"binary"`
	Ternary Cosines `json:"ternary"`
	// Formats are every format's cosines (Config.DiagFormats), averaged
	// over the same steps; nil, and absent from JSON, otherwise.
	Formats *FormatCosines `json:"formats,omitempty"`
}

// cosAcc accumulates dot products and squared norms per group.
type cosAcc struct{ dot, nu, nm [nn.NumGroups]float64 }

func (c *cosAcc) add(g nn.Group, u, m []float32) {
	var dot, nu, nm float64
	for j, x := range u {
		y := float64(m[j])
		dot += float64(x) * y
		nu += float64(x) * float64(x)
		nm += y * y
	}
	c.dot[g] += dot
	c.nu[g] += nu
	c.nm[g] += nm
}

func cosine(dot, nu, nm float64) float64 {
	if nu == 0 || nm == 0 {
		return 0
	}
	return dot / math.Sqrt(nu*nm)
}

func (c *cosAcc) cosines() Cosines {
	var out Cosines
	var dot, nu, nm float64
	for _, g := range nn.Groups() {
		out.Groups[g] = cosine(c.dot[g], c.nu[g], c.nm[g])
		dot, nu, nm = dot+c.dot[g], nu+c.nu[g], nm+c.nm[g]
	}
	out.Global = cosine(dot, nu, nm)
	return out
}

// add adds c's cosines to dst's.
func (dst *Cosines) add(c Cosines) {
	dst.Global += c.Global
	for g := range dst.Groups {
		dst.Groups[g] += c.Groups[g]
	}
}

// scale multiplies every cosine by s.
func (c *Cosines) scale(s float64) {
	c.Global *= s
	for g := range c.Groups {
		c.Groups[g] *= s
	}
}

// StepCosines returns the cosines of one step: the G-Binary and G-Ternary
// (2-of-3 positional gate over the model's flattened parameter index)
// aggregates of grads[k][i] against their FP32 mean. It uses software
// majority votes (which tests show equal the controller's).
func StepCosines(m *nn.Model, grads [][][]float32) (bin, ter Cosines) {
	mean := m.NewGrads()
	meanGrads(mean, grads)
	var d diagScratch
	return d.step(m, grads, mean)
}

type diagScratch struct {
	u   []float32
	pin [][]float32
}

func (d *diagScratch) step(m *nn.Model, grads [][][]float32, mean [][]float32) (bin, ter Cosines) {
	var cb, ct cosAcc
	if len(d.pin) != len(grads) {
		d.pin = make([][]float32, len(grads))
	}
	flat := 0
	for i, prm := range m.Params {
		n := prm.Len()
		if cap(d.u) < n {
			d.u = make([]float32, n)
		}
		u := d.u[:n]
		for k := range grads {
			d.pin[k] = grads[k][i]
		}
		majority(u, d.pin)
		cb.add(prm.Group, u, mean[i])
		for j := range u {
			if !lowbit.PaperGate.Keeps(flat+j, 0) {
				u[j] = 0
			}
		}
		ct.add(prm.Group, u, mean[i])
		flat += n
	}
	return cb.cosines(), ct.cosines()
}

// FormatCosines are one step's cosines of each format's aggregate to the
// FP32 mean, indexed by lowbit.Format: the admission ladder's warm-up
// diagnostics for every rung (control.Ladder).
type FormatCosines [lowbit.NumFormats]Cosines

// add adds c's cosines to f's, format by format.
func (f *FormatCosines) add(c FormatCosines) {
	for i := range f {
		f[i].add(c[i])
	}
}

// scale multiplies every cosine by s.
func (f *FormatCosines) scale(s float64) {
	for i := range f {
		f[i].scale(s)
	}
}

// MarshalJSON writes one key per format, named as lowbit writes it, in
// table order: {"fp32":{…},"g-binary":{…},…}.
func (f FormatCosines) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, c := range f {
		e, err := c.MarshalJSON()
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), lowbit.Format(i).String()...), `":`...)
		b = append(b, e...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes; an unknown format is an
// error, a missing one reads as zeros.
func (f *FormatCosines) UnmarshalJSON(b []byte) error {
	var m map[string]Cosines
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("format cosines: %w", err)
	}
	var out FormatCosines
	for k, c := range m {
		ft, err := lowbit.ParseFormat(k)
		if err != nil || ft.String() != k {
			return fmt.Errorf("format cosines: unknown format %q", k)
		}
		out[ft] = c
	}
	*f = out
	return nil
}

// StepFormatCosines returns, for every format, the cosines (per group and
// global) between its aggregate of grads[k][i] and their FP32 mean: FP32
// the mean itself (1 wherever the mean is not zero), G-Binary and
// G-Ternary as StepCosines, every summed format (INT8, BFP8) the decoded
// lane sums of its lowbit kernels (the arithmetic the controller's sum
// modes run), one bucket per parameter tensor as its rule aggregates. A
// NaN or Inf gradient is an error.
func StepFormatCosines(m *nn.Model, grads [][][]float32) (FormatCosines, error) {
	var out FormatCosines
	mean := m.NewGrads()
	meanGrads(mean, grads)
	var d diagScratch
	out[lowbit.Binary], out[lowbit.Ternary] = d.step(m, grads, mean)
	var fp cosAcc
	var sums [lowbit.NumFormats]cosAcc
	var s sumScratch
	pin := make([][]float32, len(grads))
	var u []float32
	for i, prm := range m.Params {
		if err := lowbit.CheckFinite(mean[i]); err != nil {
			return out, fmt.Errorf("parameter %s: mean gradient: %w", prm.Name, err)
		}
		fp.add(prm.Group, mean[i], mean[i])
		n := prm.Len()
		if cap(u) < n {
			u = make([]float32, n)
		}
		u = u[:n]
		for k := range grads {
			pin[k] = grads[k][i]
		}
		for _, f := range lowbit.Formats() {
			if !f.Sum() {
				continue
			}
			if err := s.aggregate(f, u, pin); err != nil {
				return out, fmt.Errorf("parameter %s: %w", prm.Name, err)
			}
			sums[f].add(prm.Group, u, mean[i])
		}
	}
	out[lowbit.FP32] = fp.cosines()
	for _, f := range lowbit.Formats() {
		if f.Sum() {
			out[f] = sums[f].cosines()
		}
	}
	return out, nil
}

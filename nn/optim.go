package nn

// SGD is stochastic gradient descent with momentum and weight decay, with
// PyTorch's semantics (dampening 0, no Nesterov). For parameter w with
// supplied gradient g (any vector shaped like w: an FP32 mean, a sign
// vote, a ternary aggregate, ...):
//
//	d = g + WeightDecay·w
//	v ← Momentum·v + d            (v starts at 0, so the first v is d)
//	w ← w - lr·v
//
// The velocity v is the optimizer state saved in checkpoints.
type SGD struct {
	LR, Momentum, WeightDecay float32
	params                    []*Param
	Vel                       [][]float32 // Vel[i] is the velocity of Params[i]
}

// NewSGD returns an optimizer for every parameter of m with zero velocity.
func NewSGD(m *Model, lr, momentum, weightDecay float32) *SGD {
	return &SGD{LR: lr, Momentum: momentum, WeightDecay: weightDecay, params: m.Params, Vel: m.NewGrads()}
}

// Step updates every parameter i with grads[i] and learning rate LR.
func (o *SGD) Step(grads [][]float32) {
	for i, g := range grads {
		o.StepParam(i, g, o.LR)
	}
}

// StepParam updates parameter i alone with gradient g and learning rate lr,
// so callers can use a different rule or rate per layer group.
func (o *SGD) StepParam(i int, g []float32, lr float32) {
	w, v := o.params[i].Value, o.Vel[i]
	if len(g) != len(w) {
		panic("nn: SGD.StepParam: gradient length does not match " + o.params[i].Name)
	}
	mom, wd := o.Momentum, o.WeightDecay
	for j := range w {
		d := g[j] + wd*w[j]
		v[j] = mom*v[j] + d
		w[j] -= lr * v[j]
	}
}

package nn

import (
	"fmt"
	"math"
)

// SoftmaxCrossEntropy returns the mean cross-entropy of softmax(logits)
// against labels, the number of rows whose arg-max equals the label, and
// writes the gradient of the mean loss into dlogits (resized to match):
//
//	p = softmax(z_n),  loss = -(1/N) Σₙ log p[yₙ],  dz_n = (p - onehot(yₙ)) / N
//
// logits is (N, K); a label outside [0, K) is a programmer error and panics
// (the data loaders validate labels). Arg-max ties go to the lowest index.
// The log-sum-exp is computed in float64 after subtracting the row maximum.
func SoftmaxCrossEntropy(logits *Tensor, labels []int, dlogits *Tensor) (loss float64, correct int) {
	n, k := logits.rows()
	if len(labels) != n {
		panic(fmt.Sprintf("nn: %d labels for %v", len(labels), logits))
	}
	if dlogits != nil {
		dlogits.resize(n, k)
	}
	invN := 1 / float64(n)
	for i := 0; i < n; i++ {
		z := logits.Data[i*k : (i+1)*k]
		y := labels[i]
		if y < 0 || y >= k {
			panic(fmt.Sprintf("nn: label %d outside [0,%d)", y, k))
		}
		arg, mx := 0, z[0]
		for j, v := range z {
			if v > mx {
				arg, mx = j, v
			}
		}
		if arg == y {
			correct++
		}
		var s float64
		for _, v := range z {
			s += math.Exp(float64(v - mx))
		}
		lse := math.Log(s) + float64(mx)
		loss += (lse - float64(z[y])) * invN
		if dlogits == nil {
			continue
		}
		d := dlogits.Data[i*k : (i+1)*k]
		for j, v := range z {
			p := math.Exp(float64(v) - lse)
			if j == y {
				p--
			}
			d[j] = float32(p * invN)
		}
	}
	return loss, correct
}

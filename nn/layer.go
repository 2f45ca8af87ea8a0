package nn

import (
	"fmt"
	"math"
)

// Layer is one differentiable stage of a network instance.
//
// Forward returns a tensor the layer owns; it stays valid until the next
// Forward of the same layer. The input x must stay unchanged until Backward.
// Backward takes dL/dy for the last Forward, adds the parameter gradients
// into the replica's gradient slices, and returns dL/dx (owned by the layer;
// nil when the layer does not compute it). Shape mismatches are programmer
// errors and panic.
type Layer interface {
	Forward(x *Tensor, train bool) *Tensor
	Backward(dy *Tensor) *Tensor
}

// Dense is a fully connected layer.
//
//	forward:  y = x Wᵀ + b               x (N, In), W (Out, In), b (Out), y (N, Out)
//	backward: dW += dyᵀ x,  db += Σₙ dy,  dx = dy W
//
// An input of shape (N, d1, d2, ...) is read as (N, d1*d2*...).
type Dense struct {
	In, Out int
	W, B    []float32 // shared values
	dW, dB  []float32 // replica gradients
	ws      *workspace
	x       *Tensor
	y, dx   Tensor
}

func newDense(b *builder, name string, in, out int) *Dense {
	bound := 1 / math.Sqrt(float64(in))
	d := &Dense{In: in, Out: out, ws: b.ws}
	d.W, d.dW = b.param(name+".weight", []int{out, in}, b.uniform(bound))
	d.B, d.dB = b.param(name+".bias", []int{out}, b.uniform(bound))
	return d
}

func (d *Dense) Forward(x *Tensor, train bool) *Tensor {
	n, in := x.rows()
	if in != d.In || x.cm {
		panic(fmt.Sprintf("nn: Dense(%d->%d) got %v (channel-major: %v)", d.In, d.Out, x, x.cm))
	}
	d.x = x
	d.y.resize(n, d.Out)
	for i := 0; i < n; i++ {
		copy(d.y.Data[i*d.Out:(i+1)*d.Out], d.B)
	}
	d.ws.gemm(false, true, n, d.Out, d.In, 1, x.Data, d.In, d.W, d.In, 1, d.y.Data, d.Out)
	return &d.y
}

func (d *Dense) Backward(dy *Tensor) *Tensor {
	n := d.x.Shape[0]
	d.ws.gemm(true, false, d.Out, d.In, n, 1, dy.Data, d.Out, d.x.Data, d.In, 1, d.dW, d.In)
	for i := 0; i < n; i++ {
		row := dy.Data[i*d.Out : (i+1)*d.Out]
		for j, v := range row {
			d.dB[j] += v
		}
	}
	d.dx.resize(d.x.Shape...)
	d.ws.gemm(false, false, n, d.In, d.Out, 1, dy.Data, d.Out, d.W, d.In, 0, d.dx.Data, d.In)
	return &d.dx
}

// ReLU is max(0, x) elementwise.
//
//	forward: y = max(0, x);  backward: dx = dy · 1{y > 0}
//
// (A NaN y passes its dy through.)
type ReLU struct {
	y, dx Tensor
}

func (r *ReLU) Forward(x *Tensor, train bool) *Tensor {
	r.y.resize(x.Shape...)
	r.y.cm = x.cm
	reluOf(x.Data, r.y.Data)
	return &r.y
}

func (r *ReLU) Backward(dy *Tensor) *Tensor {
	r.dx.resize(dy.Shape...)
	r.dx.cm = dy.cm
	reluBackward(dy.Data, r.y.Data, r.dx.Data)
	return &r.dx
}

// MaxPool2d takes the maximum over K×K windows with stride S and no padding.
//
//	forward:  y[n,c,i,j] = max over (p,q) in [0,K)² of x[n,c,S*i+p,S*j+q]
//	backward: dx gets dy at the argmax of each window (first maximum in
//	          row-major window order), zero elsewhere
//
// x (N, C, H, W), y (N, C, (H-K)/S+1, (W-K)/S+1).
type MaxPool2d struct {
	K, S  int
	xs    []int
	arg   []int32
	y, dx Tensor
}

func (p *MaxPool2d) Forward(x *Tensor, train bool) *Tensor {
	n, c, h, w := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	oh, ow := (h-p.K)/p.S+1, (w-p.K)/p.S+1
	p.xs = append(p.xs[:0], x.Shape...)
	p.y.resize(n, c, oh, ow)
	p.y.cm = x.cm // planes in, planes out, in the same order
	if cap(p.arg) < len(p.y.Data) {
		p.arg = make([]int32, len(p.y.Data))
	}
	p.arg = p.arg[:len(p.y.Data)]
	o := 0
	for plane := 0; plane < n*c; plane++ {
		src := x.Data[plane*h*w : (plane+1)*h*w]
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				best := int32((i*p.S)*w + j*p.S)
				bv := src[best]
				for a := 0; a < p.K; a++ {
					row := (i*p.S + a) * w
					for b := 0; b < p.K; b++ {
						if v := src[row+j*p.S+b]; v > bv {
							bv, best = v, int32(row+j*p.S+b)
						}
					}
				}
				p.y.Data[o] = bv
				p.arg[o] = int32(plane*h*w) + best
				o++
			}
		}
	}
	return &p.y
}

func (p *MaxPool2d) Backward(dy *Tensor) *Tensor {
	p.dx.resize(p.xs...)
	p.dx.cm = p.y.cm
	zero(p.dx.Data)
	for o, g := range dy.Data {
		p.dx.Data[p.arg[o]] += g
	}
	return &p.dx
}

// GlobalAvgPool averages each channel over its spatial positions.
//
//	forward:  y[n,c] = (1/HW) Σ_{h,w} x[n,c,h,w]      x (N,C,H,W), y (N,C)
//	backward: dx[n,c,h,w] = dy[n,c] / HW
//
// x may be channel-major (Tensor.cm); y is (N, C) either way.
type GlobalAvgPool struct {
	xs    []int
	cm    bool
	y, dx Tensor
}

func (g *GlobalAvgPool) Forward(x *Tensor, train bool) *Tensor {
	n, c := x.Shape[0], x.Shape[1]
	hw := x.Shape[2] * x.Shape[3]
	g.xs = append(g.xs[:0], x.Shape...)
	g.cm = x.cm
	g.y.resize(n, c)
	img, ch := x.planeStrides()
	inv := 1 / float32(hw)
	for i := 0; i < n*c; i++ {
		var s float32
		for _, v := range x.Data[(i/c*img+i%c*ch)*hw:][:hw] {
			s += v
		}
		g.y.Data[i] = s * inv
	}
	return &g.y
}

func (g *GlobalAvgPool) Backward(dy *Tensor) *Tensor {
	g.dx.resize(g.xs...)
	g.dx.cm = g.cm
	c, hw := g.xs[1], g.xs[2]*g.xs[3]
	img, ch := g.dx.planeStrides()
	inv := 1 / float32(hw)
	for i, d := range dy.Data {
		v := d * inv
		s := g.dx.Data[(i/c*img+i%c*ch)*hw:][:hw]
		for j := range s {
			s[j] = v
		}
	}
	return &g.dx
}

// Sequential runs layers in order; Backward runs them in reverse.
type Sequential []Layer

func (s Sequential) Forward(x *Tensor, train bool) *Tensor {
	for _, l := range s {
		x = l.Forward(x, train)
	}
	return x
}

func (s Sequential) Backward(dy *Tensor) *Tensor {
	for i := len(s) - 1; i >= 0; i-- {
		dy = s[i].Backward(dy)
		if dy == nil {
			return nil
		}
	}
	return dy
}

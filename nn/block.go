package nn

// BasicBlock is the two-convolution residual block of ResNet-18/34
// (He et al. 2016), CIFAR style:
//
//	y = relu( bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x) )
//
// conv1 is 3×3 with stride S, conv2 3×3 with stride 1, both without bias.
// shortcut is the identity when S == 1 and the channel count is unchanged,
// and otherwise a 1×1 convolution with stride S followed by BatchNorm
// (parameters "downsample.0.*" and "downsample.1.*", as in torchvision).
// Backward adds the gradient flowing through the shortcut to the one
// flowing through the residual branch.
type BasicBlock struct {
	Conv1, Conv2 *Conv2d
	BN1, BN2     *BatchNorm2d
	Relu1, Relu2 ReLU
	DownConv     *Conv2d // nil for an identity shortcut
	DownBN       *BatchNorm2d
	dx           Tensor
}

func newBasicBlock(b *builder, name string, in, out, stride int) *BasicBlock {
	bb := &BasicBlock{}
	bb.Conv1 = newConv(b, name+".conv1", in, out, 3, stride, 1, false)
	bb.BN1 = newBatchNorm(b, name+".bn1", out)
	bb.Conv2 = newConv(b, name+".conv2", out, out, 3, 1, 1, false)
	bb.BN2 = newBatchNorm(b, name+".bn2", out)
	if stride != 1 || in != out {
		bb.DownConv = newConv(b, name+".downsample.0", in, out, 1, stride, 0, false)
		bb.DownBN = newBatchNorm(b, name+".downsample.1", out)
	}
	return bb
}

func (bb *BasicBlock) Forward(x *Tensor, train bool) *Tensor {
	// Each BatchNorm and the ReLU after it run as one pass (forwardRelu).
	h := bb.Conv1.Forward(x, train)
	h = bb.BN1.forwardRelu(h, train, nil, &bb.Relu1)
	h = bb.Conv2.Forward(h, train)
	s := x
	if bb.DownConv != nil {
		s = bb.DownConv.Forward(x, train)
		s = bb.DownBN.Forward(s, train)
	}
	return bb.BN2.forwardRelu(h, train, s, &bb.Relu2)
}

func (bb *BasicBlock) Backward(dy *Tensor) *Tensor {
	d := bb.Relu2.Backward(dy)
	h := bb.BN2.Backward(d)
	h = bb.Conv2.Backward(h)
	h = bb.Relu1.Backward(h)
	h = bb.BN1.Backward(h)
	h = bb.Conv1.Backward(h)
	s := d
	if bb.DownConv != nil {
		s = bb.DownBN.Backward(d)
		s = bb.DownConv.Backward(s)
	}
	if h.cm != s.cm {
		panic("nn: BasicBlock: residual and shortcut gradients differ in layout")
	}
	bb.dx.resize(h.Shape...)
	bb.dx.cm = h.cm
	addOf(h.Data, s.Data[:len(h.Data)], bb.dx.Data)
	return &bb.dx
}

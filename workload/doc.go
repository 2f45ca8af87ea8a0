// Package workload describes the training workloads whose gradient traffic
// NEURON-Fabric carries: model profiles built layer by layer from their
// architecture definitions, a FLOP-based forward/backward time model, and
// the gradient buckets a data-parallel framework hands to the collective
// during backward (paper Sec. 5.1-5.2 and Sec. 9). It does not simulate:
// the timing package consumes its bucket traces.
//
// # Profiles
//
// A Profile is a list of layers in forward order. Each layer owns zero or
// more parameter tensors (name and shape, as in the framework's
// state_dict) and its forward FLOPs for one sample. Parameter counts are
// always summed from the shapes, never hard-coded. The built-in profiles
// are
//
//	bert-large          24 layers, hidden 1024, 16 heads, FFN 4096, vocab 30522,
//	                    512 positions, 2 token types, pooler: 335,141,888 params
//	gpt2-xl             48 layers, d 1600, vocab 50257, ctx 1024, tied
//	                    embeddings: 1,557,611,200 params
//	gpt3                96 layers, d 12288, ctx 2048, vocab 50257, tied
//	                    embeddings: 174,604,259,328 params ("175B")
//	resnet18-cifar10    CIFAR ResNet-18 (3x3 stem, no max-pool): 11,173,962
//	resnet18-cifar100   the same with 100 classes: 11,220,132
//
// Every layer belongs to a group, "backbone" or "head" (the classifier or
// pooler the paper's layer-aware admission keeps on FP32). For the GPT
// profiles the head is the final LayerNorm plus the tied LM projection,
// whose weight is the token embedding and is counted once, in the backbone.
//
// Users add profiles in YAML (see ParseProfileYAML for the format).
//
// # Time model
//
// Forward FLOPs per sample count 2 FLOPs per multiply-accumulate: a dense
// layer with an (in, out) weight costs 2*in*out per token, attention adds
// 4*seq*d per token per layer (QK^T and AV), a convolution costs
// 2*k*k*Cin*Cout*Hout*Wout per image. Element-wise operations (LayerNorm,
// BatchNorm, ReLU, softmax) and embedding gathers count zero. Backward
// costs BackwardFactor (default 2) times forward. Time is FLOPs divided by
// Accelerator.PeakFLOPS * Accelerator.Efficiency; the default accelerator
// is an A100-like 312 TFLOP/s dense BF16 peak at 45% achieved (the middle
// of the 40-50% model-FLOP utilisation typical of large-model training).
//
// # Buckets
//
// Backward runs the layers in reverse order; a layer's gradient bytes are
// produced uniformly over that layer's backward interval (layers with no
// FLOPs produce theirs instantly). Bucketize cuts the reverse-order gradient
// stream into buckets of a byte cap (32 MiB in the paper; PyTorch DDP's
// default is 25 MiB) in one of two ways:
//
//	SplitTensors   fixed-size chunks of the flat gradient stream; a tensor may
//	               span buckets (the paper's "32 MiB gradient buckets", and the
//	               only way GPT-3's 1.8 GB tensors fit a 32 MiB cap)
//	WholeTensors   PyTorch DDP: whole tensors in reverse order, a bucket closes
//	               once it reaches the cap, so one bucket may exceed it
//
// A bucket is ready when its last byte has been produced. Times are integer
// picoseconds from the start of backward.
//
// Users bring their own bucket trace as JSON or CSV (see ReadTrace).
package workload

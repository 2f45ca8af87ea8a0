// Package nn is a small pure-Go training engine: float32 tensors, the layers
// a CIFAR-style ResNet needs, softmax cross-entropy, SGD with momentum, and
// replicas that let W virtual workers run shards of one batch in parallel.
//
// # Memory layout
//
// A Tensor is a flat []float32 with a shape, row-major. Images are NCHW: the
// element (n, c, h, w) of a tensor of shape (N, C, H, W) is at
//
//	((n*C + c)*H + h)*W + w
//
// A Dense layer treats its input (N, d1, d2, ...) as the matrix (N, d1*d2*...).
// Parameters follow PyTorch: a Dense weight is (out, in), a Conv2d weight is
// (F, C, KH, KW), and BatchNorm has weight (gamma) and bias (beta), each (C).
//
// # Models, parameters and replicas
//
// A Model owns the parameter values (one *Param per named tensor, e.g.
// "layer2.0.conv1.weight") and the BatchNorm running statistics. Every
// parameter belongs to a Group: Backbone or Head (the final classifier), so
// the training package can account traffic and choose aggregation per group.
//
// A Replica is one virtual worker. All replicas of a model share the
// parameter values but own their activations, workspaces, gradients and a
// copy of the running statistics:
//
//	m := nn.NewSmallCNN(rand.New(rand.NewPCG(seed, 0)), 1, 28, 28, 10)
//	reps := m.NewReplicas(8)
//	res := make([]nn.ShardResult, 8)
//	nn.TrainShards(reps, x, labels, res) // shard k of the batch -> reps[k]
//	// reps[k].Grads[i] is worker k's FP32 gradient of parameter m.Params[i]
//	nn.MeanGrads(agg, reps)                // or any low-bit aggregate
//	opt.Step(agg)                          // SGD with momentum and weight decay
//
// Each replica's gradient is that of the mean loss over its own shard, as a
// data-parallel worker would compute it. BatchNorm in training mode uses the
// statistics of the replica's own shard (like DDP without SyncBN). After a
// step the running statistics of the replicas are merged by SyncBuffers: the
// model's value is the arithmetic mean of the replicas' values taken in
// replica order 0..W-1 with float64 accumulation, then copied back into every
// replica. Because every replica starts the step from the same running value
// r, this equals updating r once with the mean of the W shard statistics.
//
// # Determinism
//
// Given the seed of the *rand.Rand passed to a constructor and the same
// inputs, every output byte is the same whatever GOMAXPROCS is: replicas do
// not share mutable state, every reduction inside a layer runs in a fixed
// order on one goroutine, the GEMMs (package gemm) give the same bits for
// any number of goroutines, and merges across replicas (MeanGrads,
// SyncBuffers) run in replica order. When W replicas run a batch
// (TrainShards, EvalShards), each replica's GEMMs use GOMAXPROCS/W
// goroutines (at least one), so the replicas' goroutines and the GEMMs'
// share the cores instead of oversubscribing them; a lone replica's GEMMs
// use GOMAXPROCS.
//
// # Checkpoints
//
// SaveFile and LoadFile write and read parameters, running statistics,
// optimizer state and string metadata in the format described at
// WriteCheckpoint, so an interrupted run resumes bit for bit.
package nn

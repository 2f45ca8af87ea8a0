// Package train runs data-parallel training with W virtual workers and a
// pluggable aggregation rule per layer group (paper Sec. 4 and 7).
//
// Each mini-batch is split into W contiguous shards (nn.TrainShards); worker
// k computes the FP32 gradient g_k of the mean loss over its shard. An
// Aggregator turns the W gradients into one update direction d per
// parameter, according to the rule of the parameter's group (nn.Backbone or
// nn.Head):
//
//	FP32          d = (1/W) Σ_k g_k                     (float32 sum in worker order)
//	G-Binary      d = u,  u = sgn(2c − W),  c = #{k: g_k > 0}   through the cxl controller
//	G-Ternary     d = m·u with the region's zero gate m          through the cxl controller
//	MajoritySign  d = sgn(#{g_k > 0} − #{g_k <= 0})     in software (same math as G-Binary)
//	SignOfMean    d = sgn((1/W) Σ_k g_k)                 sgn(0) = 0
//	Int8          d = S·s/W, S = sat16(Σ_k q_k), q_k = rne(g_k/s), s = max|g|/127   through the cxl controller (extension)
//	BFP8          d = S·2^(E−7)/W, per-worker 64-element block exponents aligned to E   through the cxl controller (extension)
//
// Int8 and BFP8 go beyond the paper: one integer-sum bucket per parameter
// tensor (host.BucketConfig.Format, worker-major), read through the cxl
// controller's INT8 and BFP8 aggregates, and the FP32 learning rate,
// since d approximates the mean.
//
// sgn(0) = 0: with W even a tied vote returns 0 (no update from the vote).
//
// G-Binary and G-Ternary go through the controller's functional model
// (package cxl): every parameter tensor has a region in the controller
// with its mode latched to G-Binary or G-Ternary; each step every worker
// encodes its sign bit-plane (lowbit.EncodeSigns, one goroutine per
// worker), the payload lines are written with MemWr transactions and the
// update comes from MemRd of the aggregate view — the path cxl's
// functional tester checks. The region's Element0 is the tensor's offset
// in the flattened parameter vector, so the positional 2-of-3 gate sees
// the flattened element index.
//
// Layout. Both layouts go through the controller and give identical
// updates (tested). The default of the experiments is worker-major: each
// of the W workers writes its own plane lines with no gather — what
// independent writers into a shared CXL buffer can do — and the aggregate
// comes back as two planes (2 bits per element). The paper's element-major
// packet (one byte per element, bit k = worker k, W <= 8) needs the runtime
// to gather the workers' bits first (lowbit.PlanesToPacket) and returns
// the count c per element (8 bits); Config.Layout selects it.
//
// # Optimizer
//
// Every rule feeds the same SGD (nn.SGD, PyTorch semantics) with a learning
// rate per group (Config.LR for FP32 groups, Config.SignLR for sign rules,
// or the RuleSpec's own): momentum and weight decay apply to the aggregate,
// never inside the vote:
//
//	v ← μ·v + d + λ·w,   w ← w − lr_group·v
//
// so for G-Binary, G-Ternary, MajoritySign and SignOfMean the momentum
// buffer accumulates the {−1, 0, +1} vector d. A learning-rate schedule
// (Config.Schedule: cosine decay with an optional linear warm-up, or step
// decay) multiplies every group's rate by the same factor of the step, so
// the policies of a seed stay paired; the default is constant.
//
// # Extensions beyond the paper
//
// Clearly named wherever they appear: error feedback (RuleSpec.EF,
// EF-SignSGD style per-worker residuals) and the G-Ternary worker gate and
// margin gate (lowbit.GateWorker, lowbit.GateMargin).
//
// # The training loop
//
// Loop is the one training loop: per epoch the Stepper's batches, per step
// forward/backward, aggregation, the velocity reset of a group whose rule
// switched, and SGD with each group's learning rate (Config.RuleLR), then
// validation. Drivers add their work through Hooks (before step, after
// aggregation, end of epoch): Run records the history, the diagnostics and
// the checkpoints; package pilot steers the mode latches from the control
// plane.
//
// # Diagnostics, traffic and checkpoints
//
// Per step a run records the loss; per epoch the validation accuracy; at
// Config.DiagEpochs the cosine between the G-Binary / G-Ternary aggregate
// and the FP32 mean, per group and globally (Table 5). PolicyTraffic gives
// the payload bits per step by group under the paper's accounting and the
// stored-plane accounting. After each epoch a checkpoint (nn's format plus
// the error-feedback residuals and the history) lets a run resume bit for
// bit. Runs are deterministic whatever GOMAXPROCS: workers never share
// mutable state and every reduction runs in worker order.
package train

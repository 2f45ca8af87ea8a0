package train

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
)

// Config is one training run.
type Config struct {
	// Model is "mlp", "cnn" (nn.NewSmallCNN), "resnet18" (the paper's
	// ResNet-18, CIFAR style, sized to the data), "resnet-mini" (one
	// BasicBlock per stage, width 8: a CPU-sized ResNet) or
	// "resnet-standin" (nn.StandInConfig: the training stand-ins' ResNet,
	// head under 1%) or "resnet-standin-small" (nn.SmallStandInConfig:
	// the earlier one, head 4% at 100 classes).
	Model string
	// Hidden are the MLP's hidden widths; nil means {256}.
	Hidden []int
	// Workers is W, the number of virtual workers each batch is split
	// over; 0 means 8.
	Workers int
	// Batch is the global batch size (split into W shards); 0 means 128.
	Batch int
	// Epochs to train (a resumed run continues up to Epochs).
	Epochs int
	// LR is the default learning rate of FP32 groups and SignLR that of
	// sign-rule groups (G-Binary, G-Ternary, MajoritySign, SignOfMean);
	// a RuleSpec's own LR overrides them.
	LR, SignLR float32
	// Momentum and WeightDecay of SGD, the same for every rule: the
	// aggregate d (FP32 mean or u in {-1,0,+1}) enters as
	// v ← Momentum·v + d + WeightDecay·w,  w ← w − lr_group·v.
	Momentum, WeightDecay float32
	// Schedule multiplies every group's rate by the same factor of the
	// step (cosine, step decay, a warm-up); the zero value is constant.
	Schedule Schedule
	Policy   Policy
	// Layout of the controller regions (G-Binary and G-Ternary groups).
	Layout lowbit.Layout
	// Aug is the training augmentation (CIFAR: Pad 4, Flip).
	Aug data.Augment
	// Seed seeds the model initialisation (stream 0) and each epoch's
	// shuffle and augmentation (stream 1000+epoch).
	Seed uint64
	// DiagEpochs are the epochs (1-based) at which the cosine
	// diagnostics are measured, over at most DiagSteps steps (0: all).
	DiagEpochs []int
	DiagSteps  int
	// DiagFormats adds every format's cosines (StepFormatCosines) to the
	// diagnostics, Diag.Formats; off, the diagnostics are the paper's two.
	DiagFormats bool
	// Checkpoint, if not empty, is written atomically after every epoch;
	// with Resume a run starts from it when it exists.
	Checkpoint string
	Resume     bool
	// Logf reports progress every LogEvery steps (0: once per epoch).
	Logf     func(format string, args ...any)
	LogEvery int
}

func (c *Config) defaults() {
	if c.Workers == 0 {
		c.Workers = 8
	}
	if c.Batch == 0 {
		c.Batch = 128
	}
	if c.Model == "mlp" && c.Hidden == nil {
		c.Hidden = []int{256}
	}
}

// Validate checks the configuration, naming the bad field.
func (c Config) Validate() error {
	c.defaults()
	switch {
	case c.Model != "mlp" && c.Model != "cnn" && c.Model != "resnet18" && c.Model != "resnet-mini" && c.Model != "resnet-standin" && c.Model != "resnet-standin-small":
		return fmt.Errorf("model %q: want mlp, cnn, resnet18, resnet-mini, resnet-standin or resnet-standin-small", c.Model)
	case c.Workers < 1 || c.Workers > lowbit.MaxWorkers:
		return fmt.Errorf("workers %d out of range [1, %d]", c.Workers, lowbit.MaxWorkers)
	case c.Batch < c.Workers:
		return fmt.Errorf("batch %d smaller than workers %d", c.Batch, c.Workers)
	case c.Epochs < 1:
		return fmt.Errorf("epochs %d < 1", c.Epochs)
	case !finite32(c.LR) || c.LR <= 0:
		return fmt.Errorf("learning rate %v must be positive", c.LR)
	case !finite32(c.SignLR) || c.SignLR <= 0:
		return fmt.Errorf("sign learning rate %v must be positive", c.SignLR)
	case !finite32(c.Momentum) || c.Momentum < 0 || c.Momentum >= 1:
		return fmt.Errorf("momentum %v out of range [0, 1)", c.Momentum)
	case !finite32(c.WeightDecay) || c.WeightDecay < 0:
		return fmt.Errorf("weight decay %v must be >= 0", c.WeightDecay)
	case c.DiagSteps < 0:
		return fmt.Errorf("diagnostic steps %d < 0", c.DiagSteps)
	case c.LogEvery < 0:
		return fmt.Errorf("log interval %d < 0", c.LogEvery)
	case c.Aug.Pad < 0:
		return fmt.Errorf("augmentation padding %d < 0", c.Aug.Pad)
	}
	for _, h := range c.Hidden {
		if h < 1 {
			return fmt.Errorf("hidden width %d < 1", h)
		}
	}
	// The input and class counts are the data set's; at least 1 and 2 give
	// a lower bound that refuses an absurd width before any data is loaded
	// (NewModel checks the exact count). Checked for every model: the
	// widths travel with the configuration whichever model reads them.
	if len(c.Hidden) > 0 && mlpParams(1, c.Hidden, 2) > MaxParams {
		return fmt.Errorf("hidden widths %v: more than the limit of %d parameters", c.Hidden, int64(MaxParams))
	}
	for _, e := range c.DiagEpochs {
		if e < 1 {
			return fmt.Errorf("diagnostic epoch %d < 1", e)
		}
	}
	if c.Layout == lowbit.ElementMajor && c.Workers > lowbit.MaxPacketWorkers && c.Policy.packets() {
		return fmt.Errorf("element-major layout carries at most %d workers, not %d", lowbit.MaxPacketWorkers, c.Workers)
	}
	if c.Resume && c.Checkpoint == "" {
		return errors.New("resume needs a checkpoint path")
	}
	if err := c.Schedule.Validate(c.Epochs); err != nil {
		return err
	}
	if err := c.Policy.Validate(); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	for _, g := range nn.Groups() {
		if err := lowbit.CheckSumWorkers(c.Policy[g].Rule.Format(), c.Workers); err != nil {
			return fmt.Errorf("policy %v, group %v: workers: %w", c.Policy, g, err)
		}
	}
	return nil
}

// RuleLR returns the learning rate of a group aggregated by s: s.LR when
// set, else SignLR for a sign rule and LR for FP32. Loop applies it to the
// rule each group actually ran on each step.
func (c Config) RuleLR(s RuleSpec) float32 {
	switch {
	case s.LR != 0:
		return s.LR
	case s.Rule.Sign():
		return c.SignLR
	}
	return c.LR
}

// MaxParams bounds a model's parameter count (2^25 = 33,554,432; ResNet-18
// has 11.2 million): training holds the parameters, their gradient, the
// optimizer's velocity and, under a low-bit rule, per-worker gradients and
// residuals, so memory grows with the count times the workers, and an MLP
// width typed by mistake (--hidden 100000000) would otherwise end in an
// out-of-memory crash.
const MaxParams = 1 << 25

// mlpParams is the MLP's weight and bias count, in*h0 + h0 + h0*h1 + h1 +
// ... + hk*out + out, saturating at MaxParams+1 so that it cannot overflow.
func mlpParams(in int, hidden []int, out int) int64 {
	var n int64
	prev := int64(in)
	for _, w := range append(slices.Clone(hidden), out) {
		if prev > MaxParams || int64(w) > MaxParams || (prev+1)*int64(w) > MaxParams {
			return MaxParams + 1
		}
		n += (prev + 1) * int64(w)
		if n > MaxParams {
			return MaxParams + 1
		}
		prev = int64(w)
	}
	return n
}

// NewModel builds cfg.Model for images shaped like d, initialised from
// rand.New(rand.NewPCG(seed, 0)); an MLP of more than MaxParams parameters
// is an error.
func NewModel(cfg Config, d *data.Dataset, seed uint64) (*nn.Model, error) {
	cfg.defaults()
	rng := rand.New(rand.NewPCG(seed, 0))
	switch cfg.Model {
	case "mlp":
		if n := mlpParams(d.ImageSize(), cfg.Hidden, d.Classes); n > MaxParams {
			return nil, fmt.Errorf("mlp %d-%v-%d: more than the limit of %d parameters", d.ImageSize(), cfg.Hidden, d.Classes, int64(MaxParams))
		}
		return nn.NewMLP(rng, d.ImageSize(), cfg.Hidden, d.Classes), nil
	case "cnn":
		if d.H%4 != 0 || d.W%4 != 0 {
			return nil, fmt.Errorf("cnn needs image sides divisible by 4, not %dx%d", d.H, d.W)
		}
		return nn.NewSmallCNN(rng, d.C, d.H, d.W, d.Classes), nil
	case "resnet18":
		rc := nn.ResNet18Config(d.Classes)
		rc.InChannels, rc.H, rc.W = d.C, d.H, d.W
		return nn.NewResNet(rng, rc)
	case "resnet-mini":
		return nn.NewResNet(rng, nn.ResNetConfig{Blocks: []int{1, 1, 1, 1}, Width: 8, InChannels: d.C, H: d.H, W: d.W, Classes: d.Classes})
	case "resnet-standin":
		return nn.NewResNet(rng, nn.StandInConfig(d.C, d.H, d.W, d.Classes))
	case "resnet-standin-small":
		return nn.NewResNet(rng, nn.SmallStandInConfig(d.C, d.H, d.W, d.Classes))
	}
	return nil, fmt.Errorf("unknown model %q", cfg.Model)
}

// StepStat is one optimizer step.
type StepStat struct {
	Epoch int     `json:"epoch"`
	Loss  float64 `json:"loss"` // mean training loss of the batch
	Acc   float64 `json:"acc"`  // training accuracy of the batch
}

// EpochStat is one epoch.
type EpochStat struct {
	Epoch     int     `json:"epoch"`
	TrainLoss float64 `json:"train_loss"` // mean of the epoch's batch losses
	TrainAcc  float64 `json:"train_acc"`
	ValAcc    float64 `json:"val_acc"` // top-1 accuracy on the test split
	ValLoss   float64 `json:"val_loss"`
}

// History is everything a run records that a resumed run must reproduce
// bit for bit.
type History struct {
	Steps  []StepStat  `json:"steps"`
	Epochs []EpochStat `json:"epochs"`
	Diags  []Diag      `json:"diags,omitempty"`
}

// Timing is wall-clock time spent per phase (not deterministic; never part
// of a checkpoint).
type Timing struct {
	Steps int `json:"steps"`
	// Compute is forward and backward of all replicas; Aggregate the
	// aggregation (FP32 mean, encoding, controller transactions, decoding);
	// Optimizer the SGD update; Eval the validation passes.
	// They are left out of JSON so that results stay byte-identical for a
	// seed.
	Compute, Aggregate, Optimizer, Eval, Diag time.Duration `json:"-"`
	// ControllerTransactions counts cxl transactions issued.
	ControllerTransactions int `json:"controller_transactions"`
}

// Result is a finished run.
type Result struct {
	Policy  string  `json:"policy"`
	Label   string  `json:"label"`
	Model   string  `json:"model"`
	Params  int     `json:"params"`
	Head    int     `json:"head_params"`
	Traffic Traffic `json:"traffic"`
	History
	// Final is the last epoch's validation accuracy.
	Final  float64 `json:"final_acc"`
	Timing Timing  `json:"timing"`
	// ResumedFrom is the epoch the run resumed after (0: fresh).
	ResumedFrom int `json:"resumed_from,omitempty"`
	// Schedule is the run's learning-rate schedule (Schedule.String), ""
	// when constant.
	Schedule string `json:"schedule,omitempty"`
}

// Run trains cfg.Model on sets.Train and validates on sets.Test after every
// epoch, through one Loop. It stops early with ctx's error (after writing
// nothing partial).
func Run(ctx context.Context, cfg Config, sets *data.Sets) (*Result, error) {
	l, err := Start(cfg, sets)
	if err != nil {
		return nil, err
	}
	cfg.defaults()
	m, agg := l.Stepper.Model, l.Agg
	res := &Result{
		Policy: cfg.Policy.String(), Label: cfg.Policy.Label(), Model: m.Name,
		Params: m.NumParams(), Head: m.GroupParams(nn.Head),
		Traffic: PolicyTraffic(m, cfg.Policy),
	}
	if !cfg.Schedule.IsConstant() {
		res.Schedule = cfg.Schedule.String()
	}
	start := 1
	if cfg.Resume {
		ep, hist, err := loadCheckpoint(cfg, sets, m, l.Opt, agg)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, err
		default:
			start, res.History, res.ResumedFrom = ep+1, hist, ep
			cfg.logf("resumed %s after epoch %d", cfg.Checkpoint, ep)
		}
	}
	l.Hooks = runHooks(cfg, sets, l, res)
	if err := l.Run(ctx, start, cfg.Epochs); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("train: %w", err)
	}
	res.Timing = l.Timing
	res.Timing.ControllerTransactions = agg.ControllerTransactions()
	if n := len(res.Epochs); n > 0 {
		res.Final = res.Epochs[n-1].ValAcc
	}
	return res, nil
}

// Start returns the loop Run would train, before its first step: the
// model initialised from cfg.Seed, its aggregator, and the stepper whose
// Batches(epoch) draw each epoch's order from cfg.Seed. Nothing in it
// depends on cfg.Policy but the aggregator: for a seed, every policy
// starts from the same weights and sees the same batches split into the
// same worker shards (nn.Shard), so the policies of a study are paired
// (common random numbers).
func Start(cfg Config, sets *data.Sets) (*Loop, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("train config: %w", err)
	}
	cfg.defaults()
	if sets == nil || sets.Train == nil || sets.Test == nil || sets.Train.Len() < cfg.Batch {
		return nil, fmt.Errorf("train: training split smaller than one batch of %d", cfg.Batch)
	}
	tr, te := sets.Train, sets.Test
	if te.ImageSize() != tr.ImageSize() || te.Classes != tr.Classes {
		return nil, fmt.Errorf("train: test split %s does not match training split %s", te.Name, tr.Name)
	}
	m, err := NewModel(cfg, tr, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	agg, err := NewAggregator(m, cfg.Policy, cfg.Workers, cfg.Layout)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	return NewLoop(cfg, m, agg, tr, te), nil
}

// runHooks are Run's additions to the loop: the step history, the cosine
// diagnostics of cfg.DiagEpochs, progress logs and the checkpoint.
func runHooks(cfg Config, sets *data.Sets, l *Loop, res *Result) Hooks {
	var ds diagScratch
	var dg Diag
	m := l.Stepper.Model
	return Hooks{
		AfterAggregate: func(s *Step) error {
			if slices.Contains(cfg.DiagEpochs, s.Epoch) && (cfg.DiagSteps == 0 || dg.Steps < cfg.DiagSteps) {
				bc, tc := ds.step(m, l.Stepper.Grads, l.Agg.Mean())
				dg.Steps++
				dg.Binary.add(bc)
				dg.Ternary.add(tc)
				if cfg.DiagFormats {
					fc, err := StepFormatCosines(m, l.Stepper.Grads)
					if err != nil {
						return fmt.Errorf("format diagnostics: %w", err)
					}
					if dg.Formats == nil {
						dg.Formats = new(FormatCosines)
					}
					dg.Formats.add(fc)
				}
			}
			res.Steps = append(res.Steps, StepStat{Epoch: s.Epoch, Loss: s.Loss, Acc: float64(s.Correct) / float64(s.N)})
			if cfg.LogEvery > 0 && s.InEpoch%cfg.LogEvery == 0 {
				cfg.logf("%s epoch %d/%d step %d/%d loss %.4f", res.Label, s.Epoch, cfg.Epochs, s.InEpoch, s.Batches, s.Loss)
			}
			return nil
		},
		EndEpoch: func(es *EpochStat) error {
			if dg.Steps > 0 {
				dg.Epoch = es.Epoch
				dg.Binary.scale(1 / float64(dg.Steps))
				dg.Ternary.scale(1 / float64(dg.Steps))
				if dg.Formats != nil {
					dg.Formats.scale(1 / float64(dg.Steps))
				}
				res.Diags = append(res.Diags, dg)
			}
			dg = Diag{}
			res.Epochs = append(res.Epochs, *es)
			cfg.logf("%s epoch %d/%d: train loss %.4f acc %.4f, val acc %.4f", res.Label, es.Epoch, cfg.Epochs, es.TrainLoss, es.TrainAcc, es.ValAcc)
			if cfg.Checkpoint != "" {
				return saveCheckpoint(cfg, sets, m, l.Opt, l.Agg, es.Epoch, res.History)
			}
			return nil
		},
	}
}

func (c Config) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

// Evaluate returns the mean loss and top-1 accuracy of the replicas' model
// on d, in batches of batch images split over the replicas (inference
// mode: running statistics, no gradients).
func Evaluate(reps []*nn.Replica, d *data.Dataset, batch int) (loss, acc float64, err error) {
	b, err := data.NewBatcher(d, batch, nil, false, data.Augment{})
	if err != nil {
		return 0, 0, err
	}
	m := reps[0].Model
	sz := d.ImageSize()
	x := make([]float32, batch*sz)
	y := make([]int, batch)
	res := make([]nn.ShardResult, len(reps))
	correct := 0
	for n := b.Next(x, y); n > 0; n = b.Next(x, y) {
		nn.EvalShards(reps, &nn.Tensor{Shape: append([]int{n}, m.InShape...), Data: x[:n*sz]}, y[:n], res)
		for _, r := range res {
			correct += r.Correct
			loss += r.Loss * float64(r.N)
		}
	}
	if d.Len() == 0 {
		return 0, 0, fmt.Errorf("evaluate: %s is empty", d.Name)
	}
	return loss / float64(d.Len()), float64(correct) / float64(d.Len()), nil
}

// fingerprint is the part of the config a checkpoint must match to resume:
// everything that shapes the trajectory. Epochs (a resumed run may train
// longer) and the diagnostic settings (they only read gradients) are not
// part of it, except that a schedule other than constant shapes every step
// by the run's length, so it adds itself and the epochs (a constant run's
// fingerprint reads as it did before schedules existed). The data sets are: name, size and a CRC of images and labels,
// so another data set, --train-n, --test-n or --per-class is refused.
func fingerprint(c Config, sets *data.Sets) string {
	c.defaults()
	fp := fmt.Sprintf("model=%s hidden=%v workers=%d batch=%d lr=%g signlr=%g mom=%g wd=%g policy=%s layout=%v aug=%+v seed=%d train=%s test=%s",
		c.Model, c.Hidden, c.Workers, c.Batch, c.LR, c.SignLR, c.Momentum, c.WeightDecay, c.Policy, c.Layout, c.Aug, c.Seed,
		dataFingerprint(sets.Train), dataFingerprint(sets.Test))
	if !c.Schedule.IsConstant() {
		fp += fmt.Sprintf(" schedule=%s epochs=%d", c.Schedule, c.Epochs)
	}
	return fp
}

// dataFingerprint names a split by its name, size and content.
func dataFingerprint(d *data.Dataset) string {
	h := crc32.NewIEEE()
	h.Write(d.Pixels)
	var b [8]byte
	for _, l := range d.Labels {
		binary.LittleEndian.PutUint64(b[:], uint64(l))
		h.Write(b[:])
	}
	return fmt.Sprintf("%s:%d:%08x", d.Name, d.Len(), h.Sum32())
}

const efPrefix = "train.ef."

func saveCheckpoint(cfg Config, sets *data.Sets, m *nn.Model, opt *nn.SGD, agg *Aggregator, epoch int, h History) error {
	hj, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", cfg.Checkpoint, err)
	}
	ck := m.Checkpoint(opt, map[string]string{
		"model":        m.Name,
		"train.epoch":  strconv.Itoa(epoch),
		"train.config": fingerprint(cfg, sets),
		"train.hist":   string(hj),
	})
	for k, per := range agg.Residuals() {
		for i, e := range per {
			if e != nil {
				ck.Tensors = append(ck.Tensors, nn.NamedTensor{
					Name: fmt.Sprintf("%s%d.%s", efPrefix, k, m.Params[i].Name), Shape: []int{len(e)}, Data: e,
				})
			}
		}
	}
	if err := nn.SaveCheckpoint(cfg.Checkpoint, ck); err != nil {
		return err // names the file
	}
	return nil
}

func loadCheckpoint(cfg Config, sets *data.Sets, m *nn.Model, opt *nn.SGD, agg *Aggregator) (int, History, error) {
	var h History
	if _, err := os.Stat(cfg.Checkpoint); err != nil {
		return 0, h, err
	}
	ck, err := nn.LoadCheckpoint(cfg.Checkpoint)
	if err != nil {
		return 0, h, fmt.Errorf("resume: %w", err)
	}
	if got, want := ck.Meta["train.config"], fingerprint(cfg, sets); got != want {
		return 0, h, fmt.Errorf("resume %s: checkpoint was written by a different configuration:\n  checkpoint: %s\n  this run:   %s", cfg.Checkpoint, got, want)
	}
	ep, err := strconv.Atoi(ck.Meta["train.epoch"])
	if err != nil || ep < 1 {
		return 0, h, fmt.Errorf("resume %s: bad epoch %q", cfg.Checkpoint, ck.Meta["train.epoch"])
	}
	if err := json.Unmarshal([]byte(ck.Meta["train.hist"]), &h); err != nil {
		return 0, h, fmt.Errorf("resume %s: history: %w", cfg.Checkpoint, err)
	}
	if err := m.Restore(ck, opt); err != nil {
		return 0, h, fmt.Errorf("resume %s: %w", cfg.Checkpoint, err)
	}
	for k, per := range agg.Residuals() {
		for i, e := range per {
			if e == nil {
				continue
			}
			name := fmt.Sprintf("%s%d.%s", efPrefix, k, m.Params[i].Name)
			t := ck.Tensor(name)
			if t == nil || len(t.Data) != len(e) {
				return 0, h, fmt.Errorf("resume %s: missing or misshapen %s", cfg.Checkpoint, name)
			}
			copy(e, t.Data)
		}
	}
	return ep, h, nil
}

package train

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/nn"
)

// Stepper runs the data-parallel steps of one model over one training set:
// W replicas, each epoch's shuffled and augmented batches, and forward and
// backward of every batch split into W shards. Run and the control-plane
// pilots (package pilot) both step through it, so for a seed they draw the
// same batches and compute the same per-worker gradients.
type Stepper struct {
	Model *nn.Model
	Reps  []*nn.Replica
	// Grads[k][i] is worker k's gradient of parameter i after Step (views
	// of the replicas' own buffers).
	Grads [][][]float32
	// X and Y hold the current batch: Batcher.Next fills them, Step reads
	// them (a caller may alter labels in between, e.g. to inject noise).
	X []float32
	Y []int

	cfg   Config
	d     *data.Dataset
	shard []nn.ShardResult
}

// NewStepper returns a stepper of cfg.Workers replicas of m over d, with
// batch buffers of cfg.Batch images (the defaults apply: 8 workers, 128).
func NewStepper(cfg Config, m *nn.Model, d *data.Dataset) *Stepper {
	cfg.defaults()
	s := &Stepper{Model: m, Reps: m.NewReplicas(cfg.Workers), cfg: cfg, d: d,
		X: make([]float32, cfg.Batch*d.ImageSize()), Y: make([]int, cfg.Batch),
		shard: make([]nn.ShardResult, cfg.Workers)}
	s.Grads = make([][][]float32, cfg.Workers)
	for k := range s.Grads {
		s.Grads[k] = s.Reps[k].Grads
	}
	return s
}

// Batches returns the batcher of epoch (1-based): shuffled and augmented
// from stream 1000+epoch of cfg.Seed, a partial last batch dropped.
func (s *Stepper) Batches(epoch int) (*data.Batcher, error) {
	b, err := data.NewBatcher(s.d, s.cfg.Batch, rand.New(rand.NewPCG(s.cfg.Seed, 1000+uint64(epoch))), true, s.cfg.Aug)
	if err != nil {
		return nil, err
	}
	b.DropLast = true
	return b, nil
}

// Step runs forward and backward of the first n images of X and Y on the W
// shards and returns the mean loss and the number classified correctly. A
// NaN or infinite loss is an error: the run has diverged.
func (s *Stepper) Step(n int) (loss float64, correct int, err error) {
	xb := &nn.Tensor{Shape: append([]int{n}, s.Model.InShape...), Data: s.X[:n*s.d.ImageSize()]}
	nn.TrainShards(s.Reps, xb, s.Y[:n], s.shard)
	for _, r := range s.shard {
		loss += r.Loss * float64(r.N)
		correct += r.Correct
	}
	loss /= float64(n)
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return loss, correct, fmt.Errorf("loss is %v (diverged; lower the learning rate)", loss)
	}
	return loss, correct, nil
}

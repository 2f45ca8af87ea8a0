package control

import (
	"errors"
	"fmt"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/workload"
)

// PredictorInput is what the Predictor sees: trace-derived timing only. It
// holds no gradients, weights or losses (paper Sec. 3).
type PredictorInput struct {
	Profile  *workload.Profile
	Schedule workload.Schedule
	Buckets  workload.BucketOptions
	// FP32 is the software All-Reduce the FP32 path uses.
	FP32 collective.AlphaBeta
	// CXL is the NEURON-Fabric controller path.
	CXL collective.CXLPath
}

// Forecast is the Predictor's forecast of one training step's collective
// pressure, the quantities the paper's Predictor stores.
type Forecast struct {
	Model string `json:"model"`
	// ForwardS and BackwardS are one worker's compute time per step.
	ForwardS  float64 `json:"forward_s"`
	BackwardS float64 `json:"backward_s"`
	// GradientBytes is the FP32 gradient volume per worker and step.
	GradientBytes int64 `json:"gradient_bytes"`
	// ShardBytesPerGPU is the reduce-scatter shard each of the N workers
	// owns: GradientBytes / N.
	ShardBytesPerGPU float64 `json:"shard_bytes_per_gpu"`
	// AllReduceS is the FP32 All-Reduce time of the whole gradient.
	AllReduceS float64 `json:"allreduce_s"`
	// LowBitS is the controller-path time of one aggregation per mode.
	LowBitS map[string]float64 `json:"lowbit_s"`
	// PeakCXLBytesPerS is the highest rate at which gradient bytes become
	// ready during backward, over a sliding window of a twentieth of the
	// backward time, summed over workers: the bandwidth the CXL path must
	// absorb to keep up with backward.
	PeakCXLBytesPerS float64 `json:"peak_cxl_bytes_per_s"`
	// CacheLineReads is the number of 64-byte lines read through the
	// controller per step on the FP32 bypass path (every worker reads the
	// whole reduced gradient) and per low-bit mode.
	CacheLineReads       int64            `json:"cache_line_reads"`
	LowBitCacheLineReads map[string]int64 `json:"lowbit_cache_line_reads"`
	// Pressure is PeakCXLBytesPerS over the CXL path's bandwidth: above 1
	// the FP32 path cannot keep up with backward.
	Pressure float64 `json:"pressure"`
}

// Predict forecasts one step from the profile's timeline and bucket trace.
func Predict(in PredictorInput) (Forecast, error) {
	if in.Profile == nil {
		return Forecast{}, errors.New("predictor: no profile")
	}
	tl, err := in.Profile.Timeline(in.Schedule)
	if err != nil {
		return Forecast{}, fmt.Errorf("predictor: %w", err)
	}
	tr, err := workload.Bucketize(tl, in.Buckets)
	if err != nil {
		return Forecast{}, fmt.Errorf("predictor: %w", err)
	}
	n := in.FP32.N
	if n < 1 {
		return Forecast{}, fmt.Errorf("predictor: All-Reduce over %d workers", n)
	}
	f := Forecast{
		Model:                tl.Model,
		ForwardS:             float64(tl.ForwardPS) * 1e-12,
		BackwardS:            float64(tl.BackwardPS) * 1e-12,
		GradientBytes:        tr.Bytes(),
		ShardBytesPerGPU:     float64(tr.Bytes()) / float64(n),
		LowBitS:              map[string]float64{},
		LowBitCacheLineReads: map[string]int64{},
	}
	est, err := in.FP32.Time(collective.Call{Op: collective.AllReduce, Bytes: float64(tr.Bytes())})
	if err != nil {
		return Forecast{}, fmt.Errorf("predictor: FP32 All-Reduce: %w", err)
	}
	f.AllReduceS = est.Seconds
	elems := tr.Elements()
	w := int64(in.CXL.Workers)
	if w < 1 {
		return Forecast{}, fmt.Errorf("predictor: CXL path with %d workers", w)
	}
	f.CacheLineReads = w * lowbit.Lines(elems*4)
	for _, m := range []cxl.Mode{cxl.Aggregate(lowbit.Binary), cxl.Aggregate(lowbit.Ternary)} {
		bits := m.BitsPerElement(lowbit.PaperGate, lowbit.PaperAccounting)
		e, err := in.CXL.Time(elems, bits, true)
		if err != nil {
			return Forecast{}, fmt.Errorf("predictor: %v path: %w", m, err)
		}
		f.LowBitS[m.String()] = e.Seconds
		// Each worker reads the aggregate: one response line per 64
		// elements (element-major counts), the paper's packet.
		f.LowBitCacheLineReads[m.String()] = w * lowbit.Lines(elems)
	}
	// Peak demand over a sliding window of a twentieth of backward (at
	// least 1 ns): buckets cut from one tensor become ready at the same
	// instant, so per-bucket gaps would give unbounded rates.
	win := max(tl.BackwardPS/20, 1000)
	lo, inWin := 0, int64(0)
	for _, b := range tr.Buckets {
		inWin += b.Bytes
		for tr.Buckets[lo].ReadyPS <= b.ReadyPS-win {
			inWin -= tr.Buckets[lo].Bytes
			lo++
		}
		if r := float64(inWin) / (float64(win) * 1e-12) * float64(w); r > f.PeakCXLBytesPerS {
			f.PeakCXLBytesPerS = r
		}
	}
	if bw := in.CXL.Link.Bandwidth; bw > 0 {
		f.Pressure = f.PeakCXLBytesPerS / bw
	}
	return f, nil
}

package netsim

import (
	"bufio"
	"fmt"
	"io"
	"math"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/workload"
)

// Release is one bucket All-Reduce of the schedule.
type Release struct {
	Step   int `json:"step"`
	Bucket int `json:"bucket"`
	// AtNS is when the All-Reduce is released; Bytes its buffer size on
	// every worker (scaled).
	AtNS  int64 `json:"at_ns"`
	Bytes int64 `json:"bytes"`
}

// Schedule is the gradient traffic of Steps training steps.
type Schedule struct {
	Model string
	// StepNS is the FP32 reference step period T; ForwardNS and
	// BackwardNS the step's compute.
	StepNS, ForwardNS, BackwardNS int64
	Releases                      []Release
}

// ReferenceStepNS returns the FP32 reference step period of trace tr on
// link l with w workers: forward + max(backward, the finish of the last
// bucket), each bucket's ring All-Reduce (collective's alpha-beta ring time)
// starting at max(its ready time, the previous bucket's finish).
func ReferenceStepNS(tr *workload.Trace, w int, l collective.Link) (int64, error) {
	ar := collective.AlphaBeta{Alg: collective.Ring, N: w, Link: l}
	var finish float64 // seconds from the start of backward
	for _, b := range tr.Buckets {
		e, err := ar.Time(collective.Call{Op: collective.AllReduce, Bytes: float64(b.Bytes)})
		if err != nil {
			return 0, fmt.Errorf("netsim: reference schedule: %w", err)
		}
		finish = math.Max(finish, float64(b.ReadyPS)*1e-12) + e.Seconds
	}
	bwd := math.Max(float64(tr.BackwardPS)*1e-12, finish)
	return int64(math.Round((float64(tr.ForwardPS)*1e-12 + bwd) * 1e9)), nil
}

// NewSchedule lays out steps steps of trace tr at period stepNS: bucket b of
// step s is released at s*stepNS + forward + ready_b, its bytes divided by
// scale (rounded, at least w bytes so every ring chunk is non-empty).
func NewSchedule(tr *workload.Trace, steps int, stepNS int64, scale float64, w int) (*Schedule, error) {
	if len(tr.Buckets) == 0 {
		return nil, fmt.Errorf("netsim: trace %s has no buckets", tr.Model)
	}
	if steps < 1 || steps > MaxSteps || stepNS <= 0 || !(scale >= 1) || w < 2 {
		return nil, fmt.Errorf("netsim: schedule of %d steps of %d ns at scale %v for %d workers", steps, stepNS, scale, w)
	}
	fwd := int64(math.Round(float64(tr.ForwardPS) / 1e3))
	s := &Schedule{Model: tr.Model, StepNS: stepNS, ForwardNS: fwd, BackwardNS: int64(math.Round(float64(tr.BackwardPS) / 1e3))}
	for k := 0; k < steps; k++ {
		for _, b := range tr.Buckets {
			n := max(int64(math.Round(float64(b.Bytes)/scale)), int64(w))
			at := int64(k)*stepNS + fwd + int64(math.Round(float64(b.ReadyPS)/1e3))
			s.Releases = append(s.Releases, Release{Step: k, Bucket: b.Index, AtNS: at, Bytes: n})
		}
	}
	return s, nil
}

// ScheduleHeader is the first line of the schedule file the ns-3 program
// reads.
const ScheduleHeader = "step,bucket,release_ns,bytes"

// WriteCSV writes the schedule in the ns-3 program's input format.
func (s *Schedule) WriteCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, ScheduleHeader)
	for _, r := range s.Releases {
		fmt.Fprintf(bw, "%d,%d,%d,%d\n", r.Step, r.Bucket, r.AtNS, r.Bytes)
	}
	return bw.Flush()
}

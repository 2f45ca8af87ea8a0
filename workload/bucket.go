package workload

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/lowbit"
)

// MiB is 2^20 bytes.
const MiB = 1 << 20

// PaperBucketBytes is the paper's bucket cap: 32 MiB of FP32 gradients.
const PaperBucketBytes = 32 * MiB

// BucketMode selects how the gradient stream is cut into buckets.
type BucketMode uint8

const (
	// SplitTensors cuts the reverse-order gradient stream into fixed-size
	// chunks; a tensor may span chunks.
	SplitTensors BucketMode = iota
	// WholeTensors is PyTorch DDP's rule: whole tensors in reverse order; a
	// bucket closes once its size reaches the cap.
	WholeTensors
)

func (m BucketMode) String() string {
	switch m {
	case SplitTensors:
		return "split"
	case WholeTensors:
		return "whole"
	}
	return fmt.Sprintf("BucketMode(%d)", uint8(m))
}

// ParseBucketMode accepts "split" and "whole" (or "ddp").
func ParseBucketMode(s string) (BucketMode, error) {
	switch s {
	case "split", "chunk", "fixed":
		return SplitTensors, nil
	case "whole", "ddp", "tensor":
		return WholeTensors, nil
	}
	return 0, fmt.Errorf("unknown bucket mode %q (want split or whole)", s)
}

// BucketOptions configures Bucketize.
type BucketOptions struct {
	// CapBytes is the bucket cap in gradient bytes; 0 means PaperBucketBytes.
	CapBytes int64
	// FirstCapBytes caps the first bucket (DDP uses 1 MiB); 0 means CapBytes.
	FirstCapBytes int64
	// BytesPerElement is the gradient element size; 0 means 4 (FP32).
	BytesPerElement int
	Mode            BucketMode
}

// Bucket is one gradient bucket handed to the collective.
type Bucket struct {
	Index    int   `json:"index"`
	Elements int64 `json:"elements"`
	// Bytes is the bucket's gradient size (Elements * BytesPerElement).
	Bytes int64 `json:"bytes"`
	// ReadyPS is when the bucket's last gradient is produced, from the
	// start of backward.
	ReadyPS int64 `json:"ready_ps"`
	// First and Last name the first and last tensors it holds (backward
	// order); empty for traces read from files.
	First string `json:"first,omitempty"`
	Last  string `json:"last,omitempty"`
	// Groups splits the bucket's elements among layer groups, with the
	// mode each went through; nil when the trace does not say (built-in
	// profiles, CSV, Chakra).
	Groups []GroupShare `json:"groups,omitempty"`
	// EncodePS and VotePS are the measured cost of packing one worker's
	// low-bit payload of this bucket and of the vote (recorded traces).
	EncodePS int64 `json:"encode_ps,omitempty"`
	VotePS   int64 `json:"vote_ps,omitempty"`
	// Op is the collective that carries the bucket (collective.AllReduce
	// unless the trace says otherwise); only an all-reduce or a
	// reduce-scatter carries gradients with Elements and Groups.
	Op collective.Op `json:"op"`
	// RecordedPS is how long the trace recorded the collective taking (0
	// when it does not say).
	RecordedPS int64 `json:"recorded_ps,omitempty"`
}

// GroupShare is one layer group's part of a bucket.
type GroupShare struct {
	Name     string        `json:"name"`
	Elements int64         `json:"elements"`
	Mode     lowbit.Format `json:"mode"`
}

// Diagnostics are one group's cosine diagnostics of a step: the cosine of
// each format's aggregate with the FP32 mean (what the admission ladder,
// control.Ladder, reads): the paper's G-Binary and G-Ternary votes always,
// and in Cosines the other formats the recording measured (INT8, BFP8;
// trace version 2). A format absent from both was not measured.
type Diagnostics struct {
	CosBinary  float64 `json:"cos_binary"`
	CosTernary float64 `json:"cos_ternary"`
	// Cosines holds the formats beyond the paper's two (never FP32,
	// G-Binary or G-Ternary); nil when none was measured.
	Cosines map[lowbit.Format]float64 `json:"cosines,omitempty"`
}

// Cos returns the cosines indexed by format, NaN for a format not
// measured (what control.Ladder.Admit reads as "not measured").
func (d Diagnostics) Cos() [lowbit.NumFormats]float64 {
	var c [lowbit.NumFormats]float64
	for i := range c {
		c[i] = math.NaN()
	}
	c[lowbit.Binary], c[lowbit.Ternary] = d.CosBinary, d.CosTernary
	for f, v := range d.Cosines {
		if f.Valid() {
			c[f] = v
		}
	}
	return c
}

// Trace is the bucket trace of one worker's step in memory (its JSON
// tags are this value's, not the trace file format: that is
// ParseTraceJSON's, and go doc ./traces lists every kind of file read).
type Trace struct {
	Model string `json:"model"`
	// ForwardPS and BackwardPS are the step's compute; zero when unknown.
	ForwardPS  int64 `json:"forward_ps"`
	BackwardPS int64 `json:"backward_ps"`
	// BytesPerElement is the gradient element size (4 for FP32).
	BytesPerElement int      `json:"bytes_per_element"`
	Buckets         []Bucket `json:"buckets"`
	// OptimizerPS is the step's optimizer time; zero when unknown.
	OptimizerPS int64 `json:"optimizer_ps,omitempty"`
	// Step is the training step recorded (0 when the trace does not say).
	Step int `json:"step,omitempty"`
	// Workers and Policy describe the recorded job (0 and "" when unknown).
	Workers int    `json:"workers,omitempty"`
	Policy  string `json:"policy,omitempty"`
	// Diagnostics are the step's cosine diagnostics per group, when the
	// recording measured them.
	Diagnostics map[string]Diagnostics `json:"diagnostics,omitempty"`
	// Steps lists every step of a multi-step trace file, the first being
	// this one; nil for a one-step trace.
	Steps []*Trace `json:"-"`
	// Ranks is the number of per-rank files the trace was read from (a
	// multi-rank Chakra workload, where it is also Workers); 0 for one file.
	Ranks int `json:"ranks,omitempty"`
	// Source says what the reader read and left out (nil for a trace
	// built in memory).
	Source *Provenance `json:"source,omitempty"`

	total int64 // running byte total while decoding
}

// Elements returns the total gradient elements of the trace.
func (t *Trace) Elements() int64 {
	var n int64
	for _, b := range t.Buckets {
		n += b.Elements
	}
	return n
}

// Bytes returns the total gradient bytes of the trace.
func (t *Trace) Bytes() int64 {
	var n int64
	for _, b := range t.Buckets {
		n += b.Bytes
	}
	return n
}

// addShare counts n elements of group g into the bucket's shares (FP32,
// the profile's own mode); a span without a group adds none.
func (b *Bucket) addShare(g string, n int64) {
	if g == "" {
		return
	}
	for i := range b.Groups {
		if b.Groups[i].Name == g {
			b.Groups[i].Elements += n
			return
		}
	}
	b.Groups = append(b.Groups, GroupShare{Name: g, Elements: n, Mode: lowbit.FP32})
}

// mulDiv returns a*b/c rounded down, for 0 <= a, b and a*b/c < 2^63.
func mulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, _ := bits.Div64(hi, lo, uint64(c))
	return int64(q)
}

// Bucketize cuts the timeline's gradient stream into buckets. Gradients are
// produced uniformly over each layer's backward interval, so an element at
// offset x of a span of E elements lasting D is produced at start + D*x/E
// (rounded down); a bucket is ready when its last element is produced.
func Bucketize(tl *Timeline, o BucketOptions) (*Trace, error) {
	if o.CapBytes == 0 {
		o.CapBytes = PaperBucketBytes
	}
	if o.FirstCapBytes == 0 {
		o.FirstCapBytes = o.CapBytes
	}
	if o.BytesPerElement == 0 {
		o.BytesPerElement = 4
	}
	bpe := int64(o.BytesPerElement)
	if bpe < 1 || bpe > 64 {
		return nil, fmt.Errorf("bucketize %s: bytes per element %d outside 1..64", tl.Model, bpe)
	}
	if o.CapBytes < bpe || o.FirstCapBytes < bpe {
		return nil, fmt.Errorf("bucketize %s: bucket cap %d (first %d) is smaller than one element (%d bytes)", tl.Model, o.CapBytes, o.FirstCapBytes, bpe)
	}
	if o.Mode != SplitTensors && o.Mode != WholeTensors {
		return nil, fmt.Errorf("bucketize %s: unknown bucket mode %v", tl.Model, o.Mode)
	}
	tr := &Trace{Model: tl.Model, ForwardPS: tl.ForwardPS, BackwardPS: tl.BackwardPS, BytesPerElement: o.BytesPerElement}
	capOf := func(i int) int64 {
		if i == 0 {
			return o.FirstCapBytes / bpe
		}
		return o.CapBytes / bpe
	}
	var (
		cur      Bucket // the open bucket
		curOpen  bool
		lastTime int64
	)
	emit := func(ready int64, last string) {
		cur.Index = len(tr.Buckets)
		cur.Bytes = cur.Elements * bpe
		cur.ReadyPS = ready
		cur.Last = last
		tr.Buckets = append(tr.Buckets, cur)
		cur, curOpen = Bucket{}, false
	}
	for _, sp := range tl.Spans {
		if sp.Elements == 0 {
			continue
		}
		dur := sp.EndPS - sp.StartPS
		at := func(x int64) int64 { return sp.StartPS + mulDiv(dur, x, sp.Elements) }
		var off int64 // element offset within the span
		for _, t := range sp.Tensors {
			e := t.Elements()
			switch o.Mode {
			case WholeTensors:
				if !curOpen {
					cur, curOpen = Bucket{First: t.Name}, true
				}
				cur.Elements += e
				cur.addShare(sp.Group, e)
				off += e
				if cur.Elements >= capOf(len(tr.Buckets)) {
					emit(at(off), t.Name)
				}
			case SplitTensors:
				rem := e
				for rem > 0 {
					if !curOpen {
						cur, curOpen = Bucket{First: t.Name}, true
					}
					take := min(rem, capOf(len(tr.Buckets))-cur.Elements)
					cur.Elements += take
					cur.addShare(sp.Group, take)
					off += take
					rem -= take
					if cur.Elements == capOf(len(tr.Buckets)) {
						emit(at(off), t.Name)
					}
				}
			}
			if curOpen {
				cur.Last = t.Name
			}
		}
		lastTime = sp.EndPS
	}
	if curOpen && cur.Elements > 0 {
		emit(lastTime, cur.Last)
	}
	return tr, nil
}

// Gradients returns a copy of t holding only its gradient collectives
// (all-reduce and reduce-scatter, what the controller aggregates), each
// step filtered alike and buckets renumbered; other (read-only) fields are
// shared.
func (t *Trace) Gradients() *Trace {
	one := func(s *Trace) *Trace {
		c := *s
		c.Buckets = nil
		c.Steps = nil
		for _, b := range s.Buckets {
			if b.Op.Aggregates() {
				b.Index = len(c.Buckets)
				c.Buckets = append(c.Buckets, b)
			}
		}
		return &c
	}
	out := one(t)
	for _, s := range t.Steps {
		out.Steps = append(out.Steps, one(s))
	}
	return out
}

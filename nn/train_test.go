package nn

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeBatch returns batch number step of a deterministic random dataset:
// images (n, 1, 12, 12) and labels in [0, 10).
func fakeBatch(step, n int) (*Tensor, []int) {
	rng := rand.New(rand.NewPCG(uint64(step), 99))
	x := randTensor(rng, n, 1, 12, 12)
	y := make([]int, n)
	for i := range y {
		y[i] = rng.IntN(10)
		x.Data[i*144+y[i]] += 3 // make the task learnable
	}
	return x, y
}

type run struct {
	m    *Model
	reps []*Replica
	opt  *SGD
	agg  [][]float32
	res  []ShardResult
}

func newRun(seed uint64, w int, mk func(*rand.Rand) *Model) *run {
	m := mk(rand.New(rand.NewPCG(seed, 1)))
	return &run{m: m, reps: m.NewReplicas(w), opt: NewSGD(m, 0.05, 0.9, 5e-4), agg: m.NewGrads(), res: make([]ShardResult, w)}
}

func (r *run) steps(from, to, batch int) {
	for s := from; s < to; s++ {
		x, y := fakeBatch(s, batch)
		TrainShards(r.reps, x, y, r.res)
		MeanGrads(r.agg, r.reps)
		r.opt.Step(r.agg)
	}
}

// state returns every byte a resumed run must reproduce.
func (r *run) state(t *testing.T) []byte {
	var b bytes.Buffer
	if err := WriteCheckpoint(&b, r.m.Checkpoint(r.opt, nil)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

var smallModels = []struct {
	name string
	mk   func(*rand.Rand) *Model
}{
	{"smallcnn", func(rng *rand.Rand) *Model { return NewSmallCNN(rng, 1, 12, 12, 10) }},
	{"resnet-w4", func(rng *rand.Rand) *Model {
		m, err := NewResNet(rng, ResNetConfig{Blocks: []int{1, 1}, Width: 4, InChannels: 1, H: 12, W: 12, Classes: 10})
		if err != nil {
			panic(err)
		}
		return m
	}},
}

func TestDeterministicAcrossGOMAXPROCS(t *testing.T) {
	for _, tt := range smallModels {
		// W = 1 gives the lone replica's GEMMs GOMAXPROCS goroutines (the
		// batched convolutions and fc1 are large enough to use them); W = 4
		// gives each replica GOMAXPROCS/4.
		for _, w := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/W=%d", tt.name, w), func(t *testing.T) {
				one := func() []byte {
					r := newRun(11, w, tt.mk)
					r.steps(0, 3, 64)
					return r.state(t)
				}
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
				a := one()
				runtime.GOMAXPROCS(4)
				b := one()
				if !bytes.Equal(a, b) {
					t.Errorf("GOMAXPROCS=1 and GOMAXPROCS=4 give different parameters")
				}
				if c := one(); !bytes.Equal(b, c) {
					t.Errorf("two runs with the same seed differ")
				}
			})
		}
	}
}

func TestResumeBitExact(t *testing.T) {
	for _, tt := range smallModels {
		t.Run(tt.name, func(t *testing.T) {
			full := newRun(5, 3, tt.mk)
			full.steps(0, 6, 30)

			first := newRun(5, 3, tt.mk)
			first.steps(0, 3, 30)
			path := filepath.Join(t.TempDir(), "ck.bin")
			if err := first.m.SaveFile(path, first.opt, map[string]string{"step": "3"}); err != nil {
				t.Fatal(err)
			}
			second := newRun(77, 3, tt.mk) // different initialisation, overwritten by LoadFile
			meta, err := second.m.LoadFile(path, second.opt)
			if err != nil {
				t.Fatal(err)
			}
			if meta["step"] != "3" {
				t.Errorf("meta step = %q; want 3", meta["step"])
			}
			second.steps(3, 6, 30)
			if !bytes.Equal(full.state(t), second.state(t)) {
				t.Errorf("resumed run differs from the uninterrupted run")
			}
		})
	}
}

func TestCheckpointErrors(t *testing.T) {
	m := NewSmallCNN(rand.New(rand.NewPCG(1, 1)), 1, 12, 12, 10)
	opt := NewSGD(m, 0.1, 0.9, 0)
	var good bytes.Buffer
	if err := WriteCheckpoint(&good, m.Checkpoint(opt, map[string]string{"epoch": "2"})); err != nil {
		t.Fatal(err)
	}
	g := good.Bytes()
	flip := append([]byte(nil), g...)
	flip[len(flip)/2] ^= 0x40
	badVersion := append([]byte(nil), g...)
	binary.LittleEndian.PutUint32(badVersion[8:], 9)
	other := NewMLP(rand.New(rand.NewPCG(1, 1)), 144, []int{8}, 10)
	var wrongModel bytes.Buffer
	WriteCheckpoint(&wrongModel, other.Checkpoint(nil, nil))
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "bad magic"},
		{"magic-only", g[:8], "truncated"},
		{"truncated-half", g[:len(g)/2], "checksum"},
		{"truncated-last-byte", g[:len(g)-1], "checksum"},
		{"bit-flip", flip, "checksum"},
		{"bad-version", badVersion, "version 9"},
		{"not-a-checkpoint", []byte("hello, world, this is text"), "bad magic"},
		{"other-model", wrongModel.Bytes(), "model"},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name+".ckpt")
			if err := os.WriteFile(path, tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := m.LoadFile(path, opt)
			if err == nil {
				t.Fatalf("LoadFile(%s) succeeded; want error", tt.name)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadFile error %q; want it to name %s and contain %q", err, path, tt.want)
			}
		})
	}
	if _, err := m.LoadFile(filepath.Join(dir, "absent"), opt); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Errorf("missing file: error %v; want one naming the file", err)
	}
	// A valid file whose tensors do not fit: rejected with nothing changed.
	before := append([]float32(nil), m.Params[0].Value...)
	c := m.Checkpoint(opt, nil)
	c.Tensors[len(c.Tensors)-1].Shape = []int{1, len(c.Tensors[len(c.Tensors)-1].Data)}
	if err := m.Restore(c, opt); err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("Restore with a bad shape: %v; want a shape error", err)
	}
	for i, v := range m.Params[0].Value {
		if math.Float32bits(v) != math.Float32bits(before[i]) {
			t.Fatalf("failed Restore changed the parameters")
		}
	}
}

func FuzzReadCheckpoint(f *testing.F) {
	m := NewMLP(rand.New(rand.NewPCG(1, 1)), 3, nil, 2)
	var b bytes.Buffer
	WriteCheckpoint(&b, m.Checkpoint(NewSGD(m, 1, 0, 0), map[string]string{"k": "v"}))
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ReadCheckpoint(bytes.NewReader(data))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := WriteCheckpoint(&out, c); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), data) {
			t.Errorf("round trip changed the bytes")
		}
	})
}

func TestRunningStatsMerge(t *testing.T) {
	// Merged running mean after one step equals the running mean a single
	// replica computes from the mean of the shard means.
	bm := newModel("bn", []int{2}, 2, rand.New(rand.NewPCG(1, 1)), func(b *builder) Layer {
		return Sequential{newBatchNorm(b, "bn", 2)}
	})
	reps := bm.NewReplicas(2)
	x := &Tensor{Shape: []int{4, 2}, Data: []float32{1, 0, 3, 0, 5, 2, 7, 2}}
	res := make([]ShardResult, 2)
	runShards(reps, x, []int{0, 0, 0, 0}, res, true)
	SyncBuffers(reps)
	// shard means: (2, 0) and (6, 2); mean (4, 1); running = 0.1·mean.
	want := []float32{0.4, 0.1}
	for i, v := range bm.Buffers[0].Value {
		if math.Abs(float64(v-want[i])) > 1e-6 {
			t.Errorf("running_mean[%d] = %v; want %v", i, v, want[i])
		}
	}
	for _, r := range reps {
		if r.buffers[0][0] != bm.Buffers[0].Value[0] {
			t.Errorf("replica buffer not synchronised")
		}
	}
}

func TestTrainStepDoesNotAllocate(t *testing.T) {
	// GEMMs this small stay on the calling goroutine (gemm's serial path);
	// once the replica's buffers and gemm's scratch exist, a step allocates
	// nothing.
	m := NewSmallCNN(rand.New(rand.NewPCG(1, 1)), 1, 4, 4, 10)
	r := m.NewReplica()
	x, y := fakeBatch(0, 2)
	x = &Tensor{Shape: []int{2, 1, 4, 4}, Data: x.Data[:32]}
	r.TrainStep(x, y)
	if n := testing.AllocsPerRun(10, func() { r.TrainStep(x, y) }); n != 0 {
		t.Errorf("TrainStep allocates %v times per step; want 0", n)
	}
	opt := NewSGD(m, 0.1, 0.9, 1e-4)
	if n := testing.AllocsPerRun(10, func() { opt.Step(r.Grads) }); n != 0 {
		t.Errorf("SGD.Step allocates %v times; want 0", n)
	}
}

// endless is a reader that never ends: the checkpoint magic, then zeros.
type endless struct{ off int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		if e.off < len(CheckpointMagic) {
			p[i] = CheckpointMagic[e.off]
		} else {
			p[i] = 0
		}
		e.off++
	}
	return len(p), nil
}

// TestCheckpointReadBounded: a checkpoint stream that never ends is
// refused at the size limit, and one that does not open with the magic
// at its first bytes (--resume --checkpoint /dev/zero) at once, rather
// than reading the whole stream into memory.
func TestCheckpointReadBounded(t *testing.T) {
	e := &endless{}
	if _, err := readCheckpoint(e, 1<<20); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("endless stream: %v; want the size limit", err)
	}
	if e.off > 1<<20+64<<10 {
		t.Errorf("read %d bytes of the stream, limit %d", e.off, 1<<20)
	}
	z := &endless{off: len(CheckpointMagic)} // zeros from the start
	if _, err := ReadCheckpoint(z); err == nil || !strings.Contains(err.Error(), "magic") {
		t.Errorf("zeros: %v; want bad magic", err)
	}
	if z.off-len(CheckpointMagic) > len(CheckpointMagic) {
		t.Errorf("read %d bytes of zeros before refusing them", z.off-len(CheckpointMagic))
	}
	if _, err := LoadCheckpoint("/dev/zero"); err == nil || !strings.Contains(err.Error(), "magic") {
		t.Errorf("/dev/zero: %v", err)
	}
}

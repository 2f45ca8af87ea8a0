package train

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
)

// BenchmarkAggregate measures one step's aggregation of 8 workers'
// gradients per rule: for G-Binary/G-Ternary this is encode + controller
// writes + aggregate reads + decode.
func BenchmarkAggregate(b *testing.B) {
	models := []struct {
		name string
		m    *nn.Model
	}{
		{"mlp784-256-10", nn.NewMLP(rand.New(rand.NewPCG(1, 0)), 784, []int{256}, 10)},
		{"cnn28x56-100", nn.NewSmallCNN(rand.New(rand.NewPCG(1, 0)), 1, 28, 56, 100)},
		{"resnet18-100", nil}, // built only when selected: 8 x 11.2M gradients
	}
	for _, mm := range models {
		if mm.m == nil {
			if !strings.Contains(b.Name()+"/"+mm.name, "resnet18") || !benchSelected("resnet18") {
				continue
			}
			mm.m = nn.ResNet18(rand.New(rand.NewPCG(1, 0)), 100)
		}
		grads := randGrads(mm.m, 8, 1)
		for _, pol := range []string{"fp32", "majority-sign", "g-binary", "g-ternary", "g-binary+ef"} {
			for _, layout := range []lowbit.Layout{lowbit.WorkerMajor, lowbit.ElementMajor} {
				if layout == lowbit.ElementMajor && pol != "g-binary" {
					continue
				}
				b.Run(mm.name+"/"+pol+"/"+layout.String(), func(b *testing.B) {
					p, _ := ParsePolicy(pol)
					a, err := NewAggregator(mm.m, p, 8, layout)
					if err != nil {
						b.Fatal(err)
					}
					dst := mm.m.NewGrads()
					b.ReportAllocs()
					c0 := cpuTime()
					for b.Loop() {
						if err := a.Aggregate(grads, dst); err != nil {
							b.Fatal(err)
						}
					}
					// CPU time (user+sys of the process) per step: robust
					// on a shared machine where wall time includes waiting.
					b.ReportMetric(float64(cpuTime()-c0)/1e6/float64(b.N), "cpu-ms/op")
					b.ReportMetric(float64(mm.m.NumParams())*float64(b.N)/b.Elapsed().Seconds()/1e6, "Melem/s")
				})
			}
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchSelected reports whether the -test.bench pattern names s, so the
// large ResNet-18 case runs only when asked for.
func benchSelected(s string) bool {
	f := flag.Lookup("test.bench")
	return f != nil && strings.Contains(f.Value.String(), s)
}

// BenchmarkAggregateSum measures one step's aggregation of 8 workers'
// gradients of the training stand-ins (nn.StandInConfig: 1 channel and
// 10 classes, 2 channels and 100 classes) under the summed rules, int8
// and bfp8 for every group: scale agreement, encode, integer sum, decode.
//
//	go test -run '^$' -bench AggregateSum -count 6 ./train
func BenchmarkAggregateSum(b *testing.B) {
	for _, tt := range []struct{ c, classes int }{{1, 10}, {2, 100}} {
		m, err := nn.NewResNet(rand.New(rand.NewPCG(1, 0)), nn.StandInConfig(tt.c, 28, 28, tt.classes))
		if err != nil {
			b.Fatal(err)
		}
		grads := randGrads(m, 8, 1)
		for _, pol := range []string{"int8", "bfp8"} {
			b.Run(fmt.Sprintf("standin-C=%d-classes=%d/%s", tt.c, tt.classes, pol), func(b *testing.B) {
				p, err := ParsePolicy(pol)
				if err != nil {
					b.Fatal(err)
				}
				a, err := NewAggregator(m, p, 8, lowbit.WorkerMajor)
				if err != nil {
					b.Fatal(err)
				}
				dst := m.NewGrads()
				b.ReportAllocs()
				c0 := cpuTime()
				for b.Loop() {
					if err := a.Aggregate(grads, dst); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime()-c0)/1e6/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

package experiments

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/hw"
)

// The blocks' cost models: each unit's estimated CPU time (run.Unit.Cost),
// on which `reproduce --shard i/n` deals the units to its parts (longest
// first) and which `reproduce --list` sums. A cost never changes a byte of
// output; it only has to be close enough that the parts finish together,
// and `nfabric report merge` prints each part's estimate beside the CPU
// time it took, so a poor estimate shows.
//
// A unit whose work grows with its configuration is costed by its size
// (training: steps and evaluated images; hardware: datapath width; the
// fast-forward checks: simulated lines; the payload cross-checks:
// elements) times coefficients measured on the reference machine; a unit
// whose work is fixed (a timing table at its set configurations, the ns-3
// ring) is costed by its measured CPU time. A unit no measurement covers
// (configurations only the full tier runs) costs 0, "unknown": the deal
// spreads such units by count and `reproduce --list` counts them.
//
// Reference machine: the project's 2-core Intel Xeon (AVX-512), Go 1.26,
// shared with other jobs (CPU time, not wall time, is measured, so the
// load inflates the figures only through cache and memory contention).
// Measured with
//
//	nfabric reproduce --jobs 1 --shard 0/1 --out calib
//
// at the quick tier (each unit runs alone, so its shard-file cpu_s is its
// own CPU time, its tools included), and, for the training coefficients'
// second size, the standard-tier schedule sweeps
//
//	/usr/bin/time -v nfabric train sweep --study S --tier standard --seed 1001 --seeds 2 \
//	    --schedules constant,cosine,cosine:warmup=1,step
//
// (24 runs of the standard size each; the total CPU time over the runs).

// cpuSeconds is s seconds of CPU as a Duration.
func cpuSeconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// costed gives every unit that units lists the cost cost(cfg) assigns its
// key: the blocks whose units are named by what sizes them (a width, a
// table, a check) declare their model this way.
func costed[R any](units func(run.Config) ([]run.Unit[R], error), cost func(cfg run.Config) func(key string) time.Duration) func(run.Config) ([]run.Unit[R], error) {
	return func(cfg run.Config) ([]run.Unit[R], error) {
		us, err := units(cfg)
		if err != nil {
			return nil, err
		}
		c := cost(cfg)
		for i := range us {
			us[i].Cost = c(us[i].Key)
		}
		return us, nil
	}
}

// kernelCost is a stand-in's kernels on the reference machine, in
// CPU-seconds: one training step (forward and backward of 128 images over
// 8 replicas) and one validated image (forward only).
type kernelCost struct{ Step, Eval float64 }

// standIn are the ResNet stand-in's kernels by data set, from
//
//	go test -run '^$' -bench 'StandIn(Step|Eval)' -benchtime 10x ./nn
//
// (C=1/classes=10: 35.02 cpu-ms/step, 0.1146 cpu-ms/image; C=2/classes=100:
// 132.8 and 0.2616).
var standIn = map[string]kernelCost{
	"fashion-mnist":    {Step: 0.03502, Eval: 0.0001146},
	"fashion-stack100": {Step: 0.1328, Eval: 0.0002616},
}

// The rest of a training run (aggregation through the controller model,
// the optimizer, batching, the diagnostics) as a factor on its kernels,
// one per kind of run: the measured mean CPU time of the quick tier's
// units of that kind over the kernels' prediction for them.
const (
	// training/validated/*, 12 units: 2.13 CPU-s measured, 2.03 predicted.
	// Checked at the standard size: the validated schedule sweep's 24
	// runs took 29.8 CPU-s each, the model says 31.4.
	loopValidated = 1.05
	// training/boundary/*, 24 units: 9.10 measured, 6.77 predicted (3.1M
	// parameters: a larger share in aggregation and the optimizer).
	loopBoundary = 1.34
	// formats/* rows (every format's cosines in the diagnostics), 15
	// units: 2.45 measured, 2.03 predicted.
	loopFormats = 1.21
	// control/fig6/* and control/delay/* (the pilots on the validated
	// workload), 7 units: 5.75 and 2.87 measured, 5.12 and 2.56
	// predicted.
	loopPilot = 1.12
)

// trainCost is a run of o's estimated CPU time: its kernels (standIn of
// its data set; o.Model must be the ResNet stand-in) times the factor of
// its kind of run, or 0 for a workload no benchmark covers.
func trainCost(o TrainOptions, loop float64) time.Duration {
	k, ok := standIn[o.Data]
	if !ok || o.Model != "resnet-standin" {
		return 0
	}
	steps, eval := trainWork(o)
	return cpuSeconds(loop * float64(o.Epochs) * (float64(steps)*k.Step + float64(eval)*k.Eval))
}

// trainWork is a run of o's batches and validation images an epoch
// (a whole split when o keeps all of it: 60,000 and 10,000 images, the
// sizes of the MNIST family every stand-in derives from).
func trainWork(o TrainOptions) (steps, eval int) {
	n, t := o.TrainN, o.TestN
	if n == 0 {
		n = 60000
	}
	if t == 0 {
		t = 10000
	}
	b := max(o.Batch, 1)
	return (n + b - 1) / b, t
}

// studyLoop is the factor of a study's runs.
func studyLoop(study string) float64 {
	switch study {
	case StudyBoundary:
		return loopBoundary
	case StudyFormats:
		return loopFormats
	}
	return loopValidated
}

// hwAt512 are the hardware tools' measured CPU-seconds on a 512-bit
// datapath (hardware/* and formats/synth/* units of the quick tier), by
// tool and datapath (hw.Datapath.String()); hwExponent is how each tool's
// time grows with the width w, (w/512)^exponent, fitted on the widths the
// quick tier runs (64 and 512 bits; co-simulation 64 to 1024). A tool or
// datapath only the full tier runs (Verilator, iCE40, the ECP5 mapping)
// has no entry: its units cost 0, unknown.
var (
	hwAt512 = map[string]map[string]float64{
		"cosim/iverilog": {"vote": 0.227, "int8": 0.217, "bfp8": 0.390},
		"synth/debian":   {"vote": 3.45, "int8": 2.10, "bfp8": 9.79},
		"synth/yowasp":   {"vote": 1.76},
		"pnr/ecp5":       {"vote": 43.4, "int8": 49.4, "bfp8": 150.4},
	}
	hwExponent = map[string]float64{
		"cosim/iverilog": 1.16, // least squares over 64 (0.031) to 1024 bits (0.769)
		"synth/debian":   1.04, // 0.4 at 64 bits, 3.5 at 512
		"synth/yowasp":   0.62, // 0.5, 1.8
		"pnr/ecp5":       1.17, // 3.8, 43.4
	}
)

// hwCost is one hardware tool run's estimated CPU time: tool is
// "cosim/SIM", "synth/BUILD" (generic synthesis; ecp5 for synth_ecp5) or
// "pnr/FAMILY".
func hwCost(tool string, c hw.Config) time.Duration {
	at, ok := hwAt512[tool][c.Datapath.String()]
	if !ok || c.Width < 1 {
		return 0
	}
	return cpuSeconds(at * math.Pow(float64(c.Width)/512, hwExponent[tool]))
}

// measuredCPU are the CPU-seconds of the units whose work is the same at
// every tier (a table of the timing model at its set configurations, a
// replay of a model's trace, the ns-3 runs), by block/key, as the quick
// tier's calibration measured them (the shard file's cpu_s; units of less
// than a millisecond read 0.001). The payload cross-checks are scaled by
// their elements (payloadCost), the validation checks by their lines
// (replayCost).
var measuredCPU = map[string]float64{
	"payload/example":                                      0.001,
	"payload/check/element-major/w8/g-binary":              0.006,
	"payload/check/element-major/w8/g-ternary/pattern:3":   0.007,
	"payload/check/element-major/w8/g-ternary/worker":      0.012,
	"payload/check/element-major/w8/g-ternary/margin:2":    0.006,
	"payload/check/element-major/w3/g-binary":              0.002,
	"payload/check/element-major/w3/g-ternary/pattern:3":   0.002,
	"payload/check/element-major/w3/g-ternary/worker":      0.004,
	"payload/check/element-major/w3/g-ternary/margin:2":    0.003,
	"payload/check/worker-major/w8/g-binary":               0.006,
	"payload/check/worker-major/w8/g-ternary/pattern:3":    0.006,
	"payload/check/worker-major/w8/g-ternary/worker":       0.011,
	"payload/check/worker-major/w8/g-ternary/margin:2":     0.006,
	"payload/check/worker-major/w64/g-binary":              0.052,
	"payload/check/worker-major/w64/g-ternary/pattern:3":   0.054,
	"payload/check/worker-major/w64/g-ternary/worker":      0.09,
	"payload/check/worker-major/w64/g-ternary/margin:2":    0.054,
	"payload/check/worker-major/w1000/g-binary":            0.086,
	"payload/check/worker-major/w1000/g-ternary/pattern:3": 0.098,
	"payload/check/worker-major/w1000/g-ternary/worker":    0.097,
	"payload/check/worker-major/w1000/g-ternary/margin:2":  0.093,
	"payload/bits":                               0.001,
	"timing/closed-form":                         0.001,
	"timing/table4":                              1.409,
	"timing/fig3":                                3.736,
	"timing/ddr5/table4":                         62.845,
	"timing/ddr5/layout":                         16.308,
	"timing/ddr5/periodic":                       7.844,
	"timing/ddr5/ablations":                      25.353,
	"timing/loaded-latency/ideal":                0.176,
	"timing/silicon/table4/asic-pcie5-x8":        8.094,
	"timing/silicon/table4/fpga-pcie5-x16":       7.705,
	"timing/silicon/fig3/asic-pcie5-x8":          181.0, // standard tier: nfabric timing envelope --cxl-device asic-pcie5-x8 --quick
	"timing/silicon/fig3/fpga-pcie5-x16":         153.5, // likewise with --cxl-device fpga-pcie5-x16
	"timing/loaded-latency/asic-pcie5-x8":        9.971,
	"timing/loaded-latency/fpga-pcie5-x16":       9.044,
	"timing/loaded-latency/projection-pcie6-x16": 10.214,
	"replay/run/0-bert-large/healthy":            0.079,
	"replay/run/0-bert-large/congested":          0.079,
	"replay/run/0-bert-large/ddr5_healthy":       15.343,
	"replay/run/0-bert-large/ddr5_congested":     12.474,
	"replay/run/1-gpt2-xl/healthy":               0.095,
	"replay/run/1-gpt2-xl/congested":             0.109,
	"replay/run/1-gpt2-xl/ddr5_healthy":          15.636,
	"replay/run/1-gpt2-xl/ddr5_congested":        12.911,
	"replay/run/2-gpt3/healthy":                  0.054,
	"replay/run/2-gpt3/congested":                0.049,
	"replay/run/2-gpt3/ddr5_healthy":             15.374,
	"replay/run/2-gpt3/ddr5_congested":           13.262,
	"replay/validate/0/healthy/identity":         0.027,
	"replay/validate/0/healthy/g-binary":         0.031,
	"replay/validate/0/congested/identity":       0.037,
	"replay/validate/0/congested/g-binary":       0.032,
	"replay/validate/0/ddr5_healthy/identity":    0.39,
	"replay/validate/0/ddr5_healthy/g-binary":    0.382,
	"replay/validate/0/ddr5_congested/identity":  2.395,
	"replay/validate/0/ddr5_congested/g-binary":  2.485,
	"replay/validate/1/healthy/identity":         0.128,
	"replay/validate/1/healthy/g-binary":         0.124,
	"replay/validate/1/congested/identity":       0.131,
	"replay/validate/1/congested/g-binary":       0.132,
	"replay/validate/1/ddr5_healthy/identity":    2.12,
	"replay/validate/1/ddr5_healthy/g-binary":    1.979,
	"replay/validate/1/ddr5_congested/identity":  1.684,
	"replay/validate/1/ddr5_congested/g-binary":  1.783,
	"replay/validate/2/healthy/identity":         0.401,
	"replay/validate/2/healthy/g-binary":         0.362,
	"replay/validate/2/congested/identity":       0.386,
	"replay/validate/2/congested/g-binary":       0.398,
	"replay/validate/2/ddr5_healthy/identity":    10.961,
	"replay/validate/2/ddr5_healthy/g-binary":    11.096,
	"replay/validate/2/ddr5_congested/identity":  9.416,
	"replay/validate/2/ddr5_congested/g-binary":  9.988,
	"replay/validate/3/healthy/identity":         0.132,
	"replay/validate/3/healthy/g-binary":         0.148,
	"replay/validate/3/congested/identity":       0.138,
	"replay/validate/3/congested/g-binary":       0.14,
	"replay/validate/3/ddr5_healthy/identity":    3.618,
	"replay/validate/3/ddr5_healthy/g-binary":    3.482,
	"replay/validate/3/ddr5_congested/identity":  2.929,
	"replay/validate/3/ddr5_congested/g-binary":  2.99,
	"collective/gpt2-xl":                         0.117,
	"netcheck/astra-regressions":                 0.001,
	"netcheck/ns3-ring":                          10.287,
	"formats/timing":                             0.287,
	"control/ns3-telemetry":                      10.844,
	"control/predictor":                          0.005,
	"hardware/tools":                             0.46,
}

// fixedCost is a fixed unit's measured CPU time, 0 when none was measured
// (the full tier's extra units).
func fixedCost(block string) func(run.Config) func(key string) time.Duration {
	return func(run.Config) func(string) time.Duration {
		return func(key string) time.Duration { return cpuSeconds(measuredCPU[block+"/"+key]) }
	}
}

// formatsPilotCost is the formats pilot's estimated CPU time (its warm-up
// calibration and its run, with every format's cosines at each
// diagnostics interval, o.Epochs counting both): a part per CPU-second of
// its kernels and a fixed part, fitted on two measured sizes,
//
//	quick:    formats/pilot 26.0 CPU-s, kernels 9.0 (4 epochs of the boundary stand-in, 2,000 images)
//	standard: formats/pilot 143.1 CPU-s, kernels 105.0 (18 epochs, 5,000 images)
//
// (the quick one from the calibration run above, the standard one from
// `nfabric reproduce --tier standard --shard 0/10`, its shard file's
// cpu_s), so 1.22 CPU-s per kernel CPU-s and 15.0 fixed. A single factor
// fitted at the quick size alone (2.88) put the standard pilot at 302.5.
func formatsPilotCost(o TrainOptions) time.Duration {
	k := trainCost(o, 1)
	if k == 0 {
		return 0
	}
	return cpuSeconds(1.22*k.Seconds() + 15.0)
}

// liveLoopStep is the live loop's measured CPU-seconds per training step
// on its own workload (resnet-standin-small on mnist-stack100, which no
// benchmark covers), evaluation included: control/live-loop took 3.5
// CPU-s for 3 epochs of 15 steps at the quick tier.
const liveLoopStep = 3.5 / 45

// unitCost is a control unit's estimated CPU time under o: the Fig. 6 and
// delay pilots by the training model on their workload, the live loop by
// its steps, the ns-3 pilot and the Predictor as measured (the ns-3 pilot
// scaled by its simulated steps).
func (o PilotOptions) unitCost(key string) time.Duration {
	switch {
	case strings.HasPrefix(key, PartFig6+"/"):
		return trainCost(o.Train, loopPilot)
	case strings.HasPrefix(key, PartLiveLoop):
		steps, _ := trainWork(o.Hard)
		return cpuSeconds(liveLoopStep * float64(o.Hard.Epochs*steps))
	case strings.HasPrefix(key, "delay/"):
		t := o.Train
		t.Epochs = o.telemetryEpochs()
		return trainCost(t, loopPilot)
	case key == "ns3-telemetry":
		return cpuSeconds(measuredCPU["control/ns3-telemetry"] * float64(o.NS3.Config.Steps) / 2)
	}
	return cpuSeconds(measuredCPU["control/"+key])
}

// functionalCost is the functional tester's CPU time for p: a part per
// line of the Sec. 6 test and a part per random sweep, fitted on two
// measured sizes,
//
//	/usr/bin/time nfabric verify --lines 262144 --sweeps 64 --json     2.1 CPU-s (the quick tier's)
//	/usr/bin/time nfabric verify --lines 2097152 --sweeps 1024 --json  19.2 CPU-s (the full tier's)
//
// 1.8 CPU-s per 2^18 lines and 0.3 per 64 sweeps.
func functionalCost(p FunctionalParams) time.Duration {
	return cpuSeconds(1.8*float64(p.Lines)/(1<<18) + 0.3*float64(p.Sweeps)/64)
}

// payloadCost is a payload unit's CPU time: its measured time at the
// quick tier's 2^16 elements a cross-check, scaled by the tier's count
// (the cross-checks' work is linear in their elements).
func payloadCost(cfg run.Config) func(key string) time.Duration {
	scale := float64(payloadElements(cfg)) / (1 << 16)
	return func(key string) time.Duration {
		s := measuredCPU["payload/"+key]
		if strings.HasPrefix(key, "check/") {
			s *= scale
		}
		return cpuSeconds(s)
	}
}

// replayCost is a replay unit's CPU time: a replay of a model's trace as
// measured (the same inputs at every tier), a validation check as
// measured at the quick tier per simulated line, times its lines (the
// full tier checks more buckets of the same traces).
func replayCost(cfg run.Config) func(key string) time.Duration {
	lines := map[string]int{}
	o := replayBlockOptions(cfg)
	o.defaults()
	if ins, err := o.inputs(); err == nil {
		if jobs, err := validationJobs(o, ins); err == nil {
			for i, j := range jobs {
				n := 0
				for _, b := range j.bs {
					n += int(b.Lines)
				}
				lines[fmt.Sprintf("validate/%d/", i)] = n
			}
		}
	}
	return func(key string) time.Duration {
		s, ok := measuredCPU["replay/"+key]
		if !ok || !strings.HasPrefix(key, "validate/") {
			return cpuSeconds(s)
		}
		job := key[:strings.Index(key[len("validate/"):], "/")+len("validate/")+1]
		if q := replayQuickLines[job]; q > 0 {
			s *= float64(lines[job]) / float64(q)
		}
		return cpuSeconds(s)
	}
}

// replayQuickLines are the quick tier's validation traces' lines, which
// the measured validation times are of (table fig2-validation).
var replayQuickLines = map[string]int{"validate/0/": 163643, "validate/1/": 760552, "validate/2/": 1048576, "validate/3/": 698373}

// Package control is NEURON-Fabric's control plane (paper Sec. 3 and 8):
// the Predictor, which forecasts collective pressure from trace-derived
// timing; the Commander, which proposes low-bit relief from network
// telemetry; the Supervisor, which guards training health with a loss
// CUSUM (Page, 1954) and returns groups to FP32 for cooldown and
// calibration; and the admission ladder, which maps warm-up diagnostics to
// the lowest-traffic mode that passes.
//
// # Shape
//
// Plane is a deterministic core in the style of etcd raft: every input is an
// Event fed to Step (a step boundary, a loss, diagnostics, a telemetry
// sample), and the only output is a list of Actions, each a mode to write
// into one layer group's mode latch. There are no goroutines, clocks or I/O
// inside; Apply, at the edge, writes actions into a controller through the
// cxl.ModeWriter interface, which can do nothing but set modes.
//
// # A group's cycle
//
//	warmup --(WarmupSteps)--> admit: LowBitDefault -> admitted(LowBitMode)
//	                                  FP32Default  -> ladder(diagnostics) -> admitted(mode) | rejected
//	admitted --(loss CUSUM alarm)--> cooldown --(CooldownSteps)--> calibrating
//	calibrating --(CalibrationSteps)--> admit again (same rule)
//	rejected --(new diagnostics)--> admit again
//
// Every run starts on FP32. An admitted group runs its low-bit mode when the
// Commander grants relief (always, when the Commander is disabled);
// otherwise, and in every other phase, it runs FP32 bypass.
//
// # Calibration
//
// The thresholds are workload-specific (paper Sec. 8 and 11). CalibrateCUSUM
// derives the Supervisor's slack and threshold from a fault-free FP32 loss
// record, and CalibrateLadder the ladder's rungs from a backbone's warm-up
// cosines; the pilots (package pilot) apply both to an always-FP32 run of
// the workload itself. DefaultConfig and DefaultLadder are the starting
// point calibrated on the paper's own Table 5; ExtendedLadder adds a rung
// for every format beyond the paper's two (INT8, BFP8).
//
// # Admission
//
// Ladder.Admit is the one admission rule: the plane applies it when a
// group's warm-up or calibration ends, the what-if planner
// (whatif.PlanFromDiagnostics) to recorded diagnostics and the format
// pilot (pilot.RunFormats) to its warm-up cosines, so all three decide the
// same way on the same cosines.
//
// # Bad input
//
// NaN or negative losses, cosines outside [-1, 1], steps that do not
// increase, unknown groups (also in NaN/Inf reports) and bad telemetry
// (NaN, non-positive capacity, time going backwards) are errors that change no state, except that bad
// telemetry makes the Commander fall back to FP32 until a good sample
// arrives, and a sample older than CommanderConfig.StaleNS does the same.
package control

package experiments

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/netsim"
	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/pilot"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/stats"
	"github.com/neuronfabric/nfabric/train"
	"github.com/neuronfabric/nfabric/usage"
	"github.com/neuronfabric/nfabric/workload"
)

func init() {
	run.Register(run.Spec[ControlUnit]{Name: "control", Title: controlTitle, Order: 50,
		Units: func(cfg run.Config) ([]run.Unit[ControlUnit], error) {
			return pilotBlockOptions(cfg).Units()
		},
		Layout: func(cfg run.Config, us []ControlUnit) (*report.Result, error) {
			return pilotBlockOptions(cfg).Layout(us)
		},
		Claims: func(cfg run.Config) []report.Claim {
			_, rows, _, _ := pilotBlockOptions(cfg).claimsTable(nil, nil)
			return rows
		}})
}

// pilotBlockOptions are the block's pilots for a run: the tier's, with the
// run's seed count for the Fig. 6 pilot and the live loop when it sets
// one.
func pilotBlockOptions(cfg run.Config) PilotOptions {
	o := PilotDefaults(cfg.Tier, cfg.Seed)
	if cfg.Seeds > 0 {
		o.Train.Seeds, o.Hard.Seeds = cfg.Seeds, cfg.Seeds
	}
	return o
}

const controlTitle = "Control-plane pilots (Sec. 8, Fig. 6)"

// StandardPilotSeeds is how many paired seeds the control block's pilots
// run at the standard tier: the Fig. 6 pilot's four scenarios and the live
// loop each, at the quick pilots' size. StandardPilotEpochs is the Fig. 6
// pilot's length there: at the quick 8 epochs the FP32 reference is still
// recovering from the fault window (epochs 5-6) when the run ends (measured:
// seed-mean slope 3.6 points/epoch over the last 5), so its endpoint claim
// could only be indicative.
const (
	StandardPilotSeeds  = 5
	StandardPilotEpochs = 14
)

// Paper figures of Sec. 8 (CIFAR-10/ResNet-18 G-Binary-default pilot).
const (
	paperPilotLowBit  = "81.11%"
	paperPilotTraffic = "0.214x"
	paperPilotAcc     = "90.87 ± 1.04"
)

// PilotOptions configure the control-plane pilots.
type PilotOptions struct {
	// Tier is the tier the options were built for (PilotDefaults); the
	// claims' tier column names it.
	Tier run.Tier
	// Train is the easy workload of the recovery pilot (Fig. 6).
	Train TrainOptions
	// Hard is the workload of the live admission loop (the paper's
	// CIFAR-100 loop; our 100-class stand-in).
	Hard    TrainOptions
	Control control.Config
	Fault   pilot.Fault
	// DiagEvery is the step interval of the cosine diagnostics.
	DiagEvery int
	// Delays are telemetry delays (ms) for the Commander sensitivity runs,
	// on a congested telemetry trace with StepMS per step.
	Delays []float64
	StepMS float64
	// TelemetryEpochs is the length of the telemetry runs (delays and
	// ns-3) in epochs of the easy workload; 0 means Train.Epochs.
	TelemetryEpochs int
	// Telemetry, when not nil, is the telemetry the delay runs deliver
	// to the Commander (e.g. a CSV read by control.ReadTelemetry) in
	// place of the synthetic healthy/congested episodes.
	Telemetry []control.Telemetry
	// NS3 is the job whose ns-3 telemetry the block's ns-3 pilot replays
	// (control_ns3.go); skipped when ns-3 is not installed.
	NS3  netsim.PairOptions
	Logf func(format string, args ...any)
}

// The control thresholds of the quick pilots, each from a stated
// procedure on the quick easy workload itself (the ResNet stand-in on
// Fashion-MNIST), never from the paper's figures or from the pilots'
// results; the control block re-derives them from its always-FP32 run and
// prints both (table "calibration"):
//
//   - pilotLossK, pilotLossH: control.CalibrateCUSUM on the always-FP32
//     run's fault-free steps (the 60 before the fault window) after the
//     15 warm-up steps, seed 1, rounded to two significant figures: the
//     relative loss excess had mean -0.377 (the loss still falling) and sd
//     0.0491, and its CUSUM never left 0, so K = 2 sd and H = 5 sd.
//   - pilotLadder: control.CalibrateLadder on that run's backbone cosines
//     at the end of warm-up (step 10: G-Binary 0.622, G-Ternary 0.4985).
//
// They depend on the engine's bits: a change to the GEMM's summation
// order moves them slightly (an earlier GEMM engine gave sd
// 0.0485, K 0.097, H 0.24), and the calibration table then says "no"
// until they are copied from its "derived here" column.
//
// The full configuration keeps them (they were not re-derived at full
// size; its calibration table shows what the procedure gives there).
const (
	pilotLossK = 0.098
	pilotLossH = 0.25
)

var pilotLadder = control.Ladder{{Format: lowbit.Binary, Min: 0.6}, {Format: lowbit.Ternary, Min: 0.45}}

// The learning rates, 100-class model and data the pilots were calibrated with:
// the training block's before its stand-in rate sweeps (QuickSignLR,
// ValidatedFP32LR, BoundaryFP32LR) and its wide 100-class stand-in
// (nn.StandInConfig); resnet-standin-small is that earlier stand-in, and
// mnist-stack100 its data before the boundary study moved to BoundaryData.
const (
	pilotLR        = 0.05
	pilotSignLR    = 1e-4
	pilotHardModel = "resnet-standin-small"
	pilotHardData  = "mnist-stack100"
)

// pilotLossAlpha is the weight of the Supervisor's loss average: it spans
// about 1/0.05 = 20 steps, about an epoch of the quick pilots, long enough to
// smooth per-batch noise and short enough to follow the falling loss.
const pilotLossAlpha = 0.05

// Validate refuses options that are wrong in themselves, before anything
// trains, as usage errors naming the `nfabric pilot` flag: a fault rate
// outside [0, 1], a fault window that starts after the last epoch (nothing
// would be injected), a negative diagnostics interval, and a control
// configuration the plane refuses for the pilots' groups.
func (o PilotOptions) Validate() error {
	if !(o.Fault.Rate >= 0 && o.Fault.Rate <= 1) {
		return usage.Errorf("--fault-rate %v out of [0, 1]", o.Fault.Rate)
	}
	if o.Fault.Rate > 0 && o.Fault.StartEpoch > o.Train.Epochs {
		return usage.Errorf("--fault-epochs %d-%d starts after the last of --epochs %d: nothing would be injected", o.Fault.StartEpoch, o.Fault.EndEpoch, o.Train.Epochs)
	}
	if o.DiagEvery < 0 {
		return usage.Errorf("--diag-every %d is negative", o.DiagEvery)
	}
	cc := o.Control
	cc.Groups = pilot.Groups()
	if err := cc.Validate(); err != nil {
		return usage.Wrap(err)
	}
	return nil
}

// LiveFollowsTrain copies the training options the user set onto the live
// admission loop's workload: its data set is its own (Hard.Data), but the
// model and the sizes the user gives apply to it as well, not only to the
// Fig. 6 runs. set reports whether the user set an option, by the name of
// its flag: model, hidden, epochs, train-n, test-n.
func (o *PilotOptions) LiveFollowsTrain(set func(flag string) bool) {
	if set("model") {
		o.Hard.Model = o.Train.Model
	}
	if set("hidden") {
		o.Hard.Hidden = o.Train.Hidden
	}
	if set("epochs") {
		o.Hard.Epochs = o.Train.Epochs
	}
	if set("train-n") {
		o.Hard.TrainN = o.Train.TrainN
	}
	if set("test-n") {
		o.Hard.TestN = o.Train.TestN
	}
}

// PilotDefaults returns the reproduce block's quick or full pilots, on the
// ResNet stand-ins of the training block (ValidatedOptions for the Fig. 6
// and Commander runs, BoundaryOptions for the live loop; the MLP and
// mnist-pairs100 stay options). The stand-in costs about 15 times the
// MLP's step, so the quick pilots train on 1,920 images (15 steps an epoch)
// with one seed; the recovery thresholds are in epochs (warm-up and
// cooldown one epoch each) and calibration is one diagnostics interval, so
// that re-admission sees fresh diagnostics. The standard tier runs the
// quick pilots over StandardPilotSeeds paired seeds, the Fig. 6 pilot and
// the live loop alike, so that the accuracy claim gets a paired interval
// and the control claims a count over seeds, and trains the Fig. 6 pilot
// for StandardPilotEpochs, so that the FP32 reference can plateau after
// the fault window (epochs 5-6) within train.Plateau's 5-epoch window.
func PilotDefaults(tier run.Tier, seed uint64) PilotOptions {
	easy := ValidatedOptions(run.TierQuick, seed)
	easy.Epochs, easy.Seeds, easy.TrainN, easy.TestN = 8, 1, 1920, 1000
	hard := BoundaryOptions(run.TierQuick, seed)
	hard.Seeds, hard.Epochs, hard.TrainN, hard.TestN = 1, 3, 1920, 1000
	// The pilots were calibrated, and their figures recorded, with the
	// training block's earlier learning rates and 100-class stand-in; these pins
	// keep them so (moving the pilots to the new ones is the pilots' call).
	easy.LR, hard.LR, easy.SignLR, hard.SignLR, hard.Model = pilotLR, pilotLR, pilotSignLR, pilotSignLR, pilotHardModel
	hard.Data = pilotHardData
	const diagEvery = 5
	cc := control.DefaultConfig(pilot.Groups()...)
	epoch := int64(easy.TrainN / easy.Batch)
	cc.WarmupSteps, cc.CooldownSteps, cc.CalibrationSteps = epoch, epoch, diagEvery
	cc.LossK, cc.LossH, cc.LossAlpha = pilotLossK, pilotLossH, pilotLossAlpha
	cc.Ladder = pilotLadder
	o := PilotOptions{Tier: tier, Train: easy, Hard: hard, Control: cc, Fault: pilot.Fault{StartEpoch: 5, EndEpoch: 6, Rate: 0.5},
		DiagEvery: diagEvery, Delays: []float64{0, 10, 100}, StepMS: 100, TelemetryEpochs: 4}
	full := tier == run.TierFull
	if tier == run.TierStandard {
		o.Train.Seeds, o.Hard.Seeds, o.Train.Epochs = StandardPilotSeeds, StandardPilotSeeds, StandardPilotEpochs
	}
	if full {
		o.Train = ValidatedOptions(run.TierFull, seed)
		o.Train.Epochs = 10
		o.Hard = BoundaryOptions(run.TierFull, seed)
		o.Hard.Seeds, o.Hard.Epochs = 1, 4
		o.Train.LR, o.Hard.LR = pilotLR, pilotLR
		o.Train.SignLR, o.Hard.SignLR, o.Hard.Model = pilotSignLR, pilotSignLR, pilotHardModel
		o.Hard.Data = pilotHardData
		epoch = int64(60000 / o.Train.Batch)
		o.Control.WarmupSteps, o.Control.CooldownSteps = epoch, epoch
		o.Fault = pilot.Fault{StartEpoch: 5, EndEpoch: 6, Rate: 0.5}
		o.TelemetryEpochs = 0
	}
	o.NS3 = NS3Defaults(full, seed)
	return o
}

func (o PilotOptions) pilotConfig(sc pilot.Scenario, t TrainOptions, seed uint64) pilot.Config {
	tc := t.Config(train.Uniform(train.RuleSpec{Rule: train.FormatRule(lowbit.FP32)}), seed)
	tc.DiagEpochs = nil
	tc.Logf = o.Logf
	return pilot.Config{Scenario: sc, Train: tc, Control: o.Control, Gate: lowbit.PaperGate, DiagEvery: o.DiagEvery, Fault: o.Fault,
		StepNS: int64(o.StepMS * 1e6)}
}

// ControlUnit is one unit of the control block; exactly one part is set.
type ControlUnit struct {
	// Pilot is one Fig. 6 recovery pilot (a scenario and a seed) or the
	// live admission loop on the hard workload.
	Pilot *PilotRun `json:"pilot,omitempty"`
	// Delay is one telemetry-delay run of the Commander.
	Delay *DelayRun `json:"delay,omitempty"`
	// Predictor holds the Predictor's forecasts for the built-in profiles.
	Predictor []Forecast `json:"predictor,omitempty"`
	// NS3 is the Commander pilot on ns-3 telemetry (or why it was skipped).
	NS3 *NS3Run `json:"ns3,omitempty"`
}

// CheckConsistent checks the unit's pilot result, if any
// (pilot.Result.CheckConsistent), as the framework does for every result.
func (u ControlUnit) CheckConsistent() error {
	if u.Pilot != nil {
		return u.Pilot.Result.CheckConsistent()
	}
	return nil
}

// Forecast is the Predictor's forecast for one built-in profile.
type Forecast struct {
	Profile  string           `json:"profile"` // workload.Builtin name
	Forecast control.Forecast `json:"forecast"`
}

// The two kinds of PilotRun.
const (
	PartFig6     = "fig6"
	PartLiveLoop = "live-loop"
)

// PilotRun is one pilot with the data set it trained on.
type PilotRun struct {
	Part string `json:"part"` // PartFig6 or PartLiveLoop
	Data string `json:"data"`
	// StandInFor is the set the pilot's options asked for when Data is
	// its stand-in (DataInfo.StandInFor); "" otherwise.
	StandInFor string       `json:"stand_in_for,omitempty"`
	Result     pilot.Result `json:"result"`
}

// DelayRun is G-Binary-default with the Commander on congested telemetry
// delivered DelayMS late.
type DelayRun struct {
	DelayMS float64 `json:"delay_ms"`
	// Modes is every step's modes (pilot.Result.ModeTimeline).
	Modes  []string     `json:"modes"`
	Result pilot.Result `json:"result"`
}

// Units lists the block's units: each Fig. 6 scenario for each seed, the
// live loop, one run per telemetry delay, and the Predictor's forecasts.
func (o PilotOptions) Units() ([]run.Unit[ControlUnit], error) {
	if o.Train.Seeds < 1 {
		return nil, fmt.Errorf("seeds %d < 1", o.Train.Seeds)
	}
	var us []run.Unit[ControlUnit]
	for _, sc := range pilot.Scenarios() {
		for s := range o.Train.Seeds {
			seed := o.Train.Seed + uint64(s)
			us = append(us, run.Unit[ControlUnit]{Key: fmt.Sprintf("%s/%s/seed%d", PartFig6, sc, seed), Run: func(ctx context.Context, cfg run.Config) (ControlUnit, error) {
				return o.pilotUnit(ctx, PartFig6, o.Train, o.pilotConfig(sc, o.Train, seed), cfg.Logf)
			}})
		}
	}
	for s := range max(1, o.Hard.Seeds) {
		seed, key := o.Hard.Seed+uint64(s), PartLiveLoop
		if s > 0 {
			key = fmt.Sprintf("%s/seed%d", PartLiveLoop, seed)
		}
		us = append(us, run.Unit[ControlUnit]{Key: key, Run: func(ctx context.Context, cfg run.Config) (ControlUnit, error) {
			return o.pilotUnit(ctx, PartLiveLoop, o.Hard, o.pilotConfig(pilot.FP32Default, o.Hard, seed), cfg.Logf)
		}})
	}
	for _, d := range o.Delays {
		us = append(us, run.Unit[ControlUnit]{Key: fmt.Sprintf("delay/%gms", d), Run: func(ctx context.Context, cfg run.Config) (ControlUnit, error) {
			return o.delayUnit(ctx, d, cfg.Logf)
		}})
	}
	us = append(us, run.Unit[ControlUnit]{Key: "ns3-telemetry", Run: func(ctx context.Context, cfg run.Config) (ControlUnit, error) {
		return o.ns3Unit(ctx, cfg.Logf)
	}})
	us = append(us, run.Unit[ControlUnit]{Key: "predictor", Run: func(context.Context, run.Config) (ControlUnit, error) {
		f, err := predictorForecasts()
		return ControlUnit{Predictor: f}, err
	}})
	for i := range us {
		us[i].Cost = o.unitCost(us[i].Key)
	}
	return us, nil
}

// pilotUnit runs one pilot of pc on t's data set.
func (o PilotOptions) pilotUnit(ctx context.Context, part string, t TrainOptions, pc pilot.Config, logf func(string, ...any)) (ControlUnit, error) {
	sets, info, err := t.LoadSets()
	if err != nil {
		return ControlUnit{}, err
	}
	pc.Train.Logf = logf
	r, err := pilot.Run(ctx, pc, sets)
	if err != nil {
		if part == PartLiveLoop {
			return ControlUnit{}, fmt.Errorf("live loop on %s: %w", info.Name, err)
		}
		return ControlUnit{}, fmt.Errorf("pilot %s seed %d: %w", pc.Scenario, pc.Train.Seed, err)
	}
	return ControlUnit{Pilot: &PilotRun{Part: part, Data: info.Name, StandInFor: info.StandInFor, Result: *r}}, nil
}

// RunUnits runs the block's units in order (what `nfabric pilot` does in
// one process).
func (o PilotOptions) RunUnits(ctx context.Context) ([]ControlUnit, error) {
	us, err := o.Units()
	if err != nil {
		return nil, err
	}
	return runInOrder(ctx, us, o.Logf)
}

// Pilots runs the Fig. 6 recovery pilot (four scenarios over the seeds),
// the live admission loop on the hard workload, and the telemetry-delay
// runs, and lays them out.
func Pilots(ctx context.Context, o PilotOptions) (*report.Result, error) {
	us, err := o.RunUnits(ctx)
	if err != nil {
		return nil, err
	}
	return o.Layout(us)
}

// scenarioStats are one scenario's Fig. 6 figures over its n seeds.
type scenarioStats struct {
	scenario                     string
	n                            float64
	low, traffic, alarms, writes float64 // sums over the seeds
	accMean, accStd              float64 // final accuracy (%)
}

// cells formats the stats' means as the Fig. 6 table does.
func (st scenarioStats) cells() (low, traffic, acc string) {
	return fmt.Sprintf("%.2f", 100*st.low/st.n), fmt.Sprintf("%.3fx", st.traffic/st.n), fmt.Sprintf("%.2f ± %.2f", st.accMean, st.accStd)
}

// scenarioRuns are one scenario's pilots over the seeds.
type scenarioRuns struct {
	scenario pilot.Scenario
	runs     []*pilot.Result
}

func (sr scenarioRuns) stats() scenarioStats {
	st := scenarioStats{scenario: sr.scenario.String()}
	var accs []float64
	for _, r := range sr.runs {
		st.low += r.LowBitSteps
		st.traffic += r.Traffic
		st.alarms += float64(r.Alarms)
		st.writes += float64(r.LatchOps)
		accs = append(accs, 100*r.Final)
	}
	st.n = float64(len(sr.runs))
	st.accMean, st.accStd = stats.MeanSD(accs)
	return st
}

// controlParts splits the units by part, scenarios in Fig. 6 order.
func controlParts(us []ControlUnit) (fig6 []scenarioRuns, setName string, live []*PilotRun, delays []DelayRun, fc []Forecast, err error) {
	at := map[pilot.Scenario]int{}
	for _, u := range us {
		switch {
		case u.Pilot != nil && u.Pilot.Part == PartLiveLoop:
			live = append(live, u.Pilot)
		case u.Pilot != nil:
			sc, perr := pilot.ParseScenario(u.Pilot.Result.Scenario)
			if perr != nil {
				return nil, "", nil, nil, nil, perr
			}
			i, ok := at[sc]
			if !ok {
				i = len(fig6)
				at[sc] = i
				fig6 = append(fig6, scenarioRuns{scenario: sc})
			}
			r := u.Pilot.Result
			fig6[i].runs = append(fig6[i].runs, &r)
			setName = u.Pilot.Data
		case u.Delay != nil:
			delays = append(delays, *u.Delay)
		case u.NS3 != nil: // laid out by ns3Table
		default:
			fc = u.Predictor
		}
	}
	if len(fig6) == 0 || live == nil {
		return nil, "", nil, nil, nil, fmt.Errorf("control: no Fig. 6 pilot or no live loop among %d units", len(us))
	}
	return fig6, setName, live, delays, fc, nil
}

// Layout lays out the block's units (Units' order): the Fig. 6 table and
// figures, the G-Binary-default timeline, the live loop, the telemetry
// delays and the Predictor. The JSON carries every unit.
func (o PilotOptions) Layout(us []ControlUnit) (*report.Result, error) {
	all, setName, live, delays, fc, err := controlParts(us)
	if err != nil {
		return nil, err
	}
	res := &report.Result{Title: controlTitle, Data: us}
	t, gd := o.fig6Table(all, setName)
	cal, err := o.calibrationTable(all)
	if err != nil {
		return nil, err
	}
	claims, rows, held, missed := o.claimsTable(all, live)
	res.Tables = append(res.Tables, t, claims, cal)
	res.Claims = rows
	o.markStandIns(res, us)
	figs, err := pilotFigures(all, o.Fault)
	if err != nil {
		return nil, err
	}
	res.Figures = append(res.Figures, figs...)
	res.Tables = append(res.Tables, timelineTable(all[len(all)-1].runs[0]), o.liveTable(live[0]), o.delayTable(delays), predictorTable(fc))
	if err := o.layoutNS3(res, us, delays); err != nil {
		return nil, err
	}
	low, traffic, acc := gd.cells()
	res.Summary = []string{fmt.Sprintf("G-Binary-default: %s steps low-bit, traffic %s, final %s (paper: %s, %s, %s %%).",
		low+"%", traffic, acc, paperPilotLowBit, paperPilotTraffic, paperPilotAcc)}
	sum := fmt.Sprintf("Sec. 8 claims on %s and %s: %d of %d hold", setName, live[0].Data, held, len(rows))
	if len(missed) > 0 {
		sum += "; does not hold: " + strings.Join(missed, "; ")
	}
	res.Summary = append(res.Summary, sum+" (table 'claims').")
	return res, nil
}

// fig6Table is the Fig. 6 analogue; it returns G-Binary-default's stats
// for the summary.
func (o PilotOptions) fig6Table(all []scenarioRuns, setName string) (report.Table, scenarioStats) {
	t := report.Table{Name: "fig6", Title: fmt.Sprintf("Fig. 6 analogue: recovery pilot on %s (%d seeds, fault: label noise %.0f%% in epochs %d-%d)",
		setName, o.Train.Seeds, 100*o.Fault.Rate, o.Fault.StartEpoch, o.Fault.EndEpoch),
		Columns: []string{"scenario", "steps low-bit %", "traffic vs FP32", "final acc. (%)", "recovery alarms", "latch writes",
			"paper steps low-bit", "paper traffic", "paper final acc. (%)"}}
	var gd scenarioStats
	for _, sr := range all {
		st := sr.stats()
		pl, pt, pa := "-", "-", "-"
		if sr.scenario == pilot.GBinaryDefault {
			pl, pt, pa = paperPilotLowBit, paperPilotTraffic, paperPilotAcc
			gd = st
		}
		low, traffic, acc := st.cells()
		t.AddRow(st.scenario, low, traffic, acc, fmt.Sprintf("%.1f", st.alarms/st.n), fmt.Sprintf("%.0f", st.writes/st.n), pl, pt, pa)
	}
	t.Notes = []string{
		fmt.Sprintf("Workload: %s, %s, W=%d, batch %d, %d epochs of %s images, FP32 lr %g, low-bit lr %g; the paper's pilot is CIFAR-10/ResNet-18.",
			setName, modelName(o.Train), o.Train.Workers, o.Train.Batch, o.Train.Epochs, sizeName(o.Train.TrainN), o.Train.LR, o.Train.SignLR),
		fmt.Sprintf("Control: warm-up %d steps on FP32, ladder %s cosine, loss CUSUM K=%g H=%g (EWMA weight %g), cooldown %d + calibration %d steps.",
			o.Control.WarmupSteps, ladderText(o.Control.Ladder), o.Control.LossK, o.Control.LossH, o.Control.LossAlpha, o.Control.CooldownSteps, o.Control.CalibrationSteps),
		"Traffic is the per-step mean of the gradient payload ratio to FP32 under the paper's accounting; 'steps low-bit' counts steps on which any group ran a low-bit mode.",
		"The control plane acted only through mode-latch writes on the training run's controller model; it never read gradients or payloads.",
	}
	for _, sr := range all {
		r := sr.runs[0]
		switch sr.scenario {
		case pilot.GBinaryDefault:
			held := int64(r.Alarms) * (o.Control.CooldownSteps + o.Control.CalibrationSteps)
			fixed := 100 * float64(o.Control.WarmupSteps+held) / float64(max(1, r.Steps))
			t.Notes = append(t.Notes, fmt.Sprintf("g-binary-default, seed %d: of its %d steps, %d are FP32 warm-up and its %d recovery alarms hold FP32 for up to %d more (cooldown + calibration each), %.1f%% of the run, which caps its low-bit share at %.1f%% (the paper does not give its pilot's warm-up or cooldown lengths).",
				r.Seed, r.Steps, o.Control.WarmupSteps, r.Alarms, held, fixed, 100-fixed))
		case pilot.FP32Default:
			var first []string
			for _, a := range r.Actions {
				if a.Step == o.Control.WarmupSteps {
					first = append(first, fmt.Sprintf("%s -> %v", a.Group, a.Mode))
				}
			}
			if len(first) == 0 {
				first = []string{"no group admitted"}
			}
			t.Notes = append(t.Notes, fmt.Sprintf("fp32-default, seed %d, at the end of warm-up: %s.", r.Seed, strings.Join(first, ", ")))
		}
	}
	for _, sr := range all {
		if sr.scenario != pilot.FP32Default || len(sr.runs[0].Diags) == 0 {
			continue
		}
		d := sr.runs[0].Diags
		first, last := d[0], d[len(d)-1]
		t.Notes = append(t.Notes, fmt.Sprintf("fp32-default re-runs the ladder after each recovery on the latest diagnostics, which drift as training goes on (seed %d, backbone G-Binary cosine %.3f at step %d, %.3f at step %d; head %.3f and %.3f): the ladder's fixed thresholds are calibrated at warm-up only.",
			sr.runs[0].Seed, first.Binary.Groups[nn.Backbone], first.Step, last.Binary.Groups[nn.Backbone], last.Step, first.Binary.Groups[nn.Head], last.Binary.Groups[nn.Head]))
	}
	return t, gd
}

// modelName names t's model as the tables do (the MLP with its hidden
// widths).
func modelName(t TrainOptions) string {
	if t.Model == "mlp" {
		return fmt.Sprintf("mlp %v", t.Hidden)
	}
	return t.Model
}

// sizeName is a TrainN or TestN as the tables print it.
func sizeName(n int) string {
	if n == 0 {
		return "all"
	}
	return strconv.Itoa(n)
}

// timelineTable is the per-epoch mode timeline of one G-Binary-default run.
func timelineTable(gd *pilot.Result) report.Table {
	tl := report.Table{Name: "fig6-timeline", Title: fmt.Sprintf("G-Binary-default timeline, seed %d: per epoch", gd.Seed),
		Columns: []string{"epoch", "fault", "train loss", "val acc. (%)", "backbone low-bit %", "head low-bit %", "traffic", "backbone mode at end", "head mode at end"}}
	for _, e := range gd.Epochs {
		f := ""
		if e.Fault {
			f = "label noise"
		}
		tl.AddRow(e.Epoch, f, fmt.Sprintf("%.4f", e.TrainLoss), fmt.Sprintf("%.2f", 100*e.ValAcc), fmt.Sprintf("%.1f", 100*e.LowBit[nn.Backbone]),
			fmt.Sprintf("%.1f", 100*e.LowBit[nn.Head]), fmt.Sprintf("%.4f", e.Traffic), e.Modes[nn.Backbone], e.Modes[nn.Head])
	}
	for _, a := range gd.Actions {
		tl.Notes = append(tl.Notes, a.String())
	}
	return tl
}

// liveTable is the live admission loop on the hard workload.
func (o PilotOptions) liveTable(live *PilotRun) report.Table {
	hr := &live.Result
	lt := report.Table{Name: "live-loop", Title: fmt.Sprintf("Live admission loop on %s (FP32-default)", live.Data),
		Columns: []string{"group", "warm-up cosine G-Binary", "warm-up cosine G-Ternary", "settled mode", "paper (CIFAR-100)"}}
	var w pilot.Diag
	if hr.Warmup != nil {
		w = *hr.Warmup
	}
	paper := train.PerGroup[string]{nn.Backbone: "g-ternary", nn.Head: "fp32-bypass"}
	for _, g := range nn.Groups() {
		lt.AddRow(g.String(), fmt.Sprintf("%.3f", w.Binary.Groups[g]), fmt.Sprintf("%.3f", w.Ternary.Groups[g]), hr.Settled[g], paper[g])
	}
	lt.Notes = []string{
		fmt.Sprintf("Final accuracy %.2f%%, %.1f%% of steps low-bit, traffic %.4fx FP32.", 100*hr.Final, 100*hr.LowBitSteps, hr.Traffic),
		fmt.Sprintf("Ladder thresholds %.2f (G-Binary) and %.2f (G-Ternary), calibrated on the easy workload's warm-up cosines (table 'calibration'), not on this workload; the cosines above are what this workload measured at the end of warm-up, and a group the ladder rejected there is re-examined on each new diagnostics sample (the actions below say on which).",
			ladderMin(o.Control.Ladder, lowbit.Binary), ladderMin(o.Control.Ladder, lowbit.Ternary)),
	}
	for _, a := range hr.Actions {
		lt.Notes = append(lt.Notes, a.String())
	}
	return lt
}

// delayUnit runs G-Binary-default with the Commander on a congested
// telemetry trace (control.Episodes), each sample delivered delayMS late.
func (o PilotOptions) delayUnit(ctx context.Context, delayMS float64, logf func(string, ...any)) (ControlUnit, error) {
	sets, _, err := o.Train.LoadSets()
	if err != nil {
		return ControlUnit{}, err
	}
	steps := o.telemetryEpochs() * (sets.Train.Len() / o.Train.Batch)
	tel := o.Telemetry
	if tel == nil {
		if tel, err = o.episodes(steps); err != nil {
			return ControlUnit{}, err
		}
	}
	r, err := o.telemetryPilot(ctx, sets, tel, delayMS, logf)
	if err != nil {
		return ControlUnit{}, fmt.Errorf("delay %g ms: %w", delayMS, err)
	}
	return ControlUnit{Delay: &DelayRun{DelayMS: delayMS, Modes: r.ModeTimeline(steps), Result: *r}}, nil
}

// telemetryCommander is the Commander of the telemetry runs: on, pressure
// averaged with weight 0.05 per sample, thresholds on the averaged
// pressure (the synthetic healthy scenario averages about 0.17, the
// congested one about 0.49).
func telemetryCommander(cc control.CommanderConfig) control.CommanderConfig {
	cc.Enabled, cc.Smooth = true, 0.05
	cc.RelievePressure, cc.ReleasePressure = 0.4, 0.25
	return cc
}

// telemetryPilot runs G-Binary-default, fault-free, with the Commander
// reading tel, each sample delivered delayMS late.
func (o PilotOptions) telemetryPilot(ctx context.Context, sets *data.Sets, tel []control.Telemetry, delayMS float64, logf func(string, ...any)) (*pilot.Result, error) {
	pc := o.pilotConfig(pilot.GBinaryDefault, o.Train, o.Train.Seed)
	pc.Train.Logf = logf
	pc.Control.Commander = telemetryCommander(pc.Control.Commander)
	pc.Telemetry, pc.TelemetryDelayNS = tel, int64(delayMS*1e6)
	pc.Fault = pilot.Fault{}
	pc.Train.Epochs = o.telemetryEpochs()
	return pilot.Run(ctx, pc, sets)
}

// telemetryEpochs is the length of the telemetry runs in epochs.
func (o PilotOptions) telemetryEpochs() int {
	if o.TelemetryEpochs > 0 {
		return o.TelemetryEpochs
	}
	return o.Train.Epochs
}

// episodes is the synthetic telemetry of the delay runs: healthy and
// congested CXL episodes of 20 steps each, sampled every tenth of a step,
// over steps steps.
func (o PilotOptions) episodes(steps int) ([]control.Telemetry, error) {
	dur := int64(float64(steps) * o.StepMS * 1e6)
	healthy, congested := control.HealthyScenario(), control.CongestedScenario()
	healthy.StepNS = int64(o.StepMS * 1e6)
	congested.StepNS = healthy.StepNS
	episode := 20 * healthy.StepNS
	return control.Episodes(healthy, congested, episode, dur, healthy.StepNS/10, o.Train.Seed)
}

// delayTable compares each delay run's mode timeline with the first
// (undelayed) one's.
func (o PilotOptions) delayTable(runs []DelayRun) report.Table {
	t := report.Table{Name: "telemetry-delay", Title: fmt.Sprintf("Commander telemetry delay: healthy and congested episodes of 20 steps (step = %g ms)", o.StepMS),
		Columns: []string{"delay (ms)", "steps low-bit %", "latch writes", "steps whose modes differ from no delay", "paper"}}
	for _, d := range runs {
		base := runs[0].Modes
		diff := 0
		for i := range d.Modes {
			if d.Modes[i] != base[i] {
				diff++
			}
		}
		paper := ""
		if d.DelayMS == 10 {
			paper = "< 0.04% step cost (see timing block, Fig. 3(d))"
		}
		t.AddRow(d.DelayMS, fmt.Sprintf("%.2f", 100*d.Result.LowBitSteps), d.Result.LatchOps, diff, paper)
	}
	t.Notes = []string{
		"Telemetry (control.Episodes) alternates 2 s of healthy and 2 s of congested CXL, sampled every 10 ms. The Commander averages pressure (demand / capacity) with weight 0.05 per sample and grants low-bit relief at 0.4, releasing it at 0.25 (the healthy episodes average about 0.17, the congested ones 0.49); a sample taken at t reaches it at t + delay. No fault is injected in these runs.",
		"The step cost of a late latch update (reads that still take the datapath) is the timing model's Fig. 3(d); this table shows how often the delay changes the mode a step runs.",
	}
	return t
}

// pilotFigures plots, per scenario and epoch, the validation accuracy and the
// backbone's low-bit share, each the mean over seeds shaded ± the standard
// deviation.
func pilotFigures(all []scenarioRuns, fault pilot.Fault) ([]report.Figure, error) {
	window := ""
	if fault.Rate > 0 {
		window = fmt.Sprintf(" (fault in epochs %d-%d)", fault.StartEpoch, fault.EndEpoch)
	}
	acc := report.LinePlot{Title: "Fig. 6 analogue: validation accuracy" + window, XLabel: "epoch", YLabel: "validation accuracy (%), mean ± std over seeds"}
	low := report.LinePlot{Title: "Fig. 6 analogue: mode timeline" + window, XLabel: "epoch", YLabel: "backbone steps on a low-bit mode (%), mean ± std"}
	for _, tr := range all {
		n := len(tr.runs[0].Epochs)
		sa := report.Series{Name: tr.scenario.String()}
		sl := report.Series{Name: tr.scenario.String(), Dashed: tr.scenario == pilot.AlwaysFP32 || tr.scenario == pilot.AlwaysGBinary}
		for e := 0; e < n; e++ {
			var a, l []float64
			for _, r := range tr.runs {
				a = append(a, 100*r.Epochs[e].ValAcc)
				l = append(l, 100*r.Epochs[e].LowBit[nn.Backbone])
			}
			ma, sda := stats.MeanSD(a)
			ml, sdl := stats.MeanSD(l)
			sa.X, sa.Y, sa.Err = append(sa.X, float64(e+1)), append(sa.Y, ma), append(sa.Err, sda)
			sl.X, sl.Y, sl.Err = append(sl.X, float64(e+1)), append(sl.Y, ml), append(sl.Err, sdl)
		}
		acc.Series = append(acc.Series, sa)
		low.Series = append(low.Series, sl)
	}
	fa, err := acc.Figure("fig6-accuracy")
	if err != nil {
		return nil, err
	}
	fl, err := low.Figure("fig6-modes")
	if err != nil {
		return nil, err
	}
	return []report.Figure{fa, fl}, nil
}

// predictorForecasts are the Predictor's forecasts for the built-in
// profiles: the quantities the paper's Predictor stores, from
// trace-derived timing only.
func predictorForecasts() ([]Forecast, error) {
	ib, err := collective.LookupLink("ib", nil)
	if err != nil {
		return nil, err
	}
	cxlLink, err := collective.LookupLink("cxl", nil)
	if err != nil {
		return nil, err
	}
	var out []Forecast
	for _, name := range []string{"resnet18-cifar10", "bert-large", "gpt2-xl", "gpt3"} {
		prof, err := workload.Builtin(name, 0)
		if err != nil {
			return nil, err
		}
		f, err := control.Predict(control.PredictorInput{
			Profile:  prof,
			Schedule: workload.Schedule{Accel: workload.A100},
			FP32:     collective.AlphaBeta{Alg: collective.Ring, N: 8, Link: ib},
			CXL:      collective.CXLPath{Link: cxlLink, Workers: 8},
		})
		if err != nil {
			return nil, fmt.Errorf("predictor %s: %w", name, err)
		}
		out = append(out, Forecast{Profile: name, Forecast: f})
	}
	return out, nil
}

// predictorTable lays out the Predictor's forecasts.
func predictorTable(fc []Forecast) report.Table {
	t := report.Table{Name: "predictor", Title: "Predictor forecasts per training step (8 workers, ring All-Reduce over InfiniBand HDR, CXL 128 GiB/s)",
		Columns: []string{"model", "forward ms", "backward ms", "gradient MiB", "shard MiB/GPU", "FP32 All-Reduce ms", "G-Binary path ms", "G-Ternary path ms",
			"peak CXL demand GB/s", "pressure", "FP32 line reads", "G-Binary line reads"}}
	for _, pf := range fc {
		f := pf.Forecast
		t.AddRow(pf.Profile, fmt.Sprintf("%.3f", f.ForwardS*1e3), fmt.Sprintf("%.3f", f.BackwardS*1e3), fmt.Sprintf("%.1f", float64(f.GradientBytes)/(1<<20)),
			fmt.Sprintf("%.1f", f.ShardBytesPerGPU/(1<<20)), fmt.Sprintf("%.2f", f.AllReduceS*1e3), fmt.Sprintf("%.3f", f.LowBitS["g-binary"]*1e3),
			fmt.Sprintf("%.3f", f.LowBitS["g-ternary"]*1e3), fmt.Sprintf("%.1f", f.PeakCXLBytesPerS/1e9), fmt.Sprintf("%.2f", f.Pressure),
			f.CacheLineReads, f.LowBitCacheLineReads["g-binary"])
	}
	t.Notes = []string{
		"Forward and backward come from the profile's FLOPs on an A100-like accelerator (workload.A100) at the profile's default batch; buckets are the paper's 32 MiB.",
		"Peak CXL demand is the highest rate at which gradient bytes become ready during backward, over a window of a twentieth of backward, times the 8 workers; pressure is that over the CXL link bandwidth: above 1 the FP32 path cannot keep up with backward and low-bit relief pays.",
		"The Predictor sees no gradients, weights or losses: only the profile, the schedule and the link models.",
	}
	return t
}

// ladderText writes a ladder's thresholds as the control block's notes do,
// lowest traffic first: "G-Binary >= 0.60 / G-Ternary >= 0.45".
func ladderText(r control.Ladder) string {
	parts := make([]string, 0, len(r))
	for _, g := range r.Ordered() {
		parts = append(parts, fmt.Sprintf("%s >= %.2f", g.Label(), g.Min))
	}
	return strings.Join(parts, " / ")
}

// ladderMin is the threshold of f's rung of r, NaN when r has none.
func ladderMin(r control.Ladder, f lowbit.Format) float64 {
	if v, ok := r.Min(f); ok {
		return v
	}
	return math.NaN()
}

// markStandIns makes the block partial when a pilot trained on a stand-in
// data set, saying which and why its numbers differ, and names the
// stand-in in the tier column of that pilot's claims.
func (o PilotOptions) markStandIns(res *report.Result, us []ControlUnit) {
	section := map[string]string{PartFig6: "Sec. 8, Fig. 6", PartLiveLoop: "Sec. 8, live loop"}
	what := map[string]string{PartFig6: "Fig. 6 pilots", PartLiveLoop: "live loop"}
	for _, u := range us {
		p := u.Pilot
		if p == nil || p.StandInFor == "" {
			continue
		}
		d := DataInfo{Name: p.Data, StandInFor: p.StandInFor}
		if s := d.standIn(what[p.Part]); !slices.Contains(res.Skipped, s) {
			res.Skipped = append(res.Skipped, s)
		}
		for i := range res.Claims {
			if res.Claims[i].Section == section[p.Part] {
				res.Claims[i].Tier = d.tierCell(o.Tier.String())
			}
		}
	}
}

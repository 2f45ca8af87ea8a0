package experiments

import (
	"context"
	"fmt"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/netsim"
	"github.com/neuronfabric/nfabric/pilot"
	"github.com/neuronfabric/nfabric/report"
)

// NS3Run is the control block's pilot on ns-3 telemetry: the job of
// PilotOptions.NS3 simulated quiet and congested, replayed as alternating
// episodes of 20 steps to G-Binary-default with the Commander on, exactly
// as the undelayed telemetry-delay run replays the synthetic episodes.
type NS3Run struct {
	// Skipped says why nothing ran (ns-3 not installed), with how to get it.
	Skipped string          `json:"skipped,omitempty"`
	Pair    *netsim.PairRun `json:"pair,omitempty"`
	// Modes is every pilot step's modes; Result the pilot.
	Modes  []string      `json:"modes,omitempty"`
	Result *pilot.Result `json:"result,omitempty"`
}

// NS3Defaults is the control block's ns-3 job: GPT-2 XL's FP32 buckets on
// 8 hosts through one switch at 50 GB/s, quiet and beside 8 UDP flows at
// 90% of the link, judged with the Commander settings of the telemetry
// runs.
func NS3Defaults(full bool, seed uint64) netsim.PairOptions {
	cc := telemetryCommander(control.DefaultConfig().Commander)
	o := netsim.PairOptions{Model: "gpt2-xl",
		Config: netsim.Config{Workers: 8, Topology: netsim.Star, HostRate: 50e9, DelayNS: 1000, QueuePackets: 100,
			Steps: 2, Scale: 1000, Seed: seed},
		Congested: netsim.Background{OnOff: 8, Share: 0.9, OnNS: 5e6, OffNS: 0},
		Commander: cc}
	if full {
		o.Config.Steps = 5
	}
	return o
}

// ns3Unit runs the ns-3 pair and the pilot on it, or reports it skipped.
func (o PilotOptions) ns3Unit(ctx context.Context, logf func(string, ...any)) (ControlUnit, error) {
	if err := netsim.Available(); err != nil {
		return ControlUnit{NS3: &NS3Run{Skipped: "skipped: " + err.Error()}}, nil
	}
	pr, err := netsim.RunPair(ctx, o.NS3)
	if err != nil {
		return ControlUnit{}, err
	}
	sets, _, err := o.Train.LoadSets()
	if err != nil {
		return ControlUnit{}, err
	}
	steps := o.telemetryEpochs() * (sets.Train.Len() / o.Train.Batch)
	tel, err := netsim.Episodes(pr.Quiet.Telemetry, pr.Loud.Telemetry, pr.StepNS, int64(o.StepMS*1e6), 20, steps)
	if err != nil {
		return ControlUnit{}, err
	}
	r, err := o.telemetryPilot(ctx, sets, tel, 0, logf)
	if err != nil {
		return ControlUnit{}, fmt.Errorf("ns-3 telemetry pilot: %w", err)
	}
	return ControlUnit{NS3: &NS3Run{Pair: pr, Modes: r.ModeTimeline(steps), Result: r}}, nil
}

// ns3Table puts the pilot on ns-3 telemetry beside the one on synthetic
// telemetry (the undelayed delay run).
func (o PilotOptions) ns3Table(n *NS3Run, synthetic *DelayRun) report.Table {
	t := report.Table{Name: "ns3-telemetry", Title: "Commander on ns-3 telemetry beside synthetic telemetry (G-Binary default, episodes of 20 steps)",
		Columns: []string{"telemetry", "quiet episodes", "congested episodes", "steps low-bit %", "latch writes", "final accuracy %", "traffic vs FP32"}}
	if synthetic != nil {
		r := synthetic.Result
		src := "synthetic (control.Episodes)"
		if o.Telemetry != nil {
			src = "the given telemetry trace (--telemetry)"
		}
		t.AddRow(src, "healthy scenario", "congested scenario", fmt.Sprintf("%.2f", 100*r.LowBitSteps), r.LatchOps, fmt.Sprintf("%.2f", 100*r.Final), fmt.Sprintf("%.4f", r.Traffic))
	}
	if n == nil || n.Skipped != "" {
		why := "skipped"
		if n != nil {
			why = n.Skipped
		}
		t.AddRow("ns-3", why, "", "", "", "", "")
		return t
	}
	p, r := n.Pair, n.Result
	verdict := func(x netsim.Outcome) string {
		return fmt.Sprintf("%s (%s; relief %.0f%%, mean pressure %.2f)", x.Background, x.Verdict.Label, 100*x.Verdict.Relief, x.Verdict.MeanPressure)
	}
	t.AddRow("ns-3 ("+o.NS3.Model+")", verdict(p.Quiet), verdict(p.Loud), fmt.Sprintf("%.2f", 100*r.LowBitSteps), r.LatchOps, fmt.Sprintf("%.2f", 100*r.Final), fmt.Sprintf("%.4f", r.Traffic))
	c := o.NS3.Config
	t.Notes = []string{
		fmt.Sprintf("ns-3 3.37, packet level: %s FP32 buckets ring All-Reduced over TCP on %d hosts through one switch (%g GB/s links, %d ns, %d-packet drop-tail queues), released at the FP32 reference step of %.1f ms, %d steps each run, bytes and rates divided by %g (netsim package doc). Each simulated step is replayed as one pilot step of %g ms.",
			o.NS3.Model, c.Workers, c.HostRate/1e9, c.DelayNS, c.QueuePackets, float64(p.StepNS)/1e6, c.Steps, c.Scale, o.StepMS),
		"Demand is the gradient bytes the most pressed host owes its ring successor per interval, capacity what background leaves on that hop; under open-loop releases the congested backlog grows, so its pressure is far above 1 and the smoothed pressure takes longer to fall below the release threshold than on the synthetic trace.",
		"The verdicts replay each ns-3 trace through the control plane's Commander with the same thresholds and smoothing as the pilot.",
	}
	return t
}

// layoutNS3 adds the ns-3 table and figures to res, beside the undelayed
// synthetic delay run.
func (o PilotOptions) layoutNS3(res *report.Result, us []ControlUnit, delays []DelayRun) error {
	var n *NS3Run
	for _, u := range us {
		if u.NS3 != nil {
			n = u.NS3
		}
	}
	if n == nil {
		return nil
	}
	var syn *DelayRun
	for i := range delays {
		if delays[i].DelayMS == 0 {
			syn = &delays[i]
		}
	}
	res.Tables = append(res.Tables, o.ns3Table(n, syn))
	figs, err := o.ns3Figures(n)
	if err != nil {
		return err
	}
	res.Figures = append(res.Figures, figs...)
	return nil
}

// ns3Figures plots each ns-3 run's bottleneck utilization, queue,
// pressure and the Commander's mode over time.
func (o PilotOptions) ns3Figures(n *NS3Run) ([]report.Figure, error) {
	if n == nil || n.Pair == nil {
		return nil, nil
	}
	var out []report.Figure
	for _, x := range []struct {
		name string
		oc   netsim.Outcome
	}{{"ns3-quiet", n.Pair.Quiet}, {"ns3-congested", n.Pair.Loud}} {
		lp := TelemetryPlot(fmt.Sprintf("ns-3 %s, background %s: link utilization, queue, pressure and the Commander's mode", o.NS3.Model, x.oc.Background),
			x.oc.Figure, o.NS3.Commander)
		f, err := lp.Figure(x.name)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// TelemetryPlot is the ns-3 telemetry figure: netsim.FigureSeries's lines
// (bottleneck utilization, queue, pressure, the Commander's mode) over
// time, with the Commander's relieve and release thresholds, for the
// control block and `nfabric telemetry ns3 --figure`.
func TelemetryPlot(title string, series []netsim.Series, cc control.CommanderConfig) report.LinePlot {
	lp := report.LinePlot{Title: title, XLabel: "time (ms)", YLabel: "share",
		HLines: []report.HLine{{Y: cc.RelievePressure, Label: "relieve"}, {Y: cc.ReleasePressure, Label: "release"}}}
	for _, s := range series {
		lp.Series = append(lp.Series, report.Series{Name: s.Name, X: s.X, Y: s.Y})
	}
	return lp
}

// NS3Summary is what `nfabric telemetry ns3` reports of one run.
type NS3Summary struct {
	Model      string         `json:"model"`
	Config     netsim.Config  `json:"config"`
	StepNS     int64          `json:"step_ns"`
	IntervalNS int64          `json:"interval_ns"`
	Samples    int            `json:"samples"`
	Verdict    netsim.Verdict `json:"verdict"`
	Buckets    netsim.Totals  `json:"buckets"`
}

// NS3TelemetryResult lays out `nfabric telemetry ns3`'s summary of the
// job: the run, its samples (written to out), its buckets and the
// Commander's verdict under cc. Data is the NS3Summary.
func NS3TelemetryResult(j *netsim.Job, cc control.CommanderConfig, out string) *report.Result {
	res, samples, v := j.Result, len(j.Telemetry), j.Verdict
	s := NS3Summary{Model: res.Schedule.Model, Config: res.Config, StepNS: res.Schedule.StepNS, IntervalNS: res.Interval,
		Samples: samples, Verdict: v, Buckets: res.BucketTotals()}
	c := res.Config
	return &report.Result{Block: "telemetry", Title: "ns-3 telemetry", Data: s, Summary: []string{
		fmt.Sprintf("ns-3: %s, %d workers on a %s, host link %s, background %s, scale %g", s.Model, c.Workers,
			c.Topology, collective.FormatBandwidth(c.HostRate), c.Background, c.Scale),
		fmt.Sprintf("FP32 reference step %.2f ms, %d steps, %d samples every %.2f ms -> %s", float64(s.StepNS)/1e6,
			c.Steps, samples, float64(res.Interval)/1e6, out),
		fmt.Sprintf("buckets: %d released, %d finished, mean All-Reduce %.3f ms (scaled bytes)", s.Buckets.Released,
			s.Buckets.Finished, s.Buckets.MeanSeconds*1e3),
		fmt.Sprintf("Commander (relieve %.2f, release %.2f, smooth %.2f): %s, relief on %.1f%% of samples; pressure mean %.3f, peak %.3f",
			cc.RelievePressure, cc.ReleasePressure, cc.Smooth, v.Label, 100*v.Relief, v.MeanPressure, v.PeakPressure),
	}}
}

// SyntheticTelemetryResult lays out `nfabric telemetry synthetic`'s
// summary: the scenario, its samples (written to out) and their spacing.
func SyntheticTelemetryResult(s control.Synthetic, samples int, out string) *report.Result {
	return &report.Result{Block: "telemetry", Title: "synthetic telemetry",
		Summary: []string{fmt.Sprintf("synthetic %s telemetry: %d samples every %s over %s -> %s", s.Scenario, samples, s.Interval, s.Duration, out)}}
}

// NS3TelemetryFigure is `nfabric telemetry ns3 --figure`: the job's
// TelemetryPlot as SVG.
func NS3TelemetryFigure(j *netsim.Job, cc control.CommanderConfig) ([]byte, error) {
	c := j.Result.Config
	lp := TelemetryPlot(fmt.Sprintf("ns-3 telemetry: %s, %d hosts, background %s", j.Result.Schedule.Model, c.Workers, c.Background), j.Figure, cc)
	return lp.SVG()
}

package experiments

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/hw"
	"github.com/neuronfabric/nfabric/report"
)

// hardwareData is the block's results regrouped for the tables; it is
// also the block's JSON data.
type hardwareData struct {
	Tools   []string           `json:"tools"`
	Cosim   []hw.CosimResult   `json:"cosim,omitempty"`
	Synth   []HardwareSynthRun `json:"synth,omitempty"`
	PnR     []hw.PnrResult     `json:"pnr,omitempty"`
	Tech    hw.Technology      `json:"technology"`
	Skipped []string           `json:"skipped,omitempty"`
	// The sum datapaths' runs, kept apart so that the vote datapath's
	// data and tables stay as they were.
	FormatCosim []hw.CosimResult   `json:"format_cosim,omitempty"`
	FormatSynth []HardwareSynthRun `json:"format_synth,omitempty"`
	FormatPnR   []hw.PnrResult     `json:"format_pnr,omitempty"`

	builds []string
	synth  map[string]map[hw.Config]HardwareSynthRun // by build
	parts  []hw.Part
	pnr    map[hw.Part]map[int][]hw.PnrResult // by part, width
	fpnr   map[hw.Part]map[hw.Datapath]hw.PnrResult
}

func gatherHardware(o HardwareOptions, us []HardwareUnit) (*hardwareData, error) {
	builds, err := o.builds()
	if err != nil {
		return nil, err
	}
	d := &hardwareData{Tech: o.Tech, builds: builds, parts: o.Parts,
		synth: map[string]map[hw.Config]HardwareSynthRun{}, pnr: map[hw.Part]map[int][]hw.PnrResult{},
		fpnr: map[hw.Part]map[hw.Datapath]hw.PnrResult{}}
	for _, b := range builds {
		d.synth[b] = map[hw.Config]HardwareSynthRun{}
	}
	for _, p := range o.Parts {
		d.pnr[p] = map[int][]hw.PnrResult{}
		d.fpnr[p] = map[hw.Datapath]hw.PnrResult{}
	}
	for _, u := range us {
		switch {
		case u.Skipped != "":
			if !slices.Contains(d.Skipped, u.Skipped) {
				d.Skipped = append(d.Skipped, u.Skipped)
			}
		case u.Tools != nil:
			d.Tools = u.Tools
		case u.Cosim != nil && !u.Cosim.Datapath.Paper():
			d.FormatCosim = append(d.FormatCosim, *u.Cosim)
		case u.Cosim != nil:
			d.Cosim = append(d.Cosim, *u.Cosim)
		case u.Synth != nil:
			r := u.Synth.Result
			if !r.Datapath.Paper() {
				d.FormatSynth = append(d.FormatSynth, *u.Synth)
			} else {
				d.Synth = append(d.Synth, *u.Synth)
			}
			d.synth[u.Synth.Build][hw.Config{Width: r.Width, Stages: r.Stages, SplitCount: r.SplitCount, Datapath: r.Datapath, Workers: r.Workers}.Normalized()] = *u.Synth
		case len(u.Pnr) > 0 && !u.Pnr[0].Datapath.Paper():
			d.FormatPnR = append(d.FormatPnR, u.Pnr...)
			if m, ok := d.fpnr[u.Pnr[0].Part]; ok {
				m[u.Pnr[0].Datapath] = u.Pnr[0]
			}
		case len(u.Pnr) > 0:
			d.PnR = append(d.PnR, u.Pnr...)
			r := u.Pnr[0]
			if m, ok := d.pnr[r.Part]; ok {
				m[r.Width] = u.Pnr
			}
		}
	}
	return d, nil
}

// primary is the synthesis runs of the first Yosys build, which feed the
// cost model and the stage sweep.
func (d *hardwareData) primary() map[hw.Config]HardwareSynthRun { return d.synth[d.builds[0]] }

// buildLabel names a build by the version it reported ("Yosys 0.23"),
// or by its name when nothing of it ran.
func (d *hardwareData) buildLabel(b string) string {
	for _, r := range d.synth[b] {
		f := strings.Fields(r.Result.Yosys)
		if len(f) >= 2 {
			return f[0] + " " + f[1]
		}
	}
	return "Yosys (" + b + ")"
}

func partLabel(p hw.Part) string { return strings.ToUpper(string(p.Family)) + " " + p.Device }

// HardwareLayout lays the block's unit results out as the Table 7 and
// Fig. 8 analogues beside the paper's figures.
func HardwareLayout(o HardwareOptions, us []HardwareUnit) (*report.Result, error) {
	o = o.defaults()
	d, err := gatherHardware(o, us)
	if err != nil {
		return nil, err
	}
	res := &report.Result{Block: "hardware", Title: hardwareTitle}
	res.Summary = append(res.Summary, "Tool versions: "+strings.Join(d.Tools, "; ")+".")
	if o.Cosim {
		res.Tables = append(res.Tables, CosimTable(d.Cosim))
		for _, r := range d.Cosim {
			if r.Passed() {
				res.Passed++
			} else {
				res.Failed++
			}
		}
	}
	if len(d.primary()) > 0 {
		for _, t := range []report.Table{table7(o, d), widthTable(o, d), yosysTable(o, d), stageTable(o, d), modelTable(o.Tech)} {
			if len(t.Rows) > 0 || t.Name == "table7" {
				res.Tables = append(res.Tables, t)
			}
		}
		figs, err := hardwareFigures(o, d)
		if err != nil {
			return nil, err
		}
		res.Figures = figs
	}
	if len(o.Formats) > 0 {
		res.Tables = append(res.Tables, formatsTable(o, d))
		for _, r := range d.FormatCosim {
			if r.Passed() {
				res.Passed++
			} else {
				res.Failed++
			}
		}
	}
	res.Claims = hardwareClaims(o, d)
	res.Data = d // the framework's run.SetStatus reports d.Skipped in the status
	return res, nil
}

// HardwareReport runs the selected experiments in process and lays them
// out (the per-topic `nfabric hw` commands).
func HardwareReport(ctx context.Context, o HardwareOptions) (*report.Result, error) {
	units, err := HardwareUnits(o)
	if err != nil {
		return nil, err
	}
	var us []HardwareUnit
	for _, u := range units {
		r, err := u.Run(ctx, run.Config{Seed: o.Seed, Logf: o.Logf})
		if err != nil {
			return nil, err
		}
		us = append(us, r)
	}
	res, err := HardwareLayout(o, us)
	if err == nil {
		run.SetStatus(res, us)
	}
	return res, err
}

// CosimTable lists co-simulation runs with a closing pass/fail count.
func CosimTable(rs []hw.CosimResult) report.Table {
	t := report.Table{Name: "hardware-cosim", Title: "Co-simulation of the generated RTL against the lowbit oracles",
		Columns: []string{"simulator", "width", "stages", "vectors", "responses checked", "mismatches", "status"}}
	pass, fail := 0, 0
	for _, r := range rs {
		st := "pass"
		if r.Passed() {
			pass++
		} else {
			st = "FAIL"
			fail++
		}
		t.AddRow(string(r.Simulator), r.Width, r.Stages, r.Vectors, r.Checked, r.Mismatches, st)
	}
	t.Notes = append(t.Notes,
		"Identity and FP32 bypass must return the line; G-Binary byte i must equal lowbit.RefCountPacket, G-Ternary byte i the int8 of lowbit.RefAggregatePacket with the 2-of-3 gate; invalid cycles and the latency are checked too.",
		fmt.Sprintf("%d passed, %d failed", pass, fail))
	return t
}

package experiments

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/neuronfabric/nfabric/report"
)

// RegisterReport adds a block that is not yet split into units: it runs as
// one unit (key "all") whose result is the finished report. It is the
// transitional path for blocks still computing inside their layout; new
// blocks use Register with a typed result.
func RegisterReport(name, title string, order int, run func(ctx context.Context, cfg Config) (*report.Result, error)) {
	Register(Spec[reportUnit]{
		Name: name, Title: title, Order: order,
		Units: func(Config) ([]Unit[reportUnit], error) {
			return []Unit[reportUnit]{{Key: "all", Run: func(ctx context.Context, cfg Config) (reportUnit, error) {
				res, err := run(ctx, cfg)
				if err != nil {
					return reportUnit{}, err
				}
				return packReport(res)
			}}}, nil
		},
		Layout: func(_ Config, rs []reportUnit) (*report.Result, error) { return rs[0].unpack() },
	})
}

// reportUnit carries a finished report through JSON: the report without
// its Data, the Data as raw JSON (so it re-encodes to the same bytes) and
// the figures' SVGs, which the report's own JSON leaves out.
type reportUnit struct {
	Report json.RawMessage `json:"report"`
	Data   json.RawMessage `json:"data,omitempty"`
	SVG    [][]byte        `json:"svg,omitempty"`
}

func packReport(res *report.Result) (reportUnit, error) {
	var u reportUnit
	if res == nil {
		return u, fmt.Errorf("no result")
	}
	r := *res
	if r.Data != nil {
		d, err := json.Marshal(r.Data)
		if err != nil {
			return u, fmt.Errorf("encode data: %w", err)
		}
		u.Data = d
	}
	r.Data = nil
	for _, f := range r.Figures {
		u.SVG = append(u.SVG, f.SVG)
	}
	var err error
	u.Report, err = json.Marshal(r)
	return u, err
}

func (u reportUnit) unpack() (*report.Result, error) {
	var r report.Result
	if err := json.Unmarshal(u.Report, &r); err != nil {
		return nil, fmt.Errorf("decode report: %w", err)
	}
	if len(r.Figures) != len(u.SVG) {
		return nil, fmt.Errorf("report has %d figures but %d SVGs", len(r.Figures), len(u.SVG))
	}
	for i := range r.Figures {
		r.Figures[i].SVG = u.SVG[i]
	}
	if u.Data != nil {
		r.Data = u.Data
	}
	return &r, nil
}

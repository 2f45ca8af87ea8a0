// Package wire converts between the domain types of cxl and control and the
// nfabric.v1 protobuf messages, in both directions, for the server and the
// client alike. Decoders never panic: a bad message gives a *FieldError
// naming the offending field by its path in the request.
package wire

import (
	"fmt"
	"strings"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/host"
	"github.com/neuronfabric/nfabric/lowbit"
)

// FieldError is a bad value in a request: Field is its path, e.g.
// "ops[3].write.addr" or "event.step.step".
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// Fieldf returns a *FieldError for field with a formatted message.
func Fieldf(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// Mode returns the wire value of m: cxl.Mode plus one.
func Mode(m cxl.Mode) pb.Mode { return pb.Mode(m) + 1 }

// ParseMode returns the cxl mode of a wire value; MODE_UNSPECIFIED and
// values beyond the enum are errors naming field.
func ParseMode(field string, m pb.Mode) (cxl.Mode, error) {
	if _, named := pb.Mode_name[int32(m)]; !named || m < pb.Mode_MODE_IDENTITY || int(m) > cxl.NumModes {
		return 0, Fieldf(field, "unknown mode %d (want one of %s)", int32(m), modeNames())
	}
	return cxl.Mode(m - 1), nil
}

// modeNames lists the wire's mode names, MODE_IDENTITY first.
func modeNames() string {
	var s []string
	for _, m := range cxl.AllModes() {
		s = append(s, Mode(m).String())
	}
	return strings.Join(s, ", ")
}

// Format returns the wire value of a region's sum format: the proto's
// FORMAT_ and the format's name upper-cased (FORMAT_INT8, FORMAT_BFP8),
// so an integer-sum format of lowbit's registry maps by name; FP32, the
// sign-plane shape, is FORMAT_UNSPECIFIED, as is a format the proto does
// not name.
func Format(f lowbit.Format) pb.Format {
	if f.Sum() {
		name := "FORMAT_" + strings.ToUpper(strings.ReplaceAll(f.String(), "-", "_"))
		if v, ok := pb.Format_value[name]; ok {
			return pb.Format(v)
		}
	}
	return pb.Format_FORMAT_UNSPECIFIED
}

// ParseFormat returns the cxl.Region.Sum of a wire value (Format's
// inverse); a value beyond the enum is an error naming field.
func ParseFormat(field string, w pb.Format) (lowbit.Format, error) {
	if w == pb.Format_FORMAT_UNSPECIFIED {
		return lowbit.FP32, nil
	}
	names := []string{pb.Format_FORMAT_UNSPECIFIED.String()}
	for _, f := range lowbit.Formats() {
		if g := Format(f); g != pb.Format_FORMAT_UNSPECIFIED {
			if g == w {
				return f, nil
			}
			names = append(names, g.String())
		}
	}
	return 0, Fieldf(field, "unknown format %d (want one of %s)", int32(w), strings.Join(names, ", "))
}

// Layout returns the wire value of l.
func Layout(l lowbit.Layout) pb.Layout {
	if l == lowbit.WorkerMajor {
		return pb.Layout_LAYOUT_WORKER_MAJOR
	}
	return pb.Layout_LAYOUT_ELEMENT_MAJOR
}

// ParseLayout returns the layout of a wire value, or def when it is
// LAYOUT_UNSPECIFIED.
func ParseLayout(field string, l pb.Layout, def lowbit.Layout) (lowbit.Layout, error) {
	switch l {
	case pb.Layout_LAYOUT_UNSPECIFIED:
		return def, nil
	case pb.Layout_LAYOUT_ELEMENT_MAJOR:
		return lowbit.ElementMajor, nil
	case pb.Layout_LAYOUT_WORKER_MAJOR:
		return lowbit.WorkerMajor, nil
	}
	return 0, Fieldf(field, "unknown layout %d (want LAYOUT_ELEMENT_MAJOR or LAYOUT_WORKER_MAJOR)", int32(l))
}

// ParseGate returns the gate named by s (lowbit.ParseGate syntax), or def
// when s is empty.
func ParseGate(field, s string, def lowbit.Gate) (lowbit.Gate, error) {
	if s == "" {
		return def, nil
	}
	g, err := lowbit.ParseGate(s)
	if err != nil {
		return lowbit.Gate{}, &FieldError{Field: field, Err: err}
	}
	return g, nil
}

// Region returns the wire form of region id r.
func Region(id cxl.RegionID, r cxl.Region, mapped bool) *pb.Region {
	out := &pb.Region{
		Id: uint32(id), Name: r.Name, Base: r.Base, Size: r.Size, Mode: Mode(r.Mode),
		Workers: uint32(r.Workers), Layout: Layout(r.Layout), Gate: r.Gate.String(), Element0: uint64(r.Element0),
		Slabs: uint32(r.Slabs()), SlabBytes: r.SlabBytes(), PayloadLines: uint64(r.PayloadLines()), Elements: uint64(r.Elements()),
		ViewBase: r.ViewAddr(0, 0), End: r.End(), Mapped: mapped,
		Format: Format(r.Sum), ExpLines: uint64(r.ExpLines()),
	}
	if r.Sum.BlockExponents() {
		out.ExpBase, out.ExpViewBase = r.ExpAddr(0, 0), r.ExpViewAddr(0)
	}
	return out
}

// Stats returns the wire form of a controller's counters.
func Stats(s cxl.Stats) *pb.GetStatsResponse {
	out := &pb.GetStatsResponse{Transactions: s.Transactions, Completed: s.Completed, ModeChanges: s.ModeChanges}
	for i, m := range s.Modes {
		out.Modes = append(out.Modes, &pb.ModeStats{Mode: Mode(cxl.Mode(i)), ReadLines: m.ReadLines, WriteLines: m.WriteLines,
			TransformedLines: m.TransformedLines, ReadBytes: m.ReadBytes, WriteBytes: m.WriteBytes, MediaLinesRead: m.MediaLinesRead})
	}
	for i, k := range cxl.ErrKinds {
		out.Errors = append(out.Errors, &pb.ErrorCount{Kind: k.Error(), Count: s.Errors[i]})
	}
	return out
}

// Accounting returns the wire form of a host runtime's accounting.
func Accounting(a host.Accounting) *pb.HostAccounting {
	return &pb.HostAccounting{EncodedElements: a.Encoded, Fp32Bytes: a.FP32Bytes, Rejected: a.Rejected, PayloadBytes: a.PayloadBytes,
		WriteLines: a.WriteLines, ReadLines: a.ReadLines, Transactions: a.Transactions, Aggregates: a.Aggregates}
}

// ModeChange returns the wire form of a mode-change log entry.
func ModeChange(c cxl.ModeChange) *pb.ModeChange {
	return &pb.ModeChange{Region: uint32(c.Region), From: Mode(c.From), To: Mode(c.To), AfterSeq: c.AfterSeq, Time: c.Time}
}

// Event returns the wire form of a control event.
func Event(ev control.Event) *pb.Event {
	switch ev.Type {
	case control.EvStep:
		return &pb.Event{Event: &pb.Event_Step{Step: &pb.StepEvent{Step: ev.Step, TimeNs: ev.TimeNS}}}
	case control.EvLoss:
		return &pb.Event{Event: &pb.Event_Loss{Loss: &pb.LossEvent{Step: ev.Step, Loss: ev.Loss}}}
	case control.EvDiag:
		d := &pb.DiagEvent{Step: ev.Step, Group: ev.Group}
		for _, f := range lowbit.Formats() {
			c, ok := ev.Cos[f]
			if !ok {
				continue
			}
			// An FP32 cosine (no rung's) goes out as MODE_FP32_BYPASS, for
			// the plane to refuse.
			d.Cosines = append(d.Cosines, &pb.ModeCosine{Mode: Mode(cxl.Aggregate(f)), Cosine: c})
		}
		return &pb.Event{Event: &pb.Event_Diag{Diag: d}}
	case control.EvTelemetry:
		t := ev.Telemetry
		return &pb.Event{Event: &pb.Event_Telemetry{Telemetry: &pb.TelemetryEvent{TimeNs: t.TimeNS, DemandGbps: t.DemandGBps, CapacityGbps: t.CapacityGBps, LineReadsPerS: t.LineReads}}}
	case control.EvNonFinite:
		return &pb.Event{Event: &pb.Event_NonFinite{NonFinite: &pb.NonFiniteEvent{Step: ev.Step, Group: ev.Group}}}
	}
	return &pb.Event{}
}

// ParseEvent returns the control event of a wire event. It checks only
// what the encoding requires (one kind set); the plane judges the values.
// field is the event's path, e.g. "event".
func ParseEvent(field string, e *pb.Event) (control.Event, error) {
	switch x := e.GetEvent().(type) {
	case *pb.Event_Step:
		return control.Event{Type: control.EvStep, Step: x.Step.GetStep(), TimeNS: x.Step.GetTimeNs()}, nil
	case *pb.Event_Loss:
		return control.Event{Type: control.EvLoss, Step: x.Loss.GetStep(), Loss: x.Loss.GetLoss()}, nil
	case *pb.Event_Diag:
		return parseDiag(field, x.Diag)
	case *pb.Event_Telemetry:
		t := x.Telemetry
		return control.Event{Type: control.EvTelemetry, TimeNS: t.GetTimeNs(), Telemetry: control.Telemetry{
			TimeNS: t.GetTimeNs(), DemandGBps: t.GetDemandGbps(), CapacityGBps: t.GetCapacityGbps(), LineReads: t.GetLineReadsPerS()}}, nil
	case *pb.Event_NonFinite:
		return control.Event{Type: control.EvNonFinite, Step: x.NonFinite.GetStep(), Group: x.NonFinite.GetGroup()}, nil
	}
	return control.Event{}, Fieldf(field, "no event set (want one of step, loss, diag, telemetry, non_finite)")
}

// parseDiag returns the EvDiag of a wire diagnostics event: every rung's
// cosine from cosines, each a low-bit mode given once (the plane refuses
// an event with none).
func parseDiag(field string, d *pb.DiagEvent) (control.Event, error) {
	cos := map[lowbit.Format]float64{}
	for i, mc := range d.GetCosines() {
		at := fmt.Sprintf("%s.diag.cosines[%d].mode", field, i)
		m, err := ParseMode(at, mc.GetMode())
		if err != nil {
			return control.Event{}, err
		}
		f := m.Format()
		if !m.LowBit() {
			return control.Event{}, Fieldf(at, "%v is no rung of the admission ladder", m)
		}
		if _, dup := cos[f]; dup {
			return control.Event{}, Fieldf(at, "%v given twice", m)
		}
		cos[f] = mc.GetCosine()
	}
	return control.Event{Type: control.EvDiag, Step: d.GetStep(), Group: d.GetGroup(), Cos: cos}, nil
}

// EventField names the field of ev that a control.Plane error is about:
// the step of a step event, the loss of a loss event, the group or the
// cosines of diagnostics, the sample of telemetry, the group of a NaN/Inf
// report. known reports whether a group is in the session.
func EventField(field string, ev control.Event, known func(string) bool) string {
	switch ev.Type {
	case control.EvStep:
		return field + ".step.step"
	case control.EvLoss:
		return field + ".loss.loss"
	case control.EvDiag:
		if !known(ev.Group) {
			return field + ".diag.group"
		}
		return field + ".diag.cosines"
	case control.EvTelemetry:
		return field + ".telemetry"
	case control.EvNonFinite:
		return field + ".non_finite.group"
	}
	return field
}

// Action returns the wire form of a control action.
func Action(a control.Action) *pb.Action {
	return &pb.Action{Step: a.Step, Group: a.Group, Mode: Mode(a.Mode), Reason: a.Reason}
}

// ParseAction returns the control action of a wire action.
func ParseAction(field string, a *pb.Action) (control.Action, error) {
	m, err := ParseMode(field+".mode", a.GetMode())
	if err != nil {
		return control.Action{}, err
	}
	return control.Action{Step: a.GetStep(), Group: a.GetGroup(), Mode: m, Reason: a.GetReason()}, nil
}

// ParseReadSpans expands a TransactResponse's read_spans into one mode and
// one transformed flag per read line, checking that the spans cover
// exactly lines read lines (each span at least one line, every mode
// known). A span list that does not is a malformed response: an error
// naming field, never a panic or a partial result.
func ParseReadSpans(field string, spans []*pb.ReadSpan, lines int) ([]cxl.Mode, []bool, error) {
	total := 0
	for i, sp := range spans {
		n := int(sp.GetLines())
		if n == 0 {
			return nil, nil, Fieldf(fmt.Sprintf("%s[%d].lines", field, i), "zero lines (a span has at least one)")
		}
		if n > lines-total {
			return nil, nil, Fieldf(fmt.Sprintf("%s[%d].lines", field, i), "spans cover more than the %d read lines", lines)
		}
		total += n
	}
	if total != lines {
		return nil, nil, Fieldf(field, "spans cover %d lines, want the %d read lines", total, lines)
	}
	modes := make([]cxl.Mode, 0, lines)
	trans := make([]bool, 0, lines)
	for i, sp := range spans {
		m, err := ParseMode(fmt.Sprintf("%s[%d].mode", field, i), sp.GetMode())
		if err != nil {
			return nil, nil, err
		}
		for k := 0; k < int(sp.GetLines()); k++ {
			modes = append(modes, m)
			trans = append(trans, sp.GetTransformed())
		}
	}
	return modes, trans, nil
}

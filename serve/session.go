package serve

import (
	"context"
	"fmt"
	"math"
	"sync"

	"google.golang.org/protobuf/proto"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/serve/wire"
	"github.com/neuronfabric/nfabric/workload"
)

// session is one control plane and the record of what it was fed.
type session struct {
	cfg    *pb.SessionConfig // effective, every default filled in
	params []uint64
	groups map[string]bool

	mu     sync.Mutex
	plane  *control.Plane
	events []*pb.RecordedEvent
	// bytes is the encoded size of the record, what Dump sends: the
	// configuration, the events and the actions.
	bytes int
}

// Bounds on encoded sizes: a repeated field's tag and length take at
// most fieldWireBytes; an action holds a group name and a reason (a few
// words of the plane's, bounded by MaxNameBytes too) and two varints.
const (
	fieldWireBytes  = 6
	actionWireBytes = 2*MaxNameBytes + 32
)

// recordLimits bounds what a session records.
type recordLimits struct {
	events int // events recorded
	bytes  int // encoded size of the record
}

type controlService struct {
	pb.UnimplementedControlServer
	s *Server
}

// newSession builds a session from a wire config.
func newSession(c *pb.SessionConfig) (*session, error) {
	cfg, params, err := wire.ParseSessionConfig("config", c)
	if err != nil {
		return nil, err
	}
	p, err := control.New(cfg)
	if err != nil {
		return nil, &wire.FieldError{Field: "config", Err: err}
	}
	ss := &session{cfg: wire.SessionConfig(cfg, params), params: params, plane: p, groups: map[string]bool{}}
	for i, g := range cfg.Groups {
		if len(g) > MaxNameBytes {
			return nil, wire.Fieldf(fmt.Sprintf("config.groups[%d].name", i), "%d bytes, more than %d", len(g), MaxNameBytes)
		}
		ss.groups[g] = true
	}
	ss.bytes = proto.Size(ss.cfg) + fieldWireBytes
	return ss, nil
}

// reserve is the most one step can add to the record besides its event:
// an action for every group.
func (ss *session) reserve() int { return len(ss.params) * (actionWireBytes + fieldWireBytes) }

// eventGroup returns the group name an event carries, if any.
func eventGroup(e *pb.Event) (string, string) {
	switch x := e.GetEvent().(type) {
	case *pb.Event_Diag:
		return x.Diag.GetGroup(), "diag.group"
	case *pb.Event_NonFinite:
		return x.NonFinite.GetGroup(), "non_finite.group"
	}
	return "", ""
}

// step feeds one event to the plane. A decoded event is recorded (also
// when the plane rejects it: rejected telemetry changes the Commander's
// trust, so replay needs it); the error is a *wire.FieldError.
//
// A group name longer than MaxNameBytes is refused before the plane
// sees it (no configured group has one), and a recorded error is
// truncated to maxEcho bytes, so that a record's size follows from its
// event count. With the record at its limits (lim: events, or encoded
// bytes with room for this step's event and actions) the event is
// refused with errSessionFull and nothing changes.
func (ss *session) step(field string, e *pb.Event, lim recordLimits) (acts []control.Action, alarm bool, err error) {
	if g, f := eventGroup(e); len(g) > MaxNameBytes {
		return nil, false, wire.Fieldf(field+"."+f, "%d bytes, more than %d (no configured group has such a name)", len(g), MaxNameBytes)
	}
	ev, err := wire.ParseEvent(field, e)
	if err != nil {
		return nil, false, err
	}
	need := proto.Size(e) + maxEcho + 64 + 3*fieldWireBytes + ss.reserve()
	if len(ss.events) >= lim.events || ss.bytes+need > lim.bytes {
		return nil, false, errSessionFull
	}
	before := ss.plane.Alarms()
	acts, perr := ss.plane.Step(ev)
	rec := &pb.RecordedEvent{Event: proto.Clone(e).(*pb.Event)}
	if perr != nil {
		rec.Error = truncate(perr.Error())
		err = &wire.FieldError{Field: wire.EventField(field, ev, func(g string) bool { return ss.groups[g] }), Err: perr}
	}
	ss.events = append(ss.events, rec)
	ss.bytes += proto.Size(rec) + fieldWireBytes
	for _, a := range acts {
		ss.bytes += proto.Size(wire.Action(a)) + fieldWireBytes
	}
	return acts, ss.plane.Alarms() > before, err
}

var errSessionFull = fmt.Errorf("session record is full (the server's limit of recorded events, or a Dump's largest size): Dump it and open a new session")

func (c *controlService) OpenSession(ctx context.Context, req *pb.OpenSessionRequest) (*pb.OpenSessionResponse, error) {
	ss, err := newSession(req.GetConfig())
	if err != nil {
		return nil, fieldStatus("config", err)
	}
	s := c.s
	if lim := s.recordLimits(); ss.bytes+ss.reserve() > lim.bytes/2 {
		return nil, exhausted("config: %d groups (%d bytes) leave too little of a Dump's %d bytes for the record", len(ss.params), ss.bytes, lim.bytes)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	if s.sessions >= s.opts.MaxSessions {
		return nil, exhausted("the server holds %d sessions, its limit", s.sessions)
	}
	id := s.newID()
	o.sessions[id] = ss
	s.sessions++
	s.log.Info("session opened", "session", id, "groups", len(ss.params))
	return &pb.OpenSessionResponse{Session: id, Config: ss.cfg}, nil
}

func (c *controlService) session(ctx context.Context, id uint64) (*session, error) {
	return owned(c.s, ctx, "session", id, sessionsOf, nil)
}

func sessionsOf(o *owner) map[uint64]*session { return o.sessions }

func (c *controlService) CloseSession(ctx context.Context, req *pb.CloseSessionRequest) (*pb.CloseSessionResponse, error) {
	s := c.s
	if _, err := owned(s, ctx, "session", req.GetSession(), sessionsOf, func(*session) { s.sessions-- }); err != nil {
		return nil, err
	}
	return &pb.CloseSessionResponse{}, nil
}

func (c *controlService) Send(ctx context.Context, req *pb.SendRequest) (*pb.SendResponse, error) {
	ss, err := c.session(ctx, req.GetSession())
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	acts, alarm, err := ss.step("event", req.GetEvent(), c.s.recordLimits())
	if err == errSessionFull {
		return nil, exhausted("session %d: %v (%d events, %d of %d bytes)", req.GetSession(), err, len(ss.events), ss.bytes, c.s.recordLimits().bytes)
	}
	if err != nil {
		return nil, fieldStatus("event", err)
	}
	out := &pb.SendResponse{Alarms: uint32(ss.plane.Alarms()), Alarm: alarm}
	for _, a := range acts {
		out.Actions = append(out.Actions, wire.Action(a))
	}
	return out, nil
}

func (c *controlService) Status(ctx context.Context, req *pb.StatusRequest) (*pb.StatusResponse, error) {
	ss, err := c.session(ctx, req.GetSession())
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := &pb.StatusResponse{Alarms: uint32(ss.plane.Alarms()), Events: uint64(len(ss.events))}
	for i, g := range ss.plane.Status() {
		out.Groups = append(out.Groups, wire.GroupStatus(g, ss.params[i]))
	}
	return out, nil
}

func (c *controlService) Dump(ctx context.Context, req *pb.DumpRequest) (*pb.SessionDump, error) {
	ss, err := c.session(ctx, req.GetSession())
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := &pb.SessionDump{Config: ss.cfg, Events: ss.events}
	for _, a := range ss.plane.Log() {
		out.Actions = append(out.Actions, wire.Action(a))
	}
	return proto.Clone(out).(*pb.SessionDump), nil
}

func (c *controlService) Replay(_ context.Context, d *pb.SessionDump) (*pb.ReplayResponse, error) {
	if len(d.GetEvents()) > c.s.opts.MaxSessionEvents {
		return nil, exhausted("events: %d events, more than the server's limit of %d", len(d.GetEvents()), c.s.opts.MaxSessionEvents)
	}
	out, err := Replay(d)
	if err != nil {
		return nil, fieldStatus("config", err)
	}
	return out, nil
}

// recordLimits are a session's: the event limit, and a record whose Dump
// fits a quarter of a message.
func (s *Server) recordLimits() recordLimits {
	return recordLimits{events: s.opts.MaxSessionEvents, bytes: recordBytes(s.opts)}
}

// recordBytes bounds a session's record, in encoded bytes: a quarter of
// the message limit, so that a Dump is one reply and the sessions' memory
// stays a fraction of MaxSessions messages.
func recordBytes(o Options) int { return o.MaxMessageBytes / 4 }

// Replay runs a dump's events through a fresh plane and compares the
// outcome (actions and per-event errors) with the dump's.
func Replay(d *pb.SessionDump) (*pb.ReplayResponse, error) {
	ss, err := newSession(d.GetConfig())
	if err != nil {
		return nil, err
	}
	out := &pb.ReplayResponse{Matches: true}
	mismatch := func(i int, format string, args ...any) {
		if out.Matches {
			out.Matches, out.FirstMismatch, out.Mismatch = false, uint64(i), fmt.Sprintf(format, args...)
		}
	}
	for i, rec := range d.GetEvents() {
		field := fmt.Sprintf("events[%d].event", i)
		n := len(ss.events)
		_, _, err := ss.step(field, rec.GetEvent(), recordLimits{events: len(d.GetEvents()), bytes: math.MaxInt})
		got := ""
		if len(ss.events) > n {
			got = ss.events[n].GetError()
		} else if err != nil {
			got = err.Error() // not an event the plane could see
		}
		if got != rec.GetError() {
			mismatch(i, "event %d: error %q, recorded %q", i, got, rec.GetError())
		}
	}
	for _, a := range ss.plane.Log() {
		out.Actions = append(out.Actions, wire.Action(a))
	}
	if len(out.Actions) != len(d.GetActions()) {
		mismatch(len(d.GetEvents()), "%d actions, recorded %d", len(out.Actions), len(d.GetActions()))
	}
	for i := range min(len(out.Actions), len(d.GetActions())) {
		if !proto.Equal(out.Actions[i], d.GetActions()[i]) {
			mismatch(len(d.GetEvents()), "action %d: %v, recorded %v", i, out.Actions[i], d.GetActions()[i])
			break
		}
	}
	return out, nil
}

func (c *controlService) Forecast(_ context.Context, req *pb.ForecastRequest) (*pb.ForecastResponse, error) {
	in, err := predictorInput(req)
	if err != nil {
		return nil, fieldStatus("model", err)
	}
	f, err := control.Predict(in)
	if err != nil {
		return nil, fieldStatus("model", err)
	}
	return &pb.ForecastResponse{Model: f.Model, ForwardS: f.ForwardS, BackwardS: f.BackwardS, GradientBytes: f.GradientBytes,
		ShardBytesPerGpu: f.ShardBytesPerGPU, AllreduceS: f.AllReduceS, LowbitS: f.LowBitS, PeakCxlBytesPerS: f.PeakCXLBytesPerS,
		CacheLineReads: f.CacheLineReads, LowbitCacheLineReads: f.LowBitCacheLineReads, Pressure: f.Pressure}, nil
}

// predictorInput decodes a forecast request; errors name the field.
func predictorInput(req *pb.ForecastRequest) (control.PredictorInput, error) {
	var in control.PredictorInput
	prof, err := workload.Builtin(req.GetModel(), int(req.GetSeq()))
	if err != nil {
		return in, &wire.FieldError{Field: "model", Err: err}
	}
	n := int(req.GetWorkers())
	if n == 0 {
		n = 8
	}
	if n > 1<<20 {
		return in, wire.Fieldf("workers", "%d too many", n)
	}
	name := func(s, def string) string {
		if s == "" {
			return def
		}
		return s
	}
	fp32, err := collective.LookupLink(name(req.GetFp32Link(), "ib"), nil)
	if err != nil {
		return in, &wire.FieldError{Field: "fp32_link", Err: err}
	}
	cxlLink, err := collective.LookupLink(name(req.GetCxlLink(), "cxl"), nil)
	if err != nil {
		return in, &wire.FieldError{Field: "cxl_link", Err: err}
	}
	alg, err := collective.ParseAlgorithm(name(req.GetAlgorithm(), "ring"))
	if err != nil {
		return in, &wire.FieldError{Field: "algorithm", Err: err}
	}
	if req.GetBucketBytes() > 1<<40 {
		return in, wire.Fieldf("bucket_bytes", "%d out of range [0, %d]", req.GetBucketBytes(), uint64(1)<<40)
	}
	if req.GetBatch() > 1<<20 {
		return in, wire.Fieldf("batch", "%d out of range [0, %d]", req.GetBatch(), 1<<20)
	}
	return control.PredictorInput{
		Profile:  prof,
		Schedule: workload.Schedule{Accel: workload.A100, Batch: int(req.GetBatch())},
		Buckets:  workload.BucketOptions{CapBytes: int64(req.GetBucketBytes())},
		FP32:     collective.AlphaBeta{Alg: alg, N: n, Link: fp32},
		CXL:      collective.CXLPath{Link: cxlLink, Workers: n},
	}, nil
}

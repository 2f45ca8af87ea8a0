package serve_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/serve"
	"github.com/neuronfabric/nfabric/serve/client"
	"github.com/neuronfabric/nfabric/serve/wire"
)

// script is a control/testdata scenario: a config and its events, each
// flagged when the script expects the plane to reject it.
type script struct {
	cfg    control.Config
	events []control.Event
	reject []bool
}

// readScript reads one of control's scenario scripts with
// control.ParseScript; expectations other than expect-error are control's
// own tests and are skipped here.
func readScript(t *testing.T, path string) script {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	lines, err := control.ParseScript(fh)
	if err != nil {
		t.Fatal(err)
	}
	var s script
	for _, l := range lines {
		switch l.Op {
		case "config":
			s.cfg = l.Config
		case "event", "expect-error":
			s.events = append(s.events, l.Event)
			s.reject = append(s.reject, l.Op == "expect-error")
		}
	}
	return s
}

// compareSession feeds the events to an in-process control.Plane and to a
// session on the server: every event must give the same actions and the
// same acceptance, and the session's dump must replay to the same actions.
// It returns the dump.
func compareSession(t *testing.T, c *client.Client, s script) *pb.SessionDump {
	t.Helper()
	ctx := context.Background()
	local, err := control.New(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	params := make([]uint64, len(s.cfg.Groups))
	for i := range params {
		params[i] = uint64(1000 * (i + 1))
	}
	remote, err := c.OpenSession(ctx, wire.SessionConfig(s.cfg, params))
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close(ctx)
	for i, ev := range s.events {
		want, lerr := local.Step(ev)
		got, rerr := remote.Send(ctx, ev)
		if (lerr != nil) != (rerr != nil) || (rerr != nil && status.Code(rerr) != codes.InvalidArgument) {
			t.Fatalf("event %d %+v: in process %v, service %v", i, ev, lerr, rerr)
		}
		if s.reject[i] && rerr == nil {
			t.Fatalf("event %d %+v: accepted, the script expects a rejection", i, ev)
		}
		if len(want) != 0 || len(got) != 0 {
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("event %d %+v: service actions %v, in process %v", i, ev, got, want)
			}
		}
	}
	dump, err := remote.Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var logged []control.Action
	for i, a := range dump.GetActions() {
		act, err := wire.ParseAction(fmt.Sprint(i), a)
		if err != nil {
			t.Fatal(err)
		}
		logged = append(logged, act)
	}
	if !reflect.DeepEqual(logged, local.Log()) {
		t.Fatalf("dumped actions %v, in-process log %v", logged, local.Log())
	}
	rep, err := c.Control.Replay(ctx, dump)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.GetMatches() || len(rep.GetActions()) != len(dump.GetActions()) {
		t.Fatalf("replay of the dump does not match: %s", rep.GetMismatch())
	}
	return dump
}

// TestControlScriptsOverSocket: control's scenario scripts through the
// service give exactly the in-process plane's actions, and their dumps
// replay; a tampered dump does not.
func TestControlScriptsOverSocket(t *testing.T) {
	ts := startServer(t, serve.Options{})
	c := ts.dial(t)
	files, _ := filepath.Glob("../control/testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no control scripts")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s := readScript(t, f)
			if s.cfg.Groups == nil {
				t.Skip("no config line")
			}
			dump := compareSession(t, c, s)
			if len(dump.GetActions()) == 0 {
				return
			}
			tampered := proto.Clone(dump).(*pb.SessionDump)
			tampered.Actions[len(tampered.Actions)-1].Reason += " (edited)"
			rep, err := c.Control.Replay(context.Background(), tampered)
			if err != nil || rep.GetMatches() {
				t.Fatalf("tampered dump replays as matching (%v)", err)
			}
		})
	}
}

// TestControlRandomStream: a long event stream with the Commander on,
// noisy losses with a degradation window, diagnostics, telemetry, NaN/Inf
// reports and bad events sprinkled in gives the in-process plane's
// actions, event by event.
func TestControlRandomStream(t *testing.T) {
	ts := startServer(t, serve.Options{})
	c := ts.dial(t)
	cfg := control.DefaultConfig("backbone", "head")
	cfg.WarmupSteps, cfg.CooldownSteps, cfg.CalibrationSteps = 50, 40, 10
	cfg.Commander = control.CommanderConfig{Enabled: true, RelievePressure: 0.7, ReleasePressure: 0.4, StaleNS: 5e6, Smooth: 0.5}
	rng := rand.New(rand.NewPCG(17, 17))
	var s script
	s.cfg = cfg
	add := func(ev control.Event) { s.events, s.reject = append(s.events, ev), append(s.reject, false) }
	steps := 1500
	if testing.Short() {
		steps = 400
	}
	for st := range int64(steps) {
		now := st * 1e6
		add(control.Event{Type: control.EvTelemetry, Telemetry: control.Telemetry{TimeNS: now, DemandGBps: 100 * rng.Float64(), CapacityGBps: 100, LineReads: 1e9}})
		add(control.Event{Type: control.EvStep, Step: st, TimeNS: now})
		loss := 2 * math.Exp(-float64(st)/500) * (1 + 0.05*rng.NormFloat64())
		if st > 600 && st < 650 {
			loss *= 1.8
		}
		add(control.Event{Type: control.EvLoss, Step: st, Loss: loss})
		if st%25 == 0 {
			for _, g := range cfg.Groups {
				add(control.Event{Type: control.EvDiag, Step: st, Group: g, Cos: map[lowbit.Format]float64{lowbit.Binary: 2*rng.Float64() - 1, lowbit.Ternary: rng.Float64()}})
			}
		}
		switch rng.IntN(60) {
		case 0:
			add(control.Event{Type: control.EvNonFinite, Step: st, Group: cfg.Groups[rng.IntN(2)]})
		case 1:
			add(control.Event{Type: control.EvLoss, Step: st, Loss: math.NaN()})
		case 2:
			add(control.Event{Type: control.EvStep, Step: st - 1})
		case 3:
			add(control.Event{Type: control.EvTelemetry, Telemetry: control.Telemetry{TimeNS: now, DemandGBps: math.Inf(1), CapacityGBps: 100}})
		}
	}
	dump := compareSession(t, c, s)
	if len(dump.GetActions()) < 4 {
		t.Fatalf("only %d actions: the stream does not exercise the plane", len(dump.GetActions()))
	}
}

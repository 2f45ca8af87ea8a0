package client

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// Check is one self-test check.
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
}

// SelfTest runs a short end-to-end check against a server: the paper's
// Sec. 6 packet test (W = 8 workers' signs, read back under every mode and
// judged by lowbit's reference loops: identity = the written bytes,
// G-Binary = the count c, G-Ternary = sgn(2c - W) zeroed where element
// mod 3 == 2), a bad request that
// must fail naming its field, and a control session whose warm-up ends in
// a G-Binary action. It leaves nothing open.
func SelfTest(ctx context.Context, c *Client, lines int, seed uint64) ([]Check, error) {
	var out []Check
	add := func(name string, ok bool, format string, args ...any) {
		out = append(out, Check{Name: name, Passed: ok, Detail: fmt.Sprintf(format, args...)})
	}
	const w = 8
	d, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: uint64(lines) * cxl.LineBytes, Workers: w})
	if err != nil {
		return nil, fmt.Errorf("selftest: open device: %w", err)
	}
	defer d.Close(ctx)
	reg, err := d.Map(ctx, &pb.MapRegionRequest{Name: "sec6", Size: uint64(lines) * cxl.LineBytes})
	if err != nil {
		return nil, fmt.Errorf("selftest: map: %w", err)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5e1f))
	written := make([]byte, lines*cxl.LineBytes)
	for i := range written {
		written[i] = byte(rng.Uint32())
	}
	if err := d.Write(ctx, 0, written); err != nil {
		return nil, fmt.Errorf("selftest: write: %w", err)
	}
	for _, m := range cxl.Modes() {
		if err := d.SetMode(ctx, reg.GetId(), m, 0); err != nil {
			return nil, fmt.Errorf("selftest: set mode: %w", err)
		}
		got, modes, err := d.Read(ctx, 0, lines)
		if err != nil {
			return nil, fmt.Errorf("selftest: read: %w", err)
		}
		want := expectPacket(m, written, w)
		bad := 0
		for l := range lines {
			if modes[l] != m || !bytes.Equal(got[l*cxl.LineBytes:(l+1)*cxl.LineBytes], want[l*cxl.LineBytes:(l+1)*cxl.LineBytes]) {
				bad++
			}
		}
		add("sec6 "+m.String(), bad == 0, "%d lines, %d differ from the closed form", lines, bad)
	}
	_, err = d.Transact(ctx, ReadOp(3, 1))
	st := status.Convert(err)
	add("bad request names its field", st.Code() == codes.InvalidArgument && strings.HasPrefix(st.Message(), "ops[0].read.addr:"),
		"unaligned read: %v %q", st.Code(), st.Message())

	s, err := c.OpenSession(ctx, &pb.SessionConfig{Groups: []*pb.Group{{Name: "backbone", Parameters: 1}},
		Default: pb.Default_DEFAULT_LOWBIT, Warmup: wrapperspb.Int64(2)})
	if err != nil {
		return nil, fmt.Errorf("selftest: open session: %w", err)
	}
	defer s.Close(ctx)
	var acts []control.Action
	for step := range int64(3) {
		a, err := s.Send(ctx, control.Event{Type: control.EvStep, Step: step})
		if err != nil {
			return nil, fmt.Errorf("selftest: send: %w", err)
		}
		acts = append(acts, a...)
	}
	add("control warm-up ends in G-Binary", len(acts) == 1 && acts[0].Step == 2 && acts[0].Mode == cxl.Aggregate(lowbit.Binary), "actions %v", acts)
	return out, nil
}

// expectPacket is an element-major region's read responses under m,
// from lowbit's reference loops (one bit at a time, independent of the
// device's kernels): identity the written bytes, G-Binary the count byte
// c, G-Ternary the int8 vote sgn(2c - W) under the paper's 2-of-3 gate on
// the element's index (element e = 64 l + i for byte i of line l).
func expectPacket(m cxl.Mode, written []byte, w int) []byte {
	if !m.LowBit() {
		return written
	}
	out := make([]byte, len(written))
	if m == cxl.Aggregate(lowbit.Binary) {
		for e, c := range lowbit.RefCountPacket(written, w) {
			out[e] = byte(c)
		}
		return out
	}
	s := lowbit.Spec{Workers: w, Layout: lowbit.ElementMajor, Format: lowbit.Ternary, Gate: lowbit.PaperGate}
	for e, u := range lowbit.RefAggregatePacket(written, nil, s, 0) {
		out[e] = byte(u)
	}
	return out
}

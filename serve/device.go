package serve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/host"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/serve/wire"
)

// device is one opened controller: a host.Device (the one implementation
// of the device semantics, cxl.Core's, and of the runtime's accounting)
// with the region defaults it was opened with. Each host.Device call is
// atomic; the mutex makes the service's compound calls atomic too (count
// the regions then map, stats with the region table and the log), so
// each RPC runs with no other call on the device in between.
type device struct {
	capacity uint64
	workers  int
	layout   lowbit.Layout
	gate     lowbit.Gate

	mu  sync.Mutex
	dev *host.Device
}

type controllerService struct {
	pb.UnimplementedControllerServer
	s *Server
}

func (c *controllerService) OpenDevice(ctx context.Context, req *pb.OpenDeviceRequest) (*pb.OpenDeviceResponse, error) {
	d := &device{capacity: req.GetCapacityBytes(), workers: int(req.GetWorkers())}
	if d.workers == 0 {
		d.workers = lowbit.MaxPacketWorkers
	}
	var err error
	if d.layout, err = wire.ParseLayout("layout", req.GetLayout(), lowbit.ElementMajor); err != nil {
		return nil, fieldStatus("layout", err)
	}
	if d.gate, err = wire.ParseGate("gate", req.GetGate(), lowbit.PaperGate); err != nil {
		return nil, fieldStatus("gate", err)
	}
	// The defaults must make a valid region: check them on a one-slab
	// region now rather than at the first MapRegion.
	probe := cxl.Region{Name: "device defaults", Workers: d.workers, Layout: d.layout, Gate: d.gate}
	probe.Size = uint64(probe.Slabs()) * cxl.LineBytes
	if err := probe.Validate(); err != nil {
		return nil, fieldStatus("workers", err)
	}
	if req.GetLinesHint() > 1<<28 {
		return nil, fieldStatus("lines_hint", fmt.Errorf("%d out of range [0, %d]", req.GetLinesHint(), 1<<28))
	}
	if d.capacity == 0 {
		return nil, fieldStatus("capacity_bytes", errors.New("0 (want a positive multiple of 64)"))
	}
	// The hint presizes the page index: at most the lines the capacity
	// holds, so that a device's memory follows from its capacity.
	hint := min(uint64(req.GetLinesHint()), d.capacity/cxl.LineBytes)
	dev, err := host.Open(host.Config{Workers: d.workers, Layout: d.layout, Gate: d.gate, Capacity: d.capacity, LinesHint: int(hint)})
	if err != nil {
		return nil, fieldStatus("capacity_bytes", err)
	}
	d.dev = dev
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	if s.devices >= s.opts.MaxDevices {
		return nil, exhausted("the server holds %d devices, its limit", s.devices)
	}
	if s.devBytes+d.capacity > s.opts.MaxDeviceBytes || s.devBytes+d.capacity < s.devBytes {
		return nil, exhausted("capacity_bytes: %d more bytes of device memory would exceed the server's limit of %d (%d in use)", d.capacity, s.opts.MaxDeviceBytes, s.devBytes)
	}
	id := s.newID()
	o.devices[id] = d
	s.devices++
	s.devBytes += d.capacity
	s.log.Info("device opened", "device", id, "capacity", d.capacity, "workers", d.workers, "layout", d.layout.String(), "gate", d.gate.String())
	return &pb.OpenDeviceResponse{Device: id, CapacityBytes: d.capacity}, nil
}

// device returns the calling connection's device id.
func (c *controllerService) device(ctx context.Context, id uint64) (*device, error) {
	return owned(c.s, ctx, "device", id, devicesOf, nil)
}

func devicesOf(o *owner) map[uint64]*device { return o.devices }

func (c *controllerService) CloseDevice(ctx context.Context, req *pb.CloseDeviceRequest) (*pb.CloseDeviceResponse, error) {
	s := c.s
	_, err := owned(s, ctx, "device", req.GetDevice(), devicesOf, func(d *device) {
		s.devBytes -= d.capacity
		s.devices--
		s.log.Info("device closed", "device", req.GetDevice())
	})
	if err != nil {
		return nil, err
	}
	return &pb.CloseDeviceResponse{}, nil
}

func (c *controllerService) MapRegion(ctx context.Context, req *pb.MapRegionRequest) (*pb.MapRegionResponse, error) {
	d, err := c.device(ctx, req.GetDevice())
	if err != nil {
		return nil, err
	}
	if n := len(req.GetName()); n > MaxNameBytes {
		return nil, fieldStatus("name", fmt.Errorf("%d bytes, more than %d", n, MaxNameBytes))
	}
	r := cxl.Region{Name: req.GetName(), Base: req.GetBase(), Size: req.GetSize(), Workers: int(req.GetWorkers())}
	if r.Workers == 0 {
		r.Workers = d.workers
	}
	if req.GetMode() != pb.Mode_MODE_UNSPECIFIED {
		if r.Mode, err = wire.ParseMode("mode", req.GetMode()); err != nil {
			return nil, fieldStatus("mode", err)
		}
	}
	if r.Sum, err = wire.ParseFormat("format", req.GetFormat()); err != nil {
		return nil, fieldStatus("format", err)
	}
	layout, gate := d.layout, d.gate
	if r.Sum != lowbit.FP32 { // an integer-sum region: worker-major, no gate
		layout, gate = lowbit.WorkerMajor, lowbit.Gate{}
	}
	if r.Layout, err = wire.ParseLayout("layout", req.GetLayout(), layout); err != nil {
		return nil, fieldStatus("layout", err)
	}
	if r.Gate, err = wire.ParseGate("gate", req.GetGate(), gate); err != nil {
		return nil, fieldStatus("gate", err)
	}
	if req.GetElement0() > 1<<62 {
		return nil, fieldStatus("element0", fmt.Errorf("%d too large", req.GetElement0()))
	}
	r.Element0 = int(req.GetElement0())
	if n := req.GetElements(); n > 0 && r.Size == 0 {
		if n > 1<<50 {
			return nil, fieldStatus("elements", fmt.Errorf("%d too many", n))
		}
		r.Size = r.DataBytes(r.Lines(int(n)))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if n := len(d.dev.Regions()); n >= c.s.opts.MaxRegions {
		return nil, exhausted("device %d has %d regions mapped, the server's limit", req.GetDevice(), n)
	}
	id, err := d.dev.MapRegion(r)
	if err != nil {
		return nil, fieldStatus(regionField(r, err), err)
	}
	return &pb.MapRegionResponse{Region: wire.Region(id, r, true)}, nil
}

// regionField names the MapRegion field a cxl.Region error is about.
func regionField(r cxl.Region, err error) string {
	msg := err.Error()
	// Skip `region "NAME": `, so that a name cannot look like a field.
	if p := fmt.Sprintf("region %q: ", r.Name); strings.HasPrefix(msg, p) {
		msg = msg[len(p):]
	}
	for _, f := range []struct{ word, field string }{
		{"sum format", "format"}, {"is worker-major", "layout"}, {"no gate bits", "gate"},
		{"overlaps", "base"}, {"beyond capacity", "size"}, {"workers", "workers"}, {"layout", "layout"}, {"gate", "gate"},
		{"base", "base"}, {"size", "size"}, {"element0", "element0"}, {"mode", "mode"}, {"footprint", "size"},
	} {
		if strings.Contains(msg, f.word) {
			return f.field
		}
	}
	return "region"
}

func (c *controllerService) UnmapRegion(ctx context.Context, req *pb.UnmapRegionRequest) (*pb.UnmapRegionResponse, error) {
	d, err := c.device(ctx, req.GetDevice())
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.dev.Unmap(cxl.RegionID(req.GetRegion())); err != nil {
		return nil, notFoundf("region", err)
	}
	return &pb.UnmapRegionResponse{}, nil
}

func (c *controllerService) SetMode(ctx context.Context, req *pb.SetModeRequest) (*pb.SetModeResponse, error) {
	d, err := c.device(ctx, req.GetDevice())
	if err != nil {
		return nil, err
	}
	m, err := wire.ParseMode("mode", req.GetMode())
	if err != nil {
		return nil, fieldStatus("mode", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.logRoom(1, c.s.opts.MaxModeChanges); err != nil {
		return nil, err
	}
	if err := d.dev.SetMode(cxl.RegionID(req.GetRegion()), m, req.GetTime()); err != nil {
		return nil, notFoundf("region", err)
	}
	return &pb.SetModeResponse{AfterSeq: d.dev.Seq()}, nil
}

func (c *controllerService) GetMode(ctx context.Context, req *pb.GetModeRequest) (*pb.GetModeResponse, error) {
	d, err := c.device(ctx, req.GetDevice())
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	m, err := d.dev.Mode(cxl.RegionID(req.GetRegion()))
	if err != nil {
		return nil, notFoundf("region", err)
	}
	return &pb.GetModeResponse{Mode: wire.Mode(m)}, nil
}

func (c *controllerService) GetStats(ctx context.Context, req *pb.GetStatsRequest) (*pb.GetStatsResponse, error) {
	d, err := c.device(ctx, req.GetDevice())
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.dev.Stats()
	out := wire.Stats(st.Controller)
	out.Host = wire.Accounting(st.Host)
	for _, id := range d.dev.Regions() {
		r, err := d.dev.Region(id)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "region %d: %v", id, err)
		}
		out.Regions = append(out.Regions, wire.Region(id, r, true))
	}
	for _, ch := range d.dev.ModeChanges() {
		out.Log = append(out.Log, wire.ModeChange(ch))
	}
	return out, nil
}

// logRoom refuses n more mode writes when they could take the device's
// mode-change log past limit entries; d.mu must be held. Only a real
// change is logged, so the check counts every write as one.
func (d *device) logRoom(n, limit int) error {
	if have := d.dev.Stats().Controller.ModeChanges; have+uint64(n) > uint64(limit) {
		return exhausted("set_mode: %d mode writes could take the device's mode-change log (%d entries) past the server's limit of %d; close the device and open a new one", n, have, limit)
	}
	return nil
}

// errField names the address or data field a cxl transaction error is
// about.
func errField(err error) string {
	if errors.Is(err, cxl.ErrBadLength) {
		return "data"
	}
	return "addr"
}

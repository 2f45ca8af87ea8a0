package serve_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/serve"
	"github.com/neuronfabric/nfabric/serve/client"
)

// limitsOpts are TestLimitsRSS's small limits, so that each can be reached
// in seconds.
var limitsOpts = serve.Options{MaxMessageBytes: 1 << 20, MaxConnections: 4, MaxStreams: 2, MaxDevices: 8, MaxDeviceBytes: 32 << 20,
	MaxRegions: 64, MaxModeChanges: 4096, MaxSessions: 4, MaxSessionEvents: 1 << 20, MaxSharedBuffers: 4, MaxSharedBytes: 16 << 20}

// limitsServer serves limitsOpts on sock until killed (TestLimitsRSS's
// server process).
func limitsServer(sock string) {
	lis, err := serve.ListenUnix(sock)
	if err != nil {
		panic(err)
	}
	serve.New(limitsOpts).Serve(lis)
}

// rssKiB reads a line (VmRSS, VmHWM) of /proc/PID/status.
func rssKiB(t *testing.T, pid int, key string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}

// TestLimitsRSS fills every limit of a server process (its own process,
// so that the figure is the server's resident set: the Go heap alone
// would leave out the runtime's and the kernel's share, and a test's
// own allocations would blur an in-process figure) and checks that its
// peak RSS (VmHWM) stays under the bound the package documentation
// states for those limits (serve.MemoryBound).
func TestLimitsRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("fills every limit of a server process")
	}
	sock := filepath.Join(t.TempDir(), "nf.sock")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NFABRIC_SERVE_LIMITS_CHILD="+sock)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// Wait until the socket accepts, not until its file exists: the file
	// appears at bind, a moment before listen, and a dial in between is
	// refused (seen on a loaded machine).
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if conn, err := net.Dial("unix", sock); err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no socket")
		}
	}
	pid := cmd.Process.Pid
	o := limitsOpts
	c, err := client.Dial("unix://"+sock, client.Options{MaxMessageBytes: o.MaxMessageBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	base := rssKiB(t, pid, "VmHWM")
	last := base
	bound := serve.Bound(o)
	// After each phase the peak over idle must stay under the rows filled
	// so far plus the transport row: the garbage of the calls that filled
	// them is the calls' memory, which that row bounds (and the
	// collector's timing moves it from phase to phase).
	sum := bound.Transport
	phase := func(name string, row uint64) {
		sum += row
		hwm := rssKiB(t, pid, "VmHWM")
		t.Logf("%-44s peak RSS %6.1f MiB (+%5.1f; row %5.1f, bound so far %5.1f)", name, float64(hwm)/1024, float64(hwm-last)/1024, float64(row)/(1<<20), float64(sum)/(1<<20))
		if uint64(hwm-base)*1024 > sum {
			t.Errorf("%s: peak RSS %d KiB over idle, more than the documented %d KiB", name, hwm-base, sum/1024)
		}
		last = hwm
	}
	phase("idle", 0)

	// Transport clients: every other connection, with 64 KiB windows,
	// holds a device of one message's worth of lines for later.
	maxRead := o.MaxMessageBytes/(cxl.LineBytes+4) - 1
	others := o.MaxConnections - 1
	type other struct {
		conn *grpc.ClientConn
		dev  uint64
	}
	var held []other
	for range others {
		conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		r, err := pb.NewControllerClient(conn).OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: uint64(maxRead) * cxl.LineBytes})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, other{conn, r.GetDevice()})
	}

	// Devices: the rest of MaxDevices share the rest of MaxDeviceBytes,
	// with the largest lines_hint, every line below the regions written.
	nd := o.MaxDevices - others
	devCap := (o.MaxDeviceBytes - uint64(others*maxRead*cxl.LineBytes)) / uint64(nd) / 4096 * 4096
	regionsAt := devCap - uint64(o.MaxRegions)*1024
	var devs []*client.Device
	for range nd {
		d, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: devCap, LinesHint: 1 << 28})
		if err != nil {
			t.Fatal(err)
		}
		devs = append(devs, d)
	}
	if _, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 64}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("device past MaxDevices: %v", err)
	}
	buf := make([]byte, 256<<10)
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	for _, d := range devs {
		for a := uint64(0); a < regionsAt; a += uint64(len(buf)) {
			if err := d.Write(ctx, a, buf[:min(uint64(len(buf)), regionsAt-a)]); err != nil {
				t.Fatal(err)
			}
		}
	}
	phase("devices: capacities written, lines_hint 2^28", bound.Devices)

	// Regions with the longest names, and every device's mode log full.
	name := strings.Repeat("r", serve.MaxNameBytes)
	for _, d := range devs {
		var first uint32
		for i := range o.MaxRegions {
			r, err := d.Map(ctx, &pb.MapRegionRequest{Name: fmt.Sprintf("%04d", i) + name[4:], Base: regionsAt + uint64(i)*1024, Size: 1024})
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = r.GetId()
			}
		}
		if _, err := d.Transact(ctx, alternate(first, o.MaxModeChanges)...); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Transact(ctx, alternate(first, 1)...); status.Code(err) != codes.ResourceExhausted {
			t.Errorf("mode change past MaxModeChanges: %v", err)
		}
	}
	phase("regions (256-byte names) and mode logs full", bound.Tables)

	// Sessions: MaxSessions records filled to their limit with rejected
	// events of long group names.
	for range o.MaxSessions {
		sess, err := c.OpenSession(ctx, &pb.SessionConfig{Groups: []*pb.Group{{Name: "g"}}, Warmup: wrapperspb.Int64(0)})
		if err != nil {
			t.Fatal(err)
		}
		for step := int64(1); ; step++ {
			_, err := c.Control.Send(ctx, &pb.SendRequest{Session: sess.ID, Event: &pb.Event{Event: &pb.Event_NonFinite{NonFinite: &pb.NonFiniteEvent{Step: step, Group: name}}}})
			if status.Code(err) == codes.ResourceExhausted {
				break
			}
		}
	}
	phase("sessions: records full", bound.Sessions)

	// Shared buffers: MaxSharedBytes in MaxSharedBuffers, every page
	// touched by the server (shared reads into all of it) and a batch's
	// worth of shared writes snapshotted from each.
	per := o.MaxSharedBytes / uint64(o.MaxSharedBuffers)
	chunk := uint64(o.MaxMessageBytes) / 2
	for range o.MaxSharedBuffers {
		sh, err := c.OpenShared(ctx, per)
		if err != nil {
			t.Fatal(err)
		}
		defer sh.Close(ctx)
		for off := uint64(0); off < per; off += chunk {
			if _, err := devs[0].Transact(ctx, client.SharedReadOp(sh.ID, off, 0, int(chunk/cxl.LineBytes))); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := devs[0].Transact(ctx, client.SharedWriteOp(sh.ID, 0, 0, int(chunk/cxl.LineBytes))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Controller.OpenShared(ctx, &pb.OpenSharedRequest{Bytes: 64}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("shared buffer past MaxSharedBuffers: %v", err)
	}
	phase("shared buffers: every page touched", bound.Shared)

	// Transport: every stream of the other connections holds a reply of
	// a message's size that its client does not read.
	for _, h := range held {
		for range o.MaxStreams {
			st, err := h.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/nfabric.v1.Controller/Transact")
			if err != nil {
				t.Fatal(err)
			}
			if err := st.SendMsg(&pb.TransactRequest{Device: h.dev, Ops: []*pb.Op{client.ReadOp(0, maxRead)}}); err != nil {
				t.Fatal(err)
			}
			st.CloseSend()
		}
	}
	time.Sleep(500 * time.Millisecond)
	phase("transport: unread replies on every stream", 0)

	hwm := rssKiB(t, pid, "VmHWM")
	t.Logf("peak RSS %.1f MiB; idle %.1f MiB + documented bound %.1f MiB = %.1f MiB", float64(hwm)/1024, float64(base)/1024,
		float64(bound.Total())/(1<<20), float64(base)/1024+float64(bound.Total())/(1<<20))
	if uint64(hwm-base)*1024 > bound.Total() {
		t.Errorf("peak RSS %d KiB over idle %d KiB + bound %d KiB", hwm, base, bound.Total()/1024)
	}
}

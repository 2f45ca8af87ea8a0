package netsim

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// LinkSample is one link direction over one sampling interval, as the ns-3
// program reports it.
type LinkSample struct {
	// TNS is the end of the interval.
	TNS  int64  `json:"t_ns"`
	Link string `json:"link"`
	// RateBps is the simulated (scaled) link rate in bit/s.
	RateBps int64 `json:"rate_bps"`
	// BusyGradNS and BusyBgNS are the time spent transmitting gradient and
	// background packets in the interval.
	BusyGradNS int64 `json:"busy_grad_ns"`
	BusyBgNS   int64 `json:"busy_bg_ns"`
	// QueueBytes is the device queue at the end of the interval,
	// QueueMaxBytes its maximum during it; DropBytes were dropped in it.
	QueueBytes    int64 `json:"queue_bytes"`
	QueueMaxBytes int64 `json:"queue_max_bytes"`
	DropBytes     int64 `json:"drop_bytes"`
}

// BucketResult is one bucket All-Reduce as the ns-3 program reports it.
type BucketResult struct {
	Step, Bucket int
	// Bytes is the (scaled) buffer size; ReleaseNS when it was released and
	// FinishNS when the last worker finished (-1: not within the run).
	Bytes, ReleaseNS, FinishNS int64
	// SentBytes and RecvBytes are the application bytes all workers sent
	// and received for it.
	SentBytes, RecvBytes int64
}

// LinkTotal is one link direction over the whole run.
type LinkTotal struct {
	Link    string
	RateBps int64
	// Payload bytes are TCP/UDP payload, wire bytes whole packets with
	// their IP, transport and PPP headers; both count retransmissions.
	GradPayload, BgPayload, GradWire, BgWire, Drop int64
}

// HostSample is how many gradient bytes a host had delivered to its ring
// successor's application by the end of an interval.
type HostSample struct {
	TNS       int64  `json:"t_ns"`
	Host      string `json:"host"`
	Delivered int64  `json:"delivered_bytes"`
}

// Output headers of the ns-3 program.
const (
	HostsHeader   = "t_ns,host,delivered_bytes"
	LinksHeader   = "t_ns,link,rate_bps,busy_grad_ns,busy_bg_ns,queue_bytes,queue_max_bytes,drop_bytes"
	BucketsHeader = "step,bucket,bytes,release_ns,finish_ns,sent_bytes,recv_bytes"
	TotalsHeader  = "link,rate_bps,grad_payload_bytes,bg_payload_bytes,grad_wire_bytes,bg_wire_bytes,drop_bytes"
)

// readCSV reads a headed CSV of n fields per line, calling row for each
// data line; errors name the input and line.
func readCSV(r io.Reader, name, header string, row func(f []string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	n := len(strings.Split(header, ","))
	line, seen := 0, false
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		if !seen {
			if text != header {
				return fmt.Errorf("%s:%d: header %q, want %q", name, line, text, header)
			}
			seen = true
			continue
		}
		f := strings.Split(text, ",")
		if len(f) != n {
			return fmt.Errorf("%s:%d: %d fields, want %d", name, line, len(f), n)
		}
		if err := row(f); err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if !seen {
		return fmt.Errorf("%s: empty: no header line", name)
	}
	return nil
}

// ints parses f as integers >= min into dst, naming fields from header.
func ints(f []string, header string, min int64, dst ...*int64) error {
	names := strings.Split(header, ",")
	for i, d := range dst {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %q is not an integer", names[i], f[i])
		}
		if v < min {
			return fmt.Errorf("%s: %d is below %d", names[i], v, min)
		}
		*d = v
	}
	return nil
}

func linkName(s string) error {
	if s == "" || strings.ContainsAny(s, " \t\"") {
		return fmt.Errorf("link: bad name %q", s)
	}
	return nil
}

// ReadLinks reads the ns-3 program's per-interval link samples. Times must
// not go back; a link's busy time must fit its interval.
func ReadLinks(r io.Reader, name string) ([]LinkSample, error) {
	var out []LinkSample
	var prevT int64
	err := readCSV(r, name, LinksHeader, func(f []string) error {
		var s LinkSample
		if err := ints([]string{f[0]}, "t_ns", 1, &s.TNS); err != nil {
			return err
		}
		if err := linkName(f[1]); err != nil {
			return err
		}
		s.Link = f[1]
		if err := ints(f[2:], strings.Join(strings.Split(LinksHeader, ",")[2:], ","), 0,
			&s.RateBps, &s.BusyGradNS, &s.BusyBgNS, &s.QueueBytes, &s.QueueMaxBytes, &s.DropBytes); err != nil {
			return err
		}
		if s.RateBps == 0 {
			return fmt.Errorf("rate_bps: 0")
		}
		if s.TNS < prevT {
			return fmt.Errorf("t_ns %d goes back from %d", s.TNS, prevT)
		}
		if s.BusyGradNS > s.TNS || s.BusyBgNS > s.TNS || s.BusyGradNS+s.BusyBgNS > s.TNS {
			return fmt.Errorf("busy time %d+%d ns exceeds the %d ns elapsed", s.BusyGradNS, s.BusyBgNS, s.TNS)
		}
		prevT = s.TNS
		out = append(out, s)
		return nil
	})
	return out, err
}

// ReadBuckets reads the ns-3 program's per-bucket results.
func ReadBuckets(r io.Reader, name string) ([]BucketResult, error) {
	var out []BucketResult
	err := readCSV(r, name, BucketsHeader, func(f []string) error {
		var b BucketResult
		var step, bucket int64
		if err := ints(f[:4], BucketsHeader, 0, &step, &bucket, &b.Bytes, &b.ReleaseNS); err != nil {
			return err
		}
		if err := ints(f[4:5], "finish_ns", -1, &b.FinishNS); err != nil {
			return err
		}
		if err := ints(f[5:], "sent_bytes,recv_bytes", 0, &b.SentBytes, &b.RecvBytes); err != nil {
			return err
		}
		if step > 1<<30 || bucket > 1<<30 {
			return fmt.Errorf("step %d or bucket %d out of range", step, bucket)
		}
		if b.FinishNS >= 0 && b.FinishNS < b.ReleaseNS {
			return fmt.Errorf("finish_ns %d before release_ns %d", b.FinishNS, b.ReleaseNS)
		}
		b.Step, b.Bucket = int(step), int(bucket)
		out = append(out, b)
		return nil
	})
	return out, err
}

// ReadTotals reads the ns-3 program's per-link totals.
func ReadTotals(r io.Reader, name string) ([]LinkTotal, error) {
	var out []LinkTotal
	err := readCSV(r, name, TotalsHeader, func(f []string) error {
		var t LinkTotal
		if err := linkName(f[0]); err != nil {
			return err
		}
		t.Link = f[0]
		if err := ints(f[1:], strings.Join(strings.Split(TotalsHeader, ",")[1:], ","), 0,
			&t.RateBps, &t.GradPayload, &t.BgPayload, &t.GradWire, &t.BgWire, &t.Drop); err != nil {
			return err
		}
		if t.RateBps == 0 {
			return fmt.Errorf("rate_bps: 0")
		}
		out = append(out, t)
		return nil
	})
	return out, err
}

// ReadHosts reads the ns-3 program's per-interval host deliveries; times
// must not go back.
func ReadHosts(r io.Reader, name string) ([]HostSample, error) {
	var out []HostSample
	var prevT int64
	err := readCSV(r, name, HostsHeader, func(f []string) error {
		var h HostSample
		if err := ints([]string{f[0]}, "t_ns", 1, &h.TNS); err != nil {
			return err
		}
		if err := linkName(f[1]); err != nil {
			return fmt.Errorf("host: %w", err)
		}
		h.Host = f[1]
		if err := ints(f[2:], "delivered_bytes", 0, &h.Delivered); err != nil {
			return err
		}
		if h.TNS < prevT {
			return fmt.Errorf("t_ns %d goes back from %d", h.TNS, prevT)
		}
		prevT = h.TNS
		out = append(out, h)
		return nil
	})
	return out, err
}

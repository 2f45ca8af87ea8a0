package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	chakrav1 "github.com/neuronfabric/nfabric/api/chakra/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// bigTrace writes a legal JSON trace of n buckets (the hostile probe's
// 95 MB trace had 3.07M).
func bigTrace(t *testing.T, dir string, n int) string {
	t.Helper()
	p := filepath.Join(dir, "big.json")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(`{"buckets":[`)
	for i := range n {
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, `{"bytes":4096,"ready_us":%d}`, i/100)
	}
	w.WriteString("]}")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

// bigET writes a Chakra ET of n compute nodes, every other one depending
// on the one before, and an all-reduce every 100,000.
func bigET(t *testing.T, dir string, n int) string {
	t.Helper()
	p := filepath.Join(dir, "big.et")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	put := func(m proto.Message) {
		raw, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(protowire.AppendVarint(nil, uint64(len(raw))))
		w.Write(raw)
	}
	put(&chakrav1.GlobalMetadata{Version: "0.0.4"})
	for i := 1; i <= n; i++ {
		nd := &chakrav1.Node{Id: uint64(i), Type: chakrav1.NodeType_COMP_NODE, DurationMicros: 1}
		if i%2 == 0 {
			nd.DataDeps = []uint64{uint64(i - 1)}
		}
		if i%100_000 == 0 {
			nd.Type = chakrav1.NodeType_COMM_COLL_NODE
			nd.Attr = []*chakrav1.AttributeProto{{Name: "comm_type", Value: &chakrav1.AttributeProto_Int64Val{Int64Val: 0}},
				{Name: "comm_size", Value: &chakrav1.AttributeProto_Int64Val{Int64Val: 1 << 20}}}
		}
		put(nd)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

// maxRSS is a finished command's peak resident set in bytes.
func maxRSS(c *exec.Cmd) int64 {
	if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10
	}
	return 0
}

// limited runs bin under a 4 GiB address-space limit (ulimit -v), as the
// hostile probe did.
func limited(bin string, args ...string) *exec.Cmd {
	return exec.Command("bash", append([]string{"-c", `ulimit -v 4194304 && exec "$0" "$@"`, bin}, args...)...)
}

// checkOutDir: every file is whole (no temporary left), and the Markdown
// exists only with its figure and its JSON beside it.
func checkOutDir(t *testing.T, dir string) {
	t.Helper()
	es, _ := os.ReadDir(dir)
	names := map[string]bool{}
	for _, e := range es {
		names[e.Name()] = true
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	if !names["whatif.md"] {
		if names["whatif.json"] {
			t.Errorf("whatif.json without whatif.md: %v", names)
		}
		return
	}
	md, _ := os.ReadFile(filepath.Join(dir, "whatif.md"))
	for _, m := range regexp.MustCompile(`\]\(([^)]+\.svg)\)`).FindAllStringSubmatch(string(md), -1) {
		if !names[m[1]] {
			t.Errorf("whatif.md links %s, which is missing", m[1])
		}
	}
	if !names["whatif.json"] {
		t.Error("whatif.md without whatif.json")
	}
}

// TestWhatifBigTrace bounds and checks the hostile probe's cases (its
// memory and interrupt cases): a legal 3.07M-bucket trace (97 MB) with --out under a
// 4 GiB address limit completes, its per-collective rows bounded
// (whatif.MaxBucketRows) so whatif.json stays small; and SIGINT during
// such a run exits 130 within the signal handler's grace, leaving no
// partial output set (no temporary, no Markdown whose figure is missing).
func TestWhatifBigTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and prices a 97 MB trace (-short)")
	}
	bin := buildNfabric(t)
	dir := t.TempDir()
	trace := bigTrace(t, dir, 3_070_000)
	out := filepath.Join(dir, "out")
	run := limited(bin, "whatif", "--trace", trace, "--plan", "fp32", "--out", out)
	if b, err := run.CombinedOutput(); err != nil {
		t.Fatalf("under a 4 GiB address limit: %v\n%.2000s", err, b)
	}
	// Peak RSS depends on the machine's load (a starved collector lets the
	// heap grow): it is logged; the packages' allocation tests bound the
	// bytes a bucket and a node deterministically.
	t.Logf("3.07M buckets: peak RSS %d MiB", maxRSS(run)>>20)
	checkOutDir(t, out)
	et := bigET(t, dir, 4_000_000)
	run = limited(bin, "whatif", "--trace", et, "--plan", "fp32", "--out", filepath.Join(dir, "et"))
	if b, err := run.CombinedOutput(); err != nil {
		t.Fatalf("4M-node ET under a 4 GiB address limit: %v\n%.2000s", err, b)
	}
	t.Logf("4M-node ET: peak RSS %d MiB", maxRSS(run)>>20)
	if st, err := os.Stat(filepath.Join(out, "whatif.json")); err != nil || st.Size() > 64<<20 {
		t.Errorf("whatif.json: %v, %d bytes; want at most 64 MiB (rows are bounded)", err, st.Size())
	}
	for _, wait := range []time.Duration{300 * time.Millisecond, 3 * time.Second} {
		out := filepath.Join(dir, fmt.Sprint("int-", wait))
		cmd := exec.Command(bin, "whatif", "--trace", trace, "--plan", "fp32", "--out", out, "--html", filepath.Join(dir, "w.html"))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(wait)
		cmd.Process.Signal(syscall.SIGINT)
		at := time.Now()
		err := cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
			t.Logf("SIGINT after %v: the run had finished", wait)
		case !errors.As(err, &ee) || ee.ExitCode() != 130:
			t.Errorf("SIGINT after %v: %v; want exit status 130", wait, err)
		}
		if d := time.Since(at); d > 4*time.Second {
			t.Errorf("SIGINT after %v: took %v to stop", wait, d)
		}
		checkOutDir(t, out)
	}
}

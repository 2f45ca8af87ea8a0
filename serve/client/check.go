package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/neuronfabric/nfabric/serve"
	"github.com/neuronfabric/nfabric/usage"
)

// Self-test sizes: the Sec. 6 packet test's lines and seed, and how long
// the whole test may take.
const (
	selfTestLines   = 4096
	selfTestSeed    = 1
	selfTestTimeout = time.Minute
)

// CheckConfig is 'nfabric serve check': the server to dial and the TLS
// files to dial it with (all empty: no TLS).
type CheckConfig struct {
	serve.Endpoint
	// TLSCA is the CA that signed the server's certificate ("" with other
	// TLS files: the system's roots); TLSCert and TLSKey are the client
	// certificate of a server that requires one; TLSServerName is the
	// name to verify ("": the TCP host).
	TLSCA, TLSCert, TLSKey, TLSServerName string
}

// Options checks the endpoint (usage errors, see serve.Endpoint.Check),
// reads its token and TLS files and returns the dial options.
func (c CheckConfig) Options() (Options, error) {
	var o Options
	tok, err := c.Check()
	if err != nil {
		return o, err
	}
	o.Token = tok
	if c.TLSCA != "" || c.TLSCert != "" || c.TLSKey != "" {
		if o.TLS, err = TLSConfig(c.TLSCA, c.TLSCert, c.TLSKey, c.TLSServerName); err != nil {
			return o, usage.Errorf("--tls-*: %v", err)
		}
	}
	return o, nil
}

// Report is the outcome of a self-test against one server.
type Report struct {
	Target string  `json:"target"`
	Passed int     `json:"passed"`
	Failed int     `json:"failed"`
	Checks []Check `json:"checks"`
}

// newReport counts checks' verdicts.
func newReport(target string, checks []Check) *Report {
	r := &Report{Target: target, Checks: checks}
	for _, ch := range checks {
		if ch.Passed {
			r.Passed++
		} else {
			r.Failed++
		}
	}
	return r
}

// Text is a line per check (its verdict, name and detail) and the closing
// "N passed, N failed".
func (r *Report) Text() string {
	var b strings.Builder
	for _, ch := range r.Checks {
		verdict := "ok"
		if !ch.Passed {
			verdict = "FAILED"
		}
		fmt.Fprintf(&b, "%-6s %-36s %s\n", verdict, ch.Name, ch.Detail)
	}
	fmt.Fprintf(&b, "%d passed, %d failed\n", r.Passed, r.Failed)
	return b.String()
}

// WriteJSON writes r as one indented JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Err is an error naming the failed checks' count, nil when all passed.
func (r *Report) Err() error {
	if r.Failed > 0 {
		return fmt.Errorf("serve check: %d of %d checks failed", r.Failed, r.Passed+r.Failed)
	}
	return nil
}

// CheckServer dials the server c names and runs SelfTest against it.
func CheckServer(ctx context.Context, c CheckConfig) (*Report, error) {
	o, err := c.Options()
	if err != nil {
		return nil, err
	}
	return checkTarget(ctx, c.Target(), o)
}

// checkTarget runs SelfTest against target.
func checkTarget(ctx context.Context, target string, o Options) (*Report, error) {
	cl, err := Dial(target, o)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, selfTestTimeout)
	defer cancel()
	checks, err := SelfTest(ctx, cl, selfTestLines, selfTestSeed)
	if err != nil {
		return nil, err
	}
	return newReport(target, checks), nil
}

// SelfTestServer serves with o on a socket in a temporary directory, runs
// SelfTest against it and shuts it down; the socket left behind afterwards
// is an error. The report comes back whenever the test ran.
func SelfTestServer(ctx context.Context, o serve.Options) (*Report, error) {
	dir, err := os.MkdirTemp("", "nfabric-selftest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s.sock")
	lis, err := serve.ListenUnix(sock)
	if err != nil {
		return nil, err
	}
	srv := serve.New(o)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	rep, checkErr := checkTarget(ctx, "unix://"+sock, Options{})
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	if err := <-errc; err != nil {
		return rep, err
	}
	if _, err := os.Stat(sock); err == nil {
		return rep, fmt.Errorf("selftest: socket %s left behind", sock)
	}
	return rep, checkErr
}

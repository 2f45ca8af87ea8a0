package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/neuronfabric/nfabric/serve"
	"github.com/neuronfabric/nfabric/serve/client"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { subcommands = append(subcommands, newServeCmd) }

// serveAddr is where 'nfabric serve' listens and 'serve check' dials.
type serveAddr struct {
	socket, tcp, tokenFile string
}

func (a *serveAddr) add(f *pflag.FlagSet) {
	f.StringVar(&a.socket, "socket", serve.DefaultSocket(), "Unix socket path (the default transport; the default's directory is created 0700)")
	f.StringVar(&a.tcp, "tcp", "", "listen on (or dial) this TCP address instead, e.g. 127.0.0.1:7878; needs --token-file or TLS with client certificates")
	f.StringVar(&a.tokenFile, "token-file", "", "bearer token file (one line, 16+ characters) every call must carry")
}

const serveLong = `serve runs the gRPC services of api/nfabric/v1: Controller (devices with the
cxl controller model's semantics: regions, batched line transactions, mode
latches, statistics) and Control (control-plane sessions: events in, mode
writes out; dump and replay; Predictor forecasts), with gRPC health and
reflection so grpcurl works.

It listens on a Unix socket (mode 0600, removed on exit) unless --tcp is
given; TCP needs --token-file or --tls-cert/--tls-key/--tls-client-ca, and
refuses other clients with UNAUTHENTICATED. Devices and sessions belong to
the client connection and are freed when it closes. Every limit and the
memory it bounds are listed in 'go doc ./serve'.

SIGTERM or SIGINT drains: new calls are refused, calls in flight finish for
up to --drain-timeout (a positive duration), then the rest are cut off; the
log says "drained" or "drain timed out". Exit status: 0 when the drain
completed, 1 when it timed out; a second signal cuts the drain short (status
1).

--selftest starts a server on a temporary socket, runs 'serve check' against
it and exits: "N passed, N failed", status 1 on a failure.`
const serveExample = `  nfabric serve
  nfabric serve --socket /run/nfabric.sock --log-format json
  nfabric serve --tcp 127.0.0.1:7878 --token-file ~/.nfabric-token
  nfabric serve --selftest`

// serveFlags holds the flags of 'nfabric serve'.
type serveFlags struct {
	addr                        serveAddr
	certFile, keyFile, clientCA string
	logFormat                   string
	debug, selftest             bool
	drain                       time.Duration
	maxMsg, maxRegions, maxSess int
	maxEvents, maxConns         int
	maxStreams, maxDevices      int
	maxModeChanges              int
	maxDevBytes                 uint64
	maxShared                   int
	maxSharedBytes              uint64
}

func (s *serveFlags) add(f *pflag.FlagSet) {
	def := serve.DefaultOptions()
	s.addr.add(f)
	f.StringVar(&s.certFile, "tls-cert", "", "TLS certificate (PEM)")
	f.StringVar(&s.keyFile, "tls-key", "", "TLS private key (PEM)")
	f.StringVar(&s.clientCA, "tls-client-ca", "", "CA (PEM) that must have signed client certificates")
	f.StringVar(&s.logFormat, "log-format", "text", "structured log format on stderr: text or json")
	f.BoolVar(&s.debug, "debug", false, "log every call")
	f.BoolVar(&s.selftest, "selftest", false, "serve on a temporary socket, run the self-test against it, exit")
	f.DurationVar(&s.drain, "drain-timeout", 10*time.Second, "how long SIGTERM waits for calls in flight (positive; exit 1 when it runs out)")
	f.IntVar(&s.maxMsg, "max-message-bytes", def.MaxMessageBytes, "largest request or response")
	f.IntVar(&s.maxConns, "max-connections", def.MaxConnections, "client connections served at once")
	f.IntVar(&s.maxStreams, "max-streams", def.MaxStreams, "calls in flight per connection")
	f.IntVar(&s.maxDevices, "max-devices", def.MaxDevices, "open devices")
	f.IntVar(&s.maxRegions, "max-regions", def.MaxRegions, "mapped regions per device")
	f.IntVar(&s.maxModeChanges, "max-mode-changes", def.MaxModeChanges, "entries in a device's mode-change log")
	f.IntVar(&s.maxSess, "max-sessions", def.MaxSessions, "open control sessions")
	f.IntVar(&s.maxEvents, "max-session-events", def.MaxSessionEvents, "events one session records")
	f.Uint64Var(&s.maxDevBytes, "max-device-bytes", def.MaxDeviceBytes, "sum of the open devices' capacities")
	f.IntVar(&s.maxShared, "max-shared-buffers", def.MaxSharedBuffers, "open shared-memory buffers (Unix socket clients)")
	f.Uint64Var(&s.maxSharedBytes, "max-shared-bytes", def.MaxSharedBytes, "sum of the shared-memory buffers' sizes")
}

// options checks the limit, drain and log flags and returns the server's
// options, its logger writing to cmd's stderr.
func (s *serveFlags) options(cmd *cobra.Command) (serve.Options, error) {
	opts := serve.Options{MaxMessageBytes: s.maxMsg, MaxConnections: s.maxConns, MaxStreams: s.maxStreams, MaxDevices: s.maxDevices,
		MaxRegions: s.maxRegions, MaxModeChanges: s.maxModeChanges, MaxSessions: s.maxSess, MaxSessionEvents: s.maxEvents, MaxDeviceBytes: s.maxDevBytes,
		MaxSharedBuffers: s.maxShared, MaxSharedBytes: s.maxSharedBytes}
	if s.maxMsg < 1<<16 || s.maxRegions < 1 || s.maxSess < 1 || s.maxEvents < 1 || s.maxDevBytes < 64 || s.maxConns < 1 || s.maxStreams < 1 || s.maxDevices < 1 || s.maxModeChanges < 1 ||
		s.maxShared < 1 || s.maxSharedBytes < 64 {
		return opts, usagef("limits: --max-message-bytes >= 65536, --max-device-bytes and --max-shared-bytes >= 64, the other --max-* >= 1")
	}
	if err := opts.Validate(); err != nil {
		return opts, usagef("limits: %v", err)
	}
	if s.drain <= 0 {
		return opts, usagef("--drain-timeout %v: want a positive duration (how long SIGTERM waits for calls in flight)", s.drain)
	}
	lvl := slog.LevelInfo
	if s.debug {
		lvl = slog.LevelDebug
	}
	switch s.logFormat {
	case "text":
		opts.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: lvl}))
	case "json":
		opts.Logger = slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: lvl}))
	default:
		return opts, usagef("--log-format %q: want text or json", s.logFormat)
	}
	return opts, nil
}

func newServeCmd() *cobra.Command {
	var sf serveFlags
	cmd := &cobra.Command{
		Use:     "serve",
		Short:   "serve the controller model and the control plane over gRPC (nfabric.v1)",
		Long:    serveLong,
		Example: serveExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := sf.options(cmd)
			if err != nil {
				return err
			}
			if sf.selftest {
				return runSelftest(cmd, opts)
			}
			return runServe(&sf, opts)
		},
	}
	sf.add(cmd.Flags())
	cmd.AddCommand(newServeCheckCmd())
	return cmd
}

// runServe listens where sf says and serves until SIGTERM or SIGINT, then
// drains for up to --drain-timeout.
func runServe(sf *serveFlags, opts serve.Options) error {
	// serve owns its shutdown: take SIGTERM and SIGINT from the
	// command's generic handler (which exits 2 s after a signal,
	// long before a drain ends), before the socket exists, so that
	// a signal sent once it does always drains.
	signal.Reset(syscall.SIGTERM, syscall.SIGINT)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	lis, err := listen(&sf.addr, sf.certFile, sf.keyFile, sf.clientCA, &opts)
	if err != nil {
		return err
	}
	srv := serve.New(opts)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	var sig os.Signal
	select {
	case err := <-errc:
		return err
	case sig = <-sigs:
	}
	return drainServer(srv, opts.Logger, sigs, errc, sig, sf.drain)
}

// drainServer drains srv after the signal sig for up to drain (a second
// signal on sigs cuts it short) and waits for Serve's result on errc.
func drainServer(srv *serve.Server, log *slog.Logger, sigs <-chan os.Signal, errc <-chan error, sig os.Signal, drain time.Duration) error {
	log.Info("signal: draining", "signal", sig.String(), "timeout", drain.String())
	dctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	go func() {
		select {
		case s := <-sigs:
			log.Warn("second signal: stopping now", "signal", s.String())
			cancel()
		case <-dctx.Done():
		}
	}()
	drained := srv.Shutdown(dctx)
	if err := <-errc; err != nil {
		return err
	}
	if !drained {
		return fmt.Errorf("serve: drain timed out after %v (%v): calls in flight were cut off", drain, sig)
	}
	return nil
}

// listen opens the transport the flags ask for and sets opts' credentials.
func listen(a *serveAddr, certFile, keyFile, clientCA string, opts *serve.Options) (net.Listener, error) {
	tok, err := a.check()
	if err != nil {
		return nil, err
	}
	opts.Token = tok
	if certFile != "" || keyFile != "" || clientCA != "" {
		cfg, err := serve.TLSConfig(certFile, keyFile, clientCA)
		if err != nil {
			return nil, usagef("--tls-*: %v", err)
		}
		opts.TLS = cfg
	}
	if a.tcp == "" {
		return serve.ListenUnix(a.socket)
	}
	if opts.Token == "" && (opts.TLS == nil || clientCA == "") {
		return nil, usagef("--tcp %s: needs --token-file, or --tls-cert, --tls-key and --tls-client-ca (client certificates)", a.tcp)
	}
	lis, err := net.Listen("tcp", a.tcp)
	if err != nil {
		return nil, fmt.Errorf("--tcp %s: %w", a.tcp, err)
	}
	if ap, ok := lis.Addr().(*net.TCPAddr); ok && opts.TLS == nil && !ap.IP.IsLoopback() && opts.Logger != nil {
		opts.Logger.Warn("bearer token over plain TCP on a non-loopback address: anyone on the path can read it; add --tls-cert and --tls-key", "addr", ap.String())
	}
	return lis, nil
}

// runSelftest serves on a temporary socket and checks it.
func runSelftest(cmd *cobra.Command, opts serve.Options) error {
	dir, err := os.MkdirTemp("", "nfabric-selftest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s.sock")
	lis, err := serve.ListenUnix(sock)
	if err != nil {
		return err
	}
	srv := serve.New(opts)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	checkErr := runCheck(cmd, "unix://"+sock, client.Options{}, false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	if err := <-errc; err != nil {
		return err
	}
	if _, err := os.Stat(sock); err == nil {
		return fmt.Errorf("selftest: socket %s left behind", sock)
	}
	return checkErr
}

// checkReport is what 'serve check --json' prints.
type checkReport struct {
	Target string         `json:"target"`
	Passed int            `json:"passed"`
	Failed int            `json:"failed"`
	Checks []client.Check `json:"checks"`
}

// runCheck runs the self-test against target and prints its checks: a
// line each and "N passed, N failed", or with asJSON one checkReport.
func runCheck(cmd *cobra.Command, target string, o client.Options, asJSON bool) error {
	c, err := client.Dial(target, o)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
	defer cancel()
	checks, err := client.SelfTest(ctx, c, 4096, 1)
	if err != nil {
		return err
	}
	failed := 0
	for _, ch := range checks {
		if !ch.Passed {
			failed++
		}
	}
	if asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(checkReport{Target: target, Passed: len(checks) - failed, Failed: failed, Checks: checks}); err != nil {
			return err
		}
	} else {
		for _, ch := range checks {
			verdict := "ok"
			if !ch.Passed {
				verdict = "FAILED"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%-6s %-36s %s\n", verdict, ch.Name, ch.Detail)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%d passed, %d failed\n", len(checks)-failed, failed)
	}
	if failed > 0 {
		return fmt.Errorf("serve check: %d of %d checks failed", failed, len(checks))
	}
	return nil
}

func newServeCheckCmd() *cobra.Command {
	var (
		addr                      serveAddr
		asJSON                    bool
		caFile, certFile, keyFile string
		serverName                string
	)
	cmd := &cobra.Command{
		Use:   "check",
		Short: "run the self-test against a running 'nfabric serve'",
		Long: `check connects to a running server (the same --socket, --tcp and --token-file
flags) and runs the self-test: the Sec. 6 packet test read back under every
mode and judged by closed forms, a bad request that must name its field, and a
control session. It ends with "N passed, N failed" (with --json, one JSON
object: target, passed, failed and the checks) and exits 1 on a failure.

For a TLS server give --tls-ca (the CA that signed the server's certificate)
and, for one that requires client certificates, --tls-cert and --tls-key.
A Unix socket must be this user's (or root's), in a directory no other user
can write.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := client.Options{}
			tok, err := addr.check()
			if err != nil {
				return err
			}
			o.Token = tok
			if caFile != "" || certFile != "" || keyFile != "" {
				cfg, err := client.TLSConfig(caFile, certFile, keyFile, serverName)
				if err != nil {
					return usagef("--tls-*: %v", err)
				}
				o.TLS = cfg
			}
			target := "unix://" + addr.socket
			if addr.tcp != "" {
				target = addr.tcp
			}
			return runCheck(cmd, target, o, asJSON)
		},
	}
	addr.add(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as one JSON object")
	cmd.Flags().StringVar(&caFile, "tls-ca", "", "dial with TLS: the CA (PEM) that signed the server's certificate (empty: the system's roots)")
	cmd.Flags().StringVar(&certFile, "tls-cert", "", "client certificate (PEM), for a server that requires one")
	cmd.Flags().StringVar(&keyFile, "tls-key", "", "client private key (PEM)")
	cmd.Flags().StringVar(&serverName, "tls-server-name", "", "name to verify the server's certificate against (default: the --tcp host)")
	return cmd
}

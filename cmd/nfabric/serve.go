package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/neuronfabric/nfabric/serve"
	"github.com/neuronfabric/nfabric/serve/client"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { subcommands = append(subcommands, newServeCmd) }

// addEndpoint registers the flags of where 'nfabric serve' listens and
// 'serve check' dials.
func addEndpoint(f *pflag.FlagSet, e *serve.Endpoint) {
	f.StringVar(&e.Socket, "socket", serve.DefaultSocket(), "Unix socket path (the default transport; the default's directory is created 0700)")
	f.StringVar(&e.TCP, "tcp", "", "listen on (or dial) this TCP address instead, e.g. 127.0.0.1:7878; needs --token-file or TLS with client certificates")
	f.StringVar(&e.TokenFile, "token-file", "", "bearer token file (one line, 16+ characters) every call must carry")
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
	c        serve.Config
	selftest bool
}

func (s *serveFlags) add(f *pflag.FlagSet) {
	s.c = serve.DefaultConfig()
	l := &s.c.Limits
	addEndpoint(f, &s.c.Endpoint)
	f.StringVar(&s.c.TLSCert, "tls-cert", "", "TLS certificate (PEM)")
	f.StringVar(&s.c.TLSKey, "tls-key", "", "TLS private key (PEM)")
	f.StringVar(&s.c.TLSClientCA, "tls-client-ca", "", "CA (PEM) that must have signed client certificates")
	f.StringVar(&s.c.LogFormat, "log-format", s.c.LogFormat, "structured log format on stderr: text or json")
	f.BoolVar(&s.c.Debug, "debug", false, "log every call")
	f.BoolVar(&s.selftest, "selftest", false, "serve on a temporary socket, run the self-test against it, exit")
	f.DurationVar(&s.c.Drain, "drain-timeout", s.c.Drain, "how long SIGTERM waits for calls in flight (positive; exit 1 when it runs out)")
	f.IntVar(&l.MaxMessageBytes, "max-message-bytes", l.MaxMessageBytes, "largest request or response")
	f.IntVar(&l.MaxConnections, "max-connections", l.MaxConnections, "client connections served at once")
	f.IntVar(&l.MaxStreams, "max-streams", l.MaxStreams, "calls in flight per connection")
	f.IntVar(&l.MaxDevices, "max-devices", l.MaxDevices, "open devices")
	f.IntVar(&l.MaxRegions, "max-regions", l.MaxRegions, "mapped regions per device")
	f.IntVar(&l.MaxModeChanges, "max-mode-changes", l.MaxModeChanges, "entries in a device's mode-change log")
	f.IntVar(&l.MaxSessions, "max-sessions", l.MaxSessions, "open control sessions")
	f.IntVar(&l.MaxSessionEvents, "max-session-events", l.MaxSessionEvents, "events one session records")
	f.Uint64Var(&l.MaxDeviceBytes, "max-device-bytes", l.MaxDeviceBytes, "sum of the open devices' capacities")
	f.IntVar(&l.MaxSharedBuffers, "max-shared-buffers", l.MaxSharedBuffers, "open shared-memory buffers (Unix socket clients)")
	f.Uint64Var(&l.MaxSharedBytes, "max-shared-bytes", l.MaxSharedBytes, "sum of the shared-memory buffers' sizes")
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
			if sf.selftest {
				return runSelftest(cmd, sf.c)
			}
			return runServe(cmd, sf.c)
		},
	}
	sf.add(cmd.Flags())
	cmd.AddCommand(newServeCheckCmd())
	return cmd
}

// runServe serves until SIGTERM or SIGINT, then drains.
func runServe(cmd *cobra.Command, c serve.Config) error {
	// serve owns its shutdown: take SIGTERM and SIGINT from the
	// command's generic handler (which exits 2 s after a signal,
	// long before a drain ends), before the socket exists, so that
	// a signal sent once it does always drains.
	signal.Reset(syscall.SIGTERM, syscall.SIGINT)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	return serve.Run(c, cmd.ErrOrStderr(), sigs)
}

// runSelftest serves on a temporary socket, checks it and prints the
// checks.
func runSelftest(cmd *cobra.Command, c serve.Config) error {
	o, err := c.Options(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	rep, err := client.SelfTestServer(cmd.Context(), o)
	if rep != nil {
		fmt.Fprint(cmd.OutOrStdout(), rep.Text())
	}
	if err != nil {
		return err
	}
	return rep.Err()
}

const serveCheckLong = `check connects to a running server (the same --socket, --tcp and --token-file
flags) and runs the self-test: the Sec. 6 packet test read back under every
mode and judged by closed forms, a bad request that must name its field, and a
control session. It ends with "N passed, N failed" (with --json, one JSON
object: target, passed, failed and the checks) and exits 1 on a failure.

For a TLS server give --tls-ca (the CA that signed the server's certificate)
and, for one that requires client certificates, --tls-cert and --tls-key.
A Unix socket must be this user's (or root's), in a directory no other user
can write.`

func newServeCheckCmd() *cobra.Command {
	var (
		c      client.CheckConfig
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "check",
		Short: "run the self-test against a running 'nfabric serve'",
		Long:  serveCheckLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := client.CheckServer(cmd.Context(), c)
			if err != nil {
				return err
			}
			if asJSON {
				err = rep.WriteJSON(cmd.OutOrStdout())
			} else {
				fmt.Fprint(cmd.OutOrStdout(), rep.Text())
			}
			if err != nil {
				return err
			}
			return rep.Err()
		},
	}
	addCheckFlags(cmd.Flags(), &c)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as one JSON object")
	return cmd
}

// addCheckFlags registers where 'serve check' dials and its TLS files.
func addCheckFlags(f *pflag.FlagSet, c *client.CheckConfig) {
	addEndpoint(f, &c.Endpoint)
	f.StringVar(&c.TLSCA, "tls-ca", "", "dial with TLS: the CA (PEM) that signed the server's certificate (empty: the system's roots)")
	f.StringVar(&c.TLSCert, "tls-cert", "", "client certificate (PEM), for a server that requires one")
	f.StringVar(&c.TLSKey, "tls-key", "", "client private key (PEM)")
	f.StringVar(&c.TLSServerName, "tls-server-name", "", "name to verify the server's certificate against (default: the --tcp host)")
}

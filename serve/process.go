package serve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/neuronfabric/nfabric/usage"
)

// maxSocketPath is the longest Unix socket path Linux accepts (sun_path
// holds 108 bytes with the terminating NUL).
const maxSocketPath = 107

// Endpoint is where a server listens and a client dials: a Unix socket
// (the default transport), or a TCP address, with an optional bearer
// token file. Its fields are named after the flags of 'nfabric serve'
// and 'nfabric serve check', and so are its errors.
type Endpoint struct {
	Socket    string // Unix socket path, used when TCP is empty
	TCP       string // HOST:PORT instead of the socket
	TokenFile string // bearer token file ("" for none)
}

// Check refuses, as usage errors, an endpoint that cannot work (an empty
// or overlong socket path, a TCP address that is not HOST:PORT with a port
// in 0..65535) and reads the token file through ReadToken, which bounds it
// (a regular file, mode 0600, at most 4 KiB, one line of 16+ characters).
// It returns the token ("" without a token file); nothing listens or
// dials yet.
func (e Endpoint) Check() (token string, err error) {
	if e.TCP != "" {
		_, port, err := net.SplitHostPort(e.TCP)
		if err != nil {
			return "", usage.Errorf("--tcp %q: want HOST:PORT, e.g. 127.0.0.1:7878: %v", e.TCP, err)
		}
		if _, err := net.LookupPort("tcp", port); err != nil {
			return "", usage.Errorf("--tcp %q: %v", e.TCP, err)
		}
	} else if e.Socket == "" {
		return "", usage.Errorf("--socket is empty: give a path (or --tcp HOST:PORT)")
	} else if len(e.Socket) > maxSocketPath {
		return "", usage.Errorf("--socket %s: %d bytes, longer than the %d a Unix socket path may hold", e.Socket, len(e.Socket), maxSocketPath)
	}
	if e.TokenFile == "" {
		return "", nil
	}
	tok, err := ReadToken(e.TokenFile)
	if err != nil {
		return "", usage.Errorf("--token-file: %v", err)
	}
	return tok, nil
}

// Target is the address a client dials for e: "unix://PATH", or the TCP
// address.
func (e Endpoint) Target() string {
	if e.TCP != "" {
		return e.TCP
	}
	return "unix://" + e.Socket
}

// Config is a server process ('nfabric serve'): where it listens, its
// credentials, its limits, its log and how long a drain may take. Unlike
// Options, where zero means the default, every limit here is as given:
// start from DefaultConfig.
type Config struct {
	Endpoint
	// TLSCert and TLSKey serve TLS; with TLSClientCA, clients must present
	// a certificate it signed.
	TLSCert, TLSKey, TLSClientCA string
	LogFormat                    string // text or json
	Debug                        bool   // log every call
	// Drain is how long a stop waits for calls in flight.
	Drain time.Duration
	// Limits holds the limits; its Token, TLS and Logger are set from the
	// fields above.
	Limits Options
}

// DefaultConfig is the configuration of 'nfabric serve' without flags.
func DefaultConfig() Config {
	return Config{Endpoint: Endpoint{Socket: DefaultSocket()}, LogFormat: "text", Drain: 10 * time.Second, Limits: DefaultOptions()}
}

// Validate refuses, as usage errors, limits below their least useful
// value (a zero is refused, not read as the default), limits that do not
// fit together (Options.Validate), a drain that is not positive and an
// unknown log format. It checks neither the endpoint nor the
// credentials: Listen does.
func (c Config) Validate() error {
	l := c.Limits
	if l.MaxMessageBytes < 1<<16 || l.MaxRegions < 1 || l.MaxSessions < 1 || l.MaxSessionEvents < 1 || l.MaxDeviceBytes < 64 ||
		l.MaxConnections < 1 || l.MaxStreams < 1 || l.MaxDevices < 1 || l.MaxModeChanges < 1 || l.MaxSharedBuffers < 1 || l.MaxSharedBytes < 64 {
		return usage.Errorf("limits: --max-message-bytes >= 65536, --max-device-bytes and --max-shared-bytes >= 64, the other --max-* >= 1")
	}
	if err := l.Validate(); err != nil {
		return usage.Errorf("limits: %v", err)
	}
	if c.Drain <= 0 {
		return usage.Errorf("--drain-timeout %v: want a positive duration (how long SIGTERM waits for calls in flight)", c.Drain)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return usage.Errorf("--log-format %q: want text or json", c.LogFormat)
	}
	return nil
}

// Options validates c and returns the server's options: its limits, with
// a logger writing c's format to w.
func (c Config) Options(w io.Writer) (Options, error) {
	if err := c.Validate(); err != nil {
		return Options{}, err
	}
	o := c.Limits
	ho := &slog.HandlerOptions{Level: slog.LevelInfo}
	if c.Debug {
		ho.Level = slog.LevelDebug
	}
	if c.LogFormat == "json" {
		o.Logger = slog.New(slog.NewJSONHandler(w, ho))
	} else {
		o.Logger = slog.New(slog.NewTextHandler(w, ho))
	}
	return o, nil
}

// Listen opens the transport c names and sets o's token and TLS
// configuration. TCP needs a credential: a token file, or TLS with client
// certificates (TLSClientCA); a plain-text token on a non-loopback address
// is served, with a warning in the log.
func (c Config) Listen(o *Options) (net.Listener, error) {
	tok, err := c.Endpoint.Check()
	if err != nil {
		return nil, err
	}
	o.Token = tok
	if c.TLSCert != "" || c.TLSKey != "" || c.TLSClientCA != "" {
		if o.TLS, err = TLSConfig(c.TLSCert, c.TLSKey, c.TLSClientCA); err != nil {
			return nil, usage.Errorf("--tls-*: %v", err)
		}
	}
	if c.TCP == "" {
		return ListenUnix(c.Socket)
	}
	if o.Token == "" && (o.TLS == nil || c.TLSClientCA == "") {
		return nil, usage.Errorf("--tcp %s: needs --token-file, or --tls-cert, --tls-key and --tls-client-ca (client certificates)", c.TCP)
	}
	lis, err := net.Listen("tcp", c.TCP)
	if err != nil {
		return nil, fmt.Errorf("--tcp %s: %w", c.TCP, err)
	}
	if ap, ok := lis.Addr().(*net.TCPAddr); ok && o.TLS == nil && !ap.IP.IsLoopback() && o.Logger != nil {
		o.Logger.Warn("bearer token over plain TCP on a non-loopback address: anyone on the path can read it; add --tls-cert and --tls-key", "addr", ap.String())
	}
	return lis, nil
}

// Run is a server process: it listens where c says, logging to w, and
// serves until the first value on stop (a signal), then drains for up to
// c.Drain; a second value cuts the drain short. It returns an error when
// the drain timed out.
func Run(c Config, w io.Writer, stop <-chan os.Signal) error {
	o, err := c.Options(w)
	if err != nil {
		return err
	}
	lis, err := c.Listen(&o)
	if err != nil {
		return err
	}
	srv := New(o)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	var sig os.Signal
	select {
	case err := <-errc:
		return err
	case sig = <-stop:
	}
	return srv.drain(stop, errc, sig, c.Drain)
}

// drain shuts s down after the signal sig for up to d (a second signal on
// stop cuts it short) and waits for Serve's result on errc.
func (s *Server) drain(stop <-chan os.Signal, errc <-chan error, sig os.Signal, d time.Duration) error {
	s.log.Info("signal: draining", "signal", sig.String(), "timeout", d.String())
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	go func() {
		select {
		case again := <-stop:
			s.log.Warn("second signal: stopping now", "signal", again.String())
			cancel()
		case <-ctx.Done():
		}
	}()
	drained := s.Shutdown(ctx)
	if err := <-errc; err != nil {
		return err
	}
	if !drained {
		return fmt.Errorf("serve: drain timed out after %v (%v): calls in flight were cut off", d, sig)
	}
	return nil
}

package serve

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultSocket is the default socket path: nfabric.sock in a directory
// only the user may write, $XDG_RUNTIME_DIR/nfabric, or with
// XDG_RUNTIME_DIR unset nfabric-UID under os.TempDir() (never the
// world-writable directory itself, where another user could bind the
// path first). ListenUnix creates the directory.
func DefaultSocket() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "nfabric", "nfabric.sock")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("nfabric-%d", os.Geteuid()), "nfabric.sock")
}

// CheckSocket checks a Unix socket before a client trusts it: the file
// is a socket owned by this user (or root), and its directory is owned by
// this user (or root) and writable by no one else unless sticky (as /tmp
// is: there only a file's owner can replace it). A socket another user
// bound in a shared directory fails, so a client never talks to a server
// that user runs.
func CheckSocket(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("socket %s: %w", path, err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("socket %s: not a socket (%v)", path, fi.Mode().Type())
	}
	if err := checkOwner(path, fi); err != nil {
		return err
	}
	return checkDir(filepath.Dir(path), false)
}

// checkOwner refuses a file that neither this user nor root owns.
func checkOwner(path string, fi os.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Geteuid(); st.Uid != uint32(uid) && st.Uid != 0 {
		return fmt.Errorf("%s: owned by uid %d, not by this user (uid %d) or root: refusing it", path, st.Uid, uid)
	}
	return nil
}

// checkDir checks a socket's directory: owned by this user or root, and
// not writable by others unless sticky; private demands mode 0700 and
// this user as the owner (the default directory).
func checkDir(dir string, private bool) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("socket directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("socket directory %s: not a directory", dir)
	}
	if err := checkOwner("socket directory "+dir, fi); err != nil {
		return err
	}
	perm := fi.Mode().Perm()
	if private {
		st, _ := fi.Sys().(*syscall.Stat_t)
		if perm&0o077 != 0 || (st != nil && st.Uid != uint32(os.Geteuid())) {
			return fmt.Errorf("socket directory %s: mode %04o, want 0700 owned by this user (chmod 700 %s)", dir, perm, dir)
		}
		return nil
	}
	if perm&0o022 != 0 && fi.Mode()&os.ModeSticky == 0 {
		return fmt.Errorf("socket directory %s: writable by others (mode %04o) and not sticky: another user could replace the socket", dir, perm)
	}
	return nil
}

// ListenUnix listens on a Unix socket at path, created with mode 0600 (the
// umask is tightened while the socket is created, so it is never more
// open). The default path's directory (DefaultSocket) is created 0700
// when missing and must be 0700 and this user's; any other directory
// must pass CheckSocket's rule. A stale socket file nobody answers on is
// replaced; a live one is an error. Closing the listener removes the file.
func ListenUnix(path string) (*net.UnixListener, error) {
	dir, private := filepath.Dir(path), path == DefaultSocket()
	if private {
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("socket directory: %w", err)
		}
	}
	if err := checkDir(dir, private); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("socket %s: exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("socket %s: a server is already listening there", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("socket %s: remove stale socket: %w", path, err)
		}
	}
	old := syscall.Umask(0o177)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	l.SetUnlinkOnClose(true)
	return l, nil
}

// maxTokenBytes bounds a token file.
const maxTokenBytes = 4096

// ReadToken reads a bearer token file: one line, at least 16 characters,
// in a regular file only its owner may read or write (mode 0600 or
// 0400). A file others can read is refused, not warned about: whoever
// reads it may call the server as its user, and a warning in a log is
// easy to miss (ssh refuses keys so too).
func ReadToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("token file %s: not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("token file %s: mode %04o lets others read or change it (chmod 600 %s)", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenBytes+1))
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	if len(b) > maxTokenBytes {
		return "", fmt.Errorf("token file %s: more than %d bytes", path, maxTokenBytes)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 16 || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("token file %s: want one line of at least 16 characters without spaces", path)
	}
	return tok, nil
}

// TLSConfig returns a server TLS configuration from PEM files; with
// clientCA, clients must present a certificate it signed.
func TLSConfig(certFile, keyFile, clientCA string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("TLS needs both a certificate and a key file")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS key pair: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
	if clientCA != "" {
		pem, err := os.ReadFile(clientCA)
		if err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client CA %s: no PEM certificates", clientCA)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// limitListener returns a listener that holds at most n accepted
// connections open at once: Accept waits for one to close first, and the
// kernel's listen backlog holds the clients meanwhile.
func limitListener(l net.Listener, n int) net.Listener {
	return &limited{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type limited struct {
	net.Listener
	sem       chan struct{}
	closeOnce sync.Once
	done      chan struct{}
}

func (l *limited) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limited) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

package netsim

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Source is the ns-3 program (ns3/nfabric-telemetry.cc), embedded so the
// driver can build it wherever nfabric runs.
//
//go:embed ns3/nfabric-telemetry.cc
var Source []byte

// PkgConfigModules are the ns-3 pkg-config modules the program links.
var PkgConfigModules = []string{"ns3-core", "ns3-network", "ns3-internet", "ns3-point-to-point", "ns3-applications", "ns3-traffic-control"}

// BuildCommand is the documented one-line build of the program.
const BuildCommand = "g++ -O2 -std=c++17 -o nfabric-telemetry netsim/ns3/nfabric-telemetry.cc " +
	"$(pkg-config --cflags --libs ns3-core ns3-network ns3-internet ns3-point-to-point ns3-applications ns3-traffic-control)"

// ErrNoNS3 reports that ns-3 is not installed.
var ErrNoNS3 = errors.New("ns-3 is not installed (Debian: apt-get install libns3-dev libgsl-dev pkg-config g++)")

// EnvBinary names an environment variable that, when set, is the path of a
// built program to use instead of building one.
const EnvBinary = "NFABRIC_NS3"

// Available reports whether ns-3 can be used: a program named by
// NFABRIC_NS3, or pkg-config finding ns-3 and a C++ compiler on PATH.
func Available() error {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("netsim: %s=%s: %w", EnvBinary, p, err)
		}
		return nil
	}
	if _, err := exec.LookPath("pkg-config"); err != nil {
		return ErrNoNS3
	}
	if err := exec.Command("pkg-config", append([]string{"--exists"}, PkgConfigModules...)...).Run(); err != nil {
		return ErrNoNS3
	}
	if _, err := exec.LookPath("g++"); err != nil {
		return fmt.Errorf("netsim: ns-3 is installed but g++ is not (apt-get install g++)")
	}
	return nil
}

// Binary returns the path of the built program: NFABRIC_NS3 if set, else
// a build cached under the user cache directory, keyed by the source's
// hash, built on first use (about a minute). Concurrent callers are safe:
// each builds into a temporary file and renames it into place.
func Binary(ctx context.Context) (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("netsim: %s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	if err := Available(); err != nil {
		return "", err
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	sum := sha256.Sum256(Source)
	dir = filepath.Join(dir, "nfabric", "ns3")
	bin := filepath.Join(dir, "nfabric-telemetry-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("netsim: build: %w", err)
	}
	if err := build(ctx, dir, bin); err != nil {
		return "", err
	}
	return bin, nil
}

func build(ctx context.Context, dir, bin string) error {
	flags, err := exec.CommandContext(ctx, "pkg-config", append([]string{"--cflags", "--libs"}, PkgConfigModules...)...).Output()
	if err != nil {
		return fmt.Errorf("netsim: pkg-config: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return fmt.Errorf("netsim: build: %w", err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "nfabric-telemetry.cc")
	if err := os.WriteFile(src, Source, 0o644); err != nil {
		return fmt.Errorf("netsim: build: %w", err)
	}
	out := filepath.Join(tmp, "nfabric-telemetry")
	args := append([]string{"-O2", "-std=c++17", "-o", out, src}, strings.Fields(string(flags))...)
	cmd := exec.CommandContext(ctx, "g++", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("netsim: building the ns-3 program failed: %w\n%s", err, tail(stderr.String(), 2000))
	}
	if err := os.Rename(out, bin); err != nil {
		return fmt.Errorf("netsim: build: %w", err)
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

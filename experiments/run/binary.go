package run

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
)

// Binary identifies the program that ran a shard. A merge lays every
// block out with its own code from the units' results, so the shards and
// the merge must come from one program: a unit result from another
// version could decode into this version's types and be laid out wrongly
// without any error.
type Binary struct {
	// Version is the main module's version and VCS revision as the build
	// recorded them ("(devel) 2667404c... modified"); for people reading
	// the shard, Build and Executable decide.
	Version string `json:"version"`
	// Build is the SHA-256 of the build information (runtime/debug's
	// BuildInfo: toolchain, module and dependency versions and sums,
	// build settings, VCS revision and whether the tree was modified),
	// "none" when the program carries none.
	Build string `json:"build"`
	// Executable is the SHA-256 of the executable file, "unreadable: ..."
	// when it could not be read.
	Executable string `json:"executable"`
	// Clean is true when the build recorded a VCS revision of an
	// unmodified tree: the revision then pins the source, so a program
	// built from it elsewhere (another path, another node) with the same
	// toolchain, dependencies and settings is the same program even
	// where its executable's bytes differ.
	Clean bool `json:"clean"`
}

var (
	thisBinaryOnce sync.Once
	thisBinary     Binary
)

// ThisBinary returns the running program's identity, computed once (the
// executable is hashed on the first call).
func ThisBinary() Binary {
	thisBinaryOnce.Do(func() { thisBinary = identify() })
	return thisBinary
}

func identify() Binary {
	b := Binary{Version: "(no build information)", Build: "none"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		sum := sha256.Sum256([]byte(bi.String()))
		b.Build = hex.EncodeToString(sum[:])
		v, rev, modified := bi.Main.Version, "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if v == "" {
			v = "(devel)"
		}
		b.Version = v
		if rev != "" {
			b.Version += " " + rev
			if modified {
				b.Version += " modified"
			}
		}
		b.Clean = rev != "" && !modified
	}
	b.Executable = hashExecutable()
	return b
}

func hashExecutable() string {
	p, err := os.Executable()
	if err != nil {
		return "unreadable: " + err.Error()
	}
	f, err := os.Open(p)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unreadable: " + err.Error()
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sameProgram reports why a shard's program is not b ("" when it is): the
// build information must be the same, and so must the executable's bytes
// unless both builds are of the same clean VCS revision (Binary.Clean).
func (b Binary) sameProgram(other Binary) string {
	switch {
	case b.Build != other.Build:
		return fmt.Sprintf("build %s (%s), not %s (%s)", short(other.Build), other.Version, short(b.Build), b.Version)
	case b.Executable == other.Executable && b.Executable != "" && !isUnreadable(b.Executable):
		return ""
	case b.Clean && other.Clean:
		return ""
	}
	return fmt.Sprintf("executable %s, not %s, and the build is not of a clean VCS revision that would pin the source (%s)",
		short(other.Executable), short(b.Executable), b.Version)
}

func isUnreadable(s string) bool { return len(s) >= 11 && s[:11] == "unreadable:" }

// short abbreviates a hex digest for messages.
func short(h string) string {
	if len(h) > 12 && !isUnreadable(h) {
		return h[:12]
	}
	return h
}

package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// The output-path rules every command follows (docs/commands.md, output
// paths):
//
//   - A regular file (or a path that does not exist yet) is replaced
//     atomically: the content goes to a temporary file .NAME.tmp* in the same
//     directory, which is synced, given the target's permission bits (0644 for
//     a new file; a 0444 file stays 0444) and renamed over the target, and the
//     directory is synced. Readers see the old file or the whole new one.
//   - A symbolic link is followed deliberately: the file it points to is
//     written by these rules and the link itself is kept.
//   - A target that is neither a regular file nor a directory (a character
//     device such as /dev/null, a FIFO, a socket) and the descriptor paths
//     /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N are written
//     directly, never replaced, never truncated.
//   - A directory is an error naming it.
//
// Temporary files and scratch directories are registered while they exist,
// so that RemoveTemps can delete them when the process is interrupted.

// OutputKind is what an output path names, by the rules above.
type OutputKind int

const (
	// OutputNew is a path that does not exist yet: it is created atomically.
	OutputNew OutputKind = iota
	// OutputRegular is an existing regular file: it is replaced atomically.
	OutputRegular
	// OutputDirect is a device, FIFO, socket or descriptor path: written
	// in place.
	OutputDirect
)

// CheckOutput says how WriteAtomic would write path and returns the path it
// would write (symbolic links resolved), or an error naming path when it
// cannot be written: a directory, a missing or non-directory parent, or a
// parent directory without write permission. Commands call it before doing
// any work, so a bad output path fails at once.
func CheckOutput(path string) (string, OutputKind, error) {
	if path == "" {
		return "", 0, errors.New("output path is empty")
	}
	if isDescriptorPath(path) {
		return path, OutputDirect, nil
	}
	target := path
	if lst, err := os.Lstat(path); err == nil && lst.Mode()&fs.ModeSymlink != 0 {
		resolved, err := resolveLink(path)
		if err != nil {
			return "", 0, fmt.Errorf("output %s: %w", path, err)
		}
		target = resolved
	}
	st, err := os.Stat(target)
	switch {
	case err == nil && st.IsDir():
		return "", 0, fmt.Errorf("output %s is a directory", path)
	case err == nil && !st.Mode().IsRegular():
		return target, OutputDirect, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", 0, fmt.Errorf("output %s: %w", path, err)
	}
	kind := OutputRegular
	if err != nil {
		kind = OutputNew
	}
	dir := filepath.Dir(target)
	dst, err := os.Stat(dir)
	if err != nil {
		return "", 0, fmt.Errorf("output %s: directory %s: %w", path, dir, err)
	}
	if !dst.IsDir() {
		return "", 0, fmt.Errorf("output %s: %s is not a directory", path, dir)
	}
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return "", 0, fmt.Errorf("output %s: directory %s is not writable: %w", path, dir, err)
	}
	return target, kind, nil
}

// CheckOutputDir checks that dir can hold a command's output files: it is a
// directory, or does not exist yet and its nearest existing ancestor is a
// writable directory. Commands call it before doing any work.
func CheckOutputDir(dir string) error {
	if dir == "" {
		return errors.New("output directory is empty")
	}
	st, err := os.Stat(dir)
	if err == nil {
		if !st.IsDir() {
			return fmt.Errorf("output directory %s exists and is not a directory", dir)
		}
		if err := syscall.Access(dir, 2); err != nil {
			return fmt.Errorf("output directory %s is not writable: %w", dir, err)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	for p := filepath.Dir(filepath.Clean(dir)); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("output directory %s: %s is not a directory", dir, p)
			}
			if err := syscall.Access(p, 2); err != nil {
				return fmt.Errorf("output directory %s: cannot create it in %s: %w", dir, p, err)
			}
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("output directory %s: %w", dir, err)
		}
		if p == filepath.Dir(p) {
			return fmt.Errorf("output directory %s: no existing parent", dir)
		}
	}
}

// isDescriptorPath reports the paths that name an already-open descriptor
// of this process; they are written in place, whatever they point to.
func isDescriptorPath(path string) bool {
	p := filepath.Clean(path)
	return p == "/dev/stdout" || p == "/dev/stderr" ||
		strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/self/fd/")
}

// resolveLink follows the symbolic links at path (not of its directories)
// to the final name, which need not exist yet.
func resolveLink(path string) (string, error) {
	for range 40 {
		st, err := os.Lstat(path)
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		to, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(path), to)
		}
		path = to
	}
	return "", errors.New("too many levels of symbolic links")
}

// WriteFileAtomic writes data to path by the output-path rules above.
func WriteFileAtomic(path string, data []byte) error {
	return WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteAtomic calls fn to produce a file's content and writes it to path by
// the output-path rules above: for a regular target into a temporary file
// that is synced and renamed into place only if fn succeeds (a failure
// leaves the old file and no temporary file behind). Use it for large
// outputs produced by streaming.
func WriteAtomic(path string, fn func(w io.Writer) error) error {
	target, kind, err := CheckOutput(path)
	if err != nil {
		return err
	}
	if kind == OutputDirect {
		f, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		werr := fn(f)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("write %s: %w", path, werr)
		}
		return nil
	}
	perm := fs.FileMode(0o644)
	if kind == OutputRegular {
		if st, err := os.Stat(target); err == nil {
			perm = st.Mode().Perm()
		}
	}
	dir := filepath.Dir(target)
	f, err := os.CreateTemp(dir, "."+filepath.Base(target)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	release := RegisterTemp(tmp)
	defer release()
	werr := fn(f)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, perm)
	}
	if werr == nil {
		werr = os.Rename(tmp, target)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, werr)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: some file systems cannot sync a directory
		d.Close()
	}
	return nil
}

// temps is the registry of temporary files and scratch directories that
// exist now; RemoveTemps deletes them.
var temps = struct {
	sync.Mutex
	paths   map[string]int
	next    int
	removed bool
}{paths: map[string]int{}}

// RegisterTemp records a temporary file or scratch directory so that an
// interrupted process removes it (RemoveTemps); the returned function
// forgets it again (call it once the path is renamed or removed). A path
// registered after RemoveTemps ran is removed at once.
func RegisterTemp(path string) (release func()) {
	temps.Lock()
	defer temps.Unlock()
	if temps.removed {
		os.RemoveAll(path)
		return func() {}
	}
	temps.next++
	id := temps.next
	temps.paths[path] = id
	return func() {
		temps.Lock()
		defer temps.Unlock()
		if temps.paths[path] == id {
			delete(temps.paths, path)
		}
	}
}

// RemoveTemps deletes every registered temporary file and scratch
// directory and makes later registrations delete theirs at once; the
// interrupt handler calls it before the process exits.
func RemoveTemps() {
	temps.Lock()
	defer temps.Unlock()
	temps.removed = true
	for p := range temps.paths {
		os.RemoveAll(p)
		delete(temps.paths, p)
	}
}

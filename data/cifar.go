package data

import (
	"fmt"
	"os"
	"path/filepath"
)

// CIFAR binary record layouts (Krizhevsky 2009, "binary version"): each
// record is the label byte(s) followed by 3072 pixel bytes, the 1024-byte
// red, green and blue planes of a 32×32 image in row-major order (so the
// pixels are already CHW).
const (
	cifarPixels     = 3 * 32 * 32
	cifar10Record   = 1 + cifarPixels // label
	cifar100Record  = 2 + cifarPixels // coarse label, fine label
	cifar10Dirname  = "cifar-10-batches-bin"
	cifar100Dirname = "cifar-100-binary"
)

// readCIFAR appends the records of one CIFAR binary file to d. labelOff
// selects the label byte (0 for CIFAR-10, 1 = fine label for CIFAR-100).
func readCIFAR(path string, rec, labelOff, classes int, d *Dataset) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return notFound(err)
	}
	if len(raw) == 0 || len(raw)%rec != 0 {
		return fmt.Errorf("cifar %s: %d bytes is not a whole number of %d-byte records (truncated or corrupt)", path, len(raw), rec)
	}
	n := len(raw) / rec
	for i := 0; i < n; i++ {
		r := raw[i*rec : (i+1)*rec]
		l := int(r[labelOff])
		if l >= classes {
			return fmt.Errorf("cifar %s: record %d has label %d outside [0,%d) (corrupt file?)", path, i, l, classes)
		}
		d.Labels = append(d.Labels, l)
		d.Pixels = append(d.Pixels, r[rec-cifarPixels:]...)
	}
	return nil
}

// cifarDir returns dir, or dir/sub when the files are inside the
// directory the official archive unpacks to.
func cifarDir(dir, sub, probe string) string {
	if _, err := os.Stat(filepath.Join(dir, probe)); err != nil {
		if _, err := os.Stat(filepath.Join(dir, sub, probe)); err == nil {
			return filepath.Join(dir, sub)
		}
	}
	return dir
}

func cifarSets(name, desc string, classes int) *Sets {
	mk := func(split string) *Dataset {
		return &Dataset{Name: name + "/" + split, Description: desc, C: 3, H: 32, W: 32, Classes: classes}
	}
	return &Sets{Train: mk("train"), Test: mk("test")}
}

// LoadCIFAR10 loads CIFAR-10 from data_batch_1.bin … data_batch_5.bin and
// test_batch.bin in dir (or dir/cifar-10-batches-bin). The files are not
// shipped with nfabric: pass the directory that holds them.
func LoadCIFAR10(dir string) (*Sets, error) {
	if dir == "" {
		return nil, fmt.Errorf("data: cifar10: no directory given: download the CIFAR-10 binary version and pass its directory (--data-dir): %w", ErrNotFound)
	}
	dir = cifarDir(dir, cifar10Dirname, "test_batch.bin")
	s := cifarSets("cifar10", "CIFAR-10, 32x32 colour, 10 classes", 10)
	for i := 1; i <= 5; i++ {
		if err := readCIFAR(filepath.Join(dir, fmt.Sprintf("data_batch_%d.bin", i)), cifar10Record, 0, 10, s.Train); err != nil {
			return nil, fmt.Errorf("data: cifar10: %w", err)
		}
	}
	if err := readCIFAR(filepath.Join(dir, "test_batch.bin"), cifar10Record, 0, 10, s.Test); err != nil {
		return nil, fmt.Errorf("data: cifar10: %w", err)
	}
	setStats(s)
	return s, nil
}

// LoadCIFAR100 loads CIFAR-100 (fine labels, 100 classes) from train.bin
// and test.bin in dir (or dir/cifar-100-binary).
func LoadCIFAR100(dir string) (*Sets, error) {
	if dir == "" {
		return nil, fmt.Errorf("data: cifar100: no directory given: download the CIFAR-100 binary version and pass its directory (--data-dir), or use mnist-pairs100 as a stand-in: %w", ErrNotFound)
	}
	dir = cifarDir(dir, cifar100Dirname, "test.bin")
	s := cifarSets("cifar100", "CIFAR-100, 32x32 colour, 100 fine classes", 100)
	for _, f := range []struct {
		name string
		d    *Dataset
	}{{"train.bin", s.Train}, {"test.bin", s.Test}} {
		if err := readCIFAR(filepath.Join(dir, f.name), cifar100Record, 1, 100, f.d); err != nil {
			return nil, fmt.Errorf("data: cifar100: %w", err)
		}
	}
	setStats(s)
	return s, nil
}

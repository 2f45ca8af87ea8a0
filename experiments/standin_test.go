package experiments

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/report"
)

// hideFashionMNIST makes the process see no Fashion-MNIST, as on a machine
// without the Debian package (data.FashionMNISTEnv names an empty
// directory).
func hideFashionMNIST(t *testing.T) {
	t.Setenv(data.FashionMNISTEnv, filepath.Join(t.TempDir(), "no-fashion-mnist"))
}

// TestStandInWhenFashionMissing: without Fashion-MNIST a study asking for
// fashion-stack100 trains on its stand-in mnist-stack100 (MNIST ships in a
// Go module) and says so: the layout's status is partial with the install
// command and why the numbers differ, and every claim's tier names the
// stand-in; before, the boundary study failed and took the training
// block's claims with it. An installed but corrupt set is an error, never
// replaced.
func TestStandInWhenFashionMissing(t *testing.T) {
	if testing.Short() {
		t.Skip("loads MNIST and trains a small study")
	}
	hideFashionMNIST(t)
	o := BoundaryOptions(run.TierQuick, 1)
	o.TrainN, o.TestN, o.Epochs, o.Seeds, o.Batch, o.DiagSteps = 256, 128, 1, 2, 64, 2
	o.Model, o.Hidden = "mlp", []int{16}
	runs, err := RunStudy(context.Background(), StudyBoundary, o)
	if err != nil {
		t.Fatal(err)
	}
	d := runs[0].Data
	if d.StandInFor != "fashion-stack100" || !strings.HasPrefix(d.Name, "mnist-stack100 ") || d.Classes != 100 {
		t.Fatalf("data %+v; want the stand-in mnist-stack100 for fashion-stack100", d)
	}
	res, err := BoundaryLayout(o, runs)
	if err != nil {
		t.Fatal(err)
	}
	run.SetStatus(res, runs)
	if res.Status != report.StatusPartial || len(res.Skipped) != 1 ||
		!strings.Contains(res.Skipped[0], "apt-get install dataset-fashion-mnist") || !strings.Contains(res.Skipped[0], "stand-in mnist-stack100") ||
		!strings.Contains(res.Skipped[0], "numbers differ: pairs of digits are easier") {
		t.Errorf("status %q, skipped %q", res.Status, res.Skipped)
	}
	if len(res.Claims) != 5 {
		t.Fatalf("%d claims, want 5", len(res.Claims))
	}
	for _, c := range res.Claims {
		if c.Tier != "quick; on the stand-in mnist-stack100 (fashion-stack100 not installed)" {
			t.Errorf("%s: tier %q", c.Name, c.Tier)
		}
	}

	// Installed but corrupt: an error naming the file, not the stand-in.
	bad := t.TempDir()
	for _, f := range []string{"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"} {
		os.WriteFile(filepath.Join(bad, f), []byte("not an IDX file"), 0o644)
	}
	t.Setenv(data.FashionMNISTEnv, bad)
	_, _, err = TrainOptions{Data: "fashion-mnist", TrainN: 10, TestN: 10}.LoadSets()
	if err == nil || errors.Is(err, data.ErrNotFound) || !strings.Contains(err.Error(), "train-images-idx3-ubyte") {
		t.Errorf("corrupt Fashion-MNIST: %v; want an error naming the file", err)
	}
}

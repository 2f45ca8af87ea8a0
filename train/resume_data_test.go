package train

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/data"
)

// TestResumeRefusesOtherData: a checkpoint written on one data set (or one
// subset of it) is refused when the run resumes on another, so a table
// never mixes two data sets.
func TestResumeRefusesOtherData(t *testing.T) {
	base := synthSets(320, 4)
	renamed := synthSets(320, 4)
	renamed.Train.Name, renamed.Test.Name = "other/train", "other/test"
	fewer := synthSets(320, 4)
	fewer.Train = subset(fewer.Train, 288) // --train-n / --per-class keep fewer images
	fewerTest := synthSets(320, 4)
	fewerTest.Test = subset(fewerTest.Test, 40) // --test-n
	relabelled := synthSets(320, 4)
	relabelled.Train.Labels[0] = (relabelled.Train.Labels[0] + 1) % 3 // same size, other images
	for _, c := range []struct {
		name string
		sets *data.Sets
	}{{"data set", renamed}, {"train-n", fewer}, {"test-n", fewerTest}, {"per-class", relabelled}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.Epochs, cfg.DiagEpochs = 1, nil
			cfg.Checkpoint = filepath.Join(t.TempDir(), "c.ckpt")
			cfg.Resume = true
			if _, err := Run(context.Background(), cfg, base); err != nil {
				t.Fatal(err)
			}
			cfg.Epochs = 2
			_, err := Run(context.Background(), cfg, c.sets)
			if err == nil || !strings.Contains(err.Error(), "different") {
				t.Errorf("resume on another %s: err %v", c.name, err)
			}
		})
	}
}

func subset(d *data.Dataset, n int) *data.Dataset {
	c := *d
	c.Pixels = d.Pixels[:n*d.ImageSize()]
	c.Labels = d.Labels[:n]
	return &c
}

// TestCheckpointErrorNamesFileOnce: a checkpoint that cannot be written
// names its file once, not twice ("checkpoint X: checkpoint X:").
func TestCheckpointErrorNamesFileOnce(t *testing.T) {
	cfg := baseConfig()
	cfg.Epochs, cfg.DiagEpochs = 1, nil
	cfg.Checkpoint = filepath.Join(t.TempDir(), "no-such-dir", "c.ckpt")
	_, err := Run(context.Background(), cfg, synthSets(320, 5))
	if err == nil || strings.Count(err.Error(), cfg.Checkpoint) != 1 {
		t.Errorf("err %v; want the checkpoint named once", err)
	}
}

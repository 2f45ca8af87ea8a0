package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/experiments"
	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/spf13/pflag"
)

// TestUsageMistakesExit2: unknown subcommands and bad flag values are
// usage errors (exit 2) named on stderr, caught before any work; inputs
// that used to panic fail with an error.
func TestUsageMistakesExit2(t *testing.T) {
	dir := t.TempDir()
	links := filepath.Join(dir, "L.yaml")
	os.WriteFile(links, []byte("links:\n  - name: roce\n    bandwidth: 1e-300Gb/s\n    latency: 3us\n"), 0o644)
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"payload", "bogus"}, 2, `"bogus"`},
		{[]string{"train", "bogus"}, 2, `"bogus"`},
		{[]string{"hw", "bogus"}, 2, `"bogus"`},
		{[]string{"collective", "--net", "bogus"}, 2, "--net"},
		{[]string{"collective", "--window", "bogus"}, 2, "--window"},
		{[]string{"collective", "--model", "bogus"}, 2, "--model"},
		{[]string{"collective", "--workers", "1"}, 2, "--workers"},
		{[]string{"collective", "--workers", "8", "--per-node", "3"}, 2, "--per-node"},
		{[]string{"collective", "--exposure", "1.67", "--links", links, "--net", "roce"}, 1, "bandwidth"},
		{[]string{"verify", "--lines", "100000000000"}, 2, "--lines"},
		{[]string{"pilot", "--data", "bogus"}, 2, "--data"},
		{[]string{"pilot", "--batch", "0", "--seeds", "1", "--epochs", "1", "--quiet"}, 2, "--batch"},
		{[]string{"timing", "replay", "--validate-scale", "-1"}, 2, "--validate-scale"},
		{[]string{"train", "run", "--epochs", "-1"}, 2, "--epochs"},
		{[]string{"train", "sweep", "--rule", "bogus"}, 2, "--rule"},
		{[]string{"train", "sweep", "--rule", "fp32", "--rules", "g-binary"}, 2, "--rules"},
		{[]string{"train", "sweep", "--rule", "sign", "--rules", "fp32"}, 2, "--rules"},
		{[]string{"train", "sweep", "--rule", "fp32", "--lrs", "0.1,-1"}, 2, "--lrs"},
		{[]string{"train", "sweep", "--rule", "sign", "--lrs", "1e99"}, 2, "--lrs"},
		{[]string{"train", "run", "--schedule", "linear"}, 2, "--schedule"},
		{[]string{"reproduce", "--seeds", "-1"}, 2, "seeds -1"},
		{[]string{"reproduce", "--seeds", "100000", "--list"}, 2, "seeds 100000"},
		{[]string{"reproduce", "--jobs", "-1"}, 2, "jobs -1"},
		{[]string{"train", "validated", "--schedule", "cosine:warmup=3"}, 2, "warm-up"},
		{[]string{"train", "sweep", "--schedules", "cosine", "--rule", "sign"}, 2, "--rule"},
		{[]string{"train", "sweep", "--schedules", "cosine,step:at=1"}, 2, "milestones"},
		{[]string{"train", "sweep", "--schedules", "cosine", "--rules", "fp32,bogus"}, 2, "--rules"},
		{[]string{"timing", "table4", "--footprint-mib", "0"}, 2, "streams.footprint_mib"},
		{[]string{"timing", "table4", "--llc-mib", "4096"}, 2, "llc.size_mib"},
		{[]string{"timing", "run", "--streams", "4096", "--outstanding", "65536"}, 2, "streams.count x streams.outstanding"},
	}
	for _, c := range cases {
		code, _, stderr := nfabric(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) || strings.Contains(stderr, "panic") {
			t.Errorf("nfabric %s: exit %d, stderr %q; want %d naming %s", strings.Join(c.args, " "), code, stderr, c.code, c.msg)
		}
	}
	// A bare command group still prints its help and succeeds.
	if code, out, _ := nfabric(t, "payload"); code != 0 || !strings.Contains(out, "aggregate") {
		t.Errorf("nfabric payload: exit %d, out %q", code, out)
	}
}

// TestMessagesPointTheRightWay: the error names the flag the user got
// wrong, not the one a check happened to reach first.
func TestMessagesPointTheRightWay(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, "g.f32")
	os.WriteFile(g, make([]byte, 32), 0o644)
	for _, c := range []struct {
		args    []string
		want    string
		notWant string
	}{
		{[]string{"train", "run", "--epochs", "-1"}, "--epochs -1", "diag-epoch"},
		{[]string{"payload", "encode", "--workers", "-1", "-o", filepath.Join(dir, "x"), g}, "--workers -1", "not 0"},
		{[]string{"payload", "aggregate", "--workers", "-1", "-o", filepath.Join(dir, "x"), g}, "--workers -1", "holds"},
		{[]string{"verify", "--lines", "0"}, "--lines 0", "verify: verify:"},
	} {
		_, _, stderr := nfabric(t, c.args...)
		if !strings.Contains(stderr, c.want) || strings.Contains(stderr, c.notWant) {
			t.Errorf("nfabric %s: stderr %q; want %q, not %q", strings.Join(c.args, " "), stderr, c.want, c.notWant)
		}
	}
}

// TestAcceptedWithoutAWord: flags that used to be ignored or to give an
// all-zero result are usage errors naming them.
func TestAcceptedWithoutAWord(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, "g.f32")
	nfp := filepath.Join(dir, "g.nfp")
	if code, _, e := nfabric(t, "payload", "random", "--workers", "4", "--elements", "64", "-o", g); code != 0 {
		t.Fatal(e)
	}
	if code, _, e := nfabric(t, "payload", "encode", "--workers", "4", "-o", nfp, g); code != 0 {
		t.Fatal(e)
	}
	x := filepath.Join(dir, "x")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"payload", "encode", "--workers", "4", "--format", "g-ternary", "--gate", "margin:5", "-o", x, g}, "margin:5"},
		{[]string{"payload", "aggregate", "--mode", "ternary", "--gate", "margin:5", "-o", x, nfp}, "margin:5"},
		{[]string{"payload", "aggregate", "--format", "g-ternary", "-o", x, nfp}, "--format"},
		{[]string{"payload", "encode", "--workers", "4", "--tau", "0.5", "-o", x, g}, "--tau"},
		{[]string{"pilot", "--fault-epochs", "3-4", "--epochs", "1"}, "--fault-epochs"},
		{[]string{"train", "run", "--seeds", "3"}, "--seeds"},
		{[]string{"train", "run", "--extensions"}, "--extensions"},
	} {
		code, _, stderr := nfabric(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.msg) {
			t.Errorf("nfabric %s: exit %d, stderr %q; want 2 naming %s", strings.Join(c.args, " "), code, stderr, c.msg)
		}
	}
	// The margin threshold W itself is valid.
	if code, _, e := nfabric(t, "payload", "aggregate", "--mode", "ternary", "--gate", "margin:4", "-o", x, nfp); code != 0 {
		t.Errorf("margin:4 with W = 4: %s", e)
	}
}

// TestPilotSizesReachLiveLoop: --model, --hidden, --epochs, --train-n and
// --test-n size the live admission loop as well as the Fig. 6 runs (they
// used to be ignored there without a word), and --live-data picks its
// data set.
func TestPilotSizesReachLiveLoop(t *testing.T) {
	var (
		of optFlags
		pf pilotFlags
	)
	def := experiments.PilotDefaults(run.TierQuick, 1)
	fs := pflag.NewFlagSet("pilot", pflag.ContinueOnError)
	of.add(fs, def.Train)
	pf.add(fs, def)
	if err := fs.Parse([]string{"--hidden", "32,16", "--epochs", "2", "--train-n", "500", "--test-n", "300", "--fault-epochs", "1-2"}); err != nil {
		t.Fatal(err)
	}
	o, err := pilotOptions(fs, &of, &pf)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []experiments.TrainOptions{o.Train, o.Hard} {
		if !slices.Equal(w.Hidden, []int{32, 16}) || w.Epochs != 2 || w.TrainN != 500 || w.TestN != 300 {
			t.Errorf("%s: hidden %v epochs %d train-n %d test-n %d; want [32 16] 2 500 300", w.Data, w.Hidden, w.Epochs, w.TrainN, w.TestN)
		}
	}
	if o.Hard.Data != def.Hard.Data {
		t.Errorf("live loop data %q; want %q kept", o.Hard.Data, def.Hard.Data)
	}
	// The defaults are the ResNet stand-ins (the live loop's is the
	// 100-class stand-in the pilots were calibrated with,
	// resnet-standin-small); --model and --live-data bring back the MLP
	// pilots of earlier rounds.
	if def.Train.Model != "resnet-standin" || def.Hard.Model != "resnet-standin-small" || def.Hard.Data != "mnist-stack100" {
		t.Errorf("defaults: %s on %s, live loop %s on %s; want the stand-ins", def.Train.Model, def.Train.Data, def.Hard.Model, def.Hard.Data)
	}
	of, pf = optFlags{}, pilotFlags{}
	fs = pflag.NewFlagSet("pilot", pflag.ContinueOnError)
	of.add(fs, def.Train)
	pf.add(fs, def)
	if err := fs.Parse([]string{"--model", "mlp", "--data", "mnist", "--live-data", "mnist-pairs100"}); err != nil {
		t.Fatal(err)
	}
	if o, err = pilotOptions(fs, &of, &pf); err != nil {
		t.Fatal(err)
	}
	if o.Train.Model != "mlp" || o.Train.Data != "mnist" || o.Hard.Model != "mlp" || o.Hard.Data != "mnist-pairs100" {
		t.Errorf("--model mlp --data mnist --live-data mnist-pairs100: %s on %s, live loop %s on %s", o.Train.Model, o.Train.Data, o.Hard.Model, o.Hard.Data)
	}
}

// TestTable4LabelFollowsMeasurement: a load that cannot congest the
// reduced-share link (one outstanding line per stream) is not reported as
// "scale-out, congested": the label follows what was measured.
func TestTable4LabelFollowsMeasurement(t *testing.T) {
	code, out, e := nfabric(t, "timing", "table4", "--outstanding", "1", "--footprint-mib", "0.0625", "--passes", "1")
	if code != 0 {
		t.Fatal(e)
	}
	if strings.Contains(out, "scale-out, congested") || !strings.Contains(out, "did not congest") {
		t.Errorf("table4 --outstanding 1 still reads as congested:\n%s", out)
	}
}

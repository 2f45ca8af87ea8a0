package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// writeCIFAR writes n synthetic CIFAR records (labelBytes label bytes,
// then 3×32×32 pixels) with labels i mod classes into dir/name.
func writeCIFAR(t *testing.T, dir, name string, n, labelBytes, classes int) {
	t.Helper()
	var b []byte
	for i := range n {
		for range labelBytes {
			b = append(b, byte(i%classes))
		}
		for j := range 3 * 32 * 32 {
			b = append(b, byte(i*7+j*13))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTrainStudiesOnCIFAR runs the paper's own configuration as a user
// with the data would (train boundary --data cifar100 --data-dir DIR
// --model resnet18, and validated on cifar10) on synthetic CIFAR binary
// files of a few images, and checks that every run trained ResNet-18 on
// the right number of classes.
func TestTrainStudiesOnCIFAR(t *testing.T) {
	if testing.Short() {
		t.Skip("trains ResNet-18")
	}
	dir := t.TempDir()
	c100, c10 := filepath.Join(dir, "cifar-100-binary"), filepath.Join(dir, "cifar-10-batches-bin")
	for _, d := range []string{c100, c10} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeCIFAR(t, c100, "train.bin", 16, 2, 100)
	writeCIFAR(t, c100, "test.bin", 4, 2, 100)
	for i := 1; i <= 5; i++ {
		writeCIFAR(t, c10, "data_batch_"+string(rune('0'+i))+".bin", 4, 1, 10)
	}
	writeCIFAR(t, c10, "test_batch.bin", 4, 1, 10)
	small := []string{"--model", "resnet18", "--data-dir", dir, "--train-n", "16", "--test-n", "4", "--batch", "8", "--workers", "2", "--epochs", "1", "--seeds", "1", "--diag-steps", "1", "-q", "--json"}
	for _, tt := range []struct {
		study, data string
		classes     int
	}{{"boundary", "cifar100", 100}, {"validated", "cifar10", 10}} {
		code, out, stderr := nfabric(t, append([]string{"train", tt.study, "--data", tt.data}, small...)...)
		if code != 0 {
			t.Fatalf("train %s --data %s: exit %d: %s", tt.study, tt.data, code, stderr)
		}
		var res struct {
			Data []struct {
				Data   cifarDataInfo `json:"data"`
				Result struct {
					Model  string `json:"model"`
					Params int    `json:"params"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("train %s: %v", tt.study, err)
		}
		if len(res.Data) == 0 {
			t.Fatalf("train %s: no runs", tt.study)
		}
		for _, r := range res.Data {
			if r.Result.Model != "resnet18" || r.Data.Classes != tt.classes || r.Data.Train != 16 || r.Result.Params < 11_000_000 {
				t.Errorf("train %s: run %+v", tt.study, r)
			}
		}
	}
}

// cifarDataInfo is the part of experiments.DataInfo the test reads.
type cifarDataInfo struct {
	Classes int `json:"classes"`
	Train   int `json:"train_images"`
}

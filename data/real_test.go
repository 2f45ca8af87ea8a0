package data

import (
	"errors"
	"testing"
)

func TestRealSets(t *testing.T) {
	tests := []struct {
		name           string
		train, test    int
		h, w, classes  int
		skipIfNotFound bool
	}{
		{"mnist", 60000, 10000, 28, 28, 10, false},
		{"fashion-mnist", 60000, 10000, 28, 28, 10, true},
		{"mnist-pairs100", 60000, 10000, 28, 56, 100, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Load(tt.name, "")
			if errors.Is(err, ErrNotFound) && tt.skipIfNotFound {
				t.Skipf("%s not installed: %v", tt.name, err)
			}
			if err != nil {
				t.Fatalf("Load(%q) = %v (MNIST ships in a Go module and must be locatable)", tt.name, err)
			}
			d := s.Train
			if d.Len() != tt.train || s.Test.Len() != tt.test || d.H != tt.h || d.W != tt.w || d.Classes != tt.classes {
				t.Errorf("%s: %d/%d images of %dx%d, %d classes", tt.name, d.Len(), s.Test.Len(), d.H, d.W, d.Classes)
			}
			if d.Mean[0] < 0.05 || d.Mean[0] > 0.5 || d.Std[0] < 0.1 {
				t.Errorf("%s: mean %v std %v", tt.name, d.Mean, d.Std)
			}
		})
	}
}

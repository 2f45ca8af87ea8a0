package workload

import (
	"strings"
	"testing"
)

// TestProfileYAMLRejectsFloatsInIntegers: yaml.v3 truncates 2.9 to 2 in an
// integer field; a profile must reject it, naming the field.
func TestProfileYAMLRejectsFloatsInIntegers(t *testing.T) {
	for _, c := range []struct{ doc, field string }{
		{"name: m\nseq_len: 2.7\nlayers: [{name: a, tensors: [{name: w, shape: [4]}]}]\n", "seq_len"},
		{"name: m\nbatch: 1.5\nlayers: [{name: a, tensors: [{name: w, shape: [4]}]}]\n", "batch"},
		{"name: m\nlayers: [{name: a, tensors: [{name: w, shape: [2.5, 10]}]}]\n", "shape"},
		{"name: m\nlayers: [{name: a, tensors: [{name: w, shape: [1e3]}]}]\n", "shape"},
	} {
		_, err := ParseProfileYAML([]byte(c.doc), "p.yaml")
		if err == nil || !strings.Contains(err.Error(), c.field) || !strings.Contains(err.Error(), "integer") {
			t.Errorf("%q: err %v; want an integer error naming %s", c.doc, err, c.field)
		}
	}
	// Whole numbers still parse.
	p, err := ParseProfileYAML([]byte("name: m\nseq_len: 3\nlayers: [{name: a, tensors: [{name: w, shape: [2, 10]}]}]\n"), "p.yaml")
	if err != nil || p.SeqLen != 3 || p.Layers[0].Params() != 20 {
		t.Fatalf("whole numbers: %v %+v", err, p)
	}
}

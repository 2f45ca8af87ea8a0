package strictyaml

import (
	"strings"
	"testing"
)

type inner struct {
	Shape []int64 `yaml:"shape"`
}

type doc struct {
	N      int              `yaml:"n"`
	P      *int             `yaml:"p"`
	F      float64          `yaml:"f"`
	Items  []inner          `yaml:"items"`
	M      map[string]uint8 `yaml:"m"`
	Inline struct {
		K int `yaml:"k"`
	} `yaml:",inline"`
	Lower int
}

func TestCheckInts(t *testing.T) {
	for _, c := range []struct {
		src, want string // want: "" for no error, else the path named
	}{
		{"n: 2\np: 3\nf: 2.5\nitems: [{shape: [1, 2]}]\nm: {a: 1}\nk: 4\nlower: 5\n", ""},
		{"n: 2.9\n", "n"},
		{"p: 8.5\n", "p"},
		{"items: [{shape: [1]}, {shape: [2.5, 10]}]\n", "items[1].shape[0]"},
		{"m: {a: 1, b: 0.5}\n", "m.b"},
		{"k: 1.5\n", "k"},
		{"lower: 1e3\n", "lower"},
		{"a: &x 2.5\nn: *x\n", "n"},
		{"n: [unparsed\n", ""}, // left to the decoder
	} {
		err := CheckIntsIn([]byte(c.src), &doc{})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: unexpected %v", c.src, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want+": must be an integer")):
			t.Errorf("%q: err %v, want one naming %s", c.src, err, c.want)
		}
	}
}

func FuzzCheckInts(f *testing.F) {
	f.Add([]byte("n: 2.9\nitems: [{shape: [1, 2.5]}]\n"))
	f.Add([]byte("a: &x [1, 2]\nitems: *x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = CheckIntsIn(data, &doc{})
	})
}

package control

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
)

// cosOf builds a diagnostics vector by hand: G-Binary, G-Ternary, INT8
// and BFP8 cosines.
func cosOf(bin, ter, i8, bfp float64) [lowbit.NumFormats]float64 {
	var c [lowbit.NumFormats]float64
	c[lowbit.FP32], c[lowbit.Binary], c[lowbit.Ternary], c[lowbit.Int8], c[lowbit.BFP8] = 1, bin, ter, i8, bfp
	return c
}

// TestRungsAdmitHand: hand-made diagnostics and the rung that must be
// chosen, worked out from the rule "lowest traffic that passes": traffic
// order G-Binary 1 < G-Ternary 1.58 < INT8 8 < BFP8 8.125 < FP32 32.
func TestRungsAdmitHand(t *testing.T) {
	def := ExtendedLadder() // 0.75, 0.5, 0.95, 0.95
	reversed := Ladder{{lowbit.BFP8, 0.95}, {lowbit.Int8, 0.95}, {lowbit.Ternary, 0.5}, {lowbit.Binary, 0.75}}
	for _, tc := range []struct {
		name  string
		rungs Ladder
		cos   [lowbit.NumFormats]float64
		want  lowbit.Format
	}{
		{"aligned backbone", def, cosOf(0.80, 0.60, 0.999, 0.999), lowbit.Binary},
		{"binary on the threshold", def, cosOf(0.75, 0.60, 0.999, 0.999), lowbit.Binary},
		{"backbone below the binary bar", def, cosOf(0.70, 0.55, 0.999, 0.999), lowbit.Ternary},
		{"paper's CIFAR-100 head", def, cosOf(0.17, 0.14, 0.990, 0.995), lowbit.Int8},
		{"heavy-tailed head: int8 fails, bfp8 passes", def, cosOf(0.10, 0.10, 0.90, 0.97), lowbit.BFP8},
		{"nothing passes", def, cosOf(0.10, 0.10, 0.50, 0.60), lowbit.FP32},
		{"NaN int8 diagnostics pass nothing", def, cosOf(0.10, 0.10, math.NaN(), 0.97), lowbit.BFP8},
		{"listed out of order: traffic decides", reversed, cosOf(0.80, 0.60, 0.999, 0.999), lowbit.Binary},
		{"listed out of order, int8 before bfp8", reversed, cosOf(0.10, 0.10, 0.99, 0.99), lowbit.Int8},
		{"only 8-bit rungs", Ladder{{lowbit.Int8, 0.95}, {lowbit.BFP8, 0.95}}, cosOf(0.99, 0.99, 0.96, 0.99), lowbit.Int8},
		{"only bfp8", Ladder{{lowbit.BFP8, 0.99}}, cosOf(0.99, 0.99, 0.999, 0.98), lowbit.FP32},
		{"no rungs", Ladder{}, cosOf(1, 1, 1, 1), lowbit.FP32},
	} {
		if err := tc.rungs.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, why := tc.rungs.Admit(tc.cos)
		if got != tc.want {
			t.Errorf("%s: admitted %v (%s); want %v", tc.name, got, why, tc.want)
		}
	}
}

// TestLadderSentencesUnchanged pins the paper ladder's sentences, written
// out by hand as they were before the ladder took other formats: the
// control block prints them.
func TestLadderSentencesUnchanged(t *testing.T) {
	l := DefaultLadder()
	nan := math.NaN()
	for _, tc := range []struct {
		bin, ter float64
		want     lowbit.Format
		why      string
	}{
		{0.8, 0.6, lowbit.Binary, "ladder: G-Binary cosine 0.800 >= 0.750"},
		{0.7, 0.55, lowbit.Ternary, "ladder: G-Binary cosine 0.700 < 0.750, G-Ternary cosine 0.550 >= 0.500"},
		{0.17, 0.14, lowbit.FP32, "ladder: cosines 0.170 (G-Binary) and 0.140 (G-Ternary) below 0.750 and 0.500, keep FP32"},
	} {
		f, why := l.Admit(cosOf(tc.bin, tc.ter, nan, nan))
		if f != tc.want || why != tc.why {
			t.Errorf("Admit(%v, %v) = %v, %q; want %v, %q", tc.bin, tc.ter, f, why, tc.want, tc.why)
		}
	}
	_, why := ExtendedLadder().Admit(cosOf(0.1, 0.1, 0.5, 0.6))
	if want := "ladder: cosines 0.100 (G-Binary), 0.100 (G-Ternary), 0.500 (INT8) and 0.600 (BFP8) below 0.750, 0.500, 0.950 and 0.950, keep FP32"; why != want {
		t.Errorf("four rungs: %q; want %q", why, want)
	}
	// An absent cosine is "not measured", never "NaN (BFP8) below 0.950".
	for _, tc := range []struct {
		cos  [lowbit.NumFormats]float64
		want string
	}{
		{cosOf(0.1, 0.1, 0.5, nan), "ladder: cosines 0.100 (G-Binary), 0.100 (G-Ternary) and 0.500 (INT8) below 0.750, 0.500 and 0.950, BFP8 not measured, keep FP32"},
		{cosOf(0.1, nan, nan, nan), "ladder: cosine 0.100 (G-Binary) below 0.750, G-Ternary, INT8 and BFP8 not measured, keep FP32"},
		{cosOf(nan, nan, nan, nan), "no diagnostics yet, stay on FP32"},
	} {
		if m, why := ExtendedLadder().Admit(tc.cos); m != lowbit.FP32 || why != tc.want {
			t.Errorf("Admit(%v) = %v, %q; want fp32, %q", tc.cos, m, why, tc.want)
		}
	}
}

func TestParseLadder(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Ladder
		err  bool
	}{
		{in: "g-binary:0.75,g-ternary:0.5,int8:0.95,bfp8:0.95", want: ExtendedLadder()},
		{in: " int8 : 0.9 , binary:0.7", want: Ladder{{lowbit.Int8, 0.9}, {lowbit.Binary, 0.7}}},
		{in: "block-fp8:-0.5", want: Ladder{{lowbit.BFP8, -0.5}}},
		{in: "", want: Ladder{}},
		{in: "none", want: Ladder{}},
		{in: "fp32:0.5", err: true},
		{in: "int8:0.9,fixed8:0.8", err: true},
		{in: "int8:1.5", err: true},
		{in: "int8:nan", err: true},
		{in: "int8", err: true},
		{in: "fp8:0.9", err: true},
		{in: "int8:0.9,", err: true},
	} {
		got, err := ParseLadder(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("ParseLadder(%q) error %v; want error %v", tc.in, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("ParseLadder(%q) = %v; want %v", tc.in, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("ParseLadder(%q) = %v; want %v", tc.in, got, tc.want)
			}
		}
		back, err := ParseLadder(got.String())
		if err != nil || back.String() != got.String() {
			t.Errorf("round trip %q -> %q: %v", tc.in, got.String(), err)
		}
	}
	if got := (Ladder{{lowbit.BFP8, 0.9}, {lowbit.Binary, 0.7}}).String(); got != "g-binary:0.7,bfp8:0.9" {
		t.Errorf("String in ladder order: %q", got)
	}
}

func TestRungsJSON(t *testing.T) {
	b, err := json.Marshal(ExtendedLadder())
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"format":"g-binary","min_cosine":0.75},{"format":"g-ternary","min_cosine":0.5},{"format":"int8","min_cosine":0.95},{"format":"bfp8","min_cosine":0.95}]`
	if string(b) != want {
		t.Errorf("JSON %s; want %s", b, want)
	}
	var r Ladder
	if err := json.Unmarshal(b, &r); err != nil || r.String() != ExtendedLadder().String() {
		t.Errorf("round trip: %v, %v", r, err)
	}
	for _, bad := range []string{`[{"format":"fp9","min_cosine":0.5}]`, `[{"format":"int8","min_cosine":2}]`, `[{"format":1}]`} {
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestCalibrateLadderFormats(t *testing.T) {
	cos := cosOf(0.612, 0.498, 0.9987, 0.9991)
	r, err := CalibrateLadder([]lowbit.Format{lowbit.Binary, lowbit.Ternary, lowbit.Int8, lowbit.BFP8}, cos)
	if err != nil {
		t.Fatal(err)
	}
	if want := "g-binary:0.6,g-ternary:0.45,int8:0.95,bfp8:0.95"; r.String() != want {
		t.Errorf("CalibrateLadder = %s; want %s", r, want)
	}
	if f, _ := r.Admit(cos); f != lowbit.Binary {
		t.Errorf("the calibration group is admitted to %v, not its lowest rung", f)
	}
	for _, bad := range [][]lowbit.Format{{lowbit.FP32}, {lowbit.Format(9)}} {
		if _, err := CalibrateLadder(bad, cos); err == nil {
			t.Errorf("CalibrateLadder(%v) accepted", bad)
		}
	}
	cos[lowbit.Int8] = math.NaN()
	if _, err := CalibrateLadder([]lowbit.Format{lowbit.Int8}, cos); err == nil {
		t.Error("NaN calibration cosine accepted")
	}
}

func FuzzParseLadder(f *testing.F) {
	for _, s := range []string{"g-binary:0.75,g-ternary:0.5,int8:0.95,bfp8:0.95", "int8:1", "none", "bfp:-1,binary:0", ":", "int8:0x1p-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseLadder(s)
		if err != nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("ParseLadder(%q) = %v does not validate: %v", s, r, err)
		}
		back, err := ParseLadder(r.String())
		if err != nil || back.String() != r.String() {
			t.Fatalf("round trip %q -> %q: %v", s, r.String(), err)
		}
		f, _ := r.Admit([lowbit.NumFormats]float64{1, 1, 1, 1, 1})
		if len(r) > 0 && f == lowbit.FP32 {
			t.Fatalf("%q: cosine 1 passes no rung", s)
		}
	})
}

func FuzzRungJSON(f *testing.F) {
	f.Add([]byte(`[{"format":"int8","min_cosine":0.95}]`))
	f.Add([]byte(`[{"format":"g-binary","min_cosine":-1},{"format":"bfp","min_cosine":1}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Ladder
		if err := json.Unmarshal(b, &r); err != nil {
			return
		}
		for _, g := range r {
			if !g.Format.Valid() || !(g.Min >= -1 && g.Min <= 1) {
				t.Fatalf("%s decoded to an invalid rung %+v", b, g)
			}
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back Ladder
		if err := json.Unmarshal(out, &back); err != nil || len(back) != len(r) {
			t.Fatalf("round trip of %s: %s, %v", b, out, err)
		}
	})
}

// TestLadderCheckWorkers: a ladder with an INT8 or BFP8 rung is refused for
// more workers than an int16 lane sums exactly; the low-bit rungs are not.
func TestLadderCheckWorkers(t *testing.T) {
	if err := ExtendedLadder().CheckWorkers(lowbit.MaxSumWorkers); err != nil {
		t.Errorf("258 workers: %v", err)
	}
	if err := ExtendedLadder().CheckWorkers(300); err == nil || !strings.Contains(err.Error(), "ladder rung int8") {
		t.Errorf("300 workers: %v", err)
	}
	if err := DefaultLadder().CheckWorkers(lowbit.MaxWorkers); err != nil {
		t.Errorf("the paper's two rungs at %d workers: %v", lowbit.MaxWorkers, err)
	}
}

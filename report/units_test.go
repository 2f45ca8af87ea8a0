package report

import "testing"

func TestFormatSeconds(t *testing.T) {
	for _, c := range []struct {
		s    float64
		want string
	}{
		{0.08731, "87.3 ms"},
		{4.1e-5, "41.0 µs"}, // the 1 MiB payload's time that printed as "0.04" ms
		{0.9996, "1.00 s"},  // rounds up into the next unit
		{0.0009996, "1.00 ms"},
		{2, "2.00 s"},
		{1.5e-9, "1.50 ns"},
		{3e-13, "0.300 ps"},
		{1234, "1230 s"},
		{-0.002, "-2.00 ms"},
		{0, "0 s"},
	} {
		if got := FormatSeconds(c.s); got != c.want {
			t.Errorf("FormatSeconds(%g) = %q; want %q", c.s, got, c.want)
		}
	}
}

func TestTimeUnit(t *testing.T) {
	for _, c := range []struct {
		max  float64
		name string
		size float64
	}{{0.5, "ms", 1e-3}, {2.77e-3, "ms", 1e-3}, {7, "s", 1}, {4e-5, "µs", 1e-6}, {1e-15, "ps", 1e-12}} {
		if n, s := TimeUnit(c.max); n != c.name || s != c.size {
			t.Errorf("TimeUnit(%g) = %s, %g; want %s, %g", c.max, n, s, c.name, c.size)
		}
	}
}

package train

import (
	"fmt"

	"github.com/neuronfabric/nfabric/data"
)

// Subset returns a data set holding the first n images of d (all of them
// when n <= 0 or n >= d.Len()), and, when perClass > 0, at most perClass
// images of each class (the first ones in order): the "fewer samples per
// class" variant of a boundary study. The normalisation statistics are
// kept. Pixels are shared with d.
func Subset(d *data.Dataset, n, perClass int) *data.Dataset {
	if (n <= 0 || n >= d.Len()) && perClass <= 0 {
		return d
	}
	out := *d
	out.Pixels, out.Labels = nil, nil
	count := make([]int, d.Classes)
	sz := d.ImageSize()
	contiguous := perClass <= 0
	for i := 0; i < d.Len() && (n <= 0 || len(out.Labels) < n); i++ {
		c := d.Labels[i]
		if perClass > 0 && count[c] >= perClass {
			continue
		}
		count[c]++
		out.Labels = append(out.Labels, c)
		if !contiguous {
			out.Pixels = append(out.Pixels, d.Image(i)...)
		}
	}
	if contiguous {
		out.Pixels = d.Pixels[:len(out.Labels)*sz]
	}
	out.Name = fmt.Sprintf("%s[:%d]", d.Name, len(out.Labels))
	if perClass > 0 {
		out.Name = fmt.Sprintf("%s[%d/class,:%d]", d.Name, perClass, len(out.Labels))
	}
	return &out
}

// HeldOut returns images [lo, lo+n) of d (fewer when d ends first) as a
// data set of their own, e.g. training images a run never trains on
// (Subset keeps the first lo) to choose a hyperparameter without looking
// at the test split. Pixels are shared with d.
func HeldOut(d *data.Dataset, lo, n int) (*data.Dataset, error) {
	hi := min(lo+n, d.Len())
	if lo < 0 || n < 1 || lo >= hi {
		return nil, fmt.Errorf("held-out images [%d, %d) of %s (%d images): empty", lo, lo+n, d.Name, d.Len())
	}
	out := *d
	sz := d.ImageSize()
	out.Pixels, out.Labels = d.Pixels[lo*sz:hi*sz], d.Labels[lo:hi]
	out.Name = fmt.Sprintf("%s[%d:%d]", d.Name, lo, hi)
	return &out, nil
}

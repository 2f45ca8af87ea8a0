package data

import (
	"fmt"
	"math/rand/v2"
)

// Augment is the CIFAR-style training augmentation.
type Augment struct {
	// Pad > 0 enables random cropping: the image is padded with Pad zero
	// pixels on each side and an H×W window is cut at an offset uniform in
	// [0, 2·Pad]² (torchvision's RandomCrop(H, padding=Pad)).
	Pad int
	// Flip mirrors the image left-right with probability 1/2.
	Flip bool
}

// Batcher walks a data set in batches of normalised float32 images.
// It is deterministic given its *rand.Rand: Reset draws a Fisher–Yates
// permutation (when Shuffle), and Next draws, per image in batch order,
// the crop offset (dy then dx) and then the flip, only for the enabled
// augmentations.
type Batcher struct {
	D        *Dataset
	Size     int  // images per batch
	Shuffle  bool // permute the order at each Reset
	DropLast bool // skip a final partial batch
	Aug      Augment
	rng      *rand.Rand
	order    []int
	pos      int
	lut      [][256]float32 // lut[c][p] = (p/255 - Mean[c]) / Std[c]
}

// NewBatcher returns a batcher positioned at the start of an epoch.
// rng may be nil when neither shuffling nor augmentation is used.
func NewBatcher(d *Dataset, size int, rng *rand.Rand, shuffle bool, aug Augment) (*Batcher, error) {
	if size < 1 {
		return nil, fmt.Errorf("data: batch size %d < 1", size)
	}
	if rng == nil && (shuffle || aug.Pad > 0 || aug.Flip) {
		return nil, fmt.Errorf("data: shuffling or augmentation needs a random source")
	}
	if aug.Pad < 0 {
		return nil, fmt.Errorf("data: crop padding %d < 0", aug.Pad)
	}
	b := &Batcher{D: d, Size: size, Shuffle: shuffle, Aug: aug, rng: rng, lut: make([][256]float32, d.C)}
	for c := range b.lut {
		mean, std := float32(0), float32(1)
		if len(d.Mean) == d.C {
			mean, std = d.Mean[c], d.Std[c]
		}
		for p := range b.lut[c] {
			b.lut[c][p] = (float32(p)/255 - mean) / std
		}
	}
	b.order = make([]int, d.Len())
	b.Reset()
	return b, nil
}

// Reset starts a new epoch, reshuffling when Shuffle is set.
func (b *Batcher) Reset() {
	for i := range b.order {
		b.order[i] = i
	}
	if b.Shuffle {
		b.rng.Shuffle(len(b.order), func(i, j int) { b.order[i], b.order[j] = b.order[j], b.order[i] })
	}
	b.pos = 0
}

// Order returns a copy of the epoch's order: the data set indices Next
// walks, first batch first.
func (b *Batcher) Order() []int { return append([]int(nil), b.order...) }

// Batches returns the number of batches per epoch.
func (b *Batcher) Batches() int {
	n := b.D.Len()
	if b.DropLast {
		return n / b.Size
	}
	return (n + b.Size - 1) / b.Size
}

// Next writes the next batch, (n, C, H, W) images into x and n labels into
// y, and returns n; it returns 0 at the end of the epoch. x must hold
// Size·C·H·W values and y Size labels.
func (b *Batcher) Next(x []float32, y []int) int {
	n := min(b.Size, len(b.order)-b.pos)
	if n <= 0 || (b.DropLast && n < b.Size) {
		return 0
	}
	sz := b.D.ImageSize()
	for k := 0; k < n; k++ {
		i := b.order[b.pos+k]
		y[k] = b.D.Labels[i]
		b.fill(x[k*sz:(k+1)*sz], b.D.Image(i))
	}
	b.pos += n
	return n
}

// fill normalises (and augments) one image.
func (b *Batcher) fill(dst []float32, src []uint8) {
	dy, dx := 0, 0
	if p := b.Aug.Pad; p > 0 {
		dy, dx = b.rng.IntN(2*p+1)-p, b.rng.IntN(2*p+1)-p
	}
	flip := b.Aug.Flip && b.rng.IntN(2) == 1
	b.place(dst, src, dy, dx, flip)
}

// place writes src shifted by (dy, dx) (output (h, w) reads source
// (h+dy, w+dx), zero outside) and then mirrored when flip, normalised.
func (b *Batcher) place(dst []float32, src []uint8, dy, dx int, flip bool) {
	d := b.D
	hw := d.H * d.W
	if dy == 0 && dx == 0 && !flip {
		for c := 0; c < d.C; c++ {
			lut := &b.lut[c]
			for j, p := range src[c*hw : (c+1)*hw] {
				dst[c*hw+j] = lut[p]
			}
		}
		return
	}
	for c := 0; c < d.C; c++ {
		lut := &b.lut[c]
		plane := src[c*hw : (c+1)*hw]
		for h := 0; h < d.H; h++ {
			sh := h + dy
			for w := 0; w < d.W; w++ {
				sw := w + dx
				if flip {
					sw = d.W - 1 - w + dx
				}
				var p uint8 // padding is a zero pixel
				if sh >= 0 && sh < d.H && sw >= 0 && sw < d.W {
					p = plane[sh*d.W+sw]
				}
				dst[c*hw+h*d.W+w] = lut[p]
			}
		}
	}
}

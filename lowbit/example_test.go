package lowbit_test

import (
	"fmt"
	"math"

	"github.com/neuronfabric/nfabric/lowbit"
)

// EncodeSigns packs b = 1{g > 0} LSB first; zero and -0 pack as 0, and a
// NaN or Inf is an error naming its index, never a sign.
func ExampleEncodeSigns() {
	g := []float32{0.5, -1, 0, float32(math.Copysign(0, -1)), 2, 1e-30, -3, 4, 7}
	dst := make([]byte, lowbit.PlaneBytes(len(g)))
	if err := lowbit.EncodeSigns(dst, g); err != nil {
		fmt.Println(err)
	}
	fmt.Printf("%08b %08b\n", dst[1], dst[0])

	err := lowbit.EncodeSigns(dst, []float32{1, float32(math.Inf(-1)), float32(math.NaN())})
	fmt.Println(err)
	// Output:
	// 00000001 10110001
	// element 1 is -Inf, not a finite number
}

// VotePacket on the paper's Sec. 2 example: eight workers, six positive
// and two negative, vote +1; the 2-of-3 G-Ternary gate zeroes element 2;
// a 4-4 tie gives 0.
func ExampleVotePacket() {
	packets := []byte{0b00111111, 0b00111111, 0b00111111, 0b00001111}
	u := make([]int8, len(packets))

	bin := lowbit.Spec{Workers: 8, Layout: lowbit.ElementMajor, Format: lowbit.Binary}
	if err := lowbit.VotePacket(u, packets, nil, bin, 0); err != nil {
		fmt.Println(err)
	}
	fmt.Println("G-Binary: ", u)

	ter := lowbit.Spec{Workers: 8, Layout: lowbit.ElementMajor, Format: lowbit.Ternary, Gate: lowbit.PaperGate}
	if err := lowbit.VotePacket(u, packets, nil, ter, 0); err != nil {
		fmt.Println(err)
	}
	fmt.Println("G-Ternary:", u)
	// Output:
	// G-Binary:  [1 1 1 0]
	// G-Ternary: [1 1 0 0]
}

// VotePlanes takes one sign bit-plane per worker (any W up to 1024) and
// returns the majority as two result planes.
func ExampleVotePlanes() {
	grads := [][]float32{ // 3 workers, 5 elements
		{1, -1, 1, -1, 0},
		{1, -1, -1, 1, 0},
		{-1, -1, 1, 1, 2},
	}
	n := len(grads[0])
	signs := make([][]byte, len(grads))
	for k, g := range grads {
		signs[k] = make([]byte, lowbit.PlaneBytes(n))
		if err := lowbit.EncodeSigns(signs[k], g); err != nil {
			fmt.Println(err)
		}
	}
	pos, nz := make([]byte, lowbit.PlaneBytes(n)), make([]byte, lowbit.PlaneBytes(n))
	s := lowbit.Spec{Workers: 3, Layout: lowbit.WorkerMajor, Format: lowbit.Binary}
	if err := lowbit.VotePlanes(pos, nz, signs, nil, n, s, 0); err != nil {
		fmt.Println(err)
	}
	u := make([]int8, n)
	lowbit.UnpackPlanes(u, pos, nz, n)
	fmt.Printf("pos %05b nz %05b u %v\n", pos[0], nz[0], u)
	// Output:
	// pos 01101 nz 11111 u [1 -1 1 1 -1]
}

// Account reproduces the paper's Table 6 traffic ratio for ResNet-18 on
// CIFAR-100 with a G-Binary backbone and an FP32 classifier head, beside
// the G-Ternary cost of the paper's accounting (1.58 bits) and of two
// actual bit-planes with per-worker gate bits.
func ExampleAccount() {
	groups := []lowbit.Group{
		{Name: "backbone", Elements: 11_168_832, Format: lowbit.Binary},
		{Name: "head", Elements: 51_300, Format: lowbit.FP32},
	}
	fmt.Printf("G-Binary backbone + FP32 head: %.4f\n", lowbit.Account(groups, lowbit.PaperAccounting).Ratio)

	all := []lowbit.Group{{Name: "all", Elements: 11_220_132, Format: lowbit.Ternary, Gate: lowbit.Gate{Kind: lowbit.GateWorker}}}
	for _, a := range []lowbit.Accounting{lowbit.PaperAccounting, lowbit.Base3Accounting, lowbit.PlaneAccounting} {
		fmt.Printf("G-Ternary, %-6s accounting: %.4f\n", a, lowbit.Account(all, a).Ratio)
	}
	// Output:
	// G-Binary backbone + FP32 head: 0.0357
	// G-Ternary, paper  accounting: 0.0494
	// G-Ternary, base3  accounting: 0.0500
	// G-Ternary, planes accounting: 0.0625
}

package collective

import (
	"fmt"

	"github.com/neuronfabric/nfabric/lowbit"
)

// Path families of Fig. 7.
const (
	FamilyFP32         = "FP32 reference"
	FamilySoftwareSign = "software sign"
	FamilyFabric       = "NEURON-Fabric"
)

// Paths is one All-Reduce of a model's gradients, to be timed on every
// path of the paper's Fig. 7.
type Paths struct {
	// Elements is the number of gradient elements.
	Elements int64
	// Workers is W, the number of data-parallel workers.
	Workers int
	// Net carries the FP32 software collectives; Intra and PerNode add the
	// hierarchical row when Workers is a multiple of PerNode above it.
	Net, Intra Link
	PerNode    int
	// CXL is the controller link; Shared makes the workers share one port.
	CXL    Link
	Shared bool
	// Exposure is the exposed low-bit datapath fraction on the controller.
	Exposure float64
	// Model, when set, prices the FP32 network rows instead of the
	// alpha-beta algorithms on Net (one row, named after the model): the
	// ASTRA-sim analytical mode. Its Ranks must equal Workers.
	Model Model
}

// PathTime is one modelled path.
type PathTime struct {
	Path   string `json:"path"`
	Route  string `json:"route"`
	Family string `json:"family"`
	// Bits is the payload bits per element; Traffic = Bits / 32.
	Bits    float64 `json:"bits_per_element"`
	Traffic float64 `json:"normalized_traffic"`
	// Controller marks the CXL rows, where no ring of links exists and
	// busbw does not apply.
	Controller bool     `json:"controller"`
	Estimate   Estimate `json:"estimate"`
}

// Controller path names (the keys a caller attaches paper figures to).
const (
	PathFP32Pooling   = "FP32 CXL pooling (write + read, no aggregation)"
	PathGBinary       = "G-Binary (CXL controller)"
	PathGTernaryPaper = "G-Ternary (CXL controller, paper's 1.58-bit accounting)"
	PathGTernaryPlane = "G-Ternary (CXL controller, 2 bit-planes: sign + worker gate)"
)

// Times models the All-Reduce on every path, in Fig. 7's order: the FP32
// references (CXL pooling, ring, double binary tree, halving-doubling,
// hierarchical when it applies), the software sign methods (SignOfMean's
// FP32 ring, MajoritySignSGD's all-gather of 1-bit signs) and the
// controller paths (G-Binary, G-Ternary at the paper's 1.58 bits and at two
// stored bit-planes).
func (p Paths) Times() ([]PathTime, error) {
	if p.Workers < 1 {
		return nil, fmt.Errorf("workers %d must be >= 1", p.Workers)
	}
	cxl := CXLPath{Link: p.CXL, Workers: p.Workers, Shared: p.Shared, Exposure: p.Exposure}
	S := float64(p.Elements) * 4
	var out []PathTime
	add := func(path, route, family string, bits float64, controller bool, est Estimate, err error) error {
		out, err = addPath(out, path, route, family, bits, controller, est, err)
		return err
	}
	est, err := cxl.Time(p.Elements, 32, false)
	if err := add(PathFP32Pooling, p.CXL.Name, FamilyFP32, 32, true, est, err); err != nil {
		return nil, err
	}
	if p.Model != nil {
		if p.Model.Ranks() != p.Workers {
			return nil, fmt.Errorf("the network model spans %d ranks, the paths %d workers", p.Model.Ranks(), p.Workers)
		}
		return p.modelRows(out, cxl)
	}
	for _, alg := range []Algorithm{Ring, Tree, HalvingDoubling} {
		est, err := AlphaBeta{Alg: alg, N: p.Workers, Link: p.Net}.Time(Call{Op: AllReduce, Bytes: S})
		if err := add("FP32 NCCL/RDMA "+alg.String(), fmt.Sprintf("%s, %d workers", p.Net.Name, p.Workers), FamilyFP32, 32, false, est, err); err != nil {
			return nil, err
		}
	}
	if p.PerNode > 1 && p.Workers > p.PerNode && p.Workers%p.PerNode == 0 {
		est, err := AlphaBeta{Alg: Hierarchical, N: p.Workers, PerNode: p.PerNode, Intra: p.Intra, Link: p.Net}.Time(Call{Op: AllReduce, Bytes: S})
		route := fmt.Sprintf("%d x %s + %d nodes x %s", p.PerNode, p.Intra.Name, p.Workers/p.PerNode, p.Net.Name)
		if err := add("FP32 hierarchical", route, FamilyFP32, 32, false, est, err); err != nil {
			return nil, err
		}
	}
	ring := AlphaBeta{Alg: Ring, N: p.Workers, Link: p.Net}
	est, err = ring.Time(Call{Op: AllReduce, Bytes: S})
	if err := add("SignOfMean (FP32 ring mean, then sign)", p.Net.Name, FamilySoftwareSign, 32, false, est, err); err != nil {
		return nil, err
	}
	est, err = ring.Time(Call{Op: AllGather, Bytes: signBytes(p.Elements)})
	est = fp32Equivalent(est, S)
	if err := add("MajoritySignSGD (ring all-gather of signs)", p.Net.Name, FamilySoftwareSign, 1, false, est, err); err != nil {
		return nil, err
	}
	return p.controllerRows(out, cxl)
}

// fp32Equivalent reports e's algbw against the FP32 gradient of S bytes,
// the buffer every path of the table replaces, rather than against the
// bytes the operation itself moves (a sign all-gather's per-rank signs);
// busbw stays the per-link rate of the operation.
func fp32Equivalent(e Estimate, S float64) Estimate {
	e.Bytes = S
	if e.Seconds > 0 {
		e.AlgBW = S / e.Seconds
	}
	return e
}

// signBytes is one worker's packed signs: ceil(elements / 8) bytes.
func signBytes(elements int64) float64 { return float64((elements + 7) / 8) }

// modelRows appends the FP32 network row, the software sign rows and the
// controller rows priced by p.Model.
func (p Paths) modelRows(out []PathTime, cxl CXLPath) ([]PathTime, error) {
	S := float64(p.Elements) * 4
	name := "FP32 " + p.Model.String()
	if a, ok := p.Model.(Astra); ok && len(a.Network) == 1 {
		name = fmt.Sprintf("FP32 ASTRA-sim ring (analytical, %d NPUs)", a.Ranks())
	}
	for _, r := range []struct {
		path, family string
		bits         float64
		call         Call
	}{
		{name, FamilyFP32, 32, Call{Op: AllReduce, Bytes: S}},
		{"SignOfMean (FP32 all-reduce of the mean, then sign)", FamilySoftwareSign, 32, Call{Op: AllReduce, Bytes: S}},
		{"MajoritySignSGD (all-gather of signs)", FamilySoftwareSign, 1, Call{Op: AllGather, Bytes: signBytes(p.Elements)}},
	} {
		est, err := p.Model.Time(r.call)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.path, err)
		}
		est = fp32Equivalent(est, S)
		out = append(out, PathTime{Path: r.path, Route: fmt.Sprintf("%d ranks", p.Workers), Family: r.family, Bits: r.bits, Traffic: r.bits / 32, Estimate: est})
	}
	return p.controllerRows(out, cxl)
}

// addPath appends one path unless err is set.
func addPath(out []PathTime, path, route, family string, bits float64, controller bool, est Estimate, err error) ([]PathTime, error) {
	if err != nil {
		return out, err
	}
	return append(out, PathTime{Path: path, Route: route, Family: family, Bits: bits, Traffic: bits / 32, Controller: controller, Estimate: est}), nil
}

// controllerRows appends the NEURON-Fabric controller rows.
func (p Paths) controllerRows(out []PathTime, cxl CXLPath) ([]PathTime, error) {
	for _, c := range []struct {
		path string
		bits float64
	}{
		{PathGBinary, lowbit.BitsPerElement(lowbit.Binary, lowbit.Gate{}, lowbit.PaperAccounting)},
		{PathGTernaryPaper, lowbit.BitsPerElement(lowbit.Ternary, lowbit.Gate{}, lowbit.PaperAccounting)},
		{PathGTernaryPlane, lowbit.BitsPerElement(lowbit.Ternary, lowbit.Gate{Kind: lowbit.GateWorker}, lowbit.PlaneAccounting)},
	} {
		est, err := cxl.Time(p.Elements, c.bits, true)
		if out, err = addPath(out, c.path, p.CXL.Name, FamilyFabric, c.bits, true, est, err); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ExposedCycles is the datapath time a window of windowS seconds exposes
// at exposed fraction e, in cycles of a clockHz controller: window x e x f
// (the paper's GPT-scale check, Sec. 5.1).
func ExposedCycles(windowS, e, clockHz float64) float64 { return windowS * e * clockHz }

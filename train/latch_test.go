package train

import (
	"math/rand/v2"
	"testing"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
)

// TestLatchedAggregatorFollowsLatches: with the latches set to a policy's
// modes, the latched aggregator gives exactly what a fixed-policy
// aggregator gives, step after step, as the latches change.
func TestLatchedAggregatorFollowsLatches(t *testing.T) {
	m, err := nn.NewResNet(rand.New(rand.NewPCG(3, 0)), nn.ResNetConfig{Blocks: []int{1, 1}, Width: 4, InChannels: 1, H: 8, W: 8, Classes: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, layout := range []lowbit.Layout{lowbit.WorkerMajor, lowbit.ElementMajor} {
		la, err := NewLatchedAggregator(m, 8, layout, lowbit.PaperGate)
		if err != nil {
			t.Fatal(err)
		}
		w, regions := la.Latches()
		if len(regions["backbone"]) == 0 || len(regions["head"]) == 0 {
			t.Fatalf("regions %v", regions)
		}
		steps := []struct{ bb, hd cxl.Mode }{
			{cxl.FP32Bypass, cxl.FP32Bypass},
			{cxl.Aggregate(lowbit.Binary), cxl.FP32Bypass},
			{cxl.Aggregate(lowbit.Ternary), cxl.Aggregate(lowbit.Binary)},
			{cxl.FP32Bypass, cxl.Aggregate(lowbit.Ternary)},
			{cxl.Aggregate(lowbit.Binary), cxl.Aggregate(lowbit.Binary)},
			// A mixed plan on the multi-rung ladder: the sum latches select
			// the Int8 and BFP8 rules, read through integer-sum buckets;
			// the reference is the unlatched aggregator's.
			{cxl.Aggregate(lowbit.Binary), cxl.Aggregate(lowbit.Int8)},
			{cxl.Aggregate(lowbit.BFP8), cxl.Aggregate(lowbit.Ternary)},
			{cxl.Aggregate(lowbit.Int8), cxl.Aggregate(lowbit.BFP8)},
			{cxl.FP32Bypass, cxl.Aggregate(lowbit.Int8)},
		}
		spec := map[cxl.Mode]RuleSpec{cxl.FP32Bypass: {Rule: FormatRule(lowbit.FP32)}, cxl.Aggregate(lowbit.Binary): {Rule: FormatRule(lowbit.Binary)}, cxl.Aggregate(lowbit.Ternary): {Rule: FormatRule(lowbit.Ternary), Gate: lowbit.PaperGate},
			cxl.Aggregate(lowbit.Int8): {Rule: FormatRule(lowbit.Int8)}, cxl.Aggregate(lowbit.BFP8): {Rule: FormatRule(lowbit.BFP8)}}
		for s, st := range steps {
			for g, mode := range map[string]cxl.Mode{"backbone": st.bb, "head": st.hd} {
				for _, id := range regions[g] {
					if err := w.SetMode(id, mode, int64(s)); err != nil {
						t.Fatal(err)
					}
				}
			}
			grads := randGrads(m, 8, uint64(s))
			got, want := m.NewGrads(), m.NewGrads()
			t0 := la.ControllerTransactions()
			if err := la.Aggregate(grads, got); err != nil {
				t.Fatal(err)
			}
			// Every latch but FP32 bypass reads through the controller,
			// the sum latches included.
			if via := la.ControllerTransactions() > t0; via != (st.bb != cxl.FP32Bypass || st.hd != cxl.FP32Bypass) {
				t.Errorf("%v step %d (%v/%v): through the controller %v", layout, s, st.bb, st.hd, via)
			}
			ref, err := NewAggregator(m, Split(spec[st.bb], spec[st.hd]), 8, layout)
			if err != nil {
				t.Fatal(err)
			}
			if err := ref.Aggregate(grads, want); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				for j := range got[i] {
					if got[i][j] != want[i][j] {
						t.Fatalf("%v step %d (%v/%v) %s[%d] = %v; want %v", layout, s, st.bb, st.hd, m.Params[i].Name, j, got[i][j], want[i][j])
					}
				}
			}
			if p := la.Policy(); p[nn.Backbone] != spec[st.bb] || p[nn.Head] != spec[st.hd] {
				t.Errorf("step %d: policy %v", s, p)
			}
		}
	}
}

func TestLatchedAggregatorRejectsDisagreement(t *testing.T) {
	m := tinyModel()
	la, err := NewLatchedAggregator(m, 4, lowbit.WorkerMajor, lowbit.PaperGate)
	if err != nil {
		t.Fatal(err)
	}
	w, regions := la.Latches()
	w.SetMode(regions["backbone"][0], cxl.Aggregate(lowbit.Binary), 0)
	if err := la.Aggregate(handGrads(m, 4), m.NewGrads()); err == nil {
		t.Error("a group whose regions disagree was aggregated")
	}
	if _, err := NewLatchedAggregator(m, 4, lowbit.WorkerMajor, lowbit.Gate{Kind: lowbit.GateWorker}); err == nil {
		t.Error("worker gate accepted")
	}
	if w, _ := (&Aggregator{}).Latches(); w != nil {
		t.Error("a fixed-policy aggregator exposes latches")
	}
}

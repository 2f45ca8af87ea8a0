package run

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/neuronfabric/nfabric/report"
)

// costBlock is a block whose units declare the given costs (in seconds)
// and return their index.
func costBlock(name string, order int, costs ...float64) Block {
	return NewBlock(Spec[synthResult]{
		Name: name, Title: "costed " + name, Order: order,
		Units: func(Config) ([]Unit[synthResult], error) {
			var us []Unit[synthResult]
			for i, c := range costs {
				key := fmt.Sprintf("u%d", i)
				us = append(us, Unit[synthResult]{Key: key, Cores: 1, Cost: time.Duration(c * float64(time.Second)),
					Run: func(context.Context, Config) (synthResult, error) {
						return synthResult{Key: key, Value: float64(i), Rows: []float64{c}}, nil
					}})
			}
			return us, nil
		},
		Layout: func(_ Config, rs []synthResult) (*report.Result, error) {
			t := report.Table{Name: name, Columns: []string{"key", "value"}}
			for _, r := range rs {
				t.AddRow(r.Key, r.Value)
			}
			return &report.Result{Tables: []report.Table{t}, Data: rs}, nil
		},
	})
}

func keysOf(p ShardPlan) []string {
	var ks []string
	for _, u := range p.Units {
		ks = append(ks, u.Block+"/"+u.Key)
	}
	return ks
}

// TestPlanShardsLPT checks the deal against LPT worked by hand: costs 10,
// 7, 5, 4, 3, 1 over two shards go 10 -> 0, 7 -> 1, 5 -> 1 (7 < 10),
// 4 -> 0 (10 < 12), 3 -> 1 (12 < 14), 1 -> 0 (14 < 15): 15 and 15, where
// every other unit (the old rule) gave 18 and 12. A 1000-second unit
// among small ones gets a shard to itself (2, 1000, 3, 2, 1, 4 over three:
// 1000 -> 0, 4 -> 1, 3 -> 2, 2 (u0) -> 2 (3 < 4), 2 (u3) -> 1 (4 < 5),
// 1 -> 2 (5 < 6): 1000, 6, 6), and units of unknown cost spread by count.
func TestPlanShardsLPT(t *testing.T) {
	cases := []struct {
		name  string
		bs    []Block
		n     int
		want  [][]string
		costs []float64
	}{
		{"hand", []Block{costBlock("a", 1, 10, 7, 5), costBlock("b", 2, 4, 3, 1)}, 2,
			[][]string{{"a/u0", "b/u0", "b/u2"}, {"a/u1", "a/u2", "b/u1"}}, []float64{15, 15}},
		{"one long", []Block{costBlock("hw", 1, 2, 1000, 3, 2, 1, 4)}, 3,
			[][]string{{"hw/u1"}, {"hw/u3", "hw/u5"}, {"hw/u0", "hw/u2", "hw/u4"}}, []float64{1000, 6, 6}},
		{"unknown", []Block{costBlock("z", 1, 0, 0, 0, 0, 0, 0, 0)}, 3,
			[][]string{{"z/u0", "z/u3", "z/u6"}, {"z/u1", "z/u4"}, {"z/u2", "z/u5"}}, []float64{0, 0, 0}},
	}
	for _, c := range cases {
		plans, err := PlanShards(c.bs, Config{}, c.n)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range plans {
			if got := keysOf(p); !slices.Equal(got, c.want[i]) || p.Cost.Seconds() != c.costs[i] {
				t.Errorf("%s: shard %d holds %v (%v); want %v (%gs)", c.name, i, got, p.Cost, c.want[i], c.costs[i])
			}
		}
	}
	if _, err := PlanShards(cases[0].bs, Config{}, 0); err == nil {
		t.Error("0 shards accepted")
	}
}

// TestBalancedShardsMerge: shards dealt by cost hold exactly the units
// PlanShards says, and merged they write the single run's bytes.
func TestBalancedShardsMerge(t *testing.T) {
	bs := []Block{costBlock("a", 1, 10, 7, 5, 0.5), costBlock("b", 2, 4, 3, 1, 900)}
	lookup := func([]string) ([]Block, error) { return bs, nil }
	ctx := context.Background()
	single := t.TempDir()
	if _, err := Run(ctx, bs, Config{Seed: 1}, single, nil); err != nil {
		t.Fatal(err)
	}
	want := readDir(t, single)
	for _, n := range []int{2, 3, 5} {
		dir := t.TempDir()
		plans, err := PlanShards(bs, Config{Seed: 1}, n)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			path, err := RunShard(ctx, bs, Config{Seed: 1}, Shard{i, n}, dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			f, err := readShard(path)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, u := range f.Units {
				got = append(got, u.Block+"/"+u.Key)
				if u.Wall <= 0 {
					t.Errorf("n=%d: unit %s/%s records no wall time", n, u.Block, u.Key)
				}
			}
			if !slices.Equal(got, keysOf(plans[i])) {
				t.Errorf("n=%d shard %d ran %v; PlanShards says %v", n, i, got, keysOf(plans[i]))
			}
		}
		out := t.TempDir()
		var lines []string
		logf := func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }
		if _, err := merge([]string{dir}, out, logf, lookup); err != nil {
			t.Fatal(err)
		}
		got := readDir(t, out)
		for name, w := range want {
			if !bytes.Equal(got[name], w) {
				t.Errorf("n=%d: %s differs from the single run", n, name)
			}
		}
		if len(lines) != n || !bytes.Contains([]byte(lines[0]), []byte("estimated 900 CPU-s")) {
			t.Errorf("n=%d: merge's shard lines %q", n, lines)
		}
	}
}

// Package traces opens every kind of training trace nfabric prices and
// returns it as one workload.Trace, saying what it read and what it left
// out (Trace.Source). whatif and timing replay read their --trace through
// Load.
//
// # Kinds
//
//	PREFIX              ASTRA-sim's multi-rank workload: PREFIX.0.et ... PREFIX.{N-1}.et
//	                    (Chakra ETs, one per NPU); the worker count is N
//	FILE.et, FILE.et.pb one Chakra ET (one rank), protobuf
//	FILE.json           sniffed by its content:
//	                      - a torch.profiler Chrome trace ("traceEvents", or a list of
//	                        events): its collectives (record_param_comms, or the c10d::
//	                        events of a gloo job profiled with record_shapes=True), steps
//	                        and backward times (see ReadTorchProfile's notes in torch.go)
//	                      - a Chakra ET in JSON ("workload_graph", or the jsonizer's
//	                        records); a PyTorch execution trace ("schema" and "nodes")
//	                        is refused with how to convert it
//	                      - otherwise nfabric's bucket trace (what nfabric.torch records;
//	                        the format: go doc github.com/neuronfabric/nfabric/workload ParseTraceJSON)
//	FILE.csv            nfabric's bucket trace as CSV (go doc ./workload ParseTraceCSV)
//
// Chakra ETs: go doc github.com/neuronfabric/nfabric/chakra.
//
// # What every kind yields
//
// A list of steps, each with forward, backward and optimizer times where
// the trace says them, and its collectives in launch order: each one's
// operation (collective.Op; nfabric's own traces are all-reduces unless a
// bucket says "collective"), its bytes (S as collective.Op defines it),
// its ready time from the start of backward, its recorded duration, and,
// for recordings of nfabric.torch, its layer groups with their modes and
// the measured encode and vote costs. Only all-reduce and reduce-scatter
// collectives carry gradients the NEURON-Fabric controller can aggregate;
// the others are priced on the network on both paths.
//
// # Bounds
//
// A JSON file is read whole (its bytes stay in memory while it is parsed),
// and then each reader keeps its compact form: about 120 bytes a bucket
// (workload.MaxTraceBuckets buckets at most), 50 bytes a Chakra node and
// 20 a dependency (chakra.MaxNodes nodes at most), and only the events a
// profile's collectives and steps need. A Chakra ET is streamed from the
// file, one record at a time.
package traces

import (
	"fmt"
	"os"
	"strings"

	"github.com/neuronfabric/nfabric/chakra"
	"github.com/neuronfabric/nfabric/strictjson"
	"github.com/neuronfabric/nfabric/workload"
)

// MaxJSONBytes bounds a JSON trace file (read whole): 4 GiB.
const MaxJSONBytes = 4 << 30

// Load reads the trace at path, of any kind above.
func Load(path string) (*workload.Trace, error) {
	if path == "" {
		return nil, fmt.Errorf("trace: empty path")
	}
	st, statErr := os.Stat(path)
	if statErr != nil || st.IsDir() {
		files, err := chakra.RankFiles(path)
		if err != nil {
			return nil, err
		}
		if len(files) > 0 {
			return chakra.ReadRanks(path)
		}
		if statErr != nil {
			return nil, fmt.Errorf("read trace: %w (and no %s.0.et: a multi-rank workload is given by its prefix)", statErr, path)
		}
		return nil, fmt.Errorf("trace %s is a directory (give a file, or the prefix PREFIX of PREFIX.0.et ...)", path)
	}
	low := strings.ToLower(path)
	switch {
	case strings.HasSuffix(low, ".et"), strings.HasSuffix(low, ".et.pb"):
		return chakra.ReadFile(path)
	case strings.HasSuffix(low, ".csv"):
		return workload.ReadTrace(path)
	case strings.HasSuffix(low, ".json"):
		if st.Size() > MaxJSONBytes {
			return nil, fmt.Errorf("trace %s: %d bytes, above %d", path, st.Size(), MaxJSONBytes)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read trace: %w", err)
		}
		return ParseJSON(data, path)
	}
	return nil, fmt.Errorf("trace %s: unknown kind (want a Chakra ET .et, a JSON trace (nfabric's, a torch.profiler trace or Chakra's), a CSV trace, or the prefix of PREFIX.0.et ...; go doc github.com/neuronfabric/nfabric/traces)", path)
}

// ParseJSON reads a JSON trace of any kind, sniffed by its content.
func ParseJSON(data []byte, name string) (*workload.Trace, error) {
	sh := strictjson.Shape(data)
	switch {
	case sh.Kind == '[' || sh.HasKey("traceEvents"):
		return ReadTorchProfile(data, name)
	case sh.HasKey("workload_graph") || (sh.HasKey("schema") && sh.HasKey("nodes")) || (sh.Values > 1 && sh.OnlyKeys("version", "attr")):
		rk, err := chakra.DecodeJSON(data, name)
		if err != nil {
			return nil, err
		}
		return chakra.Merge([]*chakra.Rank{rk})
	}
	return workload.ParseTraceJSON(data, name)
}

package chakra

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	chakrav1 "github.com/neuronfabric/nfabric/api/chakra/v1"
	"github.com/neuronfabric/nfabric/strictjson"
	"google.golang.org/protobuf/encoding/protojson"
)

// jsonNode is one node of Chakra's JSON feeder input (src/feeder/json_node.cpp
// reads these keys; others are ignored, as there).
type jsonNode struct {
	ID       *uint64  `json:"Id"`
	Name     string   `json:"Name"`
	NodeType *int64   `json:"NodeType"`
	DataDeps []uint64 `json:"data_deps"`
	CtrlDeps []uint64 `json:"ctrlDeps"`
	Runtime  uint64   `json:"runtime"`
	CommType *int64   `json:"comm_type"`
	CommSize *int64   `json:"comm_size"`
}

// DecodeJSON reads a Chakra trace in one of its JSON forms (the package
// doc) and schedules it; a PyTorch execution trace is refused with what to
// do. Errors name the file and, where they can, the line:column.
func DecodeJSON(data []byte, name string) (*Rank, error) {
	if err := strictjson.CheckDuplicates(data); err != nil {
		return nil, strictjson.Wrap(err, data, "chakra "+name)
	}
	sh := strictjson.Shape(data)
	has := func(k string) bool { return sh.HasKey(k) }
	switch {
	case sh.Kind == '{' && has("workload_graph"):
		return decodeFeederJSON(data, name)
	case sh.Kind == '{' && has("schema") && has("nodes"):
		return nil, fmt.Errorf("chakra %s: a PyTorch execution trace (host trace, schema %s), not a Chakra ET: convert it with Chakra first (chakra_trace_link with the Kineto trace, then chakra_converter PyTorch), and give the .et", name, sh.String("schema"))
	case sh.Kind == '{' && sh.OnlyKeys("version", "attr"):
		return decodeJsonizer(data, name)
	}
	return nil, fmt.Errorf("chakra %s: not a Chakra JSON trace (want an object with \"workload_graph\", or the jsonizer's records)", name)
}

// decodeFeederJSON reads the "workload_graph" form, one node at a time.
func decodeFeederJSON(data []byte, name string) (*Rank, error) {
	where := "chakra " + name
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // {
		return nil, strictjson.Wrap(err, data, where)
	}
	g := newGraph(name)
	found := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, strictjson.Wrap(err, data, where)
		}
		if key, _ := tok.(string); key != "workload_graph" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, strictjson.Wrap(err, data, where)
			}
			continue
		}
		found = true
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return nil, fmt.Errorf("%s:%s: workload_graph must be a list of nodes", where, strictjson.LineCol(data, dec.InputOffset()))
		}
		for i := 0; dec.More(); i++ {
			var jn jsonNode
			at := dec.InputOffset()
			if err := dec.Decode(&jn); err != nil {
				return nil, strictjson.Wrap(fmt.Errorf("workload_graph[%d]: %w", i, err), data, where)
			}
			if jn.ID == nil || jn.NodeType == nil {
				return nil, fmt.Errorf("%s:%s: workload_graph[%d] needs \"Id\" and \"NodeType\"", where, strictjson.LineCol(data, at), i)
			}
			nf := nodeFields{id: *jn.ID, name: jn.Name, kind: *jn.NodeType, data: jn.DataDeps, ctrl: jn.CtrlDeps, dur: jn.Runtime}
			if jn.CommType != nil {
				nf.commType, nf.hasType = *jn.CommType, true
			}
			if jn.CommSize != nil {
				nf.commSize, nf.hasSize = *jn.CommSize, true
			}
			if err := g.add(i, &nf); err != nil {
				return nil, fmt.Errorf("%s: workload_graph: %w", where, err)
			}
		}
		if _, err := dec.Token(); err != nil { // ]
			return nil, strictjson.Wrap(err, data, where)
		}
	}
	if !found {
		return nil, fmt.Errorf("%s: no workload_graph", where)
	}
	rk, err := g.schedule()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	rk.format = "Chakra ET (JSON feeder form)"
	return rk, nil
}

// decodeJsonizer reads the jsonizer's output: a GlobalMetadata record,
// then Node records, as protobuf JSON objects one after another.
func decodeJsonizer(data []byte, name string) (*Rank, error) {
	where := "chakra " + name
	dec := json.NewDecoder(bytes.NewReader(data))
	opts := protojson.UnmarshalOptions{DiscardUnknown: true}
	g := newGraph(name)
	msg := &chakrav1.Node{}
	var nf nodeFields
	for i := -1; ; i++ {
		var raw json.RawMessage
		at := dec.InputOffset()
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, strictjson.Wrap(err, data, where)
		}
		if i < 0 {
			if err := opts.Unmarshal(raw, &chakrav1.GlobalMetadata{}); err != nil {
				return nil, fmt.Errorf("%s:%s: global metadata: %v", where, strictjson.LineCol(data, at), err)
			}
			continue
		}
		if err := opts.Unmarshal(raw, msg); err != nil {
			return nil, fmt.Errorf("%s:%s: node record %d: %v", where, strictjson.LineCol(data, at), i, err)
		}
		fieldsOf(msg, &nf)
		if err := g.add(i, &nf); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
	}
	rk, err := g.schedule()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	rk.format = "Chakra ET (jsonizer's protobuf JSON)"
	return rk, nil
}

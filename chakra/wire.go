package chakra

import (
	"errors"
	"fmt"
	"unicode/utf8"

	chakrav1 "github.com/neuronfabric/nfabric/api/chakra/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// The Node records are decoded straight from the wire (protowire) into
// nodeFields, reusing its dependency slices, rather than into generated
// messages: a trace of millions of nodes then allocates nothing a node
// but its collective's name. The field numbers are et_def.proto's (and
// api/chakra/v1/et.proto's); fields the reader does not use, inputs and
// outputs among them, are skipped, and repeated dependencies are read
// packed or not, as proto3 allows.
const (
	fieldID       = 1
	fieldName     = 2
	fieldType     = 3
	fieldCtrlDeps = 4
	fieldDataDeps = 5
	fieldDuration = 7
	fieldAttr     = 10
)

var errWire = errors.New("malformed protobuf")

// decodeNode fills nf from one Node record.
func decodeNode(b []byte, nf *nodeFields) error {
	data, ctrl := nf.data[:0], nf.ctrl[:0]
	saved := nf.attrs
	*nf = nodeFields{attrs: saved}
	var nameB []byte
	attrs := nf.attrs[:0]
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: tag: %v", errWire, protowire.ParseError(n))
		}
		if !num.IsValid() {
			return fmt.Errorf("%w: field number %d", errWire, num)
		}
		b = b[n:]
		switch {
		case num == fieldID && typ == protowire.VarintType:
			var err error
			if nf.id, b, err = consumeVarint(b, "id"); err != nil {
				return err
			}
		case num == fieldType && typ == protowire.VarintType:
			v, rest, err := consumeVarint(b, "type")
			if err != nil {
				return err
			}
			nf.kind, b = int64(int32(v)), rest
		case num == fieldDuration && typ == protowire.VarintType:
			var err error
			if nf.dur, b, err = consumeVarint(b, "duration_micros"); err != nil {
				return err
			}
		case num == fieldName && typ == protowire.BytesType:
			v, rest, err := consumeBytes(b, "name")
			if err != nil {
				return err
			}
			if !utf8.Valid(v) {
				return fmt.Errorf("%w: name: invalid UTF-8", errWire)
			}
			nameB, b = v, rest
		case (num == fieldCtrlDeps || num == fieldDataDeps) && (typ == protowire.VarintType || typ == protowire.BytesType):
			var err error
			dst := &data
			if num == fieldCtrlDeps {
				dst = &ctrl
			}
			if b, err = appendUint64s(b, typ, dst); err != nil {
				return err
			}
		case num == fieldAttr && typ == protowire.BytesType:
			v, rest, err := consumeBytes(b, "attr")
			if err != nil {
				return err
			}
			attrs, b = append(attrs, v), rest
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("%w: field %d: %v", errWire, num, protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	nf.data, nf.ctrl, nf.attrs = data, ctrl, attrs
	for _, a := range attrs { // every node's, so a malformed one is an error
		if err := nf.attr(a); err != nil {
			return err
		}
	}
	if chakrav1.NodeType(nf.kind) == chakrav1.NodeType_COMM_COLL_NODE {
		nf.name = string(nameB)
	} else {
		nf.nameB = nameB
	}
	return nil
}

// appendUint64s reads a repeated uint64 field, packed (bytes) or not.
func appendUint64s(b []byte, typ protowire.Type, dst *[]uint64) ([]byte, error) {
	if typ == protowire.VarintType {
		v, rest, err := consumeVarint(b, "dependency")
		if err != nil {
			return nil, err
		}
		*dst = append(*dst, v)
		return rest, nil
	}
	p, rest, err := consumeBytes(b, "dependencies")
	if err != nil {
		return nil, err
	}
	for len(p) > 0 {
		var v uint64
		if v, p, err = consumeVarint(p, "packed dependency"); err != nil {
			return nil, err
		}
		*dst = append(*dst, v)
	}
	return rest, nil
}

// consumeVarint reads one varint off the front of b, naming what in its
// error, and returns the rest.
func consumeVarint(b []byte, what string) (uint64, []byte, error) {
	v, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return 0, nil, fmt.Errorf("%w: %s: %v", errWire, what, protowire.ParseError(n))
	}
	return v, b[n:], nil
}

// consumeBytes reads one length-delimited value off the front of b, naming
// what in its error, and returns the value and the rest.
func consumeBytes(b []byte, what string) ([]byte, []byte, error) {
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return nil, nil, fmt.Errorf("%w: %s: %v", errWire, what, protowire.ParseError(n))
	}
	return v, b[n:], nil
}

// attrWire is the wire type of every AttributeProto field the schema
// declares (api/chakra/v1/et.proto); a field of another number or wire
// type is unknown and skipped, as protobuf does.
var attrWire = map[protowire.Number]protowire.Type{
	1: protowire.BytesType, 2: protowire.BytesType, // name, doc_string
	3: protowire.Fixed64Type, 5: protowire.Fixed32Type, // double, float
	7: protowire.VarintType, 9: protowire.VarintType, 11: protowire.VarintType, 13: protowire.VarintType,
	15: protowire.VarintType, 17: protowire.VarintType, 27: protowire.VarintType, // integers, bool
	29: protowire.BytesType, // string
}

// attr reads one AttributeProto record and keeps comm_type and comm_size
// (any integer encoding; another value type is an error for them). The
// last value field wins, as in a protobuf oneof.
func (nf *nodeFields) attr(b []byte) error {
	var name []byte
	var val int64
	var has, isInt bool
	var bad error
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: attribute tag: %v", errWire, protowire.ParseError(n))
		}
		if !num.IsValid() {
			return fmt.Errorf("%w: attribute field number %d", errWire, num)
		}
		b = b[n:]
		if want, ok := attrWire[num]; !ok || want != typ {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("%w: attribute field %d: %v", errWire, num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		switch typ {
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("%w: attribute field %d: %v", errWire, num, protowire.ParseError(n))
			}
			if !utf8.Valid(v) {
				return fmt.Errorf("%w: attribute field %d: invalid UTF-8", errWire, num)
			}
			b = b[n:]
			switch num {
			case 1:
				name = v
			case 29:
				has, isInt = true, false
			}
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return fmt.Errorf("%w: attribute value: %v", errWire, protowire.ParseError(n))
			}
			b = b[n:]
			has, isInt, bad = true, true, nil
			switch num {
			case 7: // int32
				val = int64(int32(v))
			case 9: // int64
				val = int64(v)
			case 11: // uint32
				val = int64(uint32(v))
			case 13: // uint64
				if v > 1<<62 {
					bad = fmt.Errorf("%d is too large", v)
				}
				val = int64(v)
			case 15: // sint32
				val = int64(protowire.DecodeZigZag(v & 0xffffffff))
				val = int64(int32(val))
			case 17: // sint64
				val = protowire.DecodeZigZag(v)
			default: // bool
				isInt = false
			}
		default: // double, float
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("%w: attribute field %d: %v", errWire, num, protowire.ParseError(n))
			}
			b = b[n:]
			has, isInt = true, false
		}
	}
	var dst *int64
	var hasDst *bool
	var errDst *error
	switch string(name) {
	case "comm_type":
		dst, hasDst, errDst = &nf.commType, &nf.hasType, &nf.typeErr
	case "comm_size":
		dst, hasDst, errDst = &nf.commSize, &nf.hasSize, &nf.szErr
	default:
		return nil
	}
	*hasDst = true
	switch {
	case !has || !isInt:
		*errDst = fmt.Errorf("not an integer")
	case bad != nil:
		*errDst = bad
	default:
		*dst, *errDst = val, nil
	}
	return nil
}

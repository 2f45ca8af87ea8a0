package serve

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// protoCodecName is grpc's protobuf codec ("proto").
const protoCodecName = "proto"

// malformed holds the decoding error of each request message that was
// not valid protobuf, until the interceptor reports it.
var malformed sync.Map // proto.Message (pointer) -> error

// checkedCodec is the protobuf codec, except that a request that is not
// valid protobuf decodes to an empty message and its error is kept for
// malformedUnary and malformedStream, which answer INVALID_ARGUMENT: grpc
// itself turns every decoding failure into INTERNAL, which reads as a
// server bug.
type checkedCodec struct{ encoding.CodecV2 }

func (c checkedCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.CodecV2.Unmarshal(data, v)
	if err != nil {
		m, ok := v.(proto.Message)
		if !ok {
			return err
		}
		proto.Reset(m)
		malformed.Store(m, err)
	}
	return nil
}

// malformedErr returns and forgets the decoding error of req.
func malformedErr(req any) error {
	if e, ok := malformed.LoadAndDelete(req); ok {
		return status.Errorf(codes.InvalidArgument, "request: not a valid protobuf message: %s", truncate(e.(error).Error()))
	}
	return nil
}

func malformedUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := malformedErr(req); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func malformedStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, checkedStream{ss})
}

// checkedStream reports a malformed message of a streaming call (health
// watches, reflection) from RecvMsg.
type checkedStream struct{ grpc.ServerStream }

func (s checkedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return malformedErr(m)
}

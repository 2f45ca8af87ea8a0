package serve

import (
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/neuronfabric/nfabric/serve/wire"
)

// violation is one bad field of a request.
type violation struct{ field, desc string }

// badRequest is INVALID_ARGUMENT naming the first bad field in its message
// and every one in a google.rpc.BadRequest detail.
func badRequest(vs []violation) error {
	msg := vs[0].field + ": " + vs[0].desc
	if len(vs) > 1 {
		msg += fmt.Sprintf(" (and %d more bad fields, see the BadRequest detail)", len(vs)-1)
	}
	st := status.New(codes.InvalidArgument, msg)
	br := &errdetails.BadRequest{}
	for i, v := range vs {
		if i == 64 { // keep the status small
			break
		}
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: v.field, Description: v.desc})
	}
	if d, err := st.WithDetails(br); err == nil {
		st = d
	}
	return st.Err()
}

// fieldStatus turns a *wire.FieldError into INVALID_ARGUMENT; any other
// error is wrapped with field.
func fieldStatus(field string, err error) error {
	var fe *wire.FieldError
	if errors.As(err, &fe) {
		return badRequest([]violation{{fe.Field, fe.Err.Error()}})
	}
	return badRequest([]violation{{field, err.Error()}})
}

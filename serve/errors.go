package serve

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/neuronfabric/nfabric/serve/wire"
)

// violation is one bad field of a request.
type violation struct{ field, desc string }

// maxViolations is how many bad fields a BadRequest detail lists: the
// first ones, so that the status stays small.
const maxViolations = 64

// maxEcho is how many bytes of a field path or a description a status
// carries: an error that quotes a client's long bad value would otherwise
// make a reply too large to send.
const maxEcho = 256

// truncate shortens s to at most maxEcho bytes (on a rune boundary) with
// an ellipsis and the original length.
func truncate(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	cut := maxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:cut], len(s))
}

// badRequest is INVALID_ARGUMENT naming the first bad field in its message
// and the first maxViolations in a google.rpc.BadRequest detail; every
// path and description is truncated to maxEcho bytes.
func badRequest(vs []violation) error {
	msg := truncate(vs[0].field) + ": " + truncate(vs[0].desc)
	if len(vs) > 1 {
		msg += fmt.Sprintf(" (and %d more bad fields; the BadRequest detail lists the first %d)", len(vs)-1, min(len(vs), maxViolations))
	}
	st := status.New(codes.InvalidArgument, msg)
	br := &errdetails.BadRequest{}
	for _, v := range vs[:min(len(vs), maxViolations)] {
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: truncate(v.field), Description: truncate(v.desc)})
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

// notFoundf is NOT_FOUND with a truncated message (the cause may quote a
// client's value).
func notFoundf(what string, err error) error {
	return status.Error(codes.NotFound, what+": "+truncate(err.Error()))
}

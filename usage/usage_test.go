package usage_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/neuronfabric/nfabric/usage"
)

func TestErrorsMatch(t *testing.T) {
	base := errors.New("workers 0: want at least 1")
	tests := []struct {
		name  string
		err   error
		usage bool
		msg   string
	}{
		{"Errorf", usage.Errorf("workers %d: want at least 1", 0), true, "workers 0: want at least 1"},
		{"Wrap", usage.Wrap(base), true, base.Error()},
		{"wrapped again", fmt.Errorf("--plan: %w", usage.Errorf("unknown group %q", "head")), true, `--plan: unknown group "head"`},
		{"plain", base, false, base.Error()},
		{"nil", nil, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := usage.Is(tt.err); got != tt.usage {
				t.Errorf("usage.Is(%v) = %v; want %v", tt.err, got, tt.usage)
			}
			if tt.err != nil && tt.err.Error() != tt.msg {
				t.Errorf("message %q; want %q", tt.err.Error(), tt.msg)
			}
		})
	}
}

func TestWrapKeepsTheCause(t *testing.T) {
	err := usage.Errorf("--links: %w", fs.ErrNotExist)
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, usage.ErrUsage) {
		t.Fatalf("errors.Is lost a cause of %v", err)
	}
	if usage.Wrap(nil) != nil {
		t.Fatal("Wrap(nil) != nil")
	}
}

func ExampleErrorf() {
	err := fmt.Errorf("whatif: %w", usage.Errorf("workers %d: an All-Reduce needs at least 2", 1))
	fmt.Println(err, usage.Is(err))
	// Output: whatif: workers 1: an All-Reduce needs at least 2 true
}

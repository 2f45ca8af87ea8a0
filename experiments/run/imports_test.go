package run

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoBackArrows: the framework imports no block. Its non-test files may
// import the standard library, the report package and the usage package
// (a leaf: the typed usage error), nothing of experiments (the blocks
// register themselves; the framework never names one).
func TestNoBackArrows(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"github.com/neuronfabric/nfabric/report": true, "github.com/neuronfabric/nfabric/usage": true}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.Contains(p, ".") && !allowed[p] {
				t.Errorf("%s imports %s: the framework may import only the standard library and %v", f, p, allowed)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("checked only %d files", checked)
	}
}

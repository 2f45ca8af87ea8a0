package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds every function in cmd/nfabric: the command line parses
// flags, wires and prints; a longer function is doing a package's work.
const maxFuncLines = 40

// TestFunctionLength parses this package's sources and fails on any
// function declaration (counted from its first line to its closing brace,
// literals inside it included) of maxFuncLines lines or more.
func TestFunctionLength(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := lines(fset, fd); n >= maxFuncLines {
				t.Errorf("%s: func %s is %d lines (limit %d)", fset.Position(fd.Pos()), fd.Name.Name, n, maxFuncLines-1)
			}
		}
	}
}

func lines(fset *token.FileSet, n ast.Node) int {
	return fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1
}
